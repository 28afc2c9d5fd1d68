"""compare's verdicts and intervals agree, and the report says which correction decided.

Before (#13 item 5) the printed interval was an uncorrected 95% bootstrap CI
while the verdict was a Holm-adjusted randomization test over every metric and
slice: an interval could exclude 0 beside "within noise".
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np

from evalframe.assess.compare import compare_many, compare_runs
from evalframe.assess.compare_text import render_comparison
from evalframe.assess.runfolder import RunData
from evalframe.assess.stats import adjust_pvalues, randomization_test

N = 60
RNG = np.random.default_rng(20)
BASE = RNG.random((3, N)).round(2)
# a small, real improvement on every metric: significant alone, not after Holm over 24 tests
CAND = np.clip(BASE + RNG.normal(0.06, 0.15, (3, N)), 0, 1).round(2)
METRICS = ("R@5", "P@5", "RR")
SLICES = {f"q{i}": {"domain": f"d{i % 7}"} for i in range(N)}  # 7 values: 3 x (1 + 7) = 24


def _run(name: str, values: np.ndarray) -> RunData:
    ids = tuple(f"q{i}" for i in range(N))
    return RunData(
        name=name,
        path=Path(name),
        query_ids=ids,
        values={
            m: dict(zip(ids, map(float, row), strict=True))
            for m, row in zip(METRICS, values, strict=True)
        },
        slices=SLICES,
        retrieved={},
        expected={},
        golden_hash="h",
        policies={},
    )


def test_every_interval_excludes_zero_exactly_when_its_verdict_is_not_noise() -> None:
    comp = compare_runs(_run("a", BASE), _run("b", CAND), correction="holm", alpha=0.05)
    assert comp.family == 24
    raw = [mc.overall.p_randomization for mc in comp.metrics]
    assert min(raw) < 0.05  # uncorrected, at least one metric would be called
    seen = 0
    for mc in comp.metrics:
        verdicts = [(comp.verdict(mc), mc.interval)]
        for fname, groups in mc.by_slice.items():
            for value, c in groups.items():
                p = mc.p_adjusted_slices[fname][value]
                called = not math.isnan(p) and p < comp.alpha and c.delta != 0
                verdicts.append(
                    ("called" if called else "within noise", mc.interval_slices[fname][value])
                )
        for verdict, interval in verdicts:
            excludes = not interval.low <= 0.0 <= interval.high
            assert excludes == (verdict != "within noise")
            seen += 1
    assert seen == 24


def test_the_printed_lines_agree_and_name_the_correction() -> None:
    comp = compare_runs(_run("a", BASE), _run("b", CAND), correction="holm", alpha=0.05)
    text = render_comparison(comp)
    assert "Holm-adjusted over 24 tests" in text
    line = re.compile(
        r"\[([+-](?:\d\.\d+|inf)), ([+-](?:\d\.\d+|inf))\] at [\d.]+%"
        r".*(within noise|improved|regressed)"
    )
    matched = 0
    for row in text.splitlines():
        m = line.search(row)
        if m:
            low, high, verdict = float(m[1]), float(m[2]), m[3]
            # printed to 3 decimals: a bound that rounds to 0 counts as touching it
            excludes = low > 0.0005 or high < -0.0005
            assert not excludes or verdict != "within noise", row
            matched += 1
    assert matched >= 3 + 7  # the metrics, and the lead metric's slices


def test_the_interval_level_is_the_level_holm_applied() -> None:
    comp = compare_runs(_run("a", BASE), _run("b", CAND), correction="holm", alpha=0.05)
    for mc in comp.metrics:
        p = mc.overall.p_randomization
        assert mc.interval.level == 1 - 0.05 * p / mc.p_adjusted


def test_one_test_needs_no_correction_and_uses_the_plain_level() -> None:
    one = _run("b", CAND)
    comp = compare_runs(
        _run("a", BASE), RunData(**{**one.__dict__, "slices": {}}), metrics=["RR"], alpha=0.05
    )
    assert comp.family == 1
    assert comp.metrics[0].interval.level == 0.95
    assert "one test (no correction needed)" in render_comparison(comp)
    p = randomization_test(BASE[2], CAND[2])
    assert comp.metrics[0].p_adjusted == adjust_pvalues([p])[0] == p


def test_a_table_of_runs_carries_the_same_kind_of_interval() -> None:
    table = compare_many(_run("a", BASE), [_run("b", CAND), _run("c", BASE)], metrics=["RR"])
    assert table["family"] == 2
    for cells in table["runs"].values():
        cell = cells["RR"]
        excludes = not cell["interval_low"] <= 0.0 <= cell["interval_high"]
        assert excludes == (cell["verdict"] != "within noise")


def test_an_unbounded_interval_is_explained_where_it_is_printed() -> None:
    """Three queries per slice: 2 / 2^3 = 0.25, so no shift is rejected at 95%."""
    ids = ("q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7")
    slices = {q: {"domain": "small" if i < 3 else "big"} for i, q in enumerate(ids)}

    def run(name: str, values: list[float]) -> RunData:
        return RunData(
            name=name,
            path=Path(name),
            query_ids=ids,
            values={"RR": dict(zip(ids, values, strict=True))},
            slices=slices,
            retrieved={},
            expected={},
            golden_hash="h",
            policies={},
        )

    comp = compare_runs(run("a", [0.5] * 8), run("b", [1.0] * 8), alpha=0.05)
    small = comp.metrics[0].interval_slices["domain"]["small"]
    assert (small.low, small.high) == (-math.inf, math.inf)
    for markdown in (False, True):
        text = render_comparison(comp, markdown=markdown)
        assert "[-inf, +inf]" in text
        assert "too few paired queries" in text and "2 / 2^n" in text
    # and not said where every interval is finite (60 queries, no slices)
    plain = [
        RunData(**{**_run(n, v).__dict__, "slices": {}}) for n, v in (("a", BASE), ("b", CAND))
    ]
    finite = compare_runs(*plain, alpha=0.05)
    assert all(math.isfinite(mc.interval.low + mc.interval.high) for mc in finite.metrics)
    assert "too few paired queries" not in render_comparison(finite)


def test_a_long_metric_name_wraps_and_leaves_numbers_and_verdicts_whole() -> None:
    """At 100 columns a long name folds onto a second line; nothing else is cut with …."""
    long_name = "P(rel=2)@10 strict"  # a label as long as teams write them
    a, b = _run("a", BASE), _run("b", CAND)
    for run in (a, b):
        run.values[long_name] = run.values.pop("R@5")
    comp = compare_runs(a, b, correction="holm", alpha=0.05)
    text = render_comparison(comp, width=100)
    table = text[text.index("   metric ") :].split("\n\n")[0]
    assert "…" not in table
    for mc in comp.metrics:
        o = mc.overall
        cells = (f"{o.mean_a:.3f}", f"{o.mean_b:.3f}", f"{o.delta:+.3f}", comp.verdict(mc))
        assert any(all(c in row for c in cells) for row in table.splitlines()), mc.metric
    assert max(len(row) for row in table.splitlines()) <= 100


def test_a_long_labels_line_wraps_under_its_own_text() -> None:
    """KnowCode's labels run past 100 columns: the rest of the line started at column 0
    (``R(view=files)@5`` alone under the table), as the run's report never does."""
    comp = compare_runs(_run("a", BASE), _run("b", CAND), correction="holm", alpha=0.05)
    comp.labels = {
        "R@5": "file coverage@5 (every expected file)",
        "P@5": "precision@5 of the whole list",
        "RR": "MRR over the first expected entity",
    }
    text = render_comparison(comp, width=100)
    start = text.index("  labels (metrics.labels): ")
    block = text[start:].split("\n")
    assert len(block[0]) <= 100 and block[1].startswith("      ") and block[1].strip()
    assert "RR" in " ".join(line.strip() for line in block[:3])
