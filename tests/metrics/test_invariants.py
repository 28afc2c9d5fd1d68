"""Properties of the metric engine over generated judgments and runs.

Three kinds of check:

- invariants that hold whatever the inputs (range, order independence, what an
  unjudged doc at the end changes, monotonicity in k, relations between metrics);
- agreement with a plain-Python, one-query-at-a-time reading of the
  definitions in ``evalframe/metrics/builtin.py`` (including every policy);
- agreement with trec_eval itself is in test_oracle.py.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalframe.core.types import GoldenQuery, GoldenSet, Ranking, Run
from evalframe.metrics import Metric, Policies, Scores, evaluate, parse_metrics
from tests.strategies import (
    PROPERTY_SETTINGS,
    UNJUDGED_DOC,
    Case,
    cases,
    rankings,
)

METRICS = parse_metrics(
    [
        "P@1", "P@3", "P@10", "P(rel=2)@3",
        "R@1", "R@5", "R(rel=2)@5",
        "RR", "RR@3", "RR(rel=2)",
        "AP", "AP@3", "AP(rel=3)@5",
        "nDCG", "nDCG@1", "nDCG@3",
        "Hit@1", "Hit@5", "Hit(rel=2)@3",
    ]
)  # fmt: skip

policies = st.builds(
    Policies,
    no_relevant=st.sampled_from(["skip", "zero", "bob"]),
    missing_query=st.sampled_from(["zero", "skip"]),
)


def as_table(scores: Scores) -> dict[str, np.ndarray]:
    return {str(m): scores.values[m] for m in scores.values}


def assert_same(a: Scores, b: Scores, *, exact: bool = False) -> None:
    assert a.query_ids == b.query_ids
    for m in a.values:
        if exact:
            np.testing.assert_array_equal(a.values[m], b.values[m], err_msg=str(m))
        else:
            np.testing.assert_allclose(
                a.values[m], b.values[m], rtol=1e-12, atol=1e-12, err_msg=str(m)
            )


# -- a plain-Python reading of the definitions --------------------------------------------


def trec_ranked(pairs: Sequence[tuple[str, float]]) -> list[str]:
    """Score descending, then doc id descending (trec_eval)."""
    return [d for d, _ in sorted(pairs, key=lambda p: (p[1], p[0]), reverse=True)]


def reference(
    m: Metric, judged: Mapping[str, int], pairs: Sequence[tuple[str, float]] | None, pol: Policies
) -> float:
    rel = m.rel
    n_rel = sum(1 for label in judged.values() if label >= rel)
    if pairs is None and pol.missing_query == "skip":
        return math.nan
    if n_rel == 0 and pol.no_relevant == "skip":
        return math.nan
    if n_rel == 0 and pol.no_relevant == "bob" and m.name == "R":
        return 1.0
    ranked = [judged.get(d, 0) for d in trec_ranked(pairs or [])]
    top = ranked if m.k is None else ranked[: int(m.k)]
    hits = [label >= rel for label in top]
    if m.name == "P":
        assert m.k is not None
        return sum(hits) / m.k
    if m.name == "R":
        return sum(hits) / n_rel if n_rel else 0.0
    if m.name == "Hit":
        return 1.0 if any(hits) else 0.0
    if m.name == "RR":
        return next((1 / (i + 1) for i, h in enumerate(hits) if h), 0.0)
    if m.name == "AP":
        total, found = 0.0, 0
        for i, h in enumerate(hits):
            if h:
                found += 1
                total += found / (i + 1)
        return total / n_rel if n_rel else 0.0
    if m.name == "nDCG":
        dcg = sum(max(label, 0) / math.log2(i + 2) for i, label in enumerate(top))
        ideal = sorted((max(label, 0) for label in judged.values()), reverse=True)
        if m.k is not None:
            ideal = ideal[: int(m.k)]
        idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
        return dcg / idcg if idcg > 0 else 0.0
    raise AssertionError(f"no reference for {m}")


@PROPERTY_SETTINGS
@given(cases(), policies)
def test_engine_matches_the_definitions_query_by_query(case: Case, pol: Policies) -> None:
    scores = evaluate(METRICS, case.qrels, case.run, pol)
    assert scores.query_ids == tuple(case.qrels)
    for m in METRICS:
        expected = [reference(m, case.qrels[q], case.run.get(q), pol) for q in scores.query_ids]
        np.testing.assert_allclose(
            scores.values[m], expected, rtol=1e-12, atol=1e-12, err_msg=str(m)
        )
        assert scores.skipped[m] == sum(math.isnan(v) for v in expected)
    assert scores.missing == tuple(q for q in case.qrels if q not in case.run)
    assert scores.extra_queries == sum(1 for q in case.run if q not in case.qrels)


# -- invariants -----------------------------------------------------------------------------


@PROPERTY_SETTINGS
@given(cases(), policies)
def test_every_value_is_in_the_unit_interval_or_a_policy_nan(case: Case, pol: Policies) -> None:
    scores = evaluate(METRICS, case.qrels, case.run, pol)
    for m in METRICS:
        v = scores.values[m]
        n_rel = np.array(
            [sum(1 for x in case.qrels[q].values() if x >= m.rel) for q in scores.query_ids]
        )
        present = np.array([q in case.run for q in scores.query_ids], dtype=bool)
        may_skip = ((n_rel == 0) & (pol.no_relevant == "skip")) | (
            ~present & (pol.missing_query == "skip")
        )
        np.testing.assert_array_equal(np.isnan(v), may_skip, err_msg=str(m))
        kept = v[~np.isnan(v)]
        assert np.all(kept >= 0.0), str(m)
        assert np.all(kept <= 1.0 + 1e-12), str(m)


@PROPERTY_SETTINGS
@given(cases(), policies, st.randoms(use_true_random=False))
def test_the_order_a_ranking_is_given_in_does_not_matter(
    case: Case, pol: Policies, rnd: object
) -> None:
    """The engine sorts by (score, doc id); with unique doc ids that is a total order."""
    shuffled = {}
    for qid, pairs in case.run.items():
        items = list(pairs)
        rnd.shuffle(items)  # type: ignore[attr-defined]
        shuffled[qid] = items
    assert_same(
        evaluate(METRICS, case.qrels, case.run, pol),
        evaluate(METRICS, case.qrels, shuffled, pol),
        exact=True,
    )


@PROPERTY_SETTINGS
@given(cases(), policies)
def test_the_order_of_queries_does_not_matter(case: Case, pol: Policies) -> None:
    reversed_run = dict(reversed(list(case.run.items())))
    assert_same(
        evaluate(METRICS, case.qrels, case.run, pol),
        evaluate(METRICS, case.qrels, reversed_run, pol),
    )


@PROPERTY_SETTINGS
@given(cases(), policies)
def test_an_unjudged_doc_at_the_end_changes_nothing(case: Case, pol: Policies) -> None:
    """Every built-in metric is unchanged by a non-relevant doc ranked last.

    P@k still divides by k, so even P@k for k beyond the ranking length is unchanged.
    """
    longer = {}
    for qid, pairs in case.run.items():
        lowest = min((s for _, s in pairs), default=0.0)
        longer[qid] = [*pairs, (UNJUDGED_DOC, lowest - 1.0)]
    assert_same(
        evaluate(METRICS, case.qrels, case.run, pol), evaluate(METRICS, case.qrels, longer, pol)
    )


@PROPERTY_SETTINGS
@given(cases(), policies)
def test_golden_set_and_run_objects_give_the_same_values_as_dicts(
    case: Case, pol: Policies
) -> None:
    golden = GoldenSet.build(
        "g", [GoldenQuery(id=q, text=q, judgments=j) for q, j in case.qrels.items()]
    )
    run = Run(rankings={q: Ranking.from_pairs(q, p) for q, p in case.run.items()})
    assert_same(
        evaluate(METRICS, case.qrels, case.run, pol),
        evaluate(METRICS, golden, run, pol),
        exact=True,
    )


@PROPERTY_SETTINGS
@given(cases())
def test_policies_only_change_the_queries_they_name(case: Case) -> None:
    zero = as_table(evaluate(METRICS, case.qrels, case.run, Policies(no_relevant="zero")))
    skip = as_table(evaluate(METRICS, case.qrels, case.run, Policies(no_relevant="skip")))
    bob = as_table(evaluate(METRICS, case.qrels, case.run, Policies(no_relevant="bob")))
    for m in METRICS:
        z, s, b = zero[str(m)], skip[str(m)], bob[str(m)]
        no_rel = np.isnan(s)
        np.testing.assert_array_equal(s[~no_rel], z[~no_rel])
        assert np.all(z[no_rel] == 0.0), str(m)  # trec_eval scores them 0
        np.testing.assert_array_equal(b[~no_rel], z[~no_rel])
        assert np.all(b[no_rel] == (1.0 if m.name == "R" else 0.0)), str(m)


@PROPERTY_SETTINGS
@given(cases(allow_missing=True))
def test_missing_query_skip_blanks_exactly_the_missing_queries(case: Case) -> None:
    zero = evaluate(METRICS, case.qrels, case.run, Policies(no_relevant="zero"))
    skip = evaluate(
        METRICS, case.qrels, case.run, Policies(no_relevant="zero", missing_query="skip")
    )
    missing = np.array([q not in case.run for q in zero.query_ids], dtype=bool)
    for m in METRICS:
        assert np.all(np.isnan(skip.values[m][missing])), str(m)
        assert np.all(zero.values[m][missing] == 0.0), str(m)
        np.testing.assert_array_equal(skip.values[m][~missing], zero.values[m][~missing])


KS = list(range(1, 12))
BY_K = {
    name: parse_metrics([f"{name}@{k}" for k in KS])
    for name in ("P", "R", "RR", "AP", "nDCG", "Hit")
}
NO_CUTOFF = parse_metrics(["RR", "AP", "nDCG"])


@PROPERTY_SETTINGS
@given(cases())
def test_cutoff_relations(case: Case) -> None:
    pol = Policies(no_relevant="zero")
    metrics = [m for ms in BY_K.values() for m in ms] + NO_CUTOFF
    scores = evaluate(metrics, case.qrels, case.run, pol)
    v = {str(m): scores.values[m] for m in metrics}
    n_rel = np.array([sum(1 for x in case.qrels[q].values() if x >= 1) for q in scores.query_ids])
    eps = 1e-12
    for i, k in enumerate(KS):
        p, r, rr, ap, hit = (v[f"{n}@{k}"] for n in ("P", "R", "RR", "AP", "Hit"))
        # relations between metrics at the same cutoff
        assert np.all(ap <= r + eps)
        assert np.all(rr <= hit)
        np.testing.assert_array_equal(hit, (rr > 0).astype(float))
        assert np.all(p <= hit)
        assert np.all(r <= hit)
        np.testing.assert_allclose(p * k, r * n_rel, atol=1e-9)  # both count relevant in top k
        if i:
            prev = KS[i - 1]
            # monotone in k: more of the ranking can only add
            for name in ("R", "RR", "AP", "Hit"):
                assert np.all(v[f"{name}@{k}"] >= v[f"{name}@{prev}"] - eps), name
            assert np.all(p * k >= v[f"P@{prev}"] * prev - eps)
    np.testing.assert_array_equal(v["P@1"], v["Hit@1"])
    np.testing.assert_array_equal(v["RR@1"], v["Hit@1"])
    # DOC_POOL has 10 ids, so @11 covers every ranking and every judgment list
    for name in ("RR", "AP", "nDCG"):
        np.testing.assert_allclose(v[f"{name}@11"], v[name], rtol=1e-12, atol=1e-12)


@PROPERTY_SETTINGS
@given(
    st.dictionaries(st.sampled_from(["d1", "d2", "d3", "d10", "a"]), st.integers(-1, 3), min_size=1)
)
def test_the_ideal_ranking_scores_one(judged: dict[str, int]) -> None:
    """Judged docs sorted by label, distinct scores: every metric at its maximum."""
    order = sorted(judged, key=lambda d: judged[d], reverse=True)
    pairs = [(d, float(len(order) - i)) for i, d in enumerate(order)]
    n_rel = sum(1 for x in judged.values() if x >= 1)
    metrics = parse_metrics(["nDCG", "nDCG@1", "nDCG@3", "AP", "RR", "R@10", "Hit@10"])
    scores = evaluate(metrics, {"q": judged}, {"q": pairs}, Policies(no_relevant="zero"))
    for m in metrics:
        expected = 1.0 if n_rel else 0.0
        assert scores.values[m][0] == pytest.approx(expected), str(m)


@st.composite
def runs_with_duplicates(draw: st.DrawFn) -> tuple[dict[str, int], list[tuple[str, float]]]:
    judged = draw(st.dictionaries(st.sampled_from(["d1", "d2", "d3", "a"]), st.integers(0, 2)))
    base = draw(rankings())
    extra = draw(
        st.lists(
            st.tuples(
                st.sampled_from([d for d, _ in base] or ["d1"]),
                st.sampled_from([0.0, 0.5, 1.0, 3.0]),
            ),
            min_size=1,
            max_size=4,
        )
    )
    pairs = list(base)
    for item in extra:
        pairs.insert(draw(st.integers(0, len(pairs))), item)
    return judged, pairs


@PROPERTY_SETTINGS
@given(runs_with_duplicates())
def test_keep_first_equals_dropping_later_occurrences(
    case: tuple[dict[str, int], list[tuple[str, float]]],
) -> None:
    judged, pairs = case
    seen: set[str] = set()
    first_only = []
    for d, s in pairs:
        if d not in seen:
            seen.add(d)
            first_only.append((d, s))
    has_dup = len(first_only) < len(pairs)
    kept = evaluate(
        METRICS, {"q": judged}, {"q": pairs}, Policies(no_relevant="zero", duplicates="keep_first")
    )
    deduped = evaluate(METRICS, {"q": judged}, {"q": first_only}, Policies(no_relevant="zero"))
    assert_same(kept, deduped)
    if has_dup:
        from evalframe.core.errors import DataError

        with pytest.raises(DataError):
            evaluate(METRICS, {"q": judged}, {"q": pairs})


# -- agreement with trec_eval -------------------------------------------------------------

# Agreement with trec_eval itself lives in test_oracle.py: pytrec_eval runs in a
# child process there, because it can hang when called many times in one process.


# Every built-in metric, several parameter settings: each per-query value must lie in
# the range its definition declares (MetricDef.bounds), which gates trust to refuse a
# threshold no run can meet.
DECLARED = parse_metrics(
    [
        "P@3", "R@5", "RR", "AP", "nDCG@3", "nDCG(gain=exp)@5", "nDCG(gain=1:3;2:9)",
        "Hit@1", "Rprec", "bpref", "Judged@5", "NumRet", "NumRel", "NumRelRet",
        "SetP", "SetR", "SetF(beta=2)", "IPrec@0.3", "11pt",
    ]
)  # fmt: skip


@PROPERTY_SETTINGS
@given(cases(), policies)
def test_values_lie_within_the_declared_bounds(case: Case, pol: Policies) -> None:
    scores = evaluate(DECLARED, case.qrels, case.run, pol)
    for m in DECLARED:
        bounds = m.bounds
        assert bounds is not None, f"{m} declares no bounds"
        values = scores.values[m][~np.isnan(scores.values[m])]
        low, high = bounds
        assert np.all(values >= low - 1e-12), (m, values.min())
        assert np.all(values <= high + 1e-12), (m, values.max())
