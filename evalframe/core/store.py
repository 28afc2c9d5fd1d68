"""Where cached call results live: one small interface, one file-per-entry implementation.

Both the retrieval cache (a ranking per query) and the mining call cache (a
solver's answer per trial, a validator's verdict per answer) are
content-addressed: the key is a hash of everything that can change the
result, and the value is a JSON text. They share this store so that the way
entries are kept on disk is decided in one place; replacing the storage (say
by one SQLite file) means writing another :class:`EntryStore`, not touching
either cache.

The file store writes each entry atomically (temp file + rename), so a run
killed at any instant (``kill -9``) leaves only whole entries, and two
processes writing the same key write the same content.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

from evalframe.core.io import atomic_write

__all__ = ["EntryStore", "FileEntryStore"]


@runtime_checkable
class EntryStore(Protocol):
    """Key -> text, for keys that are hex content hashes. Safe across threads and processes."""

    def get(self, key: str) -> str | None:
        """The stored text, or ``None`` when absent or unreadable (the caller recomputes)."""
        ...

    def put(self, key: str, text: str) -> None:
        """Store ``text`` under ``key`` so that a reader sees all of it or nothing."""
        ...


class FileEntryStore:
    """``<root>/<namespace>/<first 2 hex>/<key>.json``, one atomically written file per entry."""

    def __init__(self, root: Path, namespace: str) -> None:
        self.root = Path(root)
        self.namespace = namespace

    def path(self, key: str) -> Path:
        return self.root / self.namespace / key[:2] / f"{key}.json"

    def get(self, key: str) -> str | None:
        try:
            return self.path(key).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    def put(self, key: str, text: str) -> None:
        atomic_write(self.path(key), text)
