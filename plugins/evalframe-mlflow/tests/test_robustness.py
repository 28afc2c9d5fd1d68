"""Robustness of the MLflow tracker: keys, big records, exactly-once, Ctrl-C, races, outages.

Everything is checked against a real sqlite MLflow store (read back with
MlflowClient); only our own ``Uploader.upload`` is replaced, where a test
needs a crash at one precise step.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from evalframe_mlflow.keys import metric_key, safe_key
from evalframe_mlflow.record import RunRecord, new_uid
from hypothesis import given, settings
from hypothesis import strategies as st

# mlflow's sqlite store uses SQLAlchemy APIs deprecated in 2.x (not ours to fix)
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

UID_TAG = "evalframe.run_uid"
COMPLETE = ("evalframe.upload", "complete")
# what Uploader puts in the environment; restored after each in-process test
_HTTP_ENV = (
    "MLFLOW_HTTP_REQUEST_TIMEOUT",
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR",
    "MLFLOW_HTTP_REQUEST_BACKOFF_JITTER",
    "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR",
)


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """In-process uploads write no pointer into ~/.cache and leave os.environ as it was."""
    for name in _HTTP_ENV:
        monkeypatch.setenv(name, "placeholder")  # remembered, so teardown restores it
        monkeypatch.delenv(name)
    monkeypatch.setenv("EVALFRAME_CACHE_DIR", str(tmp_path / ".cache"))


def _validate(key: str) -> None:
    """MLflow's own checks for a metric, param and tag key, and its key length."""
    from mlflow.utils.validation import (
        MAX_ENTITY_KEY_LENGTH,
        _validate_metric_name,
        _validate_param_name,
        _validate_tag_name,
    )

    _validate_metric_name(key)
    _validate_param_name(key)
    _validate_tag_name(key)
    assert len(key) <= MAX_ENTITY_KEY_LENGTH, (len(key), key)


def _record(uri: str, **fields: Any) -> RunRecord:
    values: dict[str, Any] = {
        "uid": new_uid(),
        "kind": "run",
        "uri": uri,
        "experiment_name": "robust",
        "run_name": None,
        "params": {},
        "metrics": [],
        "tags": {},
        "artifacts": [],
    }
    values.update(fields)
    return RunRecord(**values)


def _by_uid(c: Any, uid: str, tag: str = UID_TAG) -> list[Any]:
    """Every run in the store (any experiment) whose ``tag`` is ``uid``."""
    ids = [e.experiment_id for e in c.search_experiments()]
    return list(c.search_runs(ids, filter_string=f"tags.`{tag}` = '{uid}'"))


def _all_runs(c: Any) -> list[Any]:
    return list(c.search_runs([e.experiment_id for e in c.search_experiments()]))


def _env(root: Path) -> dict[str, str]:
    return {
        **os.environ,
        "EVALFRAME_CACHE_DIR": str(root / ".cache"),
        "PYTHONIOENCODING": "utf-8",
    }


def _popen(root: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "evalframe", *args],
        cwd=root,
        env=_env(root),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


# -- 1. keys -----------------------------------------------------------------------------
_KEY_TEXT = st.text(
    alphabet=st.one_of(st.sampled_from("/.@()=,:;_- aZ9"), st.characters()), max_size=320
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, database=None)
@given(_KEY_TEXT)
def test_safe_key_passes_mlflows_validators_for_arbitrary_strings(text: str) -> None:
    """Any string (slashes, dots, '@', unicode, long) becomes a key MLflow's validators accept."""
    _validate(safe_key(text))


@pytest.mark.parametrize(
    "text",
    [
        "a//b",
        "x/./y",
        "..",
        ".",
        "",
        "/",
        "/lead",
        "trail/",
        "a/../b",
        "retriever.init_kwargs.http-//h/x",
        "slice/topic/..",
        "nDCG@10 é ✓",
        "k" * 300,
        "a/" * 150,
        "@" * 300,
    ],
)
def test_safe_key_passes_mlflows_validators_for_hand_cases(text: str) -> None:
    """The shapes MLflow refuses (empty or dot segments, leading '/', over 250 chars) are fixed."""
    _validate(safe_key(text))


@pytest.mark.parametrize("text", ["..a", "...", "..hidden/x"])
def test_safe_key_of_a_leading_double_dot_is_accepted_by_mlflow(text: str) -> None:
    """MLflow refuses any key whose path starts with '..', not only '..' itself."""
    _validate(safe_key(text))
    assert safe_key("..a") == "-u2e-.a"


@pytest.mark.parametrize(
    "key", ["nDCG_at_10", "slice/difficulty/easy/RR", "RR_at_10.ci_low", "latency.p50_ms"]
)
def test_already_safe_keys_come_back_unchanged(key: str) -> None:
    """A key MLflow already accepts is not rewritten."""
    assert safe_key(key) == key


def test_safe_key_hand_mapped_examples() -> None:
    """The documented rewrites, written out by hand."""
    assert safe_key("a//b") == "a/_/b"
    assert safe_key("x/./y") == "x/-u2e-/y"
    assert safe_key("..") == "-u2e--u2e-"
    assert safe_key("/lead") == "_/lead"
    assert safe_key("trail/") == "trail/_"
    assert safe_key("retriever.init_kwargs.http-//h/x") == "retriever.init_kwargs.http-/_/h/x"
    long = safe_key("k" * 300)
    assert len(long) == 250 and long.startswith("k" * 239 + "-")


