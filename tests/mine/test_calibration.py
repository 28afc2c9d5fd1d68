"""On the simulated solver, over many seeds: false positives stay at or below α, and planted
documents are recovered at the rate the budget's power formula predicts.

The truth is known: the solver succeeds with probability 0.2 + 0.4·[doc0 in context] +
0.25·[doc1 in context], so doc0's Δp is 0.4, doc1's 0.25 and the 8 distractors' exactly 0.
Each seed is an independent replication of the whole experiment (its own pool of
distractors, draws and coins). The seeds are fixed, so the test cannot flake.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evalframe.mine.engine import mine
from evalframe.mine.stats import doc_stats, power
from tests.mine.mine_helpers import BASE, PLANTED, mining_config, write_project

SEEDS = 200
TRIALS = 120
ALPHA = 0.05


@pytest.fixture(scope="module")
def replications(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, tuple[int, ...]]]:
    """Per seed: doc -> (n_in, s_in, n_out, s_out), from the real miner."""
    root = write_project(Path(tmp_path_factory.mktemp("calibration")))
    out = []
    for seed in range(SEEDS):
        result = mine(mining_config(root, seed=seed, **{"trials.n": TRIALS}))
        stats = result.pairs[0].stats
        out.append({d: (s.n_in, s.s_in, s.n_out, s.s_out) for d, s in stats.items()})
    return out


def _verdicts(rep: dict[str, tuple[int, ...]], **kw: Any) -> dict[str, str]:
    docs = list(rep)
    stats = doc_stats([rep[d] for d in docs], confidence=1 - ALPHA, **kw)  # type: ignore[misc]
    return {d: s.verdict for d, s in zip(docs, stats, strict=True)}


def _false_positive_rates(reps: list[dict[str, tuple[int, ...]]], **kw: Any) -> np.ndarray:
    """Per replication: the share of null documents called relevant."""
    rates = []
    for rep in reps:
        verdicts = _verdicts(rep, **kw)
        nulls = [d for d in rep if d not in PLANTED]
        rates.append(sum(verdicts[d] == "relevant" for d in nulls) / len(nulls))
    return np.array(rates)


@pytest.mark.slow
def test_the_raw_test_keeps_false_positives_at_or_below_alpha(replications: Any) -> None:
    """The bare test (threshold 0, no correction) is where calibration shows: rate ≤ α."""
    rates = _false_positive_rates(replications, threshold=0.0, correction="none")
    assert rates.mean() <= ALPHA, rates.mean()
    # and it is not vacuous: the test does reject nulls now and then (Fisher is conservative,
    # not dead)
    assert rates.mean() > ALPHA / 4


@pytest.mark.slow
@pytest.mark.parametrize("correction", ["holm", "bh", "none"])
def test_default_verdicts_keep_false_positives_below_alpha(
    replications: Any, correction: str
) -> None:
    rates = _false_positive_rates(replications, threshold=0.1, correction=correction)
    assert rates.mean() <= ALPHA
    if correction == "holm":  # family-wise: any false "relevant" in a pair at most α
        assert (rates > 0).mean() <= ALPHA


@pytest.mark.slow
@pytest.mark.parametrize(("doc", "lift", "other"), [("doc0", 0.4, 0.25), ("doc1", 0.25, 0.4)])
@pytest.mark.parametrize(("correction", "alpha"), [("none", ALPHA), ("holm", ALPHA / 10)])
def test_planted_documents_are_recovered_at_the_predicted_rate(
    replications: Any, doc: str, lift: float, other: float, correction: str, alpha: float
) -> None:
    """Empirical recovery within 3 standard errors (+0.05 for the approximation) of the power.

    Without doc, the success rate averages over the other planted document's draw:
    base + p·lift_other. Under Holm the budget plans at α/m (m = 10 candidates).
    """
    found = np.mean(
        [
            _verdicts(r, threshold=0.1, correction=correction)[doc] == "relevant"
            for r in replications
        ]
    )
    predicted = power(
        TRIALS,
        effect=lift,
        base_rate=BASE + 0.5 * other,
        p_include=0.5,
        threshold=0.1,
        alpha=alpha,
    )
    se = math.sqrt(max(predicted * (1 - predicted), 0.01) / SEEDS)
    assert abs(found - predicted) <= 3 * se + 0.05, (found, predicted)


@pytest.mark.slow
def test_delta_p_estimates_are_unbiased(replications: Any) -> None:
    for doc, lift in [*PLANTED.items(), ("doc5", 0.0)]:
        estimates = [
            r[doc][1] / r[doc][0] - r[doc][3] / r[doc][2] for r in replications if doc in r
        ]
        sd = float(np.std(estimates, ddof=1))
        assert abs(np.mean(estimates) - lift) <= 4 * sd / math.sqrt(len(estimates))
