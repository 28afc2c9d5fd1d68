"""A comparison as people read it: the terminal block, its Markdown twin, the runs table.

The numbers come from :mod:`evalframe.assess.compare`; this module only lays
them out. The terminal forms are tables fitted to 100 columns
(:mod:`evalframe.core.console`); the Markdown forms go into comparison.md.
"""

from __future__ import annotations

import math
from typing import Any

from evalframe.assess.compare import MARKS, Comparison, decided, verdict_of
from evalframe.core.console import WIDTH, Col, render, table

__all__ = ["render_comparison", "render_table"]


_INTERVALS = (
    "Intervals: that test inverted at the level the correction gave it; an interval "
    "excludes 0 exactly when its verdict is improved or regressed."
)


def _unbounded(comp: Comparison) -> str:
    """What an infinite interval end means, said only when one is printed.

    With n paired queries the sign-flip test cannot give a p below 2 / 2^n, so at
    the level a correction asks for it may reject no shift at all; the interval is
    then ``[-inf, +inf]``, which reads as a bug unless the report says why.
    """
    shown = [mc.interval for mc in comp.metrics]
    if comp.metrics:  # the lead metric's slices are printed with their intervals too
        shown += [i for group in comp.leading().interval_slices.values() for i in group.values()]
    if not any(math.isinf(i.low) or math.isinf(i.high) for i in shown):
        return ""
    return (
        " An infinite end (-inf, +inf): too few paired queries for the test to reject any "
        "shift at that level (with n queries its smallest p is 2 / 2^n)."
    )


def paired(comp: Comparison) -> str:
    """How many queries the comparison pairs: the queries both runs hold, or, when the
    metrics skip some of them (negative examples under ``no_relevant=skip``), how many
    each metric pairs, so the header agrees with the W/T/L counts below it."""
    scored = {mc.overall.n for mc in comp.metrics}
    if not scored or scored == {comp.n}:
        return f"{comp.n} paired queries"
    if len(scored) == 1:
        (n,) = scored
        # unscored in either run: a negative example both skip, or a query one run did
        # not answer (missing_query=skip), which is not "skipped by both"
        return f"{n} paired queries; {comp.n - n} more that one run or both did not score"
    return f"{comp.n} queries in both runs; each metric pairs those it scores"


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
    head = f"Comparison: {comp.b} vs {comp.a} ({paired(comp)})"
    how = " ".join(
        [
            *([comp.golden.note(comp.a, comp.b)] if comp.golden is not None else []),
            _columns(comp),
            f"Verdicts: {decided(comp.correction, comp.family, comp.alpha)}.",
            _INTERVALS + _unbounded(comp),
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
            f"| {comp.shown(mc.metric)} | {o.mean_a:.3f} | {o.mean_b:.3f} | {o.delta:+.3f} | "
            f"{mc.interval.text()} | {mc.p_adjusted:.3g} | {o.wins}/{o.ties}/{o.losses} | "
            f"{comp.verdict(mc)} |"
        )
    if comp.legend():
        lines += ["", f"({comp.legend()})"]
    first = comp.leading()
    for fname, groups in first.by_slice.items():
        lines += ["", f"### {comp.shown(first.metric)} by {fname}:"]
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
        lines += ["", f"### {title} ({comp.shown(first.metric)}):"]
        for r in rows:
            lines.append(
                f"- {r['query_id']}: {r['a']:.3f} → "
                f"{r['b']:.3f} ({r['delta']:+.3f}); expected {r['expected'][:5]}"
            )
            for side, ranked in ((comp.a, r["a_retrieved"]), (comp.b, r["b_retrieved"])):
                shown = "(rankings not stored)" if ranked is None else ranked
                lines.append(f"  {side}: {shown}")
    return "\n".join(lines)


def _columns(comp: Comparison) -> str:
    """Which run each column holds: the header names the candidate first, the tables
    the reference first."""
    return f"Columns: a is {comp.a} (the reference), b is {comp.b}; delta is b - a."


def _render_terminal(comp: Comparison, *, width: int, color: bool) -> str:
    """The comparison as text and tables that fit ``width`` columns."""
    from rich.text import Text

    parts: list[Any] = [
        Text(f"Comparison: {comp.b} vs {comp.a} ({paired(comp)})"),
        *([Text(comp.golden.note(comp.a, comp.b))] if comp.golden is not None else []),
        Text(_columns(comp)),
        Text(f"Verdicts: {decided(comp.correction, comp.family, comp.alpha)}."),
        Text(_INTERVALS + _unbounded(comp)),
        Text(""),
    ]
    rows = []
    for mc in comp.metrics:
        o, verdict = mc.overall, comp.verdict(mc)
        rows.append(
            [
                MARKS[verdict],
                comp.shown(mc.metric),
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
                # wraps: a long metric name (or label) folds onto a second line rather
                # than rich cutting the numbers and the verdict to fit the width
                Col("metric", "text"),
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
    legend = comp.legend()
    if legend:  # wrapped under its own text, as the run's report wraps it
        parts.append(_hanging(legend, 2, 6))
    first = comp.leading()
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
                title=f"{comp.shown(first.metric)} by {fname}:",
            ),
        ]
    for title, moved in (
        ("Top regressed", comp.top_regressed),
        ("Top improved", comp.top_improved),
    ):
        if not moved:
            continue
        parts += [Text(""), Text(f"{title} ({comp.shown(first.metric)}):")]
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


def render_table(
    result: dict[str, Any], *, markdown: bool = False, width: int = WIDTH, color: bool = False
) -> str:
    """One row per candidate, one column per metric: mean (delta, adjusted p) and a mark.

    In the terminal each cell takes two lines (the mean, then the delta and
    p), so a table of several metrics still fits ``width`` columns.
    """
    runs = result["runs"]
    metrics = list(next(iter(runs.values())))
    head = f"Runs against {result['reference']}. Verdicts: " + decided(
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
