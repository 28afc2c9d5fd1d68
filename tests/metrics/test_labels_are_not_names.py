"""A report label (``metrics.labels``) is a display name, never a metric's identity: ADK's
``Recall@1`` labels ``Hit@1`` and parses as ``R@1``. Wherever a metric is named (the
report criterion, ``compare --metrics``, ``Result.metric``), a label is refused with the
canonical name to write instead, by one rule (``metrics.refuse_label``), the gates' too."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import evalframe
from evalframe.assess.compare import compare_runs
from evalframe.assess.runfolder import RunData
from evalframe.core.errors import ConfigError
from evalframe.metrics import parse_metric
from evalframe.pipeline.config import validate_experiment
from evalframe.pipeline.run import run_experiment
from tests.conftest import Project, raw_config

LABELS = {"RR": "MRR", "R@5": "Recall@1"}  # the second on purpose: it parses as R@1


def _refused(err: pytest.ExceptionInfo[ConfigError], who: str, key: str) -> None:
    assert err.value.message == (
        "'Recall@1' is the report label of R@5 (metrics.labels), not a metric's name"
    )
    assert err.value.key == key
    assert err.value.hint == f"{who} takes metrics by their canonical string: R@5"


def test_the_report_criterion(project: Project) -> None:
    metrics = {"measures": ["R@5", "R@1", "RR"], "labels": LABELS}
    config = raw_config(project, metrics=metrics, report={"criterion": "Recall@1"})
    with pytest.raises(ConfigError) as err:
        validate_experiment(config)
    _refused(err, "report.criterion", "report.criterion")


def test_a_gates_metric(project: Project) -> None:
    metrics = {"measures": ["R@5", "R@1", "RR"], "labels": LABELS}
    gate = {"type": "threshold", "metric": "Recall@1", "op": ">=", "value": 0.5}
    with pytest.raises(ConfigError) as err:
        validate_experiment(raw_config(project, metrics=metrics, gates={"low": gate}))
    _refused(err, "gate 'low'", "gates.low.metric")
    # a label that reads as its own metric names it rightly (B.O.B's MRR for RR): the gate
    # judges RR, as report.criterion and compare --metrics take it
    mrr = {**gate, "metric": "MRR"}
    exp = validate_experiment(raw_config(project, metrics=metrics, gates={"mrr": mrr}))
    result = run_experiment(exp, progress=False)
    (judged,) = result.gates
    assert judged.value == result.evaluation.overall[parse_metric("RR")].mean


def test_compare_metrics() -> None:
    run = RunData(
        name="a",
        path=Path("a"),
        query_ids=("q1", "q2"),
        values={"R@5": {"q1": 1.0, "q2": 0.0}, "R@1": {"q1": 0.0, "q2": 0.0}},
        slices={},
        retrieved={},
        expected={},
        golden_hash="h",
        policies={},
        labels=LABELS,
    )
    with pytest.raises(ConfigError) as err:
        compare_runs(run, dataclasses.replace(run, name="b"), metrics=["Recall@1"])
    _refused(err, "--metrics", "metrics[0]")
    # the canonical names still compare, and a label of no metric is no concern of this
    assert compare_runs(run, dataclasses.replace(run, name="b"), metrics=["R@1"]).n == 2


def test_result_metric(project: Project) -> None:
    metrics = {"measures": ["R@5", "R@1", "RR"], "labels": LABELS}
    run_experiment(validate_experiment(raw_config(project, metrics=metrics)), progress=False)
    result = evalframe.load(project.root / "out")
    with pytest.raises(ConfigError) as err:
        result.metric("Recall@1")
    _refused(err, "result.metric()", "name")
    assert result.metric("MRR") == result.metric("RR")  # an alias is a name: MRR is RR
