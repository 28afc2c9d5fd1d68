"""The numbers behind each plot of the report, against values worked out by hand."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalframe.metrics import Policies
from evalframe.report.plotdata import (
    Bar,
    ReliabilityBin,
    calibration_reliability,
    curve_families,
    headline_metrics,
    judgments_and_run,
    k_grid,
    latency_data,
    metric_curves,
    passed_over,
    reliability,
    score_histogram,
    slice_bars,
)

LOG2_3 = math.log2(3)

# q1: labels a=1, b=2; ranked b, x, a. q2: label c=1; ranked x, c. q3: a negative example.
# q4: judged, but the retriever gave no ranking (missing).
RECORDS = [
    {"query_id": "q1", "judgments": {"a": 1, "b": 2}, "retrieved": ["b", "x", "a"],
     "scores": [3.0, 2.0, 1.0]},
    {"query_id": "q2", "judgments": {"c": 1}, "retrieved": ["x", "c"], "scores": [2.0, 1.0]},
    {"query_id": "q3", "judgments": {}, "retrieved": ["a"], "scores": [1.0]},
    {"query_id": "q4", "judgments": {"c": 1}, "retrieved": [], "scores": [], "missing": True},
]  # fmt: skip


def test_k_grid_keeps_every_small_k_and_thins_out_deep_ones() -> None:
    assert k_grid(3) == [1, 2, 3]
    assert k_grid(100) == [*range(1, 21), 25, 30, 35, 40, 45, 50, 60, 70, 80, 90, 100]
    assert k_grid(23) == [*range(1, 21), 23]


def test_metric_curves_by_hand_under_skip_and_zero() -> None:
    """Negatives are skipped (no_relevant=skip); the missing q4 counts 0 (missing_query=zero)."""
    got = metric_curves(RECORDS, Policies(no_relevant="skip", missing_query="zero"), 3)
    assert got.ks == [1, 2, 3]
    # recall: q1 finds b at 1 and a at 3 (of 2); q2 finds c at 2; q4 finds nothing
    assert got.values["Recall"] == pytest.approx([(1 / 2) / 3, (1 / 2 + 1) / 3, (1 + 1) / 3])
    # precision divides by k even past the end of a ranking (trec_eval)
    assert got.values["Precision"] == pytest.approx(
        [1 / 3, (1 / 2 + 1 / 2) / 3, (2 / 3 + 1 / 3) / 3]
    )
    ideal_q1 = [2, 2 + 1 / LOG2_3, 2 + 1 / LOG2_3]  # labels 2, 1 at ranks 1, 2
    dcg_q1 = [2, 2, 2 + 1 / 2]  # b (2) at rank 1, a (1) at rank 3: 1/log2(4)
    dcg_q2 = [0, 1 / LOG2_3, 1 / LOG2_3]  # c at rank 2, ideal 1
    expected = [(dcg_q1[i] / ideal_q1[i] + dcg_q2[i]) / 3 for i in range(3)]
    assert got.values["nDCG"] == pytest.approx(expected)


def test_a_depth_far_past_every_ranking_stops_the_curve_at_the_reach() -> None:
    """``depth=10**20`` over rankings of three: the curve is cut at CURVE_REACH (1000),
    not drawn at 10**19 cutoffs (the page hung, or overflowed). Past the longest
    ranking nothing changes, so the values there are the k=3 ones."""
    policies = Policies(no_relevant="skip", missing_query="zero")
    got = metric_curves(RECORDS, policies, 10**20)
    assert got.ks == k_grid(1000) and got.ks[-1] == 1000
    at3 = metric_curves(RECORDS, policies, 3)
    assert got.values["Recall"][-1] == pytest.approx(at3.values["Recall"][-1])
    assert metric_curves(RECORDS, policies, 5).ks == [1, 2, 3, 4, 5]  # a depth in reach


def test_the_records_rankings_are_flat_rows_a_query_listed_twice_keeping_its_last() -> None:
    """As the mapping of rankings they replaced: first place, last ranking; a record
    whose ids and scores differ in number is refused."""
    qrels, rows = judgments_and_run([*RECORDS, {**RECORDS[1], "retrieved": ["c"], "scores": [5]}])
    assert list(qrels) == ["q1", "q2", "q3", "q4"]
    assert rows.query_ids == ("q1", "q2", "q3")  # q4 is missing: no ranking
    assert rows.counts.tolist() == [3, 1, 1]
    assert rows.doc_ids.tolist() == ["b", "x", "a", "c", "a"]
    assert rows.scores.tolist() == [3.0, 2.0, 1.0, 5.0, 1.0]
    with pytest.raises(ValueError, match="query 'q1': 3 retrieved ids but 2 scores"):
        judgments_and_run([{**RECORDS[0], "scores": [3.0, 2.0]}])


def test_metric_curves_follow_the_bob_negative_policy() -> None:
    """Under no_relevant=bob a negative's recall is 1 (vacuous), so it joins the mean."""
    got = metric_curves(RECORDS[:3], Policies(no_relevant="bob"), 1)
    assert got.values["Recall"] == pytest.approx([(1 / 2 + 0 + 1) / 3])


