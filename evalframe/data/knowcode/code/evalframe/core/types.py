"""The data model: golden queries and sets, corpora, rankings and runs.

Every model is a frozen pydantic model so a value that has been validated once
cannot change under the pipeline's feet. Ids are always strings: golden sets in
the wild (B.O.B's ``expected_chunks: [12, 13]``, TREC qrels) mix integer and
string ids, and comparing ``12`` with ``"12"`` silently scores zero, so integer
ids are normalised at the boundary instead.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

__all__ = [
    "Corpus",
    "Document",
    "GoldenQuery",
    "GoldenSet",
    "Id",
    "Ranking",
    "Run",
    "content_hash",
    "normalise_id",
]


def normalise_id(value: Any) -> Any:
    """Turn an integer id into its decimal string; leave anything else alone.

    ``bool`` is rejected on purpose: ``True`` is an ``int`` in Python but never
    a meaningful id, and accepting it would hide a broken record.
    """
    if isinstance(value, bool):
        return value  # pydantic's str check then reports it with its location
    if isinstance(value, int):
        return str(value)
    return value


Id = Annotated[str, BeforeValidator(normalise_id), Field(min_length=1)]


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
    judgments: dict[Id, int] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)
    views: dict[str, dict[Id, int]] = Field(
        default_factory=dict,
        description="other judgments of the same query, e.g. {'files': {...}} beside entities",
    )

    @property
    def relevant(self) -> frozenset[str]:
        """Doc ids with a label above zero."""
        return frozenset(d for d, label in self.judgments.items() if label > 0)

    @property
    def is_negative(self) -> bool:
        """True when no judged document is relevant (a negative example)."""
        return not self.relevant

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


class Corpus(_Frozen):
    """The documents a retriever searches, with a content hash for cache keys."""

    name: str
    documents: tuple[Document, ...]
    content_hash: str

    @classmethod
    def build(cls, name: str, documents: Iterable[Document]) -> Corpus:
        docs = tuple(documents)
        digest = content_hash([[d.id, d.text] for d in docs])
        return cls(name=name, documents=docs, content_hash=digest)

    def __len__(self) -> int:
        return len(self.documents)

    def ids(self) -> frozenset[str]:
        return frozenset(d.id for d in self.documents)


class Ranking(_Frozen):
    """What a retriever returned for one query, best first.

    ``doc_ids`` and ``scores`` are parallel tuples rather than a list of pairs:
    a run of 100k queries x 100 docs would otherwise be ten million objects.
    The optional fields carry what RAG and recommender systems also report.
    """

    query_id: Id
    doc_ids: tuple[Id, ...] = ()
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


class Run(_Frozen):
    """Rankings keyed by query id, plus free metadata (system name, config, ...)."""

    rankings: dict[Id, Ranking]
    metadata: dict[str, Any] = Field(default_factory=dict)

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