# -- 2. a big record ----------------------------------------------------------------------
@pytest.mark.slow
def test_a_big_record_is_uploaded_in_full_across_batches(
    store: str, client: Callable[[str], Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """250 params (odd keys, one 7000-char value), 2500 metrics, 150 tags: nothing lost.

    Each kind is more than one of MLflow's per-request batches (100 params, 1000
    metrics, 100 tags), so every chunk has to land.
    """
    from evalframe_mlflow.upload import Uploader

    monkeypatch.chdir(tmp_path)
    params = {f"p{i:03d}": f"v{i}" for i in range(245)}
    odd = {"a//b": "1", "x/./y": "2", "/lead": "3", "nDCG@10": "4", "long": "y" * 7000}
    params.update(odd)
    metrics = [(f"m{i:04d}", i / 10, 0) for i in range(2499)] + [("R@5//x", 0.25, 0)]
    tags = {f"t{i:03d}": f"tag{i}" for i in range(150)}
    record = _record(store, params=params, metrics=metrics, tags=tags)

    run_id, already = Uploader(store).upload(record)
    assert not already

    run = client(store).get_run(run_id)
    got = run.data.params
    assert len(got) == 250
    for i in range(245):
        assert got[f"p{i:03d}"] == f"v{i}"
    assert got["a/_/b"] == "1"
    assert got["x/-u2e-/y"] == "2"
    assert got["_/lead"] == "3"
    assert got["nDCG_at_10"] == "4"
    assert len(got["long"]) == 6000  # MLflow's param value limit
    assert got["long"] == "y" * (6000 - len("...[truncated]")) + "...[truncated]"

    got_metrics = run.data.metrics
    assert len(got_metrics) == 2500
    for i in range(2499):
        assert got_metrics[f"m{i:04d}"] == pytest.approx(i / 10)
    assert got_metrics["R_at_5/_/x"] == 0.25

    got_tags = run.data.tags
    for i in range(150):
        assert got_tags[f"t{i:03d}"] == f"tag{i}"
    assert got_tags[UID_TAG] == record.uid
    assert got_tags[COMPLETE[0]] == COMPLETE[1]
    assert run.info.status == "FINISHED"


# -- 3./4. exactly once ---------------------------------------------------------------------
def test_a_half_uploaded_run_is_filled_in_not_duplicated(
    store: str, client: Callable[[str], Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An upload cut off after create_run and a few params: sync completes that same run."""
    from evalframe_mlflow.pending import sync
    from mlflow.entities import Param

    monkeypatch.chdir(tmp_path)
    record = _record(
        store,
        params={"a": "1", "b": "2", "c": "3"},
        metrics=[("RR", 0.5, 0), ("nDCG@10", 0.75, 0)],
        tags={"evalframe.experiment": "robust"},
    )
    c = client(store)
    exp = c.create_experiment("robust", artifact_location=(tmp_path / "art").as_uri())
    half = c.create_run(exp, tags={UID_TAG: record.uid})
    c.log_batch(half.info.run_id, params=[Param("a", "1"), Param("b", "2")])

    folder = tmp_path / "run"
    folder.mkdir()
    path = record.save_pending(folder)
    (result,) = sync([path], uri=store)
    assert (result.status, result.run_id) == ("uploaded", half.info.run_id)

    (run,) = _by_uid(c, record.uid)
    assert run.info.run_id == half.info.run_id
    assert run.info.status == "FINISHED"
    assert run.data.params == {"a": "1", "b": "2", "c": "3"}
    assert run.data.metrics == {"RR": 0.5, "nDCG_at_10": 0.75}
    assert run.data.tags[COMPLETE[0]] == COMPLETE[1]
    assert not path.exists()
    assert json.loads((folder / "mlflow_synced.json").read_text())["run_id"] == half.info.run_id


def test_a_complete_run_left_running_is_ended_not_resent(
    store: str, client: Callable[[str], Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Legacy state 'complete but RUNNING' (older evalframe tagged before ending): sync ends it.

    Today the run is ended before it is tagged complete, so a crash between the two
    leaves an *incomplete* run (the half-uploaded case above), never this one.
    """
    from evalframe_mlflow.pending import sync

    monkeypatch.chdir(tmp_path)
    record = _record(store, params={"a": "1"}, metrics=[("RR", 0.5, 0)])
    c = client(store)
    exp = c.create_experiment("robust", artifact_location=(tmp_path / "art").as_uri())
    legacy = c.create_run(exp, tags={UID_TAG: record.uid, COMPLETE[0]: COMPLETE[1]})
    assert c.get_run(legacy.info.run_id).info.status == "RUNNING"

    folder = tmp_path / "run"
    folder.mkdir()
    (result,) = sync([record.save_pending(folder)], uri=store)
    assert (result.status, result.run_id) == ("already there", legacy.info.run_id)

    (run,) = _by_uid(c, record.uid)
    assert run.info.status == "FINISHED"
    assert run.info.end_time is not None
    assert run.data.params == {}  # "already there": nothing was sent again


def test_a_crash_just_before_the_complete_tag_leaves_an_ended_run_that_sync_completes(
    store: str, client: Callable[[str], Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run is ended *before* it is tagged complete, so 'complete but RUNNING' cannot arise.

    A crash at the very last step (the complete tag) leaves a FINISHED run without the
    tag; the next sync finds it by uid and completes that run instead of making another.
    """
    from evalframe_mlflow.pending import sync
    from evalframe_mlflow.upload import Uploader

    monkeypatch.chdir(tmp_path)
    record = _record(store, params={"a": "1"}, metrics=[("RR", 0.5, 0)])
    uploader = Uploader(store)
    real_set_tag = uploader.client.set_tag

    def crash_on_complete(run_id: str, key: str, value: Any, *args: Any, **kw: Any) -> Any:
        if key == COMPLETE[0]:
            raise KeyboardInterrupt  # the process is killed right here
        return real_set_tag(run_id, key, value, *args, **kw)

    monkeypatch.setattr(uploader.client, "set_tag", crash_on_complete)
    with pytest.raises(KeyboardInterrupt):
        uploader.upload(record)
    c = client(store)
    (cut,) = _by_uid(c, record.uid)
    assert cut.info.status == "FINISHED"  # already ended when the crash came
    assert COMPLETE[0] not in cut.data.tags

    folder = tmp_path / "run"
    folder.mkdir()
    (result,) = sync([record.save_pending(folder)], uri=store)
    assert (result.status, result.run_id) == ("uploaded", cut.info.run_id)
    (run,) = _by_uid(c, record.uid)
    assert run.info.status == "FINISHED"
    assert run.data.tags[COMPLETE[0]] == COMPLETE[1]
    assert run.data.metrics == {"RR": 0.5}


# -- 5. Ctrl-C ------------------------------------------------------------------------------
@pytest.mark.slow
def test_ctrl_c_during_the_upload_keeps_the_record_and_logs_no_second_run(
    project: Any, store: str, client: Callable[[str], Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """KeyboardInterrupt mid-upload propagates; the full record stays; on_error adds nothing.

    The hooks get a real RunContext/RunOutcome over the files of a real run; only
    ``Uploader.upload`` is replaced, by one that is interrupted.
    """
    from evalframe_mlflow.tracker import MlflowConfig, MlflowTracker
    from evalframe_mlflow.upload import Uploader
    from omegaconf import OmegaConf

    from evalframe.plugin.hooks import RunContext, RunOutcome
    from evalframe.plugin.protocols import PluginContext

    res = project.run("tracking=none", "report.html=true")  # the page is uploaded first
    assert res.returncode == 0, res.stderr
    out = project.root / "out"
    cache = project.root / ".cache"
    monkeypatch.chdir(project.root)
    monkeypatch.setenv("EVALFRAME_CACHE_DIR", str(cache))

    config = OmegaConf.to_container(OmegaConf.load(out / "config.yaml"))
    assert isinstance(config, dict)
    context = RunContext("default", out, config, {})
    names = ("metrics.json", "summary.json", "per_query.jsonl", "run.trec", "gates.json")
    outputs = {n.split(".")[0]: out / n for n in names}
    tracker = MlflowTracker(MlflowConfig(uri=store), PluginContext(config_key="tracking"))
    calls: list[str] = []

    def interrupted(self: Uploader, record: RunRecord) -> tuple[str, bool]:
        calls.append(record.uid)
        raise KeyboardInterrupt

    monkeypatch.setattr(Uploader, "upload", interrupted)
    tracker.on_run_start(context)
    with pytest.raises(KeyboardInterrupt):
        tracker.on_run_end(context, RunOutcome(0, outputs))

    pending = out / "mlflow_pending.json"
    data = json.loads(pending.read_text())
    assert calls == [data["uid"]]
    assert data["status"] == "FINISHED"
    metrics = {k: v for k, v, _ in data["metrics"]}
    # three queries, each answered at rank 1 by BM25 (distinct words): RR = R@1 = 1
    assert metrics["RR"] == 1.0
    head = json.loads((out / "headline.json").read_text())
    assert [k for k in head if metric_key(k) not in metrics] == []
    # slices are rows of the record's table: two easy queries, one hard, all at rank 1
    rows = [dict(zip(data["table"]["columns"], r, strict=True)) for r in data["table"]["rows"]]
    by_slice = {(r["metric"], r["slice"]): (r["mean"], r["n"]) for r in rows}
    assert by_slice[("RR", "difficulty=easy")] == (1.0, 2)
    assert by_slice[("RR", "difficulty=hard")] == (1.0, 1)
    # the listed outputs, and first the run's page, which the run left in its folder
    assert data["artifacts"][0] == "report.html"
    assert sorted(data["artifacts"]) == sorted([*names, "report.html"])
    pointers = sorted((cache / "mlflow-pending").glob("*.path"))
    assert [p.name for p in pointers] == [f"{data['uid']}.path"]

    # the pipeline reports the interrupt to on_error: the run has ended, nothing new
    tracker.on_error(context, KeyboardInterrupt())
    assert json.loads(pending.read_text())["uid"] == data["uid"]
    assert calls == [data["uid"]]
    assert sorted(p.name for p in out.glob("mlflow_*")) == ["mlflow_pending.json"]
    assert len(list((cache / "mlflow-pending").glob("*.path"))) == 1
    assert _all_runs(client(store)) == []

    synced = project.command("sync", str(out), "--uri", store)
    assert synced.returncode == 0, synced.stdout + synced.stderr
    assert "1 synced, 0 still pending" in synced.stdout
    (run,) = _all_runs(client(store))
    assert run.data.tags[UID_TAG] == data["uid"]
    assert run.info.status == "FINISHED"
    assert run.data.metrics["RR"] == 1.0
    artifacts = {a.path for a in client(store).list_artifacts(run.info.run_id)}
    assert {"metrics.json", "summary.json", "per_query.jsonl"} <= artifacts


# -- 6./7. sync: races and broken records --------------------------------------------------
@pytest.mark.slow
def test_three_runs_at_once_on_a_fresh_sqlite_store_all_log(
    project: Any, tmp_path: Path, client: Callable[[str], Any]
) -> None:
    """MLflow makes a new SQLite store's tables in the first process to open it; three
    runs starting together must not break each other's migration (each with its own
    cache folder: the lock cannot live there)."""
    store = f"sqlite:///{tmp_path / 'fresh' / 'mlflow.db'}"
    (tmp_path / "fresh").mkdir()
    procs = []
    for i in range(3):
        env = {**_env(project.root), "EVALFRAME_CACHE_DIR": str(project.root / f".cache{i}")}
        args = ["dataset.path=golden.jsonl", "corpus.path=corpus.jsonl", "tracking=mlflow",
                f"tracking.uri={store}", "report.html=false",
                f"hydra.run.dir={project.root / f'o{i}'}"]  # fmt: skip
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "evalframe", *args],
                cwd=project.root,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    outs = [p.communicate(timeout=240) for p in procs]
    for proc, (_, stderr) in zip(procs, outs, strict=True):
        assert proc.returncode == 0, stderr
        assert "could not log run" not in stderr, stderr
    for i in range(3):
        assert (project.root / f"o{i}" / "mlflow_synced.json").is_file()
        assert not (project.root / f"o{i}" / "mlflow_pending.json").exists()
    assert len(_all_runs(client(store))) == 3


@pytest.mark.slow
def test_two_concurrent_syncs_of_one_record_make_one_run(
    project: Any, store: str, client: Callable[[str], Any]
) -> None:
    """Two `evalframe sync` processes on the same record: one uploads it, the other waits
    for that and reports it synced; both exit 0, and MLflow has one run."""
    metrics = [(f"m{i:04d}", float(i), 0) for i in range(1500)]  # a few batches: a wider window
    record = _record(store, params={"a": "1"}, metrics=metrics)
    folder = project.root / "run"
    folder.mkdir()
    record.save_pending(folder)

    procs = [_popen(project.root, "sync", str(folder), "--uri", store) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    for proc, (stdout, stderr) in zip(procs, outs, strict=True):
        assert "Traceback" not in stderr, stderr
        assert proc.returncode == 0, (stdout, stderr)
    said = [stdout for stdout, _ in outs]
    uploaded = sum(s.count("uploaded as run") for s in said)
    elsewhere = sum(s.count("synced by another process as run") for s in said)
    # one uploads; the other either waited for it or came after it ("already there")
    assert uploaded == 1 and elsewhere + sum(s.count("already there") for s in said) <= 1, said

    (run,) = _by_uid(client(store), record.uid)
    assert run.info.status == "FINISHED"
    assert len(run.data.metrics) == 1500
    assert not (folder / "mlflow_pending.json").exists()


@pytest.mark.slow
def test_a_corrupt_record_is_reported_and_the_good_one_still_uploaded(
    project: Any, store: str, client: Callable[[str], Any]
) -> None:
    """A truncated mlflow_pending.json, and two edited by hand (a list where MLflow's tags
    are a mapping: it crashed sync with exit 3 and stopped the batch; no uid: "missing 1
    required positional argument"), beside a good one: ✗ for each, saying which field, ✓
    for the good one, exit 2 (the damaged files are the user's to fix)."""
    good = project.root / "records" / "good"
    good.mkdir(parents=True)
    record = _record(store, metrics=[("RR", 0.5, 0)])
    record.save_pending(good)
    damaged = {
        "cut": lambda text: text[: len(text) // 2],  # cut off mid-write
        "tags": lambda text: json.dumps({**json.loads(text), "tags": ["a"]}),
        "uid": lambda text: json.dumps({k: v for k, v in json.loads(text).items() if k != "uid"}),
    }
    for name, damage in damaged.items():
        folder = project.root / "records" / name
        folder.mkdir()
        (folder / "mlflow_pending.json").write_text(
            damage(json.dumps(_record(store).to_json(folder)))
        )

    res = project.command("sync", str(project.root / "records"), "--uri", store)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "Traceback" not in res.stderr, res.stderr
    lines = res.stdout.splitlines()
    failed = {line.split("/mlflow_pending.json")[0].rsplit("/", 1)[-1]: line for line in lines
              if line.startswith("✗")}  # fmt: skip
    assert set(failed) == set(damaged)
    assert "unreadable record (JSONDecodeError" in failed["cut"]
    assert (
        "not a record evalframe wrote: field 'tags' should be an object, found list"
        in (failed["tags"])
    )
    assert "not a record evalframe wrote: field 'uid' is missing" in failed["uid"]
    assert all(line.endswith("fix or delete the file") for line in failed.values())
    (ok,) = [line for line in lines if line.startswith("✓")]
    assert "good" in ok and "uploaded" in ok
    assert "1 synced, 3 still pending" in res.stdout
    for name in damaged:  # kept, to be fixed or deleted
        assert (project.root / "records" / name / "mlflow_pending.json").exists()
    (run,) = _by_uid(client(store), record.uid)
    assert run.data.metrics == {"RR": 0.5}


def test_sync_of_a_path_that_is_no_record_nor_folder_is_an_error(project: Any) -> None:
    """A file that is no record was "nothing to sync", exit 0; a missing path was
    "config key paths" (a command-line argument is no config key)."""
    (project.root / "notes.txt").write_text("x")
    res = project.command("sync", str(project.root / "notes.txt"))
    assert res.returncode == 2 and "is a file, and no mlflow_pending.json" in res.stderr
    res = project.command("sync", str(project.root / "nowhere"))
    assert res.returncode == 2, res.stderr
    assert res.stderr.startswith(f"error: {project.root / 'nowhere'} does not exist")


# -- 8./9. sweeps with the server down -----------------------------------------------------
def _unreachable_sweep(project: Any, port: int) -> tuple[Path, subprocess.CompletedProcess[str]]:
    sweep = project.root / "sweep"
    res = project.run(
        "-m",
        "depth=3,5",
        "tracking=mlflow",
        f"tracking.uri=http://127.0.0.1:{port}",
        f"hydra.sweep.dir={sweep}",
    )
    return sweep, res


@pytest.mark.slow
def test_an_abandoned_sweep_parent_is_closed_as_failed_by_sync(
    project: Any, store: str, client: Callable[[str], Any], unused_port: int
) -> None:
    """The sweep's process died: only its *open* parent record and the jobs' records are left.

    Sync rebuilds the parent from the sweep folder (jobs table included), closes it
    FAILED and tagged abandoned, and nests the jobs of the same call under it.
    """
    sweep, res = _unreachable_sweep(project, unused_port)
    assert res.returncode == 0, res.stderr
    marker = json.loads((sweep / "mlflow_sweep.json").read_text())
    # undo what on_sweep_end did: the state of a process killed before the sweep ended
    for name in ("jobs.md", "jobs.csv"):
        (sweep / name).unlink()
    RunRecord(
        uid=marker["uid"],
        kind="sweep",
        uri=marker["uri"],
        experiment_name="default",
        run_name=marker["run_name"],
        params={},
        metrics=[],
        tags={"evalframe.experiment": "default", "evalframe.sweep": "true"},
        artifacts=[],
        start_time=marker["start_time"],
        open=True,
    ).save_pending(sweep)

    synced = project.command("sync", str(sweep), "--uri", store)
    assert synced.returncode == 0, synced.stdout + synced.stderr
    assert "3 synced, 0 still pending" in synced.stdout

    c = client(store)
    (parent,) = _by_uid(c, marker["uid"])
    assert parent.info.status == "FAILED"
    assert parent.data.tags["evalframe.sweep_abandoned"] == "true"
    assert parent.data.tags["evalframe.sweep"] == "true"
    assert parent.data.metrics["sweep.jobs"] == 2
    artifacts = {a.path for a in c.list_artifacts(parent.info.run_id)}
    assert {"jobs.md", "jobs.csv"} <= artifacts
    table = (sweep / "jobs.md").read_text()
    assert "| 0 | depth=3 | 0 | passed |" in table and "| 1 | depth=5 | 0 | passed |" in table

    jobs = _by_uid(c, marker["uid"], tag="evalframe.parent_uid")
    assert sorted(j.data.params["depth"] for j in jobs) == ["3", "5"]
    assert [j.data.tags.get("mlflow.parentRunId") for j in jobs] == [parent.info.run_id] * 2
    assert len(_all_runs(c)) == 3


@pytest.mark.slow
def test_a_sweep_started_with_the_server_down_is_synced_later_with_nesting(
    project: Any, store: str, client: Callable[[str], Any], unused_port: int
) -> None:
    """Server down for the whole sweep: later jobs skip waiting, sync nests everything.

    Job 0 is synced alone first (its parent does not exist yet: an orphan), then the
    sweep folder: the parent adopts job 0 and job 1 is created under it.
    """
    sweep, res = _unreachable_sweep(project, unused_port)
    assert res.returncode == 0, res.stderr  # a tracking outage never changes the exit code
    assert (sweep / "mlflow_unreachable").is_file()
    (skipped,) = [
        line for line in res.stderr.splitlines() if "unreachable for an earlier job" in line
    ]
    assert f"{sweep / '1'}/mlflow_pending.json" in skipped  # job 1's, after job 0 failed
    assert "unreachable for an earlier job of this sweep" in skipped
    marker = json.loads((sweep / "mlflow_sweep.json").read_text())
    assert marker["run_id"] is None  # the parent could not be opened at the sweep's start
    parent_record = json.loads((sweep / "mlflow_pending.json").read_text())
    assert (parent_record["kind"], parent_record["open"]) == ("sweep", False)

    c = client(store)
    first = project.command("sync", str(sweep / "0"), "--uri", store)
    assert first.returncode == 0, first.stdout + first.stderr
    (orphan,) = _all_runs(c)
    assert orphan.data.tags["evalframe.parent_uid"] == marker["uid"]
    assert "mlflow.parentRunId" not in orphan.data.tags

    rest = project.command("sync", str(sweep), "--uri", store)
    assert rest.returncode == 0, rest.stdout + rest.stderr
    assert "2 synced, 0 still pending" in rest.stdout
    (parent,) = _by_uid(c, marker["uid"])
    assert parent.info.status == "FINISHED"
    assert "evalframe.sweep_abandoned" not in parent.data.tags
    jobs = sorted(
        _by_uid(c, marker["uid"], tag="evalframe.parent_uid"),
        key=lambda r: r.data.tags["evalframe.sweep_job"],
    )
    assert [j.data.params["depth"] for j in jobs] == ["3", "5"]
    assert jobs[0].info.run_id == orphan.info.run_id
    assert [j.data.tags.get("mlflow.parentRunId") for j in jobs] == [parent.info.run_id] * 2
    assert len(_all_runs(c)) == 3


# -- 10. evalframe runs -------------------------------------------------------------------
@pytest.mark.slow
def test_runs_reports_user_errors_without_tracebacks(
    project: Any, store: str, client: Callable[[str], Any], unused_port: int
) -> None:
    """Bad filter, dead server, --max 0 and a metric name no metric has exit 2 with a
    message; --json is parseable."""
    from evalframe_mlflow.upload import Uploader

    record = _record(
        store,
        experiment_name="default",
        params={"retriever.name": "bm25", "dataset.name": "tiny"},
        metrics=[("RR", 0.5, 0)],
        tags={"evalframe.metrics": '["RR"]', "evalframe.experiment": "default"},
    )
    run_id, _ = Uploader(store).upload(record)

    root = project.root
    procs = {
        "filter": _popen(root, "runs", "--uri", store, "--filter", "metrics.RR >> 1"),
        # a syntax MLflow reads, a value it refuses: was blamed on the store ("start the server")
        "value": _popen(root, "runs", "--uri", store, "--filter", "metrics.rr > x"),
        "dead": _popen(root, "runs", "--uri", f"http://127.0.0.1:{unused_port}"),
        "max": _popen(root, "runs", "--uri", store, "--max", "0"),
        "json": _popen(root, "runs", "--uri", store, "--json"),
        "metric": _popen(root, "runs", "--uri", store, "-m", "RR", "Foo@x"),
        # keys the runs log beside the metrics, and a statistic of one (docs/tracking.md)
        "other": _popen(root, "runs", "--uri", store, "-m", "MRR", "latency.p95_ms", "R@5.ci_low"),
    }
    outs = {name: (p.communicate(timeout=120), p.returncode) for name, p in procs.items()}
    for name, ((_, stderr), _) in outs.items():
        assert "Traceback" not in stderr, (name, stderr)

    (_, stderr), code = outs["filter"]
    assert code == 2 and "MLflow rejected the filter" in stderr, stderr
    (_, stderr), code = outs["value"]
    assert code == 2 and "error: option --filter: MLflow rejected the filter" in stderr, stderr
    assert "start the server" not in stderr

    (_, stderr), code = outs["dead"]
    assert code == 2, stderr
    text = stderr.strip()
    assert text.startswith("error: ") and "cannot read the MLflow store" in text, text
    assert f"127.0.0.1:{unused_port}" in text
    assert "\n\n" not in text and len(text.splitlines()) <= 2, text  # one paragraph

    (_, stderr), code = outs["max"]
    assert code == 2 and "between 1 and 50000" in stderr, stderr

    (stdout, stderr), code = outs["other"]  # shown, as before
    assert code == 0, stderr

    (stdout, stderr), code = outs["metric"]  # was a column of dashes, exit 0
    assert code == 2 and stdout == "", stdout
    assert stderr.startswith("error: option --metrics[1]: cannot read metric 'Foo@x'"), stderr

    (stdout, stderr), code = outs["json"]
    assert code == 0, stderr
    (row,) = json.loads(stdout)
    assert row["run"] == run_id
    assert row["params.retriever.name"] == "bm25"
    assert row["params.dataset.name"] == "tiny"
    assert row["RR"] == "0.5000"


# -- 11./12. turning tracking off and on ----------------------------------------------------
@pytest.mark.slow
def test_tracking_none_touches_no_mlflow(project: Any) -> None:
    """tracking=none: no store in the project folder and no word of MLflow on stderr."""
    res = project.run("tracking=none")
    assert res.returncode == 0, res.stderr
    assert not (project.root / "mlflow.db").exists()
    assert not (project.root / "mlartifacts").exists()
    assert not (project.root / "out" / "mlflow_pending.json").exists()
    assert "mlflow" not in res.stderr.lower(), res.stderr


@pytest.mark.slow
def test_a_tracking_uri_on_the_command_line_beats_evalframe_tracking_none(
    project: Any, store: str, client: Callable[[str], Any]
) -> None:
    """EVALFRAME_TRACKING=none, tracking.uri=<store>: the command line wins; the run is logged."""
    project.env["EVALFRAME_TRACKING"] = "none"
    res = project.run(f"tracking.uri={store}")
    assert res.returncode == 0, res.stderr
    c = client(store)
    (run,) = c.search_runs([c.get_experiment_by_name("default").experiment_id])
    assert run.info.status == "FINISHED"
    assert run.data.tags[COMPLETE[0]] == COMPLETE[1]
    assert run.data.metrics["RR"] == 1.0  # BM25 ranks each query's passage first


# -- 13. a SQLite store that cannot be opened or written -------------------------------------
def _unwritable_store(root: Path, how: str) -> Path:
    """A store path no run can write to; "parent is a file" stops root too (chmod does not)."""
    if how == "read-only folder":
        folder = root / "readonly"
        folder.mkdir()
        folder.chmod(0o555)
        return folder / "mlflow.db"
    blocker = root / "blocker"
    blocker.write_text("a file where the store's folder should be\n")
    return blocker / "mlflow.db"


_AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


@pytest.mark.slow
@pytest.mark.parametrize(
    "how",
    [
        pytest.param(
            "read-only folder",
            marks=pytest.mark.skipif(_AS_ROOT, reason="root writes into a read-only folder"),
        ),
        "parent is a file",
    ],
)
def test_a_store_that_cannot_be_written_is_reported_at_once_and_the_record_kept(
    project: Any, store: str, client: Callable[[str], Any], how: str
) -> None:
    """Not MLflow's engine retry (over a minute and a half, a line per try): one warning
    naming the store's folder and the fix, the run's own exit code, the record kept for
    sync, which uploads it to a store that works."""
    import time

    db = _unwritable_store(project.root, how)
    started = time.monotonic()
    res = project.run("tracking=mlflow", f"tracking.uri=sqlite:///{db}")
    elapsed = time.monotonic() - started
    assert res.returncode == 0, res.stderr  # a tracking problem never changes the exit code
    assert "Traceback" not in res.stderr, res.stderr
    assert "retried" not in res.stderr, res.stderr  # none of MLflow's retry lines
    assert elapsed < 30, elapsed  # a sanity bound: MLflow's own retry alone is ~100 s
    (warning,) = [line for line in res.stderr.splitlines() if line.startswith("warning:")]
    assert "could not log run" in warning
    assert f"its folder {db.parent}" in warning
    assert ("not writable" if how == "read-only folder" else f"{db.parent} is a file") in warning
    assert "point tracking.uri" in warning  # how to fix it
    out = project.root / "out"
    assert (out / "mlflow_pending.json").is_file()
    assert f"evalframe sync {out}" in warning
    assert not db.exists()

    # A rescore (or merge) --out that run would replace its folder whole, record and all
    # (the core knows the record by RunFolder.UNDELIVERED_SUFFIX): refused until synced.
    other = project.root / "other"
    shutil.copytree(out, other, ignore=shutil.ignore_patterns("mlflow_*"))
    refused = project.command("rescore", str(other), "--out", str(out), "tracking=none")
    assert refused.returncode == 2, refused.stderr
    assert "Traceback" not in refused.stderr
    assert f"error: option --out: {out} holds a run whose tracking record was never " in (
        refused.stderr
    )
    assert f"`evalframe sync {out}`" in refused.stderr
    assert (out / "mlflow_pending.json").is_file()

    synced = project.command("sync", str(out), "--uri", store)
    assert synced.returncode == 0, synced.stdout + synced.stderr
    assert "1 synced, 0 still pending" in synced.stdout
    (run,) = _all_runs(client(store))
    assert run.data.metrics["RR"] == 1.0
    # delivered, the run may be replaced like any other
    replaced = project.command("rescore", str(other), "--out", str(out), "tracking=none")
    assert replaced.returncode == 0, replaced.stderr
    assert not list(out.glob("mlflow_*"))


def _bad_store(root: Path, how: str) -> Path:
    if how == "path is a folder":
        folder = root / "stores"
        folder.mkdir()
        return folder
    if how == "not a database":
        path = root / "notes.db"
        path.write_bytes(b"these are notes, not an SQLite database\n" * 200)
        return path
    if how == "read-only file":
        path = root / "frozen.db"
        path.write_bytes(b"")
        path.chmod(0o444)
        return path
    return _unwritable_store(root, how)


@pytest.mark.parametrize(
    ("how", "says"),
    [
        ("path is a folder", "is a folder, not a database file"),
        ("not a database", "is not a usable SQLite database: file is not a database"),
        ("parent is a file", "cannot be created: {path.parent} is a file"),
        pytest.param(
            "read-only folder",
            "is not writable: Permission denied",
            marks=pytest.mark.skipif(_AS_ROOT, reason="root writes into a read-only folder"),
        ),
        pytest.param(
            "read-only file",
            "the database file {path} is read-only",
            marks=pytest.mark.skipif(_AS_ROOT, reason="root writes to a read-only file"),
        ),
    ],
)
def test_check_sqlite_store_names_what_is_wrong(tmp_path: Path, how: str, says: str) -> None:
    """Each store MLflow would retry opening for minutes is refused at once, with the fix."""
    from evalframe_mlflow.upload import StoreUnusableError, check_sqlite_store, failure_reason

    path = _bad_store(tmp_path, how)
    with pytest.raises(StoreUnusableError) as caught:
        check_sqlite_store(f"sqlite:///{path}")
    assert says.format(path=path) in caught.value.problem
    assert caught.value.fix
    assert failure_reason(caught.value) == f"{caught.value.problem}; {caught.value.fix}"
    assert [p.name for p in tmp_path.rglob(".evalframe-probe-*")] == []


def test_check_sqlite_store_passes_usable_stores(store: str, tmp_path: Path) -> None:
    """A store that works, a new one (its folder made, as MLflow would), other URIs: no error.

    Readers need only a readable file: a store in a read-only folder can still be listed.
    """
    from evalframe_mlflow.upload import check_sqlite_store

    check_sqlite_store(store)
    check_sqlite_store(store, write=False)
    check_sqlite_store(f"sqlite:///{tmp_path / 'new' / 'deeper' / 'mlflow.db'}")
    assert (tmp_path / "new" / "deeper").is_dir()
    assert not (tmp_path / "new" / "deeper" / "mlflow.db").exists()
    check_sqlite_store("http://127.0.0.1:1")
    check_sqlite_store("sqlite:///:memory:")
    blocked = _unwritable_store(tmp_path, "parent is a file")
    check_sqlite_store(f"sqlite:///{blocked}", write=False)  # missing: the caller says so


def test_mlflows_own_engine_retry_is_short_and_silent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Should the check miss a store MLflow cannot open, MLflow's retry is cut to one more
    try and its "Operation will be retried" lines are not printed; the limit is restored."""
    import logging
    import time

    import evalframe_mlflow.upload as upload
    import mlflow.store.db.utils as db_utils

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(upload, "check_sqlite_store", lambda uri, write=True: None)
    folder = tmp_path / "stores"
    folder.mkdir()  # SQLite cannot open a folder as its database
    seen: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record.getMessage())

    keep = Keep()
    logger = logging.getLogger("mlflow.store.db.utils")
    logger.addHandler(keep)
    limit = db_utils.MAX_RETRY_COUNT
    started = time.monotonic()
    try:
        with pytest.raises(Exception, match="unable to open database file"):
            upload.Uploader(f"sqlite:///{folder}")
    finally:
        logger.removeHandler(keep)
    assert time.monotonic() - started < 30  # a sanity bound: MLflow's own retry is ~100 s
    assert limit == db_utils.MAX_RETRY_COUNT
    assert [m for m in seen if "retried" in m] == []


@pytest.mark.slow
def test_runs_and_ui_refuse_a_store_they_cannot_read_at_once(
    project: Any, unused_port: int
) -> None:
    """`evalframe runs` and `evalframe ui` on a folder or a file that is no database: a
    one-paragraph error and exit 2, not MLflow's minutes of retries (nor a server started)."""
    folder = _bad_store(project.root, "path is a folder")
    notes = _bad_store(project.root, "not a database")
    runs = project.command("runs", "--uri", f"sqlite:///{folder}", timeout=60)
    ui = project.command(
        "ui", "--uri", f"sqlite:///{notes}", "--port", str(unused_port), timeout=60
    )
    for res, path, says in (
        (runs, folder, "is a folder, not a database file"),
        (ui, notes, "is not a usable SQLite database"),
    ):
        assert res.returncode == 2, res.stdout + res.stderr
        text = res.stderr.strip()
        assert "Traceback" not in text and "retried" not in text, text
        assert text.startswith("error: cannot read the MLflow store at"), text
        assert f"{path} {says}" in text, text
        assert "hint:" in text, text
    assert "MLflow UI for" not in ui.stdout  # no server was started


@pytest.mark.slow
def test_a_tracked_rescore_that_failed_can_be_run_again_into_the_same_folder(
    project: Any, store: str, client: Callable[[str], Any]
) -> None:
    """A tracked rescore that fails after its tracker started logs the failed run and
    leaves its record in --out, and nothing else. The same command, the mistake mended,
    replaces that folder as it would an earlier run's, instead of refusing it as a folder
    of other files."""
    assert project.run("tracking=none").returncode == 0
    run_dir, out = project.root / "out", project.root / "rescored"
    track = ("tracking=mlflow", f"tracking.uri={store}")
    failed = project.command("rescore", str(run_dir), "--out", str(out), *track, "baseline=nope")
    assert failed.returncode == 2, failed.stderr
    assert "no baseline named 'nope'" in failed.stderr
    assert sorted(p.name for p in out.iterdir()) == ["mlflow_synced.json"]

    again = project.command("rescore", str(run_dir), "--out", str(out), *track)
    assert again.returncode == 0, again.stderr
    assert f"note: replacing the failed run's tracking record in {out} with the re-scored" in (
        again.stderr
    )
    assert (out / "summary.json").is_file()
    runs = {r.info.status: r.info.run_name for r in _all_runs(client(store))}
    # the failed attempt stays on record; each is named after the run it re-scored
    assert runs == {"FAILED": "rescore of out: baseline=nope", "FINISHED": "rescore of out"}
