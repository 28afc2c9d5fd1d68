"""BM25 over the configured corpus, with an index built once and cached on disk.

Queries are answered in batches: bm25s tokenises a whole chunk of queries in
one call and scores it in one ``retrieve`` call, which is what makes it fast
(tokenising one query at a time costs more than scoring it). The index is
loaded on first use, so a run answered wholly from the retrieval cache never
reads it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator

from evalframe.core.errors import ConfigError
from evalframe.core.jsoncodec import dumps_line, loads
from evalframe.core.progress import step
from evalframe.core.store import FileEntryStore, cache_folder
from evalframe.core.types import Corpus, Ranking, content_hash
from evalframe.plugin.protocols import (
    NOT_IN_CACHE_KEY,
    PluginConfig,
    PluginContext,
    Query,
    in_cache_key,
)
from evalframe.plugin.registry import retriever

INDEX_FORMAT = 1  # bump when the cached layout changes, to invalidate old indexes
TOKENS_FORMAT = 1  # likewise for the tokenised corpus shared by every k1/b/method
TOKENS_NAMESPACE = "bm25-tokens"
#: The stop-word list names bm25s knows (``bm25s.tokenization._infer_stopwords``, 0.3);
#: any other name makes bm25s raise at indexing time, so the config refuses it first.
STOPWORD_LISTS = (
    "en", "english", "en_plus", "english_plus", "da", "danish", "de", "german",
    "es", "spanish", "fr", "french", "it", "italian", "ko", "korean", "nl", "dutch",
    "no", "norwegian", "pt", "portuguese", "ru", "russian", "sv", "swedish",
    "tr", "turkish", "zh", "chinese",
)  # fmt: skip
#: The largest k1: the term-frequency saturation is reached long before (typical values
#: are 0.5 to 3), and far beyond it the scores overflow and every ranking comes back empty.
MAX_K1 = 100.0


class BM25Config(PluginConfig):
    """Sparse BM25 parameters and text processing."""

    k1: float = Field(
        1.2,
        gt=0,
        le=MAX_K1,
        description="term-frequency saturation, above 0 and at most 100 (typically 0.5 to 3)",
    )
    b: float = Field(
        0.75, ge=0, le=1, description="document-length normalisation, from 0 (none) to 1 (full)"
    )
    method: Literal["robertson", "lucene", "atire", "bm25l", "bm25+"] = Field(
        "lucene", description="BM25 variant (bm25s naming)"
    )
    stemmer: str | None = Field("english", description="Snowball stemmer language, or null")
    stopwords: str | list[str] | None = Field(
        "en",
        description="stopword list name ('en', 'de', ... as bm25s names them), an explicit "
        "list of words, or null",
    )
    threads: int = Field(
        0,
        ge=0,
        description="threads that score a batch of queries (bm25s n_threads); 0: one per CPU "
        "this process may use. The rankings are the same whatever the number",
        json_schema_extra=NOT_IN_CACHE_KEY,
    )

    @field_validator("stopwords")
    @classmethod
    def _known_list(cls, value: str | list[str] | None) -> str | list[str] | None:
        if isinstance(value, str) and value not in STOPWORD_LISTS:
            raise ValueError(
                f"unknown stopword list {value!r}: give one of {', '.join(STOPWORD_LISTS)}, "
                "a list of words ([the, a, of]), or null for none"
            )
        return value


def _index_key(corpus: Corpus, config: BM25Config) -> str:
    return content_hash(
        {
            "format": INDEX_FORMAT,
            "corpus": corpus.content_hash,
            # settings that cannot change the index (threads) stay out of its key
            "config": {k: v for k, v in config.model_dump().items() if in_cache_key(BM25Config, k)},
            # from the metadata: importing bm25s (and scipy) costs a second a run
            # answered from the cache never needs
            "bm25s": metadata.version("bm25s"),
        }
    )


def _tokens_key(corpus: Corpus, config: BM25Config) -> str:
    """What the tokenised corpus depends on: the corpus, stop words, stemmer and bm25s."""
    import bm25s

    return content_hash(
        {
            "format": TOKENS_FORMAT,
            "corpus": corpus.content_hash,
            "stopwords": config.stopwords,
            "stemmer": config.stemmer,
            "bm25s": bm25s.__version__,
        }
    )


def _usable_cpus() -> int:
    """The CPUs this process may run on (its affinity, where the OS says; else all)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else (os.cpu_count() or 1)


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
        self.config = config
        self.corpus = context.corpus
        self._key = context.config_key or "retriever"  # retriever.retrievers.<name> in fusion
        self._stemmer = self._make_stemmer()
        self.cache_root = Path(context.cache_dir)
        self.index_dir = self.cache_root / "bm25" / _index_key(self.corpus, config)
        self.built = False
        self.tokens_cached = False  # True when the index was built from cached tokens
        self._index: tuple[Any, list[str]] | None = None

    @property
    def _bm25s(self) -> Any:
        import bm25s  # heavy (scipy): imported when an index is needed, never at module top

        # bm25s logs index building at DEBUG on its own handler; keep the report clean.
        logging.getLogger("bm25s").setLevel(logging.WARNING)
        return bm25s

    @property
    def index(self) -> tuple[Any, list[str]]:
        """The bm25s model and the doc id of each of its rows, loaded or built on first use."""
        if self._index is None:
            self._index = self._load_or_build()
        return self._index

    def _threads(self, queries: int) -> int:
        """bm25s's ``n_threads`` for a batch: 0 (its own loop, no pool) for one thread.

        The top-k selection (``argpartition`` over every document's score) runs
        in NumPy without the GIL, so threads use the cores; each query is
        scored on its own and ``map`` keeps their order, so the rankings do not
        depend on the number.
        """
        wanted = self.config.threads or _usable_cpus()
        wanted = min(wanted, queries)
        return wanted if wanted > 1 else 0

    def _make_stemmer(self) -> Any:
        if self.config.stemmer is None:
            return None
        import Stemmer

        try:
            return Stemmer.Stemmer(self.config.stemmer)
        except KeyError:
            raise ConfigError(
                f"unknown stemmer language {self.config.stemmer!r}",
                key=f"{self._key}.stemmer",
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

    def _corpus_tokens(self) -> Any:
        """The corpus tokenised, from the shared cache when any job tokenised it before.

        The index depends on k1, b and the method; the tokens only on the corpus and
        the text processing. So a k1 × b sweep tokenises once, whatever launcher runs
        its jobs: the entry is a content-addressed file in the cache folder, written
        atomically, keyed by what the tokens are made from (:func:`_tokens_key`).
        """
        store = FileEntryStore(self.cache_root, TOKENS_NAMESPACE)
        key = _tokens_key(self.corpus, self.config)
        text = store.get(key)
        if text is not None:
            try:
                data = loads(text)
                self.tokens_cached = True
                return self._bm25s.tokenization.Tokenized(ids=data["ids"], vocab=data["vocab"])
            except (ValueError, KeyError, TypeError):
                pass  # unreadable: tokenise again and overwrite
        tokens = self._tokenize([d.text for d in self.corpus.documents], return_ids=True)
        # stored before indexing: BM25.index adds an empty token to the vocabulary in place
        # orjson: 100k token lists are ~1 s with the json module, ~0.1 s this way
        store.put(key, dumps_line({"ids": tokens.ids, "vocab": tokens.vocab}))
        return tokens

    def _load_or_build(self) -> tuple[Any, list[str]]:
        ids_file = self.index_dir / "doc_ids.json"
        docs = self.corpus.documents
        if ids_file.is_file():
            with step(f"bm25: loading the index of {len(docs):,} documents"):
                model = self._bm25s.BM25.load(str(self.index_dir))
                return model, json.loads(ids_file.read_text(encoding="utf-8"))
        ids = [d.id for d in docs]
        # a cache that cannot keep the index is said now (exit 2), not after indexing
        cache_folder(self.index_dir.parent, self.cache_root)
        with step(f"bm25: indexing {len(docs):,} documents"):
            tokens = self._corpus_tokens()
            model = self._bm25s.BM25(k1=self.config.k1, b=self.config.b, method=self.config.method)
            model.index(tokens, show_progress=False)
            # Build into a temp folder and rename: a killed run or a parallel sweep
            # job never sees a half-written index.
            cache_folder(self.index_dir.parent, self.cache_root)
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
        return self.retrieve_batch([query], k)[0]

    def retrieve_batch(self, queries: Sequence[Query], k: int) -> list[Ranking]:
        """One tokenise call and one bm25s ``retrieve`` call for all ``queries``."""
        model, ids = self.index
        depth = min(k, len(ids))
        if not queries or depth <= 0:
            return [Ranking(query_id=q.id) for q in queries]
        tokens = self._tokenize([q.text for q in queries], return_ids=False)
        docs, scores = model.retrieve(
            tokens, k=depth, show_progress=False, n_threads=self._threads(len(queries))
        )
        rankings = []
        for query, row, row_scores in zip(queries, docs.tolist(), scores.tolist(), strict=True):
            # bm25s pads with zero-score documents; a document that shares no term
            # with the query is not a match, so it is not returned.
            kept = [i for i, s in enumerate(row_scores) if s > 0]
            rankings.append(
                Ranking(
                    query_id=query.id,
                    doc_ids=tuple(ids[row[i]] for i in kept),
                    scores=tuple(row_scores[i] for i in kept),
                )
            )
        return rankings
