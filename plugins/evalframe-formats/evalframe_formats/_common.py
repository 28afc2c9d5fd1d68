"""Checks shared by the loaders: ids, duplicate queries, warnings."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from evalframe.core.errors import DataError
from evalframe.core.types import GoldenQuery
from evalframe.plugin.protocols import PluginContext


def warn(message: str) -> None:
    """A warning on stderr (not :mod:`warnings`: the test suite turns those into errors)."""
    print(f"warning: {message}", file=sys.stderr)


def is_id(value: Any) -> bool:
    """A usable id: a non-empty string or an integer (``bool`` is not an id)."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, str) and value != "")


def fields_of(record: dict[str, Any]) -> str:
    """The record's field names, for an error's ``got``."""
    return ", ".join(repr(k) for k in record) or "(none)"


class SeenIds:
    """Query ids already read, with where each was first seen."""

    def __init__(self) -> None:
        self._first: dict[str, str] = {}

    def add(self, qid: str, where: str, *, path: Path, line: int | None, hint: str) -> None:
        if qid in self._first:
            raise DataError(
                f"query id {qid!r} is duplicated (first at {self._first[qid]})",
                path=path,
                line=line,
                hint=hint,
            )
        self._first[qid] = where


def warn_unknown_ids(queries: Iterable[GoldenQuery], context: PluginContext, what: str) -> None:
    """Warn about judged ids that the corpus in use does not contain."""
    corpus = context.corpus
    if corpus is None:
        return
    known = corpus.ids()
    unknown = sorted({d for q in queries for d in q.relevant if d not in known})
    if unknown:
        shown = ", ".join(unknown[:10]) + (" …" if len(unknown) > 10 else "")
        warn(
            f"{len(unknown)} relevant {what} id(s) are not in corpus {corpus.name!r} "
            f"and can never be retrieved: {shown}"
        )
