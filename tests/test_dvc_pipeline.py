"""The DVC pipeline with the real dvc, in a temporary Git repository.

One module-scoped project walks through a team's flow, each test one step:
`dvc repro` on a clean checkout runs every stage and a second one nothing;
a changed golden set re-runs only its own stages and `dvc metrics diff` shows
the delta; `golden diff --rev` reads the committed version through DVC;
`dvc exp run -S` composes params.yaml with Hydra; `dvc push`/`dvc pull` work
against a folder remote. The tests depend on each other's state and run in
file order.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
DVC = BIN / "dvc"
#: What the pipeline needs of the checkout (the evalframe it runs is the installed one).
COPIED = [
    ".gitignore",
    "conf",
    "dvc.yaml",
    "params.yaml",
    ".dvcignore",
    ".dvc/config",
    ".dvc/.gitignore",
    ".dvc/plugins",
    "evalframe",
    "plugins/evalframe-bm25/evalframe_bm25",
    "plugins/evalframe-jsonl/evalframe_jsonl",
    "plugins/evalframe-gates/evalframe_gates",
    "results/.gitignore",
]
NAMES = ("quickstart", "docs_keywords", "exp")
SKIPPED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")


@dataclass
class Repo:
    root: Path
    env: dict[str, str]

    def run(self, *argv: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            list(argv), cwd=self.root, env=self.env, capture_output=True, text=True, timeout=300
        )
        if ok and proc.returncode != 0:
            command = " ".join(argv)
            raise AssertionError(f"{command} exited {proc.returncode}:\n{proc.stdout}{proc.stderr}")
        return proc

    def dvc(self, *argv: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run(str(DVC), *argv, ok=ok)

    def commit(self, message: str) -> None:
        self.run("git", "add", "-A")
        self.run("git", "commit", "-q", "-m", message)


def keys(tree: object, prefix: str = "") -> set[str]:
    """Every dotted key path of a nested mapping (lists are leaves)."""
    if not isinstance(tree, dict):
        return {prefix}
    return {k for name, v in tree.items() for k in keys(v, f"{prefix}{name}.")}


def ran(output: str) -> set[str]:
    return set(re.findall(r"Running stage '([^']+)'", output))


def drop_stages(path: Path, prefix: str) -> None:
    """Leave out the stages whose names start with ``prefix`` (another test's pipeline)."""
    data = yaml.safe_load(path.read_text())
    data["stages"] = {k: v for k, v in data["stages"].items() if not k.startswith(prefix)}
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def keyword_set(n: int) -> str:
    """A small golden set over the quickstart corpus, standing in for the dvc-tracked one."""
    lines = (REPO / "evalframe/data/quickstart/golden.jsonl").read_text().splitlines()
    return "\n".join(lines[:n]) + "\n"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    if not DVC.is_file() or shutil.which("git") is None:
        pytest.skip("needs dvc beside the interpreter and git")
    root = tmp_path_factory.mktemp("dvcrepo")
    for rel in COPIED:
        source, target = REPO / rel, root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, ignore=SKIPPED)
        else:
            shutil.copy2(source, target)
    drop_stages(root / "dvc.yaml", "build_")  # golden construction: tests/build/test_dvc_build.py
    (root / "golden").mkdir()
    (root / "golden/docs_keywords.jsonl").write_text(keyword_set(12))
    home = root.parent / f"{root.name}-home"
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "DVC_NO_ANALYTICS": "1",
        "EVALFRAME_TRACKING": "none",
        "EVALFRAME_CACHE_DIR": str(home / "cache"),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "PYTHONIOENCODING": "utf-8",
    }
    repo = Repo(root, env)
    repo.run("git", "init", "-q", "-b", "main")
    repo.dvc("config", "--local", "core.site_cache_dir", str(home / "site"))
    repo.dvc("remote", "modify", "--local", "local", "url", str(home / "remote"))
    repo.dvc("add", "-q", "golden/docs_keywords.jsonl")
    repo.commit("init")
    return repo


