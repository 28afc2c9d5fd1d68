"""The numbers behind every plot of the report, computed apart from any drawing.

Each function takes what a run folder holds (per-query records as written to
``per_query.jsonl``, ``summary.json``) and returns plain numbers, so the
tests can check them against values worked out by hand, and the plots
(:mod:`evalframe.report.plots`) only draw.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evalframe.assess.runfolder import NEGATIVE, PASS, UNSCORED
from evalframe.core.types import RunRows
from evalframe.metrics import Policies, evaluate, parse_metric

__all__ = [
    "Bar",
    "Curves",
    "LatencyData",
    "Reliability",
    "ReliabilityBin",
    "ScoreHistogram",
    "calibration_reliability",
    "curve_families",
    "headline_metrics",
    "judgments_and_run",
    "k_grid",
    "latency_data",
    "mean_or_nan",
    "metric_curves",
    "passed_over",
    "reliability",
    "same_as",
    "score_histogram",
    "slice_bars",
]

#: The metric families of the metric@k plot: label -> canonical metric name.
CURVE_FAMILIES = {"Recall": "R", "Precision": "P", "nDCG": "nDCG"}


def mean_or_nan(values: np.ndarray) -> float:
    """The mean of the values a policy kept (NaN means "left out"); NaN when none is kept."""
    kept = values[~np.isnan(values)]
    return float(kept.mean()) if kept.size else math.nan


def number(value: Any) -> float:
    """A JSON number as a float; ``null`` (NaN written by evalframe) and non-numbers as NaN."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return math.nan
    return float(value)


def headline_metrics(
    names: Sequence[str],
    criterion: str | None,
    limit: int = 3,
    records: Sequence[Mapping[str, Any]] | None = None,
) -> list[str]:
    """The metrics a plot shows when there is room for only a few: the first ``limit``
    of the run's measures, with the status criterion taking the last place if it
    is not among them (the page's ✓/⚠/✗ are read from it).

    With the per-query ``records`` (at least :data:`SAME_ON_AT_LEAST`), a measure
    that equals an earlier one on every query is passed over (:func:`same_as`,
    :func:`passed_over`): Galaxy's Hit@1, RR@1 and nDCG@1 are one number on binary
    labels, and three equal bars would say nothing twice. The criterion never is.
    """
    return _choose(names, criterion, limit, records)[0]


def passed_over(
    names: Sequence[str],
    criterion: str | None,
    records: Sequence[Mapping[str, Any]],
    limit: int = 3,
) -> dict[str, str]:
    """{measure: the earlier one it equals}, for each measure :func:`headline_metrics`
    passed over on its way to its choice (not those beyond the last one it took)."""
    return _choose(names, criterion, limit, records)[1]


def _choose(
    names: Sequence[str],
    criterion: str | None,
    limit: int,
    records: Sequence[Mapping[str, Any]] | None,
) -> tuple[list[str], dict[str, str]]:
    pool = list(names)
    equal: dict[str, str] = {}
    if records is not None and len(records) >= SAME_ON_AT_LEAST:
        # the criterion stays itself: the status column names it
        equal = {m: e for m, e in same_as(records, pool).items() if m != criterion}
        pool = [n for n in pool if n not in equal]
    chosen = pool[:limit]
    if criterion and criterion in pool and criterion not in chosen:
        chosen = [*chosen[: limit - 1], criterion]
    # how far down the list the choice went, the criterion's own place aside
    taken = [names.index(c) for c in chosen if c != criterion or c in pool[:limit]]
    reach = max(taken, default=-1)
    return chosen, {m: equal[m] for m in names[: reach + 1] if m in equal}


#: Fewer queries than this, and two measures may agree on every one by chance: none is
#: passed over for being equal to another (Galaxy has 66, the quickstart 26).
SAME_ON_AT_LEAST = 20


def same_as(records: Sequence[Mapping[str, Any]], names: Sequence[str]) -> dict[str, str]:
    """{measure: the earlier measure it equals on every query's record}, for the measures
    of ``names`` (the records' ``metrics``; a value absent or null compares as such)."""
    seen: dict[tuple[Any, ...], str] = {}
    out: dict[str, str] = {}
    if not records:
        return out
    for name in names:
        column = tuple(_same_key((r.get("metrics") or {}).get(name)) for r in records)
        if column in seen:
            if seen[column] != name:
                out[name] = seen[column]
        else:
            seen[column] = name
    return out


def _same_key(value: Any) -> Any:
    """A value as compared by :func:`same_as`: NaN equals NaN, 1 equals 1.0."""
    if value is None:
        return None
    number_ = number(value)
    return "nan" if math.isnan(number_) else number_


