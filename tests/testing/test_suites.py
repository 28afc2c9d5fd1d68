"""The contract suites catch the mistakes they are for: each rule run on a plugin
that breaks it (and on one that keeps it) fails with the plugin's name and the rule."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from evalframe.assess.results import GateResult, GateView
from evalframe.core.errors import PluginError
from evalframe.core.types import GoldenQuery, GoldenSet
from evalframe.metrics import metric
from evalframe.plugin.registry import GATES, METRICS
from evalframe.testing import (
    DatasetLoaderContract,
    GateContract,
    MetricContract,
    TrackerContract,
)
from evalframe.testing.gate import sample_view


def broken(call: Any, rule: str) -> None:
    """``call()`` fails, and its message names the rule (an assertion of the suite)."""
    with pytest.raises((AssertionError, pytest.fail.Exception, PluginError)) as err:
        call()
    assert rule in str(err.value), str(err.value)


# -- metrics ---------------------------------------------------------------------------


def test_a_kernel_normalising_over_all_queries_breaks_the_alone_rule() -> None:
    with METRICS.scoped():

        @metric("RelShare", k="required", bounds=(0.0, 1.0))
        def share(m, k, p):  # type: ignore[no-untyped-def]  # a test's throwaway kernel
            """Relevant in the top k, as a share of the most any query has (wrong)."""
            found = m.relevant(1, k).sum(axis=1).astype(float)
            return found / max(found.max(), 1.0)

        suite = type("T", (MetricContract,), {"plugin_name": "RelShare"})()
        broken(suite.test_a_querys_value_depends_on_that_query_alone, "that query alone")
        suite.test_one_value_per_query_within_its_range()  # its other rules hold
        suite.test_the_canonical_string_names_the_same_metric()


def test_a_kernel_leaving_a_query_unscored_breaks_the_range_rule() -> None:
    with METRICS.scoped():

        @metric("Half", k="required", bounds=(0.0, 1.0))
        def half(m, k, p):  # type: ignore[no-untyped-def]  # a test's throwaway kernel
            """Precision, but NaN for a query with two relevant documents (wrong)."""
            rel = m.relevant(1, k)
            out = rel[:, :k].mean(axis=1)
            return np.where(m.labels.sum(axis=1) == 2, np.nan, out)

        suite = type("T", (MetricContract,), {"plugin_name": "Half"})()
        broken(suite.test_one_value_per_query_within_its_range, "Half@3")


# -- gates -----------------------------------------------------------------------------


def _gate(result: GateResult, edits: bool = False) -> Any:
    class G:
        """A gate."""

        def required_metrics(self) -> list[str]:
            return ["RR"]

        def evaluate(self, view: GateView) -> GateResult:
            if edits:
                view._ev.scores.values[next(iter(view._ev.scores.values))][0] = 0.0
            return result

    return G()


def test_a_verdict_that_is_not_a_bool_breaks_the_gate_rule() -> None:
    suite = type("T", (GateContract,), {"plugin_name": "g", "registry": GATES})()
    view = sample_view(["RR"])
    ok = GateResult(name="g", type="g", passed=True, required=True, message="RR holds")
    suite.test_gives_a_gate_result_with_a_bool_verdict(_gate(ok), view)
    word = GateResult(name="g", type="g", passed="fail", required=True, message="x")  # type: ignore[arg-type]  # the mistake under test
    broken(lambda: suite.test_gives_a_gate_result_with_a_bool_verdict(_gate(word), view), "bool")
    broken(
        lambda: suite.test_gives_a_gate_result_with_a_bool_verdict(
            _gate(ok.__class__(**{**ok.as_dict(), "failures": "q1"})), view
        ),
        "GateResult.failures is a sequence of strings",
    )
    broken(
        lambda: suite.test_reads_the_results_without_changing_them(_gate(ok, edits=True), view),
        "must not change the per-query values",
    )


def test_required_metrics_as_one_string_breaks_the_gate_rule() -> None:
    class G:
        """A gate."""

        def required_metrics(self) -> str:
            return "nDCG@10"

    suite = type("T", (GateContract,), {"plugin_name": "g", "registry": GATES})()
    broken(lambda: suite.test_required_metrics_are_metric_names(G()), "a list of metric names")


# -- datasets --------------------------------------------------------------------------


def test_duplicate_ids_and_float_labels_break_the_dataset_rules() -> None:
    def loader(queries: list[GoldenQuery]) -> Any:
        class L:
            def load(self) -> GoldenSet:
                # built without validation, as a fast loader may: nothing refuses it
                return GoldenSet.model_construct(name="g", queries=queries)

        return L()

    q1 = GoldenQuery(id="q1", text="a", judgments={"d": 1})
    q2 = GoldenQuery(id="q2", text="b", judgments={"e": 2})
    suite = type("T", (DatasetLoaderContract,), {"plugin_name": "d"})()
    suite.test_loads_a_golden_set_with_unique_string_ids(loader([q1, q2]))
    suite.test_judgments_are_whole_number_labels_of_string_ids(loader([q1, q2]))
    broken(
        lambda: suite.test_loads_a_golden_set_with_unique_string_ids(loader([q1, q1])),
        "query ids are unique (repeated: ['q1'])",
    )
    floats = GoldenQuery.model_construct(id="q3", text="c", judgments={"d": 1.0}, metadata={})
    broken(
        lambda: suite.test_judgments_are_whole_number_labels_of_string_ids(loader([q1, floats])),
        "labels are whole numbers, not float",
    )
    odd = GoldenQuery.model_construct(id="q4", text="c", judgments={"d": 1}, metadata={"s": {1}})
    broken(lambda: suite.test_metadata_is_json(loader([q1, odd])), "query metadata is JSON")


# -- trackers --------------------------------------------------------------------------


def test_a_hook_missing_its_context_breaks_the_tracker_rule() -> None:
    class Good:
        def on_run_end(self, context: object, outcome: object) -> None: ...

    class Bad:
        def on_run_end(self, outcome: object) -> None: ...

    suite = type("T", (TrackerContract,), {"plugin_name": "t"})()
    suite.test_each_hook_takes_what_the_relay_passes(Good())
    broken(
        lambda: suite.test_each_hook_takes_what_the_relay_passes(Bad()),
        "on_run_end() is called with (context, outcome)",
    )
    broken(lambda: suite.test_defines_at_least_one_hook(object()), "at least one hook")
