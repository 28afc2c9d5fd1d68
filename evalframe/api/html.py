"""What a notebook shows for a result or a comparison (``_repr_html_``).

A compact block rather than the whole page: the verdict, the headline metrics
with their intervals, the gates, and the report's two main plots (the metric
curves and the per-slice bars), drawn by the report's own functions from the
run folder, so they are the plots of ``report.html``. Its style is scoped to
the block (``.ef-repr``), so it never restyles the notebook around it.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from evalframe.report import plots
from evalframe.report.drift import DeltaRow
from evalframe.report.html import esc, fmt, verdict_mark
from evalframe.report.model import RunView
from evalframe.report.plotdata import headline_metrics, metric_curves, slice_bars
from evalframe.report.runpage import gates_list, headline_table, verdict_banner

__all__ = ["ComparisonView", "comparison_html", "result_html"]


class ComparisonView(Protocol):
    """What the comparison's block reads (``evalframe.api.comparison.Comparison``)."""

    reference: str
    systems: list[str]
    metrics: list[str]
    correction: str
    rows: list[dict[str, Any]]
    cells: dict[str, dict[str, dict[str, Any]]]
    text: str

    @property
    def decided_by(self) -> str: ...


#: The report's look, limited to the block (Okabe-Ito colours; every mark also has a shape).
STYLE = """
.ef-repr{font:13px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1a1a1a}
.ef-repr h3{font-size:1.1em;margin:.3em 0}
.ef-repr .muted{color:#666}.ef-repr code{font:12px ui-monospace,Menlo,Consolas,monospace}
.ef-repr .verdict{display:inline-block;font-weight:600;padding:.25em .7em;border-radius:4px;
 margin:.3em 0;border:2px solid}
.ef-repr .verdict.pass{color:#0072B2;border-color:#0072B2}
.ef-repr .verdict.fail{color:#D55E00;border-color:#D55E00}
.ef-repr table{border-collapse:collapse;margin:.4em 0}
.ef-repr th,.ef-repr td{border-bottom:1px solid #d8d8d8;padding:.22em .6em;text-align:left;
 vertical-align:top}
.ef-repr th{background:#f5f6f8;font-weight:600}
.ef-repr td.num,.ef-repr th.num{text-align:right;font-variant-numeric:tabular-nums}
.ef-repr ul.gates{list-style:none;padding:0;margin:.3em 0}.ef-repr ul.gates li{margin:.15em 0}
.ef-repr .s-pass,.ef-repr .v-improved{color:#0072B2}.ef-repr .s-warn{color:#9a6a00}
.ef-repr .s-fail,.ef-repr .v-regressed{color:#D55E00}.ef-repr .s-neg,.ef-repr .v-noise{color:#666}
.ef-repr .mark{font-weight:700;display:inline-block;min-width:1.1em}
.ef-repr .plots{display:flex;flex-wrap:wrap;gap:.5em 1.5em}
.ef-repr figure{margin:.3em 0;flex:1 1 100%}.ef-repr figure svg{max-width:100%;height:auto}
.ef-repr figcaption{font-size:.85em;color:#444}
.ef-repr .wide{overflow-x:auto}.ef-repr td.ef-cell{white-space:nowrap}
.ef-repr .small{font-size:.88em}
"""


