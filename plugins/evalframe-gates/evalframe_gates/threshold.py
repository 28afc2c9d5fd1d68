"""The threshold gate: an aggregate metric compared with a fixed value."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator

from evalframe.assess.results import GateResult, GateView
from evalframe.metrics import threshold_problem
from evalframe.plugin.protocols import PluginConfig, PluginContext
from evalframe.plugin.registry import gate

OPERATORS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    ">": operator.gt,
    "<=": operator.le,
    "<": operator.lt,
}
SYMBOLS = {">=": "≥", ">": ">", "<=": "≤", "<": "<"}


class ThresholdConfig(PluginConfig):
    """The metric, how to compare it, and optionally the slice it applies to."""

    metric: str = Field(description="canonical metric string, e.g. R@5")
    op: Literal[">=", ">", "<=", "<"] = Field(">=", description="comparison")
    value: float = Field(description="the threshold")
    slice: dict[str, str | int | float | bool] | None = Field(
        None, description="only queries whose metadata match, e.g. {difficulty: easy}"
    )
    hints: list[str] = Field(
        default_factory=list,
        description="what to look at when the gate fails (shown under it in the report)",
    )

    @field_validator("value")
    @classmethod
    def _reachable(cls, value: float, info: ValidationInfo) -> float:
        return reachable(value, info)


def reachable(value: float, info: ValidationInfo) -> float:
    """``value`` when ``metric op value`` can hold for some value of the metric (the
    metric's declared range, :func:`evalframe.metrics.threshold_problem`); a gate
    that could never pass (``R@5 >= 80``) is refused at its ``value`` key."""
    metric, op = info.data.get("metric"), info.data.get("op")
    if isinstance(metric, str) and isinstance(op, str):
        problem = threshold_problem(metric, op, value)
        if problem is not None:
            raise ValueError(problem)
    return value


class MetricGate:
    """What every gate on one metric shares: its config, its key, the metric it needs."""

    config: Any

    def __init__(self, config: Any, context: PluginContext) -> None:
        self.config = config
        self.key = context.config_key

    def required_metrics(self) -> list[str]:
        """Checked against metrics.measures when the config is validated."""
        return [self.config.metric]


def describe_slice(where: dict[str, Any] | None) -> str:
    return (" where " + ", ".join(f"{k}={v}" for k, v in where.items())) if where else ""


@gate("threshold", config=ThresholdConfig)
class ThresholdGate(MetricGate):
    """Passes when the mean of a metric (overall or in one slice) meets a threshold."""

    config: ThresholdConfig

    def evaluate(self, view: GateView) -> GateResult:
        cfg = self.config
        agg = view.aggregate(cfg.metric, cfg.slice, key=f"{self.key}.metric")
        where = describe_slice(cfg.slice)
        if agg.n == 0 or math.isnan(agg.mean):
            return GateResult(
                name="",
                type="threshold",
                passed=False,
                required=True,
                message=f"{cfg.metric}{where}: no query to score (n=0), so the gate cannot pass",
                threshold=cfg.value,
            )
        passed = OPERATORS[cfg.op](agg.mean, cfg.value)
        # the queries the mean leaves out (a policy's skip) decide a verdict as much as n does
        skipped = f", {agg.skipped} skipped" if agg.skipped else ""
        if agg.skipped:
            # what the verdict rests on: the same gate with the skipped queries scored 0 (the
            # policies' `zero`: ADK's "averaged over all queries"), said when it would differ
            counted = agg.mean * agg.n / (agg.n + agg.skipped)
            if OPERATORS[cfg.op](counted, cfg.value) != passed:
                policies = view.policies
                zero = " or ".join(
                    f"{name}=zero"
                    for name in ("no_relevant", "missing_query")
                    if getattr(policies, name) == "skip"
                )
                skipped += (
                    f": scored 0{f' ({zero})' if zero else ''}, they would make it "
                    f"{counted:.3f}, which {'does not hold' if passed else 'holds'}"
                )
        return GateResult(
            name="",
            type="threshold",
            passed=passed,
            required=True,
            message=(
                f"{cfg.metric}{where} = {agg.mean:.3f} {SYMBOLS[cfg.op]} {cfg.value:g} "
                f"{'holds' if passed else 'does not hold'} (n={agg.n}{skipped})"
            ),
            value=agg.mean,
            threshold=cfg.value,
            hints=() if passed else tuple(cfg.hints),
        )
