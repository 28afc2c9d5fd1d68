"""Content-addressed retrieval cache: a query is never retrieved twice for the same inputs.

The key of one query's ranking covers everything that can change it: the
retriever's name and version, a hash of its code when the version does not pin
it (an editable install, a module on ``PYTHONPATH``:
:func:`evalframe.plugin.codeid.code_identity`), its full validated config
(secrets excluded), the corpus content hash, the query text and k, and the
query's metadata fields the retriever says it reads (``cache_inputs``).
Metrics, gates and report settings are not in the key, so changing them never
invalidates an entry.

Entries live in the ``runs`` namespace of the cache folder's entry store
(:mod:`evalframe.core.store`: one SQLite database), written a batch at a
time in one transaction, so an interrupted run leaves only whole entries
behind and re-running the same command retrieves only the queries that are
still missing. Parallel sweep jobs can share the folder: two writers of the
same key write the same content. Caches written by older versions (one JSON
file per entry) are still read.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from evalframe.core.io import default_cache_dir
from evalframe.core.secrets import REQUEST_FIELDS, is_secret_name, is_secret_param, url_secrets
from evalframe.core.store import (
    DATABASE,
    EntryStore,
    get_many,
    open_store,
    put_many,
    read_namespaces,
)
from evalframe.core.types import Ranking, content_hash
from evalframe.plugin.codeid import code_identity
from evalframe.plugin.protocols import in_cache_key

__all__ = ["RunCache", "cache_info", "clear_cache", "default_cache_dir", "retriever_fingerprint"]

#: Bump when the entry layout changes; old entries are then simply not found.
FORMAT = 1


def _public(config: BaseModel | None) -> dict[str, Any]:
    if config is None:
        return {}
    return {
        name: _without_secrets(value, name)
        for name, value in config.model_dump(mode="json").items()
        if not is_secret_name(name) and in_cache_key(type(config), name)
    }


def _without_secrets(node: Any, name: str = "", request: bool = False) -> Any:
    """A setting as its cache key holds it: no credential in it, however deep.

    Secret-named fields inside a mapping (``body_template: {api_key: ...}``) are left
    out, as top-level ones are, and a URL's credentials (``?api_key=``, a password)
    become ``***``: rotating a key re-uses every cached ranking wherever the key is
    written, not only in ``headers_from_env``. Inside a request's headers or body a
    field is judged as a request's names are (:func:`is_secret_param`)."""
    if isinstance(node, Mapping):
        inside = request or name in REQUEST_FIELDS
        secret = is_secret_param if inside else is_secret_name
        return {
            k: _without_secrets(v, str(k), inside) for k, v in node.items() if not secret(str(k))
        }
    if isinstance(node, list):
        return [_without_secrets(v, name, request) for v in node]
    if isinstance(node, str):
        for value in url_secrets(node):
            node = node.replace(value, "***")
    return node


def retriever_fingerprint(
    name: str,
    version: str | None,
    config: BaseModel | None,
    corpus_hash: str | None,
    identity: Any = None,
    *,
    module: str | None = None,
) -> dict[str, Any]:
    """What identifies a retriever's output apart from the query: part of every key.

    ``identity`` is the retriever's own ``cache_identity()`` (model or
    catalogue files named by path); absent, keys are as they always were.

    ``code`` is the hash of the retriever's source files when its version does
    not identify them (:func:`~evalframe.plugin.codeid.code_identity`: an
    editable install or a module on ``PYTHONPATH``, whose code is edited under
    one version); a release installed from an index keeps the key it always
    had. ``module`` is the module that registered the retriever (its spec's);
    absent, the retriever registered as ``name`` is looked up.
    """
    fingerprint = {
        "format": FORMAT,
        "retriever": name,
        "version": version,
        "config": _public(config),
        "corpus": corpus_hash,
    }
    if identity is not None:
        _check_identity(name, identity)
        fingerprint["identity"] = identity
    code = code_identity(module if module is not None else _registered_module(name))
    if code is not None:
        fingerprint["code"] = code
    return fingerprint


def _check_identity(name: str, identity: Any) -> None:
    """Refuse a ``cache_identity()`` the key cannot hold, naming the retriever: hashed
    as it is, a Path or a set in it would crash deep in the cache as evalframe's bug."""
    found: list[str] = []

    def refuse(value: Any) -> Any:
        found.append(type(value).__name__)
        raise TypeError(type(value).__name__)

    try:
        json.dumps(identity, sort_keys=True, default=refuse)
    except (TypeError, ValueError) as exc:
        from evalframe.core.errors import PluginError

        held = f"a {found[0]}" if found else f"what JSON cannot hold ({exc})"
        raise PluginError(
            f"retriever {name!r}: cache_identity() returned {held}, which the cache key "
            "cannot hold",
            expected="JSON values: str, int, float, bool, None, lists and str-keyed dicts",
            got=repr(identity)[:200],
            hint="give a path as str(path) and a set as a sorted list",
        ) from None


