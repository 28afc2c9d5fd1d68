"""cranfield_bm25_tune end to end: Optuna tunes k1 and b on the tuning half only, the chosen
pair is scored once on the held-out half, and the summary shows both with the gap.

Expected values are recomputed here from the definitions, not read from the
summary: the split from ``sha256("<seed>:<id>")`` over the 225 query ids, each
trial's objective as the mean of its per-query nDCG@10 values, the best trial
as the one with the highest, and the held-out figure as the mean over the
held-out run's per-query values. (The per-query values themselves are pinned to
pytrec_eval by test_cranfield_experiments.py.)

The sweep is tracked in a sqlite MLflow store of its own, read back with MLflow's
client: every run it makes is a child of its parent, named after what it ran.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from tests.experiments.cli import evalframe, read_json

pytest.importorskip("hydra_plugins.hydra_optuna_sweeper")

pytestmark = pytest.mark.slow


def _per_query(folder: Path) -> dict[str, float]:
    lines = (folder / "per_query.jsonl").read_text().splitlines()
    return {r["query_id"]: r["metrics"]["nDCG@10"] for r in map(json.loads, lines)}


def test_tuning_reports_the_tuning_and_held_out_split_side_by_side(
    tmp_path: Path, mlflow_store: Callable[[Path], str]
) -> None:
    sweep = tmp_path / "sweep"
    store = mlflow_store(tmp_path / "mlflow.db")
    res = evalframe(
        tmp_path,
        "-m",
        "+experiment=cranfield_bm25_tune",
        "hydra.sweeper.n_trials=2",  # two trials: a best one to choose, 5 runs not 7
        f"hydra.sweep.dir={sweep}",
        "tracking=mlflow",
        f"tracking.uri={store}",
        "report.html=false",  # the pages are tests/report's: a second of CPU a run
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    trials = sorted((p for p in sweep.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    assert len(trials) == 2

    # the split, by its definition: the first round(0.5 × 225) = 112 ids by sha256("0:<id>")
    ids = [str(i) for i in range(1, 226)]
    ranked = sorted(ids, key=lambda q: hashlib.sha256(f"0:{q}".encode()).hexdigest())
    tune, held = set(ranked[:112]), set(ranked[112:])
    objectives = {}
    for trial in trials:
        values = _per_query(trial)
        assert set(values) == tune  # a trial never sees a held-out query
        objectives[int(trial.name)] = sum(values.values()) / len(values)
    best = max(objectives, key=lambda j: (objectives[j], -j))
    held_values = _per_query(sweep / "heldout")
    assert set(held_values) == held
    held_mean = sum(held_values.values()) / len(held_values)

    # the held-out run is the best trial's exact config, on the other part
    chosen = OmegaConf.load(sweep / str(best) / "config.yaml").retriever
    assert OmegaConf.load(sweep / "heldout" / "config.yaml").retriever == chosen
    summary = read_json(sweep / "heldout" / "summary.json")
    split = summary["golden_set"]["provenance"]["split"]
    assert split["seed"] == 0 and split["part"] == "heldout"
    assert (split["tune_queries"], split["heldout_queries"]) == (112, 113)

    report = read_json(sweep / "tuning.json")
    assert report["best"]["job"] == best
    assert report["best"]["overrides"] == [f"retriever.k1={chosen.k1}", f"retriever.b={chosen.b}"]
    assert math.isclose(report["tuning"]["nDCG@10"]["mean"], objectives[best], abs_tol=1e-12)
    assert math.isclose(report["heldout"]["nDCG@10"]["mean"], held_mean, abs_tol=1e-12)
    assert math.isclose(report["gap"]["nDCG@10"], objectives[best] - held_mean, abs_tol=1e-12)

    # the untuned config (the experiment's k1 1.2, b 0.75) on both parts: the gap before tuning
    untuned = {p: _per_query(sweep / f"untuned_{p}") for p in ("tune", "heldout")}
    assert set(untuned["tune"]) == tune and set(untuned["heldout"]) == held
    assert OmegaConf.load(sweep / "untuned_tune" / "config.yaml").retriever.k1 == 1.2
    base = {p: sum(v.values()) / len(v) for p, v in untuned.items()}
    assert math.isclose(report["untuned"]["tune"]["nDCG@10"]["mean"], base["tune"], abs_tol=1e-12)

    out = res.stdout
    assert "tuning (n=112)" in out and "held-out (n=113)" in out
    line = next(x for x in out.splitlines() if x.strip().startswith("nDCG@10 *"))
    assert line.split()[2:] == [
        f"{objectives[best]:.4f}",
        f"{held_mean:.4f}",
        f"{objectives[best] - held_mean:+.4f}",
        f"{base['tune']:.4f}",
        f"{base['heldout']:.4f}",
        f"{base['tune'] - base['heldout']:+.4f}",
    ]
    gains = f"by {objectives[best] - base['tune']:+.4f} on the tuning queries and by " + (
        f"{held_mean - base['heldout']:+.4f} on the held-out ones"
    )
    assert gains in out
    assert (sweep / "tuning.md").read_text().count("| nDCG@10 * |") == 1
    # the footnote's star is escaped, or Markdown would draw it as a list item
    assert "\n  \\* the objective." in (sweep / "tuning.md").read_text()
    assert "\n  * the objective." in out

    _check_the_runs_in_mlflow(store, sweep, best)


def _check_the_runs_in_mlflow(store: str, sweep: Path, best: int) -> None:
    """One parent; every trial, the held-out run and both untuned runs its children, named
    after what they ran, with the tags a grid sweep's job has."""
    from mlflow import MlflowClient

    client = MlflowClient(store)
    experiment = client.get_experiment_by_name("cranfield_bm25_tune")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id])
    (parent,) = [r for r in runs if r.data.tags.get("evalframe.sweep") == "true"]
    assert parent.info.run_name == f"sweep cranfield_bm25_tune {sweep.name}"
    children = {r.data.tags.get("evalframe.sweep_job"): r for r in runs if r is not parent}
    assert sorted(children) == ["0", "1", "heldout", "untuned_heldout", "untuned_tune"]
    uid = parent.data.tags["evalframe.run_uid"]
    for run in children.values():
        assert run.data.tags["mlflow.parentRunId"] == parent.info.run_id
        assert run.data.tags["evalframe.parent_uid"] == uid
        assert run.data.tags["evalframe.choice.retriever"] == "bm25"

    def sampled(job: str) -> tuple[str, str]:  # the trial's values, as Optuna handed them
        config = OmegaConf.load(sweep / job / ".hydra" / "config.yaml").retriever
        return str(config.k1), str(config.b)

    shared = ["+experiment=cranfield_bm25_tune", "tracking=mlflow"]
    for job in ("0", "1"):
        k1, b = sampled(job)
        run = children[job]
        assert run.info.run_name == f"k1={k1},b={b}"
        overrides = run.data.tags["evalframe.sweep_overrides"].split()
        assert overrides[:2] == [f"retriever.k1={k1}", f"retriever.b={b}"]
        assert set(shared) <= set(overrides)
        assert run.data.params["retriever.k1"] == k1
    k1, b = sampled(str(best))
    held = children["heldout"]
    assert held.info.run_name == f"held-out: k1={k1},b={b}"
    overrides = held.data.tags["evalframe.sweep_overrides"].split()
    assert overrides[:2] == [f"retriever.k1={k1}", f"retriever.b={b}"]
    assert overrides[-1] == "tuning.part=heldout"  # how to get its config
    assert held.data.params["tuning.part"] == "heldout"
    # the untuned runs: cranfield_bm25's own k1 1.2 and b 0.75, one on each part
    for job, name, part in (
        ("untuned_tune", "untuned (tuning part): k1=1.2,b=0.75", "tune"),
        ("untuned_heldout", "untuned (held-out part): k1=1.2,b=0.75", "heldout"),
    ):
        run = children[job]
        assert run.info.run_name == name
        overrides = run.data.tags["evalframe.sweep_overrides"].split()
        assert overrides[:2] == ["retriever.k1=1.2", "retriever.b=0.75"]
        assert set(shared) <= set(overrides)
        assert overrides[-1] == f"tuning.part={part}"
        assert run.data.params["tuning.part"] == part
    # the parent sums up the trials only
    assert parent.data.metrics["sweep.jobs"] == 2
    # the held-out figure heads the parent's description, and the summary is attached
    assert {"tuning.md", "tuning.json"} <= {
        a.path for a in client.list_artifacts(parent.info.run_id)
    }
    summary = (sweep / "tuning.md").read_text().rstrip()
    assert parent.data.tags["mlflow.note.content"].startswith(summary)
