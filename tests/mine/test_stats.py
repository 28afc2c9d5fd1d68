"""The miner's statistics against scipy and published values, and the verdict's rules."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from evalframe.mine.stats import (
    doc_stats,
    fisher_greater,
    min_detectable_effect,
    newcombe_interval,
    plan_budget,
    power,
    required_trials,
    verdict,
    wilson_interval,
)


@st.composite
def tables(draw: st.DrawFn) -> tuple[int, int, int, int]:
    n_in = draw(st.integers(1, 120))
    n_out = draw(st.integers(1, 120))
    return n_in, draw(st.integers(0, n_in)), n_out, draw(st.integers(0, n_out))


@settings(max_examples=300, deadline=None)
@given(tables())
def test_fisher_matches_scipy_one_sided(table: tuple[int, int, int, int]) -> None:
    n_in, s_in, n_out, s_out = table
    expected = sps.fisher_exact(
        [[s_in, n_in - s_in], [s_out, n_out - s_out]], alternative="greater"
    ).pvalue
    assert fisher_greater(s_in, n_in, s_out, n_out) == pytest.approx(expected, rel=1e-9, abs=1e-15)


def test_fisher_without_trials_on_one_side_is_no_evidence() -> None:
    assert fisher_greater(0, 0, 3, 10) == 1.0
    assert fisher_greater(5, 10, 0, 0) == 1.0


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 200).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_matches_scipy(sn: tuple[int, int]) -> None:
    s, n = sn
    ci = sps.binomtest(s, n).proportion_ci(confidence_level=0.95, method="wilson")
    low, high = wilson_interval(s, n, 0.95)
    assert low == pytest.approx(ci.low, abs=1e-12)
    assert high == pytest.approx(ci.high, abs=1e-12)


def test_newcombe_matches_his_published_example() -> None:
    """Newcombe (1998), Statistics in Medicine 17:873, Table II (a): 56/70 − 48/80, method 10."""
    low, high = newcombe_interval(56, 70, 48, 80, 0.95)
    assert (round(low, 4), round(high, 4)) == (0.0524, 0.3339)


@settings(max_examples=200, deadline=None)
@given(tables())
def test_newcombe_is_wilson_combined(table: tuple[int, int, int, int]) -> None:
    """δ − √((p₁−l₁)² + (u₀−p₀)²), δ + √((u₁−p₁)² + (p₀−l₀)²) with scipy's Wilson bounds."""
    n_in, s_in, n_out, s_out = table
    w1 = sps.binomtest(s_in, n_in).proportion_ci(0.9, method="wilson")
    w0 = sps.binomtest(s_out, n_out).proportion_ci(0.9, method="wilson")
    p1, p0 = s_in / n_in, s_out / n_out
    d = p1 - p0
    low = d - math.sqrt((p1 - w1.low) ** 2 + (w0.high - p0) ** 2)
    high = d + math.sqrt((w1.high - p1) ** 2 + (p0 - w0.low) ** 2)
    got = newcombe_interval(s_in, n_in, s_out, n_out, 0.9)
    assert got == pytest.approx((low, high), abs=1e-12)
    assert got[0] <= d <= got[1]


def test_holm_and_bh_adjust_across_a_pairs_candidates() -> None:
    counts = [(50, 40, 50, 10), (50, 30, 50, 22), (50, 26, 50, 25)]
    raw = [
        sps.fisher_exact([[s, n - s], [so, no - so]], alternative="greater").pvalue
        for n, s, no, so in counts
    ]
    holm = doc_stats(counts, threshold=0.1, confidence=0.95, correction="holm")
    order = np.argsort(raw)
    expected_holm = np.maximum.accumulate([(3 - i) * raw[j] for i, j in enumerate(order)])
    for i, j in enumerate(order):
        assert holm[j].p_adjusted == pytest.approx(min(1.0, expected_holm[i]))
    none = doc_stats(counts, threshold=0.1, confidence=0.95, correction="none")
    assert [s.p_adjusted for s in none] == pytest.approx(raw)


def test_counts_give_delta_p_and_rates() -> None:
    (s,) = doc_stats([(40, 30, 60, 15)], threshold=0.1, confidence=0.95)
    assert s.delta_p == pytest.approx(30 / 40 - 15 / 60)
    assert (s.rate_in, s.rate_out) == (0.75, 0.25)