def _registered_module(name: str) -> str:
    """The module that registered retriever ``name``; "" when none is loaded.

    Only a retriever already imported is looked up (the one being run always is): a
    fingerprint asked for by name must not import a plugin as a side effect.
    """
    from evalframe.core.errors import EvalframeError
    from evalframe.plugin.dists import entry_points
    from evalframe.plugin.registry import RETRIEVERS

    for ep in entry_points(RETRIEVERS.group):
        if ep.name == name and ep.module not in sys.modules:
            return ""
    try:
        return RETRIEVERS.get(name).module
    except EvalframeError:
        return ""


def _decode(text: str, query_id: str) -> Ranking | None:
    """An entry's ranking, re-keyed to ``query_id``; ``None`` if it cannot be read.

    Entries hold the ranking's JSON; those written by older versions (read
    from their files) wrap it as ``{"key": ..., "ranking": {...}}``.
    """
    try:
        if text.startswith('{"key"'):
            ranking = Ranking.model_validate({**json.loads(text)["ranking"], "query_id": query_id})
        else:
            ranking = Ranking.model_validate_json(text)
    except (ValueError, ValidationError, KeyError, TypeError):
        return None  # damaged: retrieve again and overwrite
    if ranking.query_id != query_id:
        ranking = ranking.model_copy(update={"query_id": query_id})
    return ranking


@dataclass
class RunCache:
    """Per-query rankings in the ``runs`` namespace of the cache folder's entry store.

    ``store`` defaults to the folder's SQLite store (opened on first use).
    """

    root: Path
    fingerprint: dict[str, Any]
    hits: int = 0
    misses: int = 0
    store: EntryStore | None = None
    _opened: EntryStore | None = field(default=None, init=False, repr=False)

    @property
    def entries(self) -> EntryStore:
        if self.store is not None:
            return self.store
        if self._opened is None:
            self._opened = open_store(self.root, "runs")
        return self._opened

    def key(self, query_text: str, k: int, extra: Any = None) -> str:
        """``extra``: what else of the query the ranking depends on (a retriever's
        ``cache_inputs``); None leaves the key as it always was."""
        payload = {**self.fingerprint, "query": query_text, "k": k}
        if extra is not None:
            payload["inputs"] = extra
        return content_hash(payload)

    def get(self, query_id: str, query_text: str, k: int, extra: Any = None) -> Ranking | None:
        """The cached ranking, re-keyed to ``query_id`` (two ids may share a text)."""
        return self.get_many([(query_id, query_text, extra)], k).get(query_id)

    def get_many(self, queries: Sequence[tuple[Any, ...]], k: int) -> dict[str, Ranking]:
        """``{query_id: ranking}`` for every ``(query_id, text[, extra])`` that is cached."""
        keys = [self.key(q[1], k, q[2] if len(q) > 2 else None) for q in queries]
        texts = get_many(self.entries, keys)
        found: dict[str, Ranking] = {}
        for (query_id, *_), key in zip(queries, keys, strict=True):
            text = texts.get(key)
            ranking = _decode(text, query_id) if text is not None else None
            if ranking is None:
                self.misses += 1
            else:
                self.hits += 1
                found[query_id] = ranking
        return found

    def put(self, query_text: str, k: int, ranking: Ranking, extra: Any = None) -> None:
        self.put_many([(query_text, ranking, extra)], k)

    def put_many(self, items: Sequence[tuple[Any, ...]], k: int) -> None:
        """Store ``(query text, ranking[, extra])`` items, in one write when the store can."""
        entries = [
            (self.key(item[0], k, item[2] if len(item) > 2 else None), item[1].model_dump_json())
            for item in items
        ]
        put_many(self.entries, entries)


