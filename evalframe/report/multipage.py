"""The page comparing several runs: a sweep's jobs, or any run folders given to
``evalframe report A B ...``. It is drawn by the same plot and table code as the
run page; each run is labelled by the overrides that tell it apart.

Significance against the reference run (the first, or ``--baseline``) uses
:func:`evalframe.assess.compare.compare_many`: the family is every
(run, metric) cell of the table, so more runs raise each cell's bar.
"""

from __future__ import annotations

import csv
import io
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalframe.assess.gates import FAILED, PASSED, UNCHECKED, verdict_state
from evalframe.assess.runfolder import RunFolder
from evalframe.core.errors import ConfigError
from evalframe.report import plots
from evalframe.report.html import esc, figure, fmt, page, verdict_mark
from evalframe.report.model import RunView
from evalframe.report.plotdata import (
    Curves,
    headline_metrics,
    metric_curves,
    slice_bars,
)
from evalframe.report.runpage import label_clash, labelled_curve_titles

CORRECTIONS = {"holm": "Holm", "bh": "Benjamini-Hochberg"}

__all__ = ["MultiRun", "labels_for", "multi_csv", "multi_markdown", "render_multi_page"]


@dataclass
class MultiRun:
    """Several runs, their labels, the reference of the significance tests, the
    jobs of a sweep that left no result (label, why), and the metrics' display names."""

    views: list[RunView]
    labels: list[str]
    title: str
    reference: int = 0
    failed: list[tuple[str, str]] | None = None
    #: only what the runs' tracked files hold (``--stable``): no latency, which
    #: timings.json keeps, and no links to run pages, which may or may not be there;
    #: the same bytes on every machine, as a DVC output must be
    stable: bool = False
    #: the display name (``metrics.labels``) of each metric that has one, by canonical
    #: name: a sweep's, those its jobs share (``report.sweep.shared_labels``); the page
    #: names a metric by it wherever it names one, the canonical name beside it
    metric_labels: dict[str, str] | None = None


def labels_for(views: Sequence[RunView], shared: set[str] | None = None) -> list[str]:
    """Each run's label: the Hydra overrides that tell it apart from the others
    (those every run shares, such as ``+experiment=x``, are dropped; a run with
    none of its own is named by its folder), else its folder name
    (``parent/name`` where names repeat). ``shared``: the overrides every job of a
    sweep shares, the failed ones too, so that the one job left is still labelled
    by what sets it apart."""
    from evalframe.report.runpage import changes_no_number

    # where and how a run was shown (tracking=none, report.terminal=brief) sets no run apart
    overrides = [[o for o in v.overrides if not changes_no_number(o)] for v in views]
    if (len(views) > 1 or shared is not None) and all(overrides):
        if shared is None:
            shared = set.intersection(*(set(o) for o in overrides))
        labels = [
            " ".join(o for o in ov if o not in shared) or v.name  # nothing of its own: its folder
            for v, ov in zip(views, overrides, strict=True)
        ]
        if len(set(labels)) == len(labels):
            return labels
    names = [v.name for v in views]
    return [
        f"{v.path.parent.name}/{v.path.name}" if names.count(v.name) > 1 else v.name for v in views
    ]


def _significance(multi: MultiRun, metrics: list[str]) -> tuple[dict[str, Any] | None, str]:
    """compare_many of every run against the reference (None, and why, when the
    runs were scored on different golden sets or policies)."""
    from evalframe.assess.compare import check_comparable, compare_many

    if len(multi.views) < 2:
        return None, ""
    data = [
        RunFolder(v.path).data(label) for v, label in zip(multi.views, multi.labels, strict=True)
    ]
    reference = data[multi.reference]
    others = [d for i, d in enumerate(data) if i != multi.reference]
    try:
        for other in others:
            check_comparable(reference, other)
        cfg = multi.views[multi.reference].config.get("compare") or {}
        result = compare_many(
            reference,
            others,
            metrics=metrics,
            correction=str(cfg.get("correction", "holm")),
            alpha=float(cfg.get("alpha", 0.05)),
        )
    except ConfigError as exc:
        return None, f"No significance tests: {exc.message}."
    how = (
        f"Marks against <b>{esc(reference.name)}</b>: randomization test, p-values "
        f"{esc(CORRECTIONS.get(result['correction'], result['correction']))}"
        f"-adjusted over {result['family']} tests (every run × metric cell), alpha "
        f"{result['alpha']:g}: ▲ improved, ▼ regressed, ● within noise."
    )
    return result, how


def _link(view: RunView, out: Path | None) -> str:
    page_file = view.path / RunFolder.REPORT_HTML
    if not page_file.is_file():
        return esc(view.path.name)
    href = os.path.relpath(page_file, out) if out is not None else page_file.as_uri()
    return f'<a href="{esc(href)}">{esc(view.path.name)}</a>'


