"""The data model: golden queries and sets, corpora, rankings and runs.

Every model is a frozen pydantic model so a value that has been validated once
cannot change under the pipeline's feet. Ids are always strings: golden sets in
the wild (B.O.B's ``expected_chunks: [12, 13]``, TREC qrels) mix integer and
string ids, and comparing ``12`` with ``"12"`` silently scores zero, so integer
ids are normalised at the boundary instead.

The data model is one module because its models hold one another (a run its
rankings, a golden set its queries, a corpus its documents) and share one set
of id rules; split, every part would import the others.
"""

from __future__ import annotations

import hashlib
import json
import threading
import unicodedata
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, overload

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PrivateAttr, model_validator

from evalframe.core.jsoncodec import dumps_compact

__all__ = [
    "Corpus",
    "DeferredDocuments",
    "Document",
    "GoldenQuery",
    "GoldenSet",
    "Id",
    "Ranking",
    "Run",
    "RunRows",
    "content_hash",
    "document_hash",
    "is_plain_id",
    "normalise_id",
]


def normalise_id(value: Any) -> Any:
    """An id as evalframe keeps it: integers as decimal strings, surrounding space dropped.

    The identifier policy (docs/golden-sets.md, "Identifiers"): ``"q02 "`` and
    ``"q02"`` are one id, so surrounding ASCII whitespace is not part of an id.
    ASCII whitespace or a control character *inside* an id is refused: a TREC file
    (the run.trec every run writes, the qrels a team shares) splits on it, so
    such an id could never be read back. Ids are otherwise compared exactly,
    code point by code point (no Unicode normalisation: ``ａ`` is not ``a``);
    loaders warn about compatibility characters instead of changing ids.

    ``bool`` is rejected on purpose: ``True`` is an ``int`` in Python but never
    a meaningful id, and accepting it would hide a broken record.
    """
    if isinstance(value, bool):
        return value  # pydantic's str check then reports it with its location
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        if is_plain_id(value):
            return value
        value = value.strip(_ASCII_SPACE)
        if any(unicodedata.category(ch) == "Cs" for ch in value):  # "\ud800" from JSON
            raise ValueError(
                f"the id {value!r} holds half of a UTF-16 surrogate pair, which is no "
                "character and cannot be written as UTF-8 (a tool cut an emoji in two)"
            )
        if any(unicodedata.category(ch) == "Cc" or ch == " " for ch in value):
            raise ValueError(
                f"the id {value!r} contains whitespace or a control character, which a TREC "
                "file cannot hold (ids are single words)"
            )
    return value


def is_plain_id(value: str) -> bool:
    """Whether a string is already an id as :func:`normalise_id` keeps it, so it needs no
    further look: not empty, no space, nothing unprintable (ASCII whitespace other than
    the space, and every control character, is unprintable). Anything else, even an id
    that is fine after stripping, goes through :func:`normalise_id`'s full rules."""
    return bool(value) and " " not in value and value.isprintable()


#: What C's isspace() and so TREC files split on (space, \t, \n, \v, \f, \r); other
#: Unicode whitespace (a no-break space) is data in an id, as in trec_eval.
_ASCII_SPACE = " \t\n\v\f\r"


Id = Annotated[str, BeforeValidator(normalise_id), Field(min_length=1)]


def _plain_strings(values: Collection[Any]) -> bool:
    """Whether every value is a string that :func:`normalise_id` would keep as it is (no
    space, nothing unprintable): one check of their joined text, not a call per id."""
    if not all(type(v) is str for v in values):
        return False
    joined = "".join(values)
    return " " not in joined and joined.isprintable()


def _normalise_ids(value: Any) -> Any:
    """:func:`normalise_id` over a sequence (a ranking's hundreds of ids), in one call."""
    if not isinstance(value, (list, tuple)) or _plain_strings(value):
        return value
    return [normalise_id(v) for v in value]


def _normalise_keys(value: Any) -> Any:
    """:func:`normalise_id` over a mapping's keys (a query's judgments, a run's 10k
    rankings), in one call; an id that cannot be one is refused with its value."""
    if not isinstance(value, dict) or _plain_strings(value):
        return value
    return {normalise_id(k): v for k, v in value.items()}


