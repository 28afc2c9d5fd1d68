"""Calibration of a per-query confidence against an outcome: ECE, MCE, Brier, reliability bins,
answer_correctness@T, the lowest threshold that reaches a target precision, and a verdict.

The arithmetic (:func:`calibrate`) takes two aligned vectors, confidences in
[0, 1] and 0/1 outcomes, and knows nothing about runs; :func:`outcomes`
derives the outcome of every query of a run (hit@k, recall@k = 1, or the
judge's verdict on the answer). Formulas, in docs/analyses.md:

- bins B_1..B_m with n_b queries, mean confidence conf_b, observed rate acc_b;
- ECE = sum_b (n_b / N) |acc_b - conf_b|;  MCE = max_b |acc_b - conf_b|;
- Brier = (1 / N) sum_i (c_i - y_i)^2;
- answer_correctness@T = mean of y_i over the queries with c_i >= T (routed),
  with a percentile-bootstrap CI (``assess.stats.bootstrap_ci``).

The verdict reads the bins' Wilson intervals of acc_b, made simultaneous by
Bonferroni over the non-empty bins (each at 1 - alpha / m), so that a
well-calibrated score is called miscalibrated in at most alpha of the runs:
a bin is over-confident when its whole interval lies below conf_b, and
under-confident when it lies above.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evalframe.assess.results import Aggregate
from evalframe.assess.stats import bootstrap_ci

__all__ = [
    "CalibrationResult",
    "ReliabilityBin",
    "ThresholdResult",
    "bin_edges",
    "brier_score",
    "calibrate",
    "expected_calibration_error",
    "reliability_bins",
    "wilson_interval",
]

WELL = "well calibrated"
OVER = "over-confident"
UNDER = "under-confident"
MIXED = "mixed"


def bin_edges(confidences: np.ndarray, bins: int, binning: str = "width") -> np.ndarray:
    """Bin edges from 0 to 1.

    ``width``: ``bins`` equal-width bins, edges i / bins (exact decimal edges:
    0.3 is 3 / 10, not 0.1 + 0.1 + 0.1). ``mass``: inner edges at the j / bins
    quantiles of the confidences (numpy's linear interpolation), so each bin
    holds about N / bins queries; equal edges (ties) are merged, which can
    leave fewer bins.
    """
    if binning == "width":
        return np.arange(bins + 1, dtype=np.float64) / bins
    inner = np.quantile(np.asarray(confidences, dtype=np.float64), np.arange(1, bins) / bins)
    inner = inner[(inner > 0.0) & (inner < 1.0)]
    return np.unique(np.concatenate([[0.0], inner, [1.0]]))


def assign_bins(confidences: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Bin index of each confidence: [e_i, e_i+1), the last bin closed at 1."""
    return np.searchsorted(edges[1:-1], confidences, side="right")


def wilson_interval(successes: int, n: int, level: float) -> tuple[float, float]:
    """Wilson score interval of a proportion (scipy), NaN for n = 0."""
    if n == 0:
        return math.nan, math.nan
    from scipy import stats  # imported when needed: scipy's import is slow

    ci = stats.binomtest(successes, n).proportion_ci(confidence_level=level, method="wilson")
    return float(ci.low), float(ci.high)


@dataclass(frozen=True)
class ReliabilityBin:
    """One bin of the reliability diagram."""

    low: float
    high: float
    count: int
    mean_confidence: float
    observed_rate: float
    ci_low: float
    ci_high: float

    @property
    def gap(self) -> float:
        """observed rate - mean confidence (negative: over-confident)."""
        return self.observed_rate - self.mean_confidence

    @property
    def direction(self) -> str | None:
        """'over' or 'under' when the bin's interval excludes its mean confidence."""
        if self.count == 0:
            return None
        if self.ci_high < self.mean_confidence:
            return "over"
        if self.ci_low > self.mean_confidence:
            return "under"
        return None

    def as_dict(self) -> dict[str, Any]:
        return {
            "low": self.low,
            "high": self.high,
            "count": self.count,
            "mean_confidence": self.mean_confidence,
            "observed_rate": self.observed_rate,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "direction": self.direction,
        }


def reliability_bins(
    confidences: np.ndarray, outcomes: np.ndarray, edges: np.ndarray, confidence: float = 0.95
) -> list[ReliabilityBin]:
    """Every bin with its count, mean confidence, observed rate and simultaneous Wilson CI."""
    c = np.asarray(confidences, dtype=np.float64)
    y = np.asarray(outcomes, dtype=np.float64)
    index = assign_bins(c, edges)
    counts = np.bincount(index, minlength=edges.size - 1)
    filled = int((counts > 0).sum())
    level = 1.0 - (1.0 - confidence) / max(filled, 1)  # Bonferroni over the non-empty bins
    out = []
    for b in range(edges.size - 1):
        mask = index == b
        n = int(mask.sum())
        hits = int(y[mask].sum())
        low, high = wilson_interval(hits, n, level)
        out.append(
            ReliabilityBin(
                low=float(edges[b]),
                high=float(edges[b + 1]),
                count=n,
                mean_confidence=float(c[mask].mean()) if n else math.nan,
                observed_rate=hits / n if n else math.nan,
                ci_low=low,
                ci_high=high,
            )
        )
    return out


def expected_calibration_error(bins: Sequence[ReliabilityBin]) -> tuple[float, float]:
    """(ECE, MCE) over the non-empty bins."""
    total = sum(b.count for b in bins)
    gaps = [(b.count, abs(b.gap)) for b in bins if b.count]
    if not total:
        return math.nan, math.nan
    return sum(n * g for n, g in gaps) / total, max(g for _, g in gaps)


def brier_score(confidences: np.ndarray, outcomes: np.ndarray) -> float:
    c = np.asarray(confidences, dtype=np.float64)
    y = np.asarray(outcomes, dtype=np.float64)
    return float(np.mean((c - y) ** 2)) if c.size else math.nan


def verdict_of(bins: Sequence[ReliabilityBin]) -> tuple[str, str]:
    """(verdict, reason) from the bins' simultaneous intervals."""
    over = [b for b in bins if b.direction == "over"]
    under = [b for b in bins if b.direction == "under"]
    filled = sum(1 for b in bins if b.count)

    def where(found: list[ReliabilityBin]) -> str:
        return ", ".join(f"[{b.low:.2f}, {b.high:.2f}]" for b in found)

    if over and under:
        return MIXED, (
            f"observed rate below the confidence in {where(over)} and above it in {where(under)}"
        )
    if over:
        return OVER, (
            f"{len(over)} of {filled} bins observe fewer correct outcomes than their confidence, "
            f"beyond their intervals: {where(over)}"
        )
    if under:
        return UNDER, (
            f"{len(under)} of {filled} bins observe more correct outcomes than their confidence, "
            f"beyond their intervals: {where(under)}"
        )
    return WELL, f"every bin's interval holds its mean confidence ({filled} bins)"


@dataclass(frozen=True)
class ThresholdResult:
    """The outcome rate among the queries routed at a threshold (confidence >= T)."""

    threshold: float
    routed: int
    value: float
    ci_low: float
    ci_high: float
    coverage: float  # routed / all

    def as_dict(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold,
            "routed": self.routed,
            "value": self.value,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "coverage": self.coverage,
        }


@dataclass(frozen=True)
class BootstrapSettings:
    resamples: int = 1000
    seed: int = 0
    confidence: float = 0.95


def at_threshold(
    confidences: np.ndarray, outcomes: np.ndarray, threshold: float, boot: BootstrapSettings
) -> ThresholdResult:
    c = np.asarray(confidences, dtype=np.float64)
    y = np.asarray(outcomes, dtype=np.float64)
    routed = y[c >= threshold]
    low, high = bootstrap_ci(
        routed, resamples=boot.resamples, seed=boot.seed, confidence=boot.confidence
    )
    if routed.size < 2:  # a bootstrap of one value is that value: no interval at all
        low = high = math.nan
    return ThresholdResult(
        threshold=float(threshold),
        routed=int(routed.size),
        value=float(routed.mean()) if routed.size else math.nan,
        ci_low=low,
        ci_high=high,
        coverage=routed.size / c.size if c.size else math.nan,
    )


def lowest_threshold(
    confidences: np.ndarray,
    outcomes: np.ndarray,
    target: float,
    boot: BootstrapSettings,
    min_routed: int = 1,
) -> ThresholdResult | None:
    """The lowest observed confidence T whose routed precision (the estimate) reaches
    ``target``, among the thresholds that route at least ``min_routed`` queries."""
    c = np.asarray(confidences, dtype=np.float64)
    y = np.asarray(outcomes, dtype=np.float64)
    if not c.size:
        return None
    # every candidate at once: sorted ascending, the queries routed at the i-th distinct
    # confidence are the suffix from its first position (O(N log N), not one pass per T)
    order = np.argsort(c, kind="stable")
    thresholds, first = np.unique(c[order], return_index=True)
    routed = c.size - first
    hits = np.cumsum(y[order][::-1])[::-1][first]
    ok = np.flatnonzero((routed >= max(min_routed, 1)) & (hits / routed >= target))
    if not ok.size:
        return None
    return at_threshold(c, y, float(thresholds[ok[0]]), boot)


@dataclass
class CalibrationResult:
    """Everything calibration.json holds (see :meth:`as_dict`)."""

    n: int
    ece: float
    mce: float
    brier: float
    binning: str
    bins: list[ReliabilityBin]
    bin_level: float
    thresholds: list[ThresholdResult]
    target_precision: float
    min_routed: int
    lowest: ThresholdResult | None
    verdict: str
    verdict_reason: str
    caveats: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "ece": self.ece,
            "mce": self.mce,
            "brier": self.brier,
            "verdict": self.verdict,
            "verdict_reason": self.verdict_reason,
            "caveats": list(self.caveats),
            "binning": self.binning,
            "bin_ci_level": self.bin_level,
            "bins": [b.as_dict() for b in self.bins],
            "edges": [self.bins[0].low, *(b.high for b in self.bins)] if self.bins else [],
            "answer_correctness": {f"{t.threshold:g}": t.as_dict() for t in self.thresholds},
            "target_precision": self.target_precision,
            "min_routed": self.min_routed,
            "lowest_threshold": self.lowest.as_dict() if self.lowest else None,
        }

    def values(self) -> dict[str, Aggregate]:
        """The headline values, by name, for gates and metrics.json (``calibration.*``)."""
        nan = math.nan
        out = {
            "calibration.ece": Aggregate(mean=self.ece, std=nan, n=self.n),
            "calibration.mce": Aggregate(mean=self.mce, std=nan, n=self.n),
            "calibration.brier": Aggregate(mean=self.brier, std=nan, n=self.n),
        }
        for t in self.thresholds:
            out[f"calibration.answer_correctness@{t.threshold:g}"] = Aggregate(
                mean=t.value, std=nan, n=t.routed, ci_low=t.ci_low, ci_high=t.ci_high
            )
        if self.lowest is not None:
            out["calibration.lowest_threshold"] = Aggregate(
                mean=self.lowest.threshold, std=nan, n=self.lowest.routed
            )
        return out


