"""A sweep under submitit_local (and Ray, when installed) is tracked exactly as under basic.

Four jobs (two BM25 settings × two bootstrap seeds) run as four concurrent
processes under ``hydra/launcher=submitit_local`` (or as tasks of a local Ray
instance, ``hydra/launcher=ray``, when ``evalframe[ray]`` is installed: that
test is skipped otherwise), with an empty cache, so two
jobs at a time retrieve and store the same cache entries; then the same sweep
runs under the basic launcher, in one process. Both go to one real sqlite
MLflow store, each in its own MLflow experiment, and must come out the same:
one parent, four children linked to it, the same params, metrics and tags.
"""

from __future__ import annotations

import importlib.util
import json
import sqlite3
from collections.abc import Callable
from typing import Any

import pytest

from evalframe.core.store import DATABASE

pytestmark = [pytest.mark.filterwarnings("ignore::DeprecationWarning"), pytest.mark.slow]

#: tags that name a run, a folder, a time or a machine: they differ between any two sweeps
_PER_RUN = (
    "mlflow.",
    "evalframe.run_uid",
    "evalframe.parent_uid",
    "evalframe.sweep_dir",
    "evalframe.run_folder",
)
#: params that say where the two sweeps wrote, which is all that sets them apart
_WHERE = ("output.dir", "tracking.experiment_name")


def _shape(c: Any, experiment: str) -> dict[str, Any]:
    runs = c.search_runs([c.get_experiment_by_name(experiment).experiment_id])
    (parent,) = [r for r in runs if r.data.tags.get("evalframe.sweep") == "true"]
    children = sorted(
        (r for r in runs if r is not parent), key=lambda r: int(r.data.tags["evalframe.sweep_job"])
    )
    assert {r.data.tags.get("mlflow.parentRunId") for r in children} == {parent.info.run_id}

    def tags(run: Any) -> dict[str, str]:
        kept = {k: v for k, v in run.data.tags.items() if not k.startswith(_PER_RUN)}
        if "evalframe.sweep_overrides" in kept:
            words = kept["evalframe.sweep_overrides"].split()
            kept["evalframe.sweep_overrides"] = " ".join(
                w for w in words if not w.startswith(_WHERE)
            )
        return kept

    def metrics(run: Any) -> dict[str, float]:
        return {k: v for k, v in run.data.metrics.items() if "latency" not in k}

    def params(run: Any) -> dict[str, str]:
        return {k: v for k, v in run.data.params.items() if k not in _WHERE}

    return {
        "parent": (parent.info.status, tags(parent), metrics(parent)),
        "children": [(r.info.status, params(r), metrics(r), tags(r)) for r in children],
    }


_RAY = importlib.util.find_spec("hydra_plugins.hydra_ray_launcher") is not None
LAUNCHERS = {
    "submitit_local": ["hydra/launcher=submitit_local", "hydra.launcher.timeout_min=5"],
    # a local Ray instance, started by the launcher and stopped when the sweep's process ends
    "ray": ["hydra/launcher=ray", "+hydra.launcher.ray.init.num_cpus=2"],
}


@pytest.mark.parametrize(
    "launcher",
    [
        # a process per job, each importing evalframe and mlflow: half a minute of two
        # cores, so `make test-all` runs it; CI's subset sweeps under joblib's process
        # pool (test_sweep.py) and shares one cache across processes (test_http_faults.py)
        pytest.param("submitit_local", marks=pytest.mark.extended),
        pytest.param(
            "ray",
            marks=pytest.mark.skipif(not _RAY, reason="needs the ray extra: evalframe[ray]"),
        ),
    ],
)
def test_a_sweep_on_another_launcher_is_tracked_as_under_the_basic_launcher(
    project: Any, store: str, client: Callable[..., Any], launcher: str
) -> None:
    common = ["-m", "retriever.k1=0.5,1.2", "stats.seed=0,1", "tracking=mlflow",
              f"tracking.uri={store}"]  # fmt: skip
    project.env["RAY_USAGE_STATS_ENABLED"] = "0"
    res = project.run(
        *common,
        *LAUNCHERS[launcher],
        "tracking.experiment_name=sweeps",
        f"hydra.sweep.dir={project.root / 'other'}",
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    jobs = project.root / "other"
    assert sorted(p.name for p in jobs.iterdir() if p.name.isdigit()) == ["0", "1", "2", "3"]
    if launcher == "submitit_local":
        assert (jobs / ".submitit").is_dir()  # each job ran in a process of its own

    # the shared cache: one whole entry per query and setting, written by two jobs at once
    conn = sqlite3.connect(project.root / ".cache" / DATABASE)
    try:
        rows = conn.execute("SELECT value FROM entries WHERE namespace = 'runs'")
        values = [json.loads(v) for (v,) in rows]
    finally:
        conn.close()
    assert len(values) == 3 * 2
    assert all(v["query_id"] and v["doc_ids"] for v in values)  # whole rankings
    runs = [(jobs / str(i) / "run.trec").read_text() for i in range(4)]
    assert runs[0] == runs[1] and runs[2] == runs[3]  # same k1, same rankings

    res = project.run(
        *common,
        "tracking.experiment_name=sweeps_basic",
        f"hydra.sweep.dir={project.root / 'basic'}",
    )
    assert res.returncode == 0, res.stderr
    c = client(store)
    other, basic = _shape(c, "sweeps"), _shape(c, "sweeps_basic")
    assert len(other["children"]) == 4
    assert other["parent"] == basic["parent"]
    for a, b in zip(other["children"], basic["children"], strict=True):
        assert a == b
    basic_dir = project.root / "basic"
    assert (jobs / "jobs.csv").read_text().replace(str(jobs), "SWEEP") == (
        (basic_dir / "jobs.csv").read_text().replace(str(basic_dir), "SWEEP")
    )