_IdText = Annotated[str, Field(min_length=1)]
#: Judgments, doc id -> integer label, and many ids at once (a ranking's): the same
#: rules as :data:`Id`, checked by pydantic-core per element rather than by a
#: Python call per element (6x faster for a ranking of 100; a run of 10k queries
#: builds 10k of them, a golden set of 10k queries has tens of thousands of ids).
#: A relevance label: a whole number in a C int's range (records.LABEL_MIN..LABEL_MAX,
#: what every loader checks), so that one given in Python (``10**30``) is refused here
#: too, not overflowed in the metric engine.
_Label = Annotated[int, Field(ge=-(2**31), le=2**31 - 1)]
Judgments = Annotated[dict[_IdText, _Label], BeforeValidator(_normalise_keys)]
Ids = Annotated[tuple[_IdText, ...], BeforeValidator(_normalise_ids)]


def content_hash(payload: Any) -> str:
    """SHA-256 of canonical JSON (sorted keys, no whitespace), as 16 hex digits.

    The hash identifies *content*, not the file it came from: two loaders that
    read the same queries from different formats give the same hash.
    """
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class GoldenQuery(_Frozen):
    """One question with its judged documents.

    ``judgments`` maps doc id to an integer label. Labels > 0 are relevant
    (at the default threshold); labels <= 0 are judged but not relevant. An
    empty mapping is a *negative example*: no document answers the question.
    ``metadata`` holds free fields used for slicing (difficulty, category, ...).
    """

    id: Id
    text: str
    judgments: Judgments = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)
    views: dict[str, Judgments] = Field(
        default_factory=dict,
        description="other judgments of the same query, e.g. {'files': {...}} beside entities",
    )

    @classmethod
    def checked(
        cls, id: str, text: str, judgments: dict[str, int], metadata: dict[str, Any]
    ) -> GoldenQuery:
        """The query pydantic would build from these fields, built without its look.

        Only for fields the caller has checked (an id in normal form, see
        :func:`is_plain_id`; judgments of such ids to whole-number labels): a
        loader's fast path for the usual record. ``model_construct`` would look at
        every field's default each time (its ``default_factory`` signature too),
        which costs more than validating; this sets what validation sets, and
        tests/core/test_types.py holds the two to the same result.
        """
        query = cls.__new__(cls)
        put = object.__setattr__
        put(
            query,
            "__dict__",
            {"id": id, "text": text, "judgments": judgments, "metadata": metadata, "views": {}},
        )
        put(query, "__pydantic_fields_set__", {"id", "text", "judgments", "metadata"})
        put(query, "__pydantic_extra__", None)
        put(query, "__pydantic_private__", None)
        return query

    @property
    def relevant(self) -> frozenset[str]:
        """Doc ids with a label above zero."""
        return frozenset(d for d, label in self.judgments.items() if label > 0)

    @property
    def is_negative(self) -> bool:
        """True when no judged document is relevant (a negative example)."""
        return all(label <= 0 for label in self.judgments.values())

    def canonical(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "text": self.text,
            "judgments": dict(sorted(self.judgments.items())),
            "metadata": self.metadata,
        }
        if self.views:  # only when present, so sets without views keep their hash
            out["views"] = {v: dict(sorted(j.items())) for v, j in sorted(self.views.items())}
        return out


