"""Metric values, computed by hand from the trec_eval definitions in metrics/builtin.py.

Every expected value is written as the formula that produces it, so a reader
can check it against the definition without running anything.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pytest

from evalframe.core.errors import DataError
from evalframe.core.types import GoldenQuery, GoldenSet, Ranking, Run
from evalframe.metrics import Policies, build_matrix, evaluate, parse_metric, parse_metrics
from evalframe.metrics.engine import trec_order

Qrels = Mapping[str, Mapping[str, int]]
RunDict = Mapping[str, Sequence[tuple[str, float]]]


def lg(x: float) -> float:
    return math.log2(x)


def value(
    metric: str,
    qrels: Qrels,
    run: RunDict,
    qid: str | None = None,
    policies: Policies | None = None,
) -> float:
    """One metric's value for one query (the only query when ``qid`` is None)."""
    m = parse_metric(metric)
    scores = evaluate([m], qrels, run, policies)
    i = 0 if qid is None else scores.query_ids.index(qid)
    return float(scores.values[m][i])


# Three relevant docs (a, c, e); the run returns four docs, two of them unjudged.
QRELS_BINARY = {"q": {"a": 1, "c": 1, "e": 1}}
RUN_BINARY = {"q": [("a", 0.9), ("b", 0.8), ("c", 0.7), ("d", 0.6)]}  # a b c d

# Graded labels, including a judged negative label (f: -1) and a judged zero (d).
QRELS_GRADED = {"q": {"a": 3, "b": 2, "c": 1, "d": 0, "f": -1}}
RUN_GRADED = {"q": [("f", 0.9), ("c", 0.8), ("a", 0.7), ("x", 0.6), ("b", 0.5)]}  # f c a x b


# -- precision ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("metric", "expected"),
    [
        ("P@1", 1 / 1),
        ("P@2", 1 / 2),
        ("P@3", 2 / 3),
        ("P@4", 2 / 4),
        ("P@5", 2 / 5),  # only four docs returned: still divided by k = 5
        ("P@10", 2 / 10),
        ("P@1000", 2 / 1000),
    ],
)
def test_precision_divides_by_k(metric: str, expected: float) -> None:
    assert value(metric, QRELS_BINARY, RUN_BINARY) == pytest.approx(expected)


def test_precision_with_relevance_threshold() -> None:
    # ranks: f(-1) c(1) a(3) x(-) b(2)
    assert value("P@5", QRELS_GRADED, RUN_GRADED) == pytest.approx(3 / 5)  # c, a, b
    assert value("P(rel=2)@5", QRELS_GRADED, RUN_GRADED) == pytest.approx(2 / 5)  # a, b
    assert value("P(rel=2)@3", QRELS_GRADED, RUN_GRADED) == pytest.approx(1 / 3)  # a
    assert value("P(rel=3)@5", QRELS_GRADED, RUN_GRADED) == pytest.approx(1 / 5)  # a
    assert value("P@1", QRELS_GRADED, RUN_GRADED) == 0.0  # a negative label is not relevant


# -- recall ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("metric", "expected"),
    [("R@1", 1 / 3), ("R@2", 1 / 3), ("R@3", 2 / 3), ("R@4", 2 / 3), ("R@100", 2 / 3)],
)
def test_recall_divides_by_the_number_judged_relevant(metric: str, expected: float) -> None:
    assert value(metric, QRELS_BINARY, RUN_BINARY) == pytest.approx(expected)


def test_recall_with_relevance_threshold() -> None:
    # relevant at rel=2: a, b (2 of them); a at rank 3, b at rank 5
    assert value("R(rel=2)@3", QRELS_GRADED, RUN_GRADED) == pytest.approx(1 / 2)
    assert value("R(rel=2)@5", QRELS_GRADED, RUN_GRADED) == pytest.approx(2 / 2)
    # relevant at rel=1: a, b, c (3 of them)
    assert value("R@2", QRELS_GRADED, RUN_GRADED) == pytest.approx(1 / 3)
    assert value("R@5", QRELS_GRADED, RUN_GRADED) == pytest.approx(3 / 3)


# -- reciprocal rank --------------------------------------------------------------------


