"""The run page (``report.html`` in every run folder): what ran, the verdict, the
headline metrics with their intervals, the plots, the drift view against a
baseline, and the per-query table with a drill-down into each query.

Built from a :class:`~evalframe.report.model.RunView` alone (plus the baseline's
view and document texts when there are any), so ``evalframe report RUN`` draws
the same page the run drew.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalframe.assess.gates import UNCHECKED, verdict_state
from evalframe.assess.runfolder import FAIL, PASS, WARN
from evalframe.report import plots
from evalframe.report.analyses import render_stored
from evalframe.report.drift import delta_rows
from evalframe.report.driftview import drift_section
from evalframe.report.html import esc, figure, fmt, interval, mark, page, verdict_mark
from evalframe.report.model import BaselineView, DocTexts, RunView
from evalframe.report.plotdata import (
    calibration_reliability,
    headline_metrics,
    metric_curves,
    reliability,
    score_histogram,
    slice_bars,
)
from evalframe.report.querytable import equal_note, labelled_html, queries_section

__all__ = ["render_run_page"]

# -- header -----------------------------------------------------------------------


def _settings(node: Any) -> str:
    if not isinstance(node, Mapping):
        return ""
    items = [f"{k}={v}" for k, v in node.items() if k != "name" and not isinstance(v, dict)]
    return ", ".join(items)


def _retrieved(retrieved: Mapping[str, Any]) -> str:
    """When and from which commit a rescored run's rankings were retrieved."""
    git = retrieved.get("git")
    at = ""
    if isinstance(git, dict) and git.get("sha"):
        at = f", git {str(git['sha'])[:12]}"
        at += " (with uncommitted changes)" if git.get("dirty") else ""
    return (
        f"{retrieved.get('created') or 'date not recorded'}{at}: this folder re-scores "
        "those rankings (evalframe rescore); git and date above are the scoring's"
    )


def _analyses_sources(folder: Path) -> str:
    """The files the analyses' lines come from, those of them the run wrote: ``summary.json``'s
    ``analysis``, and ``calibration.json`` and ``benefit.json`` when present."""
    names = [
        f"<code>{n}</code>" for n in ("calibration.json", "benefit.json") if (folder / n).is_file()
    ]
    last = "<code>summary.json</code>'s <code>analysis</code>"
    return f"{', '.join(names)} and {last}" if names else last


def facts(view: RunView, baseline: BaselineView | None) -> list[tuple[str, str]]:
    """The header's "what ran" list, as (label, HTML)."""
    s = view.summary
    golden = s.get("golden_set") or {}
    out = [("experiment", esc(view.experiment))]
    retriever = view.config.get("retriever") or {}
    name = s.get("retriever") or (retriever.get("name") if isinstance(retriever, dict) else "?")
    settings = _settings(retriever)
    out.append(
        (
            "retriever",
            f"<b>{esc(name)}</b>" + (f" <code>{esc(settings)}</code>" if settings else ""),
        )
    )
    golden_text = (
        f"<b>{esc(golden.get('name', '?'))}</b> <code>{esc(golden.get('content_hash', '?'))}</code>"
        f" · {esc(golden.get('queries', len(view.records)))} queries"
        f" ({esc(golden.get('negatives', 0))} negative)"
    )
    if golden.get("dvc_md5"):
        golden_text += f" · DVC md5 <code>{esc(str(golden['dvc_md5'])[:12])}</code>"
    path = (golden.get("provenance") or {}).get("path")
    if path:
        golden_text += f' <span class="muted">{esc(path)}</span>'
    out.append(("golden set", golden_text))
    corpus = s.get("corpus")
    if isinstance(corpus, dict):
        out.append(
            (
                "corpus",
                f"<b>{esc(corpus.get('name', '?'))}</b> <code>{esc(corpus.get('content_hash'))}"
                f"</code> · {esc(corpus.get('documents', '?'))} documents",
            )
        )
    else:
        out.append(("corpus", '<span class="muted">none (the retriever brings its own)</span>'))
    git = s.get("git")
    if isinstance(git, dict) and git.get("sha"):
        out.append(
            (
                "git",
                f"<code>{esc(str(git['sha'])[:12])}</code>"
                + (" (with uncommitted changes)" if git.get("dirty") else ""),
            )
        )
    else:
        out.append(("git", '<span class="muted">not recorded (not run inside a repository)</span>'))
    out.append(("date", esc(s.get("created") or "not recorded")))
    retrieved = s.get("retrieved")
    if isinstance(retrieved, dict):  # a rescore: the rankings are older than the scoring
        out.append(("retrieved", esc(_retrieved(retrieved))))
    pol = s.get("policies") or {}
    ties = s.get("ties") or {}
    rule = (
        f"ties: {pol.get('ties', '?')}, negatives: {pol.get('no_relevant', '?')}, "
        f"missing queries: {pol.get('missing_query', '?')}"
    )
    if ties.get("queries"):
        rule += (
            f" ({ties['queries']} of {ties.get('ranked', '?')} rankings had a tie in the top "
            f"{ties.get('k', '?')})"
        )
    out.append(("policies", esc(rule)))
    out.append(("depth", esc(s.get("depth", "?"))))
    if baseline is not None:
        out.append(
            (
                "baseline",
                f"<b>{esc(baseline.name)}</b> <span class='muted'>{esc(baseline.path)}</span>",
            )
        )
    # where the run was reported (tracking=..., which EVALFRAME_TRACKING also sets) changes
    # no number: left out here as it is from config.yaml, so a tracked and an untracked
    # run of the same inputs read the same
    shown = [o for o in view.overrides if not changes_no_number(o)]
    if shown:
        out.append(("overrides", f"<code>{esc(' '.join(shown))}</code>"))
    return out


