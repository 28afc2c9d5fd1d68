"""Content-addressed retrieval cache: a query is never retrieved twice for the same inputs.

The key of one query's ranking covers everything that can change it: the
retriever's name and version, its full validated config (secrets excluded),
the corpus content hash, the query text and k. Metrics, gates and report
settings are not in the key, so changing them never invalidates an entry.

Each entry is one small JSON file written atomically (temp file + rename), so
an interrupted run leaves only whole entries behind and re-running the same
command retrieves only the queries that are still missing. Parallel sweep jobs
can share the folder: two writers of the same key write the same content.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from evalframe.core.io import default_cache_dir
from evalframe.core.store import EntryStore, FileEntryStore
from evalframe.core.types import Ranking, content_hash

__all__ = ["RunCache", "cache_info", "clear_cache", "default_cache_dir", "retriever_fingerprint"]

#: Config fields whose names look like secrets never enter a key or a file.
SECRET_NAME = re.compile(r"(api_?key|token|secret|password|authorization)", re.IGNORECASE)
#: Bump when the entry layout changes; old entries are then simply not found.
FORMAT = 1


def _public(config: BaseModel | None) -> dict[str, Any]:
    if config is None:
        return {}
    return {
        name: value
        for name, value in config.model_dump(mode="json").items()
        if not SECRET_NAME.search(name)
    }


def retriever_fingerprint(
    name: str,
    version: str | None,
    config: BaseModel | None,
    corpus_hash: str | None,
    identity: Any = None,
) -> dict[str, Any]:
    """What identifies a retriever's output apart from the query: part of every key.

    ``identity`` is the retriever's own ``cache_identity()`` (model or
    catalogue files named by path); absent, keys are as they always were.
    """
    fingerprint = {
        "format": FORMAT,
        "retriever": name,
        "version": version,
        "config": _public(config),
        "corpus": corpus_hash,
    }
    if identity is not None:
        fingerprint["identity"] = identity
    return fingerprint


@dataclass
class RunCache:
    """Per-query rankings in the ``runs`` namespace of the cache's entry store.

    The store defaults to one file per entry, ``<root>/runs/<2 hex>/<key>.json``.
    """

    root: Path
    fingerprint: dict[str, Any]
    hits: int = 0
    misses: int = 0
    store: EntryStore | None = None  # None: one file per entry under root

    @property
    def entries(self) -> EntryStore:
        return self.store if self.store is not None else FileEntryStore(self.root, "runs")

    def key(self, query_text: str, k: int) -> str:
        return content_hash({**self.fingerprint, "query": query_text, "k": k})

    def get(self, query_id: str, query_text: str, k: int) -> Ranking | None:
        """The cached ranking, re-keyed to ``query_id`` (two ids may share a text)."""
        text = self.entries.get(self.key(query_text, k))
        try:
            if text is None:
                raise KeyError("absent")
            data = json.loads(text)
            ranking = Ranking.model_validate({**data["ranking"], "query_id": query_id})
        except (ValueError, KeyError, TypeError):
            self.misses += 1
            return None  # absent, or unreadable: retrieve again and overwrite
        self.hits += 1
        return ranking

    def put(self, query_text: str, k: int, ranking: Ranking) -> None:
        key = self.key(query_text, k)
        entry = {"key": key, "ranking": ranking.model_dump(mode="json")}
        self.entries.put(key, json.dumps(entry, ensure_ascii=False))


def cache_info(root: Path) -> dict[str, Any]:
    """Where the cache is and how much it holds, by kind (runs, indexes)."""
    kinds: dict[str, dict[str, int]] = {}
    if root.is_dir():
        for child in sorted(p for p in root.iterdir() if p.is_dir()):
            files = [p for p in child.rglob("*") if p.is_file()]
            kinds[child.name] = {"files": len(files), "bytes": sum(p.stat().st_size for p in files)}
    total = sum(v["bytes"] for v in kinds.values())
    return {"path": str(root), "exists": root.is_dir(), "kinds": kinds, "bytes": total}


def clear_cache(root: Path) -> int:
    """Remove every cached entry; returns the bytes freed."""
    freed = int(cache_info(root)["bytes"])
    if root.is_dir():
        for child in root.iterdir():
            if child.is_dir():
                shutil.rmtree(child)
            else:
                child.unlink()
    return freed
