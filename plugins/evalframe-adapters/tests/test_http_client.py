"""The HTTP client under http and llm_recommender: whole-request timeouts, reused connections,
Retry-After, and the rate limit across the pipeline's threads. Real sockets on 127.0.0.1."""

from __future__ import annotations

import contextlib
import email.utils
import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from evalframe_adapters._http import _retry_after
from evalframe_adapters.http_adapter import HttpConfig, HttpRetriever
from evalframe_adapters.testing import FakeServer, Reply, Request

from evalframe.core.errors import PluginError
from evalframe.core.types import GoldenQuery, GoldenSet
from evalframe.plugin.protocols import PluginContext, Query
from evalframe.retrieval.retrieve import retrieve_all

Serve = Callable[[Callable[[Request], Reply]], FakeServer]


def answer(request: Request) -> Reply:
    qid = request.body["query_id"]
    return Reply(body={"results": [{"id": f"d{qid}", "score": 1.0}]})


def golden(n: int) -> GoldenSet:
    return GoldenSet.build("g", [GoldenQuery(id=str(i), text=f"q {i}") for i in range(n)])


@contextlib.contextmanager
def dripping(headers_first: bool) -> Iterator[str]:
    """A server that answers one byte every 50 ms: after its headers, or from the status line."""
    stop = threading.Event()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.1)
    body = b'{"results": []}' + b" " * 400
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
    head += b"Content-Length: %d\r\n\r\n" % len(body)

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                conn.recv(65536)
                if headers_first:
                    conn.sendall(head)
                for byte in body if headers_first else head + body:
                    if stop.wait(0.05):
                        break
                    with contextlib.suppress(OSError):
                        conn.send(bytes([byte]))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/"
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()


@pytest.mark.parametrize("headers_first", [True, False], ids=["body drips", "all drips"])
def test_timeout_bounds_the_whole_request_not_each_read(headers_first: bool) -> None:
    """Each read gets a byte within 50 ms, so a per-read timeout would wait ~20 s."""
    with dripping(headers_first) as url:
        r = HttpRetriever(
            HttpConfig(url=url, timeout_seconds=0.4, retries=1, backoff_seconds=0.01),
            PluginContext(),
        )
        start = time.monotonic()
        with pytest.raises(PluginError, match=r"failed after 2 attempts: timed out after 0\.4s"):
            r.retrieve(Query(id="q1", text="x"), 5)
        elapsed = time.monotonic() - start
        r.close()
    assert elapsed < 2 * 0.4 + 0.5  # two attempts, each over by its deadline


def test_a_request_whose_body_never_arrives_is_not_recorded() -> None:
    """A client that gives up after its headers (its deadline, on a busy machine) sent
    no request: the test server records none, where it once recorded its empty body
    (and a test reading ``body["query_id"]`` failed on it)."""
    server = FakeServer(answer, keep_alive=True)
    try:
        with socket.create_connection(("127.0.0.1", server.httpd.server_address[1])) as conn:
            conn.sendall(
                b"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b'Content-Length: 50\r\n\r\n{"query_id": "q'
            )
        r = HttpRetriever(HttpConfig(url=server.url), PluginContext())
        run = retrieve_all(r, golden(2), 5, progress=False)
        r.close()
    finally:
        server.close()
    assert sorted(q.body["query_id"] for q in server.requests) == ["0", "1"]
    assert len(run) == 2


def test_threads_share_a_few_kept_alive_connections() -> None:
    server = FakeServer(answer, keep_alive=True)
    try:
        r = HttpRetriever(HttpConfig(url=server.url, max_concurrency=4), PluginContext())
        run = retrieve_all(r, golden(40), 5, progress=False)
        r.close()
    finally:
        server.close()
    assert len(run) == 40 and len(server.requests) == 40
    assert server.connections <= 4  # one per thread at most, reused for ~10 requests each


def test_429_waits_at_least_retry_after(serve: Serve) -> None:
    def limited(req: Request) -> Reply:
        return Reply(429, {}, headers={"Retry-After": "1"}) if req.attempt == 1 else answer(req)

    server = serve(limited)
    r = HttpRetriever(HttpConfig(url=server.url, backoff_seconds=0.01), PluginContext())
    start = time.monotonic()
    assert r.retrieve(Query(id="q1", text="x"), 2) is not None
    assert time.monotonic() - start >= 1.0
    assert len(server.requests) == 2


def test_a_retry_after_beyond_the_cap_fails_the_query_instead_of_asking_early(
    serve: Serve,
) -> None:
    """A `Retry-After: 4` with backoff_max_seconds=1 was retried after 1 s: a service that
    rate-limits asked again sooner than it said. The query now fails at once, naming the
    wait and the setting that allows it; a wait within the cap is honoured (above)."""
    from evalframe.core.errors import PluginError

    def limited(req: Request) -> Reply:
        return Reply(429, {}, headers={"Retry-After": "4"})

    server = serve(limited)
    cfg = HttpConfig(url=server.url, backoff_seconds=0.01, backoff_max_seconds=1)
    r = HttpRetriever(cfg, PluginContext())
    start = time.monotonic()
    with pytest.raises(PluginError) as err:
        r.retrieve(Query(id="q1", text="x"), 2)
    assert time.monotonic() - start < 1.0 and len(server.requests) == 1
    assert "the service asked to wait 4 s before retrying (Retry-After)" in err.value.message
    assert "longer than backoff_max_seconds (1 s)" in err.value.message
    assert "retriever.backoff_max_seconds=4" in (err.value.hint or "")


def test_retry_after_as_seconds_or_as_an_http_date() -> None:
    assert _retry_after("7") == 7.0
    assert _retry_after(None) is None and _retry_after("soon") is None
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 28 <= (_retry_after(later) or 0) <= 30
    assert _retry_after(email.utils.formatdate(time.time() - 30, usegmt=True)) == 0.0


def test_the_rate_limit_holds_across_the_pipelines_threads(serve: Serve) -> None:
    server = serve(answer)
    r = HttpRetriever(
        HttpConfig(url=server.url, max_concurrency=8, rate_limit=20.0), PluginContext()
    )
    start = time.monotonic()
    retrieve_all(r, golden(10), 5, progress=False)
    # 10 request starts, 1/20 s apart whatever the threads: the last starts 9/20 s after the first
    assert time.monotonic() - start >= 9 / 20 - 0.01
    assert len(server.requests) == 10 and server.max_active <= 8
