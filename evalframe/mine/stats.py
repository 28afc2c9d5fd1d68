"""How far to trust a mined label: the exact test, the interval for Δp, and the trial budget.

The miner's design is a randomised experiment. In every trial each candidate
document enters the context independently with probability ``p``; the outcome
is pass or fail. For one document the trials split into those with it
(``n_in`` trials, ``s_in`` passes) and those without it (``n_out``, ``s_out``),
and ``Δp = s_in/n_in − s_out/n_out``.

* **Test.** Under the null hypothesis that the document changes nothing, the
  outcomes are fixed and the document's inclusions are a random draw that the
  miner made itself. Given how many trials included it, every set of that size
  was equally likely, so the passes among them follow the hypergeometric law:
  Fisher's exact test, one-sided (H1: success is more likely *with* the
  document), is then the exact randomisation test of this design. It holds
  whatever the other documents do (their draws are independent of this one's)
  and never rejects more often than the nominal level (it is conservative,
  because the count is discrete).
* **Interval.** Newcombe's hybrid score interval for a difference of two
  proportions (his method 10): Wilson intervals for each rate, combined. It
  keeps close to its nominal coverage at the small counts mining produces,
  where the Wald interval does not.
* **Budget.** The normal approximation to the test with a continuity
  correction (which tracks Fisher's test closely) gives the probability that a
  document with a true effect ``effect`` is found relevant after ``N`` trials,
  and from it the trials needed for a wanted power.

The verdict (:func:`verdict`) is *relevant* when the adjusted p-value is at most
α and the estimated Δp exceeds the threshold; *not relevant* when the whole
interval lies below the threshold; *inconclusive* otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

from evalframe.assess.stats import adjust_pvalues

__all__ = [
    "Budget",
    "DocStats",
    "Verdict",
    "doc_stats",
    "fisher_greater",
    "judge_pool",
    "min_detectable_effect",
    "newcombe_interval",
    "plan_budget",
    "power",
    "required_trials",
    "verdict",
    "wilson_interval",
]

Verdict = Literal["relevant", "not_relevant", "inconclusive"]
Correction = Literal["holm", "bh", "none"]

#: No budget is searched beyond this many trials: past it, say "unreachable".
MAX_TRIALS = 1_000_000
_NORMAL = NormalDist()


def _log_comb(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def fisher_greater(s_in: int, n_in: int, s_out: int, n_out: int) -> float:
    """One-sided Fisher exact p-value: P(at least ``s_in`` passes among the ``n_in`` with it).

    Hypergeometric tail over the 2×2 table (with/without × pass/fail) with
    its margins fixed. No trial on one side means no evidence: p = 1.
    """
    if n_in <= 0 or n_out <= 0:
        return 1.0
    total, passes = n_in + n_out, s_in + s_out
    low, high = max(0, passes - n_out), min(passes, n_in)
    if s_in <= low:
        return 1.0
    denominator = _log_comb(total, n_in)
    logs = [
        _log_comb(passes, x) + _log_comb(total - passes, n_in - x) - denominator
        for x in range(s_in, high + 1)
    ]
    top = max(logs)
    return min(1.0, math.exp(top) * sum(math.exp(v - top) for v in logs))


def _z(confidence: float) -> float:
    """The two-sided normal quantile for ``confidence`` (1.96 for 0.95)."""
    return _NORMAL.inv_cdf(1.0 - (1.0 - confidence) / 2.0)


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson's score interval for a binomial proportion; (0, 1) when n = 0."""
    if n <= 0:
        return 0.0, 1.0
    z = _z(confidence)
    phat = successes / n
    centre = phat + z * z / (2 * n)
    spread = z * math.sqrt(phat * (1 - phat) / n + z * z / (4 * n * n))
    scale = 1 + z * z / n
    return max(0.0, (centre - spread) / scale), min(1.0, (centre + spread) / scale)


def newcombe_interval(
    s_in: int, n_in: int, s_out: int, n_out: int, confidence: float = 0.95
) -> tuple[float, float]:
    """Newcombe's hybrid score interval (method 10) for ``s_in/n_in − s_out/n_out``."""
    if n_in <= 0 or n_out <= 0:
        return -1.0, 1.0
    p1, p0 = s_in / n_in, s_out / n_out
    l1, u1 = wilson_interval(s_in, n_in, confidence)
    l0, u0 = wilson_interval(s_out, n_out, confidence)
    d = p1 - p0
    low = d - math.sqrt((p1 - l1) ** 2 + (u0 - p0) ** 2)
    high = d + math.sqrt((u1 - p1) ** 2 + (p0 - l0) ** 2)
    return max(-1.0, low), min(1.0, high)