def test_repro_on_a_clean_checkout_runs_everything_and_then_nothing(repo: Repo) -> None:
    first = repo.dvc("repro", "evaluate")
    assert ran(first.stdout) == {
        "validate@quickstart",
        "validate@docs_keywords",
        "evaluate@quickstart",
        "evaluate@docs_keywords",
    }
    for name in ("quickstart", "docs_keywords"):  # compare needs the baselines promoted
        promoted = repo.run(
            "evalframe", "baseline", "promote", f"results/{name}", "--name", name, "--commit"
        )
        assert f"ran: dvc add baselines/{name}" in promoted.stdout
    log = repo.run("git", "log", "--format=%s", "--name-only", "-1").stdout
    assert "baseline docs_keywords" in log and "baselines/docs_keywords.dvc" in log

    second = repo.dvc("repro")
    assert ran(second.stdout) == {
        "exp",
        "compare@quickstart",
        "compare@docs_keywords",
        "report",
    }
    summary = json.loads((repo.root / "results/docs_keywords/summary.json").read_text())
    assert summary["golden_set"]["dvc_file"] == "golden/docs_keywords.jsonl.dvc"
    tracked = yaml.safe_load((repo.root / "golden/docs_keywords.jsonl.dvc").read_text())
    assert summary["golden_set"]["dvc_md5"] == tracked["outs"][0]["md5"]
    assert (repo.root / "results/report/report.html").is_file()
    repo.commit("pipeline")

    again = repo.dvc("repro")
    assert ran(again.stdout) == set()
    assert "Data and pipelines are up to date." in again.stdout
    assert "up to date" in repo.dvc("status").stdout
    # EVALFRAME_CACHE_DIR is set (above): the runs and their comparisons still name the
    # repository's cache folder, so their config.yaml is the same on every machine
    for run in ("quickstart", "compare/quickstart"):
        config = yaml.safe_load((repo.root / "results" / run / "config.yaml").read_text())
        assert config["output"]["cache_dir"] == ".evalframe-cache", run


def test_a_changed_source_puts_every_evaluation_stage_out_of_date(repo: Repo) -> None:
    """Every stage that runs evalframe depends on its source: a change re-runs the
    comparisons and the report too, not only the evaluations (docs/dvc.md)."""
    changed = repo.root / "evalframe" / "_a_change.py"
    changed.write_text("VALUE = 1\n")
    try:
        status = json.loads(repo.dvc("status", "--json").stdout)
    finally:
        changed.unlink()
    assert set(status) == {
        *(f"{stage}@{name}" for stage in ("validate", "evaluate", "compare") for name in NAMES[:2]),
        "exp",
        "report",
    }
    assert all({"changed deps": {"evalframe": "modified"}} in status[s] for s in status), status
    assert "up to date" in repo.dvc("status").stdout


# 16 s of a 600 s budget: the clean-checkout test above runs every stage and checks that a
# second repro runs none; this forced rerun of each kind of stage, byte for byte, runs in
# `make test-all` (and `make repro` twice before every commit of dvc.lock does it too)
@pytest.mark.extended
def test_a_forced_repro_rewrites_every_tracked_output_byte_for_byte(
    repo: Repo, mlflow_store: Callable[[Path], str]
) -> None:
    """Each kind of stage again: nothing DVC or Git tracks changes, and `git status` stays
    clean.

    Latency, retrieval-cache hits and the MLflow record differ from run to run;
    they are written beside the outputs, never into them, and are ignored. One
    stage runs again with MLflow tracking on to show that its record stays out
    too (all of them tracked would cost a minute here).
    """
    lock = (repo.root / "dvc.lock").read_bytes()
    # every kind of stage once: the foreach stages run one command for either golden set
    # (quickstart's evaluate runs again below, tracked), so all eight would add 10 s
    kinds = ["validate@docs_keywords", "evaluate@docs_keywords", "compare@docs_keywords"]
    forced = repo.dvc("repro", "-f", "-s", *kinds, "exp", "report")
    assert ran(forced.stdout) == {*kinds, "exp", "report"}
    assert (repo.root / "dvc.lock").read_bytes() == lock  # every output's md5 as it was
    assert repo.run("git", "status", "--porcelain").stdout == ""

    store = repo.root.parent / f"{repo.root.name}-home" / "mlflow.db"
    env = {k: v for k, v in repo.env.items() if k != "EVALFRAME_TRACKING"}
    env["MLFLOW_TRACKING_URI"] = mlflow_store(store)
    tracked = Repo(repo.root, env).dvc("repro", "-f", "-s", "evaluate@quickstart")
    assert ran(tracked.stdout) == {"evaluate@quickstart"}
    assert "mlflow: logged run" in tracked.stdout + tracked.stderr
    for volatile in ("timings.json", "mlflow_synced.json"):
        assert (repo.root / "results/quickstart" / volatile).is_file(), volatile
    assert (repo.root / "dvc.lock").read_bytes() == lock
    assert repo.run("git", "status", "--porcelain").stdout == ""
    assert "Data and pipelines are up to date." in repo.dvc("repro").stdout


