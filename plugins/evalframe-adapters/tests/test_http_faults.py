"""Faults while the pipeline asks a service from many threads: the metrics do not move.

A service that fails 30% of requests, answers 429, or stalls past the timeout
gives the same rankings (so the same metrics) as a healthy one; a run stopped
by Ctrl-C or kill -9 resumes with exactly the queries it had not cached; two
runs sharing one cache at the same time corrupt nothing. Real HTTP servers on
127.0.0.1; the interrupted and concurrent runs are real ``python -m
evalframe`` processes.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import zlib
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from evalframe_adapters.http_adapter import HttpConfig, HttpRetriever
from evalframe_adapters.testing import FakeServer, Reply, Request

from evalframe.core.store import DATABASE
from evalframe.core.types import GoldenQuery, GoldenSet
from evalframe.metrics import Policies, evaluate, parse_metric
from evalframe.plugin.protocols import PluginContext
from evalframe.retrieval.retrieve import retrieve_all

N = 40
GOLDEN = GoldenSet.build(
    "g",
    [GoldenQuery(id=f"q{i}", text=f"question {i}", judgments={f"d{i}": 1}) for i in range(N)],
)
METRICS = [parse_metric(m) for m in ("RR", "nDCG@10", "P@5")]


def answer(request: Request) -> Reply:
    """Deterministic rankings in which the relevant doc sits at a rank that varies by query."""
    i = int(str(request.body["query_id"]).lstrip("q"))
    docs = [f"d{(i + j) % N}" for j in range(1, 8)]
    docs.insert(i % 7, f"d{i}")
    return Reply(body={"results": [{"id": d, "score": 10.0 - r} for r, d in enumerate(docs)]})


def roll(request: Request) -> float:
    """A number in [0, 1) fixed per (query, attempt): the same faults on every run."""
    return zlib.crc32(f"{request.body['query_id']}/{request.attempt}".encode()) / 2**32


def make(url: str, **settings: Any) -> HttpRetriever:
    settings = {"timeout_seconds": 0.3, "backoff_seconds": 0.01, "seed": 1, **settings}
    return HttpRetriever(HttpConfig(url=url, **settings), PluginContext())


def metrics_of(url: str, **settings: Any) -> dict[str, float]:
    retriever = make(url, max_concurrency=8, **settings)
    run = retrieve_all(retriever, GOLDEN, 10, progress=False)
    retriever.close()
    scores = evaluate(METRICS, GOLDEN, run, Policies())
    return {str(m): float(v.mean()) for m, v in scores.values.items()}


@pytest.fixture
def healthy() -> dict[str, float]:
    server = FakeServer(answer, keep_alive=True)
    try:
        return metrics_of(server.url)
    finally:
        server.close()


def faulty(request: Request) -> Reply:
    """30% of requests fail: 503s, 429s with Retry-After, and stalls past the timeout."""
    r = roll(request)
    if r < 0.12:
        return Reply(503, {"error": "overloaded"})
    if r < 0.22:
        return Reply(429, {"error": "slow down"}, headers={"Retry-After": "0"})
    if r < 0.30:
        return Reply(stall=2.0, body={"results": []})  # answers too late: a timeout
    return answer(request)


def test_a_service_failing_30_percent_of_requests_gives_the_same_metrics(
    healthy: dict[str, float],
) -> None:
    server = FakeServer(faulty, keep_alive=True)
    try:
        got = metrics_of(server.url, retries=6)
        failed = sum(1 for req in server.requests if roll(req) < 0.30)
    finally:
        server.close()
    assert got == healthy
    assert failed / len(server.requests) > 0.2  # the faults did happen, and were retried
    assert server.max_active > 1


# -- interrupted runs and shared caches: real processes ---------------------------------------


def write_golden(folder: Path) -> Path:
    path = folder / "golden.jsonl"
    rows = [
        {"id": q.id, "question": q.text, "expected_chunks": list(q.judgments)}
        for q in GOLDEN.queries
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


#: Starts a command with Ctrl-C's default action, as a terminal's foreground job has it. A
#: shell's background job (a CI runner's, say) hands its children SIGINT ignored, and a
#: Python started so keeps ignoring it: the Ctrl-C tests would then test nothing.
SIGINT_DEFAULT = [
    sys.executable,
    "-c",
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.argv[1], sys.argv[1:])",
]


def command(golden: Path, url: str, out: Path, *extra: str) -> list[str]:
    return [
        *SIGINT_DEFAULT,
        sys.executable,
        "-m",
        "evalframe",
        f"dataset.path={golden}",
        "corpus=none",
        "retriever=http",
        f"retriever.url={url}",
        "retriever.max_concurrency=8",
        "retriever.retries=0",
        "retriever.timeout_seconds=60",
        "metrics.measures=[RR,nDCG@10,P@5]",
        "stats.bootstrap=0",
        f"hydra.run.dir={out}",
        *extra,
    ]


def cached(cache: Path) -> int:
    if not (cache / DATABASE).is_file():
        return 0
    try:
        with closing(sqlite3.connect(cache / DATABASE, timeout=5)) as db:
            # the rankings (the page's plots are kept in the same database)
            return int(
                db.execute("SELECT count(*) FROM entries WHERE namespace = 'runs'").fetchone()[0]
            )
    except sqlite3.OperationalError:
        return 0  # the table is not created yet


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGKILL], ids=["Ctrl-C", "kill -9"])
def test_a_stopped_run_resumes_with_exactly_the_queries_it_had_not_cached(
    tmp_path: Path, stop: signal.Signals
) -> None:
    """The server answers 25 queries, then hangs; the run is stopped once those 25 are cached."""
    golden = write_golden(tmp_path)
    cache = tmp_path / "cache"
    env = {**os.environ, "EVALFRAME_CACHE_DIR": str(cache), "EVALFRAME_TRACKING": "none"}
    state = {"hang": True}

    def respond(request: Request) -> Reply:
        if state["hang"] and len(server.requests) > 25:
            return Reply(stall=60)  # released at teardown
        return answer(request)

    server = FakeServer(respond, keep_alive=True)
    try:
        first = subprocess.Popen(
            command(golden, server.url, tmp_path / "first"),
            env=env,
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 60
        while cached(cache) < 25 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert cached(cache) == 25, "the run never cached the first 25 answers"
        first.send_signal(stop)
        _, err = first.communicate(timeout=60)
        assert first.returncode == (130 if stop == signal.SIGINT else -signal.SIGKILL), err
        if stop == signal.SIGINT:
            assert b"interrupted" in err and b"Traceback" not in err
            # stopped during retrieval: Hydra's stub folder (.hydra/, a log) is not left
            # behind to read as a run (the cache keeps what was retrieved)
            assert not (tmp_path / "first").exists()

        state["hang"] = False
        answered = {str(r.body["query_id"]) for r in server.requests[:25]}
        before = len(server.requests)
        second = subprocess.run(
            command(golden, server.url, tmp_path / "second"),
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert second.returncode == 0, second.stderr
        again = sorted(str(r.body["query_id"]) for r in server.requests[before:])
        assert again == sorted(q.id for q in GOLDEN.queries if q.id not in answered)
        assert f"{N - 25} retrieved, 25 from cache" in second.stdout
    finally:
        server.close()
    # nothing lost: the resumed run scores what an uninterrupted one scores
    clean = metrics_of_folder(tmp_path / "second")
    server = FakeServer(answer, keep_alive=True)
    try:
        assert clean == metrics_of(server.url)
    finally:
        server.close()


def metrics_of_folder(folder: Path) -> dict[str, float]:
    data = json.loads((folder / "metrics.json").read_text())
    return {m: data[m] for m in ("RR", "nDCG@10", "P@5")}


@pytest.mark.slow
def test_concurrent_runs_sharing_one_cache_corrupt_nothing(tmp_path: Path) -> None:
    """Three runs (as a sweep's parallel jobs) start together on one cache folder."""
    golden = write_golden(tmp_path)
    cache = tmp_path / "cache"
    env = {**os.environ, "EVALFRAME_CACHE_DIR": str(cache), "EVALFRAME_TRACKING": "none"}
    server = FakeServer(lambda r: Reply(stall=0.01, body=answer(r).body), keep_alive=True)
    try:
        jobs = [
            subprocess.Popen(
                command(golden, server.url, tmp_path / f"job{j}"),
                env=env,
                cwd=tmp_path,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            for j in range(3)
        ]
        for job in jobs:
            _, err = job.communicate(timeout=120)
            assert job.returncode == 0, err
    finally:
        server.close()
    with closing(sqlite3.connect(cache / DATABASE)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        # one ranking a query, however many jobs retrieved it (plots are another namespace)
        count = "SELECT count(*) FROM entries WHERE namespace = 'runs'"
        assert db.execute(count).fetchone() == (N,)
    results = [metrics_of_folder(tmp_path / f"job{j}") for j in range(3)]
    assert results[0] == results[1] == results[2]
    assert N <= len(server.requests) <= 3 * N


def test_queries_let_fail_are_said_on_stderr_and_in_the_summary(tmp_path: Path) -> None:
    """`allow_failed_queries=true` counted failed queries as missing and said nothing: the
    run passed with their metrics 0. The run now says how many failed, with the first
    error, on stderr and in summary.json (which the page and a rescore read)."""
    down = {"q3", "q17", "q29"}

    def some_down(request: Request) -> Reply:
        if request.body["query_id"] in down:
            return Reply(503, {"error": "shard offline"})
        return answer(request)

    server = FakeServer(some_down, keep_alive=True)
    try:
        out = tmp_path / "out"
        proc = subprocess.run(
            command(write_golden(tmp_path), server.url, out, "retriever.allow_failed_queries=true",
                    "report.html=false"),
            capture_output=True, text=True, timeout=120, cwd=tmp_path,
            env={**os.environ, "EVALFRAME_CACHE_DIR": str(tmp_path / "cache"),
                 "EVALFRAME_TRACKING": "none"},
        )  # fmt: skip
    finally:
        server.close()
    assert proc.returncode == 0, proc.stderr
    said = f"3 of the {N} queries asked failed at the service after their retries (first: query "
    assert said in proc.stderr
    assert "HTTP 503" in proc.stderr and "a re-run asks them again" in proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert any(said in w for w in summary["retrieval_warnings"])
    assert sorted(summary["counts"]["missing_queries"]) == sorted(down)