def _shown(views: Sequence[RunView], names: Sequence[str]) -> list[str]:
    """The runs' table's metrics: their headline sets (``summary.json``'s ``headline``,
    as the sweep's terminal table shows them) where every run has the metric, and the
    ✓/⚠/✗ criterion; runs from before the headline set, the first four measures."""
    criterion = views[0].rule.criterion if views else None
    listed: list[str] = []
    for v in views:
        headline = v.summary.get("headline")
        listed += [str(m) for m in headline or [] if str(m) in names and str(m) not in listed]
    if not listed:
        return headline_metrics(names, criterion, limit=4)
    if criterion and criterion in names and criterion not in listed:
        listed.append(criterion)
    return listed


def _metric_head(name: str, labels: dict[str, str]) -> str:
    """A metric's column head: its label with the canonical name beside it, as a run
    page's headline table has it (``Recall@1 (Hit@1)``), else the canonical name."""
    label = labels.get(name)
    if not label or label == name:
        return esc(name)
    return f'{esc(label)} <span class="muted">(<code>{esc(name)}</code>)</span>'


def _metric_named(name: str, labels: dict[str, str]) -> str:
    """A metric in a caption: ``Recall@1 (<code>Hit@1</code>)``, else ``<code>Hit@1</code>``
    (as ``querytable.labelled_html`` names it on a run's page)."""
    label = labels.get(name)
    code = f"<code>{esc(name)}</code>"
    return code if not label or label == name else f"{esc(label)} ({code})"