def test_a_changed_golden_set_reruns_only_its_stages(repo: Repo) -> None:
    (repo.root / "golden/docs_keywords.jsonl").write_text(keyword_set(11))
    repo.dvc("add", "-q", "golden/docs_keywords.jsonl")
    diff = repo.run("evalframe", "golden", "diff", "golden/docs_keywords.jsonl", "--rev", "HEAD")
    assert "golden/docs_keywords.jsonl@HEAD" in diff.stdout
    assert "1 removed" in diff.stdout and "Removed (1)" in diff.stdout

    rerun = repo.dvc("repro")
    assert ran(rerun.stdout) == {
        "validate@docs_keywords",
        "evaluate@docs_keywords",
        "compare@docs_keywords",
        "report",
    }
    metrics = json.loads(repo.dvc("metrics", "diff", "--json").stdout)
    queries = metrics["results/docs_keywords/headline.json"]["queries"]
    assert (queries["old"], queries["new"], queries["diff"]) == (12, 11, -1)
    assert "results/quickstart/headline.json" not in metrics  # unchanged
    assert set(metrics) == {"results/docs_keywords/headline.json"}  # the headline files only
    # the full table is one file too, diffed when named
    full = json.loads(
        repo.dvc(
            "metrics", "diff", "--json", "--targets", "results/docs_keywords/metrics.json"
        ).stdout
    )
    slices = full["results/docs_keywords/metrics.json"]
    assert slices["queries"]["diff"] == -1
    assert any(k.startswith("slice.") and k.endswith(".ci_low") for k in slices)
    plots = json.loads(repo.dvc("plots", "diff", "HEAD", "--json").stdout)
    assert {"recall@k", "nDCG@k", "R@5 per slice"} <= set(plots["data"])
    repo.commit("one query fewer")
    committed = repo.run(
        "evalframe", "golden", "diff", "golden/docs_keywords.jsonl", "--rev", "HEAD~1", "--json"
    )
    assert json.loads(committed.stdout)["summary"]["removed"] == 1


def test_exp_run_composes_params_with_hydra(repo: Repo) -> None:
    proc = repo.dvc(
        "exp", "run", "-n", "k1-12", "-S", "+experiment=docs_keywords", "-S", "retriever.k1=1.2"
    )
    assert ran(proc.stdout) <= {"exp", "report"} and "exp" in ran(proc.stdout)
    params = yaml.safe_load((repo.root / "params.yaml").read_text())
    assert params["experiment"] == "docs_keywords"
    assert params["retriever"] == {**params["retriever"], "name": "bm25", "k1": 1.2}
    assert params["dataset"]["path"] == "golden/docs_keywords.jsonl"
    assert "hydra" not in params and params["output"]["dir"] == "results/exp"
    # the committed params.yaml is what `dvc repro` runs and what `dvc exp diff` compares
    # against: it has every key today's composition has (else new keys show as "-" at HEAD)
    committed = yaml.safe_load((REPO / "params.yaml").read_text())
    assert keys(committed) == keys(params), "params.yaml is stale: see docs/dvc.md to compose it"
    shown = json.loads(repo.dvc("exp", "show", "--json").stdout)
    experiments = [
        e for rev in shown for e in (rev.get("experiments") or []) if e.get("name") == "k1-12"
    ]
    assert experiments, shown
    data = experiments[0]["revs"][0]["data"]
    # a readable `exp show`: the headline files only, a dozen columns each
    assert set(data["metrics"]) == {f"results/{n}/headline.json" for n in NAMES}
    assert all(len(m["data"]) <= 20 for m in data["metrics"].values())
    metrics = data["metrics"]["results/exp/headline.json"]["data"]
    assert metrics["queries"] == 11 and 0 <= metrics["RR"] <= 1
    # docs/dvc.md's narrowing: --drop and --keep match whole column names
    keep = r"Experiment|results/exp/headline\.json:.*"
    table = repo.dvc("exp", "show", "--csv", "--drop", ".*", "--keep", keep).stdout
    columns = table.splitlines()[0].split(",")
    assert columns == ["Experiment", *(f"results/exp/headline.json:{k}" for k in metrics)]
    assert data["params"]["params.yaml"]["data"]["retriever"]["k1"] == 1.2


