"""Where cached call results live: one SQLite database per cache folder, behind a small interface.

Both the retrieval cache (a ranking per query) and the mining call cache (a
solver's answer per trial, a validator's verdict per answer) are
content-addressed: the key is a hash of everything that can change the
result, and the value is a JSON text. They share this store, so how entries
are kept on disk is decided here.

:class:`SqliteEntryStore` keeps every entry of a cache folder in one file,
``<root>/entries.sqlite3``, in WAL mode:

* **Many small entries are cheap.** A run of 10k queries is 10k rows, not
  10k files each written and fsynced; :meth:`SqliteEntryStore.put_many`
  writes a whole batch in one transaction.
* **kill -9 loses nothing that was committed.** A transaction is in the
  write-ahead log or it is not; a reader never sees half of one.
  (``synchronous=NORMAL``: a *power cut* may drop the last few commits,
  never corrupt the file; a killed process loses nothing committed.)
* **Concurrent sweep jobs** share the file: readers never wait, writers take
  turns (``busy_timeout``), and two writers of one key write the same value.
* WAL needs a local file system; on a network share SQLite may refuse it,
  and the store then runs in SQLite's default rollback-journal mode. A cache
  folder shared by jobs on several machines should use
  ``EVALFRAME_CACHE_STORE=files`` (:func:`open_store`).

The old layout, one file per entry under ``<root>/<namespace>/<2 hex>/``
(:class:`FileEntryStore`), is still read: a key missing from the database is
looked up there and, when found, copied into the database.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from evalframe.core.errors import DataError
from evalframe.core.io import atomic_write

__all__ = [
    "CACHE_TAG",
    "DATABASE",
    "STORE_ENV",
    "EntryStore",
    "FileEntryStore",
    "SqliteEntryStore",
    "cache_folder",
    "foreign_cache_folder",
    "get_many",
    "namespaces",
    "open_store",
    "put_many",
    "read_namespaces",
    "tag_cache",
    "unusable_folder",
]

#: The database file inside a cache folder.
DATABASE = "entries.sqlite3"
#: Marks a folder as evalframe's cache, by the Cache Directory Tagging Specification
#: (https://bford.info/cachedir/, which backup tools honour): ``evalframe cache clear``
#: empties only a folder that holds it or the entry store, never one that merely is
#: where ``--dir`` or ``EVALFRAME_CACHE_DIR`` points.
CACHE_TAG = "CACHEDIR.TAG"
_TAG_TEXT = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file marks evalframe's cache folder; `evalframe cache clear` empties it.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)


def tag_cache(root: Path) -> None:
    """Write :data:`CACHE_TAG` into the cache folder ``root`` once, before anything else
    goes in (best effort: a folder that cannot take it is said by the write that needs
    the folder).

    A folder that already holds other files and is no evalframe cache (no tag, no
    entry store) is refused (:func:`foreign_cache_folder`): tagged, ``evalframe cache
    clear`` would empty it, and ``EVALFRAME_CACHE_DIR=~/.cache`` (for
    ``~/.cache/evalframe``) would have lost every other tool's cache.
    """
    tag = Path(root) / CACHE_TAG
    if tag.exists():
        return
    problem = foreign_cache_folder(Path(root))
    if problem is not None:
        raise problem
    with contextlib.suppress(OSError):
        atomic_write(tag, _TAG_TEXT)


#: What an untagged folder may hold and still become evalframe's cache: the entry store
#: of a cache from before the tag (and its journal files). Names starting with a dot (a
#: writer's temporary file, a concurrent job's tag on its way) are not counted either.
_STORE_FILES = frozenset({DATABASE, f"{DATABASE}-wal", f"{DATABASE}-shm", f"{DATABASE}-journal"})


def foreign_cache_folder(root: Path) -> DataError | None:
    """The error for a cache folder that holds other things than evalframe's cache, or
    None (missing, empty, tagged, or an older evalframe cache with its entry store).

    Checked before a run starts (so nothing slow runs first) and whenever a cache is
    made (:func:`tag_cache`): the cache wants a folder of its own, since ``evalframe
    cache clear`` empties the whole folder.
    """
    try:
        if not root.is_dir():
            return None
        others = sorted(
            p.name
            for p in root.iterdir()
            if not p.name.startswith(".") and p.name not in _STORE_FILES
        )
        # looked at after the listing: another writer (a thread, a sweep's job) tags the
        # folder before it puts anything in, so what the listing shows of its own comes
        # with a tag that is there by now
        if not others or (root / CACHE_TAG).exists() or (root / DATABASE).exists():
            return None
    except OSError:
        return None  # unreadable: the write that needs it says so (unusable_folder)
    from evalframe.core.messages import shown

    return DataError(
        "the cache folder holds files evalframe did not put there, so it is not made the "
        f"cache: `evalframe cache clear` empties the cache folder whole ({CACHE_TAG} marks it)",
        path=root,
        expected="a folder of the cache's own: missing, empty, or an evalframe cache",
        got=f"{len(others)} entr{'y' if len(others) == 1 else 'ies'}: {shown(others, 5)}",
        hint="point EVALFRAME_CACHE_DIR or output.cache_dir at a folder of its own (by "
        f"default ~/.cache/evalframe); a cache of an older evalframe: add an empty {CACHE_TAG} "
        "to it",
    )


#: How long a writer waits for another process's transaction (milliseconds).
BUSY_TIMEOUT_MS = 120_000
#: Keys per ``IN (...)`` lookup (SQLite's default limit on parameters is 32766).
_LOOKUP = 500


@runtime_checkable
class EntryStore(Protocol):
    """Key -> text, for keys that are hex content hashes. Safe across threads and processes.

    A store may also offer ``get_many(keys) -> {key: text}`` and
    ``put_many([(key, text), ...])``; the caches use them when present.
    """

    def get(self, key: str) -> str | None:
        """The stored text, or ``None`` when absent or unreadable (the caller recomputes)."""
        ...

    def put(self, key: str, text: str) -> None:
        """Store ``text`` under ``key`` so that a reader sees all of it or nothing."""
        ...


def get_many(store: EntryStore, keys: Sequence[str]) -> dict[str, str]:
    """``{key: text}`` for every key ``store`` holds: in one lookup when it can."""
    many = getattr(store, "get_many", None)
    if callable(many):
        found: dict[str, str] = many(keys)
        return found
    return {key: text for key in keys if (text := store.get(key)) is not None}


def put_many(store: EntryStore, items: Iterable[tuple[str, str]]) -> None:
    """Store every ``(key, text)``: in one write (one transaction) when ``store`` can."""
    many = getattr(store, "put_many", None)
    if callable(many):
        many(items)
        return
    for key, text in items:
        store.put(key, text)


def unusable_folder(root: Path, exc: OSError) -> DataError:
    """The error for a cache folder that cannot be made or written (a file where it
    should be, a folder of another user): the user's to fix, so exit 2, not a crash."""
    root = Path(root)
    if root.exists() and not root.is_dir():
        what = "is a file, not a folder"
    elif not root.exists():
        what = f"cannot be made ({exc.strerror or exc})"
    else:
        what = f"cannot be written ({exc.strerror or exc})"
    return DataError(
        f"the cache folder {what}",
        path=root,
        hint="point EVALFRAME_CACHE_DIR or output.cache_dir at a folder you can write "
        "(evalframe rescore uses the folder its run's config.yaml names, unless you give "
        "output.cache_dir)",
    )


