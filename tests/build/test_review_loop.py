"""Step G, the reviewer's loop (§8): the sample written, verdicts and edits read back, each
ceiling at its boundary (worked by hand), a breach requeuing the batch with feedback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalframe.core.errors import DataError
from tests.build.build_helpers import (
    Script,
    build,
    fill_review,
    jsonl,
    rules_of,
    scripted,
    step_file,
)

__all__ = ["scripted"]


def _plan(easy: int, medium: int) -> dict:
    return {"locate": {"easy": easy, "medium": medium}}


def _ids(n: int) -> list[str]:
    return [f"q_{i:05d}" for i in range(1, n + 1)]


def _reviewed(tmp: Path, easy: int, medium: int, bad: dict[str, str], **over: object):  # type: ignore[no-untyped-def]
    """A batch of easy + medium records (q_00001.. are easy), all sampled and reviewed
    ``correct`` except ``bad``; then the build that reads the verdicts back."""
    plan = _plan(easy, medium)
    code, status, first, _ = build(tmp, plan, headroom=1.0)
    assert (code, status) == (0, "awaiting_review")
    verdicts = {q: bad.get(q, "correct") for q in _ids(easy + medium)}
    review = fill_review(first, verdicts, tmp / "review.jsonl")
    extra = dict(over.pop("review", {}))  # type: ignore[call-overload]
    return build(tmp, plan, "b2", headroom=1.0, review={"file": str(review), **extra}, **over)


@pytest.mark.parametrize(
    ("n", "status"),
    [
        (20, "requeued"),  # 1 major_issue / 20 = 5.0%: not below the 5% ceiling
        (21, "blessed"),  # 1 / 21 = 4.76% < 5%
    ],
)
def test_major_plus_wrong_must_stay_below_5_percent(
    tmp_path: Path, scripted: Script, n: int, status: str
) -> None:
    code, got, batch, _ = _reviewed(tmp_path, 5, n - 5, {"q_00010": "major_issue"})
    assert got == status
    assert code == (1 if status == "requeued" else 0)
    summary = json.loads((batch / "batch.json").read_text())
    if status == "requeued":
        assert "major_issue + wrong is 5.0% of the sample" in summary["feedback"][0]
        assert "review.max_major_wrong" in summary["feedback"][0]
        assert not (tmp_path / "out" / "golden_v1.0.json").exists()
    else:
        assert rules_of(batch)["q_00010"] == "review:major_issue"  # dropped all the same
        golden = json.loads((tmp_path / "out" / "golden_v1.0.json").read_text())
        assert len(golden) == n - 1


@pytest.mark.parametrize(("n", "status"), [(20, "requeued"), (21, "blessed")])
def test_minor_issue_must_stay_below_15_percent(
    tmp_path: Path, scripted: Script, n: int, status: str
) -> None:
    """3 minor_issue: 3/20 = 15% breaches, 3/21 = 14.3% holds; minor records are kept."""
    bad = dict.fromkeys(["q_00006", "q_00007", "q_00008"], "minor_issue")
    _, got, _, _ = _reviewed(tmp_path, 5, n - 5, bad)
    assert got == status
    if status == "blessed":
        assert len(json.loads((tmp_path / "out" / "golden_v1.0.json").read_text())) == n


@pytest.mark.parametrize(
    ("wrong", "allowed", "status"),
    [
        ("q_00002", 0, "requeued"),  # wrong on an easy query: 1 > 0 allowed
        ("q_00020", 0, "blessed"),  # the same verdict on a medium query: only 1/25 = 4% < 5%
        ("q_00002", 1, "blessed"),  # review.max_wrong_easy=1
    ],
)
def test_no_wrong_verdict_on_an_easy_query(
    tmp_path: Path, scripted: Script, wrong: str, allowed: int, status: str
) -> None:
    _, got, batch, _ = _reviewed(
        tmp_path, 5, 20, {wrong: "wrong"}, review={"max_wrong_easy": allowed}
    )
    assert got == status
    if status == "blessed":
        assert rules_of(batch)[wrong] == "review:wrong"


def test_without_verdicts_the_batch_waits_for_review(tmp_path: Path, scripted: Script) -> None:
    code, status, batch, lines = build(tmp_path, _plan(2, 1), headroom=1.0)
    assert (code, status) == (0, "awaiting_review")
    sample = jsonl(batch / "review_sample.jsonl")
    assert [r["query_id"] for r in sample] == _ids(3)
    assert all(r["verdict"] is None and r["record_hash"] and r["schema_version"] for r in sample)
    assert not (batch / "human_reviews.jsonl").exists()
    assert any("awaiting review" in line for line in lines)


def test_a_verdict_missing_for_a_sampled_record_keeps_it_waiting(
    tmp_path: Path, scripted: Script
) -> None:
    plan = _plan(2, 1)
    _, _, first, _ = build(tmp_path, plan, headroom=1.0)
    review = fill_review(first, {"q_00001": "correct", "q_00002": "correct"}, tmp_path / "r.jsonl")
    code, status, batch, _ = build(tmp_path, plan, "b2", headroom=1.0, review={"file": str(review)})
    assert (code, status) == (0, "awaiting_review")
    assert step_file(batch, "review")["missing"] == ["q_00003"]
    assert len(jsonl(batch / "human_reviews.jsonl")) == 2


def test_a_verdict_on_a_record_that_has_changed_since_is_stale(
    tmp_path: Path, scripted: Script, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = _plan(1, 0)
    _, _, first, _ = build(tmp_path, plan, headroom=1.0)
    review = fill_review(first, {"q_00001": "correct"}, tmp_path / "r.jsonl")
    real = scripted.oracle
    scripted.oracle = lambda r: {**real(r), "must_mention_facts": ["a new fact"]}
    # the oracle is asked again (no cache in these tests), and now answers differently
    _, status, batch, _ = build(tmp_path, plan, "b2", headroom=1.0, review={"file": str(review)})
    assert status == "awaiting_review"
    assert step_file(batch, "review")["stale"] == ["q_00001"]
    assert "earlier version of their record" in capsys.readouterr().err


def test_a_verdict_for_a_record_outside_the_pool_is_ignored_with_a_warning(
    tmp_path: Path, scripted: Script, capsys: pytest.CaptureFixture[str]
) -> None:
    """A review file of another batch (or a record dropped since): said, never dropped silently."""
    plan = _plan(2, 0)
    _, _, first, _ = build(tmp_path, plan, headroom=1.0)
    review = fill_review(first, {"q_00001": "correct", "q_00002": "correct"}, tmp_path / "r.jsonl")
    with review.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"query_id": "q_99999", "verdict": "wrong", "record_hash": "x"}) + "\n")
    _, status, batch, _ = build(tmp_path, plan, "b2", headroom=1.0, review={"file": str(review)})
    assert status == "blessed"  # the two records of the pool were reviewed correct
    assert step_file(batch, "review")["ignored"] == 1
    err = capsys.readouterr().err
    assert "1 verdict(s) are for records that are not in this batch's pool" in err
    assert "q_99999 (line 3)" in err  # the two sampled records' lines, then this one


def test_edits_are_applied_tracked_in_provenance_and_gated_again(
    tmp_path: Path, scripted: Script
) -> None:
    plan = _plan(3, 0)
    _, _, first, _ = build(tmp_path, plan, headroom=1.0)
    review = fill_review(
        first,
        dict.fromkeys(_ids(3), "correct"),
        tmp_path / "r.jsonl",
        q_00001={"must_mention_facts": ["f1 returns 1"], "notes": "added the return value"},
        q_00002={"canonical_narrative": "The answer is `f9`."},  # names an entity not expected
    )
    code, status, batch, _ = build(tmp_path, plan, "b2", headroom=1.0, review={"file": str(review)})
    assert (code, status) == (0, "blessed")
    assert rules_of(batch)["q_00002"] == "review-edit:gate:narrative"
    golden = {r["query_id"]: r for r in json.loads((tmp_path / "out/golden_v1.0.json").read_text())}
    assert set(golden) == {"q_00001", "q_00003"}
    first_record = golden["q_00001"]
    assert first_record["must_mention_facts"] == ["f1 returns 1"]
    prov = first_record["provenance"]
    assert prov["edits"] == [
        {"field": "must_mention_facts", "before": [], "after": ["f1 returns 1"]}
    ]
    assert prov["human_reviewed"] is True and prov["human_reviewer"] == "tester"
    assert jsonl(batch / "human_reviews.jsonl")[0]["edits"] == ["must_mention_facts"]


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"verdict": "fine"}, "has an unknown verdict"),
        ({"verdict": "correct", "query_text": "rewritten"}, "field query_text was edited"),
        ({"verdict": "correct", "record_hash": None}, None),  # stale, not an error
    ],
)
def test_a_bad_review_line_is_an_error_at_its_line(
    tmp_path: Path, scripted: Script, change: dict, fragment: str | None
) -> None:
    plan = _plan(2, 0)
    _, _, first, _ = build(tmp_path, plan, headroom=1.0)
    review = fill_review(first, {}, tmp_path / "r.jsonl", q_00002=change)
    if fragment is None:
        _, status, _, _ = build(tmp_path, plan, "b2", headroom=1.0, review={"file": str(review)})
        assert status == "awaiting_review"
        return
    with pytest.raises(DataError) as err:
        build(tmp_path, plan, "b2", headroom=1.0, review={"file": str(review)})
    assert fragment in err.value.message
    assert err.value.path == str(review) and err.value.line == 2


def test_a_requeued_batch_feeds_its_failure_modes_to_the_next(
    tmp_path: Path, scripted: Script
) -> None:
    plan = _plan(1, 0)
    _, _, first, _ = build(tmp_path, plan, headroom=1.0, cache=True)
    review = fill_review(
        first, {"q_00001": "wrong"}, tmp_path / "r.jsonl", q_00001={"notes": "not the writer"}
    )
    code, status, _, _ = build(
        tmp_path, plan, "b2", headroom=1.0, review={"file": str(review)}, cache=True
    )
    assert (code, status) == (1, "requeued")
    seen: list[list[str]] = []
    real = scripted.author

    def author(request):  # type: ignore[no-untyped-def]
        seen.append(list(request.feedback))
        return real(request)

    scripted.author = author
    build(tmp_path, plan, "b3", headroom=1.0, cache=True)
    assert any("q_00001 (wrong): not the writer" in f for f in seen[0])
    # b1 asked once, b2 was answered from the cache, b3's request carries the feedback: new
    assert scripted.calls["author"] == 2


def test_a_review_file_that_is_not_there_stops_the_build_before_any_role_call(
    tmp_path: Path, scripted: Script
) -> None:
    """It was found at step G, after steps A-F had called (and paid) every role."""
    with pytest.raises(DataError) as err:
        build(tmp_path, _plan(2, 1), headroom=1.0, review={"file": str(tmp_path / "nope.jsonl")})
    assert err.value.key == "review.file" and "review file not found" in err.value.message
    assert not scripted.calls
    assert not (tmp_path / "b1").exists()
