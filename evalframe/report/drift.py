"""What changed between a baseline and a run, query by query: the drift view's data.

The per-metric and per-slice verdicts come from the paired comparison
(:mod:`evalframe.assess.compare`, the same corrected verdicts as
``evalframe compare``); this module adds what a person needs to see *why*:
which queries went from pass to fail and back, how each changed query's
ranking moved (the documents that entered and left its top k), which of
those documents changed in the corpus (from the two corpus manifests), and
how an answer's text changed.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalframe.assess.runfolder import FAIL, PASS, WARN, RunFolder, StatusRule, query_status
from evalframe.report.plotdata import number

__all__ = [
    "CorpusDiff",
    "DeltaRow",
    "QueryDrift",
    "RankedDoc",
    "StatusChange",
    "answer_diff",
    "baseline_records",
    "corpus_diff",
    "delta_rows",
    "query_drifts",
    "status_changes",
]


def baseline_records(path: Path) -> list[dict[str, Any]]:
    """The baseline's per-query records; from B.O.B's results file (numbers only,
    no rankings) records with ``retrieved: None``."""
    if RunFolder.is_run(path):
        return [record for _, record in RunFolder(path).per_query()]
    from evalframe.assess.bob_results import read_bob_results

    data = read_bob_results(path)
    return [
        {
            "query_id": qid,
            "metrics": {m: values.get(qid) for m, values in data.values.items()},
            "retrieved": None,
        }
        for qid in data.query_ids
    ]


def _is_negative(record: Mapping[str, Any]) -> bool:
    return not any(number(v) > 0 for v in (record.get("judgments") or {}).values())


def status_of(record: Mapping[str, Any], rule: StatusRule, negative: bool) -> str:
    """A record's ✓/⚠/✗/– under ``rule`` (both sides of a drift are marked by one rule)."""
    value = number((record.get("metrics") or {}).get(rule.criterion))
    return query_status(value, negative, rule)


@dataclass(frozen=True)
class StatusChange:
    """A query whose mark changed: before and after, with the criterion's values."""

    query_id: str
    text: str
    before: str
    after: str
    value_before: float
    value_after: float


def status_changes(
    before: Sequence[Mapping[str, Any]], after: Sequence[Mapping[str, Any]], rule: StatusRule
) -> tuple[list[StatusChange], list[StatusChange]]:
    """(now failing, now passing) among the queries both sides scored.

    Both sides are marked by this run's rule, from each side's criterion value;
    whether a query is a negative example comes from this run's judgments. A
    query passes when it is not ✗ (its criterion is at least ``fail_below``), as
    the ``pass_to_fail`` gate counts: "now failing" is ✓ or ⚠ before and ✗ after,
    "now passing" ✗ before and ✓ or ⚠ after. Moves between ✓ and ⚠ are in neither
    list (the changed-query listing shows them).
    """
    by_id = {str(r["query_id"]): r for r in before}
    failing: list[StatusChange] = []
    passing: list[StatusChange] = []
    for rec in after:
        qid = str(rec["query_id"])
        old = by_id.get(qid)
        if old is None:
            continue
        negative = _is_negative(rec)
        change = StatusChange(
            query_id=qid,
            text=str(rec.get("text") or ""),
            before=status_of(old, rule, negative),
            after=status_of(rec, rule, negative),
            value_before=number((old.get("metrics") or {}).get(rule.criterion)),
            value_after=number((rec.get("metrics") or {}).get(rule.criterion)),
        )
        if change.after == FAIL and change.before in (PASS, WARN):
            failing.append(change)
        elif change.before == FAIL and change.after in (PASS, WARN):
            passing.append(change)
    return failing, passing


@dataclass(frozen=True)
class CorpusDiff:
    """Documents whose text hash differs between the two manifests, or that one lacks."""

    changed: list[str]
    added: list[str]
    removed: list[str]
    before_hash: str | None
    after_hash: str | None

    def mark(self, doc_id: str) -> str:
        """``changed``, ``added`` (new in the corpus), ``removed`` or ``""``."""
        for kind, ids in (("changed", self.changed), ("added", self.added)):
            if doc_id in ids:
                return kind
        return "removed" if doc_id in self.removed else ""


def corpus_diff(
    before: Mapping[str, Any] | None, after: Mapping[str, Any] | None
) -> CorpusDiff | None:
    """The documents that changed between two corpus manifests (None unless both exist)."""
    if before is None or after is None:
        return None
    old = {str(k): str(v) for k, v in (before.get("documents") or {}).items()}
    new = {str(k): str(v) for k, v in (after.get("documents") or {}).items()}
    return CorpusDiff(
        changed=sorted(d for d in new if d in old and old[d] != new[d]),
        added=sorted(d for d in new if d not in old),
        removed=sorted(d for d in old if d not in new),
        before_hash=before.get("content_hash"),
        after_hash=after.get("content_hash"),
    )


@dataclass(frozen=True)
class RankedDoc:
    """One row of a before/after ranking.

    ``move`` is ``entered`` (in this top k, not the other side's), ``left`` (in
    the baseline's top k, not this run's) or ``""``; ``content`` is the
    document's corpus change (:meth:`CorpusDiff.mark`).
    """

    rank: int
    doc_id: str
    score: float
    expected: bool
    move: str
    content: str