def cache_folder(folder: Path, root: Path | None = None) -> Path:
    """``folder`` made (with its parents) for a plugin's cache files, or the located
    error of :func:`unusable_folder` naming ``root`` (the cache folder the user chose):
    a cache that cannot be written is the user's to fix (exit 2), found before the
    work whose result it would keep, not after."""
    try:
        if root is not None:  # the cache folder tagged before anything is put in it
            Path(root).mkdir(parents=True, exist_ok=True)
            tag_cache(Path(root))
        Path(folder).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise unusable_folder(Path(root or folder), exc) from None
    return Path(folder)


class FileEntryStore:
    """``<root>/<namespace>/<first 2 hex>/<key>.json``, one atomically written file per entry.

    The layout of caches written before the SQLite store; still read by it.
    """

    def __init__(self, root: Path, namespace: str) -> None:
        self.root = Path(root)
        self.namespace = namespace
        self._tagged = False

    def path(self, key: str) -> Path:
        return self.root / self.namespace / key[:2] / f"{key}.json"

    def get(self, key: str) -> str | None:
        try:
            return self.path(key).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    def put(self, key: str, text: str | bytes) -> None:
        try:
            if not self._tagged:  # the folder is evalframe's cache (`cache clear` checks)
                self.root.mkdir(parents=True, exist_ok=True)
                tag_cache(self.root)
                self._tagged = True
            atomic_write(self.path(key), text)
        except OSError as exc:  # a file in the way, no right, no such place (/proc/x), full
            raise unusable_folder(self.root, exc) from None

    def close(self) -> None:
        """Nothing is held open between calls (the SQLite store's counterpart)."""


