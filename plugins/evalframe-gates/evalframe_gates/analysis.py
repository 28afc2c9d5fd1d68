"""The analysis gate: a headline value of the run's analyses compared with a fixed value.

The analyses (docs/analyses.md) run before the gates and expose their
headline values through :meth:`evalframe.assess.results.GateView.analysis`:
``calibration.ece``, ``calibration.answer_correctness@0.8``,
``failures.vocabulary_mismatch``, ``benefit.net_tokens_saved``, ... ::

    gates:
      calibrated:
        type: analysis
        analysis: calibration.ece
        op: "<="
        value: 0.1
      routing_precision:
        type: analysis
        analysis: calibration.answer_correctness@0.8
        value: 0.8
        bound: ci_low      # the interval's lower end must reach 0.8, not just the estimate
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, ValidationInfo, field_validator

from evalframe.analysis.settings import value_bounds
from evalframe.assess.results import GateResult, GateView
from evalframe.metrics import bounds_problem
from evalframe.plugin.protocols import PluginConfig, PluginContext
from evalframe.plugin.registry import gate
from evalframe_gates.threshold import OPERATORS, SYMBOLS

__all__ = ["AnalysisGate", "AnalysisGateConfig"]


class AnalysisGateConfig(PluginConfig):
    """Which analysis value, how to compare it, and which end of its interval."""

    analysis: str = Field(description="an analysis value, e.g. calibration.ece")
    op: Literal[">=", ">", "<=", "<"] = Field(">=", description="comparison")
    value: float = Field(description="the threshold")
    bound: Literal["estimate", "ci_low", "ci_high"] = Field(
        "estimate",
        description="compare the estimate, or the lower/upper end of its confidence interval "
        "(values without an interval, such as ECE, have only the estimate)",
    )
    hints: list[str] = Field(
        default_factory=list, description="what to look at when the gate fails"
    )

    @field_validator("value")
    @classmethod
    def _reachable(cls, value: float, info: ValidationInfo) -> float:
        """A threshold outside the value's range (``calibration.answer_correctness@0.8
        >= 80``, a percentage for a share) is refused here, as a metric gate's is."""
        name, op = info.data.get("analysis"), info.data.get("op")
        if isinstance(name, str) and isinstance(op, str):
            problem = bounds_problem(name, value_bounds(name), op, value)
            if problem is not None:
                raise ValueError(problem)
        return value


@gate("analysis", config=AnalysisGateConfig)
class AnalysisGate:
    """Passes when an analysis value (calibration.ece, ...) meets a threshold."""

    def __init__(self, config: AnalysisGateConfig, context: PluginContext) -> None:
        self.config = config
        self.key = context.config_key

    def required_analyses(self) -> list[str]:
        """Checked against the configured analyses when the config is validated."""
        return [self.config.analysis]

    def evaluate(self, view: GateView) -> GateResult:
        cfg = self.config
        found = view.analysis(cfg.analysis, key=f"{self.key}.analysis")
        value = found.mean if cfg.bound == "estimate" else getattr(found, cfg.bound)
        what = cfg.analysis if cfg.bound == "estimate" else f"{cfg.analysis} ({cfg.bound})"
        if math.isnan(value):
            why = "has no interval" if cfg.bound != "estimate" and found.n else "has no value"
            return GateResult(
                name="",
                type="analysis",
                passed=False,
                required=True,
                message=f"{what} {why} (n={found.n}), so the gate cannot pass",
                threshold=cfg.value,
            )
        passed = OPERATORS[cfg.op](value, cfg.value)
        return GateResult(
            name="",
            type="analysis",
            passed=passed,
            required=True,
            message=(
                f"{what} = {value:.3f} {SYMBOLS[cfg.op]} {cfg.value:g} "
                f"{'holds' if passed else 'does not hold'} (n={found.n})"
            ),
            value=value,
            threshold=cfg.value,
            hints=() if passed else tuple(cfg.hints),
        )
