"""The mlflow tracker through the CLI, read back from a real sqlite store with MlflowClient."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from evalframe_mlflow.keys import metric_key
from evalframe_mlflow.record import TRUNCATED, flatten_params, truncate
from evalframe_mlflow.tracker import MlflowConfig, MlflowTracker
from evalframe_mlflow.upload import resolve_uri

from evalframe.plugin.protocols import PluginContext
from evalframe.testing import TrackerContract
from tests import forkrun

# mlflow's sqlite store uses SQLAlchemy APIs deprecated in 2.x (not ours to fix)
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


class TestMlflowContract(TrackerContract):
    plugin_name = "mlflow"

    @pytest.fixture
    def tracker(self, tmp_path: Path) -> MlflowTracker:
        # built only: the contract reads its hook signatures, and nothing imports mlflow
        uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
        return MlflowTracker(MlflowConfig(uri=uri), PluginContext(config_key="tracking"))


def test_construction_resolves_the_embedded_uri_without_importing_mlflow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    t = MlflowTracker(MlflowConfig(), PluginContext(config_key="tracking"))
    assert t.uri == f"sqlite:///{tmp_path.resolve() / 'mlflow.db'}"
    assert resolve_uri("sqlite:///x/m.db", tmp_path) == f"sqlite:///{tmp_path.resolve()}/x/m.db"
    assert resolve_uri("http://h:5000", tmp_path) == "http://h:5000"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://team:5000")
    assert resolve_uri(None, tmp_path) == "http://team:5000"
    code = "import sys, evalframe_mlflow.tracker; print('mlflow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "False"


def test_flatten_params_and_truncation() -> None:
    flat = flatten_params({"a": {"b": 1, "c": [1, "x"], "d": None, "e": {}}, "s": "t"})
    assert flat == {"a.b": "1", "a.c": '[1, "x"]', "a.d": "null", "a.e": "{}", "s": "t"}
    cut = truncate("x" * 100, 50)
    assert len(cut) == 50 and cut.endswith(TRUNCATED)


@pytest.mark.slow
def test_cli_run_is_logged_to_sqlite(project: Any, store: str, client: Callable[..., Any]) -> None:
    res = project.run(
        "tracking=mlflow",
        f"tracking.uri={store}",
        "tracking.run_name=first",
        "tracking.experiment_name=e2e",
        "metrics.measures=[R@1,R@2,R@5,RR,nDCG@10]",
        "retriever.k1=1.1",
        "slices=[difficulty]",
    )
    assert res.returncode == 0, res.stderr
    assert "warning" not in res.stderr, res.stderr
    c = client(store)
    exp = c.get_experiment_by_name("e2e")
    (run,) = c.search_runs([exp.experiment_id])
    assert run.info.status == "FINISHED"
    assert run.info.run_name == "first"

    params = run.data.params
    assert params["retriever.name"] == "bm25"
    assert params["retriever.k1"] == "1.1"
    assert params["depth"] == "100"
    assert json.loads(params["metrics.measures"]) == ["R@1", "R@2", "R@5", "RR", "nDCG@10"]

    # the headline set: no gates here, so nDCG@10 and RR from the short list, and R@1
    # (the first measure) to make three; each with its CI bounds, then counts and latency
    metrics = run.data.metrics
    headline = ["recall_at_1", "RR", "ndcg_at_10"]
    assert set(metrics) == {
        *headline,
        *(f"{k}/{b}" for k in headline for b in ("ci_low", "ci_high")),
        "queries",
        "gates.passed",
        "gates.failed",
        "gates.advisory_missed",
        "latency.p50_ms",
        "latency.p95_ms",
    }
    # three queries, each answered right at rank 1 (hand-checked: BM25 on distinct words)
    assert metrics["RR"] == pytest.approx((1 + 1 + 1) / 3)
    assert metrics["recall_at_1"] == pytest.approx(1.0)
    assert metrics["queries"] == 3
    assert metrics["gates.passed"] == 0 and metrics["gates.failed"] == 0
    head = json.loads((project.root / "out" / "headline.json").read_text())
    assert metrics["ndcg_at_10/ci_low"] == pytest.approx(head["nDCG@10.ci_low"])

    # every metric x slice, with CIs, is one table in the UI's table view
    assert {"path": "metrics_table.json", "type": "table"} in json.loads(
        run.data.tags["mlflow.loggedArtifacts"]
    )
    # (MlflowClient.load_table searches the global tracking URI, not the client's: read the file)
    path = c.download_artifacts(run.info.run_id, "metrics_table.json", str(project.root / "dl"))
    split = json.loads(Path(path).read_text())  # log_table writes pandas' "split" orient
    table = [dict(zip(split["columns"], row, strict=True)) for row in split["data"]]
    assert len(table) == 5 * (1 + 2)  # five metrics: overall, easy, hard
    easy = [r for r in table if (r["metric"], r["slice"]) == ("nDCG@10", "difficulty=easy")]
    assert [(r["mean"], r["n"]) for r in easy] == [(1.0, 2)]
    assert [r["k"] for r in table if r["metric"] == "R@5"] == [5, 5, 5]
    assert {r["measure"] for r in table} == {"R", "RR", "nDCG"}
    assert exp.tags["mlflow.experimentKind"] == "custom_model_development"

    tags = run.data.tags
    assert tags["evalframe.metric.ndcg_at_10"] == "nDCG@10"
    assert "evalframe.metric.recall_at_5" not in tags  # logged: the headline only
    assert json.loads(tags["evalframe.metrics"]) == ["R@1", "R@2", "R@5", "RR", "nDCG@10"]
    assert json.loads(tags["evalframe.headline"]) == ["R@1", "RR", "nDCG@10"]
    assert tags["evalframe.experiment"] == "default"
    assert tags["evalframe.choice.retriever"] == "bm25"
    assert tags["evalframe.plugin.retriever"].startswith("bm25 (evalframe-bm25 ")
    assert tags["evalframe.exit_code"] == "0"
    assert tags["evalframe.gates_passed"] == "true"
    assert tags["evalframe.verdict"] == "unchecked"  # no gate: nothing could fail the run
    assert tags["evalframe.upload"] == "complete"
    summary = json.loads((project.root / "out" / "summary.json").read_text())
    assert tags["evalframe.golden_hash"] == summary["golden_set"]["content_hash"]
    assert "evalframe.git_sha" not in tags  # tmp_path is not a git repository
    assert "evalframe.version" in tags

    inputs = {
        next(t.value for t in d.tags if t.key == "mlflow.data.context"): d.dataset
        for d in run.inputs.dataset_inputs
    }
    assert set(inputs) == {"eval", "corpus"}
    assert inputs["eval"].digest == summary["golden_set"]["content_hash"]
    assert inputs["corpus"].digest == summary["corpus"]["content_hash"]
    assert json.loads(inputs["corpus"].profile)["documents"] == 3
    for context, name in (("eval", "golden.jsonl"), ("corpus", "corpus.jsonl")):
        source = json.loads(inputs[context].source)
        assert source["uri"] == (project.root / name).resolve().as_uri()

    artifacts = {a.path for a in c.list_artifacts(run.info.run_id)}
    assert {"config.yaml", "run.trec", "per_query.jsonl", "metrics.json", "gates.json",
            "summary.json"} <= artifacts  # fmt: skip
    # artifacts sit beside the store, not in whatever folder the run started from
    assert (project.root / "mlartifacts").is_dir()


@pytest.mark.slow
def test_log_all_logs_every_metric_and_slice(
    project: Any, store: str, client: Callable[..., Any]
) -> None:
    res = project.run(
        "tracking=mlflow",
        f"tracking.uri={store}",
        "tracking.log_all=true",
        "metrics.measures=[R@1,R@2,R@5,RR,nDCG@10]",
        "slices=[difficulty]",
    )
    assert res.returncode == 0, res.stderr
    c = client(store)
    (run,) = c.search_runs([c.get_experiment_by_name("default").experiment_id])
    # every key of metrics.json is logged under the documented mapping
    flat = json.loads((project.root / "out" / "metrics.json").read_text())
    metrics = run.data.metrics
    for key, value in flat.items():
        if key.startswith("slice."):
            continue
        assert metrics[metric_key(key)] == pytest.approx(value), key
    assert {"ndcg_at_10/ci_low", "recall_at_5/std", "latency.p50_ms", "latency.max_ms"} <= set(
        metrics
    )
    assert metrics["slice/difficulty/easy/ndcg_at_10"] == pytest.approx(1.0)
    assert metrics["slice/difficulty/easy/ndcg_at_10/n"] == 2
    # R@1, R@2, R@5 also form one curve, recall_at_k, with the cutoff as the step
    history = c.get_metric_history(run.info.run_id, "recall_at_k")
    assert sorted((m.step, m.value) for m in history) == [(1, 1.0), (2, 1.0), (5, 1.0)]
    assert run.data.tags["evalframe.metric.recall_at_5"] == "R@5"


@pytest.mark.slow
def test_a_run_that_fails_is_logged_as_failed(
    project: Any, store: str, client: Callable[..., Any]
) -> None:
    res = project.run("tracking=mlflow", f"tracking.uri={store}", "dataset.path=nope.jsonl")
    assert res.returncode == 2
    assert "nope.jsonl" in res.stderr
    c = client(store)
    (run,) = c.search_runs([c.get_experiment_by_name("default").experiment_id])
    assert run.info.status == "FAILED"
    assert "nope.jsonl" in run.data.tags["evalframe.error"]


@pytest.mark.slow
def test_unreachable_server_keeps_a_pending_record_that_sync_uploads_once(
    project: Any, store: str, client: Callable[..., Any], unused_port: int
) -> None:
    port = unused_port  # nothing listens there
    start = time.monotonic()
    res = project.run("tracking=mlflow", f"tracking.uri=http://127.0.0.1:{port}")
    assert time.monotonic() - start < 60  # no multi-minute retry loop
    assert res.returncode == 0, res.stderr  # a tracking outage never changes the exit code
    assert "connection refused" in res.stderr or "unreachable" in res.stderr
    assert "evalframe sync" in res.stderr
    out = project.root / "out"
    assert (out / "metrics.json").is_file()  # results first
    pending = out / "mlflow_pending.json"
    record = json.loads(pending.read_text())
    assert record["uri"] == f"http://127.0.0.1:{port}"
    assert (project.root / ".cache" / "mlflow-pending" / f"{record['uid']}.path").is_file()

    synced = project.command("sync", "--uri", store)
    assert synced.returncode == 0, synced.stderr
    assert "1 synced, 0 still pending" in synced.stdout
    assert not pending.exists() and (out / "mlflow_synced.json").is_file()
    c = client(store)
    exp_id = c.get_experiment_by_name("default").experiment_id
    (run,) = c.search_runs([exp_id])
    assert run.info.run_id == json.loads((out / "mlflow_synced.json").read_text())["run_id"]
    head = json.loads((out / "headline.json").read_text())
    lost = [k for k in head if metric_key(k) not in run.data.metrics]
    assert lost == []

    again = project.command("sync")
    assert again.returncode == 0 and "nothing to sync" in again.stdout
    # a sync killed after uploading but before renaming the record: found by uid, not resent
    data = json.loads((out / "mlflow_synced.json").read_text())
    data.pop("run_id")
    pending.write_text(json.dumps(data))
    third = project.command("sync", str(out), "--uri", store)
    assert third.returncode == 0 and "already there" in third.stdout
    assert len(c.search_runs([exp_id])) == 1


@pytest.mark.slow
def test_a_queued_dvc_experiments_record_outlives_dvcs_temporary_copy(
    project: Any, store: str, client: Callable[..., Any], unused_port: int, tmp_path: Path
) -> None:
    """A queued experiment runs in <workspace>/.dvc/tmp/exps/tmpXXXX, deleted when it
    ends (DVC sets DVC_ROOT to the workspace). Its pending record, left in the copy's
    results folder (no stage output), went with it: the run was never logged."""
    import shutil

    workspace = tmp_path / "workspace"
    copy = workspace / ".dvc" / "tmp" / "exps" / "tmpq1x2"
    (copy / ".dvc").mkdir(parents=True)  # the copy's root, as DVC makes it
    for name in ("corpus.jsonl", "golden.jsonl"):
        shutil.copy(project.root / name, copy / name)
    cache = tmp_path / "home-cache"
    queued = type(project)(
        copy, env={"DVC_ROOT": str(workspace), "EVALFRAME_CACHE_DIR": str(cache)}
    )
    res = queued.run("tracking=mlflow", f"tracking.uri=http://127.0.0.1:{unused_port}")
    assert res.returncode == 0, res.stderr
    (warning,) = [line for line in res.stderr.splitlines() if "could not log run" in line]
    kept_dir = cache / "mlflow-pending" / "kept"
    (kept,) = kept_dir.glob("*/mlflow_pending.json")
    assert f"the MLflow record is kept in {kept} with the files it uploads" in warning
    assert "DVC's temporary copy" in warning
    shutil.rmtree(copy)  # what DVC does when the experiment ends

    at_home = type(project)(workspace, env={"EVALFRAME_CACHE_DIR": str(cache)})
    synced = at_home.command("sync", "--uri", store)
    assert synced.returncode == 0, synced.stdout + synced.stderr
    assert "1 synced, 0 still pending" in synced.stdout
    c = client(store)
    (run,) = c.search_runs([c.get_experiment_by_name("default").experiment_id])
    assert run.data.metrics["RR"] == pytest.approx((1 + 1) / 2)  # the toy set's two hits at 1
    assert "evalframe.missing_artifacts" not in run.data.tags
    uploaded = {a.path for a in c.list_artifacts(run.info.run_id)}
    assert {"metrics.json", "summary.json", "per_query.jsonl"} <= uploaded


@pytest.mark.slow
def test_quickstart_logs_to_the_default_store(tmp_path: Path, client: Callable[..., Any]) -> None:
    """What `make quickstart` does: tracking is on by default, to ./mlflow.db."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("EVALFRAME_TRACKING", "MLFLOW_TRACKING_URI")
    }
    env["EVALFRAME_CACHE_DIR"] = str(tmp_path / ".cache")
    res = forkrun.run(
        ["+experiment=quickstart", "stats.bootstrap=50"],
        cwd=tmp_path, env=env, timeout=180, preload=forkrun.MLFLOW,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    db = tmp_path / "mlflow.db"
    assert db.is_file()
    c = client(f"sqlite:///{db}")
    (run,) = c.search_runs([c.get_experiment_by_name("quickstart").experiment_id])
    assert run.data.tags["evalframe.experiment"] == "quickstart"
    assert run.data.tags["evalframe.choice.experiment"] == "quickstart"
    assert run.info.run_name == "bootstrap=50"  # what the command line changed
    # the headline: the gated R@5 and RR, and nDCG@10; each with its CI bounds
    assert json.loads(run.data.tags["evalframe.headline"]) == ["R@5", "RR", "nDCG@10"]
    assert "ndcg_at_10" in run.data.metrics
    assert len(run.data.metrics) <= 20, sorted(run.data.metrics)

    table = forkrun.run(["runs"], cwd=tmp_path, env=env, timeout=60, preload=forkrun.MLFLOW)
    assert table.returncode == 0, table.stderr
    assert run.info.run_id[:8] in table.stdout
    assert max(len(line) for line in table.stdout.splitlines()) <= 100
    assert "passed" in table.stdout


@pytest.mark.slow
def test_a_report_html_in_the_run_folder_is_the_runs_first_artifact_and_linked(
    project: Any, store: str, client: Callable[..., Any]
) -> None:
    """A reporter's page (report.html) is uploaded first, and the run's description links it."""
    from evalframe_mlflow.record import build_run_record
    from evalframe_mlflow.upload import Uploader

    from evalframe.plugin.hooks import RunContext, RunOutcome

    res = project.run()  # tracking off: the record is built here, from the folder
    assert res.returncode == 0, res.stderr
    out = project.root / "out"
    (out / "report.html").write_text("<!doctype html><title>report</title><h1>report</h1>")
    outputs = {p.stem: p for p in out.iterdir() if p.suffix in (".json", ".jsonl", ".trec")}
    context = RunContext("default", out, {"dataset": {"path": "golden.jsonl"}}, {})
    record = build_run_record(
        context, RunOutcome(0, outputs), uri=store, experiment_name="e", run_name=None,
        cwd=project.root,
    )  # fmt: skip
    assert Path(record.artifacts[0]).name == "report.html"
    run_id, _ = Uploader(store).upload(record)
    c = client(store)
    assert "report.html" in {a.path for a in c.list_artifacts(run_id)}
    note = c.get_run(run_id).data.tags["mlflow.note.content"]
    experiment = c.get_experiment_by_name("e").experiment_id
    assert f"(#/experiments/{experiment}/runs/{run_id}/artifacts/report.html?" in note
    # the link, then the run's summary.md (which this run, without its page, lacks)
    assert note.startswith("**[Open the evalframe report](") and "\n\n" not in note
    (out / "summary.md").write_text("## ✓ PASSED · evalframe · default\n\n| RR | 1.0 |\n")
    record = build_run_record(
        context, RunOutcome(0, outputs), uri=store, experiment_name="e2", run_name=None,
        cwd=project.root,
    )  # fmt: skip
    run_id, _ = Uploader(store).upload(record)
    note = c.get_run(run_id).data.tags["mlflow.note.content"]
    head, text = note.split("\n\n", 1)
    assert "(report.html under Artifacts). The full metric table is" in head
    assert text == (out / "summary.md").read_text()


def test_in_dvcs_temporary_copy_the_store_is_the_workspaces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A queued DVC experiment runs in `<workspace>/.dvc/tmp/exps/tmpXXXX`, deleted when
    it ends, with DVC_ROOT naming the workspace: a folder of the copy stands for the same
    folder of the workspace. Anywhere else the folder is its own, as before."""
    from evalframe_mlflow.upload import dvc_workspace

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    workspace = (tmp_path / "ws").resolve()
    (workspace / ".dvc").mkdir(parents=True)
    queued = workspace / ".dvc" / "tmp" / "exps" / "tmp3k9x_q1"  # `dvc queue start`
    standalone = workspace / ".dvc" / "tmp" / "exps" / "standalone" / "tmpa8r0"  # --temp
    for copy in (queued, standalone):
        (copy / ".dvc").mkdir(parents=True)
        (copy / "stages").mkdir()
    monkeypatch.delenv("DVC_ROOT", raising=False)
    assert dvc_workspace(queued) == queued  # DVC started nothing: the folder is its own
    monkeypatch.setenv("DVC_ROOT", str(workspace))
    assert dvc_workspace(queued) == workspace
    assert dvc_workspace(standalone) == workspace
    assert dvc_workspace(queued / "stages") == workspace / "stages"  # a stage's wdir
    assert resolve_uri(None, queued) == f"sqlite:///{workspace}/mlflow.db"
    assert resolve_uri("sqlite:///runs/m.db", queued) == f"sqlite:///{workspace}/runs/m.db"
    assert resolve_uri(f"sqlite:///{queued}/m.db", queued) == f"sqlite:///{queued}/m.db"
    assert resolve_uri("http://h:5000", queued) == "http://h:5000"
    # `dvc repro` and a workspace `dvc exp run` run in the workspace: as before
    assert resolve_uri(None, workspace) == f"sqlite:///{workspace}/mlflow.db"
    assert dvc_workspace(workspace / "stages") == workspace / "stages"
    # a DVC project below the Git root: the copy is of the Git repository, and the
    # project's folder in it holds .dvc
    mono = workspace / ".dvc" / "tmp" / "exps" / "tmpm0n0"
    (mono / "eval" / ".dvc").mkdir(parents=True)
    assert dvc_workspace(mono / "eval") == workspace
    # DVC_ROOT of another repository: this copy is not DVC's copy of it
    other = (tmp_path / "other").resolve()
    (other / ".dvc").mkdir(parents=True)
    monkeypatch.setenv("DVC_ROOT", str(other))
    assert dvc_workspace(queued) == queued


@pytest.mark.slow
def test_a_run_in_dvcs_temporary_copy_is_logged_to_the_workspaces_store(
    project: Any, store_template: Path, client: Callable[..., Any]
) -> None:
    """The run, from the copy, with the environment a queued experiment's stage gets:
    its record is in the workspace's mlflow.db, and the copy holds no store."""
    import shutil

    tmp_path = project.root.resolve()
    workspace = tmp_path / "ws"
    copy = workspace / ".dvc" / "tmp" / "exps" / "tmpq0ue"
    (copy / ".dvc").mkdir(parents=True)
    shutil.copyfile(store_template, workspace / "mlflow.db")  # an empty store, made once
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("EVALFRAME_TRACKING", "MLFLOW_TRACKING_URI")
    }
    env.update(
        DVC_ROOT=str(workspace),
        DVC_EXP_NAME="queued-exp",
        EVALFRAME_CACHE_DIR=str(tmp_path / ".cache"),
    )
    res = forkrun.run(
        [f"dataset.path={tmp_path / 'golden.jsonl'}", f"corpus.path={tmp_path / 'corpus.jsonl'}",
         "retriever.k1=0.9",
         "stats.bootstrap=50", "report.html=false", f"hydra.run.dir={copy / 'out'}",
         "output.cache_dir=.evalframe-cache"],  # relative, as params.yaml names it
        cwd=copy, env=env, timeout=180, preload=forkrun.MLFLOW,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert f"to sqlite:///{workspace}/mlflow.db" in res.stdout + res.stderr
    assert not (copy / "mlflow.db").exists() and not (copy / "mlartifacts").exists()
    # the retrieval cache too: the workspace's, which outlives the copy
    assert (workspace / ".evalframe-cache" / "entries.sqlite3").is_file()
    assert not (copy / ".evalframe-cache").exists()
    c = client(f"sqlite:///{workspace / 'mlflow.db'}")
    (run,) = c.search_runs([e.experiment_id for e in c.search_experiments()])
    assert run.data.params["retriever.k1"] == "0.9"
    # named after the DVC experiment (DVC_EXP_NAME), not by MLflow at random
    assert run.info.run_name.startswith("queued-exp: k1=0.9")
    assert run.data.tags["evalframe.dvc_exp"] == "queued-exp"
    assert (workspace / "mlartifacts").is_dir()  # beside the store, as in the workspace
