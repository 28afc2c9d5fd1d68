"""The run page (``report.html`` in every run folder): what ran, the verdict, the
headline metrics with their intervals, the plots, the drift view against a
baseline, and the per-query table with a drill-down into each query.

Built from a :class:`~evalframe.report.model.RunView` alone (plus the baseline's
view and document texts when there are any), so ``evalframe report RUN`` draws
the same page the run drew.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from evalframe.assess.runfolder import FAIL, NEGATIVE, PASS, WARN
from evalframe.report import plots
from evalframe.report.drift import (
    CorpusDiff,
    DeltaRow,
    QueryDrift,
    RankedDoc,
    StatusChange,
    corpus_diff,
    delta_rows,
    query_drifts,
    status_changes,
)
from evalframe.report.html import esc, fmt, page, table
from evalframe.report.model import BaselineView, DocTexts, RunView
from evalframe.report.plotdata import (
    headline_metrics,
    latency_data,
    metric_curves,
    number,
    reliability,
    score_histogram,
    slice_bars,
)

__all__ = ["STATUS_CLASS", "VERDICT_CLASS", "render_run_page"]

STATUS_CLASS = {PASS: "s-pass", WARN: "s-warn", FAIL: "s-fail", NEGATIVE: "s-neg"}
STATUS_WORD = {PASS: "pass", WARN: "in between", FAIL: "fail", NEGATIVE: "negative example"}
VERDICT_CLASS = {"improved": "v-improved", "regressed": "v-regressed", "within noise": "v-noise"}
#: Drift queries shown with both rankings; the rest are listed by id.
MAX_DRIFT_QUERIES = 40
#: Above this many characters of document text the drill-down leaves text out.
TEXT_BUDGET = 2_000_000
#: A document's text is previewed on one or two lines, the rest up to SNIPPET on demand.
PREVIEW = 160
SNIPPET = 1500


def mark(status: str) -> str:
    return (
        f'<span class="mark {STATUS_CLASS.get(status, "")}" '
        f'title="{esc(STATUS_WORD.get(status, status))}">{esc(status)}</span>'
    )


def interval(row: DeltaRow) -> str:
    """The corrected interval and its level, as ``evalframe compare`` prints it."""
    if math.isnan(row.low) or math.isnan(row.level):
        return "–"
    level = f"{100 * row.level:.4g}%"
    return f"[{fmt(row.low, signed=True)}, {fmt(row.high, signed=True)}] at {level}"


def verdict_mark(verdict: str) -> str:
    symbol = plots.VERDICT_MARKS.get(verdict, plots.VERDICT_MARKS["within noise"])[2]
    return f'<span class="{VERDICT_CLASS.get(verdict, "")}">{symbol} {esc(verdict)}</span>'


# -- header -----------------------------------------------------------------------


def _settings(node: Any) -> str:
    if not isinstance(node, Mapping):
        return ""
    items = [f"{k}={v}" for k, v in node.items() if k != "name" and not isinstance(v, dict)]
    return ", ".join(items)


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
    if view.overrides:
        out.append(("overrides", f"<code>{esc(' '.join(view.overrides))}</code>"))
    return out


def verdict_banner(gates: Mapping[str, Any]) -> str:
    entries = gates.get("gates") or []
    failed = [g.get("name", "?") for g in entries if g.get("required") and not g.get("passed")]
    advisory = [
        g.get("name", "?") for g in entries if not g.get("required") and not g.get("passed")
    ]
    if failed:
        text = f"✗ FAILED: required gate(s) failed: {', '.join(failed)}"
        cls = "fail"
    elif entries:
        required = sum(1 for g in entries if g.get("required"))
        advisory_count = len(entries) - required
        text = (
            f"✓ PASSED: every required gate passed ({required} required, {advisory_count} advisory)"
        )
        cls = "pass"
    else:
        text, cls = "✓ PASSED: no gates configured", "pass"
    if advisory:
        text += f"; advisory gate(s) missed: {', '.join(advisory)}"
    return f'<div class="verdict {cls}" id="verdict">{esc(text)}</div>'


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
        if failures:
            shown = ", ".join(str(f) for f in failures[:10])
            more = " …" if len(failures) > 10 else ""
            body += f'<br><span class="muted">failing: {esc(shown)}{more}</span>'
        for hint in g.get("hints") or []:
            body += f'<br><span class="muted">hint: {esc(hint)}</span>'
        items.append(f"<li>{body}</li>")
    return '<ul class="gates">' + "".join(items) + "</ul>"


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
    for name in view.metric_names:
        agg = overall.get(name) or {}
        cells = [
            f"<td><code>{esc(name)}</code></td>",
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


def figure(svg: str, caption: str, wide: bool = False, ident: str = "") -> str:
    attrs = f' id="{esc(ident)}"' if ident else ""
    cls = ' class="wide"' if wide else ""
    return f"<figure{cls}{attrs}>{svg}<figcaption>{caption}</figcaption></figure>"


def plots_section(view: RunView, baseline: BaselineView | None = None) -> str:
    parts = []
    series = {"this run": metric_curves(view.records, view.policies, view.depth)}
    against = ""
    if (
        baseline is not None
        and baseline.records
        and all(r.get("retrieved") is not None for r in baseline.records)
    ):
        series[f"baseline {baseline.name}"] = metric_curves(
            baseline.records, view.policies, view.depth
        )
        against = " The baseline's curves are drawn beside this run's."
    parts.append(
        figure(
            plots.curves_svg(series, name="curves"),
            "Recall, precision and nDCG at each cutoff k up to the run's depth, scored by the "
            "metric engine under the run's policies (so each point equals the metric of that "
            "name in <code>metrics.json</code>)." + against,
            wide=True,
            ident="plot-curves",
        )
    )
    chosen = headline_metrics(view.metric_names, view.rule.criterion)
    bars = {m: slice_bars(view.summary, m) for m in chosen}
    bars = {m: b for m, b in bars.items() if b}
    if bars:
        parts.append(
            figure(
                plots.grouped_bars_svg(bars, "mean (whisker: bootstrap CI)", name="slices"),
                "Per-slice means of "
                + ", ".join(f"<code>{esc(m)}</code>" for m in bars)
                + " with their bootstrap confidence intervals; n is the slice's query count.",
                wide=True,
                ident="plot-slices",
            )
        )
    hist = score_histogram(view.records)
    if hist is not None:
        parts.append(
            figure(
                plots.scores_svg(hist),
                "Scores of every retrieved document: judged relevant (solid, hatched) against "
                "the rest (dashed). Overlap means the scores alone do not separate them.",
                ident="plot-scores",
            )
        )
    lat = latency_data(view.records)
    if lat is not None:
        parts.append(
            figure(
                plots.latency_svg(lat),
                f"Latency per query: p50 {lat.p50:.1f} ms (dashed), p95 {lat.p95:.1f} ms (dotted).",
                ident="plot-latency",
            )
        )
    rel = reliability(view.records)
    if rel is not None:
        parts.append(
            figure(
                plots.reliability_svg(rel),
                "Reliability of the confidence the system stated: share of queries marked ✓ "
                f"per confidence bin against the diagonal; ECE {rel.ece:.3f}.",
                ident="plot-reliability",
            )
        )
    return '<div class="plots">' + "".join(parts) + "</div>"


# -- drift -------------------------------------------------------------------------


def _ranking_table(docs: Sequence[RankedDoc] | None, title: str) -> str:
    if docs is None:
        return (
            f'<div><h4>{esc(title)}</h4><p class="muted">Rankings not stored (the baseline '
            "keeps only numbers).</p></div>"
        )
    rows = []
    for d in docs:
        tags = ""
        if d.move == "entered":
            tags += (
                '<span class="tag entered" title="not in the baseline\'s top k">+ entered</span>'
            )
        elif d.move == "left":
            tags += '<span class="tag left" title="not in this run\'s top k">− left</span>'
        if d.content:
            label = {"changed": "✎ text changed", "added": "new document", "removed": "removed"}[
                d.content
            ]
            tags += f'<span class="tag {d.content}">{label}</span>'
        star = "★ " if d.expected else ""
        cls = ' class="hit"' if d.expected else ""
        rows.append(
            f"<tr{cls}><td class='num'>{d.rank}</td>"
            f"<td>{star}<code>{esc(d.doc_id)}</code>{tags}</td>"
            f"<td class='num'>{fmt(d.score, 3)}</td></tr>"
        )
    return (
        f"<div><h4>{esc(title)}</h4><table class='ranked'><thead><tr><th class='num'>rank</th>"
        "<th>document</th><th class='num'>score</th></tr></thead><tbody>"
        + ("".join(rows) or "<tr><td colspan=3 class='muted'>nothing retrieved</td></tr>")
        + "</tbody></table></div>"
    )


def _answer(segments: Sequence[tuple[str, str]]) -> str:
    out = []
    for op, text in segments:
        if op == "delete":
            out.append(f"<del>{esc(text)}</del>")
        elif op == "insert":
            out.append(f"<ins>{esc(text)}</ins>")
        else:
            out.append(esc(text))
    return (
        '<p>Answer (<del>baseline</del> → <ins>this run</ins>):</p><div class="diff">'
        + "".join(out)
        + "</div>"
    )


def _drift_query(d: QueryDrift, k: int) -> str:
    delta = "" if math.isnan(d.delta) else f" ({d.delta:+.3f})"
    head = (
        f'<div class="drift-q" id="drift-{esc(d.query_id)}"><p><b>{esc(d.query_id)}</b> '
        f"{mark(d.status_before)} → {mark(d.status_after)} · <code>{esc(d.metric)}</code> "
        f"{fmt(d.before)} → {fmt(d.after)}{delta}<br>{esc(d.text)}</p>"
    )
    moved = []
    if d.entered:
        moved.append(
            "entered the top "
            + str(k)
            + ": "
            + ", ".join(f"<code>{esc(x)}</code>" for x in d.entered)
        )
    if d.left:
        moved.append("left it: " + ", ".join(f"<code>{esc(x)}</code>" for x in d.left))
    body = (
        '<div class="side">'
        + _ranking_table(d.before_top, "baseline")
        + _ranking_table(d.after_top, "this run")
        + "</div>"
    )
    note = f"<p>{'; '.join(moved)}.</p>" if moved else ""
    answer = _answer(d.answer) if d.answer else ""
    return head + note + body + answer + "</div>"


def _changes_list(items: Sequence[StatusChange], empty: str) -> str:
    if not items:
        return f'<p class="muted">{esc(empty)}</p>'
    rows = [
        [
            f'<a href="#drift-{esc(c.query_id)}">{esc(c.query_id)}</a>',
            f"{mark(c.before)} → {mark(c.after)}",
            f"{fmt(c.value_before)} → {fmt(c.value_after)}",
            esc(c.text),
        ]
        for c in items
    ]
    return table(["query", "mark", "criterion", "question"], rows, cls="changes", raw=True)


def _corpus_section(
    diff: CorpusDiff | None, drifts: Sequence[QueryDrift], baseline: BaselineView, view: RunView
) -> str:
    if diff is None:
        missing = "the baseline" if baseline.manifest is None else "this run"
        return (
            f'<p class="muted">No corpus comparison: {missing} has no corpus manifest '
            "(a run without a corpus, or one written before evalframe recorded manifests), so "
            "the documents that changed cannot be named.</p>"
        )
    if diff.before_hash == diff.after_hash and not (diff.changed or diff.added or diff.removed):
        return f"<p>The corpus is unchanged (content hash <code>{esc(diff.after_hash)}</code>).</p>"
    in_rankings: dict[str, list[str]] = {}
    for d in drifts:
        for doc in [*(x.doc_id for x in d.after_top), *(x.doc_id for x in d.before_top or [])]:
            if diff.mark(doc):
                in_rankings.setdefault(doc, [])
                if d.query_id not in in_rankings[doc]:
                    in_rankings[doc].append(d.query_id)
    text = (
        f"<p>The corpus changed: <code>{esc(diff.before_hash)}</code> → "
        f"<code>{esc(diff.after_hash)}</code>; "
        f"{len(diff.changed)} document(s) with changed text, {len(diff.added)} added, "
        f"{len(diff.removed)} removed.</p>"
    )
    if in_rankings:
        rows = [
            [
                f"<code>{esc(doc)}</code>",
                esc(diff.mark(doc)),
                ", ".join(f'<a href="#drift-{esc(q)}">{esc(q)}</a>' for q in qs),
            ]
            for doc, qs in sorted(in_rankings.items())
        ]
        text += (
            "<p>Changed documents in the rankings of changed queries: the likely sources of "
            "the drift.</p>"
        )
        text += table(
            ["document", "change", "changed queries ranking it"], rows, cls="sources", raw=True
        )
    listed = [*diff.changed[:50]]
    if listed:
        more = f" … and {len(diff.changed) - 50} more" if len(diff.changed) > 50 else ""
        text += (
            "<details><summary>Every document whose text changed</summary><p>"
            + ", ".join(f"<code>{esc(d)}</code>" for d in listed)
            + esc(more)
            + "</p></details>"
        )
    return text


def drift_section(view: RunView, baseline: BaselineView) -> str:
    comparison = baseline.comparison
    rule = view.rule
    parts = [
        f"<p>This run against baseline <b>{esc(baseline.name)}</b> on "
        f"{esc(comparison.get('paired_queries', '?'))} paired queries. Verdicts: randomization "
        f"test, p-values {esc(_correction(comparison))}-adjusted over "
        f"{esc(comparison.get('family', '?'))} tests (every metric overall and in every slice), "
        f"alpha {esc(comparison.get('alpha', '?'))}: the same verdicts as "
        "<code>evalframe compare</code>. Each interval is the test inverted at the level the "
        "correction gave it, so it excludes 0 exactly when the verdict is improved or "
        "regressed.</p>"
    ]
    metrics = list(comparison.get("metrics") or {})
    lead = rule.criterion if rule.criterion in metrics else (metrics[0] if metrics else None)
    if lead is not None:
        rows = delta_rows(comparison, lead)
        if rows:
            parts.append(
                figure(
                    plots.deltas_svg(rows, lead),
                    f"Change of <code>{esc(lead)}</code> per slice: ▲ improved, ▼ regressed, "
                    "● within noise; the line is the corrected interval (dotted across the "
                    "plot: unbounded, too few queries in the slice for the level the "
                    "correction asks).",
                    wide=True,
                    ident="plot-deltas",
                )
            )
            table_rows = [
                [
                    esc(f"{r.field}={r.value}"),
                    str(r.n),
                    fmt(r.before),
                    fmt(r.after),
                    fmt(r.delta, signed=True),
                    interval(r),
                    fmt(r.p_adjusted),
                    verdict_mark(r.verdict),
                ]
                for r in rows
            ]
            parts.append(
                f"<h3>{esc(lead)} per slice</h3>"
                + table(
                    [
                        "slice",
                        "n",
                        "baseline",
                        "this run",
                        "Δ",
                        "corrected interval",
                        "p (adj.)",
                        "verdict",
                    ],
                    table_rows,
                    cls="slice-deltas",
                    raw=True,
                )
            )
    failing, passing = status_changes(baseline.records, view.records, rule)
    parts.append(
        f"<h3>Pass → fail ({len(failing)})</h3>"
        + _changes_list(failing, "No query went from pass to fail.")
        + f"<h3>Fail → pass ({len(passing)})</h3>"
        + _changes_list(passing, "No query went from fail to pass.")
    )
    diff = corpus_diff(baseline.manifest, view.manifest)
    k = view.detail_k
    drifts = query_drifts(baseline.records, view.records, rule, k, diff)
    parts.append("<h3>Corpus</h3>" + _corpus_section(diff, drifts, baseline, view))
    parts.append(
        f"<h3>Changed queries ({len(drifts)})</h3><p>Every query whose "
        f"<code>{esc(rule.criterion)}</code>, mark or answer changed, most regressed first, with "
        f"both top-{k} rankings: ★ expected, <span class='tag entered'>+ entered</span> new in the "
        "top k, <span class='tag left'>− left</span> dropped from it, "
        "<span class='tag changed'>✎ text changed</span> in the corpus since the baseline.</p>"
    )
    if not drifts:
        parts.append('<p class="muted">No query changed.</p>')
    parts += [_drift_query(d, k) for d in drifts[:MAX_DRIFT_QUERIES]]
    if len(drifts) > MAX_DRIFT_QUERIES:
        rest = ", ".join(esc(d.query_id) for d in drifts[MAX_DRIFT_QUERIES:])
        parts.append(f"<p class='muted'>{len(drifts) - MAX_DRIFT_QUERIES} more: {rest}</p>")
    return "".join(parts)


def _correction(comparison: Mapping[str, Any]) -> str:
    return {"holm": "Holm", "bh": "Benjamini-Hochberg"}.get(
        str(comparison.get("correction")), str(comparison.get("correction"))
    )


# -- per-query table -------------------------------------------------------------


def _first_hit(record: Mapping[str, Any]) -> float:
    expected = {str(d) for d in record.get("expected") or []}
    for i, doc in enumerate(record.get("retrieved") or []):
        if str(doc) in expected:
            return float(i + 1)
    return math.nan


def _detail(
    record: Mapping[str, Any], k: int, texts: DocTexts | None, metric_names: Sequence[str]
) -> str:
    judgments = record.get("judgments") or {}
    expected = [str(d) for d in record.get("expected") or []]
    retrieved = [str(d) for d in record.get("retrieved") or []]
    scores = list(record.get("scores") or [])
    parts = [f'<p class="q-full"><b>Question:</b> {esc(record.get("text", ""))}</p>']
    if expected:
        parts.append(
            "<p><b>Expected:</b> "
            + ", ".join(
                f"★ <code>{esc(d)}</code>"
                + (f" (label {esc(judgments[d])})" if judgments.get(d, 1) != 1 else "")
                for d in expected
            )
            + "</p>"
        )
    else:
        parts.append("<p><b>Expected:</b> nothing (a negative example: no document answers it)</p>")
    if record.get("failure_category"):
        parts.append(f"<p><b>Failure category:</b> {esc(record['failure_category'])}</p>")
    if record.get("answer") is not None:
        parts.append(f'<p><b>Answer:</b></p><div class="diff">{esc(record["answer"])}</div>')
    if record.get("missing"):
        parts.append(
            "<p class='note'>The retriever returned no ranking for this query (missing).</p>"
        )
    rows = []
    text_map = texts.texts if texts is not None else {}
    for i, doc in enumerate(retrieved[:k]):
        hit = doc in expected
        score = scores[i] if i < len(scores) else None
        chunk = text_map.get(doc)
        shown = ""
        if chunk is not None:
            flat = " ".join(chunk.split())
            if len(flat) <= PREVIEW:
                shown = f'<div class="chunk">{esc(flat)}</div>'
            else:
                cut = chunk if len(chunk) <= SNIPPET else chunk[:SNIPPET].rstrip() + " …"
                shown = (
                    f'<details class="chunk"><summary>{esc(flat[:PREVIEW].rstrip())} …</summary>'
                    f"{esc(cut)}</details>"
                )
        rows.append(
            f"<tr{' class=hit' if hit else ''}><td class='num'>{i + 1}</td>"
            f"<td>{'★ ' if hit else ''}"
            f"<code>{esc(doc)}</code>{' <span class=tag>expected</span>' if hit else ''}</td>"
            f"<td class='num'>{fmt(score, 3)}</td><td>{shown}</td></tr>"
        )
    missed = [d for d in expected if d not in retrieved[:k]]
    if rows:
        parts.append(
            "<table class='ranked'><thead><tr><th class='num'>rank</th><th>retrieved</th>"
            "<th class='num'>score</th><th>text</th></tr></thead><tbody>"
            + "".join(rows)
            + "</tbody></table>"
        )
    if missed:
        deeper = [
            f"<code>{esc(d)}</code>"
            + (f" (rank {retrieved.index(d) + 1})" if d in retrieved else " (not retrieved)")
            for d in missed
        ]
        parts.append(f"<p><b>Expected, not in the top {k}:</b> {', '.join(deeper)}</p>")
    values = record.get("metrics") or {}
    parts.append(
        '<p class="muted">'
        + " · ".join(f"{esc(m)} {fmt(values.get(m))}" for m in metric_names if m in values)
        + (
            f" · latency {fmt(record.get('latency_ms'), 1)} ms"
            if record.get("latency_ms") is not None
            else ""
        )
        + "</p>"
    )
    return "".join(parts)


def queries_section(view: RunView, texts: DocTexts | None) -> str:
    records = view.records
    fields = view.slice_fields
    criterion = view.rule.criterion
    shown_metrics = headline_metrics(view.metric_names, criterion)
    if criterion in view.metric_names and criterion not in shown_metrics:
        shown_metrics.append(criterion)
    has_category = any(r.get("failure_category") for r in records)
    k = view.detail_k
    notes = []
    if texts is not None and texts.note:
        notes.append(texts.note)
    if texts is not None and sum(len(t) for t in texts.texts.values()) > TEXT_BUDGET:
        texts = DocTexts(note=None)
        notes.append(
            "Document text is left out: the listed documents' text would make the page too large."
        )
    # controls
    ctrl = [
        '<label>status <select data-filter="status"><option value="">all</option>'
        + "".join(
            f'<option value="{esc(s)}">{esc(s)} {esc(STATUS_WORD[s])}</option>'
            for s in (PASS, WARN, FAIL, NEGATIVE)
        )
        + "</select></label>"
    ]
    for i, f in enumerate(fields):
        options = sorted({str((r.get("slices") or {}).get(f, "unset") or "unset") for r in records})
        ctrl.append(
            f'<label>{esc(f)} <select data-filter="slice-{i}"><option value="">all</option>'
            + "".join(f'<option value="{esc(v)}">{esc(v)}</option>' for v in options)
            + "</select></label>"
        )
    if has_category:
        cats = sorted(
            {str(r.get("failure_category")) for r in records if r.get("failure_category")}
        )
        ctrl.append(
            '<label>failure <select data-filter="category"><option value="">all</option>'
            + "".join(f'<option value="{esc(c)}">{esc(c)}</option>' for c in cats)
            + "</select></label>"
        )
    ctrl.append(
        '<label>search <input type="search" data-filter="text" placeholder="id or words"></label>'
    )
    ctrl.append('<button type="button" data-expand="all">expand all</button>')
    ctrl.append('<button type="button" data-expand="none">collapse all</button>')
    ctrl.append(f'<span id="q-count" class="muted">{len(records)} queries</span>')
    head = ["", "status", "query", "question", *fields, *shown_metrics, "first hit"]
    types = [
        "",
        "text",
        "text",
        "text",
        *["text"] * len(fields),
        *["num"] * len(shown_metrics),
        "num",
    ]
    if has_category:
        head.append("failure")
        types.append("text")
    ths = []
    for i, (h, t) in enumerate(zip(head, types, strict=True)):
        if i == 0:
            ths.append('<th><span class="muted" title="expand a row">⊕</span></th>')
            continue
        cls = ' class="num"' if t == "num" else ""
        ths.append(
            f'<th data-col="{i}" data-type="{t}"{cls}><button type="button">{esc(h)}</button></th>'
        )
    bodies = []
    order = {FAIL: 0, WARN: 1, PASS: 2, NEGATIVE: 3}
    for n, record in enumerate(records):
        status = str(record.get("status", ""))
        given = record.get("slices") or {}
        values = record.get("metrics") or {}
        attrs = [f'data-status="{esc(status)}"']
        attrs += [
            f'data-slice-{i}="{esc(str(given.get(f, "unset") or "unset"))}"'
            for i, f in enumerate(fields)
        ]
        if has_category:
            attrs.append(f'data-category="{esc(record.get("failure_category") or "")}"')
        search = f"{record.get('query_id', '')} {record.get('text', '')}".lower()
        attrs.append(f'data-text="{esc(search)}"')
        question = str(record.get("text", ""))
        short = question if len(question) <= 90 else question[:88].rstrip() + " …"
        cells = [
            f'<td><button type="button" class="toggle" aria-expanded="false" '
            f'aria-controls="d{n}" title="show the rankings">▸</button></td>',
            f'<td data-v="{order.get(status, 4)}">{mark(status)}</td>',
            f"<td><code>{esc(record.get('query_id'))}</code></td>",
            f'<td class="q-text" title="{esc(question)}">{esc(short)}</td>',
            *(f"<td>{esc(given.get(f, 'unset') or 'unset')}</td>" for f in fields),
        ]
        for m in shown_metrics:
            v = number(values.get(m))
            cells.append(f'<td class="num" data-v="{"NaN" if math.isnan(v) else v}">{fmt(v)}</td>')
        hit = _first_hit(record)
        cells.append(
            f'<td class="num" data-v="{"NaN" if math.isnan(hit) else hit}">'
            f"{'–' if math.isnan(hit) else int(hit)}</td>"
        )
        if has_category:
            cells.append(f"<td>{esc(record.get('failure_category') or '')}</td>")
        detail = _detail(record, k, texts, view.metric_names)
        bodies.append(
            f'<tbody class="q" {" ".join(attrs)}><tr class="row">{"".join(cells)}</tr>'
            f'<tr class="detail" id="d{n}"><td colspan="{len(head)}">{detail}</td></tr></tbody>'
        )
    crit = f"<code>{esc(criterion)}</code>"
    rule = view.rule
    legend = (
        f"<p>Status from {crit}: {mark(PASS)} at least {rule.pass_at:g}, {mark(FAIL)} below "
        f"{rule.fail_below:g}, {mark(WARN)} in between, {mark(NEGATIVE)} a negative example. "
        f"Click a column to sort; expand a row (▸) for the question, the expected documents and "
        f"the top {k} retrieved with their scores (★ expected).</p>"
    )
    note_html = "".join(f'<p class="note">{esc(n)}</p>' for n in notes)
    return (
        legend
        + note_html
        + '<div class="controls">'
        + "".join(ctrl)
        + "</div>"
        + f'<table id="q-table"><thead><tr>{"".join(ths)}</tr></thead>{"".join(bodies)}</table>'
    )


def render_run_page(
    view: RunView, baseline: BaselineView | None = None, texts: DocTexts | None = None
) -> str:
    """The whole run page."""
    description = (view.config.get("description") or "").strip()
    nav = ['<a href="#metrics">metrics</a>', '<a href="#plots">plots</a>']
    if baseline is not None:
        nav.append('<a href="#drift">drift</a>')
    nav.append('<a href="#queries">queries</a>')
    dl = "".join(f"<dt>{esc(k)}</dt><dd>{v}</dd>" for k, v in facts(view, baseline))
    body = [
        f"<header><h1>evalframe · {esc(view.experiment)}</h1>",
        f'<p class="desc">{esc(description)}</p>' if description else "",
        verdict_banner(view.gates),
        f'<dl class="facts">{dl}</dl><nav>{" ".join(nav)}</nav></header>',
        '<section id="metrics"><h2>Headline metrics</h2>',
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
    body += ['<section id="queries"><h2>Queries</h2>', queries_section(view, texts), "</section>"]
    return page(f"evalframe · {view.experiment}", "".join(body))