#: How far a curve reaches past the longest ranking when ``depth`` is deeper still.
CURVE_REACH = 1000


def k_grid(depth: int) -> list[int]:
    """The cutoffs of the metric@k plot: every k up to 20, every 5th to 50, every 10th
    beyond, and the run's depth, so a deep run stays cheap to score and to draw."""
    ks = list(range(1, min(depth, 20) + 1))
    ks += list(range(25, min(depth, 50) + 1, 5))
    ks += list(range(60, depth + 1, 10))
    if depth not in ks:
        ks.append(depth)
    return ks


def judgments_and_run(
    records: Sequence[Mapping[str, Any]],
) -> tuple[dict[str, dict[str, int]], RunRows]:
    """The judgments and rankings of per-query records, for the metric engine.

    ``retrieved`` is in the order the run was scored in; scoring it again under
    the run's policies gives the same order, so the curves agree with the
    run's own metrics (R@5 on the curve is ``metrics.json``'s R@5). The
    judgments are a plain mapping and the rankings flat rows (:class:`RunRows`,
    as the engine reads a run file), built straight from the records' lists:
    10k rankings as models, only to be flattened again, cost 0.3 s. A query
    listed twice keeps its first place and its last ranking, as a dict would.
    """
    qrels: dict[str, dict[str, int]] = {}
    kept: dict[str, tuple[Sequence[Any], Sequence[Any]]] = {}
    for record in records:
        qid = str(record["query_id"])
        qrels[qid] = {str(d): int(v) for d, v in (record.get("judgments") or {}).items()}
        if record.get("missing"):
            continue
        docs = record.get("retrieved") or ()
        scores = record.get("scores") or ()
        if len(docs) != len(scores):
            raise ValueError(f"query {qid!r}: {len(docs)} retrieved ids but {len(scores)} scores")
        kept[qid] = (docs, scores)
    counts = np.fromiter((len(d) for d, _ in kept.values()), dtype=np.int64, count=len(kept))
    total = int(counts.sum())
    rows = RunRows(
        query_ids=tuple(kept),
        counts=counts,
        doc_ids=np.asarray(
            list(map(str, itertools.chain.from_iterable(d for d, _ in kept.values()))),
            dtype=str,
        ),
        scores=_finite_scores(kept, total),
    )
    return qrels, rows


def _finite_scores(kept: Mapping[str, tuple[Sequence[Any], Sequence[Any]]], total: int) -> Any:
    """Every ranking's scores as one float column. A ranking with a score that is not a
    finite number (null: an inf or NaN, which JSON cannot hold) gets n, n-1, ..., 1:
    the records list it in the order the run scored it, and those keep that order."""
    try:
        flat = np.fromiter(
            map(float, itertools.chain.from_iterable(s for _, s in kept.values())),
            dtype=np.float64,
            count=total,
        )
        if np.isfinite(flat).all():
            return flat
    except (TypeError, ValueError):
        pass
    out: list[float] = []
    for _, scores in kept.values():
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in scores) and all(
            math.isfinite(v) for v in scores
        ):
            out.extend(map(float, scores))
        else:
            out.extend(float(len(scores) - i) for i in range(len(scores)))
    return np.asarray(out, dtype=np.float64)


@dataclass(frozen=True)
class Curves:
    """Mean metric@k per family (``Recall``, ``Precision``, ``nDCG``) at each k."""

    ks: list[int]
    values: dict[str, list[float]]


def curve_families(names: Sequence[str], limit: int = 3) -> dict[str, str]:
    """The curves a run's page draws, as {label: measure}: the measures the run itself
    reports that a rank cutoff applies to, in the order given (headline first), up to
    ``limit``. Galaxy reports Hit, RR and nDCG, so its page draws those; B.O.B's R@5,
    P@5 and RR give recall, precision and RR. Plain measures only: a parameterised one
    (``P(rel=2)@5``) keeps its place in the tables, and a run with no plain measure
    gets recall, precision and nDCG."""
    found: list[str] = []
    for text in names:
        try:
            metric = parse_metric(str(text))
            ranked = metric.definition.cutoff == "rank"
        except Exception:  # noqa: BLE001  # a name this evalframe does not know: not drawn
            continue
        if metric.params or not ranked or metric.name in found:
            continue
        if metric.k is None and metric.name not in _CUT_AT_K:
            continue
        found.append(metric.name)
    if not found:
        return dict(CURVE_FAMILIES)
    titles = {name: label for label, name in CURVE_FAMILIES.items()}
    return {titles.get(name, name): name for name in found[:limit]}


#: Measures a run may report without a cutoff whose value at k is still what a reader
#: expects of the name (``RR@10``: the reciprocal rank within the top 10).
_CUT_AT_K = frozenset({"RR", "AP", "nDCG", "R", "P", "Hit"})