def test_reciprocal_rank_of_the_first_relevant_doc() -> None:
    qrels = {"q": {"c": 1, "d": 1}}
    run = {"q": [("a", 0.9), ("b", 0.8), ("c", 0.7), ("d", 0.6)]}
    assert value("RR", qrels, run) == pytest.approx(1 / 3)
    assert value("RR@3", qrels, run) == pytest.approx(1 / 3)
    assert value("RR@10", qrels, run) == pytest.approx(1 / 3)
    assert value("RR@2", qrels, run) == 0.0  # first relevant is past the cutoff
    assert value("RR@1", qrels, run) == 0.0


def test_reciprocal_rank_with_graded_labels() -> None:
    assert value("RR", QRELS_GRADED, RUN_GRADED) == pytest.approx(1 / 2)  # c at rank 2
    assert value("RR(rel=2)", QRELS_GRADED, RUN_GRADED) == pytest.approx(1 / 3)  # a at rank 3
    assert value("RR(rel=3)@2", QRELS_GRADED, RUN_GRADED) == 0.0


def test_reciprocal_rank_is_zero_when_nothing_relevant_is_retrieved() -> None:
    assert value("RR", {"q": {"z": 1}}, {"q": [("a", 1.0), ("b", 0.5)]}) == 0.0


# -- average precision ---------------------------------------------------------------


def test_average_precision() -> None:
    # relevant a@1, c@3; e never retrieved but still in the denominator (3)
    assert value("AP", QRELS_BINARY, RUN_BINARY) == pytest.approx((1 / 1 + 2 / 3) / 3)


@pytest.mark.parametrize(
    ("metric", "expected"),
    [
        ("AP@1", (1 / 1) / 3),  # map_cut: denominator is R = 3, not min(k, R) = 1
        ("AP@2", (1 / 1) / 3),  # not min(k, R) = 2
        ("AP@3", (1 / 1 + 2 / 3) / 3),
        ("AP@10", (1 / 1 + 2 / 3) / 3),
    ],
)
def test_average_precision_at_k_is_trec_eval_map_cut(metric: str, expected: float) -> None:
    assert value(metric, QRELS_BINARY, RUN_BINARY) == pytest.approx(expected)


def test_average_precision_with_graded_labels() -> None:
    # rel=1: c@2, a@3, b@5 of R = 3
    assert value("AP", QRELS_GRADED, RUN_GRADED) == pytest.approx((1 / 2 + 2 / 3 + 3 / 5) / 3)
    # rel=2: a@3, b@5 of R = 2
    assert value("AP(rel=2)", QRELS_GRADED, RUN_GRADED) == pytest.approx((1 / 3 + 2 / 5) / 2)
    assert value("AP@3", QRELS_GRADED, RUN_GRADED) == pytest.approx((1 / 2 + 2 / 3) / 3)


# -- nDCG ------------------------------------------------------------------------------


def test_ndcg_binary() -> None:
    # gains 1 0 1 0 at ranks 1-4; ideal 1 1 1
    dcg3 = 1 / lg(2) + 1 / lg(4)
    idcg3 = 1 / lg(2) + 1 / lg(3) + 1 / lg(4)
    assert value("nDCG@3", QRELS_BINARY, RUN_BINARY) == pytest.approx(dcg3 / idcg3)
    assert value("nDCG", QRELS_BINARY, RUN_BINARY) == pytest.approx(dcg3 / idcg3)
    assert value("nDCG@1", QRELS_BINARY, RUN_BINARY) == pytest.approx(1.0)
    assert value("nDCG@2", QRELS_BINARY, RUN_BINARY) == pytest.approx(
        (1 / lg(2)) / (1 / lg(2) + 1 / lg(3))
    )


def test_ndcg_graded_gain_is_the_label() -> None:
    # ranks f(-1) c(1) a(3) x(unjudged) b(2); ideal 3 2 1 0 (d) 0 (f clipped)
    dcg3 = 0 / lg(2) + 1 / lg(3) + 3 / lg(4)
    idcg3 = 3 / lg(2) + 2 / lg(3) + 1 / lg(4)
    assert value("nDCG@3", QRELS_GRADED, RUN_GRADED) == pytest.approx(dcg3 / idcg3)
    dcg = 1 / lg(3) + 3 / lg(4) + 0 / lg(5) + 2 / lg(6)
    idcg = 3 / lg(2) + 2 / lg(3) + 1 / lg(4)
    assert value("nDCG", QRELS_GRADED, RUN_GRADED) == pytest.approx(dcg / idcg)
    assert value("nDCG@10", QRELS_GRADED, RUN_GRADED) == pytest.approx(dcg / idcg)


