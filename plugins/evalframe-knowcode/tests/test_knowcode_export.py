"""exports: {knowcode: {}} writes KnowCode's evaluate.py JSON (reference §3, JSON Output Schema)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from evalframe_knowcode.dataset import KnowCodeConfig, KnowCodeDataset
from evalframe_knowcode.export import KnowCodeExportConfig, KnowCodeExporter, knowcode_output

from evalframe.core.io import read_trec_run
from evalframe.core.types import GoldenSet, Ranking, Run
from evalframe.metrics import Policies, evaluate, parse_metrics
from evalframe.plugin.protocols import ExportInput, PluginContext
from evalframe.plugin.testing import ExporterContract

DATA = Path(__file__).parent / "data"
MD = "src/knowcode/parsers/markdown_parser.py"
METRICS = ["P@1", "P@5", "R@10", "RR"]


def golden() -> GoldenSet:
    config = KnowCodeConfig(path=str(DATA / "golden_v1.0.json"), source_root=str(DATA))
    return KnowCodeDataset(config, PluginContext()).load()


def export_input(run: Run) -> ExportInput:
    g = golden()
    scores = evaluate(parse_metrics(METRICS), g, run, Policies(ties="given"))
    per_query = scores.per_query()
    means = {m: float(sum(v[m] for v in per_query.values()) / len(per_query)) for m in METRICS}
    return ExportInput("knowcode", g, run, 10, per_query, means)


class TestKnowCodeExporterContract(ExporterContract):
    plugin_name = "knowcode"

    @pytest.fixture
    def exporter(self) -> KnowCodeExporter:
        return KnowCodeExporter(KnowCodeExportConfig(), PluginContext())

    @pytest.fixture
    def export_input(self) -> ExportInput:
        return export_input(read_trec_run(DATA / "system.run"))


def test_the_output_has_knowcodes_shape_and_numbers() -> None:
    """Values worked by hand from tests/data/system.run (see the data README)."""
    body = knowcode_output(export_input(read_trec_run(DATA / "system.run")))
    assert list(body) == [
        "queries",
        "precision_at_1",
        "precision_at_5",
        "recall_at_10",
        "mrr",
        "results",
    ]
    assert body["queries"] == 4
    assert body["precision_at_1"] == (1 + 0 + 0 + 1) / 4
    # relevant in the top 5: q1 two (ranks 1, 3), q2 one, q3 one, q4 one; P@5 divides by 5
    assert body["precision_at_5"] == pytest.approx((2 + 1 + 1 + 1) / 5 / 4)
    assert body["recall_at_10"] == pytest.approx((2 / 2 + 1 / 1 + 1 / 2 + 1 / 1) / 4)
    assert body["mrr"] == (1 + 1 / 2 + 1 / 2 + 1) / 4
    q1 = body["results"][0]
    assert q1 == {
        "query_id": "q1",
        "mrr": 1.0,
        "precision_at_1": 1.0,
        "expected_entities": [f"{MD}::MarkdownParser.parse_file", f"{MD}::MarkdownParser"],
        "top_5": [
            f"{MD}::MarkdownParser.parse_file",
            f"{MD}::MarkdownParser.parse_text",
            f"{MD}::MarkdownParser",
        ],
    }
    assert [r["query_id"] for r in body["results"]] == ["q1", "q2", "q3", "q4"]
    assert [r["mrr"] for r in body["results"]] == [1.0, 0.5, 0.5, 1.0]


def test_top_5_follows_the_given_tie_rule_and_missing_values_are_null() -> None:
    ties = {
        "q1": Ranking.from_pairs("q1", [(f"e{i}", s) for i, s in enumerate([1, 3, 3, 2, 3, 0, 5])]),
    }
    view = export_input(read_trec_run(DATA / "system.run"))
    view = ExportInput(
        view.experiment,
        view.golden,
        Run(rankings={**view.run.rankings, **ties}),
        view.depth,
        {**view.per_query, "q2": {**view.per_query["q2"], "RR": math.nan}},
        {**view.means, "P@5": math.nan},
    )
    body = knowcode_output(view)
    # score descending; the three 3s keep the order they were returned in
    assert body["results"][0]["top_5"] == ["e6", "e1", "e2", "e4", "e3"]
    assert body["results"][1]["mrr"] is None and body["precision_at_5"] is None
    text = KnowCodeExporter(KnowCodeExportConfig(top_k=2), PluginContext()).export(view)
    assert json.loads(text["knowcode_evaluation.json"])["results"][0]["top_2"] == ["e6", "e1"]


@pytest.mark.slow
def test_a_run_writes_it_beside_its_own_files(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "evalframe",
            "dataset=knowcode",
            f"dataset.path={DATA / 'golden_v1.0.json'}",
            f"dataset.source_root={DATA}",
            "corpus=none",
            "metrics=knowcode",
            "retriever=run_file",
            f"retriever.path={DATA / 'system.run'}",
            "+exports.knowcode={}",
            f"hydra.run.dir={out}",
        ],
        cwd=tmp_path,
        env={**os.environ, "EVALFRAME_CACHE_DIR": str(tmp_path / "cache")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    body = json.loads((out / "knowcode_evaluation.json").read_text(encoding="utf-8"))
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert body["mrr"] == metrics["RR"] and body["precision_at_1"] == metrics["P@1"]
    assert body["results"][3]["top_5"] == ["src/knowcode/config.py::AppConfig"]
