"""Checks every loader makes on every record, with one wording everywhere.

A loader wraps each record's location in :class:`At` and asks it for the
fields it needs; each failure is a :class:`~evalframe.core.errors.DataError` that
names the file and line, what was expected and what was found. After the
records, :func:`warn_ids_not_in_corpus` says (once) which judged ids the
configured corpus cannot return.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalframe.core.errors import DataError
from evalframe.core.messages import shown, warn
from evalframe.core.types import Corpus, GoldenQuery, Run

__all__ = [
    "At",
    "UniqueIds",
    "field_names",
    "is_id",
    "warn_ids_not_in_corpus",
    "warn_if_nothing_matches",
]


def field_names(record: Any) -> str:
    """A record's field names as written, for an error's ``got``."""
    if not isinstance(record, dict):
        return type(record).__name__
    return ", ".join(repr(k) for k in record) or "(none)"


@dataclass(frozen=True)
class At:
    """Where a record is: a file and a 1-based line (None where a format cannot say)."""

    path: Path
    line: int | None

    def error(self, message: str, **details: Any) -> DataError:
        return DataError(message, path=self.path, line=self.line, **details)

    def __str__(self) -> str:
        return f"{self.path}:{self.line}" if self.line is not None else str(self.path)

    def mapping(self, record: Any, what: str = "record", hint: str | None = None) -> dict[str, Any]:
        """The record as a dict, or an error saying it must be a JSON object."""
        if not isinstance(record, dict):
            raise self.error(
                f"a {what} must be a JSON object", got=type(record).__name__, hint=hint
            )
        return record

    def require(
        self, record: dict[str, Any], fields: Iterable[str], hint: str | None = None
    ) -> None:
        needed = list(fields)
        missing = [f for f in needed if f not in record]
        if missing:
            raise self.error(
                f"record has no {', '.join(repr(m) for m in missing)} field",
                expected=f"fields {', '.join(needed)}",
                got=f"fields {', '.join(sorted(record)) or '(none)'}",
                hint=hint,
            )

    def ident(self, value: Any, name: str, hint: str | None = None) -> str:
        """An id field: a non-blank string, or an integer normalised to its string."""
        if not is_id(value):
            raise self.error(
                f"field {name!r} must be a non-empty string or an integer",
                got=repr(value),
                hint=hint,
            )
        return str(value)

    def text(
        self, value: Any, name: str, *, allow_empty: bool = False, hint: str | None = None
    ) -> str:
        if not isinstance(value, str) or (not allow_empty and not value.strip()):
            wanted = "text" if allow_empty else "non-empty text"
            raise self.error(f"field {name!r} must be {wanted}", got=repr(value)[:80], hint=hint)
        return value


def is_id(value: Any) -> bool:
    """A usable id: a string with a non-blank character, or an integer (``bool`` is not one)."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, str) and value.strip() != "")


@dataclass
class UniqueIds:
    """Remembers where each id was first seen, to report a duplicate with both places."""

    what: str = "query id"
    hint: str | None = None
    _first: dict[str, str] = field(default_factory=dict)

    def add(self, ident: str, at: At, *, place: str | None = None) -> None:
        """Record ``ident`` at ``at``; ``place`` names it better where a line is not enough
        (``g.json:2 ([0])``, ``pairs[0], adk.yaml:2``)."""
        first = self._first.get(ident)
        if first is not None:
            raise at.error(
                f"{self.what} {ident!r} is duplicated (first at {first})",
                hint=self.hint or f"give every {self.what.split()[0]} its own id",
            )
        self._first[ident] = place or str(at)


def warn_ids_not_in_corpus(
    queries: Iterable[GoldenQuery],
    corpus: Corpus | None,
    what: str = "judged document",
    *,
    relevant_only: bool = False,
) -> None:
    """One warning listing the judged (or relevant) ids the corpus lacks: no run can return them."""
    if corpus is None:
        return
    known = corpus.ids()
    unknown = sorted(
        {
            d
            for q in queries
            for d in (q.relevant if relevant_only else q.judgments)
            if d not in known
        }
    )
    if unknown:
        warn(
            f"{len(unknown)} {what} id(s) are not in corpus {corpus.name!r} "
            f"and can never be retrieved: {shown(unknown)}"
        )


def warn_if_nothing_matches(golden: Iterable[GoldenQuery], run: Run) -> bool:
    """Warn when not one retrieved id is a judged id of its query (and say so: True).

    Every score is then 0 or undefined, and the cause is nearly always the
    ids, not the system: written differently on the two sides (a version in
    a tool id, ``12`` against ``"012"``, case), or normalised on one side only.
    """
    retrieved = judged = 0
    example: tuple[str, str, str] | None = None
    for q in golden:
        ranking = run.rankings.get(q.id)
        if ranking is None or not ranking.doc_ids or not q.judgments:
            continue
        retrieved += len(ranking.doc_ids)
        judged += 1
        if any(d in q.judgments for d in ranking.doc_ids):
            return False
        if example is None:
            example = (q.id, ranking.doc_ids[0], next(iter(q.judgments)))
    if example is None:
        return False
    qid, got, want = example
    warn(
        f"not one of the {retrieved} document ids retrieved for {judged} judged quer"
        f"{'y' if judged == 1 else 'ies'} is a judged id of its query (query {qid!r}: "
        f"retrieved {got!r}, judged e.g. {want!r}), so every score is 0. This is most likely "
        "an id format or normalisation mismatch, not a bad retriever: write the ids the same "
        "way on both sides, or normalise both sides alike (e.g. the dataset's and the "
        "retriever's normalise settings)"
    )
    return True