def test_ndcg_ideal_uses_every_judged_label_not_only_the_retrieved_ones() -> None:
    qrels = {"q": {"a": 1, "b": 1, "c": 1}}
    run = {"q": [("a", 1.0)]}
    assert value("nDCG@3", qrels, run) == pytest.approx(
        (1 / lg(2)) / (1 / lg(2) + 1 / lg(3) + 1 / lg(4))
    )
    assert value("nDCG@1", qrels, run) == pytest.approx(1.0)


def test_ndcg_negative_labels_give_no_gain_and_no_penalty() -> None:
    qrels = {"q": {"bad": -2, "good": 2}}
    with_negative_first = {"q": [("bad", 0.9), ("good", 0.8)]}
    with_unjudged_first = {"q": [("x", 0.9), ("good", 0.8)]}
    expected = (2 / lg(3)) / (2 / lg(2))
    assert value("nDCG", qrels, with_negative_first) == pytest.approx(expected)
    assert value("nDCG", qrels, with_unjudged_first) == pytest.approx(expected)


def test_ndcg_counts_every_positive_label_whatever_the_threshold() -> None:
    """A label-1 doc is a gain for nDCG even though P(rel=2) ignores it."""
    qrels = {"q": {"a": 1, "b": 2}}
    run = {"q": [("a", 0.9), ("b", 0.8)]}
    assert value("nDCG", qrels, run) == pytest.approx(
        (1 / lg(2) + 2 / lg(3)) / (2 / lg(2) + 1 / lg(3))
    )


def test_perfect_ranking_scores_one() -> None:
    qrels = {"q": {"a": 3, "b": 2, "c": 1, "d": 0}}
    run = {"q": [("a", 4.0), ("b", 3.0), ("c", 2.0), ("d", 1.0)]}
    for metric in ("nDCG", "nDCG@2", "AP", "RR", "R@3", "Hit@1", "P@3"):
        assert value(metric, qrels, run) == pytest.approx(1.0), metric


# -- hit -------------------------------------------------------------------------------


def test_hit_at_k() -> None:
    # ranks f(-1) c(1) a(3) x b(2)
    assert value("Hit@1", QRELS_GRADED, RUN_GRADED) == 0.0
    assert value("Hit@2", QRELS_GRADED, RUN_GRADED) == 1.0
    assert value("Hit(rel=2)@2", QRELS_GRADED, RUN_GRADED) == 0.0
    assert value("Hit(rel=2)@3", QRELS_GRADED, RUN_GRADED) == 1.0
    assert value("Hit@100", {"q": {"z": 1}}, {"q": [("a", 1.0)]}) == 0.0


# -- ranking order ------------------------------------------------------------------


def test_run_is_sorted_by_score_not_by_the_order_given() -> None:
    qrels = {"q": {"a": 1}}
    run = {"q": [("b", 0.1), ("c", 0.2), ("a", 0.9)]}  # a is listed last but scores highest
    assert value("RR", qrels, run) == 1.0
    assert value("P@1", qrels, run) == 1.0


def test_ties_are_broken_by_doc_id_descending() -> None:
    run = {"q": [("a", 1.0), ("b", 1.0), ("c", 1.0)]}  # trec_eval order: c, b, a
    assert value("RR", {"q": {"a": 1}}, run) == pytest.approx(1 / 3)
    assert value("RR", {"q": {"b": 1}}, run) == pytest.approx(1 / 2)
    assert value("RR", {"q": {"c": 1}}, run) == pytest.approx(1 / 1)
    assert value("Hit@2", {"q": {"a": 1}}, run) == 0.0
    assert value("Hit@3", {"q": {"a": 1}}, run) == 1.0


def test_tie_order_does_not_depend_on_the_order_given() -> None:
    qrels = {"q": {"a": 1}}
    forward = {"q": [("a", 1.0), ("b", 1.0), ("c", 1.0)]}
    backward = {"q": [("c", 1.0), ("b", 1.0), ("a", 1.0)]}
    assert value("RR", qrels, forward) == value("RR", qrels, backward) == pytest.approx(1 / 3)


def test_tie_order_compares_ids_as_strings() -> None:
    # "9" > "10" as strings, so "9" comes first
    run = {"q": [("10", 1.0), ("9", 1.0)]}
    assert value("RR", {"q": {"10": 1}}, run) == pytest.approx(1 / 2)
    assert value("RR", {"q": {"9": 1}}, run) == pytest.approx(1 / 1)


