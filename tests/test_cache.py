"""The retrieval cache: keys, resume after a crash, corrupt entries, concurrent writers."""

from __future__ import annotations

import io
import json
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field

from evalframe.core.errors import DataError
from evalframe.core.store import DATABASE, FileEntryStore
from evalframe.core.types import Ranking
from evalframe.pipeline.config import validate_experiment
from evalframe.pipeline.run import run_experiment
from evalframe.plugin.protocols import PluginConfig, PluginContext, Query
from evalframe.plugin.registry import RETRIEVERS
from evalframe.report.terminal import TerminalReport
from evalframe.retrieval.cache import RunCache, cache_info, clear_cache, retriever_fingerprint
from tests.conftest import Project, raw_config


class CountingConfig(PluginConfig):
    fail_after: int = Field(-1, description="raise after this many calls (-1: never)")
    api_key: str = Field("s3cret", description="a secret that must never be cached")


class Counting:
    """Counts real retrievals; can crash midway like an outage or Ctrl-C."""

    calls: list[str] = []
    #: the outage is outside the config, as in life: the same command is re-run
    outage_after: int = -1

    def __init__(self, config: CountingConfig, context: PluginContext) -> None:
        self.config = config

    def retrieve(self, query: Query, k: int) -> Ranking:
        if Counting.outage_after >= 0 and len(Counting.calls) >= Counting.outage_after:
            raise ConnectionError("service went away")
        Counting.calls.append(query.id)
        return Ranking.from_pairs(query.id, [("install", 2.0), ("gates", 1.0)][:k])


def fingerprint(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "name": "bm25",
        "version": "1.0",
        "config": CountingConfig(),
        "corpus_hash": "abc",
    }
    base.update(changes)
    return retriever_fingerprint(base["name"], base["version"], base["config"], base["corpus_hash"])


def test_key_covers_retriever_config_corpus_query_and_k(tmp_path: Path) -> None:
    key = RunCache(tmp_path, fingerprint()).key("how?", 10)
    assert RunCache(tmp_path, fingerprint()).key("how?", 10) == key
    for other in (
        RunCache(tmp_path, fingerprint(name="dense")).key("how?", 10),
        RunCache(tmp_path, fingerprint(version="1.1")).key("how?", 10),
        RunCache(tmp_path, fingerprint(config=CountingConfig(fail_after=3))).key("how?", 10),
        RunCache(tmp_path, fingerprint(corpus_hash="def")).key("how?", 10),
        RunCache(tmp_path, fingerprint()).key("how??", 10),
        RunCache(tmp_path, fingerprint()).key("how?", 11),
    ):
        assert other != key


def test_secrets_stay_out_of_keys_and_files(tmp_path: Path) -> None:
    assert RunCache(tmp_path, fingerprint(config=CountingConfig(api_key="other"))).key(
        "q", 5
    ) == RunCache(tmp_path, fingerprint()).key("q", 5)
    cache = RunCache(tmp_path, fingerprint())
    cache.put("q", 5, Ranking.from_pairs("1", [("a", 1.0)]))
    on_disk = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    assert b"s3cret" not in on_disk and b"a" in on_disk


def _values(root: Path) -> list[tuple[str, str, str]]:
    with closing(sqlite3.connect(root / DATABASE)) as db:
        return db.execute("SELECT namespace, key, value FROM entries").fetchall()


def test_a_corrupt_entry_is_a_miss_and_is_rewritten(tmp_path: Path) -> None:
    cache = RunCache(tmp_path, fingerprint())
    cache.put("q", 5, Ranking.from_pairs("1", [("a", 1.0)]))
    with closing(sqlite3.connect(tmp_path / DATABASE)) as db, db:
        db.execute('UPDATE entries SET value = \'{"doc_ids": ["trunc\'')
    assert cache.get("1", "q", 5) is None and cache.misses == 1
    cache.put("q", 5, Ranking.from_pairs("1", [("a", 1.0)]))
    assert cache.get("7", "q", 5) == Ranking.from_pairs("7", [("a", 1.0)])
    assert len(_values(tmp_path)) == 1


def test_an_interrupted_run_resumes_with_only_the_missing_queries(project: Project) -> None:
    """The golden set has 4 queries; the first run dies after 2 retrievals."""
    with RETRIEVERS.scoped() as reg:
        reg.add("counting", Counting, CountingConfig)
        Counting.calls = []
        Counting.outage_after = 2
        command = validate_experiment(raw_config(project, retriever={"name": "counting"}))
        with pytest.raises(ConnectionError):
            run_experiment(command, reporters=[TerminalReport(io.StringIO())], progress=False)
        assert Counting.calls == ["1", "2"]

        Counting.calls = []
        Counting.outage_after = -1
        resumed = command
        result = run_experiment(resumed, reporters=[TerminalReport(io.StringIO())], progress=False)
        assert Counting.calls == ["3", "4"]  # 1 and 2 came from the cache
        assert result.evaluation.run.metadata["cache"] == {"hits": 2, "misses": 2}

        Counting.calls = []
        run_experiment(resumed, reporters=[TerminalReport(io.StringIO())], progress=False)
        assert Counting.calls == []

        Counting.calls = []
        fresh = validate_experiment(
            raw_config(project, retriever={"name": "counting"}, cache={"retrieval": False})
        )
        run_experiment(fresh, reporters=[TerminalReport(io.StringIO())], progress=False)
        assert Counting.calls == ["1", "2", "3", "4"]


