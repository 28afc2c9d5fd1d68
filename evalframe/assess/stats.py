"""Paired statistics on per-query vectors: is a difference more than noise?

Every function takes two aligned per-query vectors (the same queries, in the
same order) and works on the per-query differences ``b - a``. Randomised
procedures take a seed and give the same answer on every call with it.
The percentile bootstrap of one vector's mean (:func:`bootstrap_ci`, the
intervals of every aggregate in :mod:`evalframe.assess.results`) lives here
too, beside its paired form.
"""

from __future__ import annotations

import hashlib
import math
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "PairedComparison",
    "SignFlips",
    "adjust_pvalues",
    "bootstrap_ci",
    "bootstrap_cis",
    "compare_paired",
    "paired_bootstrap_ci",
    "paired_t_test",
    "randomization_ci",
    "randomization_test",
    "sign_flips",
]


def bootstrap_ci(
    values: np.ndarray, *, resamples: int, seed: int, confidence: float = 0.95
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean; the same seed gives the same interval.

    Resampling is done in blocks so memory stays near 16 MB whatever the
    number of queries.
    """
    return bootstrap_cis([values], resamples=resamples, seed=seed, confidence=confidence)[0]


def bootstrap_cis(
    arrays: Sequence[np.ndarray], *, resamples: int, seed: int, confidence: float = 0.95
) -> list[tuple[float, float]]:
    """:func:`bootstrap_ci` of each array, drawing the resamples once per array length.

    Arrays of one length share a seed's resample indices, so drawing them
    once for all (the metrics of one run, most often) gives each array
    exactly the interval :func:`bootstrap_ci` gives it alone, for less work.
    """
    out: list[tuple[float, float]] = [(math.nan, math.nan)] * len(arrays)
    by_size: dict[int, list[int]] = {}
    for i, values in enumerate(arrays):
        if values.size and resamples > 0:
            by_size.setdefault(int(values.size), []).append(i)
    alpha = (1.0 - confidence) / 2.0
    for n, members in by_size.items():
        rng = np.random.default_rng(seed)
        means = np.empty((len(members), resamples), dtype=np.float64)
        block = max(1, 2_000_000 // n)  # the draws must be cut as bootstrap_ci always cut them
        for start in range(0, resamples, block):
            stop = min(resamples, start + block)
            idx = rng.integers(0, n, size=(stop - start, n))
            for row, i in enumerate(members):
                means[row, start:stop] = arrays[i][idx].mean(axis=1)
        for row, i in enumerate(members):
            low, high = np.quantile(means[row], [alpha, 1.0 - alpha])
            out[i] = (float(low), float(high))
    return out


def _diffs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"paired vectors differ in length: {a.shape} vs {b.shape}")
    keep = ~(np.isnan(a) | np.isnan(b))  # a query a policy skipped in either run
    return np.asarray(b[keep] - a[keep], dtype=np.float64)


def paired_t_test(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Two-sided paired t-test of mean(b - a) = 0: (t, p).

    When every difference is the same, t has no variance to divide by, and p
    is that of the exact sign-flip test instead: all zero gives (0, 1), as
    nothing changed; the same nonzero difference gives (NaN, 2 / 2^n), as
    only the two uniform sign patterns reach the observed mean. Fewer than
    two pairs give (NaN, NaN).
    """
    d = _diffs(a, b)
    n = d.size
    if n < 2:
        return math.nan, math.nan
    sd = float(d.std(ddof=1))
    if sd == 0.0:
        if float(d.mean()) == 0.0:
            return 0.0, 1.0
        return math.nan, float(2.0 ** (1 - n))
    t = float(d.mean()) / (sd / math.sqrt(n))
    from scipy import stats  # scipy is an mlflow dependency; imported only when testing

    p = float(2.0 * stats.t.sf(abs(t), df=n - 1))
    return t, p


@dataclass(frozen=True)
class SignFlips:
    """The sign-flip resamples of one vector of differences, kept for test and interval.

    ``means[r]`` is mean(s_r * d) and ``signs[r]`` is mean(s_r) for sign
    vector s_r. With ``exact`` every one of the 2^n vectors is there once;
    otherwise they are ``resamples`` seeded random draws.
    """

    observed: float
    means: np.ndarray
    signs: np.ndarray
    exact: bool

    @property
    def size(self) -> int:
        return int(self.means.size)

    def pvalue(self, count: int) -> float:
        """count / 2^n when exact, else (count + 1) / (resamples + 1): never 0 when sampled."""
        return count / self.size if self.exact else (count + 1) / (self.size + 1)


#: The last few resample sets: a comparison tests each cell, then inverts the same
#: test for its interval, and should not draw 10,000 x n signs twice.
_FLIPS: OrderedDict[tuple[bytes, int, int], SignFlips] = OrderedDict()
_FLIPS_KEPT = 64


def sign_flips(d: np.ndarray, *, resamples: int = 10_000, seed: int = 0) -> SignFlips:
    """Every sign vector when 2^n <= ``resamples`` (an exact test), else seeded draws."""
    d = np.ascontiguousarray(d, dtype=np.float64)
    key = (hashlib.blake2b(d.tobytes(), digest_size=16).digest(), resamples, seed)
    cached = _FLIPS.get(key)
    if cached is not None:
        _FLIPS.move_to_end(key)
        return cached
    flips = _sign_flips(d, resamples, seed)
    _FLIPS[key] = flips
    while len(_FLIPS) > _FLIPS_KEPT:
        _FLIPS.popitem(last=False)
    return flips


def _sign_flips(d: np.ndarray, resamples: int, seed: int) -> SignFlips:
    n = d.size
    if n and 2**n <= resamples:
        # rows of the 2^n sign patterns, built from the bits of 0 .. 2^n - 1
        bits = (np.arange(2**n, dtype=np.int64)[:, None] >> np.arange(n)) & 1
        signs = (bits * 2 - 1).astype(np.int8)
        return SignFlips(
            float(d.mean()), signs @ d / n, signs.mean(axis=1, dtype=np.float64), exact=True
        )
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    flips = np.empty(resamples)
    block = max(1, 2_000_000 // max(n, 1))
    for start in range(0, resamples, block):
        size = min(block, resamples - start)
        signs = rng.integers(0, 2, size=(size, n), dtype=np.int8) * 2 - 1
        means[start : start + size] = (signs * d).mean(axis=1)
        flips[start : start + size] = signs.mean(axis=1, dtype=np.float64)
    return SignFlips(float(d.mean()) if n else math.nan, means, flips, exact=False)


def _at_least(values: np.ndarray, observed: float) -> int:
    """How many |values| reach |observed|, with a tolerance so that equal ones count
    whatever the floating-point order of the additions."""
    threshold = abs(observed) - 1e-12 * max(1.0, abs(observed))
    return int((np.abs(values) >= threshold).sum())


def randomization_test(
    a: np.ndarray, b: np.ndarray, *, resamples: int = 10_000, seed: int = 0
) -> float:
    """Two-sided paired randomization (sign-flip) test of mean(b - a) = 0.

    Each resample flips the sign of every difference with probability 1/2.
    The p-value is (count + 1) / (resamples + 1), where count is the number of
    resamples whose |mean| is at least the observed one, so it is never 0 and
    the same seed always gives the same p. With few pairs (2^n <= resamples)
    every sign pattern is enumerated once and p = count / 2^n, the exact test.
    """
    d = _diffs(a, b)
    if d.size == 0:
        return math.nan
    flips = sign_flips(d, resamples=resamples, seed=seed)
    return flips.pvalue(_at_least(flips.means, flips.observed))


def randomization_ci(
    a: np.ndarray, b: np.ndarray, *, alpha: float, resamples: int = 10_000, seed: int = 0
) -> tuple[float, float]:
    """The shifts delta the sign-flip test does not reject at level ``alpha``.

    The interval is {delta : p(delta) >= alpha}, where p(delta) is the test of
    mean(b - a - delta) = 0 on the *same* resamples as
    :func:`randomization_test`, so it excludes 0 exactly when that test's p
    is below ``alpha``: an interval and a verdict taken from it cannot
    disagree. For each resample the deltas it counts form one interval
    around the observed mean (the roots of a quadratic), so the bounds are
    order statistics of those roots; no search is needed.
    """
    d = _diffs(a, b)
    if d.size == 0:
        return math.nan, math.nan
    flips = sign_flips(d, resamples=resamples, seed=seed)
    dbar, mean, sign = flips.observed, flips.means, flips.signs
    # resample r counts delta when |mean_r - delta * sign_r| >= |dbar - delta|:
    # (sign_r^2 - 1) delta^2 + 2 (dbar - mean_r sign_r) delta + (mean_r^2 - dbar^2) >= 0
    qa = sign * sign - 1.0
    qb = dbar - mean * sign
    qc = mean * mean - dbar * dbar
    lows = np.full(flips.size, -math.inf)
    highs = np.full(flips.size, math.inf)
    curved = qa < -1e-15  # |sign_r| = 1 (all signs equal) counts every delta
    disc = np.sqrt(np.maximum(qb[curved] ** 2 - qa[curved] * qc[curved], 0.0))
    r1 = (-qb[curved] + disc) / qa[curved]
    r2 = (-qb[curved] - disc) / qa[curved]
    lows[curved], highs[curved] = np.minimum(r1, r2), np.maximum(r1, r2)
    extra = 0 if flips.exact else 1
    # smallest count with (count + extra) / (size + extra) >= alpha
    need = max(0, math.ceil(alpha * (flips.size + extra) - extra - 1e-9))
    if need == 0:
        return -math.inf, math.inf
    low = float(np.sort(lows)[need - 1])
    high = float(-np.sort(-highs)[need - 1])
    # At delta = 0 the roots are computed, the test compares; when a resample
    # reaches the observed mean exactly (common with discrete metrics) a root
    # sits at 0 give or take 1e-17. The test's own count decides that point.
    rejected = flips.pvalue(_at_least(mean, dbar)) < alpha
    if rejected and low <= 0.0 <= high:
        if dbar > 0:
            low = float(np.nextafter(0.0, 1.0))
        else:
            high = float(np.nextafter(0.0, -1.0))
    elif not rejected and not low <= 0.0 <= high:
        low, high = min(low, 0.0), max(high, 0.0)
    return low, high


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

    The effect size is Cohen's d for paired samples: mean(d) / sd(d); NaN
    when it is undefined (no spread, or one pair, with a nonzero mean).
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    keep = ~(np.isnan(a) | np.isnan(b))
    d = b[keep] - a[keep]
    low, high = paired_bootstrap_ci(a, b, resamples=resamples, seed=seed, confidence=confidence)
    t, p_t = paired_t_test(a, b)
    sd = float(d.std(ddof=1)) if d.size > 1 else math.nan
    if not d.size or math.isnan(sd):
        effect = math.nan if not d.size else 0.0 if float(d.mean()) == 0.0 else math.nan
    elif sd == 0.0:  # every difference the same: no spread to scale by
        effect = 0.0 if float(d.mean()) == 0.0 else math.nan
    else:
        effect = float(d.mean()) / sd
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
