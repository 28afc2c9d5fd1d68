"""The entry store behind the retrieval and call caches: one interface, swappable storage."""

from __future__ import annotations

import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from evalframe.core.store import DATABASE, EntryStore, FileEntryStore, SqliteEntryStore
from evalframe.core.types import Ranking
from evalframe.mine.cache import CallCache
from evalframe.retrieval.cache import RunCache


class DictStore:
    """Another storage, with only get and put (no batch methods)."""

    def __init__(self) -> None:
        self.entries: dict[str, str] = {}

    def get(self, key: str) -> str | None:
        return self.entries.get(key)

    def put(self, key: str, text: str) -> None:
        self.entries[key] = text


def test_file_store_round_trip_leaves_only_whole_entries(tmp_path: Path) -> None:
    store = FileEntryStore(tmp_path, "solver")
    assert isinstance(store, EntryStore)
    key = "ab" + "0" * 62
    assert store.get(key) is None
    store.put(key, '{"x": 1}')
    assert store.get(key) == '{"x": 1}'
    assert store.path(key) == tmp_path / "solver" / "ab" / f"{key}.json"
    assert [p.name for p in (tmp_path / "solver" / "ab").iterdir()] == [f"{key}.json"]


def test_the_retrieval_cache_runs_on_any_store(tmp_path: Path) -> None:
    store = DictStore()
    cache = RunCache(tmp_path, {"retriever": "x"}, store=store)
    cache.put("how?", 5, Ranking.from_pairs("q1", [("a", 2.0), ("b", 1.0)]))
    assert len(store.entries) == 1 and not any(tmp_path.iterdir())
    got = cache.get("q9", "how?", 5)
    assert got is not None and got.query_id == "q9" and got.doc_ids == ("a", "b")


def test_the_call_cache_runs_on_any_store_and_rejects_a_foreign_entry() -> None:
    store = DictStore()
    cache = CallCache(store, {"solver": "s"})
    key = cache.key({"trial": 1})
    cache.put(key, {"text": "answer"})
    assert cache.get(key) == {"text": "answer"} and cache.hits == 1 and cache.calls == 1
    other = cache.key({"trial": 2})
    store.entries[other] = store.entries[key]  # an entry filed under the wrong key
    assert cache.get(other) is None
    store.entries[key] = "{not json"
    assert cache.get(key) is None


def test_the_sqlite_store_round_trips_in_batches_and_across_threads(tmp_path: Path) -> None:
    store = SqliteEntryStore(tmp_path, "runs")
    assert isinstance(store, EntryStore)
    keys = [f"{i:064x}" for i in range(300)]

    def write(part: int) -> None:
        mine = keys[part::6]
        store.put_many([(k, f'{{"k": "{k}"}}') for k in mine])
        assert store.get_many(mine) == {k: f'{{"k": "{k}"}}' for k in mine}

    with ThreadPoolExecutor(max_workers=6) as pool:
        list(pool.map(write, range(6)))
    assert store.count() == 300
    assert store.get(keys[7]) == f'{{"k": "{keys[7]}"}}' and store.get("f" * 64) is None
    assert SqliteEntryStore(tmp_path, "solver").count() == 0  # namespaces are apart
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".sqlite3"] == [DATABASE]


def test_a_batch_is_written_whole_or_not_at_all(tmp_path: Path) -> None:
    store = SqliteEntryStore(tmp_path, "runs")
    broken = [("a" * 64, "{}"), ("b" * 64, None), ("c" * 64, "{}")]  # the 2nd row fails
    with pytest.raises(sqlite3.IntegrityError):
        store.put_many(broken)  # type: ignore[arg-type]
    assert store.count() == 0  # the first row was rolled back with the batch
    store.put_many([("d" * 64, "{}")])
    assert store.count() == 1


def _first_layout(path: Path, rows: list[tuple[str, str, str]]) -> None:
    """A cache database as evalframe wrote it before the rowid table (a WITHOUT ROWID one)."""
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE entries (namespace TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, "
        "PRIMARY KEY (namespace, key)) WITHOUT ROWID"
    )
    conn.executemany("INSERT INTO entries VALUES (?, ?, ?)", rows)
    conn.commit()
    conn.close()


