"""A ``-m`` sweep in MLflow: one parent run, one child per job, read back from a real store."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import pytest

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

# A stored run that ranks the right passage second for every query: RR = 1/2.
STORED = """\
1 Q0 gates 1 2.0 stored
1 Q0 install 2 1.0 stored
2 Q0 cache 1 2.0 stored
2 Q0 gates 2 1.0 stored
3 Q0 install 1 2.0 stored
3 Q0 cache 2 1.0 stored
"""


@pytest.mark.slow
def test_two_retriever_sweep_is_a_parent_with_two_children(
    project: Any, store: str, client: Callable[..., Any]
) -> None:
    (project.root / "stored.trec").write_text(STORED)
    conf = project.root / "conf" / "retriever"
    conf.mkdir(parents=True)
    (conf / "stored.yaml").write_text("name: run_file\npath: stored.trec\n")
    res = project.run(
        "-m",
        "retriever=bm25,stored",
        "tracking=mlflow",
        f"tracking.uri={store}",
        f"hydra.sweep.dir={project.root / 'sweep'}",
    )
    assert res.returncode == 0, res.stderr
    c = client(store)
    exp_id = c.get_experiment_by_name("default").experiment_id
    runs = c.search_runs([exp_id])
    assert len(runs) == 3
    (parent,) = [r for r in runs if r.data.tags.get("evalframe.sweep") == "true"]
    children = sorted(
        (r for r in runs if r is not parent), key=lambda r: r.data.tags["evalframe.sweep_job"]
    )
    assert [r.data.tags["mlflow.parentRunId"] for r in children] == [parent.info.run_id] * 2
    assert [r.data.params["retriever.name"] for r in children] == ["bm25", "run_file"]
    # each child is named after what the sweep varies, not a random name
    assert [r.info.run_name for r in children] == ["retriever=bm25", "retriever=stored"]
    # side by side under the same keys: BM25 finds every passage first, the stored run second
    assert [r.data.metrics["RR"] for r in children] == pytest.approx([1.0, 1 / 2])
    assert [r.data.metrics["recall_at_5"] for r in children] == pytest.approx([1.0, 1.0])

    assert parent.info.status == "FINISHED"
    assert parent.data.metrics["best/RR"] == pytest.approx(1.0)
    assert parent.data.tags["evalframe.best.RR"] == "job 0: retriever=bm25"
    assert parent.data.metrics["sweep.jobs"] == 2
    assert parent.data.metrics["sweep.failed_jobs"] == 0
    artifacts = {a.path for a in c.list_artifacts(parent.info.run_id)}
    assert {"jobs.md", "jobs.csv"} <= artifacts
    table = (project.root / "sweep" / "jobs.md").read_text()
    assert "| 1 | retriever=stored | 0 | passed |" in table

    listing = project.command("runs", "--uri", store, "--metrics", "RR", "R@5")
    assert listing.returncode == 0, listing.stderr
    lines = listing.stdout.splitlines()
    assert max(len(line) for line in lines) <= 100
    parent_line = next(i for i, line in enumerate(lines) if line.startswith(parent.info.run_id[:8]))
    assert lines[parent_line + 1].startswith("└ ") and lines[parent_line + 2].startswith("└ ")
    assert "sweep" in lines[parent_line]


@pytest.mark.slow
def test_a_sweep_with_a_failed_job_closes_its_parent_as_failed(
    project: Any, store: str, client: Callable[..., Any]
) -> None:
    res = project.run(
        "-m",
        "depth=5,0",  # depth 0 is refused: that job ends with exit code 2
        "tracking=mlflow",
        f"tracking.uri={store}",
        f"hydra.sweep.dir={project.root / 'sweep'}",
    )
    assert res.returncode == 2
    c = client(store)
    runs = c.search_runs([c.get_experiment_by_name("default").experiment_id])
    (parent,) = [r for r in runs if r.data.tags.get("evalframe.sweep") == "true"]
    assert parent.info.status == "FAILED"
    assert parent.data.metrics["sweep.failed_jobs"] == 1
    csv = (project.root / "sweep" / "jobs.csv").read_text().splitlines()
    assert csv[0].startswith("job,overrides,exit_code,gates_passed")
    assert csv[2].startswith("1,depth=0,2,")


@pytest.mark.slow
def test_compare_accepts_mlflow_run_ids(
    project: Any, store: str, client: Callable[..., Any]
) -> None:
    for out, k1 in (("a", "1.2"), ("b", "0.5")):
        res = project.run("tracking=mlflow", f"tracking.uri={store}", f"retriever.k1={k1}", out=out)
        assert res.returncode == 0, res.stderr
    c = client(store)
    runs = c.search_runs([c.get_experiment_by_name("default").experiment_id])
    by_k1 = {r.data.params["retriever.k1"]: r.info.run_id for r in runs}
    project.env["MLFLOW_TRACKING_URI"] = store
    res = project.command("compare", f"runs:/{by_k1['1.2']}", by_k1["0.5"], "--out", "cmp")
    assert res.returncode == 0, res.stderr
    assert "Downloading" not in res.stderr
    from_ids = json.loads((project.root / "cmp" / "comparison.json").read_text())
    res = project.command("compare", "a", "b", "--out", "cmp_dirs")
    from_dirs = json.loads((project.root / "cmp_dirs" / "comparison.json").read_text())
    strip = ("a", "b", "name")
    assert {k: v for k, v in from_ids.items() if k not in strip} == {
        k: v for k, v in from_dirs.items() if k not in strip
    }

    missing = project.command("compare", "0" * 32, by_k1["0.5"])
    assert missing.returncode == 2
    assert f"no MLflow run {'0' * 32}" in missing.stderr

    # the 8 characters `evalframe runs` prints stand for the run (it said "not a run id")
    a, b = by_k1["1.2"], by_k1["0.5"]
    res = project.command("compare", a[:8], b[:8], "--out", "cmp_short")
    assert res.returncode == 0, res.stderr
    short = json.loads((project.root / "cmp_short" / "comparison.json").read_text())
    assert {k: v for k, v in short.items() if k not in strip} == {
        k: v for k, v in from_ids.items() if k not in strip
    }
    # a beginning no run has (a folder's hex name as likely as an id), and one too short
    unknown = next(p for p in ("000000", "ffffff") if not a.startswith(p) and not b.startswith(p))
    res = project.command("compare", unknown, b[:8])
    assert res.returncode == 2
    assert f"'{unknown}' is not a run folder, a baseline in " in res.stderr
    assert project.command("compare", a[:5], b[:8]).returncode == 2  # not taken for an id


@pytest.mark.slow
def test_a_sweep_under_the_joblib_launcher_is_tracked_the_same(
    project: Any, store: str, client: Callable[..., Any]
) -> None:
    """Jobs run in worker processes: they find their parent through the sweep folder."""
    res = project.run(
        "-m",
        "hydra/launcher=joblib",
        "hydra.launcher.n_jobs=2",
        "dataset.path=golden.jsonl,nope.jsonl",  # the second job fails to load its data
        "tracking=mlflow",
        f"tracking.uri={store}",
        f"hydra.sweep.dir={project.root / 'sweep'}",
        timeout=240,
    )
    assert res.returncode == 2, res.stderr  # read back from the jobs' folders
    c = client(store)
    runs = c.search_runs([c.get_experiment_by_name("default").experiment_id])
    (parent,) = [r for r in runs if r.data.tags.get("evalframe.sweep") == "true"]
    children = [r for r in runs if r is not parent]
    assert len(children) == 2
    assert {r.data.tags.get("mlflow.parentRunId") for r in children} == {parent.info.run_id}
    assert sorted(r.info.status for r in children) == ["FAILED", "FINISHED"]
    assert parent.info.status == "FAILED"


def _slurm_bin(root: Any, sbatch: str | None) -> str:
    """A folder for PATH: empty (no SLURM), or with an ``srun`` and this ``sbatch`` script."""
    folder = root / "bin"
    folder.mkdir()
    if sbatch is not None:
        for name, body in (("srun", "exit 1"), ("sbatch", sbatch)):
            (folder / name).write_text(f"#!/bin/sh\n{body}\n")
            (folder / name).chmod(0o755)
    return str(folder)


def _slurm_sweep(project: Any, store: str) -> Any:
    """A two-job sweep on Submitit's SLURM launcher, tracked to ``store``."""
    return project.run(
        "-m",
        "depth=5,10",
        "hydra/launcher=submitit_slurm",
        "tracking=mlflow",
        f"tracking.uri={store}",
        f"hydra.sweep.dir={project.root / 'sweep'}",
    )