class GoldenSet(_Frozen):
    """A named, hashed collection of golden queries.

    Build one with :meth:`build`, which computes the content hash; the hash
    covers the queries only, so moving a file does not change it.
    """

    name: str
    queries: tuple[GoldenQuery, ...]
    provenance: dict[str, Any] = Field(default_factory=dict)
    projections: dict[str, str] = Field(
        default_factory=dict,
        description="view name -> regex mapping a retrieved id into the view (group 1)",
    )
    content_hash: str

    @model_validator(mode="after")
    def _unique_ids(self) -> GoldenSet:
        seen: set[str] = set()
        for q in self.queries:
            if q.id in seen:
                raise ValueError(f"golden set {self.name!r}: query id {q.id!r} appears twice")
            seen.add(q.id)
        return self

    @classmethod
    def build(
        cls,
        name: str,
        queries: Iterable[GoldenQuery],
        provenance: Mapping[str, Any] | None = None,
        projections: Mapping[str, str] | None = None,
    ) -> GoldenSet:
        """A golden set with its content hash (queries, and views' projections if any)."""
        qs = tuple(queries)
        payload: Any = [q.canonical() for q in sorted(qs, key=lambda q: q.id)]
        if projections:
            payload = {"queries": payload, "projections": dict(sorted(projections.items()))}
        return cls(
            name=name,
            queries=qs,
            provenance=dict(provenance or {}),
            projections=dict(projections or {}),
            content_hash=content_hash(payload),
        )

    def __len__(self) -> int:
        return len(self.queries)

    def __iter__(self) -> Iterator[GoldenQuery]:  # type: ignore[override]  # iterate queries, not fields
        return iter(self.queries)

    def by_id(self) -> dict[str, GoldenQuery]:
        return {q.id: q for q in self.queries}

    #: Metadata fields that describe a query rather than group it.
    NOT_SLICES: ClassVar[frozenset[str]] = frozenset(
        {"notes", "expected_answer", "answer", "rationale", "source"}
    )
    #: A field with more distinct values than this is a label, not a slice.
    MAX_SLICE_VALUES: ClassVar[int] = 20

    def slice_fields(self) -> list[str]:
        """Metadata fields that group queries, in first-seen order.

        A field qualifies when its values are scalars, it is not free text
        (``notes``, ``expected_answer``, ...), and it has at most
        :attr:`MAX_SLICE_VALUES` distinct values, fewer than the number of
        queries: a field unique per query would give tables of n = 1.
        """
        values: dict[str, set[str]] = {}
        for q in self.queries:
            for key, value in q.metadata.items():
                if key in self.NOT_SLICES or not isinstance(value, (str, int, float, bool)):
                    continue
                values.setdefault(key, set()).add(str(value))
        limit = min(self.MAX_SLICE_VALUES, max(len(self.queries) - 1, 1))
        return [k for k, seen in values.items() if len(seen) <= limit]


class Document(_Frozen):
    """One retrievable unit: a passage, a chunk, a code entity, a tool."""

    id: Id
    text: str
    metadata: dict[str, Any] = Field(default_factory=dict)


def document_hash(text: str) -> str:
    """A document's entry in a corpus manifest: SHA-256 of its text, 12 hex digits.

    The text is what a retriever indexes (loaders fold titles into it), the same
    input as the corpus's content hash. 48 bits make it all but impossible for a
    changed document to keep its hash, while keeping the manifest small.
    """
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def _documents_hash(docs: Sequence[Document], chunk: int = 2048) -> str:
    """``content_hash([[d.id, d.text] for d in docs])``, without the whole JSON text at once.

    A JSON list is ``[`` + its items joined by ``,`` + ``]``, so hashing the
    items a chunk at a time gives the same digest; a 100k-document corpus
    then never holds a second copy of its text (twice, as str and as UTF-8).
    """
    digest = hashlib.sha256(b"[")
    for start in range(0, len(docs), chunk):
        part = [[d.id, d.text] for d in docs[start : start + chunk]]
        if start:
            digest.update(b",")
        digest.update(dumps_compact(part)[1:-1])
    digest.update(b"]")
    return digest.hexdigest()[:16]