@pytest.mark.parametrize(
    ("delta", "ci_high", "p_adj", "expected"),
    [
        (0.30, 0.45, 0.001, "relevant"),  # significant and above the threshold
        (0.08, 0.20, 0.001, "inconclusive"),  # significant, but not above the threshold
        (0.30, 0.60, 0.20, "inconclusive"),  # big but not significant: too few trials
        (0.02, 0.09, 0.40, "not_relevant"),  # the whole CI is below the threshold
        (math.nan, 1.0, 1.0, "inconclusive"),  # no trial on one side
    ],
)
def test_verdict_rules(delta: float, ci_high: float, p_adj: float, expected: str) -> None:
    assert verdict(delta, ci_high, p_adj, threshold=0.1, alpha=0.05) == expected


def test_ten_trials_are_never_certain() -> None:
    """The issue's rule: a verdict from 10 trials must not be reported as certain.

    Split 5/5 among 8 candidates, only a perfect separation (5/5 against 0/5)
    is called relevant, only a visibly harmful document (Δp ≤ −0.6) is called
    not relevant, and every interval stays wider than half the scale.
    """
    for s_in in range(6):
        for s_out in range(6):
            (s, *_) = doc_stats([(5, s_in, 5, s_out)] * 8, threshold=0.1, confidence=0.95)
            assert s.ci[1] - s.ci[0] > 0.5
            if s.verdict == "relevant":
                assert s.delta_p == 1.0
            if s.verdict == "not_relevant":
                assert s.delta_p <= -0.6


def test_power_by_normal_approximation() -> None:
    """Φ((δ − max(crit, t))/SE₁), crit = z₁₋α·SE₀ + ½(1/n₁ + 1/n₀), written out by hand."""
    n, p, base, effect, alpha, t = 200, 0.5, 0.2, 0.3, 0.05, 0.1
    n1 = n0 = 100
    p1, p0 = base + effect, base
    pooled = 0.5 * p1 + 0.5 * p0
    se0 = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n0))
    se1 = math.sqrt(p1 * (1 - p1) / n1 + p0 * (1 - p0) / n0)
    crit = sps.norm.ppf(1 - alpha) * se0 + 0.5 * (1 / n1 + 1 / n0)
    expected = sps.norm.cdf((effect - max(crit, t)) / se1)
    got = power(n, effect=effect, base_rate=base, p_include=p, threshold=t, alpha=alpha)
    assert got == pytest.approx(expected, rel=1e-9)


def test_required_trials_is_the_smallest_enough() -> None:
    kw = {"effect": 0.3, "p_include": 0.5, "threshold": 0.1, "alpha": 0.01, "base_rate": 0.2}
    n = required_trials(target_power=0.8, **kw)  # type: ignore[arg-type]
    assert n is not None
    assert power(n, **kw) >= 0.8 > power(n - 1, **kw)  # type: ignore[arg-type]


def test_an_effect_at_the_threshold_cannot_be_planned_for() -> None:
    """Half the estimates of an effect equal to the threshold fall below it."""
    assert (
        required_trials(effect=0.1, target_power=0.8, p_include=0.5, threshold=0.1, alpha=0.05)
        is None
    )


def test_the_worst_base_rate_needs_the_most_trials() -> None:
    kw = {"effect": 0.2, "target_power": 0.8, "p_include": 0.5, "threshold": 0.1, "alpha": 0.05}
    worst = required_trials(**kw)  # type: ignore[arg-type]
    assert worst is not None
    for base in (0.0, 0.1, 0.4, 0.7):
        assert (required_trials(base_rate=base, **kw) or 0) <= worst  # type: ignore[arg-type]


def test_budget_splits_alpha_under_a_correction_and_reports_the_detectable_effect() -> None:
    b = plan_budget(
        trials=100,
        candidates=8,
        effect=0.2,
        target_power=0.8,
        confidence=0.95,
        p_include=0.5,
        threshold=0.1,
        correction="holm",
        base_rate=None,
    )
    assert b.alpha_per_test == pytest.approx(0.05 / 8)
    assert b.required is not None and b.required > 100
    assert b.detectable is not None and b.detectable > 0.2  # 100 trials see only bigger effects
    assert b.detectable == pytest.approx(
        min_detectable_effect(100, target_power=0.8, p_include=0.5, threshold=0.1, alpha=0.05 / 8)
    )
    text = "\n".join(b.lines())
    assert f"needs {b.required} trials" in text and "inconclusive" in text