#: Overrides that change where or how a run is shown, never a number of it: the
#: tracker (which ``EVALFRAME_TRACKING`` also sets), the terminal report's form, the
#: page, the folders. A run's page and a page of several runs leave them out.
_NO_NUMBER = ("tracking", "report.terminal", "report.html", "output", "hydra")


def changes_no_number(override: str) -> bool:
    """Whether a Hydra override is one of :data:`_NO_NUMBER` (``tracking=none``,
    ``tracking.uri=...``, ``report.terminal=brief``, with or without ``+``/``~``)."""
    key = override.lstrip("+~").partition("=")[0]
    return any(key == k or key.startswith(f"{k}.") for k in _NO_NUMBER)


def verdict_banner(gates: Mapping[str, Any]) -> str:
    entries = gates.get("gates") or []
    failed = [g.get("name", "?") for g in entries if g.get("required") and not g.get("passed")]
    advisory = [
        g.get("name", "?") for g in entries if not g.get("required") and not g.get("passed")
    ]
    if failed:
        text = f"✗ FAILED: required gate(s) failed: {', '.join(failed)}"
        cls = "fail"
    elif entries and verdict_state(entries) == UNCHECKED:
        # advisory gates only: exit 0, but nothing that could fail the run was checked
        text = (
            f"PASSED: no required gate, so nothing that could fail the run was checked "
            f"({len(entries)} advisory)"
        )
        cls = "none"
    elif entries:
        required = sum(1 for g in entries if g.get("required"))
        advisory_count = len(entries) - required
        text = (
            f"✓ PASSED: every required gate passed ({required} required, {advisory_count} advisory)"
        )
        cls = "pass"
    else:
        # exit 0, but no verdict: shown apart from a run whose gates passed
        text, cls = "PASSED: no gates configured, so nothing was checked", "none"
    if advisory:
        text += f"; advisory gate(s) missed: {', '.join(advisory)}"
    warnings = [str(w) for w in gates.get("warnings") or []]
    if not warnings:
        return f'<div class="verdict {cls}" id="verdict">{esc(text)}</div>'
    # a verdict on unconfirmed labels or drifted code says so where it is read
    text += f" (provisional: {len(warnings)} warning(s) below)"
    items = "".join(f"<li>{mark(WARN)} {esc(w)}</li>" for w in warnings)
    return (
        f'<div class="verdict {cls}" id="verdict">{esc(text)}'
        f'<ul class="verdict-warnings">{items}</ul></div>'
    )


