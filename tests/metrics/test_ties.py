"""The tie policy: ``trec_eval`` (doc id descending) or ``given`` (the retriever's order).

Expected values come from B.O.B's own formulas (tests/bob_oracle.py, written
from reference 000), applied to each list in the order the retriever gave it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalframe.core.types import GoldenQuery, GoldenSet, Ranking, Run
from evalframe.metrics import Policies, build_matrix, evaluate, parse_metrics
from evalframe.metrics.order import block_rank_order, rank_order, trec_order
from tests import bob_oracle as bob
from tests.strategies import PROPERTY_SETTINGS

TIES = Path(__file__).resolve().parents[1] / "data" / "bob_ties"
BOB = parse_metrics(["R@5", "P@5", "RR"])
GIVEN = Policies(no_relevant="bob", ties="given")
TREC = Policies(no_relevant="bob", ties="trec_eval")


def _tie_case() -> tuple[list[dict[str, object]], dict[str, list[list[object]]]]:
    golden = bob.read_golden(TIES / "golden.jsonl")
    service = json.loads((TIES / "service.json").read_text(encoding="utf-8"))
    return golden, service


def _as_evalframe(
    golden: list[dict[str, object]], service: dict[str, list[list[object]]]
) -> tuple[GoldenSet, Run]:
    queries = [
        GoldenQuery(
            id=str(g["id"]),
            text=str(g["question"]),
            judgments={str(c): 1 for c in g["expected_chunks"]},  # type: ignore[attr-defined]
        )
        for g in golden
    ]
    run = Run(
        rankings={
            qid: Ranking.from_pairs(qid, [(str(d), float(s)) for d, s in pairs])  # type: ignore[arg-type]
            for qid, pairs in service.items()
        }
    )
    return GoldenSet.build("ties", queries), run


def _means(golden: GoldenSet, run: Run, policies: Policies) -> dict[str, float]:
    scores = evaluate(BOB, golden, run, policies)
    return {str(m): float(np.nanmean(v)) for m, v in scores.values.items()}


def test_the_tie_case_gives_bobs_numbers_under_the_given_rule() -> None:
    golden, service = _tie_case()
    expected = bob.evaluate_golden_set(golden, lambda g: [d for d, _ in service[str(g["id"])]])
    means = _means(*_as_evalframe(golden, service), GIVEN)
    assert means["R@5"] == pytest.approx(expected["recall_mean"], abs=1e-9)
    assert means["P@5"] == pytest.approx(expected["precision_mean"], abs=1e-9)
    assert means["RR"] == pytest.approx(expected["mrr_mean"], abs=1e-9)


def test_the_tie_case_under_trec_eval_ranks_ties_by_id_descending_in_byte_order() -> None:
    golden, service = _tie_case()

    def trec_sorted(g: dict[str, object]) -> list[object]:
        pairs = [(str(d), float(s)) for d, s in service[str(g["id"])]]
        # score descending, then the id string descending: "9" comes before "45"
        return [int(d) for d, _ in sorted(pairs, key=lambda p: (p[1], p[0]), reverse=True)]

    expected = bob.evaluate_golden_set(golden, trec_sorted)
    as_given = bob.evaluate_golden_set(golden, lambda g: [d for d, _ in service[str(g["id"])]])
    means = _means(*_as_evalframe(golden, service), TREC)
    assert means["RR"] == pytest.approx(expected["mrr_mean"], abs=1e-9)
    assert means["R@5"] == pytest.approx(expected["recall_mean"], abs=1e-9)
    # the rule matters on this case: the two readings disagree
    assert expected["mrr_mean"] != pytest.approx(as_given["mrr_mean"], abs=1e-6)


def test_the_tie_summary_counts_queries_with_a_tie_inside_the_top_k() -> None:
    golden, service = _tie_case()
    gs, run = _as_evalframe(golden, service)
    scores = evaluate(BOB, gs, run, GIVEN)
    # by hand: a query counts when two of its scores are equal and one is at rank <= 5
    by_hand = sum(
        1
        for pairs in service.values()
        if any(pairs[i][1] == pairs[i + 1][1] for i in range(min(5, len(pairs) - 1)))
    )
    assert scores.ties is not None
    assert (scores.ties.rule, scores.ties.k, scores.ties.ranked) == ("given", 5, 24)
    assert scores.ties.queries == by_hand


def test_a_string_id_order_is_not_a_numeric_order() -> None:
    """Under trec_eval, "9" outranks "45" (bytes); under given, the retriever's order stands."""
    qrels = {"q": {"45": 1}}
    run = {"q": [("45", 0.5), ("9", 0.5)]}
    trec = evaluate(parse_metrics(["RR"]), qrels, run, Policies(ties="trec_eval"))
    kept = evaluate(parse_metrics(["RR"]), qrels, run, Policies(ties="given"))
    assert trec.values[parse_metrics(["RR"])[0]][0] == 1 / 2
    assert kept.values[parse_metrics(["RR"])[0]][0] == 1 / 1


