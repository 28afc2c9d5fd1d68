"""The analyses of one run, as the pipeline calls them: one function in, plain data out.

:func:`run_analyses` runs after scoring and before the gates, so that a gate
can read ``calibration.ece`` or ``calibration.answer_correctness@0.8``
(:meth:`evalframe.assess.results.GateView.analysis`). It returns an
:class:`AnalysisOutput`: the headline values (for gates and metrics.json,
hence trackers), the files to write into the run folder (calibration.json,
benefit.json) and the block for summary.json. It also adds a ``failure``
entry to every failed query's per-query record.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evalframe.analysis.benefit import compute_benefit
from evalframe.analysis.calibration import BootstrapSettings, CalibrationResult, calibrate
from evalframe.analysis.facts import BlindItem, judge_blind, warn_field_unused
from evalframe.analysis.failures import annotate_failures
from evalframe.analysis.settings import (
    Analyses,
    CalibrationSettings,
    FailureSettings,
    JudgeChoice,
)
from evalframe.assess.results import Aggregate, Evaluation
from evalframe.assess.runfolder import RunFolder
from evalframe.core.errors import DataError
from evalframe.core.messages import shown, warn
from evalframe.core.store import EntryStore
from evalframe.core.types import Corpus
from evalframe.metrics import evaluate, parse_metric

__all__ = ["AnalysisOutput", "calibration_outcomes", "clean_json", "run_analyses"]


@dataclass
class AnalysisOutput:
    """What the analyses of one run produced."""

    values: dict[str, Aggregate] = field(default_factory=dict)
    files: dict[str, dict[str, Any]] = field(default_factory=dict)  # run-folder name -> JSON
    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def calibration(self) -> dict[str, Any] | None:
        return self.files.get(RunFolder.CALIBRATION)

    @property
    def benefit(self) -> dict[str, Any] | None:
        return self.files.get(RunFolder.BENEFIT)

    @property
    def failures(self) -> dict[str, Any] | None:
        value = self.summary.get("failures")
        return value if isinstance(value, dict) else None


@dataclass
class Outcomes:
    """Per usable query: confidence and outcome; and every query left out, with why."""

    query_ids: list[str]
    confidences: list[float]
    outcomes: list[bool]
    details: dict[str, str]
    excluded: dict[str, list[str]]
    description: str


def calibration_outcomes(
    evaluation: Evaluation,
    settings: CalibrationSettings,
    judge: JudgeChoice | None,
    *,
    seed: int = 0,
) -> Outcomes:
    """The outcome of every query that has a confidence (and, for answers, facts and an answer).

    hit and recall are scored by the metric engine (``Hit@k``, ``R@k``) under
    the run's policies, so ties are ordered as the run's metrics order them.
    A negative example has no hit to score; a query without must-mention
    facts or without an answer has no answer to judge: each is left out and
    listed under ``excluded``, never dropped silently.
    """
    golden = evaluation.golden
    excluded: dict[str, list[str]] = {}
    usable: list[tuple[str, float]] = []
    for q in golden:
        ranking = evaluation.run.rankings.get(q.id)
        conf = ranking.confidence if ranking is not None else None
        if conf is None:
            excluded.setdefault("no_confidence", []).append(q.id)
            continue
        if not (0.0 <= conf <= 1.0):  # NaN fails too
            raise DataError(
                f"query {q.id!r}: the retriever's confidence {conf!r} is not in [0, 1]",
                key="analysis.calibration",
                hint="calibration compares a confidence with an observed rate; rescale the "
                "score to [0, 1] in the adapter",
            )
        usable.append((q.id, float(conf)))
    by_id = golden.by_id()
    results: dict[str, bool] = {}
    details: dict[str, str] = {}
    if settings.outcome in ("hit", "recall"):
        metric = parse_metric(f"{'Hit' if settings.outcome == 'hit' else 'R'}@{settings.k}")
        scores = evaluate([metric], golden, evaluation.run, evaluation.policies)
        index = {qid: i for i, qid in enumerate(scores.query_ids)}
        for qid, _ in usable:
            if by_id[qid].is_negative:
                excluded.setdefault("negative", []).append(qid)
                continue
            value = float(scores.values[metric][index[qid]])
            results[qid] = value >= 1.0 - 1e-12
        description = f"{metric} = 1"
    else:
        items = {}
        for qid, _ in usable:
            query = by_id[qid]
            must = query.metadata.get(settings.facts_field) or []
            forbidden = settings.forbidden_field
            must_not = (query.metadata.get(forbidden) or []) if forbidden else []
            answer = evaluation.run.rankings[qid].answer
            if not must:
                excluded.setdefault("no_facts", []).append(qid)
            elif answer is None:
                excluded.setdefault("no_answer", []).append(qid)
            else:
                items[qid] = BlindItem(
                    query.text, answer, tuple(map(str, must)), tuple(map(str, must_not))
                )
        assert judge is not None  # resolved by validate_analysis for outcome: answer
        warn_field_unused(golden, settings.forbidden_field, "analysis.calibration.forbidden_field")
        verdicts = judge_blind(judge.build(), items, seed=seed, who=f"judge {judge.spec.name!r}")
        for qid, verdict in verdicts.items():
            results[qid] = verdict.passed
            if verdict.detail:
                details[qid] = verdict.detail
        nothing = f" and no {settings.forbidden_field}" if settings.forbidden_field else ""
        description = (
            f"the answer holds every {settings.facts_field}{nothing} (judge {judge.spec.name})"
        )
    kept = [(qid, c) for qid, c in usable if qid in results]
    return Outcomes(
        query_ids=[qid for qid, _ in kept],
        confidences=[c for _, c in kept],
        outcomes=[results[qid] for qid, _ in kept],
        details=details,
        excluded=excluded,
        description=description,
    )


def _why_none(excluded: dict[str, list[str]], settings: Any) -> str:
    """The fix for the reason that left most queries out (the hint spoke of confidences
    when they were there and the facts field was misnamed)."""
    main = max(excluded, key=lambda k: len(excluded[k]), default="no_confidence")
    if main == "no_facts":
        return (
            f"no query has must-mention facts in analysis.calibration.facts_field "
            f"({getattr(settings, 'facts_field', '?')!r}): name the golden set's field that "
            "lists them, or score another outcome (analysis.calibration.outcome)"
        )
    if main == "no_answer":
        return "the outcome 'answer' needs the retriever to return its answer text (Ranking.answer)"
    return (
        "calibration needs a retriever or adapter that returns a per-query confidence "
        "(Ranking.confidence); see docs/analyses.md"
    )


def _calibration(
    analyses: Analyses, evaluation: Evaluation, boot: BootstrapSettings
) -> tuple[CalibrationResult, dict[str, Any]]:
    settings = analyses.settings.calibration
    assert settings is not None
    found = calibration_outcomes(evaluation, settings, analyses.calibration_judge, seed=boot.seed)
    if not found.query_ids:
        reasons = ", ".join(f"{len(v)} {k.replace('_', ' ')}" for k, v in found.excluded.items())
        raise DataError(
            f"calibration has no query to use ({reasons or 'no queries'})",
            key="analysis.calibration",
            expected="queries whose ranking carries a confidence"
            + (" and an answer, with must-mention facts" if settings.outcome == "answer" else ""),
            hint=_why_none(found.excluded, settings),
        )
    for why, ids in found.excluded.items():
        warn(
            f"calibration leaves out {len(ids)} quer{'y' if len(ids) == 1 else 'ies'} "
            f"({why.replace('_', ' ')}): {shown(ids)}"
        )
    result = calibrate(
        found.confidences,
        found.outcomes,
        bins=settings.bins,
        binning=settings.binning,
        thresholds=settings.thresholds,
        target_precision=settings.target_precision,
        min_queries=settings.min_queries,
        min_routed=settings.min_routed,
        boot=boot,
    )
    edges = np.asarray([result.bins[0].low, *(b.high for b in result.bins)])
    index = np.searchsorted(edges[1:-1], np.asarray(found.confidences), side="right")
    payload = {
        "outcome": settings.outcome,
        "outcome_description": found.description,
        **result.as_dict(),
        "excluded": found.excluded,
        "queries": [
            {
                "query_id": qid,
                "confidence": c,
                "outcome": y,
                "bin": int(b),
                **({"detail": found.details[qid]} if qid in found.details else {}),
            }
            for qid, c, y, b in zip(
                found.query_ids, found.confidences, found.outcomes, index, strict=True
            )
        ],
    }
    return result, payload


def clean_json(value: Any) -> Any:
    """NaN as None, so every JSON file is strict JSON."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: clean_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean_json(v) for v in value]
    return value


