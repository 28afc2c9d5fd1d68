"""every_query and no_zero_slice: per-query and per-slice verdicts, worked by hand."""

from __future__ import annotations

import pytest
from evalframe_gates.slices import (
    EveryQueryConfig,
    EveryQueryGate,
    NoZeroSliceConfig,
    NoZeroSliceGate,
)

from evalframe.assess.results import Evaluation, GateView
from evalframe.core.errors import ConfigError
from evalframe.core.types import GoldenQuery, GoldenSet, Ranking, Run
from evalframe.metrics import Policies, evaluate, parse_metrics
from evalframe.plugin.protocols import PluginContext
from evalframe.plugin.registry import GATES
from evalframe.testing import GateContract

GOLDEN = GoldenSet.build(
    "g",
    [
        GoldenQuery(
            id="e1", text="", judgments={"a": 1}, metadata={"difficulty": "easy", "task": "locate"}
        ),
        GoldenQuery(
            id="e2", text="", judgments={"b": 1}, metadata={"difficulty": "easy", "task": "locate"}
        ),
        GoldenQuery(
            id="h1", text="", judgments={"c": 1}, metadata={"difficulty": "hard", "task": "explain"}
        ),
        GoldenQuery(
            id="n1", text="", judgments={}, metadata={"difficulty": "easy", "task": "explain"}
        ),
    ],
)
RUN = Run(
    rankings={
        "e1": Ranking.from_pairs("e1", [("a", 2.0), ("x", 1.0)]),  # RR 1
        "e2": Ranking.from_pairs("e2", [("x", 2.0), ("b", 1.0)]),  # RR 1/2
        "h1": Ranking.from_pairs("h1", [("x", 2.0)]),  # RR 0
        "n1": Ranking.from_pairs("n1", [("x", 2.0)]),  # negative: skipped
    }
)
CTX = PluginContext(config_key="gates.g")


@pytest.fixture
def view() -> GateView:
    metrics = parse_metrics(["RR", "R@5"])
    scores = evaluate(metrics, GOLDEN, RUN, Policies())
    return GateView(Evaluation.build(GOLDEN, RUN, scores, metrics, Policies()))


class TestEveryQueryContract(GateContract):
    plugin_name = "every_query"

    @pytest.fixture
    def gate(self) -> EveryQueryGate:
        return EveryQueryGate(EveryQueryConfig(metric="RR", op=">=", value=0.5), CTX)


class TestNoZeroSliceContract(GateContract):
    plugin_name = "no_zero_slice"

    @pytest.fixture
    def gate(self) -> NoZeroSliceGate:
        return NoZeroSliceGate(NoZeroSliceConfig(metric="R@5", field="difficulty"), CTX)


def test_every_easy_query_right_at_rank_1_lists_the_one_that_is_not(view: GateView) -> None:
    gate = EveryQueryGate(
        EveryQueryConfig(metric="RR", op=">=", value=1.0, slice={"difficulty": "easy"}), CTX
    )
    result = gate.evaluate(view)
    assert not result.passed
    assert result.failures == ("e2: RR = 0.500",)
    assert result.value == 1 / 2  # e1 of (e1, e2); the negative n1 is not scored
    assert "1 of 2 do" in result.message


def test_every_query_passes_when_all_meet_it(view: GateView) -> None:
    gate = EveryQueryGate(
        EveryQueryConfig(metric="RR", op=">=", value=0.5, slice={"difficulty": "easy"}), CTX
    )
    assert gate.evaluate(view).passed


def test_no_zero_slice_names_the_blind_task(view: GateView) -> None:
    result = NoZeroSliceGate(NoZeroSliceConfig(metric="R@5", field="task"), CTX).evaluate(view)
    assert not result.passed
    assert result.failures == ("task=explain: R@5 = 0 (n=1)",)  # h1 only: n1 is skipped
    by_difficulty = NoZeroSliceGate(NoZeroSliceConfig(metric="R@5", field="difficulty"), CTX)
    assert by_difficulty.evaluate(view).failures == ("difficulty=hard: R@5 = 0 (n=1)",)


def test_no_zero_slice_passes_when_every_value_scores() -> None:
    golden = GoldenSet.build("g", [q for q in GOLDEN.queries if q.id != "h1"])
    run = Run(rankings={k: v for k, v in RUN.rankings.items() if k != "h1"})
    metrics = parse_metrics(["R@5"])
    scores = evaluate(metrics, golden, run, Policies())
    view = GateView(Evaluation.build(golden, run, scores, metrics, Policies()))
    gate = NoZeroSliceGate(NoZeroSliceConfig(metric="R@5", field="task"), CTX)
    result = gate.evaluate(view)
    assert result.passed, result.failures  # locate: (1 + 1) / 2; explain: only the skipped n1


def test_unknown_slice_field_names_the_key(view: GateView) -> None:
    with pytest.raises(ConfigError) as err:
        NoZeroSliceGate(NoZeroSliceConfig(metric="RR", field="domain"), CTX).evaluate(view)
    assert err.value.key == "gates.g.field"


def test_no_zero_slice_says_which_values_it_could_not_check() -> None:
    """A value whose every query is skipped (n=0) has no recall to be zero; it is named."""
    golden = GoldenSet.build("g", [q for q in GOLDEN.queries if q.id != "h1"])
    run = Run(rankings={k: v for k, v in RUN.rankings.items() if k != "h1"})
    metrics = parse_metrics(["R@5"])
    view = GateView(
        Evaluation.build(
            golden, run, evaluate(metrics, golden, run, Policies()), metrics, Policies()
        )
    )
    result = NoZeroSliceGate(NoZeroSliceConfig(metric="R@5", field="task"), CTX).evaluate(view)
    assert result.passed
    assert "not checked, no scored query (n=0): task=explain" in result.message


def test_a_slice_value_spelt_in_another_case_is_refused_not_left_out() -> None:
    """'Easy' on one query and 'easy' on another: a gate on difficulty=easy would judge
    without the 'Easy' one and say nothing (a failing run passed that way), so the gate
    stops with a data error naming the spelling, the queries and the gate."""
    from evalframe.core.errors import DataError

    queries = [q.model_copy() for q in GOLDEN.queries]
    queries[1] = queries[1].model_copy(update={"metadata": {"difficulty": "Easy "}})
    golden = GoldenSet.build("g", queries)
    metrics = parse_metrics(["RR"])
    scores = evaluate(metrics, golden, RUN, Policies())
    view = GateView(Evaluation.build(golden, RUN, scores, metrics, Policies()))
    gate = EveryQueryGate(
        EveryQueryConfig(metric="RR", op=">=", value=1.0, slice={"difficulty": "easy"}), CTX
    )
    with pytest.raises(DataError) as err:
        gate.evaluate(view)
    text = str(err.value)
    assert "'Easy ' on 1 query (e2)" in text
    assert err.value.key == "gates.g"
    # a slice no other spelling shadows still works
    hard = EveryQueryGate(
        EveryQueryConfig(metric="RR", op=">=", value=1.0, slice={"difficulty": "hard"}), CTX
    )
    assert hard.evaluate(view).failures == ("h1: RR = 0.000",)


def test_every_query_refuses_a_value_no_query_can_have() -> None:
    """Every query would fail RR < 0: RR is never below 0."""
    from evalframe.plugin.registry import configure

    with pytest.raises(ConfigError) as err:
        configure(GATES.get("every_query"), {"metric": "RR", "op": "<", "value": 0}, "gates.e")
    assert err.value.key == "gates.e.value"
    assert "'RR < 0' can never hold" in err.value.message