class Corpus(_Frozen):
    """The documents a retriever searches, with a content hash for cache keys."""

    name: str
    documents: tuple[Document, ...]
    content_hash: str

    @classmethod
    def build(cls, name: str, documents: Iterable[Document]) -> Corpus:
        docs = tuple(documents)
        return cls(name=name, documents=docs, content_hash=_documents_hash(docs))

    @classmethod
    def deferred(
        cls,
        name: str,
        digest: str,
        hashes: Mapping[str, str],
        load: Callable[[], Corpus],
        documents: tuple[Document, ...] | None = None,
        texts: Callable[[Collection[str]], Mapping[str, str]] | None = None,
    ) -> Corpus:
        """A corpus known by its name, hash and documents' hashes; texts read on first use.

        For a run answered from caches: the keys need the hash, the dataset's
        checks the ids and the run folder's manifest each document's
        :func:`document_hash` (``hashes``, id -> hash, in corpus order), and
        none of them needs 100k documents built. ``load`` must give the same
        content (the caller checks its hash). ``documents``, when already read,
        are used as they are (and the hashes spare computing them again).
        ``texts`` (a loader's optional ``texts(ids)``, wrapped to check each text
        against ``hashes``) reads a few documents' texts without building the
        corpus (see :meth:`texts`).
        """
        deferred = DeferredDocuments(digest, hashes, load, documents, texts)
        lazy: Any = deferred  # reads as a tuple would
        return cls.model_construct(name=name, documents=lazy, content_hash=digest)

    def __len__(self) -> int:
        return len(self.documents)

    def ids(self) -> frozenset[str]:
        known = getattr(self.documents, "known_ids", None)
        if known is not None:
            return frozenset(known)
        return frozenset(d.id for d in self.documents)

    def judged_as(self, normalise: Callable[[str], str] | None) -> Corpus:
        """This corpus under the ids the run is judged by: each id through ``normalise``.

        A dataset that normalises ids (Galaxy's ``strip_version``) judges and
        scores ``tool`` where the catalogue lists ``tool/1.2``; the analyses and
        the page look documents up by those ids, so they read this view, while
        retrievers index (and the manifest records) the corpus as loaded. The
        first document of each normalised id stands for it, in corpus order.
        The view has its own content hash (what is kept per document under the
        hash, such as terms, is then kept per view); a deferred corpus stays
        deferred. Itself when ``normalise`` is None or changes no id.
        """
        if normalise is None:
            return self
        deferred = self.documents if isinstance(self.documents, DeferredDocuments) else None
        order = deferred.known_ids if deferred is not None else [d.id for d in self.documents]
        first: dict[str, str] = {}  # normalised id -> the original that stands for it
        for ident in order:
            first.setdefault(normalise(ident), ident)
        if len(first) == len(order) and all(k == v for k, v in first.items()):
            return self
        digest = content_hash([self.content_hash, "judged as", sorted(first.items())])
        if deferred is None:
            by_id = {d.id: d for d in self.documents}
            docs = tuple(
                Document.model_construct(id=n, text=by_id[o].text, metadata=by_id[o].metadata)
                for n, o in first.items()
            )
            return Corpus.model_construct(name=self.name, documents=docs, content_hash=digest)

        def load() -> Corpus:
            docs = deferred._documents()  # the loaded corpus, read once, then its view
            loaded = Corpus.model_construct(
                name=self.name, documents=docs, content_hash=self.content_hash
            )
            return loaded.judged_as(normalise)

        def texts(ids: Collection[str]) -> dict[str, str]:
            originals = {first[i]: i for i in ids if i in first}
            return {originals[o]: t for o, t in self.texts(originals).items()}

        hashes = {n: deferred.known_hashes[o] for n, o in first.items()}
        return Corpus.deferred(self.name, digest, hashes, load, texts=texts)

    def texts(self, ids: Iterable[str]) -> dict[str, str]:
        """``{id: text}`` of the documents among ``ids`` (ids the corpus lacks left out).

        A report lists a few thousand documents of a 100k corpus: a deferred
        corpus whose loader can read chosen documents (``texts(ids)``) reads
        only those, each checked against the manifest's hash of its text,
        instead of building every document.
        """
        wanted = set(ids)
        if isinstance(self.documents, DeferredDocuments):
            return self.documents.texts(wanted)
        return {d.id: d.text for d in self.documents if d.id in wanted}


class DeferredDocuments(Sequence[Document]):
    """A corpus's documents, read when first used (see :meth:`Corpus.deferred`)."""

    def __init__(
        self,
        digest: str,
        hashes: Mapping[str, str],
        load: Callable[[], Corpus],
        documents: tuple[Document, ...] | None = None,
        texts: Callable[[Collection[str]], Mapping[str, str]] | None = None,
    ) -> None:
        self.digest = digest
        self.known_hashes = dict(hashes)
        self.known_ids = tuple(self.known_hashes)
        self._load = load
        self._read_texts = texts
        self._docs: tuple[Document, ...] | None = documents
        self._lock = threading.Lock()

    def texts(self, ids: Collection[str]) -> dict[str, str]:
        """:meth:`Corpus.texts`: from the documents when they are read (or nothing can
        read a few), else only these (the caller's ``texts`` checks them)."""
        wanted = [d for d in ids if d in self.known_hashes]
        if self._docs is not None or self._read_texts is None:
            chosen = set(wanted)
            return {d.id: d.text for d in self._documents() if d.id in chosen}
        found = self._read_texts(wanted)
        return {d: found[d] for d in wanted if d in found}

    def _documents(self) -> tuple[Document, ...]:
        with self._lock:
            if self._docs is None:
                self._docs = self._load().documents
            return self._docs

    def __len__(self) -> int:
        return len(self.known_ids)

    def __iter__(self) -> Iterator[Document]:
        return iter(self._documents())

    @overload
    def __getitem__(self, index: int) -> Document: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Document, ...]: ...

    def __getitem__(self, index: int | slice) -> Document | tuple[Document, ...]:
        return self._documents()[index]