def test_a_plain_exp_run_is_stopped_before_it_changes_anything(repo: Repo) -> None:
    """Without -S '+experiment=NAME' the composition picks no experiment: DVC used to
    write a params.yaml naming no golden set and delete results/exp (its metrics files
    with it) before it failed. conf/dvc_exp.yaml stops it before DVC writes anything."""
    tracked = {p: p.read_bytes() for p in (repo.root / "results/exp").iterdir() if p.is_file()}
    params = (repo.root / "params.yaml").read_bytes()
    before = repo.run("git", "status", "--porcelain").stdout
    for argv in ([], ["-S", "retriever.k1=1.3"]):
        proc = repo.dvc("exp", "run", *argv, ok=False)
        assert proc.returncode != 0
        assert "picks no experiment" in proc.stderr and "+experiment=NAME" in proc.stderr
        assert ran(proc.stdout) == set()
    assert (repo.root / "params.yaml").read_bytes() == params
    assert {p: p.read_bytes() for p in tracked} == tracked
    assert repo.run("git", "status", "--porcelain").stdout == before


@pytest.mark.extended  # a real DVC queue worker; the suite checks the same lookup run in a
# copy with DVC's environment (plugins/evalframe-mlflow/tests/test_tracker.py) and unit by unit
def test_queued_experiments_log_their_runs_to_the_workspaces_store(
    repo: Repo, store_template: Path
) -> None:
    """A queued experiment runs in a temporary copy under .dvc/tmp/exps, deleted when it
    ends: its MLflow run is in the workspace's default store, ./mlflow.db (it was in
    the copy's, and lost)."""
    import sqlite3
    import time

    store = repo.root / "mlflow.db"  # the default store; an empty one, made once
    shutil.copyfile(store_template, store)
    env = {
        k: v for k, v in repo.env.items() if k not in ("EVALFRAME_TRACKING", "MLFLOW_TRACKING_URI")
    }
    tracked = Repo(repo.root, env)
    tracked.dvc(
        "exp", "run", "--queue", "-n", "queued-k1",
        "-S", "+experiment=docs_keywords", "-S", "retriever.k1=0.7",
        "exp",  # the stage alone: the compare stages need baselines an earlier test promotes
    )  # fmt: skip
    tracked.dvc("queue", "start")
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        status = tracked.dvc("queue", "status").stdout
        if not re.search(r"\b(Queued|Running)\b", status):
            break
        time.sleep(2)
    if not re.search(r"\bSuccess\b", status) or "Failed" in status:
        logs = tracked.dvc("queue", "logs", "queued-k1", ok=False)
        pytest.fail(f"{status}\n{logs.stdout}{logs.stderr}")
    with sqlite3.connect(store) as db:
        k1 = db.execute("SELECT value FROM params WHERE key = 'retriever.k1'").fetchall()
        names = {name for (name,) in db.execute("SELECT name FROM runs")}
    assert k1 == [("0.7",)]
    assert "queued-k1" in names, names  # the exp stage's run: named after the experiment
    logs = tracked.dvc("queue", "logs", "queued-k1").stdout
    assert "Running stage 'exp'" in logs
    assert f"to sqlite:///{repo.root.resolve() / 'mlflow.db'}" in logs
    store.unlink()


def test_push_and_pull_through_the_folder_remote(repo: Repo) -> None:
    golden = repo.root / "golden/docs_keywords.jsonl"
    before = golden.read_bytes()
    assert "pushed" in repo.dvc("push").stdout
    baseline = repo.root / "baselines/quickstart/summary.json"
    golden.unlink()
    shutil.rmtree(baseline.parent)
    shutil.rmtree(repo.root / ".dvc/cache")
    repo.dvc("pull")
    assert golden.read_bytes() == before
    assert baseline.is_file()