def _table_sql(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT sql FROM sqlite_master WHERE name = 'entries'").fetchone()[0]
    finally:
        conn.close()


def test_a_database_of_the_first_layout_is_moved_to_a_rowid_table_with_every_entry(
    tmp_path: Path,
) -> None:
    rows = [("runs", f"{i:064x}", f'{{"i": {i}}}') for i in range(50)]
    rows.append(("corpora", "e" * 64, "x" * 3_000_000))  # a large value (a corpus manifest)
    _first_layout(tmp_path / DATABASE, rows)
    runs = SqliteEntryStore(tmp_path, "runs")
    assert runs.get_many([k for _, k, _ in rows[:50]]) == {k: v for _, k, v in rows[:50]}
    assert SqliteEntryStore(tmp_path, "corpora").get("e" * 64) == "x" * 3_000_000
    assert "WITHOUT ROWID" not in _table_sql(tmp_path / DATABASE).upper()
    runs.put_many([("f" * 64, "{}")])  # and it is written to as before
    assert SqliteEntryStore(tmp_path, "runs").count() == 51


def test_two_stores_opening_a_first_layout_database_migrate_it_once(tmp_path: Path) -> None:
    _first_layout(tmp_path / DATABASE, [("runs", "a" * 64, "{}")])
    stores = [SqliteEntryStore(tmp_path, "runs") for _ in range(4)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        found = list(pool.map(lambda s: s.get("a" * 64), stores))
    assert found == ["{}"] * 4
    conn = sqlite3.connect(tmp_path / DATABASE)
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    conn.close()
    assert tables == ["entries"]  # no half-done copy left beside it


def test_the_files_store_is_chosen_for_a_shared_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """EVALFRAME_CACHE_STORE=files (scaling.md, a cache on NFS): one renamed file per
    entry and no database; the retrieval cache round-trips through it. Any other value
    is a config error naming the variable."""
    from evalframe.core.errors import ConfigError
    from evalframe.core.store import open_store

    monkeypatch.setenv("EVALFRAME_CACHE_STORE", "files")
    assert isinstance(open_store(tmp_path, "runs"), FileEntryStore)
    cache = RunCache(tmp_path, {"retriever": "shared"})
    ranking = Ranking.from_pairs("q1", [("a", 2.0), ("b", 1.0)])
    cache.put("how?", 5, ranking)
    assert RunCache(tmp_path, {"retriever": "shared"}).get("q1", "how?", 5) == ranking
    assert not (tmp_path / DATABASE).exists()
    assert len(list((tmp_path / "runs").rglob("*.json"))) == 1
    monkeypatch.setenv("EVALFRAME_CACHE_STORE", "nfs")
    with pytest.raises(ConfigError, match=r"\$EVALFRAME_CACHE_STORE is 'nfs'"):
        open_store(tmp_path, "runs")
    monkeypatch.delenv("EVALFRAME_CACHE_STORE")
    assert isinstance(open_store(tmp_path, "runs"), SqliteEntryStore)


@pytest.mark.parametrize("kind", ["sqlite", "files"])
def test_a_cache_folder_behind_a_file_is_a_data_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    from evalframe.core.errors import DataError
    from evalframe.core.store import open_store

    blocked = tmp_path / "blocked"
    blocked.write_text("not a folder")
    monkeypatch.setenv("EVALFRAME_CACHE_STORE", kind)
    store = open_store(blocked / "cache", "runs")
    with pytest.raises(DataError) as info:
        store.put("ab" * 32, "{}")
    assert "the cache folder cannot be made (Not a directory)" in info.value.message
    assert "EVALFRAME_CACHE_DIR" in (info.value.hint or "")


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_a_cache_folder_that_cannot_exist_is_a_data_error_for_every_writer(
    tmp_path: Path,
) -> None:
    """/proc refuses new folders with ENOENT, which no other check saw: the one-file
    store (BM25's tokens) and a plugin's own cache folder are located errors too."""
    from evalframe.core.errors import DataError
    from evalframe.core.store import FileEntryStore, cache_folder

    nowhere = Path("/proc/evalframe-no-such-cache")
    with pytest.raises(DataError) as info:
        FileEntryStore(nowhere, "bm25-tokens").put("ab" * 32, "{}")
    assert info.value.message == "the cache folder cannot be made (No such file or directory)"
    assert info.value.path == str(nowhere)
    with pytest.raises(DataError) as info:
        cache_folder(nowhere / "dense", nowhere)
    assert info.value.path == str(nowhere)
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    with pytest.raises(DataError) as info:
        cache_folder(a_file / "bm25", a_file)
    assert info.value.message == "the cache folder is a file, not a folder"
    assert cache_folder(tmp_path / "fine" / "bm25", tmp_path / "fine").is_dir()


def test_opening_waits_out_a_rollback_mode_writer_instead_of_failing(tmp_path: Path) -> None:
    """Sweep jobs opening a new cache folder together: one is still switching it to WAL.

    SQLite answers ``PRAGMA journal_mode = WAL`` with "database is locked" at
    once, without its busy handler, while another connection holds a write
    lock in rollback mode. Here a real second connection holds one for a
    moment; the store must wait it out and then work.
    """
    other = sqlite3.connect(tmp_path / DATABASE, isolation_level=None, check_same_thread=False)
    other.execute("CREATE TABLE held (x)")
    other.execute("BEGIN IMMEDIATE")
    released = threading.Timer(0.3, lambda: other.execute("COMMIT"))
    released.start()
    try:
        store = SqliteEntryStore(tmp_path, "runs")
        store.put_many([("a" * 64, "text")])
        assert store.get("a" * 64) == "text"
        assert store._connection().execute("PRAGMA journal_mode").fetchone() == ("wal",)
        store.close()
    finally:
        released.join()
        other.close()
