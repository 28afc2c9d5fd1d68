"""Paired statistics on per-query vectors: is a difference more than noise?

Every function takes two aligned per-query vectors (the same queries, in the
same order) and works on the per-query differences ``b - a``. Randomised
procedures take a seed and give the same answer on every call with it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "PairedComparison",
    "adjust_pvalues",
    "compare_paired",
    "paired_bootstrap_ci",
    "paired_t_test",
    "randomization_test",
]


def _diffs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"paired vectors differ in length: {a.shape} vs {b.shape}")
    keep = ~(np.isnan(a) | np.isnan(b))  # a query a policy skipped in either run
    return np.asarray(b[keep] - a[keep], dtype=np.float64)


def paired_t_test(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Two-sided paired t-test of mean(b - a) = 0: (t, p). All-equal pairs give (0, 1)."""
    d = _diffs(a, b)
    n = d.size
    if n < 2:
        return math.nan, math.nan
    sd = float(d.std(ddof=1))
    if sd == 0.0:
        return (0.0, 1.0) if float(d.mean()) == 0.0 else (math.copysign(math.inf, d.mean()), 0.0)
    t = float(d.mean()) / (sd / math.sqrt(n))
    from scipy import stats  # scipy is an mlflow dependency; imported only when testing

    p = float(2.0 * stats.t.sf(abs(t), df=n - 1))
    return t, p


def randomization_test(
    a: np.ndarray, b: np.ndarray, *, resamples: int = 10_000, seed: int = 0
) -> float:
    """Two-sided paired randomization (sign-flip) test of mean(b - a) = 0.

    Each resample flips the sign of every difference with probability 1/2.
    The p-value is (count + 1) / (resamples + 1), where count is the number of
    resamples whose |mean| is at least the observed one, so it is never 0 and
    the same seed always gives the same p.
    """
    d = _diffs(a, b)
    if d.size == 0:
        return math.nan
    observed = abs(float(d.mean()))
    rng = np.random.default_rng(seed)
    count = 0
    block = max(1, 2_000_000 // d.size)
    # a tiny tolerance so that resamples equal to the observed value count,
    # whatever the floating-point order of the additions
    threshold = observed - 1e-12 * max(1.0, observed)
    for start in range(0, resamples, block):
        size = min(block, resamples - start)
        signs = rng.integers(0, 2, size=(size, d.size), dtype=np.int8) * 2 - 1
        means = np.abs((signs * d).mean(axis=1))
        count += int((means >= threshold).sum())
    return (count + 1) / (resamples + 1)


def paired_bootstrap_ci(
    a: np.ndarray,
    b: np.ndarray,
    *,
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[float, float]:
    """Percentile bootstrap CI of mean(b - a), resampling queries (pairs stay together)."""
    d = _diffs(a, b)
    if d.size == 0:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    block = max(1, 2_000_000 // d.size)
    for start in range(0, resamples, block):
        stop = min(resamples, start + block)
        idx = rng.integers(0, d.size, size=(stop - start, d.size))
        means[start:stop] = d[idx].mean(axis=1)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    return float(low), float(high)


def adjust_pvalues(pvalues: Sequence[float], method: str = "holm") -> list[float]:
    """Holm (family-wise error) or Benjamini-Hochberg (false discovery rate) adjustment.

    NaN p-values are passed through and do not count towards the family size.
    """
    p = np.asarray(pvalues, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    valid = np.flatnonzero(~np.isnan(p))
    m = valid.size
    if m == 0:
        return [float(x) for x in out]
    order = valid[np.argsort(p[valid], kind="stable")]
    ranked = p[order]
    if method == "holm":
        adj = np.maximum.accumulate((m - np.arange(m)) * ranked)
    elif method in ("bh", "fdr_bh", "benjamini-hochberg"):
        adj = (m / np.arange(1, m + 1)) * ranked
        adj = np.minimum.accumulate(adj[::-1])[::-1]
    else:
        raise ValueError(f"unknown p-value adjustment {method!r}; use 'holm' or 'bh'")
    out[order] = np.minimum(adj, 1.0)
    return [float(x) for x in out]


@dataclass(frozen=True)
class PairedComparison:
    """Everything ``compare`` reports for one metric (or one metric within a slice)."""

    n: int
    mean_a: float
    mean_b: float
    delta: float
    ci_low: float
    ci_high: float
    t: float
    p_t: float
    p_randomization: float
    effect_size: float
    wins: int
    ties: int
    losses: int

    def as_dict(self) -> dict[str, float | int]:
        return dict(self.__dict__)


def compare_paired(
    a: np.ndarray,
    b: np.ndarray,
    *,
    resamples: int = 1000,
    randomization: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
) -> PairedComparison:
    """Means, delta, paired bootstrap CI, t-test, randomization test, effect size, W/T/L.

    The effect size is Cohen's d for paired samples: mean(d) / sd(d).
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    keep = ~(np.isnan(a) | np.isnan(b))
    d = b[keep] - a[keep]
    low, high = paired_bootstrap_ci(a, b, resamples=resamples, seed=seed, confidence=confidence)
    t, p_t = paired_t_test(a, b)
    sd = float(d.std(ddof=1)) if d.size > 1 else math.nan
    effect = float(d.mean()) / sd if sd and not math.isnan(sd) else (0.0 if d.size else math.nan)
    return PairedComparison(
        n=int(d.size),
        mean_a=float(a[keep].mean()) if d.size else math.nan,
        mean_b=float(b[keep].mean()) if d.size else math.nan,
        delta=float(d.mean()) if d.size else math.nan,
        ci_low=low,
        ci_high=high,
        t=t,
        p_t=p_t,
        p_randomization=randomization_test(a, b, resamples=randomization, seed=seed),
        effect_size=effect,
        wins=int((d > 0).sum()),
        ties=int((d == 0).sum()),
        losses=int((d < 0).sum()),
    )