def test_slice_bars_read_the_summary_means_and_intervals() -> None:
    summary = {
        "by_slice": {
            "difficulty": {
                "easy": {"R@5": {"mean": 0.75, "ci_low": 0.5, "ci_high": 1.0, "n": 4}},
                "hard": {"R@5": {"mean": None, "ci_low": None, "ci_high": None, "n": 0}},
            },
            "domain": {"cdc": {"RR": {"mean": 1.0, "n": 1}}},  # no R@5: no panel
        }
    }
    bars = slice_bars(summary, "R@5")
    assert list(bars) == ["difficulty"]
    easy, hard = bars["difficulty"]
    assert easy == Bar("easy", 0.75, 0.5, 1.0, 4)
    assert hard.label == "hard" and math.isnan(hard.mean) and hard.n == 0


def test_score_histogram_splits_relevant_from_the_rest_on_shared_bins() -> None:
    records = [
        {"judgments": {"a": 1, "b": 0}, "retrieved": ["a", "b"], "scores": [1.0, 3.0]},
        {"judgments": {}, "retrieved": ["c"], "scores": [2.0]},
    ]
    got = score_histogram(records, bins=2)
    assert got is not None
    assert got.edges == [1.0, 2.0, 3.0]
    assert got.relevant == [1, 0]  # a at 1.0
    assert got.other == [0, 2]  # b (judged 0) at 3.0 and c at 2.0: [2, 3] holds both
    assert score_histogram([{"retrieved": [], "scores": []}]) is None
    # one score (not a whole number: a lone whole one may be a rank, see below)
    one = score_histogram([{"judgments": {}, "retrieved": ["a"], "scores": [5.5]}])
    assert one is not None and one.edges == [5.0, 6.0] and one.other == [1]


def test_scores_that_only_restate_the_rank_are_not_drawn() -> None:
    """A file without scores (Galaxy's predictions) gets n, n-1, ..., 1: a histogram of
    those would picture the ranks. One ranking with real scores brings it back."""
    synthetic = [
        {"judgments": {"a": 1}, "retrieved": ["a", "b", "c"], "scores": [3.0, 2.0, 1.0]},
        {"judgments": {}, "retrieved": ["d"], "scores": [1.0]},
    ]
    assert score_histogram(synthetic) is None
    real = [*synthetic, {"judgments": {}, "retrieved": ["e"], "scores": [7.5]}]
    assert score_histogram(real) is not None
    # a repeated id removed from 5 predictions leaves a gap; a run file's 1000 - rank
    gaps = {"judgments": {}, "retrieved": ["a", "b", "c", "d"], "scores": [5.0, 4.0, 2.0, 1.0]}
    offset = {"judgments": {}, "retrieved": ["a", "b"], "scores": [999, 998]}
    assert score_histogram([gaps, offset]) is None
    ties = {"judgments": {}, "retrieved": ["a", "b"], "scores": [2.0, 2.0]}  # a model's tie
    assert score_histogram([gaps, ties]) is not None


def _histogram_by_pairs(records: list[dict[str, Any]], bins: int) -> tuple[Any, ...] | None:
    """The histogram's definition, one (id, score) pair at a time: what is drawn is
    every score that is a number (not a bool, not NaN or null), on shared bins; nothing
    when every ranking's scores only restate its ranks (n, n-1, ..., 1)."""

    def rank_only(ids: list[str], scores: list[Any]) -> bool:  # whole, each below the last
        kept = scores[: min(len(ids), len(scores))]
        whole = all(type(v) in (int, float) and math.isfinite(v) and v == int(v) for v in kept)
        return whole and all(later < earlier for earlier, later in itertools.pairwise(kept))

    if all(rank_only(r["retrieved"], r["scores"]) for r in records):
        return None
    relevant, other = [], []
    for record in records:
        judged = {d for d, label in record["judgments"].items() if label > 0}
        for doc, score in zip(record["retrieved"], record["scores"], strict=False):
            if type(score) in (int, float) and score == score:
                (relevant if doc in judged else other).append(float(score))
    if not relevant + other:
        return None
    low, high = min(relevant + other), max(relevant + other)
    if low == high:
        low, high, bins = low - 0.5, high + 0.5, 1
    edges = np.linspace(low, high, bins + 1)
    counts = [np.histogram(v, bins=edges)[0].tolist() for v in (relevant, other)]
    return edges.tolist(), *counts