class SqliteEntryStore:
    """One namespace (``runs``, ``solver``...) of the cache folder's SQLite database."""

    def __init__(self, root: Path, namespace: str) -> None:
        self.root = Path(root)
        self.namespace = namespace
        self.path = self.root / DATABASE
        legacy = self.root / namespace
        #: The old one-file-per-entry folder, read for keys the database lacks.
        self.legacy = FileEntryStore(self.root, namespace) if legacy.is_dir() else None
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = 0

    # -- the connection --------------------------------------------------------
    def _damaged(self, exc: sqlite3.Error) -> DataError:
        return DataError(
            f"the cache database cannot be used: {exc}",
            path=self.path,
            hint=f"delete it (evalframe cache clear --dir {self.root}), or point "
            "EVALFRAME_CACHE_DIR at another folder; cached results are recomputed",
        )

    def _connection(self) -> sqlite3.Connection:
        """This process's connection (a forked sweep job opens its own)."""
        try:
            return self._open()
        except sqlite3.DatabaseError as exc:
            self._conn = None
            raise self._damaged(exc) from None
        except OSError as exc:  # the folder cannot be made: a file in the way, no right
            self._conn = None
            raise unusable_folder(self.root, exc) from None

    def _open(self) -> sqlite3.Connection:
        if self._conn is None or self._pid != os.getpid():
            self.root.mkdir(parents=True, exist_ok=True)
            tag_cache(self.root)
            conn = sqlite3.connect(
                self.path,
                timeout=BUSY_TIMEOUT_MS / 1000,
                isolation_level=None,  # transactions are explicit
                check_same_thread=False,  # one connection, guarded by self._lock
            )
            try:
                _retry_while_locked(lambda: _set_up(conn))
            except BaseException:
                conn.close()
                raise
            self._conn, self._pid = conn, os.getpid()
        return self._conn

    def close(self) -> None:
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None

    # -- reading ---------------------------------------------------------------
    def get(self, key: str) -> str | None:
        return self.get_many([key]).get(key)

    def get_many(self, keys: Sequence[str]) -> dict[str, str]:
        """The stored text of every key that has one (others are left out)."""
        found: dict[str, str] = {}
        unique = list(dict.fromkeys(keys))
        with self._lock:
            conn = self._connection()
            try:
                for start in range(0, len(unique), _LOOKUP):
                    chunk = unique[start : start + _LOOKUP]
                    marks = ",".join("?" * len(chunk))
                    rows = conn.execute(
                        f"SELECT key, value FROM entries WHERE namespace = ? AND key IN ({marks})",
                        (self.namespace, *chunk),
                    )
                    found.update(rows)
            except sqlite3.DatabaseError as exc:
                raise self._damaged(exc) from None
        if self.legacy is not None and len(found) < len(unique):
            migrated = [
                (key, text)
                for key in unique
                if key not in found and (text := self.legacy.get(key)) is not None
            ]
            if migrated:
                self.put_many(migrated)
                found.update(migrated)
        return found

    # -- writing ---------------------------------------------------------------
    def put(self, key: str, text: str) -> None:
        self.put_many([(key, text)])

    def put_many(self, items: Iterable[tuple[str, str]]) -> None:
        """Store every ``(key, text)`` in one transaction: all of them or none."""
        rows = [(self.namespace, key, text) for key, text in items]
        if not rows:
            return
        with self._lock:
            conn = self._connection()
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.DatabaseError as exc:
                raise self._damaged(exc) from None
            try:
                conn.executemany(
                    "INSERT OR REPLACE INTO entries (namespace, key, value) VALUES (?, ?, ?)", rows
                )
                conn.execute("COMMIT")
            except BaseException as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.DatabaseError) and not isinstance(
                    exc, sqlite3.IntegrityError
                ):
                    raise self._damaged(exc) from None
                raise

    # -- inspecting ------------------------------------------------------------
    def count(self) -> int:
        with self._lock:
            row = (
                self._connection()
                .execute("SELECT count(*) FROM entries WHERE namespace = ?", (self.namespace,))
                .fetchone()
            )
        return int(row[0])


#: An ordinary (rowid) table: the primary key's index holds the keys alone, so a lookup
#: never reads a value it does not return. The first layout (``WITHOUT ROWID``) kept the
#: values in the key's B-tree, where a large one (a corpus manifest of a few MB) sat in
#: the inner pages and was read whole at each comparison that met it: looking up 17k keys
#: took 10 s instead of 10 ms.
_SCHEMA = (
    "(namespace TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, "
    "PRIMARY KEY (namespace, key))"
)


