"""What a gate plugin returns is checked before it decides a run (assess.gates.run_gates)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from evalframe.assess.gates import GateSpec, run_gates, verdict
from evalframe.assess.results import Evaluation, GateResult, GateView
from evalframe.core.errors import PluginError
from evalframe.core.types import GoldenQuery, GoldenSet, Ranking, Run
from evalframe.metrics import Policies, evaluate, parse_metrics
from evalframe.plugin.protocols import PluginContext
from evalframe.plugin.registry import GATES

GOLDEN = GoldenSet.build("g", [GoldenQuery(id="q", text="", judgments={"a": 1})])
RUN = Run(rankings={"q": Ranking.from_pairs("q", [("a", 1.0)])})


def evaluation() -> Evaluation:
    metrics = parse_metrics(["RR"])
    return Evaluation.build(
        GOLDEN, RUN, evaluate(metrics, GOLDEN, RUN, Policies()), metrics, Policies()
    )


def gate_saying(passed: Any) -> type:
    class Says:
        def __init__(self, config: None, context: PluginContext) -> None:
            pass

        def evaluate(self, view: GateView) -> GateResult:
            return GateResult("", "says", passed=passed, required=True, message="m")

    return Says


def test_a_verdict_that_is_no_bool_is_the_plugins_fault() -> None:
    """passed="fail" (truthy) was shown ✓ and passed the run, exit 0."""
    with GATES.scoped():
        GATES.add("says", gate_saying("fail"))
        with pytest.raises(PluginError) as err:
            run_gates([GateSpec(name="floor", type="says", required=True, params={})], evaluation())
    assert "gave gate 'floor' passed='fail', which is not True or False" in err.value.message


def test_a_numpy_bool_is_a_verdict() -> None:
    with GATES.scoped():
        GATES.add("says", gate_saying(np.bool_(False)))
        (result,) = run_gates(
            [GateSpec(name="floor", type="says", required=True, params={})], evaluation()
        )
    assert result.passed is False and verdict([result]) is False


def test_what_a_gate_says_is_redacted_of_known_secrets() -> None:
    """A gate that quotes its settings (a webhook's token) is shown on the terminal, in
    gates.json and on the page: its message, failures and hints are redacted there."""
    from evalframe.core import secrets

    token = "whk-5e4d3c2b1a09"

    class Quotes:
        def __init__(self, config: None, context: PluginContext) -> None:
            pass

        def evaluate(self, view: GateView) -> GateResult:
            return GateResult(
                "",
                "quotes",
                passed=False,
                required=True,
                message=f"posted to https://hooks.example/?token={token}",
                failures=(f"q via {token}",),
                hints=(f"check token {token}",),
            )

    saved = secrets._KNOWN
    try:
        secrets.remember_secret(token)
        with GATES.scoped():
            GATES.add("quotes", Quotes)
            (result,) = run_gates(
                [GateSpec(name="hook", type="quotes", required=True, params={})], evaluation()
            )
    finally:
        secrets._KNOWN = saved
    assert result.message == "posted to https://hooks.example/?token=whk-…[redacted]"
    assert result.failures == ("q via whk-…[redacted]",)
    assert result.hints == ("check token whk-…[redacted]",)
