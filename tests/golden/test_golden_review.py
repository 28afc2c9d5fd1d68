"""`sample` (stratified review files) and `review-check` (KnowCode's spot-check ceilings)."""

from __future__ import annotations

import contextlib
import io
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalframe.app.golden_cli import main
from evalframe.golden.review import allocate
from tests.golden.golden_helpers import KNOWCODE_DATA, question, read_jsonl, write_jsonl

CELLS = {
    ("locate", "easy"): 6,
    ("locate", "medium"): 4,
    ("explain", "hard"): 4,
    ("review", "easy"): 1,
}


def knowcode_set(path: Path) -> Path:
    records = []
    n = 0
    for (task, difficulty), count in CELLS.items():
        for _ in range(count):
            n += 1
            records.append(
                {
                    "query_id": f"q{n}",
                    "query_text": question(n),
                    "task_type": task,
                    "difficulty": difficulty,
                    "expected_entities": [f"src/m{n}.py::f{n}"],
                    "expected_files": [f"src/m{n}.py"],
                }
            )
    path.write_text(json.dumps(records, indent=2))
    return path


@settings(max_examples=100, deadline=None, database=None)
@given(
    st.dictionaries(st.integers(0, 9), st.integers(0, 30), max_size=8),
    st.floats(0.01, 1.0),
)
def test_allocation_covers_every_cell_and_the_fraction(sizes: dict[int, int], f: float) -> None:
    alloc = allocate(sizes, f)
    for cell, n in sizes.items():
        if n:
            assert 1 <= alloc[cell] <= n
        else:
            assert cell not in alloc
    total = sum(sizes.values())
    assert sum(alloc.values()) >= min(total, math.ceil(f * total - 1e-9))