@pytest.mark.slow
def test_a_slurm_sweep_where_there_is_no_slurm_logs_nothing(
    project: Any, store: str, client: Callable[..., Any]
) -> None:
    """Refused before the sweep starts: no parent run, no sweep folder, one paragraph."""
    project.env["PATH"] = _slurm_bin(project.root, None)  # no srun, no sbatch
    res = _slurm_sweep(project, store)
    assert res.returncode == 2
    assert res.stderr.startswith("error: config key hydra/launcher: the launcher submitit_slurm")
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 2
    c = client(store)
    assert [e.name for e in c.search_experiments()] == ["Default"]  # nothing was logged
    assert not (project.root / "sweep").exists()


@pytest.mark.slow
def test_a_sweep_its_launcher_could_not_start_is_a_failed_parent_that_says_why(
    project: Any, store: str, client: Callable[..., Any]
) -> None:
    """Submitit's SLURM launcher, and a cluster that refuses every job: the parent, opened
    before the launcher failed, is closed FAILED with the error the user was shown."""
    refusal = "sbatch: error: Batch job submission failed: Invalid account"
    fake = _slurm_bin(project.root, f"echo '{refusal}' >&2; exit 1")
    project.env["PATH"] = f"{fake}{os.pathsep}{os.environ['PATH']}"
    res = _slurm_sweep(project, store)
    assert res.returncode == 2
    assert "Traceback" not in res.stderr
    said = res.stderr[res.stderr.index("\nerror: ") + 1 :].strip()  # after sbatch's own line
    assert said.startswith(
        "error: config key hydra/launcher: the launcher submitit_slurm could not start the "
        f"sweep's jobs, so none ran: FailedJobError: {refusal}"
    )
    c = client(store)
    (parent,) = c.search_runs([c.get_experiment_by_name("default").experiment_id])
    assert parent.data.tags["evalframe.sweep"] == "true"
    assert parent.info.status == "FAILED"
    assert parent.data.tags["evalframe.error"] == said
    assert parent.data.metrics["sweep.jobs"] == 0
    assert parent.data.tags["mlflow.note.content"].startswith("**The sweep was stopped:**")
    assert refusal in parent.data.tags["mlflow.note.content"]