class Ranking(_Frozen):
    """What a retriever returned for one query, best first.

    ``doc_ids`` and ``scores`` are parallel tuples rather than a list of pairs:
    a run of 100k queries x 100 docs would otherwise be ten million objects.
    The optional fields carry what RAG and recommender systems also report.
    """

    query_id: Id
    doc_ids: Ids = ()
    scores: tuple[float, ...] = ()
    confidence: float | None = None
    answer: str | None = None
    latency_ms: float | None = None
    tokens: int | None = None
    tool_calls: int | None = None

    @model_validator(mode="after")
    def _parallel(self) -> Ranking:
        if len(self.doc_ids) != len(self.scores):
            raise ValueError(
                f"ranking for query {self.query_id!r}: {len(self.doc_ids)} doc ids but "
                f"{len(self.scores)} scores; give one score per doc id"
            )
        return self

    @classmethod
    def from_pairs(cls, query_id: str, pairs: Iterable[tuple[str, float]], **extra: Any) -> Ranking:
        items = list(pairs)
        return cls(
            query_id=query_id,
            doc_ids=tuple(d for d, _ in items),
            scores=tuple(float(s) for _, s in items),
            **extra,
        )

    def pairs(self) -> list[tuple[str, float]]:
        return list(zip(self.doc_ids, self.scores, strict=True))

    def __len__(self) -> int:
        return len(self.doc_ids)


@dataclass(frozen=True)
class RunRows:
    """A run's rankings as flat rows: the form the engine and the per-query records read.

    ``query_ids`` are the run's queries in its order; ``counts[i]`` rows belong
    to ``query_ids[i]``, in the order its ranking gives them. ``doc_ids`` (a
    NumPy string array: unicode, or bytes when every id is ASCII), ``scores``
    (float64) and ``counts`` (int64) are NumPy arrays, typed ``Any`` here so
    that the data model imports no NumPy.
    """

    query_ids: tuple[str, ...]
    counts: Any
    doc_ids: Any
    scores: Any


class Run(_Frozen):
    """Rankings keyed by query id, plus free metadata (system name, config, ...)."""

    rankings: Annotated[dict[_IdText, Ranking], BeforeValidator(_normalise_keys)]
    metadata: dict[str, Any] = Field(default_factory=dict)
    # The same rankings as flat rows, once something has made them (see :meth:`rows`),
    # with the rankings mapping they were made from: a copy given other rankings
    # (``model_copy(update=...)`` keeps private attributes) must not use them.
    _rows: tuple[dict[str, Ranking], RunRows] | None = PrivateAttr(default=None)

    def rows(self) -> RunRows | None:
        """The rankings as flat rows, when already made (a run file's reader makes them
        as it reads; :func:`evalframe.metrics.columns.run_rows` makes and keeps them)."""
        kept = self._rows
        if kept is None or kept[0] is not self.rankings:
            return None
        return kept[1]

    def keep_rows(self, rows: RunRows) -> None:
        """Keep ``rows``, which must hold exactly :attr:`rankings` (the caller's promise:
        they are derived data, so a run stays frozen; a 10k x 100 run read from a file
        is not flattened again)."""
        if len(rows.query_ids) != len(self.rankings):
            raise ValueError(
                f"run rows for {len(rows.query_ids)} queries do not match a run of "
                f"{len(self.rankings)} rankings"
            )
        self._rows = (self.rankings, rows)

    def release_rows(self) -> None:
        """Let the kept rows go (30 MB at 10k rankings of 100) once their readers are done."""
        self._rows = None

    def __eq__(self, other: object) -> bool:
        # the kept rows are derived data: two runs of equal rankings are equal with or
        # without them (pydantic's own equality compares private attributes too)
        if not isinstance(other, BaseModel):
            return NotImplemented
        return type(other) is type(self) and self.__dict__ == other.__dict__

    @model_validator(mode="after")
    def _keys_match(self) -> Run:
        for qid, ranking in self.rankings.items():
            if ranking.query_id != qid:
                raise ValueError(
                    f"run: the ranking stored under query {qid!r} is for query "
                    f"{ranking.query_id!r}; key each ranking by its own query_id"
                )
        return self

    def __len__(self) -> int:
        return len(self.rankings)
