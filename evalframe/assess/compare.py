"""Paired comparison of two runs: which metrics moved, by how much, where, and is it noise?

Both sides are read the same way, from what a run writes (``per_query.jsonl``
and ``summary.json``), so comparing a fresh run with its baseline and
``evalframe compare A B`` on two old folders give the same numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from evalframe.assess.runfolder import RunData, RunFolder
from evalframe.assess.stats import (
    PairedComparison,
    adjust_pvalues,
    compare_paired,
    randomization_ci,
)
from evalframe.core.console import WIDTH, Col, render, table
from evalframe.core.errors import ConfigError
from evalframe.metrics import same_policies

__all__ = ["Comparison", "RunData", "compare_runs", "load_run_data", "render_comparison"]


def load_run_data(folder: Path, name: str | None = None) -> RunData:
    """Read a run or baseline folder written by evalframe."""
    return RunFolder(folder).data(name)


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

    def verdict(self, mc: MetricComparison) -> str:
        """'improved' / 'regressed' when the adjusted p is below alpha, else 'within noise'."""
        return verdict_of(mc.overall.delta, mc.p_adjusted, self.alpha)

    def as_dict(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "paired_queries": self.n,
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


def check_comparable(a: RunData, b: RunData, *, allow_mismatch: bool = False) -> None:
    """Refuse runs on different golden sets or metric policies, unless told otherwise."""
    if allow_mismatch:
        return
    if a.golden_hash != b.golden_hash:
        raise ConfigError(
            f"{a.name} and {b.name} were scored on different golden sets "
            f"({a.golden_hash} vs {b.golden_hash}); their numbers are not comparable",
            hint="re-run one of them on the same golden set, or pass --allow-mismatch "
            "(compare) / compare.allow_mismatch=true to compare the shared queries anyway",
        )
    if not same_policies(a.policies, b.policies):
        raise ConfigError(
            f"{a.name} and {b.name} used different metric policies ({a.policies} vs {b.policies})",
            hint="use the same metrics.policies, or allow the mismatch explicitly",
        )


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
) -> Comparison:
    """Paired statistics for every metric both runs computed, overall and per slice."""
    shared = [q for q in b.query_ids if q in set(a.query_ids)]
    names = metrics or [m for m in b.values if m in a.values]
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
    lead = names[0]
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
    )


MARKS = {"improved": "✓", "regressed": "✗", "within noise": "~"}


def _decided(correction: str, family: int, alpha: float) -> str:
    """Which correction decided the verdicts, in words."""
    name = {"holm": "Holm", "bh": "Benjamini-Hochberg"}.get(correction, correction)
    if family <= 1:
        return f"randomization test, alpha {alpha:g}, one test (no correction needed)"
    return (
        f"randomization test, p {name}-adjusted over {family} tests (every metric overall "
        f"and in every slice), alpha {alpha:g}"
    )


def render_comparison(
    comp: Comparison, *, markdown: bool = False, width: int = WIDTH, color: bool = False
) -> str:
    """The terminal block (B.O.B's "comparison to baseline") or its Markdown twin.

    Each interval is at the level the correction applied to its own test, so
    an interval excludes 0 exactly when its verdict is not "within noise".
    The terminal block is tables fitted to ``width`` columns (see
    :mod:`evalframe.core.console`).
    """
    if not markdown:
        return _render_terminal(comp, width=width, color=color)
    head = f"Comparison: {comp.b} vs {comp.a} ({comp.n} paired queries)"
    how = " ".join(
        [
            f"Verdicts: {_decided(comp.correction, comp.family, comp.alpha)}.",
            "Intervals: that test inverted at the level the correction gave it; an interval "
            "excludes 0 exactly when its verdict is improved or regressed.",
        ]
    )
    lines = [f"## {head}", how, ""]
    lines += [
        "| metric | a | b | delta | interval | p (adj) | W/T/L | verdict |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for mc in comp.metrics:
        o = mc.overall
        lines.append(
            f"| {mc.metric} | {o.mean_a:.3f} | {o.mean_b:.3f} | {o.delta:+.3f} | "
            f"{mc.interval.text()} | {mc.p_adjusted:.3g} | {o.wins}/{o.ties}/{o.losses} | "
            f"{comp.verdict(mc)} |"
        )
    first = comp.metrics[0]
    for fname, groups in first.by_slice.items():
        lines += ["", f"### {first.metric} by {fname}:"]
        for value, c in groups.items():
            p = first.p_adjusted_slices[fname][value]
            verdict = verdict_of(c.delta, p, comp.alpha)
            lines.append(
                f"- {MARKS[verdict]} {value}: {c.mean_a:.3f} → "
                f"{c.mean_b:.3f} ({c.delta:+.3f} {first.interval_slices[fname][value].text()}, "
                f"n={c.n}, p={p:.3g}) {verdict}"
            )
    for title, rows in (("Top regressed", comp.top_regressed), ("Top improved", comp.top_improved)):
        if not rows:
            continue
        lines += ["", f"### {title} ({first.metric}):"]
        for r in rows:
            lines.append(
                f"- {r['query_id']}: {r['a']:.3f} → "
                f"{r['b']:.3f} ({r['delta']:+.3f}); expected {r['expected'][:5]}"
            )
            for side, ranked in ((comp.a, r["a_retrieved"]), (comp.b, r["b_retrieved"])):
                shown = "(rankings not stored)" if ranked is None else ranked
                lines.append(f"  {side}: {shown}")
    return "\n".join(lines)


def _render_terminal(comp: Comparison, *, width: int, color: bool) -> str:
    """The comparison as text and tables that fit ``width`` columns."""
    from rich.text import Text

    parts: list[Any] = [
        Text(f"Comparison: {comp.b} vs {comp.a} ({comp.n} paired queries)"),
        Text(f"Verdicts: {_decided(comp.correction, comp.family, comp.alpha)}."),
        Text(
            "Intervals: that test inverted at the level the correction gave it; an interval "
            "excludes 0 exactly when its verdict is improved or regressed."
        ),
        Text(""),
    ]
    rows = []
    for mc in comp.metrics:
        o, verdict = mc.overall, comp.verdict(mc)
        rows.append(
            [
                MARKS[verdict],
                mc.metric,
                f"{o.mean_a:.3f}",
                f"{o.mean_b:.3f}",
                f"{o.delta:+.3f}",
                mc.interval.text(),
                f"{mc.p_adjusted:.3g}",
                f"{o.wins}/{o.ties}/{o.losses}",
                verdict,
            ]
        )
    parts.append(
        table(
            [
                Col(" ", "id"),
                Col("metric", "id"),
                Col("a", "number"),
                Col("b", "number"),
                Col("delta", "number"),
                Col("interval", "number"),
                Col("p (adj)", "number"),
                Col("W/T/L", "number"),
                Col("verdict", "id"),
            ],
            rows,
        )
    )
    first = comp.metrics[0]
    for fname, groups in first.by_slice.items():
        slice_rows = []
        for value, c in groups.items():
            p = first.p_adjusted_slices[fname][value]
            verdict = verdict_of(c.delta, p, comp.alpha)
            slice_rows.append(
                [
                    MARKS[verdict],
                    value,
                    f"{c.mean_a:.3f}",
                    f"{c.mean_b:.3f}",
                    f"{c.delta:+.3f}",
                    first.interval_slices[fname][value].text(),
                    str(c.n),
                    f"{p:.3g}",
                    verdict,
                ]
            )
        parts += [
            Text(""),
            table(
                [
                    Col(" ", "id"),
                    Col(fname, "text"),
                    Col("a", "number"),
                    Col("b", "number"),
                    Col("delta", "number"),
                    Col("interval", "number"),
                    Col("n", "number"),
                    Col("p (adj)", "number"),
                    Col("verdict", "id"),
                ],
                slice_rows,
                title=f"{first.metric} by {fname}:",
            ),
        ]
    for title, moved in (
        ("Top regressed", comp.top_regressed),
        ("Top improved", comp.top_improved),
    ):
        if not moved:
            continue
        parts += [Text(""), Text(f"{title} ({first.metric}):")]
        for r in moved:
            parts.append(
                _hanging(
                    f"{r['query_id']}: {r['a']:.3f} → {r['b']:.3f} ({r['delta']:+.3f}); "
                    f"expected {', '.join(r['expected'][:5])}",
                    2,
                    6,
                )
            )
            for side, ranked in ((comp.a, r["a_retrieved"]), (comp.b, r["b_retrieved"])):
                shown = "(rankings not stored)" if ranked is None else ", ".join(ranked)
                parts.append(_hanging(f"{side}: {shown}", 6, 10))
    return render(*parts, width=width, color=color)


def _hanging(text: str, first: int, rest: int) -> Any:
    """A paragraph indented ``first`` spaces, its wrapped lines ``rest`` spaces."""
    from rich.padding import Padding
    from rich.text import Text

    return Padding(_Hang(Text(text), rest - first), (0, 0, 0, first))


class _Hang:
    """rich renderable: wrap a text so that its continuation lines are indented."""

    def __init__(self, text: Any, indent: int) -> None:
        self.text, self.indent = text, indent

    def __rich_console__(self, console: Any, options: Any) -> Any:
        from rich.segment import Segment

        lines = self.text.wrap(console, max(10, options.max_width - self.indent))
        for i, line in enumerate(lines):
            if i:
                yield Segment(" " * self.indent)
            yield from line.render(console)
            yield Segment.line()


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
    reference_ids = set(reference.query_ids)
    for (comp, cand, mc), p_raw, p in zip(cells, raw, adjusted, strict=True):
        o = mc.overall
        ids = [q for q in cand.query_ids if q in reference_ids]  # as compare_runs pairs them
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


def render_table(
    result: dict[str, Any], *, markdown: bool = False, width: int = WIDTH, color: bool = False
) -> str:
    """One row per candidate, one column per metric: mean (delta, adjusted p) and a mark.

    In the terminal each cell takes two lines (the mean, then the delta and
    p), so a table of several metrics still fits ``width`` columns.
    """
    runs = result["runs"]
    metrics = list(next(iter(runs.values())))
    head = f"Runs against {result['reference']}. Verdicts: " + _decided(
        result["correction"], int(result.get("family", 0)), result["alpha"]
    ).replace("every metric overall and in every slice", "every cell of the table")
    first = next(iter(runs.values()))
    reference = [
        f"{result['reference']} (reference)",
        *(f"{first[m]['reference_mean']:.3f}" for m in metrics),
    ]
    if markdown:
        rows = [["run", *metrics], reference]
        for name, cells in runs.items():
            rows.append(
                [
                    name,
                    *(
                        f"{MARKS[c['verdict']]} {c['mean']:.3f} "
                        f"({c['delta']:+.3f}, p={c['p_adjusted']:.2g})"
                        for c in (cells[m] for m in metrics)
                    ),
                ]
            )
        out = [f"## {head}", "", "| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
        out += ["| " + " | ".join(r) + " |" for r in rows[1:]]
        return "\n".join(out)
    from rich.text import Text

    body = [reference]
    for name, cells in runs.items():
        body.append(
            [
                name,
                *(
                    f"{MARKS[c['verdict']]} {c['mean']:.3f}\n"
                    f"{c['delta']:+.3f} p={c['p_adjusted']:.2g}"
                    for c in (cells[m] for m in metrics)
                ),
            ]
        )
    cols = [Col("run", "text"), *(Col(m, "number") for m in metrics)]
    return render(Text(head), Text(""), table(cols, body), width=width, color=color)
