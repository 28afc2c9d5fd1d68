"""Property tests: any valid golden set survives a write/read round trip through
the B.O.B JSONL format (and the generic loader agrees on its content hash), and
a mutated record is rejected with a message naming its line.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from evalframe_jsonl.dataset import JsonlDataset, JsonlDatasetConfig
from hypothesis import given, settings
from hypothesis import strategies as st

from evalframe.core.errors import DataError
from evalframe.plugin.protocols import PluginContext

SETTINGS = settings(max_examples=40, deadline=None, database=None)

ids = st.one_of(st.integers(0, 10_000), st.text("abcxyz0123-_", min_size=1, max_size=8))
chunk_ids = st.one_of(st.integers(0, 500), st.text("abcdef0123:/#", min_size=1, max_size=10))
texts = st.text(min_size=1, max_size=40).filter(lambda s: s.strip() != "")


@st.composite
def records(draw: st.DrawFn) -> list[dict[str, Any]]:
    raw_ids = draw(st.lists(ids, min_size=1, max_size=8, unique_by=str))
    out = []
    for qid in raw_ids:
        out.append(
            {
                "id": qid,
                "question": draw(texts),
                "expected_chunks": draw(st.lists(chunk_ids, max_size=4, unique_by=str)),
                "difficulty": draw(st.sampled_from(["easy", "medium", "hard"])),
                "category": draw(st.sampled_from(["setup", "usage"])),
            }
        )
    return out


def write(records: list[dict[str, Any]], folder: Path) -> Path:
    path = folder / "gold.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def load(path: Path):  # type: ignore[no-untyped-def]  # test helper
    return JsonlDataset(JsonlDatasetConfig(path=str(path)), PluginContext()).load()


@SETTINGS
@given(records())
def test_valid_sets_round_trip(recs: list[dict[str, Any]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        golden = load(write(recs, Path(tmp)))
    assert [q.id for q in golden] == [str(r["id"]) for r in recs]
    for q, r in zip(golden, recs, strict=True):
        assert q.text == r["question"]
        assert q.judgments == {str(c): 1 for c in r["expected_chunks"]}
        assert q.is_negative == (not r["expected_chunks"])
        assert q.metadata == {"difficulty": r["difficulty"], "category": r["category"]}


@SETTINGS
@given(records())
def test_the_same_content_hashes_the_same_through_the_generic_loader(
    recs: list[dict[str, Any]],
) -> None:
    generic = pytest.importorskip("evalframe_formats.generic")
    with tempfile.TemporaryDirectory() as tmp:
        path = write(recs, Path(tmp))
        bob = load(path)
        config = generic.GenericDatasetConfig(
            path=str(path),
            format="jsonl",
            text_field="question",
            judgments_field="expected_chunks",
            slice_fields=["difficulty", "category"],
        )
        other = generic.GenericDataset(config, PluginContext()).load()
    assert other.content_hash == bob.content_hash


MUTATIONS = {
    "drop the question": (lambda r: r.pop("question"), "'question'"),
    "drop the expected chunks": (lambda r: r.pop("expected_chunks"), "'expected_chunks'"),
    "chunks as a string": (lambda r: r.update(expected_chunks="1, 2"), "must be a list of ids"),
    "empty question": (lambda r: r.update(question="  "), "non-empty text"),
    "boolean id": (lambda r: r.update(id=True), "field 'id'"),
    "chunk as an object": (lambda r: r.update(expected_chunks=[{"id": 1}]), "chunk ids"),
}


@SETTINGS
@given(records(), st.sampled_from(sorted(MUTATIONS)), st.data())
def test_a_mutated_record_is_rejected_with_its_line(
    recs: list[dict[str, Any]], mutation: str, data: st.DataObject
) -> None:
    index = data.draw(st.integers(0, len(recs) - 1))
    edit, fragment = MUTATIONS[mutation]
    edit(recs[index])
    with tempfile.TemporaryDirectory() as tmp:
        path = write(recs, Path(tmp))
        with pytest.raises(DataError) as err:
            load(path)
    assert err.value.line == index + 1
    assert fragment in err.value.render()


@SETTINGS
@given(records())
def test_a_duplicated_id_names_both_lines(recs: list[dict[str, Any]]) -> None:
    recs.append({**recs[0], "question": "asked again?"})
    with tempfile.TemporaryDirectory() as tmp:
        path = write(recs, Path(tmp))
        with pytest.raises(DataError) as err:
            load(path)
    assert err.value.line == len(recs)
    assert f"(first at {path}:1)" in err.value.render()
