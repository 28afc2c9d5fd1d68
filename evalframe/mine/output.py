"""What a mining run leaves: ADK's ``retrieval_dataset.yaml`` and the evidence behind it.

``retrieval_dataset.yaml`` keeps ADK's schema (pairs → candidates with
``empirical_relevance`` YES/NO and ``delta_p``; metadata with ``trials`` and
``base_success_rate``) so ADK's tools and evalframe's ``adk`` loader read it as
they are. Each candidate also carries the evidence, in fields ADK's readers
ignore: ``verdict`` (relevant, not_relevant, inconclusive), ``p_value``
(corrected), ``p_value_raw``, ``ci``, the four counts and ``seeded``. An
*inconclusive* candidate is written ``NO`` for compatibility; its ``verdict``
says that the data could not tell (the ``adk`` loader can leave it unjudged).
A top-level ``mining`` block records the settings, so the file can be re-judged
later (:mod:`evalframe.mine.rejudge`).

Beside it: ``trials.jsonl`` (every trial's context, answer and verdict),
``mining.json`` (budget, counts, per-pair summary) and ``config.yaml``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from evalframe.core.io import atomic_write, atomic_write_json, atomic_write_jsonl
from evalframe.core.secrets import redact
from evalframe.mine.config import MineConfig
from evalframe.mine.engine import MineResult, PairResult
from evalframe.mine.stats import DocStats

__all__ = ["DATASET", "dataset_payload", "dump_yaml", "render_report", "write_outputs"]

DATASET = "retrieval_dataset.yaml"
TRIALS = "trials.jsonl"
SUMMARY = "mining.json"
CONFIG = "config.yaml"

LABEL = {"relevant": "YES", "not_relevant": "NO", "inconclusive": "NO"}


def _num(value: float, digits: int = 6) -> float | None:
    """Rounded for reading; NaN (no trial on one side) is written as null."""
    if value is None or math.isnan(value):
        return None
    return round(float(value), digits)


def _p(value: float) -> float:
    return float(f"{value:.6g}")


def candidate_fields(stats: DocStats) -> dict[str, Any]:
    """The evidence fields of one candidate (everything but fqn and text)."""
    return {
        "empirical_relevance": LABEL[stats.verdict],
        "delta_p": _num(stats.delta_p),
        "verdict": stats.verdict,
        "p_value": _p(stats.p_adjusted),
        "p_value_raw": _p(stats.p_value),
        "ci": [_num(stats.ci[0]), _num(stats.ci[1])],
        "trials_in": stats.n_in,
        "passes_in": stats.s_in,
        "trials_out": stats.n_out,
        "passes_out": stats.s_out,
    }


def settings(config: MineConfig) -> dict[str, Any]:
    s = config.statistics
    return {
        "test": "fisher_exact_one_sided",
        "interval": "newcombe_hybrid_score",
        "threshold": s.threshold,
        "confidence": s.confidence,
        "correction": s.correction,
        "p_include": config.trials.p_include,
        "seed": config.seed,
        "solver": config.solver.spec.name,
        "validator": config.validator.spec.name,
    }


def _pair(pair: PairResult, texts: dict[str, str], trials: int) -> dict[str, Any]:
    seeded = pair.seeded
    candidates = []
    for doc in pair.pool:
        candidates.append(
            {
                "fqn": doc,
                "text": texts[doc],
                **candidate_fields(pair.stats[doc]),
                "seeded": doc in seeded,
            }
        )
    return {
        "id": pair.loaded.task.id,
        "query": pair.loaded.task.query,
        "candidates": candidates,
        "metadata": {
            "trials": trials,
            "base_success_rate": _num(pair.base_success_rate()),
            "success_rate": _num(pair.success_rate),
            "benchmark": pair.loaded.benchmark,
        },
    }


def dataset_payload(result: MineResult, config: MineConfig) -> dict[str, Any]:
    texts = {d.id: d.text for d in result.corpus.documents}
    return {
        "pairs": [_pair(p, texts, result.trials) for p in result.pairs],
        "mining": {**settings(config), "budget": result.budget.as_dict()},
    }


def dump_yaml(payload: Any) -> str:
    """Block-style YAML in the given key order; YES/NO come out quoted (PyYAML quotes them)."""
    import yaml

    return str(yaml.safe_dump(payload, sort_keys=False, allow_unicode=True, width=100))


def trial_records(result: MineResult) -> list[dict[str, Any]]:
    out = []
    for pair in result.pairs:
        for trial, outcome in zip(pair.trials, pair.outcomes, strict=True):
            if outcome is None:
                continue
            out.append(
                {
                    "pair": pair.loaded.task.id,
                    "trial": trial.index,
                    "seed": trial.seed,
                    "context": list(trial.included),
                    "passed": outcome.passed,
                    "answer": outcome.answer,
                    "detail": outcome.detail,
                }
            )
    return out


def summary(result: MineResult, config: MineConfig) -> dict[str, Any]:
    pairs = []
    for pair in result.pairs:
        by: dict[str, list[str]] = {"relevant": [], "not_relevant": [], "inconclusive": []}
        for doc in pair.pool:
            by[pair.stats[doc].verdict].append(doc)
        pairs.append(
            {
                "id": pair.loaded.task.id,
                "seeds": list(pair.loaded.seeds),
                **by,
                "success_rate": _num(pair.success_rate),
                "base_success_rate": _num(pair.base_success_rate()),
            }
        )
    return {
        "experiment": config.name,
        "trials": result.trials,
        "tasks": len(result.pairs),
        "calls": result.calls,
        "budget": result.budget.as_dict(),
        "settings": settings(config),
        "pairs": pairs,
    }


def write_outputs(result: MineResult, config: MineConfig) -> dict[str, Path]:
    """Write every output atomically; returns name -> path."""
    out = config.output_dir
    paths = {
        "dataset": atomic_write(out / DATASET, dump_yaml(dataset_payload(result, config))),
        "trials": atomic_write_jsonl(out / TRIALS, trial_records(result)),
        "summary": atomic_write_json(out / SUMMARY, summary(result, config)),
        "config": atomic_write(out / CONFIG, dump_yaml(redact(dict(config.raw)))),
    }
    return paths


def _fmt_p(p: float) -> str:
    return "<1e-6" if p < 1e-6 else f"{p:.2g}"


def render_report(result: MineResult, config: MineConfig, dataset: Path | None = None) -> str:
    """The terminal report: one table per pair, then totals."""
    stats = config.statistics
    level = f"{stats.confidence:.0%}"
    corr = "" if stats.correction == "none" else f"({stats.correction})"
    lines = []
    totals = {"relevant": 0, "not_relevant": 0, "inconclusive": 0}
    seeded_relevant = 0
    for pair in result.pairs:
        lines.append(
            f"{pair.loaded.task.id}  success {pair.success_rate:.2f}, "
            f"without relevant docs {pair.base_success_rate():.2f}"
        )
        width = max(12, *(len(d) for d in pair.pool))
        lines.append(
            f"  {'candidate':<{width}}  seed  with   w/o     Δp    {level} CI        "
            f"p{corr:<6} verdict"
        )
        order = sorted(pair.pool, key=lambda d: -(pair.stats[d].delta_p or 0.0))
        for doc in order:
            s = pair.stats[doc]
            totals[s.verdict] += 1
            seeded_relevant += s.verdict == "relevant" and doc in pair.seeded
            mark = {"relevant": "✓ relevant", "not_relevant": "✗ not relevant"}.get(
                s.verdict, "? inconclusive"
            )
            lines.append(
                f"  {doc:<{width}}  {'yes' if doc in pair.seeded else '':<4}  "
                f"{s.rate_in:4.2f}  {s.rate_out:4.2f}  {s.delta_p:+6.2f}  "
                f"[{s.ci[0]:+.2f}, {s.ci[1]:+.2f}]  {_fmt_p(s.p_adjusted):<8} {mark}"
            )
        lines.append("")
    calls = result.calls
    lines.append(
        f"{len(result.pairs)} tasks × {result.trials} trials: {totals['relevant']} relevant "
        f"({seeded_relevant} seeded), {totals['not_relevant']} not relevant, "
        f"{totals['inconclusive']} inconclusive"
    )
    lines.append(
        f"solver: {calls.get('solver_calls', 0)} calls, {calls.get('solver_cached', 0)} "
        f"from cache; validator: {calls.get('validator_calls', 0)} calls, "
        f"{calls.get('validator_cached', 0)} from cache"
    )
    lines.extend(result.budget.lines())
    if dataset is not None:
        lines.append(f"dataset: {dataset}")
    return "\n".join(lines)