def test_score_beats_doc_id() -> None:
    run = {"q": [("z", 1.0), ("a", 2.0), ("m", 1.0)]}  # a (2.0), then z, m
    assert value("RR", {"q": {"a": 1}}, run) == 1.0
    assert value("RR", {"q": {"m": 1}}, run) == pytest.approx(1 / 3)


def test_trec_order_helper_matches_the_engine() -> None:
    pairs = [("a", 1.0), ("z", 0.5), ("b", 1.0), ("c", 2.0)]
    assert trec_order(pairs) == [("c", 2.0), ("b", 1.0), ("a", 1.0), ("z", 0.5)]


def test_matrix_holds_labels_in_rank_order() -> None:
    matrix = build_matrix(QRELS_GRADED, RUN_GRADED)
    assert matrix.query_ids == ("q",)
    assert matrix.labels.tolist() == [[-1, 1, 3, 0, 2]]  # f c a x b
    assert matrix.judged.tolist()[0][1:] == [True, True, False, True]  # x is unjudged
    assert matrix.n_ret.tolist() == [5]
    assert matrix.ideal.tolist()[0][:4] == [3, 2, 1, 0]  # judged labels, descending
    assert matrix.num_rel(1).tolist() == [3]
    assert matrix.num_rel(2).tolist() == [2]


# -- unjudged docs --------------------------------------------------------------------


def test_unjudged_docs_count_as_non_relevant() -> None:
    qrels = {"q": {"a": 1, "j": 0}}
    unjudged_first = {"q": [("x", 0.9), ("a", 0.8)]}
    judged_zero_first = {"q": [("j", 0.9), ("a", 0.8)]}
    for run in (unjudged_first, judged_zero_first):
        assert value("RR", qrels, run) == pytest.approx(1 / 2)
        assert value("P@2", qrels, run) == pytest.approx(1 / 2)
        assert value("AP", qrels, run) == pytest.approx((1 / 2) / 1)


# -- several queries, input forms -------------------------------------------------------

QRELS_MULTI = {
    "q1": {"a": 1, "b": 1},
    "q2": {"c": 2, "d": 1},
    "q3": {"e": 1},
}
RUN_MULTI = {
    "q1": [("x", 3.0), ("b", 2.0), ("a", 1.0)],  # x b a
    "q2": [("d", 0.5), ("c", 0.4)],  # d c
    "q3": [("y", 0.3)],  # y
}


def _multi_expected() -> dict[str, list[float]]:
    return {
        "RR": [1 / 2, 1 / 1, 0.0],
        "AP": [(1 / 2 + 2 / 3) / 2, (1 / 1 + 2 / 2) / 2, 0.0],
        "P@2": [1 / 2, 2 / 2, 0 / 2],
        "nDCG@2": [
            (1 / lg(3)) / (1 / lg(2) + 1 / lg(3)),
            (1 / lg(2) + 2 / lg(3)) / (2 / lg(2) + 1 / lg(3)),
            0.0,
        ],
    }


def test_evaluate_several_queries_from_dicts() -> None:
    metrics = parse_metrics(["RR", "AP", "P@2", "nDCG@2"])
    scores = evaluate(metrics, QRELS_MULTI, RUN_MULTI)
    assert scores.query_ids == ("q1", "q2", "q3")
    for m in metrics:
        assert scores.values[m].tolist() == pytest.approx(_multi_expected()[str(m)]), str(m)
    assert scores.missing == ()
    assert scores.extra_queries == 0
    assert all(n == 0 for n in scores.skipped.values())
    per_query = scores.per_query()
    assert per_query["q1"]["RR"] == pytest.approx(1 / 2)
    assert set(per_query["q2"]) == {"RR", "AP", "P@2", "nDCG@2"}


def test_evaluate_golden_set_and_run_objects() -> None:
    golden = GoldenSet.build(
        "g", [GoldenQuery(id=qid, text=qid, judgments=j) for qid, j in QRELS_MULTI.items()]
    )
    run = Run(rankings={qid: Ranking.from_pairs(qid, pairs) for qid, pairs in RUN_MULTI.items()})
    metrics = parse_metrics(["RR", "AP", "P@2", "nDCG@2"])
    scores = evaluate(metrics, golden, run)
    assert scores.query_ids == ("q1", "q2", "q3")
    for m in metrics:
        assert scores.values[m].tolist() == pytest.approx(_multi_expected()[str(m)]), str(m)


