"""Corpus manifests: a run answered from the cache does not read its corpus."""

from __future__ import annotations

import io
import json
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


def _deferred(tmp_path: Path, text: str, kind: type[Loader] = Loader) -> tuple[Any, Corpus]:
    """A loader over ``text`` and the deferred corpus of its second load (manifest kept)."""
    words = tmp_path / "words.txt"
    words.write_text(text)
    loader = kind(words)
    with_manifest(loader, Spec, None, tmp_path / "cache")
    return loader, with_manifest(loader, Spec, None, tmp_path / "cache")


def test_a_corpus_that_changes_under_a_deferred_run_is_an_error(tmp_path: Path) -> None:
    loader, deferred = _deferred(tmp_path, "alpha beta")
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


class TextsLoader(Loader):
    """:class:`Loader` that can also read chosen documents; counts those reads."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.asked: list[list[str]] = []
        self.edit: dict[str, str] = {}  # id -> a text that differs from what load() read

    def texts(self, ids: Any) -> dict[str, str]:
        self.asked.append(sorted(ids))
        words = self.path.read_text().split()
        found = {f"d{i}": w for i, w in enumerate(words) if f"d{i}" in set(ids)}
        return {**found, **{k: v for k, v in self.edit.items() if k in found}}


def test_a_deferred_corpus_reads_only_the_texts_asked_for(tmp_path: Path) -> None:
    loader, deferred = _deferred(tmp_path, "alpha beta gamma", TextsLoader)
    assert deferred.texts(["d2", "d0", "absent"]) == {"d0": "alpha", "d2": "gamma"}
    assert loader.loads == 1 and loader.asked == [["d0", "d2"]]  # ids it lacks: not asked
    assert Corpus.build("c", [Document(id="a", text="x")]).texts(["a", "b"]) == {"a": "x"}


def test_a_text_that_changed_since_the_manifest_is_an_error(tmp_path: Path) -> None:
    loader, deferred = _deferred(tmp_path, "alpha beta gamma", TextsLoader)
    loader.edit = {"d1": "BETA"}
    with pytest.raises(DataError, match="'d1' is not the one the corpus was read with"):
        deferred.texts(["d1"])


def test_without_texts_a_deferred_corpus_loads_whole_for_a_few(tmp_path: Path) -> None:
    loader, deferred = _deferred(tmp_path, "alpha beta gamma")
    assert deferred.texts(["d1"]) == {"d1": "beta"} and loader.loads == 2


def test_a_warm_run_with_failure_categories_and_its_page_reads_no_whole_corpus(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalframe.report.page import RunPage

    calls: list[str] = []
    load, texts = JsonlCorpus.load, JsonlCorpus.texts

    def counted_load(self: JsonlCorpus) -> Corpus:
        calls.append("load")
        return load(self)

    def counted_texts(self: JsonlCorpus, ids: Any) -> dict[str, str]:
        calls.append("texts")
        return texts(self, ids)

    monkeypatch.setattr(JsonlCorpus, "load", counted_load)
    monkeypatch.setattr(JsonlCorpus, "texts", counted_texts)

    def experiment(out: str) -> Any:  # failure categories on, as by default
        dirs = {"dir": str(project.root / out), "cache_dir": str(project.root / "cache")}
        return validate_experiment(raw_config(project, output=dirs, report={"html": True}))

    # one query that fails: its words are the cache document's, its answer another
    lost = {
        "id": 99,
        "question": "Where is the BM25 index cached on disk?",
        "expected_chunks": ["install"],
    }
    with project.golden.open("a") as fh:
        fh.write(json.dumps(lost) + "\n")
    reporters = [RunPage(), TerminalReport(io.StringIO())]
    run_experiment(experiment("cold"), reporters=reporters, progress=False)
    assert calls == ["load"]
    run_experiment(experiment("warm"), reporters=reporters, progress=False)
    # the page's few documents through texts(); the failed queries' document terms
    # from the cache folder
    assert calls == ["load", "texts"]
    cold, warm = project.root / "cold", project.root / "warm"
    failures = json.loads((warm / "summary.json").read_text())["analysis"]["failures"]
    assert failures["failed"] == 1
    failed = [json.loads(line) for line in (warm / "per_query.jsonl").read_text().splitlines()]
    assert [r["failure"]["category"] for r in failed if "failure" in r] != []
    for name in ("per_query.jsonl", "gates.json", "metrics.json"):
        assert (cold / name).read_text() == (warm / name).read_text()
    assert (warm / "report.html").read_text().count("<pre") == (
        (cold / "report.html").read_text().count("<pre")
    )