def calibrate(
    confidences: Sequence[float] | np.ndarray,
    outcomes: Sequence[bool] | np.ndarray,
    *,
    bins: int = 10,
    binning: str = "width",
    thresholds: Sequence[float] = (0.8,),
    target_precision: float = 0.9,
    min_queries: int = 30,
    min_routed: int = 1,
    boot: BootstrapSettings | None = None,
) -> CalibrationResult:
    """Calibration of ``confidences`` (each in [0, 1]) against 0/1 ``outcomes``."""
    boot = boot or BootstrapSettings()
    c = np.asarray(confidences, dtype=np.float64)
    y = np.asarray(outcomes, dtype=np.float64)
    edges = bin_edges(c, bins, binning)
    table = reliability_bins(c, y, edges, boot.confidence)
    ece, mce = expected_calibration_error(table)
    verdict, reason = verdict_of(table)
    filled = max(1, sum(1 for b in table if b.count))
    caveats = []
    if c.size < min_queries:
        caveats.append(
            f"only {c.size} queries: ECE on fewer than about {min_queries} queries is mostly "
            "noise, and the verdict can only see gross miscalibration; read the bins' counts "
            "and intervals before trusting either"
        )
    result = CalibrationResult(
        n=int(c.size),
        ece=ece,
        mce=mce,
        brier=brier_score(c, y),
        binning=binning,
        bins=table,
        bin_level=1.0 - (1.0 - boot.confidence) / filled,
        thresholds=[at_threshold(c, y, t, boot) for t in thresholds],
        target_precision=target_precision,
        min_routed=min_routed,
        lowest=lowest_threshold(c, y, target_precision, boot, min_routed),
        verdict=verdict,
        verdict_reason=reason,
        caveats=caveats,
    )
    for t in result.thresholds:
        if 0 < t.routed < min_queries:
            caveats.append(
                f"answer_correctness@{t.threshold:g} rests on {t.routed} routed "
                f"quer{'y' if t.routed == 1 else 'ies'}: its interval is wide"
            )
    return result
