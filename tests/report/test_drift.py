"""The drift view's data: marks that changed, rankings before and after, changed documents."""

from __future__ import annotations

import math

import pytest

from evalframe.report.drift import (
    answer_diff,
    corpus_diff,
    delta_rows,
    query_drifts,
    status_changes,
)
from evalframe.report.model import Rule

RULE = Rule(criterion="RR", pass_at=1.0, fail_below=0.5)


def rec(qid: str, rr: float | None, retrieved: list[str], **extra: object) -> dict[str, object]:
    return {
        "query_id": qid,
        "text": f"question {qid}",
        "metrics": {"RR": rr},
        "judgments": extra.pop("judgments", {"a": 1}),
        "expected": extra.pop("expected", ["a"]),
        "retrieved": retrieved,
        "scores": [float(10 - i) for i in range(len(retrieved))],
        **extra,
    }


BEFORE = [
    rec("q1", 1.0, ["a", "b", "c"]),  # ✓
    rec("q2", 0.2, ["x", "y"]),  # ✗
    rec("q3", 0.6, ["b", "a"]),  # ⚠
    rec("q4", None, ["a"], judgments={}, expected=[]),  # a negative example
    rec("q5", 1.0, ["a"]),  # unchanged
    rec("q6", 0.2, ["x", "y"]),  # ✗
]
AFTER = [
    rec("q1", 0.5, ["d", "a", "e"]),  # ✓ -> ⚠
    rec("q2", 1.0, ["a", "x"]),  # ✗ -> ✓
    rec("q3", 0.25, ["b", "c", "d", "a"]),  # ⚠ -> ✗
    rec("q4", None, ["b"], judgments={}, expected=[]),
    rec("q5", 1.0, ["a"]),
    rec("q6", 0.5, ["x", "a"]),  # ✗ -> ⚠: no longer failing
]


def test_status_changes_name_pass_to_fail_and_fail_to_pass() -> None:
    """Passing is "not ✗" (at least fail_below), as the pass_to_fail gate counts it."""
    failing, passing = status_changes(BEFORE, AFTER, RULE)
    assert [(c.query_id, c.before, c.after) for c in failing] == [("q3", "⚠", "✗")]
    assert [(c.query_id, c.before, c.after) for c in passing] == [
        ("q2", "✗", "✓"),
        ("q6", "✗", "⚠"),
    ]
    assert (passing[0].value_before, passing[0].value_after) == (0.2, 1.0)


def test_corpus_diff_from_two_manifests() -> None:
    before = {"content_hash": "h0", "documents": {"a": "1", "b": "2", "c": "3"}}
    after = {"content_hash": "h1", "documents": {"a": "1", "b": "9", "d": "4"}}
    diff = corpus_diff(before, after)
    assert diff is not None
    assert (diff.changed, diff.added, diff.removed) == (["b"], ["d"], ["c"])
    assert [diff.mark(x) for x in "abcd"] == ["", "changed", "removed", "added"]
    assert corpus_diff(None, after) is None  # a baseline without a manifest names nothing


def test_query_drifts_show_what_entered_and_left_the_top_k() -> None:
    diff = corpus_diff(
        {"documents": {"a": "1", "b": "2", "c": "3"}},
        {"documents": {"a": "1", "b": "9", "d": "4", "e": "5"}},
    )
    drifts = query_drifts(BEFORE, AFTER, RULE, k=3, corpus=diff)
    # most regressed first: q1 (-0.5), q3 (-0.35), then q6 (+0.3), q2 (+0.8); q4, q5 unchanged
    assert [d.query_id for d in drifts] == ["q1", "q3", "q6", "q2"]
    q1 = drifts[0]
    assert q1.delta == pytest.approx(-0.5)
    assert (q1.status_before, q1.status_after) == ("✓", "⚠")
    assert q1.entered == ["d", "e"] and q1.left == ["b", "c"]
    assert q1.before_top is not None
    assert [(d.doc_id, d.move, d.content, d.expected) for d in q1.before_top] == [
        ("a", "", "", True),
        ("b", "left", "changed", False),
        ("c", "left", "removed", False),
    ]
    assert [(d.rank, d.doc_id, d.move, d.content) for d in q1.after_top] == [
        (1, "d", "entered", "added"),
        (2, "a", "", ""),
        (3, "e", "entered", "added"),
    ]
    q3 = drifts[1]  # a ranked 4th: past k = 3, so it left the top 3
    assert q3.left == ["a"] and q3.entered == ["c", "d"]


def test_a_baseline_without_rankings_still_shows_this_runs() -> None:
    before = [{"query_id": "q1", "metrics": {"RR": 1.0}, "retrieved": None}]
    (d,) = query_drifts(before, [rec("q1", 0.0, ["x"])], RULE, k=5)
    assert d.before_top is None and d.left == [] and [x.doc_id for x in d.after_top] == ["x"]


def test_changed_answers_are_drift_even_when_the_metric_is_not() -> None:
    before = [rec("q1", 1.0, ["a"], answer="Install it with pip.")]
    after = [rec("q1", 1.0, ["a"], answer="Install it with uv.")]
    (d,) = query_drifts(before, after, RULE, k=5)
    assert d.delta == 0 and d.answer is not None
    assert [seg for seg in d.answer if seg[0] != "equal"] == [("delete", "pip."), ("insert", "uv.")]


def test_answer_diff_is_word_level() -> None:
    assert answer_diff("the cat sat", "the dog sat") == [
        ("equal", "the "),
        ("delete", "cat"),
        ("insert", "dog"),
        ("equal", " sat"),
    ]
    assert answer_diff("", "new") == [("insert", "new")]


def test_delta_rows_read_the_comparisons_corrected_verdicts() -> None:
    cell = {
        "n": 4,
        "mean_a": 0.5,
        "mean_b": 0.75,
        "delta": 0.25,
        "interval_low": 0.1,
        "interval_high": 0.4,
        "interval_level": 0.975,
        "p_adjusted": 0.02,
        "verdict": "improved",
    }
    comparison = {
        "metrics": {
            "RR": {**cell, "by_slice": {"difficulty": {"easy": {**cell, "interval_low": None}}}}
        }
    }
    (overall,) = delta_rows(comparison)
    assert (overall.value, overall.delta, overall.low, overall.verdict) == (
        "RR",
        0.25,
        0.1,
        "improved",
    )
    (easy,) = delta_rows(comparison, "RR")
    assert (easy.field, easy.value, easy.n) == ("difficulty", "easy", 4)
    assert math.isnan(easy.low)  # null in comparison.json: NaN written as null
