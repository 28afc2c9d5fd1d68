"""The dataset loader contract: what scoring, slicing and the run folder rely on."""

from __future__ import annotations

import json
from typing import Any, ClassVar

import pytest

from evalframe.core.types import GoldenSet
from evalframe.plugin.protocols import DatasetLoader
from evalframe.plugin.registry import DATASETS, Registry
from evalframe.plugin.testing.base import PluginContract

__all__ = ["DatasetLoaderContract"]


class DatasetLoaderContract(PluginContract):
    """Rules for golden-set loaders. Provide a ``loader`` fixture over 2+ queries.

    The pipeline trusts what ``load()`` returns: a loader that builds its
    queries without validation (``model_construct``, for speed) must still give
    unique ids and whole-number labels, or the numbers change without a word.
    Metadata is written into every run's ``per_query.jsonl`` and slices
    group by it, so it must be JSON. ``id_normaliser()``, when the loader has
    it, is applied to gold and retrieved ids alike, so applying it twice must
    change nothing.
    """

    registry: ClassVar[Registry[Any]] = DATASETS

    @pytest.fixture
    def loader(self) -> DatasetLoader:
        pytest.fail(f"{type(self).__name__} must define a `loader` fixture")

    def _golden(self, loader: DatasetLoader) -> GoldenSet:
        assert isinstance(loader, DatasetLoader), self._rule("it must have load()")
        golden = loader.load()
        assert isinstance(golden, GoldenSet), self._rule(
            f"load() returns a GoldenSet (got {type(golden).__name__})"
        )
        return golden

    def test_loads_a_golden_set_with_unique_string_ids(self, loader: DatasetLoader) -> None:
        golden = self._golden(loader)
        ids = [q.id for q in golden.queries]
        assert len(ids) >= 2, f"{type(self).__name__}: give the loader 2+ queries"
        assert all(type(i) is str and i for i in ids), self._rule("query ids are non-empty strings")
        twice = sorted({i for i in ids if ids.count(i) > 1})
        assert not twice, self._rule(f"query ids are unique (repeated: {twice[:5]})")
        assert all(isinstance(q.text, str) for q in golden.queries), self._rule(
            "query texts are strings"
        )

    def test_judgments_are_whole_number_labels_of_string_ids(self, loader: DatasetLoader) -> None:
        for q in self._golden(loader).queries:
            for doc, label in q.judgments.items():
                assert type(doc) is str, self._rule(
                    f"judged document ids are strings (query {q.id!r}: {doc!r})"
                )
                assert type(label) is int, self._rule(
                    f"labels are whole numbers, not {type(label).__name__} "
                    f"(query {q.id!r}, document {doc!r}: {label!r})"
                )

    def test_metadata_is_json(self, loader: DatasetLoader) -> None:
        for q in self._golden(loader).queries:
            try:
                json.dumps(q.metadata, allow_nan=False)
            except (TypeError, ValueError) as exc:
                pytest.fail(self._rule(f"query metadata is JSON (query {q.id!r}: {exc})"))

    def test_the_same_files_load_the_same_golden_set(self, loader: DatasetLoader) -> None:
        first, second = self._golden(loader), self._golden(loader)
        assert first.content_hash == second.content_hash, self._rule(
            "load() is deterministic: the golden set's hash names it in every run"
        )
        assert [q.id for q in first.queries] == [q.id for q in second.queries], self._rule(
            "load() gives the queries in the same order every time"
        )

    def test_id_normaliser_is_none_or_changes_an_id_once(self, loader: DatasetLoader) -> None:
        make = getattr(loader, "id_normaliser", None)
        if make is None:
            pytest.skip("no id_normaliser(): retrieved ids are compared as given")
        normalise = make()
        if normalise is None:
            return
        assert callable(normalise), self._rule("id_normaliser() returns a function or None")
        for q in self._golden(loader).queries:
            for doc in q.judgments:
                once = normalise(doc)
                assert type(once) is str, self._rule("the id normaliser returns strings")
                assert normalise(once) == once, self._rule(
                    f"the id normaliser changes an id once ({doc!r} -> {once!r} -> "
                    f"{normalise(once)!r}): the pipeline applies it to ids it may have "
                    "normalised already"
                )