def test_changing_only_metrics_keeps_the_cache(project: Project) -> None:
    with RETRIEVERS.scoped() as reg:
        reg.add("counting", Counting, CountingConfig)
        Counting.calls = []
        first = validate_experiment(raw_config(project, retriever={"name": "counting"}))
        run_experiment(first, reporters=[TerminalReport(io.StringIO())], progress=False)
        Counting.calls = []
        other_metrics = validate_experiment(
            raw_config(project, retriever={"name": "counting"}, metrics={"measures": ["AP", "RR"]})
        )
        run_experiment(other_metrics, reporters=[TerminalReport(io.StringIO())], progress=False)
        assert Counting.calls == []


WRITER = """
import sys
from pathlib import Path
from evalframe.retrieval.cache import RunCache
from evalframe.core.types import Ranking
cache = RunCache(Path(sys.argv[1]), {"retriever": "shared"})
for round_ in range(30):
    batch = [
        (f"query {q}", Ranking.from_pairs(str(q), [(f"d{q}", 1.0), ("x", 0.5)]))
        for q in range(20)
    ]
    cache.put_many(batch[: 10 + round_ % 10], 10)
    cache.put(f"query {round_ % 20}", 10, batch[round_ % 20][1])
    assert all(cache.get(str(q), f"query {q}", 10) for q in range(10))
"""


