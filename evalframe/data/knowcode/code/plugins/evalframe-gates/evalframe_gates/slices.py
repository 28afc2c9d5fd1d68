"""Gates over individual queries and over slices, not just the overall mean."""

from __future__ import annotations

import math

from pydantic import Field

from evalframe.assess.results import GateResult, GateView
from evalframe.plugin.protocols import PluginConfig
from evalframe.plugin.registry import gate
from evalframe_gates.threshold import (
    OPERATORS,
    SYMBOLS,
    MetricGate,
    ThresholdConfig,
    describe_slice,
)


class EveryQueryConfig(ThresholdConfig):
    """Every query (optionally within a slice) must meet the condition on its own value."""


@gate("every_query", config=EveryQueryConfig)
class EveryQueryGate(MetricGate):
    """Passes when every query in the slice meets the condition; lists the ones that do not."""

    config: EveryQueryConfig

    def evaluate(self, view: GateView) -> GateResult:
        cfg = self.config
        values = view.per_query(cfg.metric, cfg.slice, key=f"{self.key}.metric")
        scored = {q: v for q, v in values.items() if not math.isnan(v)}
        check = OPERATORS[cfg.op]
        failing = tuple(
            f"{q}: {cfg.metric} = {v:.3f}" for q, v in scored.items() if not check(v, cfg.value)
        )
        where = describe_slice(cfg.slice)
        if not scored:
            return GateResult(
                name="",
                type="every_query",
                passed=False,
                required=True,
                message=f"no query{where} to check (n=0), so the gate cannot pass",
                threshold=cfg.value,
            )
        passed = not failing
        return GateResult(
            name="",
            type="every_query",
            passed=passed,
            required=True,
            message=(
                f"every query{where} has {cfg.metric} {SYMBOLS[cfg.op]} {cfg.value:g}: "
                f"{len(scored) - len(failing)} of {len(scored)} do"
            ),
            value=(len(scored) - len(failing)) / len(scored),
            threshold=cfg.value,
            failures=failing,
        )


class NoZeroSliceConfig(PluginConfig):
    """The metric and the slice field whose every value must score above zero."""

    metric: str = Field(description="canonical metric string, e.g. R@10")
    field: str = Field(description="slice field, e.g. task_type")


@gate("no_zero_slice", config=NoZeroSliceConfig)
class NoZeroSliceGate(MetricGate):
    """Fails when any value of a slice field has a mean of exactly zero (a blind spot)."""

    config: NoZeroSliceConfig

    def evaluate(self, view: GateView) -> GateResult:
        cfg = self.config
        values = view.slice_values(cfg.field, key=f"{self.key}.field")
        zero = []
        for value in values:
            agg = view.aggregate(cfg.metric, {cfg.field: value}, key=f"{self.key}.metric")
            if agg.n and agg.mean == 0.0:
                zero.append(f"{cfg.field}={value}: {cfg.metric} = 0 (n={agg.n})")
        return GateResult(
            name="",
            type="no_zero_slice",
            passed=not zero,
            required=True,
            message=(
                f"no {cfg.field} scores {cfg.metric} = 0"
                if not zero
                else f"{len(zero)} of {len(values)} {cfg.field} value(s) score {cfg.metric} = 0"
            ),
            failures=tuple(zero),
        )
