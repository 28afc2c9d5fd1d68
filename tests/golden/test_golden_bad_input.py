"""User mistakes the golden commands refuse with one paragraph and exit 2, writing nothing:
a review record listed twice or without an id, a `sample --out` over or inside its input or
onto a folder, an id `create` could not read back, a path or cache `create` could not write,
and a folder given as a plan."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from evalframe.app.golden_cli import main
from tests import forkrun
from tests.golden.golden_helpers import bob_records, corpus_for, read_jsonl, write_jsonl


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` with its bytes: to show a refused command changed nothing."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


# -- review-check: every record counts once ---------------------------------------------


def review_lines(n: int) -> list[dict[str, object]]:
    """``n`` reviewed records q1..qn: q1 ``major_issue``, the rest ``correct``."""
    return [
        {
            "id": f"q{i}",
            "difficulty": "medium",
            "verdict": "major_issue" if i == 1 else "correct",
            "reviewer": "me",
        }
        for i in range(1, n + 1)
    ]


def test_a_repeated_review_record_is_refused_not_counted_twice(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    records = review_lines(20)
    # 1 major_issue in 20 is 5%, not below the 5% ceiling: the batch fails
    once = write_jsonl(tmp_path / "rev.jsonl", records)
    assert main(["review-check", str(once)]) == 1
    assert "result: FAILED" in capsys.readouterr().out
    # q2 pasted again as line 21 would make it 1 in 21 (4.8%) and pass: refused instead
    twice = write_jsonl(tmp_path / "rev_dup.jsonl", [*records, records[1]])
    assert main(["review-check", str(twice)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(
        f"error: {twice}:21: query id 'q2' is duplicated (first at {twice}:2)\n"
    )
    assert "remove the repeated line" in captured.err and "Traceback" not in captured.err


def test_ids_written_differently_are_one_record(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # 7 and "7 " are the id 7 (integers as their digits, surrounding space dropped)
    review = write_jsonl(
        tmp_path / "rev.jsonl",
        [
            {"query_id": 7, "verdict": "correct", "reviewer": "me"},
            {"query_id": "7 ", "verdict": "correct", "reviewer": "me"},
        ],
    )
    assert main(["review-check", str(review)]) == 2
    assert f"error: {review}:2: query id '7' is duplicated (first at {review}:1)" in (
        capsys.readouterr().err
    )


def test_a_review_record_without_an_id_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    records = review_lines(3)
    del records[2]["id"]
    review = write_jsonl(tmp_path / "rev.jsonl", records)
    assert main(["review-check", str(review)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {review}:3: the record has no 'query_id' or 'id' field")
    assert "got fields 'difficulty', 'verdict', 'reviewer'" in err


def test_a_review_record_with_an_id_of_two_words_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    records = review_lines(2)
    records[1]["id"] = "q 2"
    review = write_jsonl(tmp_path / "rev.jsonl", records)
    assert main(["review-check", str(review)]) == 2
    assert f"error: {review}:2: field 'id' contains a space" in capsys.readouterr().err


# -- sample --out: apart from the inputs, and a file -------------------------------------


def test_sample_refuses_an_out_inside_a_per_domain_folder(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    records = bob_records(12)
    folder = tmp_path / "domains"
    write_jsonl(folder / "food.jsonl", records[:6])
    write_jsonl(folder / "travel.jsonl", records[6:])
    before = snapshot(folder)
    for out in (folder / "review.jsonl", folder / "sub" / "review.jsonl"):
        assert main(["sample", str(folder), "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(
            f"error: option --out: {out} is inside {folder}, the golden-set folder it reads"
        )
        assert snapshot(folder) == before  # nothing written there
    assert main(["stats", str(folder), "--json"]) == 0  # and the set still loads
    assert json.loads(capsys.readouterr().out)["queries"] == 12


def test_sample_refuses_an_out_that_is_its_input_even_with_force(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    golden = write_jsonl(tmp_path / "gold.jsonl", bob_records(10))
    before = golden.read_bytes()
    (tmp_path / "sub").mkdir()
    same = tmp_path / "sub" / ".." / "gold.jsonl"  # the same file, spelt otherwise
    assert main(["sample", str(golden), "--out", str(same), "--force"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: option --out: {same} is the golden set it reads")
    assert f"--out {tmp_path / 'gold_review.jsonl'}" in err
    assert golden.read_bytes() == before


def test_sample_refuses_an_out_that_is_one_of_its_stage_files(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    golden = write_jsonl(tmp_path / "gold.jsonl", bob_records(10))
    oracle = write_jsonl(tmp_path / "oracle.jsonl", [{"query_id": "1", "confidence": "low"}])
    before = oracle.read_bytes()
    args = ["sample", str(golden), "--oracle-answers", str(oracle), "--out", str(oracle)]
    assert main([*args, "--force"]) == 2
    assert f"{oracle} is the --oracle-answers file it reads" in capsys.readouterr().err
    assert oracle.read_bytes() == before


@pytest.mark.parametrize("force", [[], ["--force"]])
def test_sample_says_an_out_folder_is_a_folder(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, force: list[str]
) -> None:
    golden = write_jsonl(tmp_path / "gold.jsonl", bob_records(10))
    out = tmp_path / "out"
    out.mkdir()
    assert main(["sample", str(golden), "--out", str(out), *force]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: option --out: {out} is a folder")
    assert f"--out {out / 'review.jsonl'}" in err
    assert "already exists" not in err and "Traceback" not in err
    assert list(out.iterdir()) == []


# -- create: ids the loader reads back; paths checked before the first question -----------

CORPUS = [
    {"id": "1", "text": "Install the tool with pip install inside a virtual environment."},
    {"id": "2", "text": "A failed required gate makes the run exit with code 1."},
]


def create(monkeypatch: pytest.MonkeyPatch, golden: Path, corpus: Path, cache: Path) -> int:
    monkeypatch.setattr("sys.stdin", io.StringIO("How do I install it?\n1\n\n\n\n"))
    return main(
        ["create", str(golden), "--corpus", str(corpus), "--k", "2", "--cache-dir", str(cache)]
    )


def test_create_asks_again_for_an_id_of_two_words_or_with_a_control_character(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    corpus = write_jsonl(tmp_path / "corpus.jsonl", CORPUS)
    golden = tmp_path / "gold.jsonl"
    answers = ["How do I install it?", "1", "easy", "", "", "q 1", "q\x07x", "q7", ""]
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(answers) + "\n"))
    args = ["create", str(golden), "--corpus", str(corpus), "--cache-dir", str(tmp_path / "c")]
    assert main(args) == 0
    out = capsys.readouterr().out
    rule = "contains a space or a control character, which a TREC file cannot hold"
    assert f"'q 1' {rule}: an id is one word" in out
    assert f"'q\\x07x' {rule}: an id is one word" in out
    assert "saved question q7 to" in out
    assert [r["id"] for r in read_jsonl(golden)] == ["q7"]
    assert main(["validate", str(golden), "--min-queries", "0"]) == 0  # it loads


def test_create_refuses_a_path_under_a_file_before_the_first_question(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    corpus = write_jsonl(tmp_path / "corpus.jsonl", CORPUS)
    blocker = tmp_path / "notes"
    blocker.write_text("mine\n")
    golden = blocker / "sub" / "gold.jsonl"
    assert create(monkeypatch, golden, corpus, tmp_path / "c") == 2
    captured = capsys.readouterr()
    assert "Question:" not in captured.out  # nothing asked, so no answer is lost
    assert captured.err.startswith(
        f"error: cannot write {golden}: {blocker} is a file, not a folder"
    )
    assert blocker.read_text() == "mine\n"


def test_create_and_sample_refuse_a_folder_no_file_can_be_made_in_before_the_work(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``/proc`` takes no new file: ``create`` asked every question, then failed naming a
    hidden ``.gold.jsonl.XXXX.tmp`` (the answers lost); ``sample`` crashed with a
    traceback (exit 3). Both refuse the path before the work now. (``/proc`` refuses
    root too, as a read-only folder does not.)"""
    corpus = write_jsonl(tmp_path / "corpus.jsonl", CORPUS)
    golden = Path("/proc/evalframe-test/gold.jsonl")
    assert create(monkeypatch, golden, corpus, tmp_path / "c") == 2
    captured = capsys.readouterr()
    assert "Question:" not in captured.out  # nothing asked, so no answer is lost
    assert captured.err.startswith(f"error: cannot write {golden}: ")
    assert ".tmp" not in captured.err and "Traceback" not in captured.err

    source = write_jsonl(tmp_path / "gold.jsonl", bob_records(4))
    assert main(["sample", str(source), "--out", "/proc/review.jsonl"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: option --out: cannot write /proc/review.jsonl: ")
    assert ".tmp" not in err and "Traceback" not in err


@pytest.mark.parametrize("under", [False, True])
def test_create_refuses_a_cache_dir_that_is_a_file_before_the_first_question(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    under: bool,
) -> None:
    corpus = write_jsonl(tmp_path / "corpus.jsonl", CORPUS)
    blocker = tmp_path / "cachefile"
    blocker.write_text("x")
    cache = blocker / "sub" if under else blocker
    golden = tmp_path / "gold.jsonl"
    assert create(monkeypatch, golden, corpus, cache) == 2
    captured = capsys.readouterr()
    assert "Question:" not in captured.out
    said = "cannot be made" if under else "is a file, not a folder"
    assert captured.err.startswith(f"error: {cache}: the cache folder {said}")
    assert "give --cache-dir a folder you can write" in captured.err
    assert not golden.exists() and blocker.read_text() == "x"


# -- a folder given as the plan -----------------------------------------------------------


def test_validate_says_a_plan_folder_is_a_folder(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    records = bob_records(3)
    golden = write_jsonl(tmp_path / "gold.jsonl", records)
    corpus = corpus_for(records, tmp_path / "corpus.jsonl")
    plan = tmp_path / "plan"
    plan.mkdir()
    args = ["validate", str(golden), "--corpus", str(corpus), "--plan", str(plan)]
    assert main(args) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(f"error: option --plan: {plan} is a folder, not a plan file"), (
        captured.err
    )
    assert "Traceback" not in captured.err and captured.out == ""


def test_build_says_a_plan_folder_is_a_folder_and_leaves_no_batch(tmp_path: Path) -> None:
    plan = tmp_path / "plan"
    plan.mkdir()
    env = {
        **os.environ,
        "EVALFRAME_CACHE_DIR": str(tmp_path / ".cache"),
        "EVALFRAME_TRACKING": "none",
        "PYTHONIOENCODING": "utf-8",
    }
    done = forkrun.run(
        ("golden", "build", "+build=knowcode_demo", f"plan={plan}"), cwd=tmp_path, env=env
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"error: config key plan: {plan} is a folder, not a plan file" in done.stderr
    assert "Traceback" not in done.stderr
    pipeline = tmp_path / "golden/knowcode_demo/pipeline"
    assert not pipeline.exists() or not any(pipeline.iterdir())  # no batch folder left
    assert list(plan.iterdir()) == []


@pytest.mark.parametrize("bad", ["folder", "not-json"])
def test_build_reads_the_review_file_before_step_a(tmp_path: Path, bad: str) -> None:
    """A review file that is a folder, or has a line that is not JSON, was found at step G,
    after every role call of steps A-F had been paid for (and left a batch folder)."""
    review = tmp_path / "reviews.jsonl"
    if bad == "folder":
        review.mkdir()
    else:
        review.write_text('{"query_id": "q1", "verdict": "correct"}\n{"query_id": \n')
    env = {
        **os.environ,
        "EVALFRAME_CACHE_DIR": str(tmp_path / ".cache"),
        "EVALFRAME_TRACKING": "none",
        "PYTHONIOENCODING": "utf-8",
    }
    done = forkrun.run(
        ("golden", "build", "+build=knowcode_demo", f"review.file={review}"), cwd=tmp_path, env=env
    )
    assert done.returncode == 2, done.stdout + done.stderr
    said = "review file is a folder, not a file" if bad == "folder" else f"{review}:2: line is not"
    assert said in done.stderr and "Traceback" not in done.stderr
    assert "step A" not in done.stdout  # refused before the first step
    pipeline = tmp_path / "golden/knowcode_demo/pipeline"
    assert not pipeline.exists() or not any(pipeline.iterdir())  # no batch folder left
