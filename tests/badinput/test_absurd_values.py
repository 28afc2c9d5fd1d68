"""Absurd values in data files (#16): refused where they are read, with file:line.

A relevance label beyond a C int (what trec_eval reads) is a typo or a score
in the wrong column; before, it overflowed deep in the metric engine after
retrieval had run. A NaN score has no rank. Both stop at load with exit 2.
Infinite scores order fine and are kept.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalframe.app import cli
from evalframe.core.errors import DataError
from evalframe.core.records import LABEL_MAX
from evalframe.pipeline.config import validate_experiment
from evalframe.pipeline.run import run_experiment
from tests.conftest import Project, raw_config


def trec_eval(capsys: pytest.CaptureFixture[str], qrels: Path, run: Path) -> tuple[int, str]:
    code = cli.main(["trec-eval", "-m", "map", "-m", "ndcg", str(qrels), str(run)])
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    return code, out.out + out.err


@pytest.mark.parametrize("label", [str(10**30), str(LABEL_MAX + 1), "-2147483649", "1e30"], ids=str)
def test_a_label_beyond_the_label_range_is_located(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], label: str
) -> None:
    qrels = tmp_path / "qrels"
    qrels.write_text(f"q1 0 a 1\nq1 0 b {label}\n")
    run = tmp_path / "run"
    run.write_text("q1 Q0 a 1 0.9 t\nq1 Q0 b 2 0.5 t\n")
    code, text = trec_eval(capsys, qrels, run)
    assert code == 2
    assert f"{qrels}:2: the relevance column is outside the label range" in text


def test_the_largest_label_is_still_a_label(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    qrels = tmp_path / "qrels"
    qrels.write_text(f"q1 0 a {LABEL_MAX}\n")
    run = tmp_path / "run"
    run.write_text("q1 Q0 a 1 0.9 t\n")
    code, text = trec_eval(capsys, qrels, run)
    assert code == 0, text
    assert "map                   \tall\t1.0000" in text


def test_a_nan_score_is_located_and_infinite_scores_are_ranked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    qrels = tmp_path / "qrels"
    qrels.write_text("q1 0 a 1\nq1 0 b 0\n")
    nan = tmp_path / "nan.run"
    nan.write_text("q1 Q0 b 1 0.5 t\nq1 Q0 a 2 NaN t\n")
    code, text = trec_eval(capsys, qrels, nan)
    assert code == 2 and f"{nan}:2: the score column is NaN" in text
    inf = tmp_path / "inf.run"
    inf.write_text("q1 Q0 b 1 -inf t\nq1 Q0 a 2 inf t\n")
    code, text = trec_eval(capsys, qrels, inf)
    assert code == 0
    assert "map                   \tall\t1.0000" in text  # a (inf) ranks above b (-inf)


def test_a_graded_label_beyond_the_range_stops_a_run_at_its_line(project: Project) -> None:
    golden = project.root / "graded.jsonl"
    records = [
        {"id": 1, "question": "install with pip?", "expected_chunks": {"install": 2}},
        {"id": 2, "question": "gate exit code?", "expected_chunks": {"gates": 10**30}},
    ]
    golden.write_text("".join(json.dumps(r) + "\n" for r in records))
    exp = validate_experiment(raw_config(project, dataset={"name": "jsonl", "path": str(golden)}))
    with pytest.raises(DataError) as err:
        run_experiment(exp, progress=False)
    assert f"{golden}:2" in str(err.value) and "label range" in str(err.value)
    assert not (project.root / "out" / "summary.json").exists()
