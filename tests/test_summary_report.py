"""`evalframe report`: the overview of several runs, its curves and its offline HTML."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from evalframe.app.cli import main
from evalframe.pipeline.config import validate_experiment
from evalframe.pipeline.run import run_experiment
from evalframe.report.summary import curves
from evalframe.report.terminal import TerminalReport
from tests.conftest import Project, raw_config


def test_curves_by_hand() -> None:
    per_query = [
        {"judgments": {"a": 1, "b": 2}, "retrieved": ["b", "x", "a"]},
        {"judgments": {"c": 1}, "retrieved": ["x", "c"]},
        {"judgments": {}, "retrieved": ["a"]},  # negative example: left out
        {"judgments": {"d": 0}, "retrieved": ["d"]},  # judged, not relevant: left out
    ]
    got = curves(per_query, 3)
    assert got["recall"] == pytest.approx([(0.5 + 0) / 2, (0.5 + 1) / 2, (1 + 1) / 2])
    ideal_1 = 2 + 1 / 1.5849625007211563  # labels 2, 1 at ranks 1, 2
    ndcg_q1_at3 = (2 + 1 / 2) / ideal_1  # b (2) at rank 1, a (1) at rank 3
    assert got["ndcg"][0] == pytest.approx((1.0 + 0.0) / 2)
    assert got["ndcg"][2] == pytest.approx((ndcg_q1_at3 + 1 / 1.5849625007211563) / 2)
    assert curves([{"judgments": {}, "retrieved": []}], 2) == {
        "recall": [None, None],
        "ndcg": [None, None],
    }


def run(project: Project, name: str) -> Path:
    out = project.root / name
    cfg = raw_config(
        project,
        experiment=name,
        output={"dir": str(out), "cache_dir": str(project.root / "cache")},
        gates={"floor": {"type": "threshold", "metric": "R@5", "op": ">=", "value": 0.5}},
    )
    run_experiment(
        validate_experiment(cfg), reporters=[TerminalReport(io.StringIO())], progress=False
    )
    return out


def test_report_writes_markdown_html_and_plot_files(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = run(project, "alpha"), run(project, "beta")
    out = project.root / "report"
    assert main(["report", str(a), str(b), "--out", str(out)]) == 0
    assert "report.html" in capsys.readouterr().out

    with open(out / "recall_at_k.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["k"] for r in rows] == ["1", "2", "3", "4", "5"]  # the runs' depth
    assert set(rows[0]) == {"k", "alpha", "beta"}
    assert float(rows[-1]["alpha"]) == pytest.approx(
        json.loads((a / "metrics.json").read_text())["R@5"]
    )
    with open(out / "slices.csv") as handle:
        slices = list(csv.DictReader(handle))
    assert {"alpha difficulty=easy", "beta difficulty=hard"} <= {s["slice"] for s in slices}

    markdown = (out / "report.md").read_text()
    assert "| alpha | golden" in markdown and "passed" in markdown
    page = (out / "report.html").read_text()
    assert page.startswith("<!doctype html>") and "<svg" in page
    # self-contained: opens offline, nothing loaded from anywhere
    assert "<script" not in page and "src=" not in page and "<link" not in page


def test_a_folder_that_is_not_a_run_is_a_one_paragraph_error(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(project.root), "--out", str(project.root / "r")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "metrics" in err and "Traceback" not in err
