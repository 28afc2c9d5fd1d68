"""`evalframe golden stats`: slices, judgments per query, negatives and labels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalframe.app.golden_cli import main
from evalframe.core.types import GoldenQuery, GoldenSet
from evalframe.golden.stats import compute_stats
from tests.golden.golden_helpers import BOB_DATA, KNOWCODE_DATA


def test_compute_stats_counts_slices_judgments_and_labels() -> None:
    golden = GoldenSet.build(
        "g",
        [
            GoldenQuery(
                id="1", text="a", judgments={"x": 2, "y": 0}, metadata={"difficulty": "easy"}
            ),
            GoldenQuery(id="2", text="b", judgments={"x": 1}, metadata={"difficulty": "hard"}),
            GoldenQuery(id="3", text="c", metadata={"difficulty": "easy"}),
        ],
    )
    stats = compute_stats(golden)
    assert stats["queries"] == 3 and stats["negatives"] == 1
    assert stats["slices"] == {
        "difficulty": {
            "easy": {"queries": 2, "negatives": 1},
            "hard": {"queries": 1, "negatives": 0},
        }
    }
    assert stats["judgments_per_query"] == {"min": 0, "mean": 1.0, "max": 2}
    assert stats["relevant_per_query"] == {"min": 0, "mean": 0.667, "max": 1}
    assert stats["labels"] == {"0": 1, "1": 1, "2": 1}


def test_stats_of_the_bob_sample_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stats", str(BOB_DATA / "bob_gold.jsonl"), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["queries"] == 4 and stats["negatives"] == 1
    assert stats["slices"]["difficulty"]["easy"] == {"queries": 2, "negatives": 0}
    assert set(stats["slices"]["category"]) == {"installation", "configuration", "api", "usage"}
    assert stats["judgments_per_query"] == {"min": 0, "mean": 1.5, "max": 3}


def test_stats_of_knowcode_show_task_types_and_the_files_view(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["stats", str(KNOWCODE_DATA / "golden_v1.0.json")]) == 0
    out = capsys.readouterr().out
    assert "queries: 4   negative examples: 0" in out
    assert "files (view) per query" in out
    assert "task_type" in out and "locate" in out and "explain" in out


def test_stats_of_a_folder_counts_domains(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stats", str(BOB_DATA / "domains"), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["slices"]["domain"] == {
        "recipes": {"queries": 2, "negatives": 1},
        "taxes": {"queries": 1, "negatives": 0},
    }


def test_stats_of_a_broken_file_is_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "g.json"
    path.write_text('[{"query_id": "q1"}]')
    assert main(["stats", str(path)]) == 2
    assert f"error: {path}:1: record has no" in capsys.readouterr().err
