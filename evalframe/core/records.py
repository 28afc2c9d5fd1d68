"""Checks every loader makes on every record, with one wording everywhere.

A loader wraps each record's location in :class:`At` and asks it for the
fields it needs; each failure is a :class:`~evalframe.core.errors.DataError` that
names the file and line, what was expected and what was found.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalframe.core.errors import DataError

__all__ = ["At", "UniqueIds"]


@dataclass(frozen=True)
class At:
    """Where a record is: a file and a 1-based line."""

    path: Path
    line: int

    def error(self, message: str, **details: Any) -> DataError:
        return DataError(message, path=self.path, line=self.line, **details)

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"

    def mapping(self, record: Any, what: str = "record") -> dict[str, Any]:
        """The record as a dict, or an error saying it must be a JSON object."""
        if not isinstance(record, dict):
            raise self.error(f"a {what} must be a JSON object", got=type(record).__name__)
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

    def ident(self, value: Any, name: str) -> str:
        """An id field: a non-empty string, or an integer normalised to its string."""
        if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
            raise self.error(
                f"field {name!r} must be a non-empty string or an integer", got=repr(value)
            )
        return str(value)

    def text(self, value: Any, name: str, *, allow_empty: bool = False) -> str:
        if not isinstance(value, str) or (not allow_empty and not value.strip()):
            wanted = "text" if allow_empty else "non-empty text"
            raise self.error(f"field {name!r} must be {wanted}", got=repr(value)[:80])
        return value


@dataclass
class UniqueIds:
    """Remembers where each id was first seen, to report a duplicate with both places."""

    what: str = "query id"
    hint: str | None = None
    _first: dict[str, At] = field(default_factory=dict)

    def add(self, ident: str, at: At) -> None:
        first = self._first.get(ident)
        if first is not None:
            raise at.error(
                f"{self.what} {ident!r} is duplicated (first at {first})",
                hint=self.hint or f"give every {self.what.split()[0]} its own id",
            )
        self._first[ident] = at