def _labels(evaluation: Evaluation, settings: FailureSettings) -> dict[str, Any] | None:
    """Query id -> its ``label_field`` value, for the failed queries' categories; a field
    no query holds is said (a misspelt field would otherwise change nothing, silently)."""
    name = settings.label_field
    if not name or not settings.enabled:
        return None
    found = {q.id: q.metadata[name] for q in evaluation.golden.queries if name in q.metadata}
    if not found:
        warn(
            f"analysis.failures.label_field: no query of the golden set has a metadata field "
            f"{name!r}, so every failed query is categorised by the heuristics alone"
        )
    return found


def run_analyses(
    analyses: Analyses,
    evaluation: Evaluation,
    records: list[dict[str, Any]],
    corpus: Corpus | None,
    boot: BootstrapSettings,
    store: EntryStore | None = None,
) -> AnalysisOutput:
    """Every configured analysis of one run (see the module docstring).

    ``store`` keeps what is derived from the corpus alone (its term document
    frequencies) for the next run on the same corpus.
    """
    out = AnalysisOutput()
    settings = analyses.settings
    failures = annotate_failures(
        records, corpus, settings.failures, store, _labels(evaluation, settings.failures)
    )
    out.summary["failures"] = failures
    if failures.get("available"):
        failed = failures["failed"]
        out.values["failures.failed"] = Aggregate(mean=failed, std=math.nan, n=len(records))
        for category, count in failures["counts"].items():
            out.values[f"failures.{category}"] = Aggregate(mean=count, std=math.nan, n=failed)
    if settings.calibration is not None:
        result, payload = _calibration(analyses, evaluation, boot)
        out.files[RunFolder.CALIBRATION] = clean_json(payload)
        out.values.update(result.values())
        out.summary["calibration"] = clean_json(
            {
                "n": result.n,
                "ece": result.ece,
                "mce": result.mce,
                "brier": result.brier,
                "verdict": result.verdict,
                "answer_correctness": {
                    f"{t.threshold:g}": {"value": t.value, "routed": t.routed}
                    for t in result.thresholds
                },
                "caveats": result.caveats,
            }
        )
    if settings.benefit is not None:
        benefit = compute_benefit(
            settings.benefit, golden=evaluation.golden, judge=analyses.benefit_judge, boot=boot
        )
        out.files[RunFolder.BENEFIT] = clean_json(benefit.as_dict())
        out.values.update(benefit.values())
        overall = benefit.overall()
        out.summary["benefit"] = clean_json(
            {
                "tasks": benefit.tasks,
                "pairs": benefit.pairs,
                "verdict": overall.verdict,
                "success_lift": overall.deltas["success_lift"].mean,
                "net_tokens_saved": overall.deltas["net_tokens_saved"].mean,
            }
        )
    evaluation.analysis = dict(out.values)
    return out