def metric_curves(
    records: Sequence[Mapping[str, Any]],
    policies: Policies,
    depth: int,
    families: Mapping[str, str] = CURVE_FAMILIES,
) -> Curves:
    """Each family's metric (recall, precision and nDCG unless told; see
    :func:`curve_families`) at every k of :func:`k_grid`, by the metric engine under
    the run's own policies (ties, negatives, missing queries). The curve reaches
    ``depth``, unless that is past both the longest ranking retrieved and
    :data:`CURVE_REACH`: past the longest ranking nothing changes, and
    ``depth=1000000`` over a 70-document corpus would be 100,000 cutoffs."""
    qrels, rows = judgments_and_run(records)
    longest = int(rows.counts.max()) if len(rows.counts) else 0
    ks = k_grid(min(depth, max(longest, CURVE_REACH)))
    metrics = [parse_metric(f"{name}@{k}") for name in families.values() for k in ks]
    scores = evaluate(metrics, qrels, rows, policies)
    values = {
        label: [mean_or_nan(scores.values[parse_metric(f"{name}@{k}")]) for k in ks]
        for label, name in families.items()
    }
    return Curves(ks=ks, values=values)


@dataclass(frozen=True)
class Bar:
    """One bar of a per-slice chart: a mean with its confidence interval."""

    label: str
    mean: float
    low: float
    high: float
    n: int


def slice_bars(summary: Mapping[str, Any], metric: str) -> dict[str, list[Bar]]:
    """Per slice field, one bar per value: the metric's mean and bootstrap CI from
    ``summary.json`` (the same numbers as the terminal report's slice tables)."""
    out: dict[str, list[Bar]] = {}
    for field, groups in (summary.get("by_slice") or {}).items():
        bars = []
        for value, aggs in groups.items():
            agg = (aggs or {}).get(metric)
            if not isinstance(agg, dict):
                continue
            bars.append(
                Bar(
                    label=str(value),
                    mean=number(agg.get("mean")),
                    low=number(agg.get("ci_low")),
                    high=number(agg.get("ci_high")),
                    n=int(agg.get("n") or 0),
                )
            )
        if bars:
            out[str(field)] = bars
    return out


@dataclass(frozen=True)
class ScoreHistogram:
    """Retrieval scores of relevant and of other retrieved documents, on shared bins."""

    edges: list[float]
    relevant: list[int]
    other: list[int]


def _rank_only(scores: np.ndarray) -> bool:
    """Whether a ranking's scores only restate its order: whole numbers, each lower than
    the one before. That is the synthetic n, n-1, ..., 1 a file without scores gets
    (Galaxy's predictions), with gaps where a repeated id was removed, or a run file's
    ``1000 - rank``: a histogram of them would show the ranks, not a model."""
    if not scores.size:
        return True
    whole = bool(np.all(np.isfinite(scores)) and np.all(scores == np.floor(scores)))
    return whole and bool(np.all(scores[1:] < scores[:-1]))  # no subtraction: ±1e308


def score_histogram(records: Sequence[Mapping[str, Any]], bins: int = 20) -> ScoreHistogram | None:
    """Every retrieved document's score, split by whether it is judged relevant (label
    above 0); None when nothing was retrieved. ``bins`` equal-width bins span the
    lowest to the highest score (numpy's histogram: the last bin includes its right edge)."""
    values: list[np.ndarray] = []
    judged_at: list[np.ndarray] = []
    for record in records:
        labels = record.get("judgments") or {}
        judged = {doc for doc, label in labels.items() if number(label) > 0}
        retrieved = record.get("retrieved") or ()
        raw = record.get("scores") or ()
        n = min(len(retrieved), len(raw))  # as zip() pairs them
        kept = raw[:n]
        if set(map(type, kept)) <= {float}:  # as evalframe writes them: converted in C
            scores = np.fromiter(kept, dtype=np.float64, count=n)
        else:  # a null (NaN written), an int, a string: number() each
            scores = np.asarray([number(v) for v in kept], dtype=np.float64)
        values.append(scores)
        mask = np.zeros(n, dtype=bool)
        ids = retrieved[:n]
        for doc in judged:  # a few judged documents: found by a C-level scan each
            if ids.count(doc) == 1:
                mask[ids.index(doc)] = True
            elif doc in ids:  # listed twice: every place counts
                mask[[i for i, d in enumerate(ids) if d == doc]] = True
        judged_at.append(mask)
    if not values or all(_rank_only(v) for v in values):
        return None  # no scores, or scores that only restate the rank (n, n-1, ..., 1)
    flat, is_relevant = np.concatenate(values), np.concatenate(judged_at)
    drawn = np.isfinite(flat)  # NaN (or null) and ±inf are not drawn
    relevant, other = flat[drawn & is_relevant], flat[drawn & ~is_relevant]
    if not relevant.size and not other.size:
        return None
    low, high = float(flat[drawn].min()), float(flat[drawn].max())
    if low == high:
        low, high, bins = low - 0.5, high + 0.5, 1
    if not math.isfinite(high - low):  # ±1e308: no bins of a finite width span them
        return None
    edges = np.linspace(low, high, bins + 1)
    return ScoreHistogram(
        edges=[float(e) for e in edges],
        relevant=[int(c) for c in np.histogram(relevant, bins=edges)[0]],
        other=[int(c) for c in np.histogram(other, bins=edges)[0]],
    )