def render_multi_page(multi: MultiRun, out: Path | None = None) -> str:
    """The page: the runs' table (means, CIs, marks against the reference, gates),
    the metric@k curves, the per-slice bars and latency, all runs together. Metrics
    are named by ``multi.metric_labels`` where they have one, as each run's page does."""
    views, labels, named = multi.views, multi.labels, multi.metric_labels or {}
    names: list[str] = []
    for v in views:
        names += [
            m for m in v.metric_names if m not in names and all(m in w.metric_names for w in views)
        ]
    shown = _shown(views, names)
    result, how = _significance(multi, shown)
    states = [verdict_state(v.gates.get("gates") or []) for v in views]
    passed, unchecked = states.count(PASSED), states.count(UNCHECKED)
    failed_jobs = multi.failed or []
    if unchecked == len(views) and not failed_jobs:  # no run had a gate that could fail it
        banner_cls, symbol = "none", ""
        banner = f"{len(views)} run(s), none with a required gate: nothing was checked"
    else:
        banner_cls = "pass" if FAILED not in states and not failed_jobs else "fail"
        symbol = "✓ " if banner_cls == "pass" else "✗ "
        banner = f"{symbol}{passed} of {len(views)} run(s) passed every required gate"
        if unchecked:
            banner += f" ({unchecked} with none required: nothing checked)"
    if failed_jobs:
        banner += f"; {len(failed_jobs)} job(s) left no result"
    head = ["run", "folder", "queries", *(_metric_head(m, named) for m in shown), "gates"]
    rows = []
    for i, (v, label) in enumerate(zip(views, labels, strict=True)):
        overall = v.summary.get("overall") or {}
        cells = [
            f"<b>{esc(label)}</b>"
            + (
                " <span class='muted'>(reference)</span>" if i == multi.reference and result else ""
            ),
            esc(v.path.name) if multi.stable else _link(v, out),
            esc(v.summary.get("golden_set", {}).get("queries", len(v.records))),
        ]
        for m in shown:
            agg = overall.get(m) or {}
            ci = f"[{fmt(agg.get('ci_low'))}, {fmt(agg.get('ci_high'))}]"
            text = f"{fmt(agg.get('mean'))} <span class='muted'>{ci}</span>"
            cell = (result or {}).get("runs", {}).get(label, {}).get(m)
            if cell is not None:
                mark = verdict_mark(cell["verdict"], words=False)
                text += f"<br>{mark} {fmt(cell['delta'], signed=True)}"
            cells.append(text)
        gates = v.gates.get("gates") or []
        bad = [g.get("name", "?") for g in gates if g.get("required") and not g.get("passed")]
        cells.append(
            "none"
            if not gates
            else "none required"
            if verdict_state(gates) == UNCHECKED
            else (
                f"<span class='s-fail'>✗ failed: {esc(', '.join(bad))}</span>"
                if bad
                else "<span class='s-pass'>✓ passed</span>"
            )
        )
        rows.append(cells)
    for label, why in failed_jobs:
        rows.append(
            [
                f"<b>{esc(label)}</b>",
                f"<span class='s-fail'>✗ {esc(why)}</span>",
                "–",
                *["–"] * len(shown),
                "–",
            ]
        )
    parts = [
        f"<header><h1>evalframe · {esc(multi.title)}</h1>",
        f'<div class="verdict {banner_cls}">{esc(banner)}</div></header>',
        '<section id="runs"><h2>Runs</h2>',
        f"<p>{how}</p>" if how else "",
        '<table class="runs"><thead><tr>',
        *(f"<th>{h}</th>" for h in head),
        "</tr></thead><tbody>",
        *("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows),
        "</tbody></table>",
        "</section>",
    ]
    families = views[0].curve_families  # the first run's measures, headline first
    series: dict[str, Curves] = {
        label: metric_curves(v.records, v.policies, v.depth, families)
        for v, label in zip(views, labels, strict=True)
    }
    drawn = ", ".join(f"<code>{esc(name)}@k</code>" for name in families.values())
    # panels titled as a run's page titles them (Recall@k (Hit@k)); the caption keeps the
    # canonical names, and says when a label gives a curve's name to another metric
    titles = labelled_curve_titles(named, families)
    figs = [
        figure(
            plots.curves_svg(series, name="multi-curves", titles=titles),
            f"{drawn} at each k (the first run's measures, headline first), one line per run "
            "(each with its own marker and line style)." + label_clash(named, families),
            wide=True,
            ident="plot-curves",
        )
    ]
    lead = shown[0] if shown else None
    if lead is not None:
        bars = {label: slice_bars(v.summary, lead) for v, label in zip(views, labels, strict=True)}
        bars = {k: b for k, b in bars.items() if b}
        if bars:
            figs.append(
                figure(
                    plots.grouped_bars_svg(
                        bars,
                        f"mean {named.get(lead) or lead} (whisker: bootstrap CI)",
                        name="multi-slices",
                    ),
                    f"Per-slice means of {_metric_named(lead, named)}, one bar per run "
                    "(colour and hatch).",
                    wide=True,
                    ident="plot-slices",
                )
            )
    # as on a run's page: not a run file's lookups, nor a batch's one shared value
    lat = {label: v.measured_latency for v, label in zip(views, labels, strict=True)}
    lat_ok = {k: x for k, x in lat.items() if x is not None and not multi.stable}
    if lat_ok:
        figs.append(
            figure(
                plots.latency_runs_svg(lat_ok, name="multi-latency"),
                "p50 and p95 latency per run.",
                wide=True,
                ident="plot-latency",
            )
        )
    parts += ['<section id="plots"><h2>Plots</h2><div class="plots">', *figs, "</div></section>"]
    return page(f"evalframe · {multi.title}", "".join(parts))


def multi_markdown(multi: MultiRun) -> str:
    """The runs' table in Markdown (``report.md``)."""
    views, labels = multi.views, multi.labels
    names = [
        m
        for m in (views[0].metric_names if views else [])
        if all(m in v.metric_names for v in views)
    ]
    shown = _shown(views, names)
    lines = [f"# evalframe · {multi.title}", ""]
    lines.append("| run | golden set | queries | " + " | ".join(shown) + " | gates |")
    lines.append("|---" * (len(shown) + 4) + "|")
    for v, label in zip(views, labels, strict=True):
        golden = v.summary.get("golden_set") or {}
        overall = v.summary.get("overall") or {}
        gates = v.gates.get("gates") or []
        verdict = {PASSED: "passed", FAILED: "FAILED", UNCHECKED: "none required"}[
            verdict_state(gates)
        ]
        verdict = "none" if not gates else verdict
        lines.append(
            f"| {label} | {golden.get('name', '?')} ({golden.get('content_hash', '?')}) | "
            f"{golden.get('queries', '?')} | "
            + " | ".join(fmt((overall.get(m) or {}).get("mean")) for m in shown)
            + f" | {verdict} |"
        )
    for label, why in multi.failed or []:
        lines.append(f"| {label} | {why} | – | " + " | ".join("–" for _ in shown) + " | – |")
    return "\n".join(lines) + "\n"


def multi_csv(multi: MultiRun) -> dict[str, str]:
    """``recall_at_k.csv``, ``ndcg_at_k.csv`` (a row per k, a column per run) and
    ``slices.csv`` (a row per run and slice value), what ``dvc plots`` draws."""
    views, labels = multi.views, multi.labels
    curves = {
        label: metric_curves(v.records, v.policies, v.depth)
        for v, label in zip(views, labels, strict=True)
    }
    ks = sorted({k for c in curves.values() for k in c.ks})
    out: dict[str, str] = {}
    for family, filename in (("Recall", "recall_at_k.csv"), ("nDCG", "ndcg_at_k.csv")):
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(["k", *labels])
        for k in ks:
            row: list[Any] = [k]
            for label in labels:
                c = curves[label]
                value = c.values[family][c.ks.index(k)] if k in c.ks else math.nan
                row.append("" if math.isnan(value) else f"{value:.6f}")
            writer.writerow(row)
        out[filename] = buf.getvalue()
    names = [
        m
        for m in (views[0].metric_names if views else [])
        if all(m in v.metric_names for v in views)
    ]
    lead = headline_metrics(names, views[0].rule.criterion if views else None)[:1]
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["slice", "run", "field", "value", "mean"])
    for v, label in zip(views, labels, strict=True):
        for field, bars in (slice_bars(v.summary, lead[0]) if lead else {}).items():
            for bar in bars:
                if not math.isnan(bar.mean):
                    writer.writerow(
                        [f"{label} {field}={bar.label}", label, field, bar.label, f"{bar.mean:.6f}"]
                    )
    out["slices.csv"] = buf.getvalue()
    return out
