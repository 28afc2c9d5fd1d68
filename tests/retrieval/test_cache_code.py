"""The retrieval cache and corpus manifests follow a plugin's code, not only its version.

A plugin developed in place (an editable install, a module on ``PYTHONPATH``) keeps its
version while its code changes: its rankings must then be retrieved again once, not
answered from what the old code computed (the audit's r17: a bug fixed in place, and
the re-run scored the buggy rankings from the cache). A release keeps the key it had.
"""

from __future__ import annotations

import importlib
import shutil
import sys
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest

from evalframe.core.errors import PluginError
from evalframe.core.types import GoldenQuery, GoldenSet, Run
from evalframe.plugin.codeid import code_identity
from evalframe.plugin.dists import learn_distribution
from evalframe.plugin.registry import RETRIEVERS
from evalframe.retrieval.cache import RunCache, retriever_fingerprint
from evalframe.retrieval.corpora import manifest_key
from evalframe.retrieval.retrieve import retrieve_all

MODULE = "ef_cc_overlap"

#: A retriever with r17's bug: it returns its top hit only.
BUGGY = '''
from evalframe.core.types import Ranking
from evalframe.plugin.registry import retriever


@retriever("ef_cc_overlap")
class Overlap:
    """Fixed documents, best first."""

    def __init__(self, config, context):
        pass

    def retrieve(self, query, k):
        return Ranking.from_pairs(query.id, [("d1", 3.0), ("d2", 2.0), ("d3", 1.0)][:1])
'''
FIXED = BUGGY.replace("[:1]", "[:k]")

GOLDEN = GoldenSet.build(
    "g", [GoldenQuery(id=f"q{i}", text=f"query {i}", judgments={"d2": 1}) for i in range(3)]
)


@pytest.fixture
def release(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A retriever module installed as pip installs a release from an index: in a
    ``site-packages`` folder, beside its dist-info, without a ``direct_url.json``."""
    site = tmp_path / "venv" / "lib" / "site-packages"
    (site / "ef_cc_release").mkdir(parents=True)
    (site / "ef_cc_release" / "__init__.py").write_text("X = 1\n")
    info = site / "ef_cc_release-2.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ef-cc-release\nVersion: 2.0\n")
    (info / "entry_points.txt").write_text(
        "[evalframe.retrievers]\nef_cc_release = ef_cc_release\n"
    )
    monkeypatch.syspath_prepend(str(site))
    (entry,) = tuple(metadata.Distribution.at(info).entry_points)
    learn_distribution(entry)  # as loading its entry point does in a run
    return "ef_cc_release"


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The plugin's file, in a folder on ``sys.path`` (no distribution: PYTHONPATH)."""
    (tmp_path / "src").mkdir()
    path = tmp_path / "src" / f"{MODULE}.py"
    path.write_text(BUGGY)
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    yield path
    sys.modules.pop(MODULE, None)
    code_identity.cache_clear()


def run_in_a_new_process(cache_dir: Path) -> tuple[Run, RunCache]:
    """What a run does: import the plugin, key the cache by name as run_cache() does
    (version, config and corpus fixed), retrieve what the cache lacks."""
    code_identity.cache_clear()
    sys.modules.pop(MODULE, None)
    with RETRIEVERS.scoped():
        importlib.import_module(MODULE)
        spec = RETRIEVERS.get("ef_cc_overlap")
        cache = RunCache(cache_dir, retriever_fingerprint(spec.name, "0.1.0", None, "corpus"))
        run = retrieve_all(spec.obj(None, None), GOLDEN, 3, progress=False, cache=cache)
    return run, cache


def test_a_plugin_fixed_in_place_is_retrieved_again_once(plugin: Path, tmp_path: Path) -> None:
    run, cache = run_in_a_new_process(tmp_path / "cache")
    assert (cache.hits, cache.misses) == (0, 3)
    assert run.rankings["q0"].doc_ids == ("d1",)
    run, cache = run_in_a_new_process(tmp_path / "cache")
    assert (cache.hits, cache.misses) == (3, 0)  # nothing changed: a warm run

    plugin.write_text(FIXED)  # the version stays 0.1.0
    # the bytecode written a moment ago may carry the same mtime and size: Python would
    # import it as the fixed module (an editor's save is seconds later, not a test's)
    shutil.rmtree(plugin.parent / "__pycache__", ignore_errors=True)
    run, cache = run_in_a_new_process(tmp_path / "cache")
    assert (cache.hits, cache.misses) == (0, 3)
    assert run.rankings["q0"].doc_ids == ("d1", "d2", "d3")
    run, cache = run_in_a_new_process(tmp_path / "cache")
    assert (cache.hits, cache.misses) == (3, 0)
    assert run.rankings["q0"].doc_ids == ("d1", "d2", "d3")


def test_the_module_given_or_looked_up_by_name_gives_one_key(plugin: Path) -> None:
    with RETRIEVERS.scoped():
        importlib.import_module(MODULE)
        by_name = retriever_fingerprint("ef_cc_overlap", "0.1.0", None, "c")
    given = retriever_fingerprint("ef_cc_overlap", "0.1.0", None, "c", module=MODULE)
    assert by_name == given
    assert given["code"] == code_identity(MODULE)


def test_a_release_keeps_the_key_it_always_had(release: str) -> None:
    """No code hash where none is needed (or a name no loaded retriever has): the
    fingerprint is exactly the old one, so a release's cached rankings stay hits."""
    assert retriever_fingerprint("nobody", "2.0", None, "c", module=release) == {
        "format": 1,
        "retriever": "nobody",
        "version": "2.0",
        "config": {},
        "corpus": "c",
    }
    assert "code" not in retriever_fingerprint("nobody-registered", "1.0", None, "c")


def test_bm25_installed_editable_stays_a_hit_while_unchanged() -> None:
    importlib.import_module("evalframe_bm25.retriever")
    first = retriever_fingerprint("bm25", "0.1.0", None, "c")
    code_identity.cache_clear()  # the next run
    assert retriever_fingerprint("bm25", "0.1.0", None, "c") == first
    assert first.get("code") == code_identity("evalframe_bm25.retriever")


def test_an_identity_the_key_cannot_hold_names_the_retriever() -> None:
    """The audit's r18: a Path and a set in cache_identity() crashed in the hash as an
    evalframe bug; it is the plugin's mistake, said before anything is retrieved."""
    with pytest.raises(PluginError, match=r"retriever 'r18': cache_identity\(\) returned a set"):
        retriever_fingerprint("r18", "0.1.0", None, "c", {"model": "m", "files": {"a.bin"}})
    with pytest.raises(PluginError, match="returned a PosixPath"):
        retriever_fingerprint("r18", "0.1.0", None, "c", {"model": Path("/tmp")})


def test_a_corpus_loader_fixed_in_place_reads_its_files_again(
    plugin: Path, release: str, tmp_path: Path
) -> None:
    source = tmp_path / "docs.txt"
    source.write_text("alpha beta")
    key = manifest_key("loader", "0.1.0", None, [source], module=MODULE)
    code_identity.cache_clear()
    assert manifest_key("loader", "0.1.0", None, [source], module=MODULE) == key
    plugin.write_text(FIXED)
    code_identity.cache_clear()
    assert manifest_key("loader", "0.1.0", None, [source], module=MODULE) != key
    # a release (no code hash) keys as before: by name, version, config and sources
    assert manifest_key("loader", "0.1.0", None, [source], module=release) == manifest_key(
        "loader", "0.1.0", None, [source]
    )
