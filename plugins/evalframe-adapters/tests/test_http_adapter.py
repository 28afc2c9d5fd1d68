"""http retriever against a real server on 127.0.0.1: retries, timeouts, 4xx, auth, paths."""

from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from evalframe_adapters._http import RateLimiter, RetryPolicy, env_headers
from evalframe_adapters.http_adapter import HttpConfig, HttpRetriever, fill_template
from evalframe_adapters.testing import FakeServer, Reply, Request
from evalframe_runfile.retriever import RunFileConfig, RunFileRetriever

from evalframe.core.errors import ConfigError, PluginError
from evalframe.core.io import read_trec_run
from evalframe.core.types import GoldenQuery, GoldenSet
from evalframe.pipeline.run import retrieve_all
from evalframe.plugin.protocols import PluginContext, Query
from evalframe.plugin.testing import RetrieverContract

RUN_FILE = Path(__file__).parent / "data" / "expected.run"
RUN = read_trec_run(RUN_FILE)
QUERIES = [Query(id=q, text=f"text of {q}") for q in RUN.rankings]
# What the flaky server does on each attempt of each query: 6 of 18 requests get
# a 503 (a third) and 2 stall past the client's timeout; attempts beyond the list
# succeed. No query fails more than twice in a row, so retries=3 always recovers.
SCHEDULE = {
    "q1": ["ok"],
    "q2": ["503", "ok"],
    "q3": ["503", "503", "ok"],
    "q4": ["stall", "ok"],
    "q5": ["503", "ok"],
    "q6": ["503", "stall", "ok"],
    "q7": ["ok"],
    "q8": ["503", "ok"],
    "q9": ["ok"],
    "q10": ["ok"],
}
# Long enough that a healthy answer on a machine saturated by the rest of the suite is
# not taken for a stall (at 0.25 s one was, and the retry it added broke a count)
TIMEOUT = 0.6
Serve = Callable[[Callable[[Request], Reply]], FakeServer]


def results_for(qid: str, k: int) -> dict[str, Any]:
    pairs = RUN.rankings[qid].pairs()[:k] if qid in RUN.rankings else []
    return {"results": [{"id": d, "score": s} for d, s in reversed(pairs)]}  # any order


def healthy(request: Request) -> Reply:
    return Reply(body=results_for(request.body["query_id"], request.body["k"]))


def flaky(request: Request) -> Reply:
    steps = SCHEDULE.get(request.body["query_id"], ["ok"])
    step = steps[min(request.attempt, len(steps)) - 1]
    if step == "503":
        return Reply(503, {"error": "overloaded"})
    if step == "stall":
        return Reply(stall=5 * TIMEOUT, body=results_for(request.body["query_id"], 5))
    return healthy(request)


def make(url: str, **settings: Any) -> HttpRetriever:
    settings.setdefault("timeout_seconds", TIMEOUT)
    settings.setdefault("backoff_seconds", 0.01)
    settings.setdefault("seed", 7)
    return HttpRetriever(HttpConfig(url=url, **settings), PluginContext())


def expected(k: int) -> dict[str, Any]:
    reference = RunFileRetriever(RunFileConfig(path=str(RUN_FILE)), PluginContext())
    return {q.id: reference.retrieve(q, k) for q in QUERIES}


class TestHttpContract(RetrieverContract):
    plugin_name = "http"

    @pytest.fixture
    def retriever(self, serve: Serve) -> HttpRetriever:
        return make(serve(healthy).url + "/search", max_concurrency=4)

    @pytest.fixture
    def queries(self) -> list[Query]:
        return QUERIES[:4]


