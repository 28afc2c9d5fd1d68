"""Python objects as a run's retriever, golden set and corpus: conversion, errors, identity.

The identity is what the retrieval cache key holds for a Python retriever: these
tests pin the documented rule (docs/python-api.md#the-cache): the qualified
name, the bytecode (what runs), and the immutable plain values it reads.
"""

from __future__ import annotations

import functools
import importlib
import sys
from pathlib import Path
from typing import Any

import pytest

from evalframe.api.objects import callable_identity, corpus_from, golden_from
from evalframe.core.errors import ConfigError, DataError
from evalframe.core.types import Document, GoldenSet


def test_a_list_of_dicts_is_a_golden_set_with_grades_negatives_and_slices() -> None:
    golden = golden_from(
        [
            {"id": "q1", "text": "cat", "relevant": ["d1", "d2"], "difficulty": "easy"},
            {"id": 2, "query": "dog", "relevant": {"d3": 2, "d4": 0}},
            {"id": "q3", "question": "none", "relevant": [], "metadata": {"kind": "neg"}},
        ]
    )
    assert isinstance(golden, GoldenSet)
    q1, q2, q3 = golden.queries
    assert (q1.text, q1.judgments, q1.metadata) == (
        "cat",
        {"d1": 1, "d2": 1},
        {"difficulty": "easy"},
    )
    assert (q2.id, q2.text, q2.judgments, q2.relevant) == ("2", "dog", {"d3": 2, "d4": 0}, {"d3"})
    assert q3.is_negative and q3.metadata == {"kind": "neg"}
    # the hash is the content's: the same queries loaded from a file hash the same
    assert golden.content_hash == GoldenSet.build("x", golden.queries).content_hash


@pytest.mark.parametrize(
    ("records", "key", "words"),
    [
        ([{"text": "x", "relevant": []}], "golden[0]", "has no 'id'"),
        ([{"id": "q", "text": "x"}], "golden[0]", "says nothing about relevance"),
        ([{"id": "q", "text": "x", "relevant": "d1"}], "golden[0].relevant", "list of document"),
        ([{"id": "q", "relevant": ["a", "a"]}], "golden[0].relevant", "lists a document twice"),
        (
            [{"id": "q", "relevant": []}, {"id": "q", "relevant": []}],
            "golden[1].id",
            "same id",
        ),
        (["q1"], "golden[0]", "not a record"),
        ([], "golden", "empty"),
    ],
)
def test_a_bad_golden_record_is_a_located_error(records: Any, key: str, words: str) -> None:
    with pytest.raises(DataError) as caught:
        golden_from(records)
    assert caught.value.key == key
    assert words in caught.value.message


def test_a_golden_set_passes_through_and_a_string_is_refused() -> None:
    golden = golden_from([{"id": "q", "relevant": ["d"]}])
    assert golden_from(golden) is golden
    with pytest.raises(ConfigError, match="golden= got a dict"):
        golden_from({"id": "q"})


def test_a_corpus_from_dicts_documents_or_a_mapping() -> None:
    as_dicts = corpus_from([{"id": "d1", "text": "a", "title": "T"}, Document(id="d2", text="b")])
    assert [d.id for d in as_dicts.documents] == ["d1", "d2"]
    assert as_dicts.documents[0].metadata == {"title": "T"}
    as_mapping = corpus_from({"d1": "a", "d2": "b"})
    assert [(d.id, d.text) for d in as_mapping.documents] == [("d1", "a"), ("d2", "b")]
    with pytest.raises(DataError) as caught:
        corpus_from([{"id": "d1"}])
    assert caught.value.key == "corpus[0]"
    with pytest.raises(DataError, match="repeats document id 'd1'"):
        corpus_from([{"id": "d1", "text": "a"}, {"id": "d1", "text": "b"}])


# -- identity ---------------------------------------------------------------------


def _module(tmp_path: Path, name: str, source: str) -> Any:
    """Write ``name.py`` and import it fresh (as a notebook re-runs an edited cell)."""
    (tmp_path / f"{name}.py").write_text(source, encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    try:
        sys.modules.pop(name, None)
        importlib.invalidate_caches()
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(tmp_path))