def _set_up(conn: sqlite3.Connection) -> None:
    """WAL mode, the table, the current schema: every step may be run twice."""
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute(f"CREATE TABLE IF NOT EXISTS entries {_SCHEMA}")
    if _without_rowid(conn):
        _migrate(conn)


def _retry_while_locked(step: Callable[[], None], budget: float = BUSY_TIMEOUT_MS / 1000) -> None:
    """Run ``step``, again after a short sleep while SQLite answers "locked", up to ``budget`` s.

    Why: SQLite does not call its busy handler for every lock it waits on.
    ``PRAGMA journal_mode = WAL`` fails at once with "database is locked"
    while another connection holds a write lock in the default rollback
    mode, which is what happens when several sweep jobs open a brand-new
    cache folder together (the first is switching the file to WAL). The
    busy timeout covers the rest; this covers the set-up.
    """
    deadline = time.monotonic() + budget
    pause = 0.005
    while True:
        try:
            step()
            return
        except sqlite3.OperationalError as exc:
            text = str(exc).lower()
            if ("locked" not in text and "busy" not in text) or time.monotonic() >= deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.2)


def _without_rowid(conn: sqlite3.Connection) -> bool:
    row = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'entries'")
    sql = (row.fetchone() or ("",))[0] or ""
    return "WITHOUT ROWID" in sql.upper()


def _migrate(conn: sqlite3.Connection) -> None:
    """Move a database of the first layout to :data:`_SCHEMA`, entries unchanged.

    One transaction: another process sees the old table or the new one, and
    a second job arriving at the same time finds the work done when it gets
    the write lock.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        if _without_rowid(conn):
            conn.execute("DROP TABLE IF EXISTS entries_migrating")
            conn.execute(f"CREATE TABLE entries_migrating {_SCHEMA}")
            conn.execute(
                "INSERT INTO entries_migrating (namespace, key, value) "
                "SELECT namespace, key, value FROM entries"
            )
            conn.execute("DROP TABLE entries")
            conn.execute("ALTER TABLE entries_migrating RENAME TO entries")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


#: The environment variable that picks the store: ``sqlite`` (the default) or ``files``.
STORE_ENV = "EVALFRAME_CACHE_STORE"


def open_store(root: Path, namespace: str) -> SqliteEntryStore | FileEntryStore:
    """The entry store of ``namespace`` in the cache folder ``root``.

    ``EVALFRAME_CACHE_STORE=files`` keeps one atomically renamed file per entry
    instead of the SQLite database: for a cache folder on shared storage (NFS,
    Lustre) used by jobs on several nodes, where SQLite's locking cannot be
    trusted. Slower for many small entries, safe wherever rename is atomic.
    """
    kind = os.environ.get(STORE_ENV, "sqlite").strip().lower() or "sqlite"
    if kind == "files":
        return FileEntryStore(Path(root), namespace)
    if kind != "sqlite":
        from evalframe.core.errors import ConfigError

        raise ConfigError(
            f"${STORE_ENV} is {kind!r}",
            expected="sqlite (one database, for a local folder) or files (one file per "
            "entry, for a folder shared by several machines)",
            hint=f"unset {STORE_ENV}, or set it to files for a cache on NFS or Lustre",
        )
    return SqliteEntryStore(Path(root), namespace)


def namespaces(root: Path) -> dict[str, tuple[int, int]]:
    """``{namespace: (entries, bytes of their values)}`` in the database of ``root``
    (empty when there is none, or it cannot be read: :func:`read_namespaces`)."""
    return read_namespaces(root)[0]


def read_namespaces(root: Path) -> tuple[dict[str, tuple[int, int]], str | None]:
    """:func:`namespaces`, and why the database cannot be read (SQLite's words) when
    it cannot: one read for both, as ``evalframe cache info`` shows them together."""
    try:
        return _namespaces(Path(root) / DATABASE), None
    except sqlite3.DatabaseError as exc:
        return {}, str(exc)


def _namespaces(path: Path) -> dict[str, tuple[int, int]]:
    if not path.is_file():
        return {}
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000)
    try:
        rows = conn.execute(
            "SELECT namespace, count(*), sum(length(value)) FROM entries GROUP BY namespace"
        ).fetchall()
    finally:
        conn.close()
    return {str(ns): (int(n), int(size or 0)) for ns, n, size in rows}