def _salt(text: str) -> str:
    """A short token for this block's plot ids: two outputs in one notebook never share one."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


def _figure(svg: str, caption: str) -> str:
    return f"<figure>{svg}<figcaption>{caption}</figcaption></figure>"


def result_html(path: Path, report_path: Path | None = None) -> str:
    """The block for the run in ``path`` (see the module docstring)."""
    view = RunView.load(path)
    salt = _salt(str(path))
    summary: Mapping[str, Any] = view.summary
    golden = summary.get("golden_set") or {}
    facts = (
        f"{esc(golden.get('queries', len(view.records)))} queries "
        f"({esc(golden.get('negatives', 0))} negative) · retriever "
        f"<b>{esc(summary.get('retriever', '?'))}</b> · depth "
        f"{esc(summary.get('depth', '?'))} · <code>{esc(path)}</code>"
    )
    parts = [
        f'<div class="ef-repr"><style>{STYLE}</style>',
        f"<h3>evalframe · {esc(view.experiment)}</h3>",
        verdict_banner(view.gates),
        f'<div class="muted">{facts}</div>',
        # with a baseline, its value, the delta, the corrected interval and the verdict
        headline_table(view, view.comparison if "metrics" in (view.comparison or {}) else None),
    ]
    if view.gates.get("gates"):
        parts.append(gates_list(view.gates))
    figures = [
        _figure(
            plots.curves_svg(
                {"this run": metric_curves(view.records, view.policies, view.depth)},
                name=f"{salt}-curves",
            ),
            "Recall, precision and nDCG at each cutoff k (the report's curves).",
        )
    ]
    # one metric (the status criterion): a compact block; the page draws three
    chosen = headline_metrics(view.metric_names, view.rule.criterion, limit=1)
    bars = {m: b for m in chosen if (b := slice_bars(view.summary, m))}
    if bars:
        figures.append(
            _figure(
                plots.grouped_bars_svg(bars, "mean (whisker: bootstrap CI)", name=f"{salt}-slices"),
                "Per-slice means of "
                + ", ".join(f"<code>{esc(m)}</code>" for m in bars)
                + " with their bootstrap confidence intervals.",
            )
        )
    parts.append('<div class="plots">' + "".join(figures) + "</div>")
    if report_path is not None:
        parts.append(
            '<div class="muted">The whole report, with every query: '
            f"<code>{esc(report_path)}</code></div>"
        )
    parts.append("</div>")
    return "".join(parts)


def comparison_html(comp: ComparisonView) -> str:
    """The block for a comparison: the table (means, deltas, corrected p, verdicts) and
    the deltas with their corrected intervals."""
    head = ["system", *comp.metrics]
    rows = []
    first = comp.rows[0]
    rows.append(
        f"<tr><td><b>{esc(first['name'])}</b> <span class='muted'>(reference)</span></td>"
        + "".join(f'<td class="num">{fmt(first[m])}</td>' for m in comp.metrics)
        + "</tr>"
    )
    for row in comp.rows[1:]:
        cells = []
        for m in comp.metrics:
            p = row[f"{m} p-value ({comp.correction})"]
            cells.append(
                f'<td class="num ef-cell">{fmt(row[m])}<br><span class="muted small">'
                f"Δ {fmt(row[f'{m} Δ'], signed=True)} · p {'–' if math.isnan(p) else f'{p:.2g}'}"
                f"</span><br>{verdict_mark(row[f'{m} verdict'])}</td>"
            )
        rows.append(f"<tr><td><b>{esc(row['name'])}</b></td>{''.join(cells)}</tr>")
    ths = "".join(f'<th class="{"num" if i else ""}">{esc(h)}</th>' for i, h in enumerate(head))
    deltas = [
        DeltaRow(
            field=system,
            value=metric,
            n=int(cell.get("n") or 0),
            before=float(cell["reference_mean"]),
            after=float(cell["mean"]),
            delta=float(cell["delta"]),
            low=_num(cell.get("interval_low")),
            high=_num(cell.get("interval_high")),
            level=_num(cell.get("interval_level")),
            p_adjusted=_num(cell.get("p_adjusted")),
            verdict=str(cell.get("verdict") or "within noise"),
        )
        for system, by_metric in comp.cells.items()
        for metric, cell in by_metric.items()
    ]
    several = len(comp.cells) > 1
    svg = plots.deltas_svg(
        deltas,
        "",
        name=f"{_salt(comp.text)}-deltas",
        labels=[f"{r.field} · {r.value}" if several else r.value for r in deltas],
        xlabel=f"Δ against {comp.reference} (candidate − reference), corrected interval",
    )
    return (
        f'<div class="ef-repr"><style>{STYLE}</style>'
        f"<h3>evalframe · {len(comp.systems)} run(s) against {esc(comp.reference)}</h3>"
        f'<div class="muted">Verdicts: {esc(comp.decided_by)}.</div>'
        f'<div class="wide"><table><thead><tr>{ths}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
        + _figure(
            svg,
            ("Each candidate's" if several else f"{esc(comp.systems[0])}'s")
            + " change of each metric against the reference: ▲ improved, "
            "▼ regressed, ● within noise; the line is the interval at the level the "
            "correction gave that test.",
        )
        + "</div>"
    )


def _num(value: object) -> float:
    return math.nan if value is None else float(value)  # type: ignore[arg-type]
