"""The Galaxy exporters: the evaluator's JSON keyed by k, and its predictions JSONL.

The exporters only re-shape what the run computed; the numbers themselves are
checked against Galaxy's formulas in tests/experiments/test_galaxy_experiment.py.
Here the values are written by hand.
"""

from __future__ import annotations

import json
import math

import pytest
from evalframe_formats.galaxy_export import (
    GalaxyEvalExport,
    GalaxyEvalExportConfig,
    GalaxyPredictionsExport,
    GalaxyPredictionsExportConfig,
)
from pydantic import ValidationError

from evalframe.core.types import GoldenQuery, GoldenSet, Ranking, Run
from evalframe.plugin.protocols import ExportInput, PluginContext
from evalframe.plugin.testing import ExporterContract

NAN = math.nan
GOLDEN = GoldenSet.build(
    "g",
    [
        GoldenQuery(id="q1", text="", judgments={"a": 1}),
        GoldenQuery(id="q2", text="", judgments={"b": 1}),
        GoldenQuery(id="q3", text="", judgments={"c": 1}),
    ],
)
# q1: a first; q2: b second; q3 has no predictions (left out under missing_query: skip)
RUN = Run(
    rankings={
        "q2": Ranking.from_pairs("q2", [("x", 2.0), ("b", 1.0)]),
        "q1": Ranking.from_pairs("q1", [("a", 1.0)]),
        "extra": Ranking.from_pairs("extra", [("z", 1.0)]),
    }
)


def per_query(k: int) -> dict[str, dict[str, float]]:
    q2_ndcg = (1 / math.log2(3)) if k >= 2 else 0.0
    return {
        "q1": {f"Hit@{k}": 1.0, f"RR@{k}": 1.0, f"nDCG@{k}": 1.0},
        "q2": {f"Hit@{k}": float(k >= 2), f"RR@{k}": 0.5 if k >= 2 else 0.0, f"nDCG@{k}": q2_ndcg},
        "q3": {f"Hit@{k}": NAN, f"RR@{k}": NAN, f"nDCG@{k}": NAN},
    }


def export_input(ks: tuple[int, ...] = (1, 3)) -> ExportInput:
    rows: dict[str, dict[str, float]] = {"q1": {}, "q2": {}, "q3": {}}
    for k in ks:
        for qid, values in per_query(k).items():
            rows[qid].update(values)
    means = {m: (rows["q1"][m] + rows["q2"][m]) / 2 for m in rows["q1"]}
    return ExportInput("galaxy", GOLDEN, RUN, 10, rows, means)


class TestGalaxyEvalContract(ExporterContract):
    plugin_name = "galaxy"

    @pytest.fixture
    def exporter(self) -> GalaxyEvalExport:
        return GalaxyEvalExport(GalaxyEvalExportConfig(ks=[1, 3]), PluginContext())

    @pytest.fixture
    def export_input(self) -> ExportInput:
        return export_input()


class TestGalaxyPredictionsContract(ExporterContract):
    plugin_name = "galaxy_predictions"

    @pytest.fixture
    def exporter(self) -> GalaxyPredictionsExport:
        return GalaxyPredictionsExport(GalaxyPredictionsExportConfig(), PluginContext())

    @pytest.fixture
    def export_input(self) -> ExportInput:
        return export_input()


def test_the_evaluators_shape_keyed_by_k_in_its_order_with_the_count() -> None:
    exporter = GalaxyEvalExport(GalaxyEvalExportConfig(ks=[3, 1]), PluginContext())
    assert exporter.required_metrics() == ["Hit@3", "RR@3", "nDCG@3", "Hit@1", "RR@1", "nDCG@1"]
    text = exporter.export(export_input((1, 3)))["galaxy_eval.json"]
    data = json.loads(text)
    assert list(data) == ["3", "1", "count"]  # the order --k gave, then the count
    assert data["3"] == {"hit": 1.0, "mrr": (1 + 1 / 2) / 2, "ndcg": (1 + 1 / math.log2(3)) / 2}
    assert data["1"] == {"hit": 0.5, "mrr": 0.5, "ndcg": 0.5}
    assert data["count"] == {"queries": 2}  # q3 has no predictions: not counted, as in Galaxy
    assert text == json.dumps(data, indent=2) + "\n"  # printed as the evaluator prints it


def test_nothing_to_average_gives_zeros_and_no_count_as_galaxy_does() -> None:
    empty = {q: {"Hit@1": NAN, "RR@1": NAN, "nDCG@1": NAN} for q in ("q1", "q2")}
    means = {"Hit@1": NAN, "RR@1": NAN, "nDCG@1": NAN}
    view = ExportInput("galaxy", GOLDEN, Run(rankings={}), 10, empty, means)
    exporter = GalaxyEvalExport(GalaxyEvalExportConfig(ks=[1], file="eval.json"), PluginContext())
    assert json.loads(exporter.export(view)["eval.json"]) == {
        "1": {"hit": 0.0, "mrr": 0.0, "ndcg": 0.0}
    }


@pytest.mark.parametrize(("ks", "message"), [([0, 1], "at least 1"), ([1, 1], "each k once")])
def test_bad_cutoffs_are_config_errors(ks: list[int], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        GalaxyEvalExportConfig(ks=ks)


def test_predictions_in_golden_order_missing_ones_left_out() -> None:
    exporter = GalaxyPredictionsExport(GalaxyPredictionsExportConfig(), PluginContext())
    lines = exporter.export(export_input())["galaxy_predictions.jsonl"].splitlines()
    assert [json.loads(line) for line in lines] == [
        {"id": "q1", "predictions": ["a"]},
        {"id": "q2", "predictions": ["x", "b"]},
        {"id": "extra", "predictions": ["z"]},
    ]