def test_concurrent_writers_leave_only_whole_entries(tmp_path: Path) -> None:
    """Four real processes write the same 20 keys, in batches and alone, at once."""
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path)]) for _ in range(4)]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    entries = _values(tmp_path)
    assert len(entries) == 20
    for _, _, value in entries:
        json.loads(value)  # every entry is complete JSON
    with closing(sqlite3.connect(tmp_path / DATABASE)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    cache = RunCache(tmp_path, {"retriever": "shared"})
    assert all(cache.get(str(q), f"query {q}", 10) is not None for q in range(20))


def test_info_and_clear(tmp_path: Path) -> None:
    cache = RunCache(tmp_path, fingerprint())
    cache.put("q", 5, Ranking.from_pairs("1", [("a", 1.0)]))
    info = cache_info(tmp_path)
    assert info["kinds"]["runs"]["entries"] == 1 and info["bytes"] > 0
    assert clear_cache(tmp_path) == {"runs": info["kinds"]["runs"]["bytes"]}
    assert cache_info(tmp_path)["bytes"] == 0


def test_clear_keeps_pending_records_and_clears_only_the_kinds_asked(tmp_path: Path) -> None:
    """`cache clear` emptied mlflow-pending too, so `evalframe sync` no longer found the
    runs still to log: what is not a cache stays. `--kind` clears some kinds only."""
    from evalframe.core.errors import ConfigError
    from evalframe.core.store import open_store

    RunCache(tmp_path, fingerprint()).put("q", 5, Ranking.from_pairs("1", [("a", 1.0)]))
    open_store(tmp_path, "solver").put("k", '"an answer"')
    (tmp_path / "bm25").mkdir()
    (tmp_path / "bm25" / "index.bin").write_bytes(b"x" * 10)
    pending = tmp_path / "mlflow-pending"
    pending.mkdir()
    (pending / "uid.path").write_text("/runs/r1/mlflow_pending.json")

    assert clear_cache(tmp_path, ["solver", "bm25"]) == {"solver": len('"an answer"'), "bm25": 10}
    kinds = cache_info(tmp_path)["kinds"]
    assert "solver" not in kinds and "bm25" not in kinds and kinds["runs"]["entries"] == 1
    with pytest.raises(ConfigError) as err:
        clear_cache(tmp_path, ["dense"])
    assert err.value.key == "--kind" and "runs" in str(err.value.expected)

    assert set(clear_cache(tmp_path)) == {"runs"}
    # the tag the entry store wrote stays: the folder is still evalframe's cache
    assert sorted(p.name for p in tmp_path.iterdir()) == ["CACHEDIR.TAG", "mlflow-pending"]
    assert (pending / "uid.path").read_text() == "/runs/r1/mlflow_pending.json"


def test_entries_of_the_old_one_file_per_entry_layout_are_read_and_moved_in(
    tmp_path: Path,
) -> None:
    """A cache folder written before the SQLite store still answers, and is copied over."""
    old = RunCache(tmp_path, fingerprint())
    key = old.key("how?", 5)
    legacy = FileEntryStore(tmp_path, "runs")
    ranking = Ranking.from_pairs("1", [("a", 2.0), ("b", 1.0)])
    legacy.put(key, json.dumps({"key": key, "ranking": ranking.model_dump(mode="json")}))
    cache = RunCache(tmp_path, fingerprint())
    assert cache.get("q9", "how?", 5) == ranking.model_copy(update={"query_id": "q9"})
    assert [(ns, k) for ns, k, _ in _values(tmp_path)] == [("runs", key)]
    legacy.path(key).unlink()  # from now on the database answers
    assert RunCache(tmp_path, fingerprint()).get("1", "how?", 5) == ranking


def test_a_damaged_database_is_a_located_error(tmp_path: Path) -> None:
    (tmp_path / DATABASE).write_bytes(b"this is not a database" * 100)
    with pytest.raises(DataError) as err:
        RunCache(tmp_path, fingerprint()).get("1", "q", 5)
    assert str(tmp_path / DATABASE) in err.value.render()
    assert "evalframe cache clear" in err.value.render()


class Versioned(Counting):
    """A retriever whose output depends on a file outside its config (a model, a catalogue)."""

    model_version = "v1"

    def cache_identity(self) -> str:
        return Versioned.model_version


def test_a_retrievers_own_identity_joins_the_key(project: Project) -> None:
    """A model retrained in place (same path, same config) is not answered from the cache."""
    with RETRIEVERS.scoped() as reg:
        reg.add("versioned", Versioned, CountingConfig)
        exp = validate_experiment(raw_config(project, retriever={"name": "versioned"}))
        Counting.calls, Versioned.model_version = [], "v1"
        run_experiment(exp, reporters=[TerminalReport(io.StringIO())], progress=False)
        assert Counting.calls == ["1", "2", "3", "4"]
        Counting.calls = []
        run_experiment(exp, reporters=[TerminalReport(io.StringIO())], progress=False)
        assert Counting.calls == []  # same identity: all cached
        Versioned.model_version = "v2"
        run_experiment(exp, reporters=[TerminalReport(io.StringIO())], progress=False)
        assert Counting.calls == ["1", "2", "3", "4"]
    plain = retriever_fingerprint("r", "1", None, None)
    assert "identity" not in plain  # keys of retrievers without one are unchanged


def test_a_folder_holding_other_files_is_not_made_the_cache(tmp_path: Path) -> None:
    """EVALFRAME_CACHE_DIR=~/.cache (for ~/.cache/evalframe): the first cache write
    tagged it, and `evalframe cache clear` then emptied every other tool's cache. A
    folder with other files is refused at the first write, tagged and written nothing."""
    from evalframe.core.errors import DataError
    from evalframe.core.store import cache_folder, open_store

    home_cache = tmp_path / "dot-cache"
    (home_cache / "pip").mkdir(parents=True)
    (home_cache / "pip" / "wheel.whl").write_bytes(b"w")
    for write in (
        lambda: RunCache(home_cache, fingerprint()).put("q", 5, Ranking.from_pairs("1", [])),
        lambda: open_store(home_cache, "solver").put("k", '"v"'),
        lambda: cache_folder(home_cache / "bm25" / "abc", home_cache),
    ):
        with pytest.raises(DataError, match="holds files evalframe did not put there") as err:
            write()
        assert "1 entry: pip" in err.value.render()
    assert sorted(p.name for p in home_cache.iterdir()) == ["pip"]  # nothing added
    with pytest.raises(DataError, match="not an evalframe cache folder"):
        clear_cache(home_cache)
    assert (home_cache / "pip" / "wheel.whl").read_bytes() == b"w"


@pytest.mark.parametrize("before", ["missing", "empty", "tagged", "old store", "dot file"])
def test_a_folder_of_the_caches_own_is_made_the_cache(tmp_path: Path, before: str) -> None:
    """Missing, empty, tagged, or an evalframe cache from before the tag (its entry
    store): the cache goes there, tagged first. A dot file (a concurrent job's tag on its
    way in) is not someone else's file."""
    from evalframe.core.store import CACHE_TAG, cache_folder

    root = tmp_path / "cache"
    if before != "missing":
        root.mkdir()
    if before == "tagged":
        (root / CACHE_TAG).write_text("Signature: 8a477f597d28d172789f06886806bc55\n")
        (root / "bm25").mkdir()
    if before == "old store":
        RunCache(root, fingerprint()).put("q", 5, Ranking.from_pairs("1", [("a", 1.0)]))
        (root / CACHE_TAG).unlink()
    if before == "dot file":
        (root / ".CACHEDIR.TAG.x1.tmp").write_text("")
    cache_folder(root / "dense" / "k", root)
    assert (root / CACHE_TAG).is_file() and (root / "dense" / "k").is_dir()


def test_writers_making_one_fresh_cache_at_once_do_not_take_each_other_for_strangers(
    tmp_path: Path,
) -> None:
    """Each writer tags the folder before it puts anything in, and the check looks for the
    tag after listing the folder: a writer that finds another's entries finds its tag."""
    from concurrent.futures import ThreadPoolExecutor

    from evalframe.core.store import CACHE_TAG, FileEntryStore

    for attempt in range(20):
        root = tmp_path / f"c{attempt}"
        stores = [FileEntryStore(root, f"kind{i % 3}") for i in range(8)]
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda s, i: s.put(f"{i:02x}" * 8, "v"), stores, range(8)))
        assert (root / CACHE_TAG).is_file()
