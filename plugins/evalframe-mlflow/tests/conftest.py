"""Fixtures: a tiny project, a real sqlite MLflow store, and a real ``mlflow server``.

A fresh sqlite store runs MLflow's migrations (over a second), so one is made
per session and copied for each test that needs one.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests import forkrun

CORPUS = [
    {"id": "install", "text": "Install the tool with pip install and a virtual environment."},
    {"id": "gates", "text": "A failed required gate makes the run exit with code 1."},
    {"id": "cache", "text": "The BM25 index is cached on disk under the corpus hash."},
]
GOLDEN = [
    {"id": 1, "question": "How do I install with pip?", "expected_chunks": ["install"],
     "difficulty": "easy"},
    {"id": 2, "question": "Which exit code does a failed gate give?",
     "expected_chunks": ["gates"], "difficulty": "easy"},
    {"id": 3, "question": "Where is the BM25 index cached?", "expected_chunks": ["cache"],
     "difficulty": "hard"},
]  # fmt: skip


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def unused_port() -> int:
    return free_port()


@dataclass
class Project:
    """A folder with a corpus and golden set; ``run`` is ``python -m evalframe`` in it."""

    root: Path
    env: dict[str, str] = field(default_factory=dict)

    def run(
        self, *args: str, out: str = "out", timeout: float = 120, data: bool = True
    ) -> subprocess.CompletedProcess[str]:
        env = {
            **os.environ,
            "EVALFRAME_CACHE_DIR": str(self.root / ".cache"),
            "PYTHONIOENCODING": "utf-8",
            **self.env,
        }
        pre = []
        if data:
            # no run page: tests/report covers it, and its plots cost a run a second of CPU
            pre = [
                "dataset.path=golden.jsonl",
                "corpus.path=corpus.jsonl",
                "stats.bootstrap=50",
                "report.html=false",
            ]
            if "-m" not in args:
                pre.append(f"hydra.run.dir={self.root / out}")
        # a process of its own, forked from one that imported evalframe (tests/forkrun.py)
        return forkrun.run(
            [*pre, *args], cwd=self.root, env=env, timeout=timeout, preload=forkrun.MLFLOW
        )

    def command(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """A subcommand (``sync``, ``runs``, ``compare``), with no Hydra overrides added."""
        return self.run(*args, timeout=timeout, data=False)


@pytest.fixture
def project(tmp_path: Path) -> Project:
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in CORPUS))
    (tmp_path / "golden.jsonl").write_text("".join(json.dumps(r) + "\n" for r in GOLDEN))
    return Project(tmp_path)


@pytest.fixture
def store(store_template: Path, tmp_path: Path) -> str:
    """A copy of the template store as ``<tmp>/mlflow.db``; the fixture is its URI."""
    db = tmp_path / "mlflow.db"
    shutil.copyfile(store_template, db)
    return f"sqlite:///{db}"


@pytest.fixture
def client() -> Callable[[str], Any]:
    """``client(uri)``: an MlflowClient (imported lazily; sqlite warnings are not ours)."""

    def make(uri: str) -> Any:
        from mlflow.tracking import MlflowClient

        return MlflowClient(uri)

    return make


class Server:
    """A real ``mlflow server`` on 127.0.0.1, stopped and started like a team's server."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.log: Any = None
        self.db = root / "server.db"

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 120, *, via_ui: bool = False) -> None:
        """``mlflow server``, or ``evalframe ui`` on the same store (both serve ./mlartifacts)."""
        self.log = log = open(self.root / "server.log", "ab")  # noqa: SIM115  # closed in stop()
        if via_ui:
            cmd = [sys.executable, "-m", "evalframe", "ui",
                   "--uri", f"sqlite:///{self.db}", "--port", str(self.port)]  # fmt: skip
        else:
            cmd = [sys.executable, "-m", "mlflow", "server",
                   "--backend-store-uri", f"sqlite:///{self.db}",
                   "--artifacts-destination", str(self.root / "mlartifacts"),
                   "--host", "127.0.0.1", "--port", str(self.port), "--workers", "1"]  # fmt: skip
        # MLflow's job runner off, as `evalframe ui` turns it off by itself: tracking never
        # uses it, and its eight processes each importing MLflow took a two-core machine
        # for most of a minute
        env = {k: v for k, v in os.environ.items() if k != "MLFLOW_SERVER_ENABLE_JOB_EXECUTION"}
        if not via_ui:
            env["MLFLOW_SERVER_ENABLE_JOB_EXECUTION"] = "false"
        self.proc = subprocess.Popen(
            cmd, cwd=self.root, stdout=log, stderr=log, start_new_session=True, env=env
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError((self.root / "server.log").read_text()[-3000:])
            try:
                with urllib.request.urlopen(f"{self.uri}/health", timeout=2) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                time.sleep(0.3)
        raise RuntimeError("mlflow server did not start in time")

    def stop(self) -> None:
        """Stop the server and its workers (its own process group)."""
        if self.proc is None:
            if self.log is not None:
                self.log.close()
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.proc = None
        self.log.close()

    def api(self, path: str, body: dict[str, Any] | None = None) -> Any:
        """Call the REST API (GET, or POST with a JSON body)."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(
            f"{self.uri}/api/2.0/mlflow/{path}",
            data=data,
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read())


@pytest.fixture
def server(tmp_path: Path, store_template: Path) -> Iterator[Server]:
    """A server not started yet (``start()``), on a copy of the empty store: MLflow's
    migrations of a new one are not what these tests are about (2-3 s each)."""
    srv = Server(tmp_path)
    shutil.copyfile(store_template, srv.db)
    yield srv
    srv.stop()
