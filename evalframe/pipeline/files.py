"""The numbers a run folder holds, as the files DVC and trackers read them.

``metrics.json`` is the full table (every metric overall and per slice value,
with intervals), ``headline.json`` the headline set (``metrics.headline``),
``timings.json`` what the machine measured (and, added by the pipeline, when
and from which commit the run was made). Everything but the timings is a
function of the inputs, so re-running the same inputs rewrites the same
bytes; :mod:`evalframe.pipeline.run` writes them through the run folder.
"""

from __future__ import annotations

import math
from typing import Any

from evalframe.assess.results import Evaluation, GateResult
from evalframe.pipeline.config import Experiment

__all__ = ["flat_metrics", "headline_metrics", "timings"]


def flat_metrics(evaluation: Evaluation, gates: list[GateResult]) -> dict[str, float | int]:
    """Every aggregate as a flat numeric key (``metrics.json``), for ``dvc metrics`` and trackers.

    Overall: mean, std, n and the CI bounds of each metric; per slice value:
    mean, n and the CI bounds. Nothing measured about the machine (latency)
    goes here, so the same inputs give the same file (``timings.json`` has it).
    """
    flat: dict[str, float | int] = {"queries": len(evaluation.golden)}
    for m, agg in evaluation.overall.items():
        flat[str(m)] = agg.mean
        flat[f"{m}.std"] = agg.std
        flat[f"{m}.n"] = agg.n
        flat[f"{m}.ci_low"] = agg.ci_low
        flat[f"{m}.ci_high"] = agg.ci_high
    for fname, groups in evaluation.by_slice.items():
        for value, aggs in groups.items():
            for m, agg in aggs.items():
                flat[f"slice.{fname}.{value}.{m}"] = agg.mean
                flat[f"slice.{fname}.{value}.{m}.n"] = agg.n
                flat[f"slice.{fname}.{value}.{m}.ci_low"] = agg.ci_low
                flat[f"slice.{fname}.{value}.{m}.ci_high"] = agg.ci_high
    for key, found in evaluation.analysis.items():  # calibration.ece, failures.<category>, ...
        flat[key] = found.mean
        flat[f"{key}.n"] = found.n
        if not math.isnan(found.ci_low):
            flat[f"{key}.ci_low"] = found.ci_low
            flat[f"{key}.ci_high"] = found.ci_high
    flat.update(_gate_counts(gates))
    return flat


def _gate_counts(gates: list[GateResult]) -> dict[str, int]:
    """The gates that passed, the required ones that failed (the run's verdict: a run
    that passed counts none, so ``gates.failed > 0`` is an alert), and the advisory
    ones that missed (shown, never failing the run)."""
    return {
        "gates.passed": sum(1 for g in gates if g.passed),
        "gates.failed": sum(1 for g in gates if g.required and not g.passed),
        "gates.advisory_missed": sum(1 for g in gates if not g.required and not g.passed),
    }


def headline_metrics(
    exp: Experiment, evaluation: Evaluation, gates: list[GateResult]
) -> dict[str, float | int]:
    """The headline set (``headline.json``): each metric's mean and CI bounds, the counts.

    This is what ``dvc exp show`` and the trackers show by default; the full
    table stays in ``metrics.json``.
    """
    flat: dict[str, float | int] = {"queries": len(evaluation.golden)}
    for m in exp.headline:
        agg = evaluation.overall[m]
        flat[str(m)] = agg.mean
        flat[f"{m}.ci_low"] = agg.ci_low
        flat[f"{m}.ci_high"] = agg.ci_high
    flat.update(_gate_counts(gates))
    return flat


def timings(evaluation: Evaluation) -> dict[str, Any]:
    """What this machine measured (``timings.json``): latency and the retrieval cache's hits.

    Kept out of every other file so that re-running the same inputs rewrites
    them byte for byte (DVC tracks them; it does not track this one).
    """
    run = evaluation.run
    return {
        "latency": evaluation.latency,
        "retrieval_seconds": run.metadata.get("retrieval_seconds"),
        "retrieval_cache": run.metadata.get("cache"),
        "per_query_ms": {
            qid: ranking.latency_ms
            for qid, ranking in run.rankings.items()
            if ranking.latency_ms is not None
        },
    }