@dataclass(frozen=True)
class QueryDrift:
    """One changed query: its values, marks, both rankings and the answer's diff."""

    query_id: str
    text: str
    metric: str
    before: float
    after: float
    status_before: str
    status_after: str
    before_top: list[RankedDoc] | None  # None: the baseline stored no rankings
    after_top: list[RankedDoc]
    entered: list[str]
    left: list[str]
    answer: list[tuple[str, str]] | None  # (op, text) segments; None: no answer changed

    @property
    def delta(self) -> float:
        return self.after - self.before


def _top(
    record: Mapping[str, Any],
    k: int,
    other: set[str] | None,
    move: str,
    expected: set[str],
    corpus: CorpusDiff | None,
) -> list[RankedDoc]:
    ids = [str(d) for d in (record.get("retrieved") or [])][:k]
    scores = [number(s) for s in (record.get("scores") or [])][:k]
    scores += [math.nan] * (len(ids) - len(scores))
    return [
        RankedDoc(
            rank=i + 1,
            doc_id=doc,
            score=score,
            expected=doc in expected,
            move=move if other is not None and doc not in other else "",
            content=corpus.mark(doc) if corpus is not None else "",
        )
        for i, (doc, score) in enumerate(zip(ids, scores, strict=True))
    ]


_TOKENS = re.compile(r"\s+|[^\s]+")


def answer_diff(before: str, after: str) -> list[tuple[str, str]]:
    """Word-level diff of two answers as ``(op, text)`` segments, ``op`` one of
    ``equal``, ``delete`` (only in the baseline's answer) and ``insert`` (only in
    this run's); a replaced stretch is a delete followed by an insert."""
    a, b = _TOKENS.findall(before), _TOKENS.findall(after)
    out: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(("equal", "".join(a[i1:i2])))
            continue
        if i2 > i1:
            out.append(("delete", "".join(a[i1:i2])))
        if j2 > j1:
            out.append(("insert", "".join(b[j1:j2])))
    return out


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def query_drifts(
    before: Sequence[Mapping[str, Any]],
    after: Sequence[Mapping[str, Any]],
    rule: StatusRule,
    k: int,
    corpus: CorpusDiff | None = None,
) -> list[QueryDrift]:
    """Every shared query whose criterion value, mark or answer changed, most
    regressed first (then most improved last; answer-only changes after the
    regressions, before the improvements, at delta 0)."""
    by_id = {str(r["query_id"]): r for r in before}
    out: list[QueryDrift] = []
    for rec in after:
        qid = str(rec["query_id"])
        old = by_id.get(qid)
        if old is None:
            continue
        negative = _is_negative(rec)
        value_before = number((old.get("metrics") or {}).get(rule.criterion))
        value_after = number((rec.get("metrics") or {}).get(rule.criterion))
        status_before = status_of(old, rule, negative)
        status_after = status_of(rec, rule, negative)
        answers = (old.get("answer"), rec.get("answer"))
        answer_changed = any(a is not None for a in answers) and answers[0] != answers[1]
        if (
            _same(value_before, value_after)
            and status_before == status_after
            and not answer_changed
        ):
            continue
        expected = {str(d) for d in rec.get("expected") or []}
        stored = old.get("retrieved") is not None
        before_ids = {str(d) for d in (old.get("retrieved") or [])[:k]} if stored else None
        after_ids = {str(d) for d in (rec.get("retrieved") or [])[:k]}
        before_top = _top(old, k, after_ids, "left", expected, corpus) if stored else None
        after_top = _top(rec, k, before_ids, "entered", expected, corpus)
        out.append(
            QueryDrift(
                query_id=qid,
                text=str(rec.get("text") or ""),
                metric=rule.criterion,
                before=value_before,
                after=value_after,
                status_before=status_before,
                status_after=status_after,
                before_top=before_top,
                after_top=after_top,
                entered=[d.doc_id for d in after_top if d.move == "entered"],
                left=[d.doc_id for d in before_top or [] if d.move == "left"],
                answer=answer_diff(str(answers[0] or ""), str(answers[1] or ""))
                if answer_changed
                else None,
            )
        )

    def order(d: QueryDrift) -> float:
        return 0.0 if math.isnan(d.delta) else d.delta

    return sorted(out, key=order)


@dataclass(frozen=True)
class DeltaRow:
    """One line of the drift table: a metric overall or in one slice."""

    field: str  # "" for the metric overall
    value: str  # the slice value, or the metric's name overall
    n: int
    before: float
    after: float
    delta: float
    low: float  # the interval at the level the correction gave this test
    high: float
    level: float
    p_adjusted: float
    verdict: str


def _row(field: str, value: str, cell: Mapping[str, Any]) -> DeltaRow:
    return DeltaRow(
        field=field,
        value=value,
        n=int(cell.get("n") or 0),
        before=number(cell.get("mean_a")),
        after=number(cell.get("mean_b")),
        delta=number(cell.get("delta")),
        low=number(cell.get("interval_low")),
        high=number(cell.get("interval_high")),
        level=number(cell.get("interval_level")),
        p_adjusted=number(cell.get("p_adjusted")),
        verdict=str(cell.get("verdict") or "within noise"),
    )


def delta_rows(comparison: Mapping[str, Any], metric: str | None = None) -> list[DeltaRow]:
    """The comparison's rows: every metric overall (``metric=None``), or one metric
    in every slice value, each with its corrected interval and verdict."""
    metrics = comparison.get("metrics") or {}
    if metric is None:
        return [_row("", name, cell) for name, cell in metrics.items()]
    cell = metrics.get(metric) or {}
    return [
        _row(str(field), str(value), sub)
        for field, groups in (cell.get("by_slice") or {}).items()
        for value, sub in groups.items()
    ]