@pytest.mark.parametrize("precision", ["float32", "float64"])
def test_given_sorts_by_score_and_keeps_the_order_only_among_equal_scores(precision: str) -> None:
    run = {"q": [("a", 1.0), ("b", 2.0), ("c", 1.0), ("d", float("nan")), ("e", 2.0)]}
    matrix = build_matrix({"q": {"c": 1}}, run, ties="given", score_precision=precision)  # type: ignore[arg-type]
    # ranks: b, e (2.0, given order), a, c (1.0, given order), d (NaN last)
    assert matrix.labels[0].tolist() == [0, 0, 0, 1, 0]
    assert [d for d, _ in rank_order(run["q"], "given", precision)] == ["b", "e", "a", "c", "d"]  # type: ignore[arg-type]


def test_float32_equal_scores_tie_under_given_too() -> None:
    """1.0 and 1.0 + 1e-9 are equal in float32: the given order decides, not the tiny gap."""
    run = {"q": [("a", 1.0), ("b", 1.0 + 1e-9)]}
    m32 = build_matrix({"q": {"a": 1}}, run, ties="given", score_precision="float32")
    m64 = build_matrix({"q": {"a": 1}}, run, ties="given", score_precision="float64")
    assert m32.labels[0].tolist() == [1, 0]
    assert m64.labels[0].tolist() == [0, 1]


def test_rank_order_under_trec_eval_is_trec_order() -> None:
    pairs = [("a", 1.0), ("z", 0.5), ("c", 2.0), ("b", 1.0)]
    assert rank_order(pairs, "trec_eval") == trec_order(pairs)


# -- property: `ties: given` is B.O.B's formulas on any list a retriever returns ---------

TWO_DECIMALS = st.sampled_from([0.9, 0.85, 0.85, 0.8, 0.8, 0.8, 0.5, 0.5])
IDS = st.sampled_from(["1", "2", "9", "12", "45", "100", "a", "B"])


@st.composite
def retrieved_lists(draw: st.DrawFn) -> list[tuple[str, float]]:
    """A retriever's answer: best first by score, equal scores in its own (arbitrary) order."""
    docs = draw(st.lists(IDS, unique=True, max_size=8))
    scores = sorted(draw(st.lists(TWO_DECIMALS, min_size=len(docs), max_size=len(docs))))
    return list(zip(docs, reversed(scores), strict=True))


@PROPERTY_SETTINGS
@given(
    data=st.lists(
        st.tuples(st.lists(IDS, unique=True, max_size=4), retrieved_lists()),
        min_size=1,
        max_size=6,
    )
)
def test_given_equals_bobs_formulas_on_rankings_with_ties(
    data: list[tuple[list[str], list[tuple[str, float]]]],
) -> None:
    qrels = {f"q{i}": dict.fromkeys(expected, 1) for i, (expected, _) in enumerate(data)}
    run = {f"q{i}": pairs for i, (_, pairs) in enumerate(data)}
    scores = evaluate(BOB, qrels, run, GIVEN)
    r5, p5, rr = (scores.values[m] for m in BOB)
    for i, (expected, pairs) in enumerate(data):
        retrieved = [d for d, _ in pairs]
        assert r5[i] == pytest.approx(bob.recall_at_k(expected, retrieved, 5), abs=1e-12)
        assert p5[i] == pytest.approx(bob.precision_at_k(expected, retrieved, 5), abs=1e-12)
        assert rr[i] == pytest.approx(bob.mrr(expected, retrieved), abs=1e-12)
        assert not math.isnan(r5[i])