def gates_list(gates: Mapping[str, Any]) -> str:
    entries = gates.get("gates") or []
    if not entries:
        return '<p class="muted">No gates configured.</p>'
    items = []
    for g in entries:
        status = PASS if g.get("passed") else (FAIL if g.get("required") else WARN)
        word = "passed" if g.get("passed") else "failed"
        extra = "" if g.get("required") else " (advisory)"
        body = (
            f"{mark(status)} <b>{esc(g.get('name'))}</b>{esc(extra)} {word}: "
            f"{esc(g.get('message', ''))}"
        )
        failures = g.get("failures") or []
        if failures:  # one a line: "5004: RR 1.000 → 0.250" run together read as one
            listed = "".join(f"<li>{esc(str(f))}</li>" for f in failures[:10])
            if len(failures) > 10:
                listed += f"<li>… {len(failures) - 10} more in gates.json</li>"
            body += f'<ul class="failing muted">{listed}</ul>'
        for hint in g.get("hints") or []:
            body += f'<br><span class="muted">hint: {esc(hint)}</span>'
        items.append(f"<li>{body}</li>")
    return '<ul class="gates">' + "".join(items) + "</ul>"


def _headline_note(view: RunView) -> str:
    """Which rows are the headline set, when it is not every metric."""
    names, first = view.metric_names, view.summary.get("headline") or []
    shown = [str(n) for n in first if str(n) in names]
    if not shown or len(shown) == len(names):
        return ""
    return (
        f'<p class="muted">The headline set first ({esc(", ".join(view.label(n) for n in shown))}'
        ": <code>metrics.headline</code>, what trackers log and <code>runs</code> and "
        "<code>compare</code> show), then every other metric the run computed.</p>"
    )


