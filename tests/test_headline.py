"""``metrics.headline``: the few metrics trackers log and tables show by default.

The default is a policy written down in docs/metrics.md: the gated metrics,
plus nDCG@10, R@10 and RR where computed, filled up to three from
``metrics.measures``, listed in the order of ``metrics.measures``.
"""

from __future__ import annotations

import io
import json
import math

import pytest

from evalframe.core.errors import ConfigError
from evalframe.pipeline.config import validate_experiment
from evalframe.pipeline.run import run_experiment
from evalframe.report.terminal import TerminalReport
from tests.conftest import Project, raw_config

MEASURES = ["R@5", "P@5", "RR", "RR@10", "nDCG@10", "AP", "Hit@5"]


def headline(project: Project, **overrides: object) -> list[str]:
    exp = validate_experiment(raw_config(project, **overrides))
    return [str(m) for m in exp.headline]


def test_default_is_the_gated_metrics_plus_the_short_list_in_measures_order(
    project: Project,
) -> None:
    gates = {
        "floor": {"type": "threshold", "metric": "Hit@5", "value": 0.1},
        "easy": {"type": "threshold", "metric": "AP", "value": 0.1, "slice": {"difficulty": "e"}},
    }
    got = headline(project, metrics={"measures": MEASURES}, gates=gates)
    # gated: Hit@5, AP; short list: nDCG@10 and RR (R@10 is not computed)
    assert got == ["RR", "nDCG@10", "AP", "Hit@5"]


def test_default_without_gates_or_short_list_metrics_takes_the_first_three(
    project: Project,
) -> None:
    got = headline(
        project, metrics={"measures": ["P@5", "AP", "Hit@5", "P@1"]}, report={"criterion": "AP"}
    )
    assert got == ["P@5", "AP", "Hit@5"]


def test_default_fills_up_to_three_from_measures(project: Project) -> None:
    got = headline(project, metrics={"measures": ["P@5", "AP", "RR", "Hit@5"]})
    assert got == ["P@5", "AP", "RR"]  # RR from the short list, then the first two measures


def test_an_explicit_headline_is_kept_in_its_own_order(project: Project) -> None:
    got = headline(project, metrics={"measures": MEASURES, "headline": ["AP", "MRR"]})
    assert got == ["AP", "RR"]  # MRR is RR's alias: the canonical string


def test_a_headline_metric_that_is_not_computed_names_its_key(project: Project) -> None:
    with pytest.raises(ConfigError, match="'R@100' is not computed") as err:
        headline(project, metrics={"measures": MEASURES, "headline": ["RR", "R@100"]})
    assert err.value.key == "metrics.headline[1]"
    assert "R@5" in (err.value.expected or "")


def test_an_unreadable_headline_metric_names_its_key(project: Project) -> None:
    with pytest.raises(ConfigError) as err:
        headline(project, metrics={"measures": MEASURES, "headline": ["nDCG@x"]})
    assert err.value.key == "metrics.headline[0]"


def test_headline_json_holds_the_headline_means_and_bounds(project: Project) -> None:
    exp = validate_experiment(raw_config(project, metrics={"measures": MEASURES}))
    result = run_experiment(exp, reporters=[TerminalReport(io.StringIO())], progress=False)
    out = project.root / "out"
    written = json.loads((out / "headline.json").read_text())
    # the headline: RR and nDCG@10 from the short list, R@5 (the first measure) to make three
    assert list(written) == [
        "queries",
        *(f"{m}{s}" for m in ("R@5", "RR", "nDCG@10") for s in ("", ".ci_low", ".ci_high")),
        "gates.passed",
        "gates.failed",
        "gates.advisory_missed",
    ]
    assert written["queries"] == 4
    per_query = [json.loads(line) for line in (out / "per_query.jsonl").read_text().splitlines()]
    for name in ("R@5", "RR", "nDCG@10"):
        values = [r["metrics"][name] for r in per_query if r["expected"]]  # negatives skipped
        assert written[name] == pytest.approx(sum(values) / len(values))
        agg = result.evaluation.overall[next(m for m in exp.headline if str(m) == name)]
        assert (written[f"{name}.ci_low"], written[f"{name}.ci_high"]) == (agg.ci_low, agg.ci_high)
        assert written[f"{name}.ci_low"] <= written[name] <= written[f"{name}.ci_high"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["headline"] == ["R@5", "RR", "nDCG@10"]
    full = json.loads((out / "metrics.json").read_text())
    assert {f"{m}.std" for m in MEASURES} <= set(full)  # the full table stays in metrics.json
    slice_keys = [k for k in full if k.startswith("slice.difficulty.easy.")]
    assert {f"slice.difficulty.easy.AP{s}" for s in ("", ".n", ".ci_low", ".ci_high")} <= set(
        slice_keys
    )
    assert not math.isnan(full["slice.difficulty.easy.AP"])
