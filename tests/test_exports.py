"""Exporters: a finished run written in another tool's format, beside the run's own files.

A scoped exporter stands in for a plugin's (Galaxy's, KnowCode's); the rules
tested are the pipeline's: what the exporter sees, where its files land, that
its metrics are checked before retrieval, and that a bad export leaves nothing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from pydantic import Field

from evalframe.core.errors import ConfigError, PluginError
from evalframe.pipeline.config import validate_experiment
from evalframe.pipeline.run import run_experiment
from evalframe.plugin.protocols import ExportInput, PluginConfig, PluginContext
from evalframe.plugin.registry import EXPORTERS, Registry
from evalframe.plugin.testing import ExporterContract
from tests.conftest import Project, raw_config


class MeansConfig(PluginConfig):
    metric: str = Field("RR", description="the metric whose per-query values are exported")
    file: str = "means.json"


class MeansExporter:
    """Writes one metric's per-query values and mean (a test exporter)."""

    seen: ExportInput | None = None

    def __init__(self, config: MeansConfig, context: PluginContext) -> None:
        self.config = config

    def required_metrics(self) -> list[str]:
        return [self.config.metric]

    def export(self, run: ExportInput) -> Mapping[str, str | bytes]:
        MeansExporter.seen = run
        m = self.config.metric
        values = {qid: v[m] for qid, v in run.per_query.items()}
        body = {"mean": run.means[m], "per_query": values, "order": list(run.run.rankings)}
        return {self.config.file: json.dumps(body, allow_nan=True)}


@pytest.fixture
def exporters() -> Iterator[Registry[Any]]:
    with EXPORTERS.scoped() as reg:
        reg.add("means", MeansExporter, MeansConfig)
        yield reg


def test_an_export_is_written_into_the_run_folder_and_listed(
    project: Project, exporters: Registry[Any]
) -> None:
    exp = validate_experiment(raw_config(project, exports={"means": None}))
    result = run_experiment(exp, progress=False)

    path = project.root / "out" / "means.json"
    assert result.outputs["export/means.json"] == path
    body = json.loads(path.read_text())
    per_query = {
        json.loads(line)["query_id"]: json.loads(line)["metrics"]["RR"]
        for line in (project.root / "out" / "per_query.jsonl").read_text().splitlines()
    }
    # the export holds exactly what the run's own files hold: per-query values and their mean
    for qid, value in per_query.items():
        if value is None:  # the negative example is left out of RR (no_relevant: skip)
            assert math.isnan(body["per_query"][qid])
        else:
            assert body["per_query"][qid] == pytest.approx(value)
    judged = [v for v in per_query.values() if v is not None]
    assert body["mean"] == pytest.approx(sum(judged) / len(judged))
    seen = MeansExporter.seen
    assert seen is not None and seen.experiment == "unit" and seen.depth == 5
    assert len(seen.golden) == 4


def test_settings_are_validated_and_name_their_key(
    project: Project, exporters: Registry[Any]
) -> None:
    with pytest.raises(ConfigError) as err:
        validate_experiment(raw_config(project, exports={"means": {"metrik": "RR"}}))
    assert err.value.key == "exports.means.metrik"


def test_an_unknown_exporter_lists_the_installed_ones(
    project: Project, exporters: Registry[Any]
) -> None:
    with pytest.raises(PluginError) as err:
        validate_experiment(raw_config(project, exports={"meens": None}))
    assert err.value.key == "exports.meens"
    assert "means" in str(err.value)


def test_a_metric_the_export_needs_is_checked_before_retrieval(
    project: Project, exporters: Registry[Any]
) -> None:
    with pytest.raises(ConfigError) as err:
        validate_experiment(raw_config(project, exports={"means": {"metric": "Hit@3"}}))
    assert err.value.key == "exports.means"
    assert "Hit@3" in str(err.value) and "metrics.measures" in str(err.value)


def test_every_metric_an_export_lacks_is_named_at_once(project: Project) -> None:
    """Galaxy's export reads Hit, RR and nDCG at each k: with two of twelve computed, the
    error named one metric and the next run the next one (ten rounds)."""
    metrics = {"measures": ["Hit@1", "RR@10"]}
    exports = {"galaxy": {"ks": [1, 10]}}
    with pytest.raises(ConfigError) as err:
        validate_experiment(
            raw_config(project, metrics=metrics, exports=exports, report={"criterion": "RR@10"})
        )
    assert err.value.key == "exports.galaxy"
    assert err.value.message == (
        "export 'galaxy' needs metrics 'RR@1', 'nDCG@1', 'Hit@10', 'nDCG@10', which are not "
        "computed"
    )
    assert "'metrics.measures=[Hit@1, RR@10, RR@1, nDCG@1, Hit@10, nDCG@10]'" in str(err.value.hint)


@pytest.mark.parametrize(
    "name",
    ["summary.json", "../escape.json", "sub/dir.json", ".hidden"],
    ids=["run-folder-file", "parent", "folder", "dot-file"],
)
def test_an_export_may_not_take_a_run_folder_name_or_leave_the_folder(
    project: Project, exporters: Registry[Any], name: str
) -> None:
    exp = validate_experiment(raw_config(project, exports={"means": {"file": name}}))
    with pytest.raises(PluginError) as err:
        run_experiment(exp, progress=False)
    assert "means" in str(err.value) and repr(name) in str(err.value)
    assert not (project.root / "escape.json").exists()
    assert not (project.root / "out" / "sub").exists()


def test_an_export_applies_to_a_rescored_run_too(
    project: Project, exporters: Registry[Any]
) -> None:
    """rescore goes through the same scoring step, so an export added there is written."""
    from evalframe.app.commands import rescore_main

    run_experiment(validate_experiment(raw_config(project)), progress=False)
    assert not (project.root / "out" / "means.json").exists()
    again = project.root / "again"
    assert rescore_main([str(project.root / "out"), "exports.means={}", "--out", str(again)]) == 0
    exported = json.loads((again / "means.json").read_text())
    assert exported["per_query"].keys() == {"1", "2", "3", "4"}


class TestMeansExporterContract(ExporterContract):
    """The shipped contract suite, on the test exporter (kept honest by a plugin of our own)."""

    plugin_name = "means"

    @pytest.fixture(autouse=True)
    def _registered(self, exporters: Registry[Any]) -> None:
        pass

    def test_discovered_through_its_entry_point(self) -> None:
        """A scoped test exporter has no entry point: it is found by its registration."""
        assert EXPORTERS.get(self.plugin_name).obj is MeansExporter

    @pytest.fixture
    def exporter(self) -> MeansExporter:
        return MeansExporter(MeansConfig(), PluginContext())

    @pytest.fixture
    def export_input(self) -> ExportInput:
        from evalframe.core.types import GoldenQuery, GoldenSet, Ranking, Run

        golden = GoldenSet.build("g", [GoldenQuery(id="q1", text="t", judgments={"a": 1})])
        run = Run(rankings={"q1": Ranking(query_id="q1", doc_ids=["a"], scores=[1.0])})
        return ExportInput("x", golden, run, 5, {"q1": {"RR": 1.0}}, {"RR": 1.0})
