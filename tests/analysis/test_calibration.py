"""Calibration against hand-computed and simulated ground truth.

The simulations draw confidences c ~ U(0, 1) and outcomes y ~ Bernoulli(f(c))
for a known f, so the population ECE is known in closed form, and the test
tolerance is derived from the sampling variance (see each test).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from evalframe.analysis.calibration import (
    OVER,
    UNDER,
    WELL,
    BootstrapSettings,
    bin_edges,
    calibrate,
    reliability_bins,
    wilson_interval,
)

C = [0.1, 0.3, 0.3, 0.9, 0.9, 0.9, 1.0]
Y = [0, 1, 0, 1, 1, 0, 1]


def test_ece_mce_brier_by_hand() -> None:
    r = calibrate(C, Y, bins=10, thresholds=[0.3], target_precision=0.75, min_queries=5)
    # bins: [0.1,0.2) {0.1: 0}; [0.3,0.4) {0.3: 1, 0.3: 0}; [0.9,1.0] {0.9: 1, 1, 0; 1.0: 1}
    conf9, acc9 = (0.9 * 3 + 1.0) / 4, 3 / 4
    gaps = [(1, abs(0 - 0.1)), (2, abs(0.5 - 0.3)), (4, abs(acc9 - conf9))]
    assert r.ece == pytest.approx(sum(n * g for n, g in gaps) / 7, abs=1e-12)  # 1.2 / 7
    assert r.mce == pytest.approx(0.2, abs=1e-12)
    assert r.brier == pytest.approx(
        sum((c - y) ** 2 for c, y in zip(C, Y, strict=True)) / 7, abs=1e-12
    )
    counts = [b.count for b in r.bins]
    assert counts == [0, 1, 0, 2, 0, 0, 0, 0, 0, 4]
    assert r.bins[9].mean_confidence == pytest.approx(conf9)
    assert r.bins[9].observed_rate == acc9
    assert r.caveats == []  # 7 >= min_queries=5, and @0.3 routes 6 >= 5
    # answer_correctness@0.8 routes 4 < 5: said
    r = calibrate(C, Y, thresholds=[0.8], min_queries=5)
    assert any("rests on 4 routed" in c for c in r.caveats)


def test_answer_correctness_routes_confidence_at_or_above_the_threshold() -> None:
    r = calibrate(C, Y, thresholds=[0.8, 0.3, 1.0], boot=BootstrapSettings(resamples=200))
    at8, at3, at1 = r.thresholds
    assert (at8.routed, at8.value, at8.coverage) == (4, 3 / 4, 4 / 7)
    assert (at3.routed, at3.value) == (6, 4 / 6)  # 0.3 itself is routed
    assert at8.ci_low <= at8.value <= at8.ci_high
    assert at1.routed == 1 and math.isnan(at1.ci_low)  # one routed query: no interval


def test_the_lowest_threshold_reaching_the_target() -> None:
    # precision by threshold: 0.1 -> 4/7, 0.3 -> 4/6, 0.9 -> 3/4, 1.0 -> 1/1
    r = calibrate(C, Y, target_precision=0.75, min_routed=1)
    assert r.lowest is not None and (r.lowest.threshold, r.lowest.routed) == (0.9, 4)
    r = calibrate(C, Y, target_precision=0.8, min_routed=1)
    assert r.lowest is not None and r.lowest.threshold == 1.0
    # at least 5 routed: only 0.1 (7) and 0.3 (6) qualify, neither reaches 0.75
    assert calibrate(C, Y, target_precision=0.75, min_routed=5).lowest is None


@pytest.mark.parametrize(
    ("c", "b"), [(0.0, 0), (0.1, 1), (0.3, 3), (0.7, 7), (0.9999, 9), (1.0, 9)]
)
def test_equal_width_bins_are_half_open_and_the_last_is_closed(c: float, b: int) -> None:
    edges = bin_edges(np.asarray([c]), 10)
    assert edges[3] == 0.3  # 3 / 10, not 0.1 + 0.1 + 0.1
    table = reliability_bins(np.asarray([c]), np.asarray([1.0]), edges)
    assert [t.count for t in table].index(1) == b


def test_equal_mass_bins_split_at_quantiles_and_merge_tied_edges() -> None:
    c = np.asarray([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8])
    edges = bin_edges(c, 4, "mass")
    # numpy's linear quantiles at 1/4, 2/4, 3/4 of 8 sorted values: positions 1.75, 3.5, 5.25
    assert edges == pytest.approx([0.0, 0.275, 0.45, 0.625, 1.0])
    assert [b.count for b in reliability_bins(c, np.ones(8), edges)] == [2, 2, 2, 2]
    tied = np.asarray([0.5] * 6 + [0.9] * 2)
    edges = bin_edges(tied, 4, "mass")  # quantiles 0.5, 0.5, 0.6: two edges merge
    assert edges == pytest.approx([0.0, 0.5, 0.6, 1.0])
    assert [b.count for b in reliability_bins(tied, np.ones(8), edges)] == [0, 6, 2]


def test_wilson_interval_is_the_textbook_formula() -> None:
    for k, n, level in [(0, 5, 0.95), (1, 6, 0.99), (7, 7, 0.9), (4, 7, 0.95)]:
        z = stats.norm.ppf(1 - (1 - level) / 2)
        p = k / n
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
        assert wilson_interval(k, n, level) == pytest.approx((centre - half, centre + half))


def test_bin_intervals_are_bonferroni_simultaneous() -> None:
    r = calibrate(C, Y)  # three non-empty bins
    assert r.bin_level == pytest.approx(1 - 0.05 / 3)
    b = r.bins[3]
    assert (b.ci_low, b.ci_high) == pytest.approx(wilson_interval(1, 2, 1 - 0.05 / 3))


def _simulate(n: int, f, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    c = rng.random(n)
    y = (rng.random(n) < f(c)).astype(float)
    return c, y


N = 20_000


def test_simulated_overconfidence_gives_the_ece_it_implies() -> None:
    """y ~ Bernoulli(c^2). In every bin E[c] > E[c^2] (the smallest gap, in [0, 0.1), is
    0.05 - 0.1^2/3 = 0.047, far beyond a bin's sampling noise of at most sqrt(0.25 / 2000)
    = 0.011), so no bin's |gap| folds and ECE = mean(c) - mean(y): its population value is
    the integral of c - c^2 over [0, 1] = 1/6, whatever the binning. One draw of c - y has
    variance E[(c - y)^2] - (1/6)^2 = (1/3 - 2/4 + 1/3) - 1/36 = 5/36, so the sample ECE has
    standard deviation sqrt(5/36 / N); the tolerance is four of those."""
    c, y = _simulate(N, lambda x: x**2, seed=1)
    r = calibrate(c, y, boot=BootstrapSettings(resamples=0))
    assert r.ece == pytest.approx(1 / 6, abs=4 * math.sqrt(5 / 36 / N))
    assert r.verdict == OVER
    assert all(b.direction == "over" for b in r.bins if b.mean_confidence > 0.2)


def test_simulated_underconfidence_gives_the_ece_it_implies() -> None:
    """y ~ Bernoulli(sqrt(c)): ECE = integral of sqrt(c) - c = 2/3 - 1/2 = 1/6; one draw of
    y - c has E[(y - c)^2] = E[sqrt c] - 2 E[c^1.5] + E[c^2] = 2/3 - 4/5 + 1/3 = 1/5, so
    variance 1/5 - 1/36 = 31/180."""
    c, y = _simulate(N, np.sqrt, seed=2)
    r = calibrate(c, y, boot=BootstrapSettings(resamples=0))
    assert r.ece == pytest.approx(1 / 6, abs=4 * math.sqrt(31 / 180 / N))
    assert r.verdict == UNDER


def test_a_calibrated_simulation_has_an_ece_near_zero_and_is_called_well_calibrated() -> None:
    """y ~ Bernoulli(c): the population ECE is 0, and the sample ECE is the mean of folded
    noise: E|acc_b - conf_b| <= sqrt(0.25 / n_b), so E[ECE] <= sum_b (n_b / N) sqrt(0.25 / n_b)
    <= 0.5 sqrt(B / N) by Cauchy-Schwarz; twice that bound is the tolerance."""
    c, y = _simulate(N, lambda x: x, seed=3)
    r = calibrate(c, y, boot=BootstrapSettings(resamples=0))
    assert 0 <= r.ece <= 2 * 0.5 * math.sqrt(10 / N)
    assert r.verdict == WELL


def test_a_calibrated_score_is_rarely_called_miscalibrated() -> None:
    """The bins' intervals are simultaneous at 95 %, so over 40 calibrated simulations at most
    about 2 should be flagged (P(6 or more | p = 0.05, n = 40) < 0.05)."""
    flagged = 0
    for seed in range(40):
        c, y = _simulate(500, lambda x: x, seed=100 + seed)
        flagged += calibrate(c, y, boot=BootstrapSettings(resamples=0)).verdict != WELL
    assert flagged <= 5


def test_both_directions_make_a_mixed_verdict() -> None:
    c = [0.9] * 30 + [0.1] * 30
    y = [1] * 3 + [0] * 27 + [1] * 27 + [0] * 3  # 0.1 observed at 0.9; 0.9 observed at 0.1
    r = calibrate(c, y)
    assert r.verdict == "mixed"
    assert [b.direction for b in r.bins if b.count] == ["under", "over"]


def test_few_queries_carry_the_noise_caveat() -> None:
    assert any("ECE on fewer than about 30" in x for x in calibrate(C, Y).caveats)
    c, y = _simulate(30, lambda x: x, seed=4)
    assert not any("ECE on fewer" in x for x in calibrate(c, y).caveats)