def test_dict_of_rankings_is_accepted() -> None:
    run = {qid: Ranking.from_pairs(qid, pairs) for qid, pairs in RUN_MULTI.items()}
    m = parse_metric("RR")
    assert evaluate([m], QRELS_MULTI, run).values[m].tolist() == pytest.approx(
        _multi_expected()["RR"]
    )


def test_integer_ids_match_string_ids() -> None:
    """B.O.B golden sets use integer chunk ids; retrievers return strings."""
    golden = GoldenSet.build("g", [GoldenQuery(id=1, text="t", judgments={12: 1, 13: 1})])
    run = Run(rankings={"1": Ranking.from_pairs("1", [("13", 0.9), ("99", 0.8), ("12", 0.7)])})
    assert value("AP", golden, run) == pytest.approx((1 / 1 + 2 / 3) / 2)  # type: ignore[arg-type]
    qrels_int = {1: {12: 1}}
    run_int = {1: [(12, 0.5), (7, 0.9)]}
    assert value("RR", qrels_int, run_int) == pytest.approx(1 / 2)  # type: ignore[arg-type]


def test_query_order_follows_the_qrels() -> None:
    scores = evaluate([parse_metric("RR")], {"b": {"x": 1}, "a": {"x": 1}}, {"a": [("x", 1.0)]})
    assert scores.query_ids == ("b", "a")
    assert scores.values[parse_metric("RR")].tolist() == [0.0, 1.0]


def test_run_queries_without_judgments_are_counted_as_extra() -> None:
    scores = evaluate(
        [parse_metric("RR")],
        {"q": {"a": 1}},
        {"q": [("a", 1.0)], "other": [("a", 1.0)], "third": []},
    )
    assert scores.query_ids == ("q",)
    assert scores.extra_queries == 2


def test_empty_ranking_scores_zero() -> None:
    metrics = parse_metrics(["P@5", "R@5", "RR", "AP", "nDCG", "nDCG@5", "Hit@5"])
    scores = evaluate(metrics, {"q": {"a": 1}}, {"q": []})
    for m in metrics:
        assert scores.values[m].tolist() == [0.0], str(m)
    assert scores.missing == ()


def test_kernels_work_with_different_ranking_lengths() -> None:
    """Shorter rankings are padded; padding is never relevant."""
    qrels = {"long": {"d": 1}, "short": {"a": 1, "z": 1}}
    run = {
        "long": [("a", 0.9), ("b", 0.8), ("c", 0.7), ("d", 0.6)],
        "short": [("a", 1.0)],
    }
    scores = evaluate(parse_metrics(["P@4", "AP", "RR@10"]), qrels, run)
    assert scores.values[parse_metric("P@4")].tolist() == pytest.approx([1 / 4, 1 / 4])
    assert scores.values[parse_metric("AP")].tolist() == pytest.approx([(1 / 4) / 1, (1 / 1) / 2])
    assert scores.values[parse_metric("RR@10")].tolist() == pytest.approx([1 / 4, 1 / 1])


# -- policies ----------------------------------------------------------------------------

# q1: normal; q2: judged but nothing relevant; q3: no judgments at all (negative
# example); q4: a positive query the run has no ranking for; "extra": not in qrels.
QRELS_POLICY: dict[str, dict[str, int]] = {
    "q1": {"a": 1, "b": 1},
    "q2": {"b": 0},
    "q3": {},
    "q4": {"d": 1},
}
RUN_POLICY = {
    "q1": [("a", 1.0), ("x", 0.5)],
    "q2": [("b", 1.0)],
    "q3": [("c", 1.0)],
    "extra": [("z", 1.0)],
}
POLICY_METRICS = parse_metrics(["P@2", "R@2", "RR", "AP", "nDCG", "Hit@1"])


def _policy_scores(**policy: str) -> dict[str, list[float]]:
    scores = evaluate(POLICY_METRICS, QRELS_POLICY, RUN_POLICY, Policies(**policy))
    assert scores.query_ids == ("q1", "q2", "q3", "q4")
    return {str(m): scores.values[m].tolist() for m in POLICY_METRICS}


