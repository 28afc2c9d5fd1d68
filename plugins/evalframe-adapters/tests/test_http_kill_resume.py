"""A run killed midway (SIGKILL, no cleanup) and restarted retrieves only the rest.

Real processes and a real HTTP server on 127.0.0.1: the server answers the
first two queries, then hangs on the third while the test kills the run. The
re-run of the same command must send requests only for queries 3 and 4.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from evalframe_adapters.testing import FakeServer, Reply, Request

GOLDEN = [{"id": i, "question": f"question {i}", "expected_chunks": [f"d{i}"]} for i in range(1, 5)]


def answer(request: Request) -> Reply:
    qid = request.body["query_id"]
    return Reply(body={"results": [{"id": f"d{qid}", "score": 2.0}, {"id": "x", "score": 1.0}]})


def test_killed_run_resumes_with_only_the_missing_queries(tmp_path: Path) -> None:
    golden = tmp_path / "golden.jsonl"
    golden.write_text("".join(json.dumps(r) + "\n" for r in GOLDEN))
    phase = {"hang_from": 3}

    def respond(request: Request) -> Reply:
        if len(server.requests) >= phase["hang_from"]:
            return Reply(stall=60)  # hangs until the test releases it at teardown
        return answer(request)

    server = FakeServer(respond)
    try:
        args = [
            sys.executable,
            "-m",
            "evalframe",
            f"dataset.path={golden}",
            "corpus=none",
            "retriever=http",
            f"retriever.url={server.url}",
            "retriever.retries=0",
            "retriever.max_concurrency=1",  # one at a time: the third request means two are cached
            "retriever.timeout_seconds=120",
            f"hydra.run.dir={tmp_path / 'out'}",
        ]
        env = {**os.environ, "EVALFRAME_CACHE_DIR": str(tmp_path / "cache")}
        first = subprocess.Popen(
            args,
            cwd=tmp_path,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while len(server.requests) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(server.requests) == 3, "the run never reached the third query"
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
        assert first.returncode == -signal.SIGKILL

        phase["hang_from"] = 10**9
        before = len(server.requests)
        second = subprocess.run(
            args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
        )
        assert second.returncode == 0, second.stderr
        again = [r.body["query_id"] for r in server.requests[before:]]
        assert again == ["3", "4"]  # 1 and 2 were cached before the kill
        assert "2 retrieved, 2 from cache" in second.stdout
        metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
        assert metrics["RR"] == 1.0  # every query's doc came back first
    finally:
        server.close()
