"""analysis gate: an analysis value against a threshold, or an end of its interval."""

from __future__ import annotations

import math

import pytest
from evalframe_gates.analysis import AnalysisGate, AnalysisGateConfig

from evalframe.assess.results import Aggregate, Evaluation, GateView
from evalframe.core.errors import ConfigError
from evalframe.core.types import GoldenQuery, GoldenSet, Ranking, Run
from evalframe.metrics import Policies, evaluate, parse_metrics
from evalframe.plugin.protocols import PluginContext
from evalframe.plugin.registry import GATES
from evalframe.testing import GateContract

GOLDEN = GoldenSet.build("g", [GoldenQuery(id="q", text="", judgments={"a": 1})])
RUN = Run(rankings={"q": Ranking.from_pairs("q", [("a", 1.0)])})


@pytest.fixture
def view() -> GateView:
    return analysis_view()


def analysis_view() -> GateView:
    metrics = parse_metrics(["RR"])
    ev = Evaluation.build(
        GOLDEN, RUN, evaluate(metrics, GOLDEN, RUN, Policies()), metrics, Policies()
    )
    ev.analysis = {
        "calibration.ece": Aggregate(mean=0.12, std=math.nan, n=40),
        "calibration.answer_correctness@0.8": Aggregate(
            mean=0.75, std=math.nan, n=8, ci_low=0.5, ci_high=1.0
        ),
    }
    return GateView(ev)


def gate(**settings: object) -> AnalysisGate:
    return AnalysisGate(AnalysisGateConfig(**settings), PluginContext(config_key="gates.a"))  # type: ignore[arg-type]


class TestAnalysisGateContract(GateContract):
    plugin_name = "analysis"

    @pytest.fixture
    def view(self) -> GateView:
        return analysis_view()

    @pytest.fixture
    def gate(self) -> AnalysisGate:
        return gate(analysis="calibration.ece", op="<=", value=0.2)


def test_the_estimate_is_compared_at_its_edge(view: GateView) -> None:
    assert gate(analysis="calibration.ece", op="<=", value=0.12).evaluate(view).passed
    failed = gate(analysis="calibration.ece", op="<", value=0.12).evaluate(view)
    assert not failed.passed
    assert failed.message == "calibration.ece = 0.120 < 0.12 does not hold (n=40)"


def test_an_end_of_the_interval_can_be_what_must_hold(view: GateView) -> None:
    name = "calibration.answer_correctness@0.8"
    assert gate(analysis=name, value=0.7).evaluate(view).passed  # estimate 0.75
    low = gate(analysis=name, value=0.7, bound="ci_low").evaluate(view)
    assert not low.passed and low.value == 0.5


def test_a_value_without_an_interval_cannot_pass_on_its_interval(view: GateView) -> None:
    result = gate(analysis="calibration.ece", op="<=", value=1, bound="ci_high").evaluate(view)
    assert not result.passed and "has no interval" in result.message


def test_a_value_the_run_lacks_is_a_config_error(view: GateView) -> None:
    with pytest.raises(ConfigError, match=r"no analysis value 'calibration\.mce'") as e:
        gate(analysis="calibration.mce", value=0).evaluate(view)
    assert e.value.key == "gates.a.analysis"
    assert gate(analysis="x", value=0).required_analyses() == ["x"]


@pytest.mark.parametrize(
    ("settings", "said"),
    [
        (
            {"analysis": "calibration.answer_correctness@0.8", "value": 80},
            "from 0 to 1, so 'calibration.answer_correctness@0.8 >= 80' can never hold",
        ),
        ({"analysis": "calibration.ece", "op": "<", "value": 0}, "'calibration.ece < 0'"),
        ({"analysis": "failures.failed", "op": "<", "value": 0}, "'failures.failed < 0'"),
        ({"analysis": "benefit.success_lift", "value": 2}, "from -1 to 1"),
    ],
)
def test_a_threshold_outside_the_values_range_is_refused(
    settings: dict[str, object], said: str
) -> None:
    from evalframe.plugin.registry import configure

    with pytest.raises(ConfigError) as err:
        configure(GATES.get("analysis"), settings, "gates.a")
    assert err.value.key == "gates.a.value"
    assert said in err.value.message


@pytest.mark.parametrize(
    "settings",
    [
        {"analysis": "calibration.ece", "op": "<=", "value": 0.1},
        {"analysis": "failures.vocabulary_mismatch", "op": "<=", "value": 50},
        {"analysis": "benefit.net_tokens_saved", "value": -1e6},  # a delta: no range
    ],
)
def test_a_threshold_within_the_values_range_is_kept(settings: dict[str, object]) -> None:
    from evalframe.plugin.registry import configure

    assert configure(GATES.get("analysis"), settings, "gates.a") is not None