@PROPERTY_SETTINGS
@given(pairs=retrieved_lists())
def test_the_two_rules_agree_when_no_scores_tie(pairs: list[tuple[str, float]]) -> None:
    distinct = [(d, float(i)) for i, (d, _) in enumerate(reversed(pairs))]
    qrels = {"q": {d: 1 for d, _ in distinct[::2]}}
    a = evaluate(BOB, qrels, {"q": distinct}, GIVEN)
    b = evaluate(BOB, qrels, {"q": distinct}, TREC)
    for m in BOB:
        np.testing.assert_array_equal(a.values[m], b.values[m])


@settings(max_examples=80, deadline=None)
@given(
    rankings=st.lists(
        st.lists(
            st.tuples(
                st.sampled_from(["a", "b", "c", "d", "é", "aa"]),
                st.sampled_from([0.5, 1.0, 1.0000001, 2.0, float("nan")]),
            ),
            max_size=8,
        ),
        max_size=6,
    ),
    ties=st.sampled_from(["trec_eval", "given"]),
    precision=st.sampled_from(["float32", "float64"]),
)
def test_block_rank_order_of_many_rankings_is_rank_order_of_each(
    rankings: list[list[tuple[str, float]]], ties: str, precision: str
) -> None:
    """One vectorised sort for all the rankings laid end to end gives each one's
    rank_order inside its own block, and says which rankings it moved; a NaN score
    goes last, where the metric engine ranks it (rank_order leaves it where the
    unordered comparison of a one-by-one sort happens to put it)."""
    flat = [pair for r in rankings for pair in r]
    order, moved = block_rank_order(
        np.asarray([len(r) for r in rankings], dtype=np.int64),
        np.asarray([s for _, s in flat], dtype=np.float64),
        np.asarray([d for d, _ in flat], dtype=str),
        ties,  # type: ignore[arg-type]
        precision,  # type: ignore[arg-type]
    )
    assert moved.shape == (len(rankings),)
    # a run file's ids as the UTF-8 bytes read (RunRows keeps ASCII ones so): the same order
    as_bytes, _ = block_rank_order(
        np.asarray([len(r) for r in rankings], dtype=np.int64),
        np.asarray([s for _, s in flat], dtype=np.float64),
        np.asarray([d.encode() for d, _ in flat], dtype="S"),
        ties,  # type: ignore[arg-type]
        precision,  # type: ignore[arg-type]
    )
    assert as_bytes.tolist() == order.tolist()
    start = 0
    for i, pairs in enumerate(rankings):
        local = (order[start : start + len(pairs)] - start).tolist()
        start += len(pairs)
        assert sorted(local) == list(range(len(pairs)))
        assert moved[i] == (local != list(range(len(pairs))))
        got = [pairs[j] for j in local]
        numbers = [p for p in pairs if not math.isnan(p[1])]
        assert got[: len(numbers)] == rank_order(numbers, ties, precision)  # type: ignore[arg-type]
        assert all(math.isnan(s) for _, s in got[len(numbers) :])


def test_a_cutoff_beyond_every_ranking_is_reported_as_the_whole_ranking() -> None:
    """Rankings of 2 scored at @10: the line says "in the ranking", not "within the top 10"."""
    qrels = {"a": {"x": 1}, "b": {"y": 1}}
    run = {"a": [("x", 0.5), ("z", 0.5)], "b": [("y", 0.9), ("w", 0.1)]}
    scores = evaluate(parse_metrics(["nDCG@10"]), qrels, run, GIVEN)
    assert scores.ties is not None
    # by hand: only query a has two equal scores
    assert (scores.ties.k, scores.ties.queries, scores.ties.ranked) == (None, 1, 2)
    assert scores.ties.describe().endswith("1 of 2 queries have equal scores in the ranking")
    # at a cutoff the rankings reach, the cutoff is named
    at_two = evaluate(parse_metrics(["P@2"]), qrels, run, GIVEN)
    assert at_two.ties is not None and at_two.ties.k == 2