@dataclass(frozen=True)
class LatencyData:
    """Per-query latencies (ms) and their p50 and p95."""

    values: list[float]
    p50: float
    p95: float


def latency_data(records: Sequence[Mapping[str, Any]]) -> LatencyData | None:
    """Latencies of the queries that have one; percentiles interpolate linearly
    between order statistics, as ``summary.json``'s latency does (numpy's default)."""
    values = [number(r.get("latency_ms")) for r in records]
    values = [v for v in values if not math.isnan(v)]
    if not values:
        return None
    arr = np.asarray(values)
    return LatencyData(
        values=values,
        p50=float(np.percentile(arr, 50)),
        p95=float(np.percentile(arr, 95)),
    )


@dataclass(frozen=True)
class ReliabilityBin:
    """Queries whose stated confidence fell in ``[low, high)``: mean confidence, share ✓."""

    low: float
    high: float
    confidence: float
    accuracy: float
    n: int
    ci_low: float = math.nan  # the calibration analysis's interval of the observed rate
    ci_high: float = math.nan


@dataclass(frozen=True)
class Reliability:
    """A reliability diagram's bins and the expected calibration error."""

    bins: list[ReliabilityBin]
    ece: float
    n: int
    verdict: str = ""  # the calibration analysis's verdict, when it ran


def calibration_reliability(calibration: Mapping[str, Any] | None) -> Reliability | None:
    """The reliability bins of ``calibration.json`` (the calibration analysis, with its
    own outcome, binning and simultaneous Wilson intervals), None when it did not run."""
    if not calibration or not calibration.get("bins"):
        return None
    bins = [
        ReliabilityBin(
            low=number(b.get("low")),
            high=number(b.get("high")),
            confidence=number(b.get("mean_confidence")),
            accuracy=number(b.get("observed_rate")),
            n=int(b.get("count") or 0),
            ci_low=number(b.get("ci_low")),
            ci_high=number(b.get("ci_high")),
        )
        for b in calibration["bins"]
        if int(b.get("count") or 0) > 0
    ]
    if not bins:
        return None
    return Reliability(
        bins=bins,
        ece=number(calibration.get("ece")),
        n=int(calibration.get("n") or sum(b.n for b in bins)),
        verdict=str(calibration.get("verdict") or ""),
    )


def reliability(records: Sequence[Mapping[str, Any]], bins: int = 10) -> Reliability | None:
    """Calibration of the confidence a system reported with each answer.

    A query counts as answered correctly when its status is ✓ (the report
    criterion at or above ``pass_at``); negative examples are left out. Bins
    are ``bins`` equal widths of [0, 1] (1.0 falls in the last). ECE is the
    bins' gap |accuracy - confidence| weighted by their share of queries.
    None when no query carries a confidence, or one lies outside [0, 1]
    (then it is a score, not a probability, and a diagram would mislead).
    """
    pairs = [
        (number(r.get("confidence")), r.get("status") == PASS)
        for r in records
        if r.get("confidence") is not None and r.get("status") not in (NEGATIVE, UNSCORED)
    ]
    pairs = [(c, ok) for c, ok in pairs if not math.isnan(c)]
    if not pairs or any(not 0.0 <= c <= 1.0 for c, _ in pairs):
        return None
    grouped: dict[int, list[tuple[float, bool]]] = {}
    for c, ok in pairs:
        grouped.setdefault(min(int(c * bins), bins - 1), []).append((c, ok))
    out = []
    ece = 0.0
    for i in sorted(grouped):
        members = grouped[i]
        conf = sum(c for c, _ in members) / len(members)
        acc = sum(1 for _, ok in members if ok) / len(members)
        ece += len(members) / len(pairs) * abs(acc - conf)
        out.append(ReliabilityBin(i / bins, (i + 1) / bins, conf, acc, len(members)))
    return Reliability(bins=out, ece=ece, n=len(pairs))