def cache_info(root: Path) -> dict[str, Any]:
    """Where the cache is and how much it holds, by kind.

    Kinds are the entry store's namespaces (``runs``, ``solver``...: ``entries``
    and the bytes of their values) and the folders beside it (``bm25`` and
    ``dense`` indexes, a ``runs`` folder left by an older version: ``files``
    and ``bytes``). ``bytes`` in total counts the files on disk.
    """
    if root.exists() and not root.is_dir():
        from evalframe.core.errors import DataError

        raise DataError(
            "the cache folder is a file, not a folder",
            path=root,
            hint="give --dir a folder (or point EVALFRAME_CACHE_DIR at one)",
        )
    _require_a_cache(root)
    kinds: dict[str, dict[str, int]] = {}
    total = 0
    stored, damaged = read_namespaces(root) if root.is_dir() else ({}, None)
    if root.is_dir():
        for ns, (n, size) in sorted(stored.items()):
            kinds[ns] = {"entries": n, "bytes": size}
        for child in sorted(root.iterdir()):
            if child.is_dir():
                files = [p for p in child.rglob("*") if p.is_file()]
                size = sum(p.stat().st_size for p in files)
                entry = kinds.setdefault(child.name, {})
                entry["files"] = len(files)
                entry["bytes"] = entry.get("bytes", 0) + size
                total += size
            elif child.name.startswith(DATABASE):
                total += child.stat().st_size  # the database, its -wal and -shm
    info: dict[str, Any] = {
        "path": str(root),
        "exists": root.is_dir(),
        "kinds": kinds,
        "bytes": total,
    }
    if damaged is not None:  # its entries are not counted: say so rather than show none
        info["unreadable"] = damaged
    return info


def _require_a_cache(root: Path) -> None:
    """Refuse a folder with files in it that is not evalframe's cache: without
    :data:`~evalframe.core.store.CACHE_TAG` or the entry store, ``cache clear`` would
    delete whatever ``--dir`` (or a wrong ``EVALFRAME_CACHE_DIR``) points at, and ``cache
    info`` list its folders as kinds. A missing or empty folder holds nothing to lose."""
    from evalframe.core.errors import DataError
    from evalframe.core.store import CACHE_TAG

    if not root.is_dir() or (root / CACHE_TAG).exists() or (root / DATABASE).exists():
        return
    entries = sorted(p.name for p in root.iterdir())
    if not entries:
        return
    from evalframe.core.messages import shown

    raise DataError(
        f"this is not an evalframe cache folder: it holds neither {CACHE_TAG} nor the "
        f"entry store ({DATABASE}), so its files are not evalframe's to count or delete",
        path=root,
        got=f"{len(entries)} entr{'y' if len(entries) == 1 else 'ies'}: {shown(entries, 5)}",
        hint="give --dir (or EVALFRAME_CACHE_DIR) the cache folder itself (by default "
        "~/.cache/evalframe); a cache from an older evalframe without either file: add an "
        f"empty {CACHE_TAG} to it, or delete the folder yourself",
    )


#: Folders in the cache folder that are not a cache, so ``cache clear`` keeps them:
#: name -> what they hold (said when they are kept).
KEPT = {
    "mlflow-pending": "pointers to runs not logged to MLflow yet, and the records of those "
    "run in DVC's temporary copies (`evalframe sync` logs them)",
}


def clear_cache(root: Path, kinds: Sequence[str] | None = None) -> dict[str, int]:
    """Remove cached entries, every kind or only ``kinds``; returns the bytes freed by kind.

    What :data:`KEPT` names stays: it records work still to do, and clearing it
    would lose that without a word. A kind that is not in the cache is an
    error listing the kinds that are.
    """
    from evalframe.core.errors import ConfigError

    info = cache_info(root)["kinds"]
    present = [k for k in info if k not in KEPT]
    if kinds is not None:
        unknown = [k for k in kinds if k not in present]
        if unknown:
            raise ConfigError(
                f"the cache at {root} holds no {', '.join(map(repr, unknown))}",
                key="--kind",
                expected=f"one of: {', '.join(present) or '(the cache is empty)'}",
                hint="`evalframe cache info` lists the kinds with their sizes",
            )
    chosen = present if kinds is None else list(dict.fromkeys(kinds))
    freed = {k: int(info[k]["bytes"]) for k in chosen}
    if not root.is_dir():
        return freed
    if kinds is None:  # everything but what is kept (and the tag), the database whole
        from evalframe.core.store import CACHE_TAG

        for child in root.iterdir():
            if child.name in KEPT or child.name == CACHE_TAG:
                continue
            if child.is_dir():
                shutil.rmtree(child)
            else:
                child.unlink()
        return freed
    stored = [k for k in chosen if "entries" in info[k]]
    if stored:
        _delete_namespaces(root, stored)
    for kind in chosen:
        folder = root / kind
        if folder.is_dir():
            shutil.rmtree(folder)
    return freed


def _delete_namespaces(root: Path, names: Sequence[str]) -> None:
    """Drop the entries of ``names`` from the cache database, and give the space back."""
    import sqlite3

    conn = sqlite3.connect(root / DATABASE, timeout=30)
    try:
        with conn:
            conn.executemany("DELETE FROM entries WHERE namespace = ?", [(n,) for n in names])
        conn.execute("VACUUM")
    finally:
        conn.close()
