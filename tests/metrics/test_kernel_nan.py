"""A metric kernel's NaN or infinity is refused, naming the metric: NaN is how the policies
mark a query left out, so a kernel's own 0/0 was counted as one more skipped query (audit
47, 6); an infinity made the mean infinite, written as null."""

from __future__ import annotations

import numpy as np
import pytest

from evalframe.core.errors import PluginError
from evalframe.metrics import MetricParams, Policies, ScoreMatrix, evaluate, metric, parse_metric
from evalframe.plugin.registry import METRICS

QRELS = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}}
RUN = {"q1": [("a", 1.0)], "q2": [("x", 1.0)], "q3": [("c", 1.0)]}


def test_a_nan_for_one_query_names_the_metric_its_module_and_the_query() -> None:
    with METRICS.scoped():

        @metric("TestNaNOne", params=MetricParams, k="required", bounds=(0.0, 1.0))
        def nan_one(m: ScoreMatrix, k: int, p: MetricParams) -> np.ndarray:
            """1, except NaN for the second query (a 0/0 the kernel did not guard)."""
            out = np.ones(len(m.query_ids))
            out[1] = np.nan
            return out

        with pytest.raises(PluginError) as info:
            evaluate([parse_metric("TestNaNOne@5")], QRELS, RUN, Policies())
    err = info.value
    # q1, q2, q3 are in id order, so the second row is q2
    assert err.message.startswith(
        f"metric 'TestNaNOne@5' ({__name__}) returned NaN for 1 of 3 queries, e.g. query 'q2'"
    )
    assert err.expected == "a finite number for every query"
    assert err.hint is not None
    assert f"fix the kernel in {__name__}" in err.hint
    assert "leave skipping to the policies" in err.hint


def test_a_nan_on_a_negative_query_is_refused_too() -> None:
    """Under no_relevant=zero a negative is scored 0; a kernel's NaN there would have been
    counted as skipped instead, so a NaN is refused whichever query it is on."""
    qrels = {"neg": {}, "pos": {"a": 1}}
    run = {"neg": [("a", 1.0)], "pos": [("a", 1.0)]}
    with METRICS.scoped():

        @metric("TestNaNNeg", params=MetricParams, k="required", bounds=(0.0, 1.0))
        def nan_neg(m: ScoreMatrix, k: int, p: MetricParams) -> np.ndarray:
            """Recall without the 0/0 guard: NaN for a query with nothing relevant."""
            with np.errstate(invalid="ignore", divide="ignore"):
                return np.asarray(m.relevant(1, k).sum(axis=1) / m.num_rel(1))

        with pytest.raises(PluginError) as info:
            evaluate([parse_metric("TestNaNNeg@5")], qrels, run, Policies(no_relevant="zero"))
    assert "returned NaN for 1 of 2 queries, e.g. query 'neg'" in info.value.message


def test_the_policies_own_nans_are_still_counted_as_skipped() -> None:
    """The check reads the kernel's values before the policies: a negative example and a
    query the run never answered are skipped (NaN) as before, without an error."""
    qrels = {"neg": {}, "pos": {"a": 1}, "gone": {"b": 1}}
    run = {"neg": [("a", 1.0)], "pos": [("x", 2.0), ("a", 1.0)]}
    m = parse_metric("RR")
    scores = evaluate([m], qrels, run, Policies(no_relevant="skip", missing_query="skip"))
    assert scores.skipped[m] == 2  # neg (nothing relevant) and gone (not in the run)
    assert scores.values[m][scores.position("pos")] == 0.5  # the relevant doc at rank 2


@pytest.mark.parametrize(
    ("bad", "said"),
    [
        ([np.inf, -np.inf], "returned an infinity for 2 of 3 queries, e.g. query 'q2' (inf)"),
        ([np.inf, np.nan], "returned NaN or an infinity for 2 of 3 queries, e.g. query 'q2'"),
    ],
)
def test_an_infinity_is_refused_as_a_nan_is(bad: list[float], said: str) -> None:
    """A division by 0 without the guard: the mean would be infinite, and the metric's
    declared range (a count's is 0 to infinity) would let it through."""
    with METRICS.scoped():

        @metric("TestInf", params=MetricParams, k="required", bounds=(0.0, float("inf")))
        def inf_kernel(m: ScoreMatrix, k: int, p: MetricParams) -> np.ndarray:
            out = np.ones(len(m.query_ids))
            out[1:] = bad
            return out

        with pytest.raises(PluginError) as info:
            evaluate([parse_metric("TestInf@5")], QRELS, RUN, Policies())
    assert said in info.value.message
    assert "makes the mean infinite" in info.value.message