Q1 = {
    "P@2": 1 / 2,
    "R@2": 1 / 2,
    "RR": 1 / 1,
    "AP": (1 / 1) / 2,
    "nDCG": 1 / (1 + 1 / lg(3)),
    "Hit@1": 1.0,
}


def test_default_policies_skip_negative_queries_and_zero_missing_ones() -> None:
    got = _policy_scores()
    for name, v in got.items():
        assert v[0] == pytest.approx(Q1[name]), name
        assert math.isnan(v[1]) and math.isnan(v[2]), name  # no relevant: skipped
        assert v[3] == 0.0, name  # missing: zero (trec_eval -c)
    scores = evaluate(POLICY_METRICS, QRELS_POLICY, RUN_POLICY)
    assert scores.missing == ("q4",)
    assert scores.extra_queries == 1
    assert scores.skipped == dict.fromkeys(POLICY_METRICS, 2)


def test_policy_no_relevant_zero() -> None:
    got = _policy_scores(no_relevant="zero")
    for name, v in got.items():
        assert v[0] == pytest.approx(Q1[name]), name
        assert v[1:] == [0.0, 0.0, 0.0], name


def test_policy_no_relevant_bob_gives_recall_one_and_computes_the_rest() -> None:
    got = _policy_scores(no_relevant="bob")
    assert got["R@2"][1:3] == [1.0, 1.0]  # recall of an empty set
    for name in ("P@2", "RR", "AP", "nDCG", "Hit@1"):
        assert got[name][1:3] == [0.0, 0.0], name
    for name, v in got.items():
        assert v[0] == pytest.approx(Q1[name]), name
        assert v[3] == 0.0, name  # q4 has a relevant doc, so bob does not touch it


def test_policy_missing_query_skip() -> None:
    got = _policy_scores(no_relevant="zero", missing_query="skip")
    for name, v in got.items():
        assert v[1:3] == [0.0, 0.0], name
        assert math.isnan(v[3]), name
    scores = evaluate(
        POLICY_METRICS, QRELS_POLICY, RUN_POLICY, Policies(no_relevant="zero", missing_query="skip")
    )
    assert scores.skipped == dict.fromkeys(POLICY_METRICS, 1)


def test_missing_negative_query_is_skipped_by_either_rule() -> None:
    qrels = {"q": {}, "p": {"a": 1}}
    run = {"p": [("a", 1.0)]}
    pol = Policies(no_relevant="bob", missing_query="skip")
    assert math.isnan(value("R@5", qrels, run, "q", pol))
    assert value("R@5", qrels, run, "p", pol) == 1.0


def test_no_relevant_uses_the_metric_threshold() -> None:
    """A query whose best label is 1 has nothing relevant for P(rel=2)."""
    qrels = {"q": {"a": 1}}
    run = {"q": [("a", 1.0)]}
    assert value("P@1", qrels, run) == 1.0
    assert math.isnan(value("P(rel=2)@1", qrels, run))
    assert value("P(rel=2)@1", qrels, run, policies=Policies(no_relevant="zero")) == 0.0
    assert value("R(rel=2)@1", qrels, run, policies=Policies(no_relevant="bob")) == 1.0


def test_policies_reject_unknown_values() -> None:
    with pytest.raises(ValueError, match="no_relevant"):
        Policies(no_relevant="ignore")
    with pytest.raises(ValueError, match="extra"):
        Policies(typo="x")  # type: ignore[call-arg]


# -- duplicates -------------------------------------------------------------------------


def test_duplicate_doc_is_an_error_by_default() -> None:
    run = {"q": [("a", 0.5), ("b", 0.9), ("a", 0.95)]}
    with pytest.raises(DataError) as info:
        evaluate([parse_metric("RR")], {"q": {"a": 1}}, run)
    err = info.value
    assert "query 'q' lists doc 'a' more than once" in err.message
    assert err.key == "metrics.policies.duplicates"
    assert err.hint is not None and "keep_first" in err.hint


def test_a_duplicate_in_a_retrievers_ranking_is_said_as_the_retrievers() -> None:
    """A fresh run names its retriever: the duplicate is its doing, not the policy's."""
    from evalframe.core.types import Ranking, Run

    ranking = Ranking.from_pairs("q", [("a", 0.9), ("b", 0.5), ("a", 0.4)])
    run = Run(rankings={"q": ranking}, metadata={"retriever": "r03"})
    with pytest.raises(DataError) as info:
        evaluate([parse_metric("RR")], {"q": {"a": 1}}, run)
    err = info.value
    assert err.message == (
        "retriever 'r03' returned a ranking with a document twice: query 'q' lists doc 'a' "
        "more than once (1 duplicate entries in the run)"
    )
    assert err.key == "retriever"
    assert err.hint is not None and "keep_first" in err.hint


