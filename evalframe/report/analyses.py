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
    "render_stored",
    "signed",
]

WIDTH = 100


def _num(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.{digits}f}"


def _decimals(magnitude: float) -> int:
    """About three significant digits for numbers up to ``magnitude``: 1.00, 0.250, 4000."""
    if magnitude <= 0 or math.isnan(magnitude):
        return 2
    return max(0, min(6, 2 - math.floor(math.log10(magnitude))))


def signed(value: Any, decimals: int | None = None) -> str:
    """A signed number (``+0.67``, ``−600``; exactly 0 is ``0``), with a true minus sign."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    v = float(value)
    if v == 0:
        return "0"
    places = _decimals(abs(v)) if decimals is None else decimals
    return f"{v:+.{places}f}".replace("-", "−")


def _ci(d: dict[str, Any]) -> str:
    """``mean [low,high]``, all three with the decimals the largest of them needs."""
    parts = [d.get("mean"), d.get("ci_low"), d.get("ci_high")]
    sizes = [abs(float(x)) for x in parts if x is not None and not math.isnan(float(x))]
    places = _decimals(max(sizes)) if sizes else 2
    if d.get("ci_low") is None:
        return signed(d.get("mean"), places)
    low, high = signed(d["ci_low"], places), signed(d["ci_high"], places)
    return f"{signed(d['mean'], places)} [{low},{high}]"


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
    out = _wrap(f"Calibration ({cal['n']} queries; outcome: {cal['outcome_description']}):", "  ")
    out.append(
        f"  ECE {_num(cal['ece'])} · MCE {_num(cal['mce'])} · Brier {_num(cal['brier'])}"
        f" · verdict: {cal['verdict']}"
    )
    out.extend(_wrap(f"    ({cal['verdict_reason']})", "     "))
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
    enough = f"routing ≥ {cal['min_routed']} queries"
    if low:
        out.append(
            f"  lowest threshold with precision >= {target:g} ({enough}): {low['threshold']:.3f} "
            f"(precision {_num(low['value'])} [{_num(low['ci_low'])}, {_num(low['ci_high'])}], "
            f"{low['routed']} routed)"
        )
    else:
        out.append(f"  no threshold {enough} reaches precision {target:g}")
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
    """``text`` broken at spaces into lines under WIDTH; later lines start with ``indent``."""
    lead = text[: len(text) - len(text.lstrip(" "))]
    lines, line = [], lead
    for word in text.split():
        if line.strip() and len(line) + 1 + len(word) > WIDTH - 1:
            lines.append(line)
            line = indent + word
        else:
            line = f"{line} {word}" if line.strip() else line + word
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
    labels = failures.get("labels") or {}
    named = int(labels.get("labelled") or 0)
    source = f"{named} by the dataset's {labels.get('field')}, the rest by heuristics"
    out = [
        f"Failure categories of {failures['failed']} failed queries "
        f"({source if named else 'heuristics'}):"
    ]
    fixes = failures.get("fixes", {})
    for category, count in failures["counts"].items():
        if not count:
            continue
        fix = fixes.get(category)
        label = category.replace("_", " ")
        out.append(f"  {label:<20} {count:>4}" + (f"   fix: {fix}" if fix else ""))
    if named:
        out.append(
            f"  the heuristics agree with {labels.get('field')} on {labels.get('agree', 0)} "
            f"of the {named}"
        )
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
        f"  n tasks · success lift = A − B, saved = B − A: positive favours A · [{level} paired "
        "bootstrap CI]",
        "  /success: net tokens saved on the pairs where both arms succeeded",
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
            ["stratum", "n", "success lift", "net tokens saved", "/success", "verdict"],
            rows,
        )
    )
    for title, measures in (
        ("effort saved (B − A)", ("tool_calls_saved", "turns_saved")),
        ("cost saved (B − A)", ("latency_ms_saved", "usd_saved")),
    ):
        out.append("")
        rows = [[_label(r), *(_ci(r["deltas"][m]) for m in measures)] for r in ben["rows"]]
        header = [title, *(m.removesuffix("_saved").replace("_", " ") for m in measures)]
        out.extend(_table(header, rows))
    for caveat in ben.get("caveats", []):
        out.extend(_wrap(f"  caveat: {caveat}", "          "))
    return out


def _label(row: dict[str, Any]) -> str:
    label = str(row["label"])
    return label if len(label) <= 26 else label[:25] + "…"


def render_analyses(analysis: AnalysisOutput) -> str:
    """Every analysis block of a run, blank-line separated ('' when there is none)."""
    return render_stored(analysis.calibration, analysis.benefit, analysis.failures)


def render_stored(
    calibration: dict[str, Any] | None,
    benefit: dict[str, Any] | None,
    failures: dict[str, Any] | None,
) -> str:
    """The same blocks from a run folder's files (``calibration.json``, ``benefit.json``,
    ``summary.json``'s ``analysis.failures``): what the page and ``summary.md`` show."""
    blocks = []
    if calibration is not None:
        blocks.append(render_calibration(calibration))
    if benefit is not None:
        blocks.append(render_benefit(benefit))
    counts = render_failure_counts(failures)
    if counts:
        blocks.append(counts)
    return "\n\n".join("\n".join(b) for b in blocks if b)
