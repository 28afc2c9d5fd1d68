"""``metrics.labels``: a display name in the report and summary.json, never an identity."""

from __future__ import annotations

import io
import json
import re

import pytest

from evalframe.core.errors import ConfigError
from evalframe.pipeline.config import validate_experiment
from evalframe.pipeline.run import run_experiment
from evalframe.report.terminal import TerminalReport
from tests.conftest import Project, raw_config

MEASURES = ["Hit@1", "R@5", "RR"]


def metrics(**section: object) -> dict[str, object]:
    return {"measures": MEASURES, **section}


def test_the_report_and_summary_show_the_label_and_files_keep_the_metric(
    project: Project,
) -> None:
    gates = {"adk": {"type": "threshold", "metric": "Hit@1", "op": ">", "value": 0.6}}
    raw = raw_config(
        project, metrics=metrics(labels={"Success@1": "Recall@1", "RR": "MRR"}), gates=gates
    )
    exp = validate_experiment(raw)
    assert exp.labels == {"Hit@1": "Recall@1", "RR": "MRR"}  # keys in canonical form
    stream = io.StringIO()
    result = run_experiment(exp, reporters=[TerminalReport(stream)], progress=False)
    text = stream.getvalue()
    assert re.search(r"^  Recall@1 +\d\.\d{3} \(±", text, re.M)
    assert re.search(r"^  MRR +\d\.\d{3} \(±", text, re.M)
    assert re.search(r"^  R@5 +\d\.\d{3} \(±", text, re.M)  # unlabelled: its own name
    assert "labels (metrics.labels): Recall@1 is Hit@1, MRR is RR;" in text
    assert "By difficulty:" in text and re.search(r"difficulty +queries +Recall@1 +R@5 +MRR", text)
    assert re.search(r"✓ 1: Recall@1=1\.000 R@5=1\.000 MRR=1\.000", text)
    assert "✓ adk: Hit@1 = " in text  # a gate speaks of the metric itself

    out = project.root / "out"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["labels"] == {"Hit@1": "Recall@1", "RR": "MRR"}
    assert summary["metrics"] == MEASURES and set(summary["overall"]) == set(MEASURES)
    flat = json.loads((out / "metrics.json").read_text())
    assert "Hit@1" in flat and "Recall@1" not in flat
    per_query = (out / "per_query.jsonl").read_text()
    assert '"Hit@1"' in per_query and "Recall@1" not in per_query
    assert result.gates[0].message.startswith("Hit@1 = ")


def test_without_labels_nothing_changes(project: Project) -> None:
    exp = validate_experiment(raw_config(project))
    stream = io.StringIO()
    run_experiment(exp, reporters=[TerminalReport(stream)], progress=False)
    assert "metrics.labels" not in stream.getvalue()
    assert json.loads((project.root / "out" / "summary.json").read_text())["labels"] == {}


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        ({"Hit@5": "Recall@5"}, "label key 'Hit@5' is not among metrics.measures (Hit@1, R@5, RR)"),
        ({"nDGC@5": "x"}, "label key 'nDGC@5' is not a metric"),
        ({"Hit@1": "Top1", "RR": "Top1"}, "two metrics are labelled 'Top1'"),
        ({"Hit@1": "A", "Success@1": "B"}, "'Success@1' and another key both name Hit@1"),
        ({"Hit@1": "R@5"}, "'Hit@1' is labelled 'R@5', the name of another metric"),
        ({"Hit@1": " "}, "the label of 'Hit@1' must be one line of text"),
    ],
)
def test_a_bad_label_is_a_config_error_naming_metrics_labels(
    project: Project, labels: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigError) as err:
        validate_experiment(raw_config(project, metrics=metrics(labels=labels)))
    assert "metrics.labels" in str(err.value)
    assert message in str(err.value)


def test_a_label_naming_its_own_metric_is_allowed(project: Project) -> None:
    exp = validate_experiment(raw_config(project, metrics=metrics(labels={"RR": "RR"})))
    assert exp.labels == {"RR": "RR"}


def test_a_gate_naming_a_label_is_told_the_canonical_name(project: Project) -> None:
    gates = {"adk": {"type": "threshold", "metric": "Recall@1", "value": 0.6}}
    raw = raw_config(project, metrics=metrics(labels={"Hit@1": "Recall@1"}), gates=gates)
    with pytest.raises(ConfigError, match="report label of Hit@1") as err:
        validate_experiment(raw)
    assert err.value.key == "gates.adk.metric"
    assert err.value.hint == "gate 'adk' takes metrics by their canonical string: Hit@1"


def test_the_page_and_summary_md_use_the_labels_wherever_they_name_a_metric(
    project: Project,
) -> None:
    """ADK's page had Recall@1 in its headline table but Hit@1 in its query table, its
    slice bars and its status line, and summary.md had no labels at all."""
    from evalframe.report.page import RunPage

    raw = raw_config(
        project,
        metrics=metrics(labels={"Hit@1": "Recall@1", "RR": "MRR"}),
        report={"html": True},
    )
    run_experiment(validate_experiment(raw), reporters=[RunPage()], progress=False)
    out = project.root / "out"
    page = (out / "report.html").read_text()
    table = page[page.index('id="queries"') :]
    head = table[: table.index("</thead>")]
    assert ">Recall@1</button>" in head and ">MRR</button>" in head
    assert ">R@5</button>" in head  # unlabelled: its own name
    assert ">Hit@1</button>" not in head and ">RR</button>" not in head
    assert "Status from MRR (<code>RR</code>)" in page
    assert "Per-slice means of Recall@1 (<code>Hit@1</code>)" in page
    summary = (out / "summary.md").read_text()
    assert "| Recall@1 (Hit@1) |" in summary and "| MRR (RR) |" in summary
    assert "| R@5 |" in summary
    assert "drift view" not in summary  # no baseline, so no drift view to point to


@pytest.mark.slow
def test_the_hinted_override_sets_a_label_on_a_pack_that_has_none(project: Project) -> None:
    """docs/metrics.md's form, as the error for `metrics.labels.Hit@5=Top5` gives it: the
    default pack has no `labels:` mapping, where `metrics.labels={Hit@5: Top5}` was refused."""
    refused = project.run(*project.data_args(), "metrics.labels.Hit@5=Top5", "hydra.run.dir=out")
    assert refused.code == 2
    hint = refused.stderr.split("keeps the others: ")[1].strip()
    assert hint == "'++metrics.labels={Hit@5: Top5}'"
    res = project.run(*project.data_args(), "++metrics.labels={Hit@5: Top5}", "hydra.run.dir=out")
    assert res.code in (0, 1), res.stderr
    assert json.loads((project.root / "out" / "summary.json").read_text())["labels"] == {
        "Hit@5": "Top5"
    }