def test_sample_writes_a_review_file_covering_every_cell(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    golden = knowcode_set(tmp_path / "golden.json")
    out = tmp_path / "review.jsonl"
    assert main(["sample", str(golden), "--out", str(out), "--seed", "3"]) == 0
    assert "across 4 task_type/difficulty cell(s)" in capsys.readouterr().out
    review = read_jsonl(out)
    assert {(r["task_type"], r["difficulty"]) for r in review} == set(CELLS)
    assert len(review) >= 0.15 * 15
    first = review[0]
    assert first["verdict"] is None and first["reviewer"] is None and first["notes"] == ""
    assert first["query_id"].startswith("q") and first["location"].startswith(f"{golden}:")
    # same seed, same sample; an existing review file is not overwritten without --force
    assert main(["sample", str(golden), "--out", str(out), "--seed", "3"]) == 2
    assert "already exists" in capsys.readouterr().err
    assert main(["sample", str(golden), "--out", str(out), "--seed", "3", "--force"]) == 0
    assert read_jsonl(out) == review


@pytest.mark.parametrize("fraction", ["1.5", "-0.2", "0", "nan", "x"])
def test_a_fraction_that_is_not_one_is_refused_the_same_way_whatever_it_is(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, fraction: str
) -> None:
    """1.5 and -0.2 were "not between 0 and 1" (argparse's usage), but 0 passed that and
    was refused after it as "--fraction must be above 0": two messages for one range."""
    golden = write_jsonl(
        tmp_path / "g.jsonl", [{"id": 1, "question": question(1), "expected_chunks": ["c1"]}]
    )
    out = tmp_path / "r.jsonl"
    assert main(["sample", str(golden), "--out", str(out), f"--fraction={fraction}"]) == 2
    err = capsys.readouterr().err
    assert err.endswith(
        f"error: argument --fraction: {fraction} is not a fraction above 0 and at most 1 "
        "(0.15 draws 15% of the set)\n"
    ), err
    assert not out.exists()


def test_sample_keeps_a_bob_records_own_notes(tmp_path: Path) -> None:
    golden = write_jsonl(
        tmp_path / "g.jsonl",
        [{"id": 1, "question": "q?", "expected_chunks": [], "notes": "negative"}],
    )
    out = tmp_path / "r.jsonl"
    assert main(["sample", str(golden), "--out", str(out), "--fraction", "1"]) == 0
    (record,) = read_jsonl(out)
    assert record["record_notes"] == "negative" and record["notes"] == ""


def test_sample_rejects_an_unknown_stratum(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "r.jsonl"
    golden = str(KNOWCODE_DATA / "golden_v1.0.json")
    assert main(["sample", golden, "--out", str(out), "--strata", "task_typ"]) == 2
    assert "no query has the stratum field(s) task_typ" in capsys.readouterr().err


def review_file(path: Path, verdicts: list[tuple[str, str]]) -> Path:
    records: list[dict[str, Any]] = [
        {"query_id": f"q{i}", "difficulty": d, "verdict": v, "reviewer": "deepg", "notes": ""}
        for i, (v, d) in enumerate(verdicts)
    ]
    return write_jsonl(path, records)


def test_review_check_passes_within_the_ceilings(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = review_file(
        tmp_path / "r.jsonl", [("correct", "easy")] * 18 + [("minor_issue", "hard")] * 2
    )
    assert main(["review-check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "minor_issue      2   10.0%" in out
    assert "result: PASSED" in out


@pytest.mark.parametrize(
    ("verdicts", "flags", "breach"),
    [
        ([("correct", "hard")] * 19 + [("major_issue", "hard")], [], "major_issue + wrong is 5.0%"),
        ([("correct", "hard")] * 17 + [("minor_issue", "hard")] * 3, [], "minor_issue is 15.0%"),
        ([("correct", "hard")] * 39 + [("wrong", "easy")], [], "1 `wrong` verdict(s) on easy"),
        (
            [("correct", "hard")] * 30 + [("major_issue", "hard")],
            ["--max-major-wrong", "0.03"],
            "3.2%",
        ),
    ],
)
def test_review_check_fails_on_a_breach(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    verdicts: list[tuple[str, str]],
    flags: list[str],
    breach: str,
) -> None:
    path = review_file(tmp_path / "r.jsonl", verdicts)
    assert main(["review-check", str(path), *flags, "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["passed"] is False
    assert any(breach in b for b in report["breaches"]), report["breaches"]


@pytest.mark.parametrize(
    ("line", "got"),
    [
        # the value as the file writes it, in JSON, or that there is none
        ('{"query_id": "q9", "verdict": null}', "null"),
        ('{"query_id": "q9", "verdict": "fine"}', '"fine"'),
        ('{"query_id": "q9"}', "no 'verdict' field"),
    ],
)
def test_a_missing_or_unknown_verdict_is_exit_2_at_its_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, line: str, got: str
) -> None:
    path = review_file(tmp_path / "r.jsonl", [("correct", "easy")])
    with open(path, "a") as handle:
        handle.write(line + "\n")
    assert main(["review-check", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}:2: record q9 has")
    assert f"got {got}" in err


def test_a_full_sample_then_check_round_trip(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    golden = knowcode_set(tmp_path / "golden.json")
    out = tmp_path / "review.jsonl"
    assert main(["sample", str(golden), "--out", str(out)]) == 0
    records = read_jsonl(out)
    for r in records:
        r.update(verdict="correct", reviewer="deepg")
    write_jsonl(out, records)
    assert main(["review-check", str(out)]) == 0
    assert "correct          " in capsys.readouterr().out


def test_low_confidence_and_partial_records_are_always_reviewed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Issue #25 §4 (KnowCode §3.2, §3.3): on top of the stratified draw, every oracle answer
    with confidence low and every adversary report with a partial verdict goes to a human."""
    golden = knowcode_set(tmp_path / "golden.json")
    plain = tmp_path / "plain.jsonl"
    assert main(["sample", str(golden), "--out", str(plain), "--seed", "3"]) == 0
    drawn = [r["query_id"] for r in read_jsonl(plain)]
    assert all(r["review_reasons"] == ["stratified draw"] for r in read_jsonl(plain))
    # q10 is flagged in the golden record itself; q11 through the oracle file (and a
    # rejected candidate's answer is ignored); q12 and q13 through the adversary file
    outside = [q for q in (f"q{n}" for n in range(10, 14)) if q not in drawn]
    assert len(outside) >= 3, drawn  # the seed leaves most of them out of the draw
    records = json.loads(golden.read_text())
    records[9]["confidence"] = "low"
    golden.write_text(json.dumps(records, indent=2))
    oracle = write_jsonl(
        tmp_path / "01_oracle_answers.jsonl",
        [
            {"query_id": "q11", "confidence": "low", "uncertainty_notes": "two candidates"},
            {"query_id": "q12", "confidence": "high"},
            {"query_id": "q99", "confidence": "low"},
        ],
    )
    adversary = write_jsonl(
        tmp_path / "02_adversary_reports.jsonl",
        [
            {"query_id": "q12", "overall_verdict": "partial", "claim_verdicts": []},
            {
                "query_id": "q13",
                "overall_verdict": "supported",
                "claim_verdicts": [{"verdict": "supported"}, {"verdict": "partial"}],
            },
        ],
    )
    out = tmp_path / "review.jsonl"
    args = ["sample", str(golden), "--out", str(out), "--seed", "3"]
    capsys.readouterr()
    assert (
        main([*args, "--oracle-answers", str(oracle), "--adversary-reports", str(adversary)]) == 0
    )
    review = {r["query_id"]: r for r in read_jsonl(out)}
    assert set(drawn) <= set(review)  # the stratified draw is unchanged
    assert set(review) == set(drawn) | {"q10", "q11", "q12", "q13"}
    reasons = {q: review[q]["review_reasons"] for q in ("q10", "q11", "q12", "q13")}
    for qid, reason in {
        "q10": "low-confidence oracle answer",
        "q11": "low-confidence oracle answer",
        "q12": "partial adversary verdict",
        "q13": "partial adversary verdict",
    }.items():
        assert reason in reasons[qid]
        assert reasons[qid][0] == "stratified draw" or qid in outside
    printed = capsys.readouterr().out
    assert f"{len(drawn)} drawn across 4 task_type/difficulty cell(s)" in printed
    assert "always reviewed, low-confidence oracle answer: 2 (q10, q11)" in printed
    assert "always reviewed, partial adversary verdict: 2 (q12, q13)" in printed


def test_a_stage_file_line_without_a_query_id_is_located(tmp_path: Path) -> None:
    golden = knowcode_set(tmp_path / "golden.json")
    bad = write_jsonl(tmp_path / "01.jsonl", [{"query_id": "q1"}, {"confidence": "low"}])
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(
            [
                "sample",
                str(golden),
                "--out",
                str(tmp_path / "r.jsonl"),
                "--oracle-answers",
                str(bad),
            ]
        )
    assert code == 2
    assert (
        f"{bad}:2: a line of the oracle answers file must be a JSON object with a query_id"
        in err.getvalue()
    )