_SCORE = st.one_of(
    st.floats(-5, 5, allow_nan=False),
    st.sampled_from([float("nan"), None, 2, True, "1.5"]),
)


@settings(max_examples=150, deadline=None, database=None)
@given(
    st.lists(
        st.tuples(
            st.dictionaries(st.sampled_from("abc"), st.integers(-1, 2), max_size=3),
            st.lists(st.sampled_from("abcde"), max_size=6),
            st.lists(_SCORE, max_size=7),
        ),
        max_size=5,
    ),
    st.integers(1, 6),
)
def test_score_histogram_is_its_definition_pair_by_pair(
    raw: list[tuple[dict[str, int], list[str], list[Any]]], bins: int
) -> None:
    """Nulls, NaN, ints, bools and strings among the scores, repeated ids, rankings
    longer or shorter than their scores: the vectorised histogram draws what the
    pair-by-pair definition draws."""
    records = [{"judgments": j, "retrieved": r, "scores": s} for j, r, s in raw]
    got = score_histogram(records, bins=bins)
    want = _histogram_by_pairs(records, bins)
    if want is None:
        assert got is None
        return
    assert got is not None
    assert (got.edges, got.relevant, got.other) == want


def test_latency_percentiles_interpolate_between_order_statistics() -> None:
    records = [{"latency_ms": v} for v in (4.0, 1.0, 10.0, 3.0, 2.0)] + [{"latency_ms": None}]
    got = latency_data(records)
    assert got is not None
    assert got.p50 == pytest.approx(3.0)
    # p95: position 0.95 * (5 - 1) = 3.8 between the 4th (4) and 5th (10) values
    assert got.p95 == pytest.approx(4 + 0.8 * (10 - 4))
    assert latency_data([{"latency_ms": None}]) is None


def test_reliability_bins_and_expected_calibration_error() -> None:
    records = [
        {"confidence": 0.05, "status": "✓"},
        {"confidence": 0.15, "status": "✗"},
        {"confidence": 0.85, "status": "✓"},
        {"confidence": 0.95, "status": "✓"},
        {"confidence": 1.0, "status": "⚠"},  # 1.0 falls in the last bin; ⚠ is not ✓
        {"confidence": 0.5, "status": "–"},  # a negative example: left out
        {"status": "✓"},  # no confidence stated
    ]
    got = reliability(records)
    assert got is not None and got.n == 5
    assert [(b.low, b.n) for b in got.bins] == [(0.0, 1), (0.1, 1), (0.8, 1), (0.9, 2)]
    last = got.bins[-1]
    assert (last.confidence, last.accuracy) == pytest.approx((0.975, 0.5))
    gaps = [abs(1 - 0.05), abs(0 - 0.15), abs(1 - 0.85), 2 * abs(0.5 - 0.975)]
    assert got.ece == pytest.approx(sum(gaps) / 5)
    assert reliability([{"confidence": 3.2, "status": "✓"}]) is None  # a score, not a probability
    assert reliability([{"status": "✓"}]) is None


def test_headline_metrics_keep_the_status_criterion() -> None:
    names = ["R@5", "P@5", "nDCG@10", "RR", "AP"]
    assert headline_metrics(names, "RR") == ["R@5", "P@5", "RR"]
    assert headline_metrics(names, "P@5") == ["R@5", "P@5", "nDCG@10"]
    assert headline_metrics(names, "unknown") == ["R@5", "P@5", "nDCG@10"]


def test_the_calibration_analysis_bins_are_drawn_as_it_computed_them() -> None:
    """calibration.json's non-empty bins, with their intervals, ECE and verdict, as written."""
    calibration = {
        "n": 5,
        "ece": 0.12,
        "verdict": "over-confident",
        "bins": [
            {"low": 0.0, "high": 0.5, "count": 0, "mean_confidence": None, "observed_rate": None},
            {"low": 0.5, "high": 1.0, "count": 5, "mean_confidence": 0.8, "observed_rate": 0.6,
             "ci_low": 0.2, "ci_high": 0.9},
        ],
    }  # fmt: skip
    got = calibration_reliability(calibration)
    assert got is not None and (got.n, got.ece, got.verdict) == (5, 0.12, "over-confident")
    assert got.bins == [ReliabilityBin(0.5, 1.0, 0.8, 0.6, 5, 0.2, 0.9)]
    assert calibration_reliability(None) is None
    assert calibration_reliability({"bins": []}) is None


