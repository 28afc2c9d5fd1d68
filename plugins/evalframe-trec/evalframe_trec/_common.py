"""What the TREC, BEIR and Cranfield loaders share beyond the core's reader.

Judgments gathered with the line of each (a document judged twice names both
lines), the policy for judgments of unknown queries, the policy for topics
without judgments, and the warning about judged ids the corpus lacks. Reading
files, parsing numbers and warnings come from :mod:`evalframe.core.reader`
and :mod:`evalframe.core.messages`.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from evalframe.core.errors import DataError
from evalframe.core.messages import shown, warn
from evalframe.core.types import GoldenQuery

__all__ = [
    "Judgments",
    "UnjudgedPolicy",
    "apply_unjudged_policy",
]

UnjudgedPolicy = Literal["keep", "drop", "error"]


class Judgments:
    """Judgments as they are read: query -> doc -> label, with the line of each.

    A document judged twice for the same query is an error naming both
    lines: silently keeping either label would change the scores.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.labels: dict[str, dict[str, int]] = {}
        self.first_line: dict[str, int] = {}  # query id -> its first judgment line
        self._lines: dict[tuple[str, str], int] = {}

    def add(self, qid: str, doc: str, label: int, line: int) -> None:
        first = self._lines.get((qid, doc))
        if first is not None:
            raise DataError(
                f"document {doc!r} is judged twice for query {qid!r} (first on line {first})",
                path=self.path,
                line=line,
                hint="keep one judgment per (query, document) pair",
            )
        self._lines[(qid, doc)] = line
        self.first_line.setdefault(qid, line)
        self.labels.setdefault(qid, {})[doc] = label

    def __len__(self) -> int:
        return sum(len(docs) for docs in self.labels.values())

    def drop_unknown(self, known: Iterable[str], *, allow: bool, key: str, source: str) -> None:
        """Judgments for queries absent from ``source``: an error, or skipped with a warning."""
        known_ids = set(known)
        unknown = sorted(
            (q for q in self.labels if q not in known_ids), key=lambda q: self.first_line[q]
        )
        if not unknown:
            return
        first = unknown[0]
        n_lines = sum(len(self.labels[q]) for q in unknown)
        if not allow:
            hint = f"fix the query id, or set {key}=true to skip judgments of unknown queries"
            stripped = first.lstrip("0")
            near = [q for q in known_ids if q.lstrip("0") == stripped and q != first]
            if near:
                hint = (
                    f"ids are compared as written: {first!r} is not {near[0]!r}; "
                    "write them the same way in both files"
                )
            raise DataError(
                f"judgments for query {first!r}, which is not in {source} "
                f"({len(unknown)} unknown query id(s), {n_lines} judgment line(s))",
                path=self.path,
                line=self.first_line[first],
                got=f"unknown query ids {shown(unknown)}",
                hint=hint,
            )
        for q in unknown:
            del self.labels[q]
        warn(
            f"{n_lines} judgment line(s) in {self.path} are for {len(unknown)} query id(s) "
            f"not in {source} and were skipped ({key}=true): {shown(unknown)}"
        )


def apply_unjudged_policy(
    queries: list[GoldenQuery],
    judged: set[str],
    lines: dict[str, tuple[Path, int]],
    policy: UnjudgedPolicy,
    *,
    key: str,
    source: str,
    noun: str = "topic(s)",
) -> list[GoldenQuery]:
    """Keep, drop or reject the queries that have no judgment line at all.

    ``keep`` (the default everywhere) makes them negative examples (empty
    judgments); ``drop`` leaves them out; both say so on stderr with the
    count. ``error`` stops at the first one, naming its file and line.
    """
    unjudged = [q for q in queries if q.id not in judged]
    if not unjudged:
        return queries
    ids = [q.id for q in unjudged]
    if policy == "error":
        path, line = lines[ids[0]]
        raise DataError(
            f"{len(ids)} {noun} have no judgments in {source}, the first is {ids[0]!r}",
            path=path,
            line=line,
            got=f"unjudged ids {shown(ids)}",
            hint=f"set {key}=keep to load them as negative examples, or {key}=drop",
        )
    if policy == "drop":
        warn(
            f"{len(ids)} {noun} have no judgments in {source} and were dropped "
            f"({key}=drop): {shown(ids)}"
        )
        return [q for q in queries if q.id in judged]
    warn(
        f"{len(ids)} {noun} have no judgments in {source}; kept as negative examples "
        f"with empty judgments ({key}=keep): {shown(ids)}"
    )
    return queries
