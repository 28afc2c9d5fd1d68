"""Helpers shared by the TREC, BEIR and Cranfield loaders.

Line-oriented reading with 1-based line numbers, integer parsing that names
its file and line, the policy for topics without judgments, and one-line
warnings on stderr for everything a policy skips.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Literal

from evalframe.core.errors import DataError
from evalframe.core.io import require_file
from evalframe.core.types import Corpus, GoldenQuery

__all__ = [
    "Qrels",
    "UnjudgedPolicy",
    "apply_unjudged_policy",
    "iter_lines",
    "parse_int",
    "shown",
    "warn",
    "warn_unknown_doc_ids",
]

UnjudgedPolicy = Literal["keep", "drop", "error"]


def warn(message: str) -> None:
    """One line on stderr: what a policy did, with its count."""
    print(f"warning: {message}", file=sys.stderr)


def shown(items: Sequence[str], limit: int = 10) -> str:
    """``a, b, c …``: the first ``limit`` items of a list, for a one-line message."""
    head = ", ".join(items[:limit])
    return head + (" …" if len(items) > limit else "")


def iter_lines(path: str | Path, *, what: str, key: str | None = None) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line)`` for every line, without its line ending.

    Lines end in ``\\n``, ``\\r\\n`` (``cran.qry`` uses CRLF) or nothing (the
    last line of ``cranqrel``). Text that is not UTF-8 names its line.
    """
    p = require_file(path, what=what, key=key)
    if p.is_dir():
        raise DataError(
            f"{what} is a folder, not a file: {p}",
            key=key,
            expected="a file",
            hint="point the setting at the file itself",
        )
    with open(p, "rb") as handle:
        for lineno, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DataError(
                    f"{what} is not UTF-8 text ({exc.reason} at byte {exc.start})",
                    path=p,
                    line=lineno,
                    got=repr(raw[:60]),
                    hint="convert the file to UTF-8 (e.g. iconv -f latin1 -t utf-8)",
                ) from None
            yield lineno, line.rstrip("\r\n")


def parse_int(token: str, *, what: str, path: Path, line: int, expected: str) -> int:
    """``int(token)``, or a :class:`DataError` naming the file and line."""
    try:
        return int(token)
    except ValueError:
        raise DataError(
            f"the {what} is not an integer",
            path=path,
            line=line,
            expected=expected,
            got=repr(token),
            hint="labels and numbers must be written as whole numbers (e.g. 0, 1, 2, -1)",
        ) from None


class Qrels:
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


def warn_unknown_doc_ids(queries: Iterable[GoldenQuery], corpus: Corpus | None) -> None:
    """Judged doc ids the configured corpus lacks can never be retrieved: say so."""
    if corpus is None:
        return
    known = corpus.ids()
    unknown = sorted({d for q in queries for d in q.judgments if d not in known})
    if unknown:
        warn(
            f"{len(unknown)} judged document id(s) are not in corpus {corpus.name!r} "
            f"and can never be retrieved: {shown(unknown)}"
        )
