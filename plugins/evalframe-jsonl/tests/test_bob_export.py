"""The B.O.B exporter: the run's R@k, P@k and RR as B.O.B's own results file.

The exporter only re-shapes what the run computed; that the numbers are B.O.B's
is checked against the reference's formulas (and B.O.B's own file for the
same run) in tests/experiments/test_bob_experiment.py. Here values are by hand.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from evalframe_jsonl.bob_export import BobResultsExport, BobResultsExportConfig

from evalframe.assess.bob_results import read_bob_results
from evalframe.core.types import GoldenQuery, GoldenSet, Ranking, Run
from evalframe.plugin.protocols import ExportInput, PluginContext
from evalframe.plugin.testing import ExporterContract

NAN = math.nan
GOLDEN = GoldenSet.build(
    "g",
    [
        GoldenQuery(id="1001", text="", judgments={"a": 1, "b": 1}),
        GoldenQuery(id="1002", text="", judgments={}),  # a negative example
        GoldenQuery(id="q3", text="", judgments={"c": 1}),
        GoldenQuery(id="1004", text="", judgments={"d": 1}),  # no ranking: not in per_query
    ],
)
RUN = Run(rankings={"1001": Ranking.from_pairs("1001", [("x", 2.0), ("a", 1.0)])})
ROWS = {
    # a second of two expected documents: recall 1/2, precision 1/5, reciprocal rank 1/2
    "1001": {"R@5": 0.5, "P@5": 0.2, "RR": 0.5},
    # B.O.B's convention for a negative example: recall 1.0, precision and mrr 0
    "1002": {"R@5": 1.0, "P@5": 0.0, "RR": 0.0},
    "q3": {"R@5": NAN, "P@5": NAN, "RR": NAN},  # left out by a policy
}


def export_input() -> ExportInput:
    return ExportInput("bob", GOLDEN, RUN, 5, ROWS, {})


class TestBobResultsContract(ExporterContract):
    plugin_name = "bob"

    @pytest.fixture
    def exporter(self) -> BobResultsExport:
        return BobResultsExport(BobResultsExportConfig(), PluginContext())

    @pytest.fixture
    def export_input(self) -> ExportInput:
        return export_input()


def test_b_o_bs_shape_with_the_means_of_the_listed_queries(tmp_path: Path) -> None:
    exporter = BobResultsExport(BobResultsExportConfig(), PluginContext())
    assert exporter.required_metrics() == ["R@5", "P@5", "RR"]
    text = exporter.export(export_input())["bob_results.json"]
    data = json.loads(text)
    assert data == {
        "k": 5,
        # which set and which retriever, as B.O.B's baseline.json says beside its numbers
        # (no retriever in the run's metadata: the experiment's name)
        "golden": f"g@{GOLDEN.content_hash}",
        "retriever": "bob",
        "recall_mean": (0.5 + 1.0) / 2,
        "precision_mean": (0.2 + 0.0) / 2,
        "mrr_mean": (0.5 + 0.0) / 2,
        "per_query": [  # golden order; digit ids as numbers, as B.O.B writes them
            {"id": 1001, "recall": 0.5, "precision": 0.2, "mrr": 0.5},
            {"id": 1002, "recall": 1.0, "precision": 0.0, "mrr": 0.0},
        ],
    }
    assert "date" not in data  # the same run, the same bytes
    # evalframe reads it back as a baseline, with the same values
    path = tmp_path / "bob_results.json"
    path.write_text(text)
    back = read_bob_results(path)
    assert back.values["R@5"] == {"1001": 0.5, "1002": 1.0}
    assert back.values["RR"] == {"1001": 0.5, "1002": 0.0}


def test_another_k_names_other_metrics_and_file() -> None:
    exporter = BobResultsExport(BobResultsExportConfig(k=10, file="baseline.json"), PluginContext())
    assert exporter.required_metrics() == ["R@10", "P@10", "RR"]
    rows = {"1001": {"R@10": 1.0, "P@10": 0.2, "RR": 0.5}}
    out = exporter.export(ExportInput("bob", GOLDEN, RUN, 10, rows, {}))
    assert json.loads(out["baseline.json"])["k"] == 10
