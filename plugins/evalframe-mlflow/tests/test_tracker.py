"""The mlflow tracker: contract, and real CLI runs read back with MlflowClient."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from evalframe_mlflow.tracker import (
    TRUNCATED,
    MlflowConfig,
    MlflowTracker,
    flatten_params,
    resolve_uri,
    truncate,
)

from evalframe.protocols import PluginContext
from evalframe.registry import TRACKERS
from evalframe.testing import PluginContract

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


class TestMlflowContract(PluginContract):
    plugin_name = "mlflow"
    registry = TRACKERS


def test_construction_resolves_the_embedded_uri_without_importing_mlflow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    t = MlflowTracker(MlflowConfig(), PluginContext(config_key="tracking"))
    assert t.uri == f"sqlite:///{tmp_path.resolve() / 'mlflow.db'}"
    assert resolve_uri("sqlite:///x/m.db", tmp_path) == f"sqlite:///{tmp_path.resolve()}/x/m.db"
    assert resolve_uri("http://h:5000", tmp_path) == "http://h:5000"
    code = "import sys, evalframe_mlflow.tracker; print('mlflow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "False"


def test_flatten_params_and_truncation() -> None:
    flat = flatten_params({"a": {"b": 1, "c": [1, "x"], "d": None, "e": {}}, "s": "t"})
    assert flat == {"a.b": "1", "a.c": '[1, "x"]', "a.d": "null", "a.e": "{}", "s": "t"}
    cut = truncate("x" * 100, 50)
    assert len(cut) == 50 and cut.endswith(TRUNCATED)


def evalframe(root: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "EVALFRAME_CACHE_DIR": str(root / ".cache"), "PYTHONIOENCODING": "utf-8"}
    (root / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in CORPUS))
    (root / "golden.jsonl").write_text("".join(json.dumps(r) + "\n" for r in GOLDEN))
    return subprocess.run(
        [sys.executable, "-m", "evalframe", "dataset.path=golden.jsonl",
         "corpus.path=corpus.jsonl", "stats.bootstrap=50", f"hydra.run.dir={root / 'out'}",
         "tracking=mlflow", *args],
        cwd=root, env=env, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


# mlflow's sqlite store uses SQLAlchemy APIs deprecated in 2.1 (not ours to fix)
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_cli_run_is_logged_to_sqlite(tmp_path: Path) -> None:
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    res = evalframe(
        tmp_path,
        f"tracking.uri={uri}",
        "tracking.run_name=first",
        "tracking.experiment_name=e2e",
    )
    assert res.returncode == 0, res.stderr
    assert "warning" not in res.stderr, res.stderr

    client = MlflowClient(uri)
    exp = client.get_experiment_by_name("e2e")
    assert exp is not None
    (run,) = client.search_runs([exp.experiment_id])
    assert run.info.status == "FINISHED"
    assert run.info.run_name == "first"

    params = run.data.params
    assert params["retriever.name"] == "bm25"
    assert params["depth"] == "100"
    assert json.loads(params["metrics.measures"])[0] == "R@5"

    metrics = run.data.metrics
    assert metrics["RR"] == pytest.approx(1.0)
    assert metrics["R_at_5"] == pytest.approx(1.0)
    assert "nDCG_at_10.ci_low" in metrics
    assert metrics["queries"] == 3
    assert metrics["slice/difficulty/easy/nDCG_at_10"] == pytest.approx(1.0)
    assert metrics["slice/difficulty/easy/nDCG_at_10.n"] == 2
    assert "gates.passed" in metrics

    tags = run.data.tags
    assert tags["evalframe.metric.nDCG_at_10"] == "nDCG@10"
    assert tags["evalframe.metric.R_at_5"] == "R@5"
    assert tags["evalframe.experiment"] == "default"
    assert tags["evalframe.exit_code"] == "0"
    assert tags["evalframe.gates_passed"] == "true"
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert tags["evalframe.golden_hash"] == summary["golden_set"]["content_hash"]
    assert "evalframe.git_sha" not in tags  # tmp_path is not a git repository
    assert "evalframe.version" in tags

    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"config.yaml", "run.trec", "per_query.jsonl", "metrics.json", "gates.json",
            "summary.json"} <= artifacts  # fmt: skip


def test_unreachable_server_warns_and_keeps_exit_code(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    start = time.monotonic()
    res = evalframe(tmp_path, f"tracking.uri=http://127.0.0.1:{port}", timeout=60)
    assert time.monotonic() - start < 60
    assert res.returncode == 0, res.stderr
    assert "warning: tracker MlflowTracker failed in on_run_end" in res.stderr
    assert (tmp_path / "out" / "metrics.json").is_file()  # results are kept
