"""`evalframe golden create`, driven through stdin with a tiny corpus and BM25."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from evalframe.app.golden_cli import main
from evalframe.golden.create import next_free_id, parse_selection
from tests.golden.golden_helpers import read_jsonl, write_jsonl

CORPUS = [
    {"id": "1", "text": "Install the tool with pip install inside a virtual environment."},
    {"id": "2", "text": "A failed required gate makes the run exit with code 1."},
    {"id": "3", "text": "The BM25 index is cached on disk under the corpus hash."},
    {"id": "slices", "text": "Slices group queries by difficulty or category."},
]


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "corpus.jsonl", CORPUS)


def create(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, golden: Path, corpus: Path, answers: str
) -> int:
    monkeypatch.setattr("sys.stdin", io.StringIO(answers))
    return main(
        [
            "create",
            str(golden),
            "--corpus",
            str(corpus),
            "--k",
            "3",
            "--cache-dir",
            str(tmp_path / "c"),
        ]
    )


def test_a_session_appends_bob_records(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    corpus: Path,
) -> None:
    golden = tmp_path / "gold.jsonl"
    answers = "\n".join(
        [
            "How do I install the tool with pip?",
            "1",  # the top passage
            "easy",
            "installation",
            "README install section",
            "",  # accept the proposed id
            "Can it sync to my phone?",
            "n",  # negative example
            "medium",
            "",
            "",
            "",
            "",  # empty question ends the session
        ]
    )
    assert create(monkeypatch, tmp_path, golden, corpus, answers + "\n") == 0
    out = capsys.readouterr().out
    assert "1. [1] Install the tool with pip install" in out
    assert "saved 2 question(s)" in out
    assert read_jsonl(golden) == [
        {
            "id": 1,
            "question": "How do I install the tool with pip?",
            "expected_chunks": [1],
            "difficulty": "easy",
            "category": "installation",
            "notes": "README install section",
        },
        {
            "id": 2,
            "question": "Can it sync to my phone?",
            "expected_chunks": [],
            "difficulty": "medium",
            "notes": "Negative example",
        },
    ]
    # the result loads with the B.O.B plugin
    assert main(["stats", str(golden), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["negatives"] == 1


def test_bad_answers_are_asked_again_and_duplicate_ids_refused(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    corpus: Path,
) -> None:
    golden = write_jsonl(
        tmp_path / "gold.jsonl",
        [{"id": "q1", "question": "Old?", "expected_chunks": ["3"]}],
    )
    answers = "\n".join(
        [
            "Which exit code does a failed gate give?",
            "",  # nothing chosen: asked again
            "7, nosuch",  # not shown, not an id: asked again
            "2 slices",  # a number and an id
            "extreme",  # not a difficulty: asked again
            "hard",
            "gates",
            "",
            "q1",  # taken: refused
            "",  # take the proposal, q2
        ]
    )
    assert create(monkeypatch, tmp_path, golden, corpus, answers + "\n") == 0  # EOF ends it
    out = capsys.readouterr().out
    assert "answer n if no passage answers the question" in out
    assert "'7' is neither a shown passage nor a corpus id" in out
    assert "choose one of easy, medium, hard" in out
    assert "id q1 is already used" in out
    records = read_jsonl(golden)
    assert [r["id"] for r in records] == ["q1", "q2"]
    shown_second = records[1]["expected_chunks"]
    assert shown_second[1] == "slices" and len(shown_second) == 2


def test_a_question_with_a_control_character_is_asked_again(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    corpus: Path,
) -> None:
    """An arrow key typed without line editing puts ESC [ A into the line: it was saved
    into the golden set as part of the question."""
    golden = tmp_path / "gold.jsonl"
    answers = "\n".join(
        [
            "Where is the index \x1b[Acached?",  # refused: nothing saved, asked again
            "Where is the index cached?",
            "3",
            "easy",
            "caching",
            "",
            "",
        ]
    )
    assert create(monkeypatch, tmp_path, golden, corpus, answers + "\n") == 0
    out = capsys.readouterr().out
    assert "The question holds the control character '\\x1b'" in out
    assert "Nothing was saved." in out
    records = read_jsonl(golden)
    assert [r["question"] for r in records] == ["Where is the index cached?"]


def test_end_of_input_mid_question_saves_nothing(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    corpus: Path,
) -> None:
    golden = tmp_path / "gold.jsonl"
    assert create(monkeypatch, tmp_path, golden, corpus, "Where is the index cached?\n3\n") == 0
    out = capsys.readouterr().out
    assert "this question was not saved" in out
    assert not golden.exists()
    # it said "saved 0 question(s) to gold.jsonl", a file it never made
    assert f"nothing saved: {golden} was not created" in out and "saved 0" not in out


def test_a_broken_golden_file_is_refused_before_the_session(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    corpus: Path,
) -> None:
    golden = tmp_path / "gold.jsonl"
    golden.write_text('{"id": 1, "question": "x", "expected_chunks": [1]}\n{oops\n')
    assert create(monkeypatch, tmp_path, golden, corpus, "q\n") == 2
    assert f"error: {golden}:2: line is not valid JSON" in capsys.readouterr().err


def test_next_free_id_follows_the_existing_style() -> None:
    assert next_free_id([]) == 1
    assert next_free_id([1, 2, 7]) == 8
    assert next_free_id(["3", 4]) == 5
    assert next_free_id(["q_00041", "q_00042"]) == "q_00043"
    assert next_free_id(["r1", "t1", "r2"]) == "r3"
    assert next_free_id(["intro"]) == "intro-1"


def test_parse_selection() -> None:
    ids = frozenset({"1", "2", "12", "doc"})
    shown = ["12", "doc"]
    assert parse_selection("n", shown, ids) == []
    assert parse_selection("  ", shown, ids) is None
    assert parse_selection("1,2", shown, ids) == ["12", "doc"]
    assert parse_selection("id:1 doc", shown, ids) == ["1", "doc"]
    assert parse_selection("12", shown, ids) == ["12"]  # beyond the list: an id
    assert isinstance(parse_selection("9", shown, ids), str)
