"""diff_sets as a pure function (with properties) and `evalframe golden diff`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalframe.app.golden_cli import main
from evalframe.core.types import GoldenQuery, GoldenSet
from evalframe.golden.diff import diff_sets
from tests.golden.golden_helpers import bob_records, write_jsonl

DOCS = ("d1", "d2", "d3", "d10", "x")
SETTINGS = settings(max_examples=80, deadline=None, database=None)


@st.composite
def queries(draw: st.DrawFn, qid: str) -> GoldenQuery:
    return GoldenQuery(
        id=qid,
        text=draw(st.text("abc ?", min_size=1, max_size=12)),
        judgments=draw(st.dictionaries(st.sampled_from(DOCS), st.integers(0, 3), max_size=4)),
        metadata=draw(st.fixed_dictionaries({}, optional={"difficulty": st.sampled_from("EMH")})),
        views=draw(
            st.fixed_dictionaries(
                {},
                optional={"files": st.dictionaries(st.sampled_from(DOCS), st.just(1), max_size=3)},
            )
        ),
    )


@st.composite
def golden_sets(draw: st.DrawFn) -> GoldenSet:
    ids = draw(st.lists(st.sampled_from([f"q{i}" for i in range(8)]), unique=True, max_size=6))
    return GoldenSet.build("g", [draw(queries(qid)) for qid in ids])


def replace(golden: GoldenSet, query: GoldenQuery) -> GoldenSet:
    return GoldenSet.build("g", [query if q.id == query.id else q for q in golden.queries])


@SETTINGS
@given(golden_sets())
def test_a_set_against_itself_has_no_differences(golden: GoldenSet) -> None:
    diff = diff_sets(golden, golden)
    assert not diff
    assert diff.summary() == dict.fromkeys(diff.summary(), 0)


@SETTINGS
@given(golden_sets(), golden_sets())
def test_every_id_is_added_removed_or_kept(old: GoldenSet, new: GoldenSet) -> None:
    diff = diff_sets(old, new)
    added = {q.id for q in diff.added}
    removed = {q.id for q in diff.removed}
    old_ids, new_ids = set(old.by_id()), set(new.by_id())
    assert added == new_ids - old_ids
    assert removed == old_ids - new_ids
    assert {c.id for c in diff.changed} <= old_ids & new_ids
    # swapping the sides swaps added and removed
    back = diff_sets(new, old)
    assert {q.id for q in back.added} == removed and {q.id for q in back.removed} == added


@SETTINGS
@given(golden_sets(), st.data())
def test_a_single_mutation_is_reported_exactly(golden: GoldenSet, data: st.DataObject) -> None:
    ids = [q.id for q in golden.queries]
    kinds = ["add"] + (["remove", "reword", "judge", "unjudge", "relabel"] if ids else [])
    kind = data.draw(st.sampled_from(kinds))
    expected: dict[str, Any]
    if kind == "add":
        free = [f"q{i}" for i in range(8, 12)]
        new_q = data.draw(queries(data.draw(st.sampled_from(free))))
        mutated = GoldenSet.build("g", [*golden.queries, new_q])
        diff = diff_sets(golden, mutated)
        assert [q.id for q in diff.added] == [new_q.id]
        assert not diff.removed and not diff.changed
        return
    target = golden.by_id()[data.draw(st.sampled_from(ids))]
    if kind == "remove":
        mutated = GoldenSet.build("g", [q for q in golden.queries if q.id != target.id])
        diff = diff_sets(golden, mutated)
        assert [q.id for q in diff.removed] == [target.id]
        assert not diff.added and not diff.changed
        return
    if kind == "reword":
        text = target.text + " (reworded)"
        diff = diff_sets(golden, replace(golden, target.model_copy(update={"text": text})))
        expected = {"id": target.id, "text": {"old": target.text, "new": text}}
    elif kind == "judge":
        doc = "new-doc"
        judged = {**target.judgments, doc: 2}
        diff = diff_sets(golden, replace(golden, target.model_copy(update={"judgments": judged})))
        expected = {
            "id": target.id,
            "judgments": {"added": {doc: 2}, "removed": {}, "relabelled": {}},
        }
    elif kind == "unjudge":
        if not target.judgments:
            return
        doc = data.draw(st.sampled_from(sorted(target.judgments)))
        judged = {d: v for d, v in target.judgments.items() if d != doc}
        diff = diff_sets(golden, replace(golden, target.model_copy(update={"judgments": judged})))
        expected = {
            "id": target.id,
            "judgments": {"added": {}, "removed": {doc: target.judgments[doc]}, "relabelled": {}},
        }
    else:  # relabel
        if not target.judgments:
            return
        doc = data.draw(st.sampled_from(sorted(target.judgments)))
        old_label = target.judgments[doc]
        judged = {**target.judgments, doc: old_label + 1}
        diff = diff_sets(golden, replace(golden, target.model_copy(update={"judgments": judged})))
        expected = {
            "id": target.id,
            "judgments": {
                "added": {},
                "removed": {},
                "relabelled": {doc: {"old": old_label, "new": old_label + 1}},
            },
        }
    assert not diff.added and not diff.removed
    assert [c.to_dict() for c in diff.changed] == [expected]


def test_views_and_metadata_changes_are_reported() -> None:
    old = GoldenSet.build(
        "g",
        [
            GoldenQuery(
                id="1", text="t", views={"files": {"a.py": 1}}, metadata={"difficulty": "easy"}
            )
        ],
    )
    new = GoldenSet.build(
        "g",
        [GoldenQuery(id="1", text="t", views={"files": {"b.py": 1}}, metadata={"category": "x"})],
    )
    change = diff_sets(old, new).changed[0].to_dict()
    assert change["views"] == {
        "files": {"added": {"b.py": 1}, "removed": {"a.py": 1}, "relabelled": {}}
    }
    assert change["metadata"] == {
        "category": {"old": None, "new": "x"},
        "difficulty": {"old": "easy", "new": None},
    }


def test_the_diff_command_shows_rewording_and_judgment_changes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    old = bob_records(5, negatives=1)
    new = [dict(r) for r in old[1:]]  # 1 removed
    new[0]["question"] = "Reworded question?"
    new[1]["expected_chunks"] = ["c3", "c99"]
    new.append({"id": 9, "question": "Brand new?", "expected_chunks": []})
    a = write_jsonl(tmp_path / "old.jsonl", old)
    b = write_jsonl(tmp_path / "new.jsonl", new)
    assert main(["diff", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "1 added, 1 removed, 1 reworded, 1 with changed judgments" in out
    assert f"question: {old[1]['question']!r}" in out
    assert "→ 'Reworded question?'" in out
    assert "+ judged: c99" in out
    assert "+ 9: 'Brand new?' [negative example]" in out
    assert "- 1:" in out
    assert main(["diff", str(a), str(b), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["summary"]["added"] == 1 and report["changed"][0]["id"] == "2"
    assert main(["diff", str(a), str(a)]) == 0
    assert "no differences" in capsys.readouterr().out


def test_diff_of_an_unreadable_version_is_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    a = write_jsonl(tmp_path / "old.jsonl", bob_records(2))
    b = tmp_path / "new.jsonl"
    b.write_text('{"id": 1}\n')
    assert main(["diff", str(a), str(b)]) == 2
    assert (
        f"error: {b}:1: record has no 'question', 'expected_chunks' field"
        in capsys.readouterr().err
    )


def test_diff_of_one_file_names_the_missing_argument(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """It said "config key new: golden diff needs two versions": a positional argument
    called a key of the config."""
    a = write_jsonl(tmp_path / "one.jsonl", bob_records(2))
    assert main(["diff", str(a)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        "error: argument NEW is missing: golden diff compares two versions of a golden set, "
        f"and was given one, OLD {a}, with no --rev (expected two files, OLD NEW, or one file "
        "and a Git/DVC revision, PATH --rev REV)"
    ), err
    assert f"hint: give the later version, `evalframe golden diff {a} NEW.jsonl`, or " in err
    assert f"`evalframe golden diff {a} --rev HEAD`" in err
    assert "config key" not in err and "Traceback" not in err
