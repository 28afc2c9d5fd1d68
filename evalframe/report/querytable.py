"""The per-query table of the run page: one row per query, sortable and filterable,
each expanding to the question, the expected documents and the top k retrieved
with their scores and text."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from evalframe.assess.runfolder import FAIL, NEGATIVE, PASS, UNSCORED, WARN
from evalframe.report.html import STATUS_WORD, esc, fmt, mark
from evalframe.report.model import DocTexts, RunView
from evalframe.report.plotdata import headline_metrics, number, passed_over

__all__ = ["LAZY_OVER", "labelled_html", "lazy_block", "queries_section", "too_much_text"]

#: Above this many characters of document text on the page (a document is shown once
#: in every query that ranks it) the drill-down leaves text out.
TEXT_BUDGET = 2_000_000
#: A document's text is previewed on one or two lines, the rest up to SNIPPET on demand.
PREVIEW = 160
SNIPPET = 1500
#: Above this many queries the drill-downs are not elements of the page but strings in
#: one JSON block, each made into elements when its row is expanded. Why: a browser
#: builds a million elements slowly; the page of a 10k-query run (23 MB) took Chromium
#: 51 s to its load event (47 s with scripts off), and with the drill-downs as data
#: 4.4 s (docs/reports.md). Small runs keep them inline, readable without the script.
LAZY_OVER = 1000


def _text_size(records: Sequence[Mapping[str, Any]], texts: DocTexts, k: int) -> int:
    """Characters of document text the table would hold (preview and snippet)."""
    size = 0
    for record in records:
        for doc in (record.get("retrieved") or [])[:k]:
            text = texts.texts.get(str(doc))
            if text is not None:
                size += min(len(text), SNIPPET) + PREVIEW
    return size


def too_much_text(view: RunView, present: Collection[str]) -> bool:
    """Whether the drill-down would leave document text out whatever the texts are,
    known before any is read: each listed document whose text the corpus holds
    (``present``) takes at least a preview. At 10k queries of a 100k corpus that
    is 0.8 s of reading 80k texts the page would not show.

    A corpus edited since the run can only make this say so early: its changed
    documents' texts would not be shown either, so the page says the text was
    too much where, with most of them changed, it would have shown the rest.
    """
    k = view.detail_k
    listed = sum(
        str(d) in present for record in view.records for d in (record.get("retrieved") or [])[:k]
    )
    return listed * PREVIEW > TEXT_BUDGET


def category(record: Mapping[str, Any]) -> str:
    """The failure category the failure analysis gave a ✗ query (``failure.category``),
    or a ``failure_category`` a plugin wrote; "" when none was computed."""
    failure = record.get("failure")
    if isinstance(failure, Mapping) and failure.get("category"):
        return str(failure["category"])
    return str(record.get("failure_category") or "")


def labelled_html(view: RunView, name: str) -> str:
    """A metric named for a reader: ``Recall@1 (<code>Hit@1</code>)`` where
    ``metrics.labels`` renames it, else ``<code>Hit@1</code>``."""
    label = view.label(name)
    code = f"<code>{esc(name)}</code>"
    return code if label == name else f"{esc(label)} ({code})"


def category_words(record: Mapping[str, Any]) -> str:
    """The category as a reader sees it: the analysis's ``failure.label``
    ("vocabulary mismatch"), else the id with spaces for underscores, as the
    terminal prints it. Filters and sorting keep the id."""
    failure = record.get("failure")
    if isinstance(failure, Mapping) and failure.get("category") and failure.get("label"):
        return str(failure["label"])
    return category(record).replace("_", " ")


def _first_hit(record: Mapping[str, Any]) -> float:
    expected = {str(d) for d in record.get("expected") or []}
    for i, doc in enumerate(record.get("retrieved") or []):
        if str(doc) in expected:
            return float(i + 1)
    return math.nan


def _detail(
    record: Mapping[str, Any],
    k: int,
    texts: DocTexts | None,
    metric_names: Sequence[str],
    label: Callable[[str], str] = str,
) -> str:
    """One query's drill-down: its question, expected and retrieved documents, and its
    values, each metric under ``label`` (``metrics.labels``' name, as the table's header)."""
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
    if category(record):
        failure = record.get("failure")
        fix = failure.get("fix") if isinstance(failure, Mapping) else None
        # named by the dataset's own label (analysis.failures.label_field): said, with the
        # heuristics' verdict, so a reader sees where the two differ
        source = failure.get("source") if isinstance(failure, Mapping) else None
        said = failure.get("heuristic_category") if isinstance(failure, Mapping) else None
        parts.append(
            f"<p><b>Failure category:</b> {esc(category_words(record))}"
            + (f' <span class="muted">(fix: {esc(fix)})</span>' if fix else "")
            + (
                f' <span class="muted">· named by the dataset\'s {esc(source)} (the '
                f"heuristics say {esc(str(said).replace('_', ' '))})</span>"
                if source and said
                else ""
            )
            + "</p>"
        )
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
        + " · ".join(f"{esc(label(m))} {fmt(values.get(m))}" for m in metric_names if m in values)
        + (
            f" · latency {fmt(record.get('latency_ms'), 1)} ms"
            if record.get("latency_ms") is not None
            else ""
        )
        + "</p>"
    )
    return "".join(parts)


def equal_note(view: RunView, what: str, *, html: bool = True) -> str:
    """`` On every query RR@1 equals Hit@1, so their bars are not shown again.``: the
    measures :func:`headline_metrics` passed over for an equal one, or nothing. HTML
    (names in ``<code>``), or plain text with ``html=False``."""
    over = passed_over(view.leading_metrics, view.rule.criterion, view.records)
    if not over:
        return ""
    name = (lambda m: labelled_html(view, m)) if html else view.labelled
    said = "; ".join(f"{name(m)} equals {name(e)}" for m, e in over.items())
    return f" On every query {said}, so {what} not shown again."


def breakable(text: str) -> str:
    """Escaped ``text`` with a line-break opportunity after each ``:``, ``/`` and ``_``:
    an id or a slice value (``api_understanding:01``) wraps at those rather than push the
    table beyond the page (ADK's was wider than a 1280-pixel window); a short one never
    wraps."""
    return re.sub(r"([:/_])(?=.)", r"\1<wbr>", text)


def queries_section(view: RunView, texts: DocTexts | None) -> str:
    records = view.records
    fields = view.slice_fields
    criterion = view.rule.criterion
    shown_metrics = headline_metrics(view.leading_metrics, criterion, records=records)
    if criterion in view.metric_names and criterion not in shown_metrics:
        shown_metrics.append(criterion)
    has_category = any(category(r) for r in records)
    k = view.detail_k
    notes = []
    equal = equal_note(view, "their columns are", html=False)
    if equal:
        notes.append(equal.strip())
    if texts is not None and texts.note:
        notes.append(texts.note)
    if texts is not None and (texts.left_out or _text_size(records, texts, k) > TEXT_BUDGET):
        texts = DocTexts(note=None)
        notes.append(
            "Document text is left out: the listed documents' text would make the page too large."
        )
    # controls
    ctrl = [
        '<label>status <select data-filter="status"><option value="">all</option>'
        + "".join(
            f'<option value="{esc(s)}">{esc(s)} {esc(STATUS_WORD[s])}</option>'
            for s in (PASS, WARN, FAIL, NEGATIVE, UNSCORED)
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
        cats = sorted({category(r): category_words(r) for r in records if category(r)}.items())
        ctrl.append(
            '<label>failure <select data-filter="category"><option value="">all</option>'
            + "".join(f'<option value="{esc(c)}">{esc(w)}</option>' for c, w in cats)
            + "</select></label>"
        )
    ctrl.append(
        '<label>search <input type="search" data-filter="text" placeholder="id or words"></label>'
    )
    ctrl.append('<button type="button" data-expand="all">expand all</button>')
    ctrl.append('<button type="button" data-expand="none">collapse all</button>')
    ctrl.append(f'<span id="q-count" class="muted">{len(records)} queries</span>')
    # metrics.labels' names in the headers, as in the headline table (ADK's Recall@1)
    head = ["", "status", "query", "question", *fields, *map(view.label, shown_metrics)]
    head.append("first hit")
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
    lazy = len(records) > LAZY_OVER
    details: list[str] = []
    order = {FAIL: 0, WARN: 1, PASS: 2, NEGATIVE: 3, UNSCORED: 4}
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
            attrs.append(f'data-category="{esc(category(record))}"')
        search = f"{record.get('query_id', '')} {record.get('text', '')}".lower()
        attrs.append(f'data-text="{esc(search)}"')
        question = str(record.get("text", ""))
        short = question if len(question) <= 90 else question[:88].rstrip() + " …"
        cells = [
            f'<td><button type="button" class="toggle" aria-expanded="false" '
            f'aria-controls="d{n}" title="show the rankings">▸</button></td>',
            f'<td data-v="{order.get(status, 4)}">{mark(status)}</td>',
            f"<td class=q-id><code>{breakable(esc(record.get('query_id')))}</code></td>",
            f'<td class="q-text" title="{esc(question)}">{esc(short)}</td>',
            *(f"<td>{breakable(esc(given.get(f, 'unset') or 'unset'))}</td>" for f in fields),
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
            cells.append(f"<td>{esc(category_words(record))}</td>")
        detail = _detail(record, k, texts, view.metric_names, view.label)
        if lazy:  # filled in from the JSON block when expanded (LAZY_OVER)
            details.append(detail)
            detail, where = "", f' data-lazy="{n}" hidden'
        else:
            where = ""
        bodies.append(
            f'<tbody class="q" {" ".join(attrs)}><tr class="row">{"".join(cells)}</tr>'
            f'<tr class="detail" id="d{n}"{where}><td colspan="{len(head)}">{detail}</td></tr>'
            "</tbody>"
        )
    crit = labelled_html(view, criterion)
    rule = view.rule
    legend = (
        f"<p>Status from {crit}: {mark(PASS)} at least {rule.pass_at:g}, {mark(FAIL)} below "
        f"{rule.fail_below:g}, {mark(WARN)} in between, {mark(NEGATIVE)} a negative example, "
        f"{mark(UNSCORED)} not scored (a policy left the query out). "
        f"Click a column to sort; expand a row (▸) for the question, the expected documents and "
        f"the top {k} retrieved with their scores (★ expected).</p>"
    )
    if lazy:
        notes.append(
            f"The {len(records)} drill-downs are filled in when a row is expanded (more than "
            f"{LAZY_OVER} queries: the page stays quick to open); without scripts they are "
            "not shown, and per_query.jsonl holds every one."
        )
    note_html = "".join(f'<p class="note">{esc(n)}</p>' for n in notes)
    return (
        legend
        + note_html
        + '<div class="controls">'
        + "".join(ctrl)
        + "</div>"
        # long ids in a row scroll the table, not the whole page
        + '<div class="q-scroll">'
        + f'<table id="q-table"><thead><tr>{"".join(ths)}</tr></thead>{"".join(bodies)}</table>'
        + "</div>"
        + (lazy_block(details) if lazy else "")
    )


def lazy_block(details: Sequence[str]) -> str:
    """The drill-downs as one inert JSON block the page's script reads on expand.

    ``</`` is written ``<\\/`` (the same string to JSON), so no drill-down can end
    the block early; user text in them is already escaped (``&lt;``).
    """
    text = json.dumps(list(details), ensure_ascii=False).replace("</", "<\\/")
    return f'<script type="application/json" id="q-details">{text}</script>'
