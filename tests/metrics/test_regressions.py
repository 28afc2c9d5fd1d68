"""Bug classes other evaluation tools have shipped, pinned so evalframe never does.

Each expected value is the trec_eval definition worked by hand.
"""

from __future__ import annotations

import pytest

from evalframe.core.errors import ConfigError, DataError
from evalframe.metrics import Policies, evaluate, parse_metric, parse_metrics


def value(metric: str, qrels: dict, run: dict, **policies: str) -> float:  # type: ignore[type-arg]  # literal test data
    scores = evaluate([parse_metric(metric)], qrels, run, Policies(**policies))  # type: ignore[arg-type]  # test literals
    return float(scores.values[parse_metric(metric)][0])


def test_ndcg_when_fewer_than_k_docs_come_back() -> None:
    """mlflow#24541: the ideal DCG is not padded up to k; one relevant doc at rank 1 is perfect."""
    assert value("nDCG@10", {"q": {"a": 1}}, {"q": [("a", 1.0)]}) == 1.0
    # two relevant, one found at rank 1: DCG = 1, IDCG = 1 + 1/log2(3)
    expected = 1.0 / (1.0 + 1.0 / 1.584962500721156)
    assert value("nDCG@10", {"q": {"a": 1, "b": 1}}, {"q": [("a", 1.0)]}) == pytest.approx(expected)


def test_duplicate_ids_cannot_inflate_precision() -> None:
    """mlflow#25965, TruLens#2746: the same relevant doc twice must not count twice."""
    run = {"q": [("a", 2.0), ("a", 1.0), ("x", 0.5)]}
    with pytest.raises(DataError, match="lists doc 'a' more than once"):
        value("P@2", {"q": {"a": 1}}, run)
    # keep_first: the ranking is a, x -> one relevant in the top 2
    assert value("P@2", {"q": {"a": 1}}, run, duplicates="keep_first") == 1 / 2


def test_two_hundred_tied_documents_rank_by_doc_id_descending() -> None:
    """ranx with 200 tied docs, ir_measures#18: ties follow trec_eval, not input order."""
    docs = [f"d{i:03d}" for i in range(200)]
    run = {"q": [(d, 1.0) for d in docs]}  # the relevant d000 is given first...
    # ...but trec order is d199, d198, ..., d000, so it sits at rank 200
    assert value("RR", {"q": {"d000": 1}}, run) == 1 / 200
    assert value("RR", {"q": {"d199": 1}}, run) == 1 / 1


def test_scores_equal_in_float32_are_ties() -> None:
    """trec_eval stores scores as float: 0.1 + 1e-12 and 0.1 tie, so doc id decides."""
    run = {"q": [("a", 0.1 + 1e-12), ("b", 0.1)]}
    assert value("RR", {"q": {"a": 1}}, run) == 1 / 2  # b > a wins the tie
    assert value("RR", {"q": {"a": 1}}, run, score_precision="float64") == 1 / 1


def test_bpref_with_no_judged_nonrelevant_doc_is_defined() -> None:
    """ranx gives NaN; trec_eval gives rel-retrieved / R (1.0 when all are found)."""
    assert (
        value("bpref", {"q": {"a": 1, "b": 1}}, {"q": [("x", 3.0), ("a", 2.0), ("b", 1.0)]}) == 1.0
    )
    assert value("bpref", {"q": {"a": 1, "b": 1}}, {"q": [("a", 1.0)]}) == 1 / 2


def test_bpref_reads_label_minus_one_as_unjudged() -> None:
    """c (-1) is pooled but unjudged, so only d counts as judged non-relevant (N = 1).

    Ranking c, a, d, b: a has no judged non-relevant above it (term 1); b has d
    above it (term 1 - min(1, 2) / min(2, 1) = 0). bpref = (1 + 0) / 2. Reading
    -1 as non-relevant would give (1 - 1/2 + 1 - 2/2) / 2 = 0.25 instead.
    """
    qrels = {"q": {"a": 1, "b": 1, "c": -1, "d": 0}}
    run = {"q": [("c", 4.0), ("a", 3.0), ("d", 2.0), ("b", 1.0)]}
    assert value("bpref", qrels, run) == (1 + 0) / 2
    assert value("Judged@4", qrels, run) == 3 / 4


def test_ndcg_ignores_the_relevance_threshold() -> None:
    """trec_eval's -l affects binary measures only; nDCG takes no rel parameter at all."""
    with pytest.raises(ConfigError, match="bad parameter"):
        parse_metric("nDCG(rel=2)@10")
    qrels = {"q": {"a": 1, "b": 2}}
    run = {"q": [("a", 2.0), ("b", 1.0)]}
    # gains 1, 2 vs ideal 2, 1
    expected = (1 + 2 / 1.584962500721156) / (2 + 1 / 1.584962500721156)
    assert value("nDCG@2", qrels, run) == pytest.approx(expected)
    assert value("P(rel=2)@2", qrels, run) == 1 / 2


def test_missing_and_extra_queries_follow_the_policy_and_are_counted() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    run = {"q1": [("a", 1.0)], "q3": [("z", 1.0)]}
    metrics = parse_metrics(["RR"])
    zero = evaluate(metrics, qrels, run, Policies(missing_query="zero"))
    skip = evaluate(metrics, qrels, run, Policies(missing_query="skip"))
    assert zero.missing == skip.missing == ("q2",)
    assert zero.extra_queries == 1
    assert list(zero.values[metrics[0]]) == [1.0, 0.0]
    assert skip.skipped[metrics[0]] == 1