def test_duplicates_keep_first_keeps_the_first_occurrence_in_the_given_order() -> None:
    # first a scores 0.5, so the order is b (0.9), a (0.5): RR = 1/2.
    # Keeping the later (0.95) occurrence instead would give RR = 1.
    run = {"q": [("a", 0.5), ("b", 0.9), ("a", 0.95)]}
    pol = Policies(duplicates="keep_first")
    assert value("RR", {"q": {"a": 1}}, run, policies=pol) == pytest.approx(1 / 2)
    assert value("P@3", {"q": {"a": 1}}, run, policies=pol) == pytest.approx(1 / 3)
    matrix = build_matrix({"q": {"a": 1}}, run, duplicates="keep_first")
    assert matrix.n_ret.tolist() == [2]


def test_duplicates_keep_first_with_ranking_objects_and_several_queries() -> None:
    run = Run(
        rankings={
            "q1": Ranking.from_pairs("q1", [("b", 0.1), ("a", 0.2), ("b", 0.9)]),  # a, b
            "q2": Ranking.from_pairs("q2", [("b", 0.9), ("b", 0.1), ("a", 0.2)]),  # b, a
        }
    )
    qrels = {"q1": {"b": 1}, "q2": {"b": 1}}
    m = parse_metric("RR")
    scores = evaluate([m], qrels, run, Policies(duplicates="keep_first"))
    assert scores.values[m].tolist() == pytest.approx([1 / 2, 1 / 1])


def test_same_doc_in_two_queries_is_not_a_duplicate() -> None:
    run = {"q1": [("a", 1.0)], "q2": [("a", 1.0)]}
    m = parse_metric("RR")
    assert evaluate([m], {"q1": {"a": 1}, "q2": {"a": 1}}, run).values[m].tolist() == [1.0, 1.0]


def test_empty_inputs() -> None:
    m = parse_metric("nDCG@10")
    scores = evaluate([m], {}, {})
    assert scores.query_ids == ()
    assert scores.values[m].shape == (0,)
    assert np.isnan(scores.values[m]).sum() == 0


# -- third-party kernels ----------------------------------------------------------------


def test_a_third_party_kernel_is_evaluated_like_a_built_in() -> None:
    from evalframe.metrics import MetricParams, ScoreMatrix, metric
    from evalframe.plugin.registry import METRICS

    with METRICS.scoped():

        @metric("TestJudgedFrac", params=MetricParams, k="required")
        def judged_frac(m: ScoreMatrix, k: int, p: MetricParams) -> np.ndarray:
            """Judged at k: the fraction of the top k that has a judgment."""
            return np.asarray(m.judged[:, :k].sum(axis=1) / float(k))

        qrels = {"q": {"a": 0, "b": 1}}
        run = {"q": [("x", 0.9), ("a", 0.8), ("b", 0.7)]}  # x is unjudged
        assert value("TestJudgedFrac@3", qrels, run) == pytest.approx(2 / 3)
        assert value("TestJudgedFrac@1", qrels, run) == 0.0
        assert value("TestJudgedFrac@10", qrels, run) == pytest.approx(2 / 10)
    assert "TestJudgedFrac" not in METRICS._specs


def test_a_kernel_returning_the_wrong_shape_is_an_error_naming_its_module() -> None:
    from evalframe.metrics import MetricParams, ScoreMatrix, metric
    from evalframe.plugin.registry import METRICS

    with METRICS.scoped():

        @metric("TestBadShape", k="optional")
        def bad(m: ScoreMatrix, k: int | None, p: MetricParams) -> np.ndarray:
            return np.zeros(len(m.query_ids) + 1)

        with pytest.raises(DataError) as info:
            evaluate([parse_metric("TestBadShape")], {"q": {"a": 1}}, {"q": [("a", 1.0)]})
    err = info.value
    assert "returned shape (2,)" in err.message
    assert "one value per query (1)" in err.message
    assert err.hint is not None and bad.__module__ in err.hint
