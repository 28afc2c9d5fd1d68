"""Gates against a baseline: regression tolerance, pass-to-fail queries, non-inferiority.

Each needs the run to have a baseline (``baseline=<name>``); the comparison is
paired: only queries that both runs scored count.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Literal

import numpy as np
from pydantic import Field, ValidationInfo, field_validator

from evalframe.assess.results import GateResult, GateView
from evalframe.assess.stats import paired_bootstrap_ci
from evalframe.metrics import tolerance_problem
from evalframe.plugin.protocols import PluginConfig
from evalframe.plugin.registry import gate
from evalframe_gates.threshold import OPERATORS, SYMBOLS, MetricGate, describe_slice, reachable


def _paired(view: GateView, metric: str, where: Mapping[str, object] | None, key: str):  # type: ignore[no-untyped-def]  # small private helper
    ids, base, cur = view.paired(metric, where, key=key)
    keep = ~(np.isnan(base) | np.isnan(cur))
    return tuple(i for i, k in zip(ids, keep, strict=True) if k), base[keep], cur[keep]


class RegressionConfig(PluginConfig):
    """How far a metric may fall below the baseline."""

    metric: str = Field(description="canonical metric string, e.g. R@5")
    # before max_drop, which is checked against it (a relative drop above 1 lets all through)
    relative: bool = Field(
        False,
        description="max_drop is a fraction of the baseline mean (0.05 = 5% of it), "
        "not points on the metric's own scale",
    )
    max_drop: float = Field(
        ge=0, description="tolerated drop: points (0.05), or a fraction of the baseline mean"
    )
    slice: dict[str, str | int | float | bool] | None = Field(None, description="optional slice")

    @field_validator("max_drop")
    @classmethod
    def _can_fail(cls, value: float, info: ValidationInfo) -> float:
        return can_fail(value, info, relative=bool(info.data.get("relative")))


def can_fail(drop: float, info: ValidationInfo, *, relative: bool = False) -> float:
    """``drop`` when some change of the metric exceeds it (its declared range,
    :func:`evalframe.metrics.tolerance_problem`); a tolerance wider than that
    (``max_drop: 5`` on R@5, meant as 0.05) makes a gate that passes every run."""
    metric = info.data.get("metric")
    if isinstance(metric, str):
        problem = tolerance_problem(metric, drop, relative=relative)
        if problem is not None:
            raise ValueError(problem)
    return drop


@gate("regression", config=RegressionConfig)
class RegressionGate(MetricGate):
    """Fails when the mean falls below the baseline's by more than the tolerance.

    A tolerance is a fixed allowance, not a test of noise: the verdicts are
    "not lower", "within tolerance" and "beyond tolerance". Whether a change
    is more than noise is the comparison's question ("within noise").
    """

    config: RegressionConfig

    def evaluate(self, view: GateView) -> GateResult:
        cfg = self.config
        ids, base, cur = _paired(view, cfg.metric, cfg.slice, f"{self.key}.metric")
        where = describe_slice(cfg.slice)
        if not ids:
            return GateResult(
                name="",
                type="regression",
                passed=False,
                required=True,
                message=f"{cfg.metric}{where}: no query scored in both runs",
            )
        before, after = float(base.mean()), float(cur.mean())
        drop = before - after
        limit = cfg.max_drop * before if cfg.relative else cfg.max_drop
        tolerance = (
            f"{cfg.max_drop:.0%} of the baseline mean = {limit:.3f}"
            if cfg.relative
            else f"{cfg.max_drop:g} absolute"
        )
        passed = drop <= limit + 1e-12
        if drop <= 0:
            verdict = "not lower than the baseline"
        elif passed:
            verdict = "within tolerance"
        else:
            verdict = "beyond tolerance"
        # both readings of "a drop of 10%": points, and the share of the baseline's mean
        change = f"{after - before:+.3f}" + (
            f", {(after - before) / before:+.1%}" if before > 0 else ""
        )
        return GateResult(
            name="",
            type="regression",
            passed=passed,
            required=True,
            message=(
                f"{cfg.metric}{where} {before:.3f} → {after:.3f} ({change}): "
                f"{verdict} (tolerated drop: {tolerance}; n={len(ids)}; baseline "
                f"{view.baseline_name})"
            ),
            value=after,
            threshold=before - limit,
        )


class PassToFailConfig(PluginConfig):
    """What 'pass' means for one query."""

    metric: str = Field("RR", description="per-query metric")
    op: Literal[">=", ">", "<=", "<"] = Field(">=", description="comparison")
    value: float = Field(0.5, description="a query passes when metric op value")
    slice: dict[str, str | int | float | bool] | None = Field(None, description="optional slice")

    @field_validator("value")
    @classmethod
    def _reachable(cls, value: float, info: ValidationInfo) -> float:
        return reachable(value, info)  # no query could ever pass: nothing to go from pass


@gate("pass_to_fail", config=PassToFailConfig)
class PassToFailGate(MetricGate):
    """Fails when any query that passed in the baseline fails now; lists them."""

    config: PassToFailConfig

    def evaluate(self, view: GateView) -> GateResult:
        cfg = self.config
        ids, base, cur = _paired(view, cfg.metric, cfg.slice, f"{self.key}.metric")
        check = OPERATORS[cfg.op]
        broken = tuple(
            f"{q}: {cfg.metric} {b:.3f} → {c:.3f}"
            for q, b, c in zip(ids, base, cur, strict=True)
            if check(b, cfg.value) and not check(c, cfg.value)
        )
        return GateResult(
            name="",
            type="pass_to_fail",
            passed=not broken,
            required=True,
            message=(
                f"{len(broken)} of {len(ids)} queries went from pass to fail "
                f"({cfg.metric} {SYMBOLS[cfg.op]} {cfg.value:g})"
            ),
            value=float(len(broken)),
            threshold=0.0,
            failures=broken,
        )


class NonInferiorityConfig(PluginConfig):
    """The margin a change may cost before it counts as worse, and how sure to be."""

    metric: str = Field(description="canonical metric string")
    margin: float = Field(ge=0, description="largest acceptable true drop (points)")

    @field_validator("margin")
    @classmethod
    def _can_fail(cls, value: float, info: ValidationInfo) -> float:
        return can_fail(value, info)

    confidence: float = Field(0.95, gt=0, lt=1, description="level of the paired CI")
    resamples: int = Field(2000, ge=100, le=1_000_000, description="bootstrap resamples")
    seed: int = Field(0, ge=0, description="the same seed (>= 0) gives the same verdict")
    slice: dict[str, str | int | float | bool] | None = Field(None, description="optional slice")


@gate("noninferiority", config=NonInferiorityConfig)
class NonInferiorityGate(MetricGate):
    """Fails only when the whole paired CI of (current − baseline) lies below −margin."""

    config: NonInferiorityConfig

    def evaluate(self, view: GateView) -> GateResult:
        cfg = self.config
        ids, base, cur = _paired(view, cfg.metric, cfg.slice, f"{self.key}.metric")
        low, high = paired_bootstrap_ci(
            base, cur, resamples=cfg.resamples, seed=cfg.seed, confidence=cfg.confidence
        )
        if math.isnan(high):
            return GateResult(
                name="",
                type="noninferiority",
                passed=False,
                required=True,
                message=f"{cfg.metric}: no query scored in both runs",
            )
        passed = high >= -cfg.margin
        return GateResult(
            name="",
            type="noninferiority",
            passed=passed,
            required=True,
            message=(
                f"{cfg.metric} change {float((cur - base).mean()):+.3f}, "
                f"{cfg.confidence:.0%} CI [{low:+.3f}, {high:+.3f}]; "
                + ("not worse than" if passed else "worse than")
                + f" −{cfg.margin:g} (n={len(ids)})"
            ),
            value=high,
            threshold=-cfg.margin,
        )