def test_an_edited_function_has_another_identity(tmp_path: Path) -> None:
    first = _module(tmp_path, "ef_search_a", "def search(q):\n    return ['d1']\n").search
    same = _module(tmp_path, "ef_search_a", "def search(q):\n    return ['d1']\n").search
    # another length: a same-size file rewritten within the second would be imported from
    # its stale .pyc, and then the old code really is what runs
    edited = _module(tmp_path, "ef_search_a", "def search(q):\n    return ['d2', 'd3']\n").search
    assert callable_identity(first) == callable_identity(same)
    assert callable_identity(first).target == "ef_search_a.search"
    assert callable_identity(edited).code != callable_identity(first).code


def test_a_function_without_a_file_is_known_by_its_bytecode() -> None:
    one: dict[str, Any] = {}
    two: dict[str, Any] = {}
    exec("def search(q):\n    return ['d1']\n", one)  # no file, as at a bare interpreter
    exec("def search(q):\n    return ['d1', 'd2']\n", two)
    again: dict[str, Any] = {}
    exec("def search(q):\n    return ['d1']\n", again)
    assert callable_identity(one["search"]).code != callable_identity(two["search"]).code
    assert callable_identity(one["search"]).code == callable_identity(again["search"]).code
    commented: dict[str, Any] = {}
    exec("# a note\n\ndef search(q):\n    # why d1\n    return ['d1']\n", commented)
    assert callable_identity(commented["search"]).code == callable_identity(one["search"]).code


def test_scalar_settings_it_reads_are_in_the_identity_and_mutable_data_is_not() -> None:
    namespace: dict[str, Any] = {"K": 10, "LOG": []}
    exec("def search(q):\n    LOG.append(q)\n    return ['d'] * K\n", namespace)
    fn = namespace["search"]
    before = callable_identity(fn)
    namespace["LOG"].append("a call")  # the function's own record of calls: not a setting
    assert callable_identity(fn) == before
    namespace["K"] = 5  # a setting it reads
    assert callable_identity(fn).state != before.state


def test_an_edited_helper_it_calls_is_an_edit_of_the_function() -> None:
    """A notebook's search() calling its tokenize(): editing tokenize changes the key,
    and so does a setting tokenize reads; a library function it calls is not followed."""
    source = (
        "import json\n"
        "LOWER = True\n"
        "def tokenize(text):\n    return text.lower().split() if LOWER else text.split()\n"
        "def search(q):\n    return json.loads('[]') + tokenize(q)\n"
    )
    one: dict[str, Any] = {"__name__": "notebook"}
    exec(source, one)
    two: dict[str, Any] = {"__name__": "notebook"}
    exec(source.replace("text.lower().split()", "text.casefold().split()"), two)
    first = callable_identity(one["search"])
    assert callable_identity(two["search"]).code != first.code
    one["LOWER"] = False
    assert callable_identity(one["search"]).state != first.state
    assert callable_identity(one["search"]).code == first.code


def test_closure_defaults_and_partial_arguments_count() -> None:
    def make(k: int) -> Any:
        def search(q: str, depth: int = 3) -> list[str]:
            return ["d"] * min(k, depth)

        return search

    assert callable_identity(make(1)).state != callable_identity(make(2)).state
    assert callable_identity(make(1)).code == callable_identity(make(2)).code

    def search(q: str, k: int, boost: float = 1.0) -> list[str]:
        return []

    a = callable_identity(functools.partial(search, boost=2.0))
    b = callable_identity(functools.partial(search, boost=3.0))
    assert a.target.startswith("partial(") and a.state != b.state


class Scorer:
    def __init__(self, k1: float, index: list[str]) -> None:
        self.k1 = k1
        self.index = index

    def retrieve(self, query: str) -> list[str]:
        return self.index


class Edited(Scorer):
    def retrieve(self, query: str) -> list[str]:
        return self.index[:1]


class Named(Scorer):
    def cache_identity(self) -> Any:
        return {"index": "v2"}


def test_an_object_is_its_class_its_scalar_attributes_or_its_cache_identity() -> None:
    a, b = Scorer(1.2, ["d1"]), Scorer(0.9, ["d1"])
    assert callable_identity(a).target.endswith("Scorer()")
    assert callable_identity(a).state != callable_identity(b).state
    assert callable_identity(a) == callable_identity(Scorer(1.2, ["d9"]))  # data: not covered
    assert callable_identity(Edited(1.2, [])).code != callable_identity(a).code
    # cache_identity() replaces the attributes: what it returns is all that counts
    assert callable_identity(Named(1.2, [])) == callable_identity(Named(0.9, ["x"]))