def headline_table(view: RunView, comparison: Mapping[str, Any] | None) -> str:
    """Metric, mean, CI, n, skipped; with a baseline its value, the delta, the corrected
    interval, the adjusted p and the verdict (the comparison's numbers)."""
    overall = view.summary.get("overall") or {}
    level = float((view.config.get("stats") or {}).get("confidence", 0.95))
    by_metric = {r.value: r for r in delta_rows(comparison)} if comparison else {}
    head = [("metric", ""), ("mean", "num"), (f"{level:.0%} CI", "num"), ("n", "num")]
    head.append(("skipped", "num"))
    if comparison:
        head += [("baseline", "num"), ("Δ", "num"), ("corrected interval", "num")]
        head += [("p (adj.)", "num"), ("verdict", "")]
    rows = []
    labels = view.summary.get("labels") or {}  # metrics.labels: the harness's own names
    names = view.metric_names
    # the headline set first (metrics.headline: what trackers log, `runs` and `compare`
    # show), then the rest in the run's order: Galaxy's twelve began with its @1 three
    first = [str(n) for n in view.summary.get("headline") or [] if str(n) in names]
    for name in [*first, *(n for n in names if n not in first)]:
        agg = overall.get(name) or {}
        shown = f"<code>{esc(name)}</code>"
        if isinstance(labels.get(name), str):
            shown = f'{esc(labels[name])} <span class="muted">({shown})</span>'
        cells = [
            f"<td>{shown}</td>",
            f'<td class="num">{fmt(agg.get("mean"))}</td>',
            f'<td class="num">[{fmt(agg.get("ci_low"))}, {fmt(agg.get("ci_high"))}]</td>',
            f'<td class="num">{esc(agg.get("n", "–"))}</td>',
            f'<td class="num">{esc(agg.get("skipped", 0))}</td>',
        ]
        row = by_metric.get(name)
        if comparison and row is None:
            cells += ["<td>–</td>"] * 5
        elif row is not None:
            cells += [
                f'<td class="num">{fmt(row.before)}</td>',
                f'<td class="num">{fmt(row.delta, signed=True)}</td>',
                f'<td class="num">{interval(row)}</td>',
                f'<td class="num">{fmt(row.p_adjusted)}</td>',
                f"<td>{verdict_mark(row.verdict)}</td>",
            ]
        rows.append("<tr>" + "".join(cells) + "</tr>")
    ths = "".join(f'<th class="{cls}">{esc(h)}</th>' for h, cls in head)
    return (
        f'<table class="headline" id="headline"><thead><tr>{ths}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


# -- plots ------------------------------------------------------------------------


#: What a harness's label names, by its first word: the curve family it reads as.
_LABEL_FAMILIES = {"recall": "R", "precision": "P", "ndcg": "nDCG"}


def label_clash(labels: Mapping[str, Any], families: dict[str, str]) -> str:
    """A note when the experiment's labels give a drawn curve's name to another metric
    (ADK calls Hit@5 "Recall@5"): the curves are evalframe's, and must not be read as those.
    ``labels``: a run's (its ``summary.json``), or those a sweep's jobs share."""
    drawn = set(families.values())
    clashes = []
    for canonical, label in labels.items():
        family = _LABEL_FAMILIES.get(str(label).split("@")[0].strip().casefold())
        if family is None or family not in drawn:
            continue
        if str(canonical).split("@")[0].split("(")[0] != family:
            clashes.append(f"<code>{esc(canonical)}</code> {esc(repr(label))}")
    if not clashes:
        return ""
    return (
        " This experiment's labels (<code>metrics.labels</code>) call "
        + ", ".join(clashes)
        + ": the curves are evalframe's metrics of the names above, not those."
    )


def curve_titles(view: RunView, families: dict[str, str]) -> dict[str, str]:
    """Each curve's panel title on the run's page (:func:`labelled_curve_titles`)."""
    return labelled_curve_titles(view.summary.get("labels") or {}, families)


def labelled_curve_titles(labels: Mapping[str, Any], families: dict[str, str]) -> dict[str, str]:
    """Each curve's panel title: ``R@k``, or with ``metrics.labels`` that name the family's
    metrics alike (ADK's Hit@1 "Recall@1", Hit@5 "Recall@5"), ``Recall@k (Hit@k)``.
    ``labels``: a run's (its ``summary.json``), or those a sweep's jobs share."""
    out = {}
    for key, name in families.items():
        said = {  # "Recall" of Hit@5's "Recall@5"; "MRR" of RR's "MRR" (no cutoff)
            str(label).split("@")[0].strip()
            for canonical, label in labels.items()
            if str(canonical).split("@")[0] == name
            and ("@" in str(label)) == ("@" in str(canonical))
        }
        title = f"{name}@k"
        if len(said) == 1 and said != {name}:
            title = f"{said.pop()}@k ({title})"
        out[key] = title
    return out


def _curves_caption(families: dict[str, str]) -> str:
    names = [f"<code>{esc(name)}@k</code>" for name in families.values()]
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return (
        f"{listed} at each cutoff k up to the run's depth: the run's own measures (headline "
        "first), scored by the metric engine under the run's policies, so each point equals "
        "the metric of that canonical name, as <code>metrics.json</code> would hold it."
    )


def plots_section(view: RunView, baseline: BaselineView | None = None) -> str:
    parts = []
    families = view.curve_families
    series = {"this run": metric_curves(view.records, view.policies, view.depth, families)}
    against = ""
    if (
        baseline is not None
        and baseline.records
        and all(r.get("retrieved") is not None for r in baseline.records)
    ):
        series[f"baseline {baseline.name}"] = metric_curves(
            baseline.records, view.policies, view.depth, families
        )
        against = " The baseline's curves are drawn beside this run's."
    parts.append(
        figure(
            plots.curves_svg(series, name="curves", titles=curve_titles(view, families)),
            _curves_caption(families)
            + label_clash(view.summary.get("labels") or {}, families)
            + against,
            wide=True,
            ident="plot-curves",
        )
    )
    chosen = headline_metrics(view.leading_metrics, view.rule.criterion, records=view.records)
    bars = {m: slice_bars(view.summary, m) for m in chosen}
    bars = {m: b for m, b in bars.items() if b}
    if bars:
        equal = equal_note(view, "their bars are")
        parts.append(
            figure(
                # the legend by metrics.labels' names, as the headline table shows them
                plots.grouped_bars_svg(
                    {view.label(m): b for m, b in bars.items()},
                    "mean (whisker: bootstrap CI)",
                    name="slices",
                ),
                "Per-slice means of "
                + ", ".join(labelled_html(view, m) for m in bars)
                + " with their bootstrap confidence intervals; n is the number of the slice's "
                "queries scored (the terminal's slice tables count all of them, a query a "
                "policy skips too, and give a mean over fewer its n in brackets)." + equal,
                wide=True,
                ident="plot-slices",
            )
        )
    hist = score_histogram(view.records)
    if hist is not None:
        parts.append(
            figure(
                plots.scores_svg(hist),
                "Scores of every retrieved document: judged relevant (solid outline, "
                "hatched) against the rest (dashed outline). Overlap means the scores alone "
                "do not separate them.",
                ident="plot-scores",
            )
        )
    lat = view.measured_latency  # none for a run file, or one value for every query
    if lat is not None:
        parts.append(
            figure(
                plots.latency_svg(lat),
                f"Latency per query: p50 {lat.p50:.1f} ms (dashed), p95 {lat.p95:.1f} ms (dotted).",
                ident="plot-latency",
            )
        )
    analysed = calibration_reliability(view.calibration)
    rel = analysed or reliability(view.records)
    if rel is not None:
        what = (
            "the calibration analysis's bins (<code>calibration.json</code>: its outcome, "
            "binning and simultaneous intervals)"
            if analysed is not None
            else "the share of queries marked ✓ per confidence bin"
        )
        parts.append(
            figure(
                plots.reliability_svg(rel),
                f"Reliability of the confidence the system stated: {what}, against the "
                f"diagonal; ECE {rel.ece:.3f}.",
                ident="plot-reliability",
            )
        )
    return '<div class="plots">' + "".join(parts) + "</div>"


def notes_box(view: RunView) -> str:
    """The terminal's notes and warnings on this run (``RunView.notes``), in one box."""
    notes = view.notes
    if not notes:
        return ""
    items = "".join(f"<li>{esc(n)}</li>" for n in notes)
    return f'<div class="note run-notes"><b>Notes on this run</b><ul>{items}</ul></div>'


def render_run_page(
    view: RunView, baseline: BaselineView | None = None, texts: DocTexts | None = None
) -> str:
    """The whole run page."""
    description = (view.config.get("description") or "").strip()
    nav = ['<a href="#metrics">metrics</a>', '<a href="#plots">plots</a>']
    if baseline is not None:
        nav.append('<a href="#drift">drift</a>')
    analyses = analyses_text(view)
    if analyses:
        nav.append('<a href="#analyses">analyses</a>')
    nav.append('<a href="#queries">queries</a>')
    dl = "".join(f"<dt>{esc(k)}</dt><dd>{v}</dd>" for k, v in facts(view, baseline))
    body = [
        f"<header><h1>evalframe · {esc(view.experiment)}</h1>",
        f'<p class="desc">{esc(description)}</p>' if description else "",
        verdict_banner(view.gates),
        f'<dl class="facts">{dl}</dl>',
        notes_box(view),
        f"<nav>{' '.join(nav)}</nav></header>",
        '<section id="metrics"><h2>Metrics</h2>',
        _headline_note(view),
        headline_table(view, baseline.comparison if baseline is not None else None),
        "<h3>Gates</h3>",
        gates_list(view.gates),
        "</section>",
        '<section id="plots"><h2>Plots</h2>',
        plots_section(view, baseline),
        "</section>",
    ]
    if baseline is not None:
        body += [
            '<section id="drift"><h2>Drift against the baseline</h2>',
            drift_section(view, baseline),
            "</section>",
        ]
    if analyses:
        # the terminal's own lines, from the same files: one text on both surfaces
        body += [
            '<section id="analyses"><h2>Analyses</h2>',
            '<p class="muted">As the terminal printed them, from '
            + _analyses_sources(view.path)
            + " (docs/analyses.md says how each is computed).</p>",
            f'<pre class="analyses">{esc(analyses)}</pre>',
            "</section>",
        ]
    body += ['<section id="queries"><h2>Queries</h2>', queries_section(view, texts), "</section>"]
    return page(f"evalframe · {view.experiment}", "".join(body))


def analyses_text(view: RunView) -> str:
    """The run's analyses as the terminal prints them: calibration (with its
    answer-correctness routing figure), the A/B benefit table and the failure
    categories' counts; '' when the run has none."""
    failures = (view.summary.get("analysis") or {}).get("failures")
    return render_stored(view.calibration, view.benefit, failures)
