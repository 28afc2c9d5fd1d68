"""The drift view of the run page: per-slice deltas with their corrected verdicts,
the queries that went from pass to fail and back, the corpus documents that
changed, and every changed query's rankings side by side (data from
:mod:`evalframe.report.drift`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from evalframe.report import plots
from evalframe.report.drift import (
    CorpusDiff,
    QueryDrift,
    RankedDoc,
    StatusChange,
    corpus_diff,
    delta_rows,
    query_drifts,
    status_changes,
)
from evalframe.report.html import esc, figure, fmt, interval, mark, table, verdict_mark
from evalframe.report.model import BaselineView, RunView

__all__ = ["drift_section"]

#: Drift queries shown with both rankings; the rest are listed by id.
MAX_DRIFT_QUERIES = 40


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
    # the comparison's lead metric (the run's status criterion: B.O.B's MRR), whose slices
    # the terminal prints with their intervals: one metric per slice on every surface
    stated = comparison.get("lead")
    lead = stated if stated in metrics else (metrics[0] if metrics else None)
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