@dataclass(frozen=True)
class DocStats:
    """One candidate's counts, estimate, interval, p-values and verdict."""

    n_in: int
    s_in: int
    n_out: int
    s_out: int
    delta_p: float  # NaN when one side has no trial
    ci: tuple[float, float]
    p_value: float  # one-sided Fisher, before the correction
    p_adjusted: float  # after the correction across the pair's candidates
    verdict: Verdict

    @property
    def rate_in(self) -> float:
        return self.s_in / self.n_in if self.n_in else math.nan

    @property
    def rate_out(self) -> float:
        return self.s_out / self.n_out if self.n_out else math.nan


def verdict(
    delta_p: float, ci_high: float, p_adjusted: float, *, threshold: float, alpha: float
) -> Verdict:
    """relevant: significant and Δp above the threshold; not relevant: the CI is below it."""
    if math.isnan(delta_p):
        return "inconclusive"
    if p_adjusted <= alpha and delta_p > threshold:
        return "relevant"
    if ci_high < threshold:
        return "not_relevant"
    return "inconclusive"


def doc_stats(
    counts: Sequence[tuple[int, int, int, int]],
    *,
    threshold: float,
    confidence: float,
    correction: Correction = "holm",
) -> list[DocStats]:
    """Stats and verdicts for the candidates of one pair, ``(n_in, s_in, n_out, s_out)`` each.

    The p-values are corrected across the pair's candidates (Holm: the chance
    of any false "relevant" in the pair stays at most α; BH: the expected
    share of false ones among the pair's "relevant" does).
    """
    alpha = 1.0 - confidence
    raw = [fisher_greater(s_in, n_in, s_out, n_out) for n_in, s_in, n_out, s_out in counts]
    adjusted = raw if correction == "none" else adjust_pvalues(raw, correction)
    out = []
    for (n_in, s_in, n_out, s_out), p, p_adj in zip(counts, raw, adjusted, strict=True):
        delta = s_in / n_in - s_out / n_out if n_in and n_out else math.nan
        ci = newcombe_interval(s_in, n_in, s_out, n_out, confidence)
        out.append(
            DocStats(
                n_in=n_in,
                s_in=s_in,
                n_out=n_out,
                s_out=s_out,
                delta_p=delta,
                ci=ci,
                p_value=p,
                p_adjusted=p_adj,
                verdict=verdict(delta, ci[1], p_adj, threshold=threshold, alpha=alpha),
            )
        )
    return out


def judge_pool(
    counts: Sequence[tuple[int, int, int, int]],
    *,
    threshold: float,
    confidence: float,
    correction: Correction = "holm",
) -> list[Verdict]:
    """Only the verdicts of :func:`doc_stats` (re-judging a dataset at another threshold)."""
    stats = doc_stats(counts, threshold=threshold, confidence=confidence, correction=correction)
    return [s.verdict for s in stats]


# -- the budget ---------------------------------------------------------------


def power(
    trials: int,
    *,
    effect: float,
    base_rate: float,
    p_include: float,
    threshold: float,
    alpha: float,
) -> float:
    """Approximate chance that a document with true Δp = ``effect`` is found relevant.

    The estimate must clear both the threshold and the test's critical value
    ``z₁₋α·SE₀ + ½(1/n_in + 1/n_out)`` (pooled standard error under the null,
    with a continuity correction that tracks Fisher's exact test); it is
    normal around ``effect`` with the unpooled standard error. The arms take
    their expected sizes ``p·N`` and ``(1−p)·N``.
    """
    n_in, n_out = p_include * trials, (1.0 - p_include) * trials
    if n_in < 1 or n_out < 1:
        return 0.0
    p0 = min(max(base_rate, 0.0), 1.0)
    p1 = min(max(base_rate + effect, 0.0), 1.0)
    pooled = p_include * p1 + (1 - p_include) * p0
    se0 = math.sqrt(max(pooled * (1 - pooled), 1e-12) * (1 / n_in + 1 / n_out))
    se1 = math.sqrt(max(p1 * (1 - p1) / n_in + p0 * (1 - p0) / n_out, 1e-12))
    critical = _NORMAL.inv_cdf(1.0 - alpha) * se0 + 0.5 * (1 / n_in + 1 / n_out)
    return _NORMAL.cdf((effect - max(critical, threshold)) / se1)


def _base_rates(effect: float, base_rate: float | None) -> list[float]:
    """The base rate given, or a grid over every possible one (plan for the worst)."""
    if base_rate is not None:
        return [base_rate]
    top = max(0.0, 1.0 - effect)
    return [top * i / 40 for i in range(41)]


