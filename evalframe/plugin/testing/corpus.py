"""The corpus loader contract: what a cached run relies on when it skips reading the corpus."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest

from evalframe.core.types import Corpus
from evalframe.plugin.protocols import CorpusLoader
from evalframe.plugin.registry import CORPORA, Registry
from evalframe.plugin.testing.base import PluginContract

__all__ = ["CorpusLoaderContract"]


class CorpusLoaderContract(PluginContract):
    """Rules for corpus loaders. Provide a ``loader`` fixture over a corpus of 3+ documents.

    The two optional methods are what let a run answered from the cache
    skip the corpus: ``sources()`` must name every file ``load()`` reads (the
    manifest is kept under their sizes and times), and ``texts(ids)`` must
    give exactly the texts ``load()`` gives those documents (a report reads
    a few documents through it, each checked against the manifest's hash).
    """

    registry: ClassVar[Registry[Any]] = CORPORA

    @pytest.fixture
    def loader(self) -> CorpusLoader:
        pytest.fail(f"{type(self).__name__} must define a `loader` fixture")

    def test_loads_a_corpus_with_unique_string_ids(self, loader: CorpusLoader) -> None:
        assert isinstance(loader, CorpusLoader), self._rule("it must have load()")
        corpus = loader.load()
        assert isinstance(corpus, Corpus), self._rule("load() returns a Corpus")
        ids = [d.id for d in corpus.documents]
        assert len(ids) >= 3, f"{type(self).__name__}: give the loader 3+ documents"
        assert all(isinstance(i, str) for i in ids), self._rule("document ids are strings")
        assert len(set(ids)) == len(ids), self._rule("document ids are unique")

    def test_the_same_files_load_the_same_corpus(self, loader: CorpusLoader) -> None:
        assert loader.load().content_hash == loader.load().content_hash, self._rule(
            "load() is deterministic: the content hash keys the retrieval cache"
        )

    def test_sources_name_existing_files(self, loader: CorpusLoader) -> None:
        sources = getattr(loader, "sources", None)
        if not callable(sources):
            pytest.skip("no sources(): every run reads the corpus")
        paths = [Path(p) for p in sources()]
        assert paths, self._rule("sources() names the files load() reads")
        missing = [str(p) for p in paths if not p.exists()]
        assert not missing, self._rule(f"sources() names files that exist (missing: {missing})")

    def test_texts_are_the_texts_load_gives(self, loader: CorpusLoader) -> None:
        texts = getattr(loader, "texts", None)
        if not callable(texts):
            pytest.skip("no texts(ids): a report reads the whole corpus for a few texts")
        documents = list(loader.load().documents)
        chosen = [documents[0].id, documents[-1].id]
        got = texts([*chosen, "surely-not-a-document-id"])
        want = {d.id: d.text for d in documents if d.id in chosen}
        assert dict(got) == want, self._rule(
            "texts(ids) gives each asked document's text as load() does, and leaves out "
            "ids the corpus lacks"
        )
        assert dict(texts([])) == {}, self._rule("texts([]) is empty")