def test_scores_json_cannot_hold_keep_the_scored_order() -> None:
    """An inf score is written to per_query.jsonl as null: the page crashed reading it
    back (the run itself exited 0). The records are in the order the run scored, so the
    ranking keeps that order; the histogram draws only finite scores, and none when
    their range has no finite width (±1e308)."""
    records = [
        {"query_id": "q1", "judgments": {"b": 1}, "retrieved": ["a", "b"], "scores": [None, 2.0]},
    ]
    _, rows = judgments_and_run(records)
    assert rows.doc_ids.tolist() == ["a", "b"] and rows.scores.tolist() == [2.0, 1.0]
    curves = metric_curves(records, Policies(), depth=2)
    assert curves.values["Recall"] == [0.0, 1.0]  # b, the relevant one, at rank 2
    huge = [{"judgments": {}, "retrieved": ["a", "b"], "scores": [1e308, -1e308]}]
    assert score_histogram(huge) is None


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        # Galaxy: Hit, RR and nDCG at 1, 3, 5 and 10
        (["Hit@1", "RR@1", "nDCG@1", "Hit@3", "RR@3"], {"Hit": "Hit", "RR": "RR", "nDCG": "nDCG"}),
        # the quickstart: its headline (R@5, RR, nDCG@10) first, then its other measures
        (
            ["R@5", "RR", "nDCG@10", "R@5", "P@5", "RR", "RR@10", "nDCG@10", "AP", "Hit@5"],
            {"Recall": "R", "RR": "RR", "nDCG": "nDCG"},
        ),
        # B.O.B: RR without a cutoff is still a curve (RR@k)
        (["R@5", "P@5", "RR"], {"Recall": "R", "Precision": "P", "RR": "RR"}),
        # parameterised, a recall-level cutoff, a name this evalframe does not know: none
        (["P(rel=2)@5", "IPrec@0.5", "nope@3"], {"Recall": "R", "Precision": "P", "nDCG": "nDCG"}),
        (["nDCG(gain=1:3)@10", "AP"], {"AP": "AP"}),
    ],
)
def test_the_curves_are_the_runs_own_measures(names: list[str], expected: dict[str, str]) -> None:
    assert curve_families(names) == expected


def test_curves_of_the_runs_own_measures_by_hand() -> None:
    """Hit@k and RR@k of RECORDS, negatives skipped and the missing q4 scored 0."""
    policies = Policies(no_relevant="skip", missing_query="zero")
    got = metric_curves(RECORDS, policies, 3, {"Hit": "Hit", "RR": "RR"})
    assert list(got.values) == ["Hit", "RR"]
    # q1 has b (relevant) at 1; q2 has c at 2; q4 has nothing
    assert got.values["Hit"] == pytest.approx([1 / 3, 2 / 3, 2 / 3])
    assert got.values["RR"] == pytest.approx([1 / 3, (1 + 1 / 2) / 3, (1 + 1 / 2) / 3])


def test_a_measure_equal_to_an_earlier_one_on_every_query_is_passed_over() -> None:
    """Galaxy's shape: Hit@1 = RR@1 = nDCG@1 on every query (binary labels), so the
    three places go to Hit@1, Hit@3 and the criterion RR@10, and the two passed over
    are named."""
    values = [
        {"Hit@1": 1.0, "RR@1": 1.0, "nDCG@1": 1.0, "Hit@3": 1.0, "RR@5": 1.0, "RR@10": 1.0},
        {"Hit@1": 0.0, "RR@1": 0.0, "nDCG@1": 0.0, "Hit@3": 1.0, "RR@5": 0.5, "RR@10": 0.5},
        {"Hit@1": 0.0, "RR@1": 0.0, "nDCG@1": 0.0, "Hit@3": 0.0, "RR@5": 0.0, "RR@10": 0.125},
    ]
    records = [{"metrics": v} for v in values] * 7  # 21: enough that equal is no chance
    names = list(values[0])
    assert headline_metrics(names, "RR@10") == ["Hit@1", "RR@1", "RR@10"]  # no records
    assert headline_metrics(names, "RR@10", records=records) == ["Hit@1", "Hit@3", "RR@10"]
    assert passed_over(names, "RR@10", records) == {"RR@1": "Hit@1", "nDCG@1": "Hit@1"}
    # the criterion is never passed over: the status column names it
    assert headline_metrics(names, "RR@1", records=records) == ["Hit@1", "RR@1", "Hit@3"]
    assert passed_over(names, "RR@1", records) == {"nDCG@1": "Hit@1"}
    # too few queries to tell equal measures from a chance agreement: none passed over
    assert headline_metrics(names, "RR@10", records=records[:19]) == ["Hit@1", "RR@1", "RR@10"]
    assert passed_over(names, "RR@10", records[:19]) == {}