def required_trials(
    *,
    effect: float,
    target_power: float,
    p_include: float,
    threshold: float,
    alpha: float,
    base_rate: float | None = None,
) -> int | None:
    """Fewest trials whose :func:`power` reaches ``target_power``; None if none can.

    With ``base_rate`` None the worst base rate is assumed. An effect at or
    below the threshold is never found with power above one half (half the
    estimates fall below it), so for it the answer is None.
    """
    if effect <= threshold and target_power >= 0.5:
        return None

    def enough(n: int) -> bool:
        return all(
            power(
                n, effect=effect, base_rate=b, p_include=p_include, threshold=threshold, alpha=alpha
            )
            >= target_power
            for b in _base_rates(effect, base_rate)
        )

    high = 4
    while not enough(high):
        high *= 2
        if high > MAX_TRIALS:
            return None
    low = high // 2
    while low + 1 < high:  # enough(high) holds, enough(low) may not
        mid = (low + high) // 2
        if enough(mid):
            high = mid
        else:
            low = mid
    return high


def min_detectable_effect(
    trials: int,
    *,
    target_power: float,
    p_include: float,
    threshold: float,
    alpha: float,
    base_rate: float | None = None,
) -> float | None:
    """Smallest true Δp found relevant with ``target_power`` after ``trials``; None if none."""

    def enough(effect: float) -> bool:
        return all(
            power(
                trials,
                effect=effect,
                base_rate=b,
                p_include=p_include,
                threshold=threshold,
                alpha=alpha,
            )
            >= target_power
            for b in _base_rates(effect, base_rate)
        )

    high = 1.0 - (base_rate or 0.0)
    if not enough(high):
        return None
    low = threshold
    for _ in range(40):
        mid = (low + high) / 2
        if enough(mid):
            high = mid
        else:
            low = mid
    return high


@dataclass(frozen=True)
class Budget:
    """What the configured trials can and cannot show, said before they run and kept after."""

    trials: int
    effect: float
    power: float
    alpha: float
    alpha_per_test: float
    candidates: int
    p_include: float
    threshold: float
    base_rate: float | None
    required: int | None
    detectable: float | None

    def as_dict(self) -> dict[str, object]:
        """Floats rounded for reading (α = 1 − 0.95 is 0.050000000000000044 in binary)."""
        return {k: round(v, 6) if isinstance(v, float) else v for k, v in self.__dict__.items()}

    def lines(self) -> list[str]:
        """The budget in words, for the terminal and the docs' examples."""
        base = "any base rate" if self.base_rate is None else f"base rate {self.base_rate:g}"
        per = (
            f"α={self.alpha:g}"
            if self.alpha_per_test == self.alpha
            else f"α={self.alpha:g} split over {self.candidates} candidates "
            f"(≤ {self.alpha_per_test:.2g} per test)"
        )
        need = (
            f"{self.required} trials per task"
            if self.required is not None
            else f"more than {MAX_TRIALS} trials (unreachable)"
        )
        out = [
            f"budget: finding Δp = {self.effect:g} with {self.power:.0%} power at {per}, "
            f"p={self.p_include:g}, threshold {self.threshold:g}, {base}, needs {need}",
        ]
        if self.detectable is None:
            got = "no effect is found that reliably"
        else:
            got = f"the smallest Δp found with {self.power:.0%} power is {self.detectable:.2f}"
        verdict_note = (
            ""
            if self.required is None or self.trials >= self.required
            else "; weaker effects will mostly come out inconclusive, not 'not relevant'"
        )
        out.append(f"        this run: {self.trials} trials per task: {got}{verdict_note}")
        return out


def plan_budget(
    *,
    trials: int,
    candidates: int,
    effect: float,
    target_power: float,
    confidence: float,
    p_include: float,
    threshold: float,
    correction: Correction,
    base_rate: float | None,
) -> Budget:
    """The :class:`Budget` of a run: the per-test α is Bonferroni's α/m under a correction.

    Holm and BH are never stricter than Bonferroni for the smallest p-value,
    so planning at α/m never promises more power than the run has.
    """
    alpha = 1.0 - confidence
    per_test = alpha if correction == "none" else alpha / max(1, candidates)
    return Budget(
        trials=trials,
        effect=effect,
        power=target_power,
        alpha=alpha,
        alpha_per_test=per_test,
        candidates=candidates,
        p_include=p_include,
        threshold=threshold,
        base_rate=base_rate,
        required=required_trials(
            effect=effect,
            target_power=target_power,
            p_include=p_include,
            threshold=threshold,
            alpha=per_test,
            base_rate=base_rate,
        ),
        detectable=min_detectable_effect(
            trials,
            target_power=target_power,
            p_include=p_include,
            threshold=threshold,
            alpha=per_test,
            base_rate=base_rate,
        ),
    )
