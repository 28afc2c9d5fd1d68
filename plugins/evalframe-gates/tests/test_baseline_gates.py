"""regression, pass_to_fail and noninferiority against a baseline, worked by hand."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from evalframe_gates.baseline import (
    NonInferiorityConfig,
    NonInferiorityGate,
    PassToFailConfig,
    PassToFailGate,
    RegressionConfig,
    RegressionGate,
)

from evalframe.assess.baseline import Baseline
from evalframe.assess.results import Evaluation, GateView
from evalframe.core.errors import ConfigError
from evalframe.core.types import GoldenQuery, GoldenSet, Ranking, Run
from evalframe.metrics import Policies, evaluate, parse_metrics
from evalframe.plugin.protocols import PluginContext
from evalframe.plugin.registry import GATES
from evalframe.testing import GateContract

CTX = PluginContext(config_key="gates.g")
GOLDEN = GoldenSet.build(
    "g", [GoldenQuery(id=f"q{i}", text="", judgments={"a": 1}) for i in range(1, 5)]
)
# current RR per query: q1 1, q2 1/2, q3 1/3, q4 0
RUN = Run(
    rankings={
        "q1": Ranking.from_pairs("q1", [("a", 4.0)]),
        "q2": Ranking.from_pairs("q2", [("x", 4.0), ("a", 3.0)]),
        "q3": Ranking.from_pairs("q3", [("x", 4.0), ("y", 3.0), ("a", 2.0)]),
        "q4": Ranking.from_pairs("q4", [("x", 4.0)]),
    }
)


def view_with(baseline_rr: dict[str, float] | None) -> GateView:
    metrics = parse_metrics(["RR"])
    ev = Evaluation.build(
        GOLDEN, RUN, evaluate(metrics, GOLDEN, RUN, Policies()), metrics, Policies()
    )
    if baseline_rr is not None:
        ev.baseline = Baseline(
            name="main",
            path=Path("baselines/main"),
            per_query={q: {"RR": v} for q, v in baseline_rr.items()},
            golden_hash=GOLDEN.content_hash,
            policies={},
            metrics=("RR",),
        )
    return GateView(ev)


BASE = {"q1": 1.0, "q2": 1.0, "q3": 1.0, "q4": 0.0}  # mean 3/4; current mean (1+1/2+1/3)/4


class _BaselineContract(GateContract):
    """The contract on a run with a baseline (these gates refuse to judge without one)."""

    @pytest.fixture
    def view(self) -> GateView:
        return view_with(BASE)


class TestRegressionContract(_BaselineContract):
    plugin_name = "regression"

    @pytest.fixture
    def gate(self) -> RegressionGate:
        return RegressionGate(RegressionConfig(metric="RR", max_drop=0.1), CTX)


class TestPassToFailContract(_BaselineContract):
    plugin_name = "pass_to_fail"

    @pytest.fixture
    def gate(self) -> PassToFailGate:
        return PassToFailGate(PassToFailConfig(metric="RR", value=0.5), CTX)


class TestNonInferiorityContract(_BaselineContract):
    plugin_name = "noninferiority"

    @pytest.fixture
    def gate(self) -> NonInferiorityGate:
        return NonInferiorityGate(NonInferiorityConfig(metric="RR", margin=0.05), CTX)


def test_regression_absolute_and_relative() -> None:
    current = (1 + 1 / 2 + 1 / 3 + 0) / 4
    drop = 3 / 4 - current  # = 1/3 ... exactly (3 - 11/6)/4 = 7/24
    assert drop == pytest.approx(7 / 24)
    loose = RegressionGate(RegressionConfig(metric="RR", max_drop=0.3), CTX).evaluate(
        view_with(BASE)
    )
    assert loose.passed and loose.value == pytest.approx(current)
    tight = RegressionGate(RegressionConfig(metric="RR", max_drop=0.25), CTX).evaluate(
        view_with(BASE)
    )
    assert not tight.passed
    # relative: 7/24 is 38.9% of 3/4
    rel = RegressionConfig(metric="RR", max_drop=0.40, relative=True)
    assert RegressionGate(rel, CTX).evaluate(view_with(BASE)).passed
    rel = RegressionConfig(metric="RR", max_drop=0.38, relative=True)
    assert not RegressionGate(rel, CTX).evaluate(view_with(BASE)).passed


def test_pass_to_fail_lists_each_query_that_broke() -> None:
    result = PassToFailGate(PassToFailConfig(metric="RR", value=0.5), CTX).evaluate(view_with(BASE))
    assert not result.passed
    assert result.failures == ("q3: RR 1.000 → 0.333",)  # q2 still passes at exactly 1/2
    assert result.value == 1.0


def test_baseline_gates_need_a_baseline() -> None:
    with pytest.raises(ConfigError, match="has none") as err:
        RegressionGate(RegressionConfig(metric="RR", max_drop=0.1), CTX).evaluate(view_with(None))
    assert err.value.key == "gates.g.metric"


def test_noninferiority_fails_only_when_the_whole_ci_is_below_the_margin() -> None:
    big_drop = {"q1": 1.0, "q2": 1.0, "q3": 1.0, "q4": 1.0}  # every query drops
    gate = NonInferiorityGate(NonInferiorityConfig(metric="RR", margin=0.05), CTX)
    result = gate.evaluate(view_with(big_drop))
    assert not result.passed and result.value < -0.05
    same = {"q1": 1.0, "q2": 0.5, "q3": 1 / 3, "q4": 0.0}
    assert gate.evaluate(view_with(same)).passed


def _simulate(true_drop: float, trials: int = 100, n: int = 200, margin: float = 0.05) -> int:
    """How many of `trials` seeded runs the non-inferiority gate passes.

    Baseline per-query scores are Beta-like in [0, 1]; the candidate is the
    baseline minus `true_drop` plus per-query noise (sd 0.15), clipped.
    """
    from evalframe.assess.stats import paired_bootstrap_ci

    passes = 0
    for trial in range(trials):
        rng = np.random.default_rng(1000 + trial)
        base = rng.beta(2, 2, n)
        cand = np.clip(base - true_drop + rng.normal(0, 0.15, n), 0, 1)
        _, high = paired_bootstrap_ci(base, cand, resamples=500, seed=trial)
        passes += high >= -margin
    return passes


def test_noninferiority_does_not_cry_wolf_on_noise_and_catches_real_drops() -> None:
    """The rates reported in docs/gates.md."""
    assert _simulate(true_drop=0.0) >= 95  # B = A + noise: passes in at least 95 of 100
    assert 100 - _simulate(true_drop=0.10) >= 80  # a true drop of 2x the margin: fails >= 80


@pytest.mark.parametrize(
    ("kind", "settings", "key", "said"),
    [
        # 5 meant as 5 points (0.05): R@5 can fall by at most 1, so nothing exceeds 5
        ("regression", {"metric": "R@5", "max_drop": 5}, "max_drop", "more than its whole range"),
        # 5 meant as 5%: a drop of 500% of the mean is never reached
        (
            "regression",
            {"metric": "R@5", "max_drop": 5, "relative": True},
            "max_drop",
            "500% of the baseline mean",
        ),
        ("noninferiority", {"metric": "RR", "margin": 2}, "margin", "more than its whole range"),
        ("pass_to_fail", {"metric": "RR", "value": 2}, "value", "'RR >= 2' can never hold"),
    ],
)
def test_a_tolerance_no_change_can_exceed_is_refused(
    kind: str, settings: dict[str, object], key: str, said: str
) -> None:
    from evalframe.plugin.registry import configure

    with pytest.raises(ConfigError) as err:
        configure(GATES.get(kind), settings, "gates.b")
    assert err.value.key == f"gates.b.{key}"
    assert said in err.value.message


@pytest.mark.parametrize(
    ("kind", "settings"),
    [
        ("regression", {"metric": "R@5", "max_drop": 1}),  # the whole range
        ("regression", {"metric": "R@5", "max_drop": 0.05, "relative": True}),
        ("regression", {"metric": "NumRet", "max_drop": 50}),  # a count has no top
        ("noninferiority", {"metric": "RR", "margin": 0.02}),
    ],
)
def test_a_tolerance_some_change_can_exceed_is_kept(kind: str, settings: dict[str, object]) -> None:
    from evalframe.plugin.registry import configure

    assert configure(GATES.get(kind), settings, "gates.b") is not None
