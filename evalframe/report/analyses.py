"""The analyses as terminal text: calibration, the A/B benefit table, failure categories.

Pure functions from the JSON payloads (calibration.json, benefit.json, the
``analysis`` block of summary.json) to lines, so a stored run renders the
same as a fresh one. Every line fits in 100 columns.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalframe.analysis import AnalysisOutput

__all__ = [
    "WIDTH",
    "render_analyses",
    "render_benefit",
    "render_calibration",
    "render_failure_counts",
    "signed",
]

WIDTH = 100


def _num(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.{digits}f}"


def signed(value: Any) -> str:
    """A signed number with about three significant digits: +0.333, -600, +0.0042."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    v = float(value)
    if v == 0:
        return "0"
    size = abs(v)
    if size >= 100:
        text = f"{v:+.0f}"
    elif size >= 1:
        text = f"{v:+.2f}".rstrip("0").rstrip(".")
    else:
        text = f"{v:+.3g}"
    return text.replace("-", "−")


def _ci(d: dict[str, Any]) -> str:
    if d.get("ci_low") is None:
        return signed(d.get("mean"))
    return f"{signed(d['mean'])} [{signed(d['ci_low'])},{signed(d['ci_high'])}]"


def _table(header: list[str], rows: list[list[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return (
            indent
            + "  ".join(
                c.ljust(w) if i == 0 or i == len(cells) - 1 else c.rjust(w)
                for i, (c, w) in enumerate(zip(cells, widths, strict=True))
            ).rstrip()
        )

    return [line(header), *(line(r) for r in rows)]


def render_calibration(cal: dict[str, Any]) -> list[str]:
    """The calibration block: headline, threshold values, reliability bins, caveats."""
    out = [f"Calibration ({cal['n']} queries; outcome: {cal['outcome_description']}):"]
    out.append(
        f"  ECE {_num(cal['ece'])} · MCE {_num(cal['mce'])} · Brier {_num(cal['brier'])}"
        f" · verdict: {cal['verdict']}"
    )
    out.append(f"    ({cal['verdict_reason']})"[: WIDTH - 1])
    for name, t in cal["answer_correctness"].items():
        if t["routed"]:
            ci = f" [{_num(t['ci_low'])}, {_num(t['ci_high'])}]" if t["ci_low"] is not None else ""
            out.append(
                f"  answer_correctness@{name} = {_num(t['value'])}{ci} over {t['routed']} routed "
                f"quer{'y' if t['routed'] == 1 else 'ies'} ({_num(t['coverage'], 2)} of all)"
            )
        else:
            out.append(f"  answer_correctness@{name}: no query has a confidence >= {name}")
    low = cal.get("lowest_threshold")
    target = cal["target_precision"]
    if low:
        out.append(
            f"  lowest threshold with precision >= {target:g}: {low['threshold']:.3f} "
            f"(precision {_num(low['value'])} [{_num(low['ci_low'])}, {_num(low['ci_high'])}], "
            f"{low['routed']} routed)"
        )
    else:
        out.append(f"  no threshold reaches precision {target:g}")
    kind = "equal-width" if cal["binning"] == "width" else "equal-mass"
    out.append(
        f"  reliability ({kind} bins; {cal['bin_ci_level']:.1%} Wilson intervals, "
        "simultaneous over the bins):"
    )
    rows = []
    for b in cal["bins"]:
        if not b["count"]:
            continue
        mark = {"over": "over-confident", "under": "under-confident"}.get(b["direction"] or "", "")
        rows.append(
            [
                f"[{b['low']:.2f}, {b['high']:.2f}{']' if b['high'] >= 1 else ')'}",
                str(b["count"]),
                _num(b["mean_confidence"]),
                _num(b["observed_rate"]),
                f"[{_num(b['ci_low'])}, {_num(b['ci_high'])}]",
                mark,
            ]
        )
    out.extend(_table(["bin", "n", "confidence", "observed", "interval", ""], rows, indent="    "))
    excluded = cal.get("excluded") or {}
    if excluded:
        listed = ", ".join(f"{len(v)} {k.replace('_', ' ')}" for k, v in excluded.items())
        out.append(f"  left out: {listed} (listed in calibration.json)")
    for caveat in cal.get("caveats", []):
        out.extend(_wrap(f"  caveat: {caveat}", "          "))
    return out


def _wrap(text: str, indent: str) -> list[str]:
    words = text.split(" ")
    lines, line = [], ""
    for word in words:
        if line and len(line) + 1 + len(word) > WIDTH - 1:
            lines.append(line)
            line = indent + word
        else:
            line = f"{line} {word}" if line else word
    lines.append(line)
    return lines


def render_failure_counts(failures: dict[str, Any] | None) -> list[str]:
    """One line of counts per category, with each one's fix (heuristics: docs/analyses.md)."""
    if not failures or not failures.get("enabled"):
        return []
    if not failures.get("available"):
        if not failures.get("failed"):
            return []
        return [f"Failure categories: not computed ({failures.get('reason', 'no corpus')})"]
    if not failures.get("failed"):
        return []
    out = [f"Failure categories of {failures['failed']} failed queries (heuristics):"]
    fixes = failures.get("fixes", {})
    for category, count in failures["counts"].items():
        if not count:
            continue
        fix = fixes.get(category)
        label = category.replace("_", " ")
        out.append(f"  {label:<20} {count:>4}" + (f"   fix: {fix}" if fix else ""))
    return out


def render_benefit(ben: dict[str, Any]) -> list[str]:
    """The benefit tables: success and net tokens with the verdict, then effort and cost."""
    a, b = ben["arms"]["a"], ben["arms"]["b"]
    name_a = a.get("label") or "A"
    name_b = b.get("label") or "B"
    level = f"{ben['confidence']:.0%}"
    seeds = ben["seeds_per_task"]
    span = f"{seeds['min']}" + (f"-{seeds['max']}" if seeds["max"] != seeds["min"] else "")
    head = (
        f"Benefit of A ({name_a}) over B ({name_b}): {ben['tasks']} tasks × {span} seeds, "
        f"model {', '.join(a['models'])}"
    )
    out = [
        head if len(head) < WIDTH else head[: WIDTH - 2] + "…",
        f"  success lift = A − B; every 'saved' = B − A (positive favours A); [{level} paired "
        "bootstrap CI]",
    ]
    if ben["scoring"].get("blind"):
        out.append(f"  success judged blind by {ben['scoring']['judge']!r} (the arm is hidden)")
    rows = []
    for r in ben["rows"]:
        d = r["deltas"]
        rows.append(
            [
                _label(r),
                str(r["n_tasks"]),
                _ci(d["success_lift"]),
                _ci(d["net_tokens_saved"]),
                signed(d["net_tokens_saved_per_success"]["mean"]),
                r["verdict"],
            ]
        )
    out.extend(
        _table(
            ["stratum", "tasks", "success lift", "net tokens saved", "per success", "verdict"],
            rows,
        )
    )
    out.append("  effort and cost saved (B − A):")
    rows = []
    for r in ben["rows"]:
        d = r["deltas"]
        rows.append(
            [
                _label(r),
                _ci(d["tool_calls_saved"]),
                _ci(d["turns_saved"]),
                _ci(d["latency_ms_saved"]),
                _ci(d["usd_saved"]),
            ]
        )
    out.extend(_table(["stratum", "tool calls", "turns", "latency ms", "usd"], rows, "  "))
    for caveat in ben.get("caveats", []):
        out.extend(_wrap(f"  caveat: {caveat}", "          "))
    return out


def _label(row: dict[str, Any]) -> str:
    label = str(row["label"])
    if row["group"] == "split":
        label = "· " + label
    return label if len(label) <= 24 else label[:23] + "…"


def render_analyses(analysis: AnalysisOutput) -> str:
    """Every analysis block of a run, blank-line separated ('' when there is none)."""
    blocks = []
    if analysis.calibration is not None:
        blocks.append(render_calibration(analysis.calibration))
    if analysis.benefit is not None:
        blocks.append(render_benefit(analysis.benefit))
    counts = render_failure_counts(analysis.failures)
    if counts:
        blocks.append(counts)
    return "\n\n".join("\n".join(b) for b in blocks)