def test_flaky_server_still_gives_the_rankings_of_the_file(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    server = serve(flaky)
    r = make(server.url, retries=3)
    with caplog.at_level(logging.INFO, logger="evalframe_adapters.http"):
        got = {q.id: r.retrieve(q, 5) for q in QUERIES}
    assert got == expected(5)
    statuses = [flaky(req).status for req in server.requests]
    assert len(server.requests) == 18 and statuses.count(503) == 6
    assert caplog.text.count("timed out") == 2
    assert r.failed_queries == 0


def test_the_pipeline_sends_in_parallel_within_the_concurrency_limit(serve: Serve) -> None:
    server = serve(flaky)
    r = make(server.url, max_concurrency=3)
    golden = GoldenSet.build("g", [GoldenQuery(id=q.id, text=q.text) for q in QUERIES])
    run = retrieve_all(r, golden, 5, progress=False)
    assert len(server.requests) == 18  # the flaky schedule's 8 retries
    assert 1 < server.max_active <= 3
    assert {q: rk.model_copy(update={"latency_ms": None}) for q, rk in run.rankings.items()} == (
        expected(5)
    )
    assert list(run.rankings) == [q.id for q in QUERIES]  # in golden order, whatever the timing


def test_after_a_query_fails_the_later_ones_in_flight_give_up_their_retries(
    serve: Serve,
) -> None:
    """q1 is refused (a 400, never retried) while q2-q4, in flight beside it, are told by a
    429 to come back in 20 s: each waited that out, and asked again, before the run could
    end with q1's error (retrieval.stopping)."""

    def answer(req: Request) -> Reply:
        if req.body["query_id"] == "q1":
            time.sleep(0.3)  # the others have their 429 by now, and wait
            return Reply(400, {"error": "bad query"})
        return Reply(429, {}, headers={"Retry-After": "20"})

    server = serve(answer)
    r = make(server.url, max_concurrency=4, retries=2)
    golden = GoldenSet.build("g", [GoldenQuery(id=q.id, text=q.text) for q in QUERIES[:4]])
    assert [q.id for q in golden.queries] == ["q1", "q2", "q3", "q4"]
    with pytest.raises(PluginError, match="query 'q1'"):
        retrieve_all(r, golden, 5, progress=False)
    asked = [req.body["query_id"] for req in server.requests]
    # each asked at most once: no retry waited out (a query a loaded machine had not yet
    # started when q1 failed is not started at all)
    assert "q1" in asked and len(asked) == len(set(asked)), asked


def test_a_4xx_is_not_retried_and_is_reported_with_a_snippet(serve: Serve) -> None:
    server = serve(lambda req: Reply(400, {"detail": "query too long"}))
    with pytest.raises(PluginError) as err:
        make(server.url, retries=5).retrieve(QUERIES[0], 5)
    assert len(server.requests) == 1
    text = err.value.render()
    assert "query 'q1' failed (not retried): HTTP 400" in text
    assert "query too long" in text


def test_a_5xx_that_persists_fails_naming_the_query_and_last_error(serve: Serve) -> None:
    server = serve(lambda req: Reply(502, b"bad gateway"))
    with pytest.raises(PluginError, match=r"query 'q2' failed after 3 attempts: HTTP 502") as err:
        make(server.url, retries=2).retrieve(QUERIES[1], 5)
    assert "bad gateway" in err.value.render()
    assert "allow_failed_queries" in err.value.render()
    assert len(server.requests) == 3


def test_allow_failed_queries_counts_them_missing(serve: Serve) -> None:
    server = serve(lambda req: Reply(503) if req.body["query_id"] == "q2" else healthy(req))
    r = make(server.url, retries=1, allow_failed_queries=True)
    answers = [r.retrieve(q, 5) for q in QUERIES[:3]]
    assert answers[1] is None and answers[0] is not None and answers[2] is not None
    assert r.failed_queries == 1
    # said at the end of the run (and kept in summary.json): it was said nowhere
    (note,) = r.notes()
    assert note.startswith(
        "1 of the 3 queries asked failed at the service after their retries (first: query "
        "'q2', HTTP 503"
    )
    assert note.endswith("is scored as missing (retriever.allow_failed_queries=true); a re-run "
                         "asks them again")  # fmt: skip


def test_every_query_failing_says_the_numbers_measure_nothing(serve: Serve) -> None:
    """A service that was down, with allow_failed_queries: every metric 0, exit 0, and
    nothing said."""
    server = serve(lambda req: Reply(503))
    r = make(server.url, retries=0, allow_failed_queries=True)
    assert [r.retrieve(q, 5) for q in QUERIES[:2]] == [None, None]
    (note,) = r.notes()
    assert note.startswith("every one of the 2 queries asked failed at the service")
    assert note.endswith("the service was down or misconfigured, so these numbers measure nothing")


def test_bad_credentials_stop_the_run_even_when_failures_are_allowed(serve: Serve) -> None:
    server = serve(lambda req: Reply(401, {"error": "unauthorized"}))
    with pytest.raises(PluginError, match="HTTP 401") as err:
        make(server.url, allow_failed_queries=True).retrieve(QUERIES[0], 5)
    # this config sends no key at all: the hint says so
    assert err.value.hint == (
        "check retriever.url and the credentials: retriever.headers_from_env (none are set: "
        "the request carried no key)"
    )


def test_connection_refused_is_retried_then_reported() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(PluginError, match="failed after 2 attempts: connection failed") as err:
        make(f"http://127.0.0.1:{port}/", retries=1).retrieve(QUERIES[0], 5)
    # a service that is down: allow_failed_queries would only hide it
    assert "check that the service is up and reachable at retriever.url" in err.value.render()


def test_auth_header_comes_from_env_and_never_shows(
    serve: Serve, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "s3cr3t-t0ken-value"
    monkeypatch.setenv("EFA_TEST_TOKEN", secret)

    def echo(req: Request) -> Reply:  # a careless server that echoes the header back
        if req.body["query_id"] == "q1":
            return healthy(req)
        return Reply(503 if req.attempt == 1 else 400, {"got": req.headers["Authorization"]})

    server = serve(echo)
    r = make(
        server.url,
        headers_from_env={"Authorization": "Bearer $EFA_TEST_TOKEN", "X-Plain": "EFA_TEST_TOKEN"},
        headers={"X-Client": "evalframe-tests"},
    )
    with caplog.at_level(logging.DEBUG):
        assert r.retrieve(QUERIES[0], 5) is not None
        with pytest.raises(PluginError) as err:
            r.retrieve(QUERIES[1], 5)
    sent = server.requests[0].headers
    assert sent["Authorization"] == f"Bearer {secret}" and sent["X-Plain"] == secret
    assert sent["X-Client"] == "evalframe-tests"
    assert "HTTP 400" in err.value.render() and "***" in err.value.render()
    for text in (err.value.render(), repr(err.value), caplog.text, repr(r.config)):
        assert secret not in text
    assert "EFA_TEST_TOKEN" in r.config.model_dump_json()  # the name, never the value


def test_a_key_in_the_url_that_the_service_echoes_never_shows(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    """A key in the URL's query (``?api_key=${oc.env:KEY}``, resolved before the plugin
    sees it) or a token before the host: a service whose error page repeats the request
    line printed it in clear (headers were masked, the URL was not)."""
    secret = "sk-live-0123456789abcdef"

    def echo(req: Request) -> Reply:
        return Reply(401, {"error": f"bad key in {req.path}"})

    server = serve(echo)
    for url in (f"{server.url}?api_key={secret}", server.url.replace("://", f"://{secret}@")):
        r = make(url, retries=1)
        with caplog.at_level(logging.DEBUG), pytest.raises(PluginError) as err:
            r.retrieve(QUERIES[0], 5)
        assert "HTTP 401" in err.value.render()
        if "api_key" in url:  # the key is in the URL: the hint points there, not at headers
            assert (
                err.value.hint
                == "check retriever.url and the credentials: the key in retriever.url"
            )
        for text in (err.value.render(), repr(err.value), caplog.text):
            assert secret not in text
        caplog.clear()
    assert server.requests[0].path.endswith(f"?api_key={secret}")  # it was sent, all the same


def test_a_key_the_service_echoes_in_its_answer_is_not_stored(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 200 answer whose text holds the request's header (a careless echo) went into
    per_query.jsonl and the page as it was; the answer kept on the ranking is redacted."""
    secret = "sk-live-0123456789abcdef"
    monkeypatch.setenv("EFA_TEST_TOKEN", secret)

    def echo(req: Request) -> Reply:
        body = results_for(req.body["query_id"], req.body["k"])
        return Reply(body={**body, "echo": f"you sent {req.headers['Authorization']}"})

    r = make(
        serve(echo).url,
        headers_from_env={"Authorization": "Bearer $EFA_TEST_TOKEN"},
        answer_path="echo",
    )
    ranking = r.retrieve(QUERIES[0], 5)
    assert ranking is not None and ranking.answer == "you sent Bearer ***"


@pytest.mark.parametrize("echoed_as", ["an id with a space", "an id twice"])
def test_a_key_the_service_echoes_in_a_document_id_is_not_quoted(
    serve: Serve, monkeypatch: pytest.MonkeyPatch, echoed_as: str
) -> None:
    """An answer whose id echoes the request's header: the error naming the id (quoted
    by the core, not the client) printed the key from the environment in full."""
    secret = "tok-ZZZZyyyyQQQQwwww9876"
    monkeypatch.setenv("EFA_TEST_TOKEN", secret)

    def echo(req: Request) -> Reply:
        sent = req.headers["Authorization"]
        if echoed_as == "an id twice":
            doc = f"echo_{sent.replace(' ', '_')}"
            return Reply(body={"results": [{"id": doc, "score": 1.0}, {"id": doc, "score": 0.5}]})
        return Reply(body={"results": [{"id": f"you sent {sent}", "score": 1.0}]})

    r = make(serve(echo).url, headers_from_env={"Authorization": "Bearer $EFA_TEST_TOKEN"})
    with pytest.raises(PluginError) as err:
        r.retrieve(QUERIES[0], 5)
    said = err.value.render()
    assert secret not in said and "tok-ZZZZ" not in said
    assert ("cannot keep" if echoed_as == "an id with a space" else "twice") in said


def test_a_body_secret_the_service_echoes_in_its_answer_is_not_stored(serve: Serve) -> None:
    """A key sent in the body (``api_key: ${oc.env:TOKEN}``, resolved before the plugin
    sees it) and quoted back in a 200 answer went into per_query.jsonl, the page and the
    cache in clear: only header and URL secrets were masked there."""
    secret = "sk-live-body0123456789abcdef"

    def echo(req: Request) -> Reply:
        body = results_for(req.body["query_id"], req.body["k"])
        return Reply(body={**body, "echo": f"request was {json.dumps(req.body)}"})

    template = {"query": "{query}", "query_id": "{query_id}", "k": "{k}", "api_key": secret}
    r = make(serve(echo).url, body_template=template, answer_path="echo")
    ranking = r.retrieve(QUERIES[0], 5)
    assert ranking is not None and ranking.answer is not None
    assert secret not in ranking.answer
    assert "[redacted]" in ranking.answer and '"query_id": "q1"' in ranking.answer


def test_unset_env_var_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EFA_NOT_SET", raising=False)
    with pytest.raises(ConfigError, match="EFA_NOT_SET is not set") as err:
        make("http://127.0.0.1:9/", headers_from_env={"Authorization": "EFA_NOT_SET"})
    assert err.value.key == "retriever.headers_from_env.Authorization"


def test_literal_credential_headers_are_refused() -> None:
    with pytest.raises(ValueError, match="headers_from_env"):
        HttpConfig(url="http://x/", headers={"Authorization": "Bearer abc"})


def test_field_paths_and_body_template(serve: Serve) -> None:
    def nested(req: Request) -> Reply:
        assert req.body == {"input": {"text": "cats", "top": 2}, "lang": "en", "tag": "q=q1 cats"}
        hits = [{"doc": {"ref": 11}, "rel": 0.25}, {"doc": {"ref": "b"}, "rel": 0.75}]
        return Reply(body={"data": {"hits": hits}, "meta": {"answer": "b!", "usage": [7]}})

    server = serve(nested)
    r = make(
        server.url,
        body_template={
            "input": {"text": "{query}", "top": "{k}"},
            "lang": "{metadata.lang}",
            "tag": "q={query_id} {query}",
        },
        results_path="data.hits",
        id_path="doc.ref",
        score_path="rel",
        answer_path="meta.answer",
        tokens_path="meta.usage.0",
    )
    ranking = r.retrieve(Query(id="q1", text="cats", metadata={"lang": "en"}), 2)
    assert ranking is not None
    assert ranking.pairs() == [("b", 0.75), ("11", 0.25)]
    assert ranking.answer == "b!" and ranking.tokens == 7


def test_bare_id_lists_and_wrong_paths(serve: Serve) -> None:
    server = serve(lambda req: Reply(body={"results": ["x", "y", "z"]}))
    ranking = make(server.url).retrieve(QUERIES[0], 2)
    assert ranking is not None and ranking.pairs() == [("x", 3.0), ("y", 2.0)]
    with pytest.raises(PluginError, match="has no 'hits'") as err:
        make(server.url, results_path="hits").retrieve(QUERIES[0], 2)
    assert "results_path" in err.value.render()


def test_duplicates_error_or_keep_first(serve: Serve) -> None:
    server = serve(lambda req: Reply(body={"results": [{"id": "a"}, {"id": "a"}, {"id": "b"}]}))
    with pytest.raises(PluginError, match="'a' twice for query 'q1'") as err:
        make(server.url, score_path=None).retrieve(QUERIES[0], 5)
    # the setting that keeps the first is named in the hint (it was not)
    assert "or set retriever.duplicates=first to keep" in str(err.value.hint)
    ranking = make(server.url, score_path=None, duplicates="first").retrieve(QUERIES[0], 5)
    assert ranking is not None and ranking.doc_ids == ("a", "b")


def test_rate_limit_holds_across_calls(serve: Serve) -> None:
    server = serve(healthy)
    r = make(server.url, rate_limit=40.0)
    start = time.monotonic()
    for q in QUERIES[:5]:
        r.retrieve(q, 1)
    assert time.monotonic() - start >= 4 / 40.0 - 0.005


def test_rate_limiter_spaces_slots_across_threads_with_a_fake_clock() -> None:
    now = [100.0]
    waits: list[float] = []
    limiter = RateLimiter(4.0, clock=lambda: now[0], sleep=waits.append)
    for _ in range(3):
        limiter.acquire()
    assert waits == [0.25, 0.5]  # reserved slots at +0.25 and +0.5
    now[0] = 200.0
    assert limiter.acquire() == 0.0
    assert RateLimiter(None).acquire() == 0.0


def test_backoff_is_exponential_capped_and_deterministic_with_a_seed() -> None:
    a = RetryPolicy(retries=5, backoff=0.1, backoff_max=0.5, jitter=0.2, seed=3)
    b = RetryPolicy(retries=5, backoff=0.1, backoff_max=0.5, jitter=0.2, seed=3)
    delays = [a.delay(n) for n in range(5)]
    assert delays == [b.delay(n) for n in range(5)]
    for n, d in enumerate(delays):
        base = min(0.5, 0.1 * 2**n)
        assert base <= d < base * 1.2
    assert RetryPolicy(backoff=0.1, jitter=0, seed=1).delay(0, retry_after=2.0) == 2.0


def test_fill_template_keeps_types_and_other_json() -> None:
    q = Query(id="q1", text='say "hi"', metadata={"n": 3})
    template = {
        "a": ["{k}", "{query}"],
        "b": 1.5,
        "c": None,
        "m": "{metadata}",
        "n": "n={metadata.n}",
    }
    assert fill_template(template, q, 4) == {
        "a": [4, 'say "hi"'],
        "b": 1.5,
        "c": None,
        "m": {"n": 3},
        "n": "n=3",
    }


def test_template_must_mention_the_query() -> None:
    with pytest.raises(ValueError, match="body_template must contain"):
        HttpConfig(url="http://x/", body_template={"k": "{k}"})


def test_example_config_validates() -> None:
    path = Path(__file__).parents[1] / "evalframe_adapters" / "conf" / "retriever" / "http.yaml"
    node = yaml.safe_load(path.read_text())
    assert node.pop("name") == "http"
    HttpConfig.model_validate({**node, "url": "http://localhost:8000/search"})


def test_env_header_forms(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EFA_A", "xyz")
    headers, secrets = env_headers({"H": "${EFA_A}-$EFA_A", "G": "EFA_A"}, "retriever.h")
    assert headers == {"H": "xyz-xyz", "G": "xyz"}
    assert set(secrets) == {"xyz"}


def test_the_pipeline_retrieves_through_it(serve: Serve) -> None:
    golden = GoldenSet.build("g", [GoldenQuery(id=q.id, text=q.text) for q in QUERIES[:3]])
    run = retrieve_all(make(serve(flaky).url), golden, 3, progress=False)
    assert {q: r.doc_ids for q, r in run.rankings.items()} == {
        q: r.doc_ids for q, r in expected(3).items() if q in run.rankings
    }
    assert len(run) == 3 and all(r.latency_ms is not None for r in run.rankings.values())


def test_429_is_retried_honouring_retry_after(serve: Serve) -> None:
    def limited(req: Request) -> Reply:
        return Reply(429, {}, headers={"Retry-After": "0"}) if req.attempt == 1 else healthy(req)

    server = serve(limited)
    assert make(server.url).retrieve(QUERIES[0], 2) is not None
    assert len(server.requests) == 2


def test_yaml_nulls_mean_the_defaults() -> None:
    config = HttpConfig(url="http://x/", body_template=None, headers=None, headers_from_env=None)
    assert config.body_template == {"query": "{query}", "query_id": "{query_id}", "k": "{k}"}
    assert config.headers == {} and config.headers_from_env == {}


def test_an_answer_that_is_not_json_is_not_called_a_rejected_request(serve: Serve) -> None:
    """HTTP 200 with a cut-off body: the service answered, so the hint speaks of the
    URL and the answer, not of a request it rejected (`check retriever.body_template`)."""
    server = serve(lambda request: Reply(body=b'{"results": [{"id": "d1", "sc'))
    with pytest.raises(PluginError) as err:
        make(server.url).retrieve(QUERIES[0], 5)
    assert "the response is not JSON" in err.value.message
    assert err.value.hint is not None and "answered, but not with JSON" in err.value.hint
    assert "rejected" not in err.value.hint


def test_the_cache_keys_what_the_request_sends_of_a_query(tmp_path: Path) -> None:
    """The default body sends the query id, and a template may send metadata: keyed on the
    text alone, two queries asking the same words got the first one's cached ranking
    (the service answers each by id), and an edited metadata field got the old answer."""
    from evalframe.retrieval.cache import RunCache, retriever_fingerprint

    def by_id(req: Request) -> Reply:
        body = req.body
        doc = f"doc-{body['query_id']}-{body.get('topic')}"
        return Reply(200, {"results": [{"id": doc, "score": 1.0}]})

    server = FakeServer(by_id)
    try:
        template = {"query": "{query}", "query_id": "{query_id}", "topic": "{metadata.topic}"}
        config = HttpConfig(url=server.url, body_template=template)
        r = HttpRetriever(config, PluginContext())

        def run(topic: str) -> dict[str, tuple[str, ...]]:
            golden = GoldenSet.build("g", [
                GoldenQuery(id=q, text="same words", judgments={"d": 1}, metadata={"topic": topic})
                for q in ("q1", "q2")
            ])  # fmt: skip
            cache = RunCache(tmp_path, retriever_fingerprint("http", None, config, None))
            got = retrieve_all(r, golden, 5, progress=False, cache=cache)
            return {q: ranking.doc_ids for q, ranking in got.rankings.items()}

        first = run("a")
        assert first == {"q1": ("doc-q1-a",), "q2": ("doc-q2-a",)}
        assert run("a") == first and len(server.requests) == 2  # the second run: cached
        assert run("b") == {"q1": ("doc-q1-b",), "q2": ("doc-q2-b",)}  # the edit: asked again
        r.close()
    finally:
        server.close()


def test_a_key_written_in_the_body_or_the_url_stays_out_of_the_cache_key() -> None:
    """Rotating a key re-uses the cache wherever it is written: in headers_from_env (a
    variable's name) it always did; in body_template or the URL it re-asked every query."""
    from evalframe.retrieval.cache import retriever_fingerprint

    def key(api_key: str, extra: str = "") -> str:
        config = HttpConfig(
            url=f"https://search.example/q?api_key={api_key}&v=2",
            body_template={"query": "{query}", "api_key": api_key, "index": f"docs{extra}"},
        )
        return json.dumps(retriever_fingerprint("http", None, config, None), sort_keys=True)

    assert key("sk-live-AAAAAAAAAAAAAAAA") == key("sk-live-BBBBBBBBBBBBBBBB")
    assert "sk-live" not in key("sk-live-AAAAAAAAAAAAAAAA")
    assert key("sk-live-AAAAAAAAAAAAAAAA") != key("sk-live-AAAAAAAAAAAAAAAA", "-v2")


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("echo", {"k": "you sent Bearer $TOKEN"}, "text"),
        ("confidence", 1.5, "a number from 0 to 1"),
        ("confidence", "high", "a number from 0 to 1"),
        ("tokens", -3, "a whole number of at least 0"),
        ("tokens", 2.5, "a whole number of at least 0"),
    ],
)
def test_an_answer_text_confidence_or_token_count_of_the_wrong_kind_is_located(
    serve: Serve, monkeypatch: pytest.MonkeyPatch, field: str, value: Any, expected: str
) -> None:
    """A non-text answer crashed the run (exit 3, a traceback quoting the value: a key the
    service echoed, in full); a confidence of 1.5 went into the calibration unseen. Each
    is now an error naming the query, the field and the setting, the key redacted."""
    secret = "sk-live-0123456789abcdef"
    monkeypatch.setenv("EFA_TEST_TOKEN", secret)

    def answers(req: Request) -> Reply:
        body = results_for(req.body["query_id"], req.body["k"])
        shown = json.loads(json.dumps(value).replace("$TOKEN", secret))
        return Reply(body={**body, field: shown})

    paths = {"echo": "answer_path", "confidence": "confidence_path", "tokens": "tokens_path"}
    r = make(
        serve(answers).url,
        headers_from_env={"Authorization": "Bearer $EFA_TEST_TOKEN"},
        **{paths[field]: field},
    )
    with pytest.raises(PluginError) as err:
        r.retrieve(QUERIES[0], 5)
    text = err.value.render()
    name = {"echo": "answer"}.get(field, field)
    assert f"the answer for query 'q1' has {name} " in text and f"which is not {expected}" in text
    assert f"retriever.{name}_path" in text and secret not in text


def test_a_confidence_and_token_count_in_range_are_kept(serve: Serve) -> None:
    def answers(req: Request) -> Reply:
        body = results_for(req.body["query_id"], req.body["k"])
        return Reply(body={**body, "c": 0.25, "t": 12})

    ranking = make(serve(answers).url, confidence_path="c", tokens_path="t").retrieve(QUERIES[0], 5)
    assert ranking is not None and (ranking.confidence, ranking.tokens) == (0.25, 12)
