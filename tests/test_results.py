"""Aggregates, per-slice results, and the GateView that gate plugins read."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest

from evalframe.assess.results import Aggregate, Evaluation, GateView, aggregate, latency_summary
from evalframe.core.errors import ConfigError
from evalframe.core.types import GoldenQuery, GoldenSet, Ranking, Run
from evalframe.metrics import Metric, Policies, evaluate, parse_metric, parse_metrics


def sample_std(xs: Sequence[float]) -> float:
    mean = sum(xs) / len(xs)
    return math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1))


# -- aggregate --------------------------------------------------------------------------


def test_aggregate_mean_and_sample_std() -> None:
    agg = aggregate(np.array([0.2, 0.4, 0.9]))
    mean = (0.2 + 0.4 + 0.9) / 3
    assert agg.mean == pytest.approx(mean)
    assert agg.std == pytest.approx(
        math.sqrt(((0.2 - mean) ** 2 + (0.4 - mean) ** 2 + (0.9 - mean) ** 2) / (3 - 1))
    )
    assert agg.n == 3
    assert agg.skipped == 0


def test_aggregate_std_uses_n_minus_one() -> None:
    agg = aggregate(np.array([0.0, 1.0]))
    assert agg.mean == pytest.approx(1 / 2)
    assert agg.std == pytest.approx(math.sqrt(((0 - 0.5) ** 2 + (1 - 0.5) ** 2) / 1))
    assert agg.std != pytest.approx(0.5)  # the population std


def test_aggregate_single_value_has_zero_std() -> None:
    agg = aggregate(np.array([0.7]))
    assert (agg.mean, agg.std, agg.n, agg.skipped) == (0.7, 0.0, 1, 0)
    assert math.isnan(agg.ci_low) and math.isnan(agg.ci_high)  # no bootstrap asked for


def test_bootstrap_ci_is_reproducible_under_a_seed_and_brackets_the_mean() -> None:
    values = np.array([0.0, 1.0, 0.5, 1.0, 0.0, 1.0, 0.25, 0.75])
    first = aggregate(values, bootstrap=500, seed=7)
    again = aggregate(values, bootstrap=500, seed=7)
    other = aggregate(values, bootstrap=500, seed=8)
    assert (first.ci_low, first.ci_high) == (again.ci_low, again.ci_high)
    assert (first.ci_low, first.ci_high) != (other.ci_low, other.ci_high)
    assert first.ci_low < first.mean < first.ci_high
    assert first.ci_low >= 0.0 and first.ci_high <= 1.0


def test_bootstrap_ci_of_a_constant_is_that_constant() -> None:
    agg = aggregate(np.full(30, 0.4), bootstrap=200, seed=0)
    assert agg.ci_low == pytest.approx(0.4) and agg.ci_high == pytest.approx(0.4)


def test_bootstrap_ci_covers_the_true_mean_about_95_percent_of_the_time() -> None:
    """Bernoulli(0.3) samples of 200 queries: a 95% interval covers 0.3 in ~95% of trials."""
    rng = np.random.default_rng(123)
    covered = 0
    for trial in range(100):
        sample = (rng.random(200) < 0.3).astype(float)
        agg = aggregate(sample, bootstrap=400, seed=trial)
        covered += agg.ci_low <= 0.3 <= agg.ci_high
    assert 88 <= covered <= 100


def test_total_is_the_sum_trec_eval_reports_for_counts() -> None:
    assert aggregate(np.array([3.0, math.nan, 4.0])).total == 7.0


def test_aggregate_ignores_nan_and_counts_it_as_skipped() -> None:
    agg = aggregate(np.array([math.nan, 1.0, 0.0, math.nan, 0.5]))
    assert agg.mean == pytest.approx((1.0 + 0.0 + 0.5) / 3)
    assert agg.std == pytest.approx(sample_std([1.0, 0.0, 0.5]))
    assert agg.n == 3
    assert agg.skipped == 2


def test_aggregate_single_value_after_nan_has_zero_std() -> None:
    agg = aggregate(np.array([math.nan, 0.25]))
    assert (agg.mean, agg.std, agg.n, agg.skipped) == (0.25, 0.0, 1, 1)


def test_aggregate_all_nan() -> None:
    agg = aggregate(np.array([math.nan, math.nan]))
    assert math.isnan(agg.mean)
    assert math.isnan(agg.std)
    assert agg.n == 0
    assert agg.skipped == 2


def test_aggregate_empty() -> None:
    agg = aggregate(np.array([]))
    assert math.isnan(agg.mean)
    assert (agg.n, agg.skipped) == (0, 0)


def test_aggregate_accepts_a_list_and_serialises() -> None:
    agg = aggregate([1, 0])  # type: ignore[arg-type]
    as_dict = agg.as_dict()
    ci = (as_dict.pop("ci_low"), as_dict.pop("ci_high"))
    assert as_dict == {
        "mean": 0.5,
        "std": pytest.approx(math.sqrt(0.5)),
        "n": 2,
        "skipped": 0,
    }
    assert all(math.isnan(v) for v in ci)


def test_latency_summary() -> None:
    s = latency_summary([10.0, 30.0, 20.0])
    assert s["p50_ms"] == pytest.approx(20.0)
    assert s["p95_ms"] == pytest.approx(20.0 + 0.9 * (30.0 - 20.0))  # linear interpolation
    assert s["mean_ms"] == pytest.approx((10 + 30 + 20) / 3)
    assert s["max_ms"] == 30.0
    assert latency_summary([]) == {}


# -- Evaluation.build and slices ----------------------------------------------------------

# RR per query (default policies: a query with nothing relevant is skipped):
#   q1 easy/setup          a at rank 1          RR = 1
#   q2 easy/gates          b at rank 2          RR = 1/2
#   q3 hard/setup          c at rank 3          RR = 1/3
#   q4 (no difficulty)/gates   nothing retrieved    RR = 0
#   q5 hard/(no category)  negative example     RR = NaN (skipped)
GOLDEN = GoldenSet.build(
    "g",
    [
        GoldenQuery(
            id="q1",
            text="1",
            judgments={"a": 1},
            metadata={"difficulty": "easy", "category": "setup", "level": 1},
        ),
        GoldenQuery(
            id="q2",
            text="2",
            judgments={"b": 1},
            metadata={"difficulty": "easy", "category": "gates", "level": 2},
        ),
        GoldenQuery(
            id="q3",
            text="3",
            judgments={"c": 1},
            metadata={"difficulty": "hard", "category": "setup", "notes": "why"},
        ),
        GoldenQuery(
            id="q4",
            text="4",
            judgments={"d": 1},
            metadata={"category": "gates", "tags": ["x", "y"]},
        ),
        GoldenQuery(id="q5", text="5", judgments={}, metadata={"difficulty": "hard"}),
    ],
)
RUN = Run(
    rankings={
        "q1": Ranking.from_pairs("q1", [("a", 1.0)], latency_ms=10.0),
        "q2": Ranking.from_pairs("q2", [("x", 0.9), ("b", 0.8)], latency_ms=30.0),
        "q3": Ranking.from_pairs("q3", [("x", 0.9), ("y", 0.8), ("c", 0.7)]),
        "q4": Ranking.from_pairs("q4", []),
        "q5": Ranking.from_pairs("q5", [("z", 1.0)]),
    }
)
RR = parse_metric("RR")
P1 = parse_metric("P@1")
METRICS = [RR, P1]
RR_BY_QUERY = {"q1": 1.0, "q2": 1 / 2, "q3": 1 / 3, "q4": 0.0}
P1_BY_QUERY = {"q1": 1.0, "q2": 0.0, "q3": 0.0, "q4": 0.0}


def build(slice_fields: Sequence[str] | None = None) -> Evaluation:
    policies = Policies()
    scores = evaluate(METRICS, GOLDEN, RUN, policies)
    return Evaluation.build(GOLDEN, RUN, scores, METRICS, policies, slice_fields)


def check(agg: Aggregate, values: Sequence[float], skipped: int = 0) -> None:
    assert agg.n == len(values)
    assert agg.skipped == skipped
    assert agg.mean == pytest.approx(sum(values) / len(values))
    assert agg.std == pytest.approx(sample_std(values) if len(values) > 1 else 0.0)


def test_overall_aggregates() -> None:
    ev = build()
    check(ev.overall[RR], [1, 1 / 2, 1 / 3, 0], skipped=1)
    check(ev.overall[P1], [1, 0, 0, 0], skipped=1)
    assert ev.metrics == METRICS
    assert ev.per_query_value(RR, "q3") == pytest.approx(1 / 3)
    assert math.isnan(ev.per_query_value(RR, "q5"))


def test_aggregates_computed_beside_the_caller_are_the_same_and_raise_when_read() -> None:
    """`beside=True` (the pipeline's: the intervals on a thread while the records are
    built) gives exactly the numbers of the plain build; a failure there is raised when
    the aggregates are first read, not lost with the thread."""
    policies = Policies()
    scores = evaluate(METRICS, GOLDEN, RUN, policies)

    def made(beside: bool) -> Evaluation:
        return Evaluation.build(
            GOLDEN, RUN, scores, METRICS, policies, bootstrap=200, seed=3, beside=beside
        )

    plain, beside = made(False), made(True)
    assert beside.overall == plain.overall and beside.by_slice == plain.by_slice
    check(beside.overall[RR], [1, 1 / 2, 1 / 3, 0], skipped=1)
    broken = {m: np.array(["x"] * 5) for m in METRICS}  # not numbers: float64 refuses
    scores.values = broken
    failing = Evaluation.build(
        GOLDEN, RUN, scores, METRICS, policies, [], bootstrap=10, seed=3, beside=True
    )
    with pytest.raises(ValueError, match="could not convert"):
        _ = failing.overall


def test_per_query_value_finds_every_query_and_names_one_not_scored() -> None:
    ev = build()
    rr = {"q1": 1.0, "q2": 1 / 2, "q3": 1 / 3, "q4": 0.0}  # by hand, as in test_overall
    for qid, value in rr.items():
        assert ev.per_query_value(RR, qid) == pytest.approx(value)
    with pytest.raises(ValueError, match="'q99' was not scored"):
        ev.per_query_value(RR, "q99")
    # a Scores whose ids are replaced answers for the new ids, not the old positions
    ev.scores.query_ids = tuple(reversed(ev.scores.query_ids))
    assert ev.scores.position(ev.scores.query_ids[0]) == 0


def test_slice_fields_default_to_scalar_metadata_except_notes() -> None:
    ev = build()
    assert ev.slice_fields == ["difficulty", "category", "level"]
    assert set(ev.by_slice) == {"difficulty", "category", "level"}


def test_slices_group_queries_by_value_with_unset_for_missing_fields() -> None:
    ev = build()
    difficulty = ev.by_slice["difficulty"]
    assert list(difficulty) == ["easy", "hard", "unset"]
    check(difficulty["easy"][RR], [1, 1 / 2])
    check(difficulty["hard"][RR], [1 / 3], skipped=1)  # q5 is skipped
    check(difficulty["unset"][RR], [0])  # q4
    check(difficulty["easy"][P1], [1, 0])

    category = ev.by_slice["category"]
    assert list(category) == ["gates", "setup", "unset"]
    check(category["gates"][RR], [1 / 2, 0])
    check(category["setup"][RR], [1, 1 / 3])
    assert category["unset"][RR].n == 0
    assert category["unset"][RR].skipped == 1
    assert math.isnan(category["unset"][RR].mean)

    level = ev.by_slice["level"]
    assert list(level) == ["1", "2", "unset"]  # values become strings
    check(level["2"][RR], [1 / 2])


def test_explicit_slice_fields() -> None:
    ev = build(["category"])
    assert ev.slice_fields == ["category"]
    assert list(ev.by_slice) == ["category"]
    assert build([]).by_slice == {}


def _many_queries(n: int = 30) -> GoldenSet:
    """A KnowCode-like set: a few difficulties, a free-text narrative, a count per query."""
    narratives = [
        f"The user opens the settings page and changes option number {i % 10} before saving"
        for i in range(n)
    ]
    return GoldenSet.build(
        "many",
        [
            GoldenQuery(
                id=f"q{i}",
                text=str(i),
                judgments={"a": 1},
                metadata={
                    "difficulty": ["easy", "medium", "hard"][i % 3],
                    "canonical_narrative": narratives[i],  # 10 distinct sentences
                    "trials": i % 12,  # a count: 12 distinct values
                    "suite": "main",
                    "tags": ["x"],
                },
            )
            for i in range(n)
        ],
    )


def test_default_slices_skip_free_text_counts_and_constants_and_say_why() -> None:
    """Before: every scalar field with <= 20 values was a slice (narrative and trials too)."""
    golden = _many_queries()
    run = Run(rankings={q.id: Ranking.from_pairs(q.id, [("a", 1.0)]) for q in golden})
    policies = Policies()
    ev = Evaluation.build(golden, run, evaluate(METRICS, golden, run, policies), METRICS, policies)
    assert ev.slice_fields == ["difficulty"]
    assert set(ev.by_slice) == {"difficulty"}
    skipped = ev.skipped_slices
    assert set(skipped) == {"canonical_narrative", "trials", "suite", "tags"}
    assert skipped["canonical_narrative"].startswith("free text")
    # 30 queries: at most max(3, 30 // 3) = 10 values, and trials has 12
    assert skipped["trials"].startswith("12 distinct values over 30 queries")
    assert skipped["suite"] == "the same value for every query"
    assert skipped["tags"] == "not a scalar (list values)"


def test_an_explicit_slice_field_that_no_query_has_is_skipped_with_a_reason() -> None:
    """A one-domain file has no `domain`: no table of one 'unset' row."""
    ev = build(["domain", "difficulty"])
    assert ev.slice_fields == ["difficulty"]
    assert ev.skipped_slices == {"domain": "no query has this field"}


def test_slice_groups_hold_query_indices() -> None:
    groups = build().slice_groups("difficulty")
    assert {k: v.tolist() for k, v in groups.items()} == {
        "easy": [0, 1],
        "hard": [2, 4],
        "unset": [3],
    }


def test_latency_is_summarised_over_rankings_that_report_it() -> None:
    ev = build()
    assert ev.latency["mean_ms"] == pytest.approx((10 + 30) / 2)
    assert ev.latency["max_ms"] == 30.0


# -- GateView -------------------------------------------------------------------------


def test_gate_view_overall_is_the_evaluation_aggregate() -> None:
    ev = build()
    view = GateView(ev)
    assert view.aggregate("RR") is ev.overall[RR]
    assert view.aggregate(RR) is ev.overall[RR]
    assert view.aggregate("MRR", where={}) is ev.overall[RR]  # aliases resolve
    assert view.metrics == METRICS
    view.metrics.append(parse_metric("AP"))  # a copy: the evaluation is untouched
    assert ev.metrics == METRICS


def test_gate_view_aggregate_within_a_slice() -> None:
    view = GateView(build())
    check(view.aggregate("RR", where={"difficulty": "easy"}), [1, 1 / 2])
    check(view.aggregate("RR", where={"difficulty": "hard"}), [1 / 3], skipped=1)
    check(view.aggregate("RR", where={"category": "gates"}), [1 / 2, 0])
    check(view.aggregate("P@1", where={"category": "setup"}), [1, 0])


def test_gate_view_where_matches_every_field() -> None:
    view = GateView(build())
    check(view.aggregate("RR", where={"difficulty": "hard", "category": "setup"}), [1 / 3])
    check(view.aggregate("RR", where={"difficulty": "easy", "category": "gates"}), [1 / 2])
    agg = view.aggregate("RR", where={"difficulty": "easy", "category": "nope"})
    assert agg.n == 0
    assert math.isnan(agg.mean)


def test_gate_view_where_compares_values_as_strings() -> None:
    view = GateView(build())
    check(view.aggregate("RR", where={"level": 2}), [1 / 2])
    check(view.aggregate("RR", where={"level": "2"}), [1 / 2])


@pytest.mark.parametrize("field", ["difficulty", "category", "level"])
def test_gate_view_agrees_with_the_slice_tables(field: str) -> None:
    """Gates and reports read the same numbers, for every slice value including 'unset'."""
    ev = build()
    view = GateView(ev)
    for value, aggs in ev.by_slice[field].items():
        for m in METRICS:
            got = view.aggregate(m, where={field: value})
            assert (got.n, got.skipped) == (aggs[m].n, aggs[m].skipped), (value, str(m))
            assert got.mean == pytest.approx(aggs[m].mean, nan_ok=True), (value, str(m))


def test_gate_view_can_select_the_unset_slice() -> None:
    """A query without the field is in the 'unset' row of the report, and a gate can target it."""
    view = GateView(build())
    assert view.select({"difficulty": "unset"}).tolist() == [3]  # q4
    check(view.aggregate(RR, where={"difficulty": "unset"}), [0])


def test_gate_view_per_query() -> None:
    view = GateView(build())
    assert view.per_query("RR", where={"difficulty": "easy"}) == {
        "q1": pytest.approx(1.0),
        "q2": pytest.approx(1 / 2),
    }
    everything = view.per_query("RR")
    assert list(everything) == ["q1", "q2", "q3", "q4", "q5"]
    assert math.isnan(everything["q5"])


def test_gate_view_select() -> None:
    view = GateView(build())
    assert view.select({"category": "setup"}).tolist() == [0, 2]
    assert view.select(None).tolist() == [0, 1, 2, 3, 4]


def test_unknown_slice_field_is_a_config_error() -> None:
    view = GateView(build())
    with pytest.raises(ConfigError) as info:
        view.aggregate("RR", where={"difficulty": "easy", "domain": "x"}, key="gates.easy.slice")
    err = info.value
    assert "slice field 'domain'" in err.message
    assert err.key == "gates.easy.slice"
    assert err.expected == "one of: difficulty, category, level"
    assert "config key gates.easy.slice" in str(err)


def test_a_field_that_some_query_has_is_not_unknown() -> None:
    view = GateView(build())
    assert view.aggregate("RR", where={"notes": "why"}).n == 1  # not a slice, but present


def test_metric_not_computed_is_a_config_error() -> None:
    view = GateView(build())
    with pytest.raises(ConfigError) as info:
        view.aggregate("R@5", key="gates.floor.metric")
    err = info.value
    assert "'R@5' is not computed" in err.message
    assert err.key == "gates.floor.metric"
    assert err.expected == "one of: RR, P@1"
    with pytest.raises(ConfigError):
        view.per_query("nDCG@10")


def test_bad_metric_string_is_a_config_error_with_the_key() -> None:
    view = GateView(build())
    with pytest.raises(ConfigError) as info:
        view.aggregate("RR@@", key="gates.g.metric")
    assert info.value.key == "gates.g.metric"


def test_evaluation_with_several_metrics_and_policies() -> None:
    metrics: list[Metric] = parse_metrics(["R@1", "RR"])
    policies = Policies(no_relevant="bob")
    scores = evaluate(metrics, GOLDEN, RUN, policies)
    ev = Evaluation.build(GOLDEN, RUN, scores, metrics, policies)
    # bob: q5 (negative) gets recall 1.0 and RR 0
    check(ev.overall[metrics[0]], [1, 0, 0, 0, 1])
    check(ev.overall[metrics[1]], [1, 1 / 2, 1 / 3, 0, 0])
    check(ev.by_slice["difficulty"]["hard"][metrics[0]], [0, 1])
    assert ev.policies is policies


def _reference_interval(values: np.ndarray, resamples: int, seed: int) -> tuple[float, float]:
    """The percentile bootstrap written out plainly: the same draws, blocks and quantiles."""
    rng = np.random.default_rng(seed)
    n = values.size
    block = max(1, 2_000_000 // n)
    means = []
    for start in range(0, resamples, block):
        idx = rng.integers(0, n, size=(min(resamples, start + block) - start, n))
        means.extend(values[idx].mean(axis=1).tolist())
    alpha = (1.0 - 0.95) / 2.0  # as the code writes it: 0.025000000000000022
    low, high = np.quantile(np.array(means), [alpha, 1.0 - alpha])
    return float(low), float(high)


def test_intervals_drawn_together_are_each_arrays_own_bootstrap_to_the_bit() -> None:
    """bootstrap_cis draws the resamples once per array length for all the metrics of a
    run; each interval must still be exactly that array's own plain bootstrap."""
    from evalframe.assess.results import bootstrap_cis

    rng = np.random.default_rng(5)
    arrays = [rng.random(3000), (rng.random(3000) < 0.3).astype(float), rng.random(2500)]
    arrays.append(rng.random(40))  # a length of its own: its own draws
    got = bootstrap_cis(arrays, resamples=1500, seed=11)
    assert got == [_reference_interval(a, 1500, 11) for a in arrays]
