"""threshold gate: pass/fail on an aggregate, overall and within a slice."""

from __future__ import annotations

import math

import pytest
from evalframe_gates.threshold import ThresholdConfig, ThresholdGate

from evalframe.assess.results import Evaluation, GateView
from evalframe.core.types import GoldenQuery, GoldenSet, Ranking, Run
from evalframe.metrics import Policies, evaluate, parse_metrics
from evalframe.plugin.protocols import PluginContext
from evalframe.plugin.registry import GATES
from evalframe.testing import GateContract

GOLDEN = GoldenSet.build(
    "g",
    [
        GoldenQuery(id="e1", text="", judgments={"a": 1}, metadata={"difficulty": "easy"}),
        GoldenQuery(id="e2", text="", judgments={"b": 1}, metadata={"difficulty": "easy"}),
        GoldenQuery(id="h1", text="", judgments={"c": 1}, metadata={"difficulty": "hard"}),
    ],
)
RUN = Run(
    rankings={
        "e1": Ranking.from_pairs("e1", [("a", 2.0), ("x", 1.0)]),  # RR = 1
        "e2": Ranking.from_pairs("e2", [("x", 2.0), ("b", 1.0)]),  # RR = 1/2
        "h1": Ranking.from_pairs("h1", [("x", 2.0), ("y", 1.0)]),  # RR = 0
    }
)


@pytest.fixture
def view() -> GateView:
    metrics = parse_metrics(["RR"])
    scores = evaluate(metrics, GOLDEN, RUN, Policies())
    return GateView(Evaluation.build(GOLDEN, RUN, scores, metrics, Policies()))


def gate(**settings: object) -> ThresholdGate:
    return ThresholdGate(ThresholdConfig(**settings), PluginContext(config_key="gates.t"))


class TestThresholdContract(GateContract):
    plugin_name = "threshold"

    @pytest.fixture
    def gate(self) -> ThresholdGate:
        return gate(metric="nDCG@10", op=">=", value=0.5, slice={"difficulty": "easy"})


def test_passes_when_the_mean_meets_the_threshold(view: GateView) -> None:
    result = gate(metric="RR", op=">=", value=0.5).evaluate(view)
    assert result.passed
    assert result.value == pytest.approx((1 + 1 / 2 + 0) / 3)


def test_fails_above_the_achievable_value(view: GateView) -> None:
    result = gate(metric="RR", op=">=", value=0.9).evaluate(view)
    assert not result.passed
    assert "does not hold" in result.message


def test_slice_restricts_the_queries(view: GateView) -> None:
    easy = gate(metric="RR", value=0.75, slice={"difficulty": "easy"}).evaluate(view)
    assert easy.passed
    assert easy.value == pytest.approx((1 + 1 / 2) / 2)
    hard = gate(metric="RR", value=0.1, slice={"difficulty": "hard"}).evaluate(view)
    assert not hard.passed
    assert hard.value == 0.0


def test_a_slice_field_no_query_has_is_the_slice_keys_fault(view: GateView) -> None:
    """The error named gates.t.metric, the key beside the one at fault."""
    from evalframe.core.errors import ConfigError

    with pytest.raises(ConfigError) as err:
        gate(metric="RR", value=0.1, slice={"nofield": "easy"}).evaluate(view)
    assert err.value.key == "gates.t.slice"
    assert "slice field 'nofield' is not in any golden query's metadata" in err.value.message


def test_the_message_counts_the_queries_a_policy_skipped() -> None:
    """n is what the mean rests on; the queries a policy left out are counted beside it."""
    golden = GoldenSet.build(
        "g",
        [*GOLDEN.queries, GoldenQuery(id="n1", text="", judgments={})],  # a negative example
    )
    run = Run(rankings={**RUN.rankings, "n1": Ranking.from_pairs("n1", [("x", 1.0)])})
    metrics = parse_metrics(["RR"])
    policies = Policies(no_relevant="skip")
    scores = evaluate(metrics, golden, run, policies)
    skipping = GateView(Evaluation.build(golden, run, scores, metrics, policies))
    result = gate(metric="RR", op=">=", value=0.3).evaluate(skipping)
    assert result.message == "RR = 0.500 ≥ 0.3 holds (n=3, 1 skipped)"
    # a verdict the skip decides: scored 0, n1 makes the mean (1 + 1/2 + 0 + 0) / 4
    result = gate(metric="RR", op=">=", value=0.5).evaluate(skipping)
    assert result.passed and result.message == (
        f"RR = 0.500 ≥ 0.5 holds (n=3, 1 skipped: scored 0 (no_relevant=zero), "
        f"they would make it {(1 + 1 / 2 + 0 + 0) / 4:.3f}, which does not hold)"
    )
    result = gate(metric="RR", op="<", value=0.4).evaluate(skipping)
    assert not result.passed and result.message.endswith("which holds)")


@pytest.mark.parametrize(
    ("op", "value", "passed"),
    [(">", 0.5, False), ("<", 0.5, False), ("<=", 0.5, True), (">=", 0.5, True), (">", 0.4, True)],
)
def test_operators_at_the_boundary(view: GateView, op: str, value: float, passed: bool) -> None:
    """The mean RR is exactly (1 + 1/2 + 0) / 3 = 1/2."""
    assert gate(metric="RR", op=op, value=value).evaluate(view).passed is passed


def test_an_empty_slice_cannot_pass(view: GateView) -> None:
    result = gate(metric="RR", value=0.0, slice={"difficulty": "medium"}).evaluate(view)
    assert not result.passed
    assert "n=0" in result.message
    assert result.value is None or math.isnan(result.value)


def test_declares_the_metric_it_needs() -> None:
    assert gate(metric="nDCG@10", value=0.1).required_metrics() == ["nDCG@10"]


@pytest.mark.parametrize(
    ("settings", "said"),
    [
        ({"metric": "R@5", "value": 80}, "'R@5 >= 80' can never hold"),
        ({"metric": "RR", "op": ">", "value": 1}, "'RR > 1' can never hold"),
        ({"metric": "NumRet", "op": "<", "value": 0}, "'NumRet < 0' can never hold"),
    ],
)
def test_a_threshold_no_run_can_meet_is_refused_at_its_value(
    settings: dict[str, object], said: str
) -> None:
    """R@5 is a fraction: 80 (a percentage) made a gate that failed every run, silently."""
    from evalframe.core.errors import ConfigError
    from evalframe.plugin.registry import configure

    with pytest.raises(ConfigError) as err:
        configure(GATES.get("threshold"), settings, "gates.t")
    assert err.value.key == "gates.t.value"
    assert said in err.value.message
    if settings["value"] == 80:
        assert "80% is 0.8" in err.value.message


@pytest.mark.parametrize(
    "settings",
    [
        {"metric": "R@5", "value": 1},  # a perfect run meets it
        {"metric": "R@5", "op": "<=", "value": 0},
        {"metric": "NumRet", "value": 1000},  # a count has no top
        {"metric": "nDCG(gain=1:-2)@10", "value": 3},  # no known range: not judged
    ],
)
def test_a_threshold_some_run_can_meet_is_kept(settings: dict[str, object]) -> None:
    from evalframe.plugin.registry import configure

    config = configure(GATES.get("threshold"), settings, "gates.t")
    assert isinstance(config, ThresholdConfig)
    assert config.value == settings["value"]
