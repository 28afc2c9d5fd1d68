"""BM25 over the configured corpus, with an index built once and cached on disk."""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
import tempfile
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from evalframe.core.errors import ConfigError
from evalframe.core.types import Corpus, Ranking, content_hash
from evalframe.plugin.protocols import PluginConfig, PluginContext, Query
from evalframe.plugin.registry import retriever

INDEX_FORMAT = 1  # bump when the cached layout changes, to invalidate old indexes


class BM25Config(PluginConfig):
    """Sparse BM25 parameters and text processing."""

    k1: float = Field(1.2, gt=0, description="term-frequency saturation")
    b: float = Field(0.75, ge=0, le=1, description="document-length normalisation")
    method: Literal["robertson", "lucene", "atire", "bm25l", "bm25+"] = Field(
        "lucene", description="BM25 variant (bm25s naming)"
    )
    stemmer: str | None = Field("english", description="Snowball stemmer language, or null")
    stopwords: str | list[str] | None = Field(
        "en", description="stopword list name ('en'), an explicit list, or null"
    )


def _index_key(corpus: Corpus, config: BM25Config) -> str:
    import bm25s

    return content_hash(
        {
            "format": INDEX_FORMAT,
            "corpus": corpus.content_hash,
            "config": config.model_dump(),
            "bm25s": bm25s.__version__,
        }
    )


@retriever("bm25", config=BM25Config)
class BM25Retriever:
    """BM25 (bm25s) with an on-disk index keyed by corpus hash and parameters."""

    def __init__(self, config: BM25Config, context: PluginContext) -> None:
        if context.corpus is None:
            raise ConfigError(
                "the bm25 retriever needs a corpus to index, and none is configured",
                key="corpus",
                hint="select one, e.g. corpus=jsonl corpus.path=docs.jsonl",
            )
        import bm25s  # heavy import inside the factory, never at module top

        # bm25s logs index building at DEBUG on its own handler; keep the report clean.
        logging.getLogger("bm25s").setLevel(logging.WARNING)

        self._bm25s = bm25s
        self.config = config
        self.corpus = context.corpus
        self._stemmer = self._make_stemmer()
        self.index_dir = Path(context.cache_dir) / "bm25" / _index_key(self.corpus, config)
        self.built = False
        self._model, self._ids = self._load_or_build()

    def _make_stemmer(self) -> Any:
        if self.config.stemmer is None:
            return None
        import Stemmer

        try:
            return Stemmer.Stemmer(self.config.stemmer)
        except KeyError:
            raise ConfigError(
                f"unknown stemmer language {self.config.stemmer!r}",
                key="retriever.stemmer",
                expected=", ".join(sorted(Stemmer.algorithms())),
            ) from None

    def _tokenize(self, texts: list[str], *, return_ids: bool) -> Any:
        return self._bm25s.tokenize(
            texts,
            stopwords=self.config.stopwords,
            stemmer=self._stemmer,
            return_ids=return_ids,
            show_progress=False,
        )

    def _load_or_build(self) -> tuple[Any, list[str]]:
        ids_file = self.index_dir / "doc_ids.json"
        if ids_file.is_file():
            model = self._bm25s.BM25.load(str(self.index_dir))
            return model, json.loads(ids_file.read_text(encoding="utf-8"))
        ids = [d.id for d in self.corpus.documents]
        tokens = self._tokenize([d.text for d in self.corpus.documents], return_ids=True)
        model = self._bm25s.BM25(k1=self.config.k1, b=self.config.b, method=self.config.method)
        model.index(tokens, show_progress=False)
        # Build into a temp folder and rename: a killed run or a parallel sweep
        # job never sees a half-written index.
        self.index_dir.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=self.index_dir.parent))
        try:
            model.save(str(tmp))
            (tmp / "doc_ids.json").write_text(json.dumps(ids), encoding="utf-8")
            with contextlib.suppress(OSError):  # another process won the race: same index
                tmp.rename(self.index_dir)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        self.built = True
        return model, ids

    def retrieve(self, query: Query, k: int) -> Ranking:
        tokens = self._tokenize([query.text], return_ids=False)
        depth = min(k, len(self._ids))
        docs, scores = self._model.retrieve(tokens, k=depth, show_progress=False)
        # bm25s pads with zero-score documents; a document that shares no term
        # with the query is not a match, so it is not returned.
        pairs = [
            (self._ids[int(d)], float(s)) for d, s in zip(docs[0], scores[0], strict=True) if s > 0
        ]
        return Ranking.from_pairs(query.id, pairs)
