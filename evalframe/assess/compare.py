"""Paired comparison of two runs: which metrics moved, by how much, where, and is it noise?

Both sides are read the same way, from what a run writes (``per_query.jsonl``
and ``summary.json``), so comparing a fresh run with its baseline and
``evalframe compare A B`` on two old folders give the same numbers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from evalframe.assess.goldenchange import GoldenChange, golden_change, judged_alike
from evalframe.assess.runfolder import RunData, RunFolder
from evalframe.assess.stats import (
    PairedComparison,
    adjust_pvalues,
    compare_paired,
    randomization_ci,
)
from evalframe.core.errors import ConfigError
from evalframe.metrics import policy_differences, same_policies

__all__ = [
    "MARKS",
    "Comparison",
    "RunData",
    "compare_runs",
    "decided",
    "headline_of",
    "load_run_data",
    "paired_ids",
    "verdict_of",
]


def load_run_data(folder: Path, name: str | None = None) -> RunData:
    """Read a run or baseline folder written by evalframe, or a results JSON B.O.B saved."""
    from evalframe.assess.bob_results import is_bob_results, read_bob_results

    if is_bob_results(folder):
        return read_bob_results(folder, name)
    return RunFolder(folder).data(name)


def headline_of(reference: RunData, others: list[RunData]) -> list[str] | None:
    """The metrics a comparison tests by default: the runs' headline metrics that all computed.

    The reference's headline comes first, then any other run's. The correction
    (Holm or BH) is over these, so testing fewer metrics keeps the verdicts of
    the ones a team reads sharper. None (every shared metric) when the runs
    share no headline metric. ``evalframe compare`` and ``evalframe.compare``
    both choose through here, so their p-values agree.
    """
    names: list[str] = []
    for run in (reference, *others):
        names.extend(n for n in run.headline if n not in names)
    shared = [n for n in names if all(n in r.values for r in (reference, *others))]
    return shared or None


def one_sided(runs: list[RunData]) -> dict[str, list[str]]:
    """Run name -> the metrics it computed that some other run of ``runs`` did not: those
    cannot be compared, and a table without them does not say they were left out (a
    run re-scored with nDCG@10 beside one without it)."""
    every = [m for m in runs[0].values if all(m in r.values for r in runs[1:])]
    out: dict[str, list[str]] = {}
    for run in runs:
        alone = [m for m in run.values if m not in every]
        if alone:
            out[run.name] = alone
    return out


@dataclass(frozen=True)
class Interval:
    """The interval printed beside a verdict, and the level it was computed at.

    It is the set of shifts the sign-flip test does not reject at the level
    the multiple-comparison correction applied to that test (``1 - alpha *
    p / p_adjusted``), so it excludes 0 exactly when the verdict is
    "improved" or "regressed".
    """

    low: float
    high: float
    level: float

    def as_dict(self) -> dict[str, float]:
        return {"interval_low": self.low, "interval_high": self.high, "interval_level": self.level}

    def text(self) -> str:
        if math.isnan(self.low):
            return "[n/a]"
        return f"[{self.low:+.3f}, {self.high:+.3f}] at {_level(self.level)}"


def _level(level: float) -> str:
    """A confidence level short but not misleading: 95%, 99.79%, 99.998% (never "100%")."""
    pct = 100.0 * level
    for digits in range(5):
        shown = round(pct, digits)
        if abs(shown - pct) < 1e-9 or (digits >= 2 and shown < 100.0):
            break
    return f"{shown:.{digits}f}%"


NO_INTERVAL = Interval(math.nan, math.nan, math.nan)


@dataclass
class MetricComparison:
    metric: str
    overall: PairedComparison
    p_adjusted: float = math.nan
    by_slice: dict[str, dict[str, PairedComparison]] = field(default_factory=dict)
    p_adjusted_slices: dict[str, dict[str, float]] = field(default_factory=dict)
    interval: Interval = NO_INTERVAL
    interval_slices: dict[str, dict[str, Interval]] = field(default_factory=dict)


def verdict_of(delta: float, p_adjusted: float, alpha: float) -> str:
    """'improved' / 'regressed' when the adjusted p is below alpha, else 'within noise'.

    A significance test's words; a tolerance gate says 'within tolerance'.
    """
    if math.isnan(p_adjusted) or p_adjusted >= alpha or delta == 0 or math.isnan(delta):
        return "within noise"
    return "improved" if delta > 0 else "regressed"


@dataclass
class Comparison:
    a: str
    b: str
    n: int
    correction: str
    alpha: float
    metrics: list[MetricComparison]
    top_regressed: list[dict[str, Any]]
    top_improved: list[dict[str, Any]]
    family: int = 0  # how many tests the correction spread alpha over
    #: how the two golden sets differ, when they do (compared anyway: allow_mismatch)
    golden: GoldenChange | None = None
    #: the display names both runs give their metrics (``metrics.labels``): B.O.B's MRR
    labels: Mapping[str, str] = field(default_factory=dict)
    #: the metric the per-slice tables and the top regressed queries are shown by (the
    #: run's status criterion where both computed it: :func:`compare_runs`'s ``lead``)
    lead: str = ""

    def leading(self) -> MetricComparison:
        """The comparison of :attr:`lead` (the first metric's, for an older record)."""
        return next((mc for mc in self.metrics if mc.metric == self.lead), self.metrics[0])

    def shown(self, metric: str) -> str:
        """``metric`` as the tables show it: its label (``MRR``) where both runs give one."""
        return self.labels.get(metric) or metric

    def legend(self) -> str | None:
        """What the labels the tables show stand for (``MRR is RR``), when they show any."""
        pairs = [
            f"{self.labels[mc.metric]} is {mc.metric}"
            for mc in self.metrics
            if self.labels.get(mc.metric, mc.metric) != mc.metric
        ]
        return f"labels (metrics.labels): {', '.join(pairs)}" if pairs else None

    def verdict(self, mc: MetricComparison) -> str:
        """'improved' / 'regressed' when the adjusted p is below alpha, else 'within noise'."""
        return verdict_of(mc.overall.delta, mc.p_adjusted, self.alpha)

    def as_dict(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "paired_queries": self.n,
            "golden_sets": None if self.golden is None else self.golden.as_dict(),
            "correction": self.correction,
            "alpha": self.alpha,
            "family": self.family,
            "metrics": {
                mc.metric: {
                    **mc.overall.as_dict(),
                    "p_adjusted": mc.p_adjusted,
                    **mc.interval.as_dict(),
                    "verdict": self.verdict(mc),
                    "by_slice": {
                        f: {
                            v: {
                                **c.as_dict(),
                                "p_adjusted": mc.p_adjusted_slices[f][v],
                                **mc.interval_slices[f][v].as_dict(),
                                "verdict": verdict_of(
                                    c.delta, mc.p_adjusted_slices[f][v], self.alpha
                                ),
                            }
                            for v, c in groups.items()
                        }
                        for f, groups in mc.by_slice.items()
                    },
                }
                for mc in self.metrics
            },
            "top_regressed": self.top_regressed,
            "top_improved": self.top_improved,
            "lead": self.leading().metric,
        }


def adjusted_interval(
    a: np.ndarray,
    b: np.ndarray,
    p: float,
    p_adjusted: float,
    alpha: float,
    *,
    randomization: int,
    seed: int,
) -> Interval:
    """The interval at the level the correction applied to this test (see :class:`Interval`).

    The correction rejects when ``p_adjusted < alpha``, that is when the raw
    ``p < alpha * p / p_adjusted``: that ratio is the test's own threshold.
    """
    if math.isnan(p) or math.isnan(p_adjusted) or p_adjusted <= 0:
        return NO_INTERVAL
    level_alpha = alpha * p / p_adjusted
    low, high = randomization_ci(a, b, alpha=level_alpha, resamples=randomization, seed=seed)
    return Interval(low + 0.0, high + 0.0, 1.0 - level_alpha)  # + 0.0: no "-0.000"


#: How the command line and the config say "compare anyway" (the mismatch hints' words).
CLI_OVERRIDE = "pass --allow-mismatch (compare) / compare.allow_mismatch=true"


def check_comparable(
    a: RunData, b: RunData, *, allow_mismatch: bool = False, override: str = CLI_OVERRIDE
) -> None:
    """Refuse runs on different golden sets or metric policies, unless told otherwise.

    ``override`` is how the hint tells the caller to compare anyway: the command
    line's flags by default, ``evalframe.compare``'s ``allow_mismatch=True`` there."""
    if allow_mismatch:
        return
    if a.golden_hash is None or b.golden_hash is None:
        # B.O.B's results JSON carries no hash of its golden set: its questions must
        # then hold every query of the other side (a one-domain run against the whole
        # set's results compares its own queries), as a B.O.B baseline's must
        held, other = (a, b) if a.golden_hash is None else (b, a)
        known = set(held.query_ids)
        unknown = [q for q in other.query_ids if q not in known]
        if unknown:
            raise ConfigError(
                f"{held.name} has no results for {len(unknown)} of the {len(other.query_ids)} "
                f"queries of {other.name} (ids {', '.join(unknown[:5])}"
                f"{' …' if len(unknown) > 5 else ''}), and names no golden set to check against",
                hint=f"compare results saved on the same golden set, or {override} "
                "to compare the shared queries anyway",
            )
    elif a.golden_hash != b.golden_hash:
        raise ConfigError(
            f"{a.name} and {b.name} were scored on different golden sets "
            f"({a.golden_hash} vs {b.golden_hash}); their numbers are not comparable",
            hint=f"re-run one of them on the same golden set, or {override} "
            "to compare the shared queries anyway",
        )
    if not same_policies(a.policies, b.policies):
        raise ConfigError(
            f"{a.name} and {b.name} used different metric policies ("
            f"{'; '.join(policy_differences(a.policies, b.policies))})",
            hint=f"use the same metrics.policies, or {override} to compare them anyway",
        )


def _chosen(metrics: list[str], a: RunData, b: RunData) -> list[str]:
    """The metrics asked for, by canonical name (``ndcg@10`` is ``nDCG@10``), each one
    both runs computed: a name either lacks is an error listing what they share."""
    from evalframe.metrics import parse_metric, refuse_label

    shared = [m for m in b.values if m in a.values]
    out = []
    for i, text in enumerate(metrics):
        for run in (a, b):  # ADK's "Recall@1" labels Hit@1, and parses as R@1
            refuse_label(str(text), run.labels, key=f"metrics[{i}]", who="--metrics")
        name = str(parse_metric(text, key=f"metrics[{i}]"))
        if name not in shared:
            lacking = " and ".join(r.name for r in (a, b) if name not in r.values)
            raise ConfigError(
                f"metric {name!r} is not in {lacking}",
                key=f"metrics[{i}]",
                expected=f"one both runs computed: {', '.join(shared) or '(none)'}",
                hint="re-score the runs with it (evalframe rescore RUN 'metrics.measures=[...]')",
            )
        out.append(name)
    return list(dict.fromkeys(out))


def compare_runs(
    a: RunData,
    b: RunData,
    *,
    metrics: list[str] | None = None,
    correction: str = "holm",
    alpha: float = 0.05,
    seed: int = 0,
    resamples: int = 1000,
    randomization: int = 10_000,
    top: int = 5,
    lead: str | None = None,
) -> Comparison:
    """Paired statistics for every metric both runs computed, overall and per slice.

    ``lead``: the metric the top regressed and improved queries are ranked by, when
    both runs computed it: the run's status criterion (``report.criterion``, B.O.B's
    MRR), as ``summary.md`` ranks its top regressions; else the first metric.

    The pairs are the queries both runs hold; on different golden sets (compared
    anyway), a shared query whose relevant documents changed is left out
    (:mod:`evalframe.assess.goldenchange`), and the comparison says which.
    """
    shared, change = paired_ids(a, b)
    names = _chosen(metrics, a, b) if metrics else [m for m in b.values if m in a.values]
    if not shared or not names:
        raise ConfigError(
            f"{a.name} and {b.name} share no queries or no metrics to compare",
            hint="compare runs of the same golden set and metrics",
        )
    results: list[MetricComparison] = []
    # every test of the family, in order: (metric comparison, field, value, a, b)
    cells: list[tuple[MetricComparison, str | None, str | None, np.ndarray, np.ndarray]] = []
    for metric in names:
        va = np.array([a.values[metric].get(q, math.nan) for q in shared])
        vb = np.array([b.values[metric].get(q, math.nan) for q in shared])
        mc = MetricComparison(
            metric=metric,
            overall=compare_paired(
                va, vb, resamples=resamples, randomization=randomization, seed=seed
            ),
        )
        cells.append((mc, None, None, va, vb))
        fields = sorted({f for q in shared for f in b.slices.get(q, {})})
        for fname in fields:
            labels = np.array([b.slices.get(q, {}).get(fname, "unset") for q in shared])
            mc.by_slice[fname] = {}
            for label in sorted(set(labels.tolist())):
                sa, sb = va[labels == label], vb[labels == label]
                mc.by_slice[fname][label] = compare_paired(
                    sa, sb, resamples=resamples, randomization=randomization, seed=seed
                )
                cells.append((mc, fname, label, sa, sb))
        results.append(mc)

    # One family: every metric overall and in every slice, so more looks cost more.
    flat = [
        (mc.overall if where is None else mc.by_slice[where][str(value)]).p_randomization
        for mc, where, value, _, _ in cells
    ]
    adjusted = adjust_pvalues(flat, correction)
    for (mc, where, value, sa, sb), p, p_adj in zip(cells, flat, adjusted, strict=True):
        interval = adjusted_interval(
            sa, sb, p, p_adj, alpha, randomization=randomization, seed=seed
        )
        if where is None:
            mc.p_adjusted, mc.interval = p_adj, interval
        else:
            mc.p_adjusted_slices.setdefault(where, {})[str(value)] = p_adj
            mc.interval_slices.setdefault(where, {})[str(value)] = interval
    lead = lead if lead in names else names[0]
    deltas = sorted(
        ((b.values[lead].get(q, math.nan) - a.values[lead].get(q, math.nan), q) for q in shared),
        key=lambda x: x[0],
    )
    deltas = [(d, q) for d, q in deltas if not math.isnan(d)]

    def row(d: float, q: str) -> dict[str, Any]:
        return {
            "query_id": q,
            "metric": lead,
            "delta": d,
            "a": a.values[lead].get(q),
            "b": b.values[lead].get(q),
            "expected": b.expected.get(q, []),
            # None: that side stored no rankings (B.O.B's results keep only the numbers)
            "a_retrieved": a.retrieved[q][:5] if q in a.retrieved else None,
            "b_retrieved": b.retrieved[q][:5] if q in b.retrieved else None,
        }

    return Comparison(
        a=a.name,
        b=b.name,
        n=len(shared),
        correction=correction,
        alpha=alpha,
        metrics=results,
        top_regressed=[row(d, q) for d, q in deltas if d < 0][:top],
        top_improved=[row(d, q) for d, q in reversed(deltas) if d > 0][:top],
        family=sum(1 for p in flat if not math.isnan(p)),
        golden=change,
        # a label one run gives and the other does not (or gives otherwise) is not shown
        labels={m: v for m, v in b.labels.items() if a.labels.get(m) == v},
        lead=lead,
    )


def paired_ids(a: RunData, b: RunData) -> tuple[list[str], GoldenChange | None]:
    """The query ids a comparison pairs (in ``b``'s order), and how the golden sets differ:
    the queries both runs hold, less those relabelled between their golden sets."""
    alike = judged_alike(a.judgments, a.expected, b.judgments, b.expected)
    change = golden_change(a.golden_hash, a.query_ids, b.golden_hash, b.query_ids, alike)
    left_out = set(change.relabelled) if change is not None else set()
    in_a = set(a.query_ids)  # built once: in the condition it was built per query (10k^2)
    return [q for q in b.query_ids if q in in_a and q not in left_out], change


MARKS = {"improved": "✓", "regressed": "✗", "within noise": "~"}


def decided(correction: str, family: int, alpha: float) -> str:
    """Which correction decided the verdicts, in words."""
    name = {"holm": "Holm", "bh": "Benjamini-Hochberg"}.get(correction, correction)
    if family <= 1:
        return f"randomization test, alpha {alpha:g}, one test (no correction needed)"
    return (
        f"randomization test, p {name}-adjusted over {family} tests (every metric overall "
        f"and in every slice), alpha {alpha:g}"
    )


def compare_many(
    reference: RunData,
    candidates: list[RunData],
    *,
    metrics: list[str] | None = None,
    correction: str = "holm",
    alpha: float = 0.05,
    seed: int = 0,
) -> dict[str, Any]:
    """Every candidate against one reference; p-values adjusted across the whole table.

    The family is every (candidate, metric) cell, so adding runs to the table
    makes each cell's evidence bar higher, as it should.
    """
    comparisons = [
        compare_runs(reference, c, metrics=metrics, correction=correction, alpha=alpha, seed=seed)
        for c in candidates
    ]
    cells = [
        (comp, cand, mc)
        for comp, cand in zip(comparisons, candidates, strict=True)
        for mc in comp.metrics
    ]
    raw = [mc.overall.p_randomization for _, _, mc in cells]
    adjusted = adjust_pvalues(raw, correction)
    table: dict[str, dict[str, Any]] = {}
    for (comp, cand, mc), p_raw, p in zip(cells, raw, adjusted, strict=True):
        o = mc.overall
        ids, _ = paired_ids(reference, cand)  # as compare_runs pairs them
        va = np.array([reference.values[mc.metric].get(q, math.nan) for q in ids])
        vb = np.array([cand.values[mc.metric].get(q, math.nan) for q in ids])
        interval = adjusted_interval(va, vb, p_raw, p, alpha, randomization=10_000, seed=seed)
        table.setdefault(comp.b, {})[mc.metric] = {
            "reference_mean": o.mean_a,
            "mean": o.mean_b,
            "delta": o.delta,
            "ci_low": o.ci_low,
            "ci_high": o.ci_high,
            **interval.as_dict(),
            "p_randomization": o.p_randomization,
            "p_adjusted": p,
            "verdict": verdict_of(o.delta, p, alpha),
            "n": o.n,
        }
    return {
        "reference": reference.name,
        "correction": correction,
        "alpha": alpha,
        "family": sum(1 for p in raw if not math.isnan(p)),
        "runs": table,
    }
