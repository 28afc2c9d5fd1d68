"""Paired statistics: agreement with scipy, reproducible randomization, corrections by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from evalframe.assess.stats import (
    adjust_pvalues,
    compare_paired,
    paired_bootstrap_ci,
    paired_t_test,
    randomization_test,
)

RNG = np.random.default_rng(42)
A = RNG.random(50)
B = np.clip(A + RNG.normal(0.05, 0.1, 50), 0, 1)


def test_paired_t_test_matches_scipy() -> None:
    t, p = paired_t_test(A, B)
    ref = scipy_stats.ttest_rel(B, A)
    assert t == pytest.approx(ref.statistic, rel=1e-12)
    assert p == pytest.approx(ref.pvalue, rel=1e-9)


def test_identical_runs_are_not_different() -> None:
    assert paired_t_test(A, A) == (0.0, 1.0)
    assert randomization_test(A, A, resamples=999) == 1.0  # every resample ties: (999+1)/(999+1)


def test_randomization_p_is_stable_under_a_seed_and_has_the_plus_one_form() -> None:
    p1 = randomization_test(A, B, resamples=2000, seed=7)
    p2 = randomization_test(A, B, resamples=2000, seed=7)
    assert p1 == p2
    assert (p1 * 2001) == pytest.approx(round(p1 * 2001))  # (count + 1) / (B + 1)
    assert randomization_test(A, B, resamples=2000, seed=8) != p1 or p1 == 1 / 2001


def test_randomization_p_on_two_equal_differences() -> None:
    """d = (1, 1): of the 4 sign patterns, 2 reach |mean| >= 1, so p is about 1/2."""
    p = randomization_test(np.zeros(2), np.ones(2), resamples=20_000, seed=0)
    assert p == pytest.approx(0.5, abs=0.02)


def test_nan_pairs_are_dropped() -> None:
    a = np.array([0.1, np.nan, 0.5, 0.2])
    b = np.array([0.3, 0.9, np.nan, 0.4])
    result = compare_paired(a, b, resamples=200, randomization=200)
    assert result.n == 2
    assert result.delta == pytest.approx(((0.3 - 0.1) + (0.4 - 0.2)) / 2)


def test_paired_bootstrap_ci_brackets_the_delta_and_is_seeded() -> None:
    low, high = paired_bootstrap_ci(A, B, resamples=1000, seed=3)
    assert (low, high) == paired_bootstrap_ci(A, B, resamples=1000, seed=3)
    assert low < float(np.mean(B - A)) < high


def test_holm_by_hand() -> None:
    # sorted 0.01, 0.03, 0.04 -> 3 x 0.01, 2 x 0.03, 1 x 0.04 -> running max 0.03, 0.06, 0.06
    assert adjust_pvalues([0.01, 0.04, 0.03], "holm") == pytest.approx([0.03, 0.06, 0.06])


def test_benjamini_hochberg_by_hand() -> None:
    # sorted 0.01, 0.03, 0.04 -> 3/1 x 0.01, 3/2 x 0.03, 3/3 x 0.04 -> running min from the top
    assert adjust_pvalues([0.01, 0.04, 0.03], "bh") == pytest.approx([0.03, 0.04, 0.04])


def test_adjustment_caps_at_one_and_passes_nan_through() -> None:
    out = adjust_pvalues([0.6, math.nan, 0.9], "holm")
    # m = 2: 2 x 0.6 = 1.2 and then max(1.2, 1 x 0.9), both capped at 1
    assert out[0] == 1.0 and math.isnan(out[1]) and out[2] == 1.0


def test_compare_paired_counts_wins_ties_losses_and_effect_size() -> None:
    a = np.array([0.5, 0.5, 0.5, 0.2])
    b = np.array([1.0, 0.5, 0.0, 0.4])
    result = compare_paired(a, b, resamples=100, randomization=100)
    assert (result.wins, result.ties, result.losses) == (2, 1, 1)
    d = b - a
    assert result.effect_size == pytest.approx(d.mean() / d.std(ddof=1))


# -- a slice whose differences are all the same (#13 item 6) ------------------------------


@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_constant_nonzero_differences_give_a_defined_t_and_the_exact_p(n: int) -> None:
    """Before: t = -inf and p = 0. By hand: only the two uniform sign patterns of 2^n
    reach |mean| = |c|, so the exact sign-flip p is 2 / 2^n."""
    a = np.full(n, 0.75)
    b = np.full(n, 0.25)  # every difference is -0.5
    t, p = paired_t_test(a, b)
    assert math.isnan(t)  # no spread: t is undefined, never -inf
    assert p == pytest.approx(2 / 2**n)
    assert randomization_test(a, b) == pytest.approx(2 / 2**n)  # 2^n <= 10,000: exact
    result = compare_paired(a, b, resamples=200, randomization=10_000)
    assert result.p_t == pytest.approx(2 / 2**n) and math.isnan(result.t)
    assert math.isnan(result.effect_size)  # Cohen's d: mean / 0 is undefined
    assert not math.isinf(result.t)


def test_all_zero_differences_give_p_one() -> None:
    a = np.array([0.2, 0.5, 1.0])
    t, p = paired_t_test(a, a.copy())
    assert (t, p) == (0.0, 1.0)
    assert randomization_test(a, a.copy()) == 1.0
    assert compare_paired(a, a.copy(), resamples=100).effect_size == 0.0


def test_the_exact_randomization_p_matches_scipys_exact_permutation_test() -> None:
    """Few pairs: every sign pattern once; scipy's permutation_test with
    n_resamples=inf enumerates the same 2^n within-pair swaps."""
    rng = np.random.default_rng(5)
    a = rng.random(9).round(2)
    b = np.clip(a + rng.normal(0.1, 0.2, 9), 0, 1).round(2)
    ref = scipy_stats.permutation_test(
        (b, a),
        lambda x, y: np.mean(x - y),
        permutation_type="samples",
        n_resamples=np.inf,
        alternative="two-sided",
    )
    assert randomization_test(a, b) == pytest.approx(ref.pvalue, abs=1e-12)


# -- the interval that goes with a verdict -------------------------------------------------


@pytest.mark.parametrize("alpha", [0.2, 0.05, 0.01, 0.002])
def test_the_inverted_interval_excludes_zero_exactly_when_the_test_rejects(alpha: float) -> None:
    from evalframe.assess.stats import randomization_ci

    rng = np.random.default_rng(11)
    for trial in range(60):
        n = int(rng.integers(3, 40))
        a = rng.random(n)
        b = np.clip(a + rng.normal(rng.choice([0.0, 0.05, 0.15]), 0.15, n), 0, 1)
        if trial % 2:  # discrete metrics: many tied and zero differences
            a, b = a.round(1), b.round(1)
        p = randomization_test(a, b, resamples=2000, seed=trial)
        low, high = randomization_ci(a, b, alpha=alpha, resamples=2000, seed=trial)
        assert (not low <= 0.0 <= high) == (p < alpha), (trial, p, low, high)
        assert low <= float(np.mean(b - a)) <= high


def test_the_inverted_interval_agrees_with_a_search_over_shifts() -> None:
    """Its bounds are where p(delta), the test of mean(b - a - delta) = 0, falls below alpha."""
    from evalframe.assess.stats import randomization_ci

    rng = np.random.default_rng(3)
    a = rng.random(30)
    b = np.clip(a + rng.normal(0.08, 0.2, 30), 0, 1)
    low, high = randomization_ci(a, b, alpha=0.05, resamples=4000, seed=1)

    def p_at(delta: float) -> float:
        return randomization_test(a, b - delta, resamples=4000, seed=1)

    assert p_at(low + 1e-6) >= 0.05 and p_at(low - 1e-3) < 0.05
    assert p_at(high - 1e-6) >= 0.05 and p_at(high + 1e-3) < 0.05
