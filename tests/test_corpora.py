"""Corpus manifests: a run answered from the cache does not read its corpus."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import pytest
from evalframe_jsonl.corpus import JsonlCorpus

from evalframe.core.errors import DataError
from evalframe.core.types import Corpus, Document
from evalframe.pipeline.config import validate_experiment
from evalframe.pipeline.run import run_experiment
from evalframe.report.terminal import TerminalReport
from evalframe.retrieval.corpora import manifest_key, with_manifest
from tests.conftest import Project, raw_config


class Spec:
    name, version = "counting", "1.0"


class Loader:
    """Reads ``path``; counts its loads; ``extra`` documents are added to what it reads."""

    def __init__(self, path: Path) -> None:
        self.path, self.loads, self.extra = path, 0, 0

    def sources(self) -> list[Path]:
        return [self.path]

    def load(self) -> Corpus:
        self.loads += 1
        docs = [
            Document(id=f"d{i}", text=line) for i, line in enumerate(self.path.read_text().split())
        ]
        docs += [Document(id=f"x{i}", text="extra") for i in range(self.extra)]
        return Corpus.build("words", docs)


def test_the_second_load_is_deferred_until_the_documents_are_needed(tmp_path: Path) -> None:
    words = tmp_path / "words.txt"
    words.write_text("alpha beta gamma")
    loader = Loader(words)
    first = with_manifest(loader, Spec, None, tmp_path / "cache")
    assert loader.loads == 1
    second = with_manifest(loader, Spec, None, tmp_path / "cache")
    assert loader.loads == 1  # name, hash, ids and size from the manifest
    assert (second.name, second.content_hash, len(second)) == (
        first.name,
        first.content_hash,
        3,
    )
    assert second.ids() == first.ids() == {"d0", "d1", "d2"}
    assert loader.loads == 1
    assert [d.text for d in second.documents] == ["alpha", "beta", "gamma"]  # read now
    assert second.documents[1] == first.documents[1] and loader.loads == 2


def test_an_edited_file_is_read_again(tmp_path: Path) -> None:
    words = tmp_path / "words.txt"
    words.write_text("alpha beta gamma")
    loader = Loader(words)
    first = with_manifest(loader, Spec, None, tmp_path / "cache")
    before = words.stat()
    words.write_text("alpha beta delta")  # same size, new content...
    os.utime(words, ns=(before.st_atime_ns, before.st_mtime_ns))  # ...and the old mtime back
    again = with_manifest(loader, Spec, None, tmp_path / "cache")
    assert loader.loads == 2 and again.content_hash != first.content_hash


def test_a_corpus_that_changes_under_a_deferred_run_is_an_error(tmp_path: Path) -> None:
    words = tmp_path / "words.txt"
    words.write_text("alpha beta")
    loader = Loader(words)
    with_manifest(loader, Spec, None, tmp_path / "cache")
    deferred = with_manifest(loader, Spec, None, tmp_path / "cache")
    loader.extra = 1  # what the loader reads now differs from the manifest
    with pytest.raises(DataError, match="is not the one this run started from"):
        list(deferred.documents)


def test_no_manifest_without_sources_or_for_a_missing_file(tmp_path: Path) -> None:
    assert manifest_key("x", "1", None, [tmp_path / "absent"]) is None
    assert manifest_key("x", "1", None, [tmp_path]) is None  # a folder: read every time

    class Plain:
        loads = 0

        def load(self) -> Corpus:
            Plain.loads += 1
            return Corpus.build("p", [Document(id="a", text="x")])

    for _ in range(2):
        with_manifest(Plain(), Spec, None, tmp_path / "cache")
    assert Plain.loads == 2


def test_a_warm_run_does_not_read_the_corpus(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    loads: list[Any] = []
    original = JsonlCorpus.load

    def counted(self: JsonlCorpus) -> Corpus:
        loads.append(1)
        return original(self)

    monkeypatch.setattr(JsonlCorpus, "load", counted)
    # the failure categories compare document texts, so they would read it
    exp = validate_experiment(raw_config(project, analysis={"failures": {"enabled": False}}))
    cold = run_experiment(exp, reporters=[TerminalReport(io.StringIO())], progress=False)
    assert len(loads) == 1
    warm = run_experiment(exp, reporters=[TerminalReport(io.StringIO())], progress=False)
    assert len(loads) == 1  # bm25's index and every ranking came from the cache
    assert warm.evaluation.run.metadata["cache"]["misses"] == 0
    assert {str(m): a.mean for m, a in warm.evaluation.overall.items()} == {
        str(m): a.mean for m, a in cold.evaluation.overall.items()
    }
    fresh = validate_experiment(
        raw_config(project, cache={"retrieval": False}, analysis={"failures": {"enabled": False}})
    )
    run_experiment(fresh, reporters=[TerminalReport(io.StringIO())], progress=False)
    assert len(loads) == 2  # no cache, no manifest: read as always
