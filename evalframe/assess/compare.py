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
from evalframe.assess.stats import PairedComparison, adjust_pvalues, compare_paired
from evalframe.core.errors import ConfigError
from evalframe.metrics import same_policies

__all__ = ["Comparison", "RunData", "compare_runs", "load_run_data", "render_comparison"]


def load_run_data(folder: Path, name: str | None = None) -> RunData:
    """Read a run or baseline folder written by evalframe."""
    return RunFolder(folder).data(name)


@dataclass
class MetricComparison:
    metric: str
    overall: PairedComparison
    p_adjusted: float = math.nan
    by_slice: dict[str, dict[str, PairedComparison]] = field(default_factory=dict)
    p_adjusted_slices: dict[str, dict[str, float]] = field(default_factory=dict)


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

    def verdict(self, mc: MetricComparison) -> str:
        """'improved' / 'regressed' when the adjusted p is below alpha, else 'within noise'."""
        if math.isnan(mc.p_adjusted) or mc.p_adjusted >= self.alpha or mc.overall.delta == 0:
            return "within noise"
        return "improved" if mc.overall.delta > 0 else "regressed"

    def as_dict(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "paired_queries": self.n,
            "correction": self.correction,
            "alpha": self.alpha,
            "metrics": {
                mc.metric: {
                    **mc.overall.as_dict(),
                    "p_adjusted": mc.p_adjusted,
                    "verdict": self.verdict(mc),
                    "by_slice": {
                        f: {
                            v: {**c.as_dict(), "p_adjusted": mc.p_adjusted_slices[f][v]}
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
    for metric in names:
        va = np.array([a.values[metric].get(q, math.nan) for q in shared])
        vb = np.array([b.values[metric].get(q, math.nan) for q in shared])
        mc = MetricComparison(
            metric=metric,
            overall=compare_paired(
                va, vb, resamples=resamples, randomization=randomization, seed=seed
            ),
        )
        fields = sorted({f for q in shared for f in b.slices.get(q, {})})
        for fname in fields:
            labels = np.array([b.slices.get(q, {}).get(fname, "unset") for q in shared])
            mc.by_slice[fname] = {
                label: compare_paired(
                    va[labels == label],
                    vb[labels == label],
                    resamples=resamples,
                    randomization=randomization,
                    seed=seed,
                )
                for label in sorted(set(labels.tolist()))
            }
        results.append(mc)
    # One family: every metric overall and in every slice, so more looks cost more.
    flat: list[float] = []
    for mc in results:
        flat.append(mc.overall.p_randomization)
        for groups in mc.by_slice.values():
            flat.extend(c.p_randomization for c in groups.values())
    adjusted = iter(adjust_pvalues(flat, correction))
    for mc in results:
        mc.p_adjusted = next(adjusted)
        mc.p_adjusted_slices = {
            f: {v: next(adjusted) for v in groups} for f, groups in mc.by_slice.items()
        }
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
            "a_retrieved": a.retrieved.get(q, [])[:5],
            "b_retrieved": b.retrieved.get(q, [])[:5],
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
    )


MARKS = {"improved": "✓", "regressed": "✗", "within noise": "~"}


def render_comparison(comp: Comparison, *, markdown: bool = False) -> str:
    """The terminal block (B.O.B's "comparison to baseline") or its Markdown twin."""
    head = (
        f"Comparison: {comp.b} vs {comp.a} ({comp.n} paired queries; "
        f"randomization test, {comp.correction}-adjusted, alpha {comp.alpha:g})"
    )
    lines = [f"## {head}" if markdown else head, ""]
    if markdown:
        lines += [
            "| metric | a | b | delta | 95% CI | p (adj) | W/T/L | verdict |",
            "|---|---|---|---|---|---|---|---|",
        ]
    for mc in comp.metrics:
        o = mc.overall
        verdict = comp.verdict(mc)
        ci = f"[{o.ci_low:+.3f}, {o.ci_high:+.3f}]"
        wtl = f"{o.wins}/{o.ties}/{o.losses}"
        if markdown:
            lines.append(
                f"| {mc.metric} | {o.mean_a:.3f} | {o.mean_b:.3f} | {o.delta:+.3f} | "
                f"{ci} | {mc.p_adjusted:.3g} | {wtl} | {verdict} |"
            )
        else:
            lines.append(
                f"  {MARKS[verdict]} {mc.metric:<10} {o.mean_a:.3f} → {o.mean_b:.3f}  "
                f"{o.delta:+.3f} {ci}  p={mc.p_adjusted:.3g}  W/T/L {wtl}  {verdict}"
            )
    first = comp.metrics[0]
    for fname, groups in first.by_slice.items():
        lines += ["", f"{'### ' if markdown else ''}{first.metric} by {fname}:"]
        for value, c in groups.items():
            p = first.p_adjusted_slices[fname][value]
            lines.append(
                f"{'- ' if markdown else '  '}{value}: {c.mean_a:.3f} → {c.mean_b:.3f} "
                f"({c.delta:+.3f}, n={c.n}, p={p:.3g})"
            )
    for title, rows in (("Top regressed", comp.top_regressed), ("Top improved", comp.top_improved)):
        if not rows:
            continue
        lines += ["", f"{'### ' if markdown else ''}{title} ({first.metric}):"]
        for r in rows:
            lines.append(
                f"{'- ' if markdown else '  '}{r['query_id']}: {r['a']:.3f} → "
                f"{r['b']:.3f} ({r['delta']:+.3f}); expected {r['expected'][:5]}"
            )
            lines.append(f"{'  ' if markdown else '      '}{comp.a}: {r['a_retrieved']}")
            lines.append(f"{'  ' if markdown else '      '}{comp.b}: {r['b_retrieved']}")
    return "\n".join(lines)


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
    cells = [(comp, mc) for comp in comparisons for mc in comp.metrics]
    adjusted = adjust_pvalues([mc.overall.p_randomization for _, mc in cells], correction)
    table: dict[str, dict[str, Any]] = {}
    for (comp, mc), p in zip(cells, adjusted, strict=True):
        o = mc.overall
        verdict = "within noise"
        if not math.isnan(p) and p < alpha and o.delta != 0:
            verdict = "improved" if o.delta > 0 else "regressed"
        table.setdefault(comp.b, {})[mc.metric] = {
            "reference_mean": o.mean_a,
            "mean": o.mean_b,
            "delta": o.delta,
            "ci_low": o.ci_low,
            "ci_high": o.ci_high,
            "p_randomization": o.p_randomization,
            "p_adjusted": p,
            "verdict": verdict,
            "n": o.n,
        }
    return {"reference": reference.name, "correction": correction, "alpha": alpha, "runs": table}


def render_table(result: dict[str, Any], *, markdown: bool = False) -> str:
    """One row per candidate, one column per metric: mean (delta, adjusted p) and a mark."""
    runs = result["runs"]
    metrics = list(next(iter(runs.values())))
    head = (
        f"Runs against {result['reference']} (randomization test, "
        f"{result['correction']}-adjusted across the table, alpha {result['alpha']:g})"
    )
    rows = [["run", *metrics]]
    first = next(iter(runs.values()))
    rows.append(
        [
            f"{result['reference']} (reference)",
            *(f"{first[m]['reference_mean']:.3f}" for m in metrics),
        ]
    )
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
    if markdown:
        out = [f"## {head}", "", "| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
        out += ["| " + " | ".join(r) + " |" for r in rows[1:]]
        return "\n".join(out)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [head, ""]
    lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)
