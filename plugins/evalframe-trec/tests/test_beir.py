"""BEIR folders (corpus.jsonl, queries.jsonl, qrels/<split>.tsv): what loads, what is rejected."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from evalframe_trec.beir import BeirCorpus, BeirCorpusConfig, BeirDataset, BeirDatasetConfig

from evalframe.core.errors import DataError
from evalframe.core.types import Corpus, GoldenSet
from evalframe.plugin.protocols import PluginContext
from evalframe.plugin.registry import DATASETS
from evalframe.plugin.testing import CorpusLoaderContract, PluginContract

MINI = Path(__file__).parent / "data" / "beir" / "mini"


def load(path: Path = MINI, context: PluginContext | None = None, **settings: Any) -> GoldenSet:
    return BeirDataset(
        BeirDatasetConfig(path=str(path), **settings), context or PluginContext()
    ).load()


def load_corpus(path: Path = MINI, **settings: Any) -> Corpus:
    return BeirCorpus(BeirCorpusConfig(path=str(path), **settings), PluginContext()).load()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A writable copy of the mini BEIR folder, for tests that break one file."""
    return Path(shutil.copytree(MINI, tmp_path / "mini"))


class TestBeirDatasetContract(PluginContract):
    plugin_name = "beir"
    registry = DATASETS


class TestBeirCorpusContract(CorpusLoaderContract):
    plugin_name = "beir"

    @pytest.fixture
    def loader(self) -> BeirCorpus:
        return BeirCorpus(BeirCorpusConfig(path=str(MINI)), PluginContext())


# -- dataset --------------------------------------------------------------------------


def test_only_queries_judged_in_the_split_are_loaded_by_default(
    capsys: pytest.CaptureFixture[str],
) -> None:
    golden = load()
    assert [q.id for q in golden] == ["q1", "q2", "4"]
    assert {q.id: q.judgments for q in golden} == {
        "q1": {"d1": 1},
        "q2": {"d2": 1, "d1": 0},
        "4": {"3": 2},
    }
    assert golden.by_id()["q2"].text == "Exercise reduces blood pressure."
    assert golden.name == "mini-test"
    assert golden.provenance["split"] == "test"
    assert golden.provenance["format"] == "beir"
    err = capsys.readouterr().err
    assert "1 of 4 queries have no qrels in split 'test' and were not loaded" in err
    assert "q3" in err


def test_all_queries_can_be_loaded_with_unjudged_ones_as_negatives(
    capsys: pytest.CaptureFixture[str],
) -> None:
    golden = load(queries="all")
    assert [q.id for q in golden] == ["q1", "q2", "q3", "4"]
    q3 = golden.by_id()["q3"]
    assert q3.is_negative and q3.judgments == {}
    assert q3.text == "Coffee causes atrial fibrillation."  # whitespace normalised
    assert (
        "1 of 4 queries have no qrels in split 'test'; kept as negative" in capsys.readouterr().err
    )


def test_query_metadata_is_kept() -> None:
    assert load().by_id()["q1"].metadata == {"topic": "nutrition"}


def test_another_split() -> None:
    golden = load(split="dev")
    assert [(q.id, q.judgments) for q in golden] == [("q3", {"q3": 1})]
    assert golden.name == "mini-dev"


def test_a_query_id_that_is_also_a_document_id_is_pointed_out(
    capsys: pytest.CaptureFixture[str],
) -> None:
    load(split="dev", context=PluginContext(corpus=load_corpus()))
    err = capsys.readouterr().err
    assert "1 query id(s) are also document ids" in err
    assert "metrics.policies.drop_self_matches=true" in err


def test_unknown_split_lists_the_available_ones() -> None:
    with pytest.raises(DataError) as err:
        load(split="train")
    assert err.value.key == "dataset.split"
    assert err.value.expected == "one of: dev, test"


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("q1\td1\t1\n", 1, "must be its header"),
        ("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1 d2 1\n", 3, "1 tab-separated column(s)"),
        ("query-id\tcorpus-id\tscore\nq1\td1\tyes\n", 2, "score is not an integer"),
        ("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td1\t0\n", 3, "judged twice"),
        ("query-id\tcorpus-id\tscore\nq1\td1\t1\nq9\td1\t1\n", 3, "query 'q9', which is not in"),
        ("query-id\tcorpus-id\tscore\n\td1\t1\n", 2, "empty query-id"),
    ],
)
def test_malformed_qrels_name_file_and_line(
    folder: Path, text: str, line: int, fragment: str
) -> None:
    qrels = folder / "qrels" / "test.tsv"
    qrels.write_text(text)
    with pytest.raises(DataError) as err:
        load(folder)
    assert err.value.line == line
    assert f"{qrels}:{line}" in err.value.render()
    assert fragment in err.value.render()
    assert err.value.hint, "every data error carries a hint"


def test_qrels_of_unknown_queries_can_be_skipped(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq9\td1\t1\n")
    assert [q.id for q in load(folder, allow_unknown_qrels=True)] == ["q1"]
    assert "1 judgment line(s)" in capsys.readouterr().err


def test_a_split_with_only_a_header_is_an_error(folder: Path) -> None:
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n")
    with pytest.raises(DataError, match="has no judgments"):
        load(folder)


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ('{"_id": "q1", "text": "a"}\n{"_id": "q1", "text": "b"}\n', 2, "duplicated (first on"),
        ('{"_id": "q1", "text": "a"}\n{"text": "b"}\n', 2, "no '_id' field"),
        ('{"_id": "q1", "text": "a"}\n{"_id": "q2"}\n', 2, "no 'text' field"),
        ('{"_id": "q1", "text": 7}\n', 1, "must be a string"),
        ('{"_id": "q1", "text": "  "}\n', 1, "empty text"),
        ('{"_id": true, "text": "a"}\n', 1, "non-empty string or an integer"),
        ('{"_id": "q1", "text": "a", "metadata": [1]}\n', 1, "'metadata' must be a JSON object"),
        ('["q1", "a"]\n', 1, "must be a JSON object"),
        ('{"_id": "q1", "text": "a"}\n{"_id": "q2",\n', 2, "not valid JSON"),
    ],
)
def test_malformed_queries_name_file_and_line(
    folder: Path, text: str, line: int, fragment: str
) -> None:
    queries = folder / "queries.jsonl"
    queries.write_text(text)
    with pytest.raises(DataError) as err:
        load(folder)
    assert err.value.line == line
    assert f"{queries}:{line}" in err.value.render()
    assert fragment in err.value.render()
    assert err.value.hint, "every data error carries a hint"


def test_a_file_instead_of_a_folder_is_an_error() -> None:
    with pytest.raises(DataError) as err:
        load(MINI / "queries.jsonl")
    assert err.value.key == "dataset.path"


# -- corpus ---------------------------------------------------------------------------


def test_corpus_prepends_titles_and_keeps_them_as_metadata(
    capsys: pytest.CaptureFixture[str],
) -> None:
    corpus = load_corpus()
    assert corpus.name == "mini"
    docs = {d.id: d for d in corpus.documents}
    assert list(docs) == ["d1", "d2", "3", "d4", "q3"]
    assert docs["d1"].text == (
        "Vitamin D and bone density\nA randomised trial of vitamin D supplements in older "
        "adults found no change in bone density."
    )
    assert docs["d1"].metadata == {"year": 2019, "title": "Vitamin D and bone density"}
    assert docs["d2"].text.startswith("Regular aerobic exercise")  # no empty title line
    assert docs["3"].text.startswith("Sleep and memory\n")  # integer _id normalised
    err = capsys.readouterr().err
    assert "1 document(s)" in err and "no title and no text; kept" in err and "d4" in err


def test_corpus_without_titles() -> None:
    docs = {d.id: d.text for d in load_corpus(include_title=False).documents}
    assert docs["3"] == "Slow-wave sleep supports the consolidation of declarative memory."


def test_empty_documents_can_be_dropped_or_rejected(capsys: pytest.CaptureFixture[str]) -> None:
    assert "d4" not in load_corpus(empty_docs="drop").ids()
    assert "dropped" in capsys.readouterr().err
    with pytest.raises(DataError) as err:
        load_corpus(empty_docs="error")
    assert err.value.line == 4
    assert "'d4' has no title and no text" in err.value.message


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ('{"_id": "a", "text": "x"}\n{"_id": "a", "text": "y"}\n', 2, "duplicated (first on"),
        ('{"_id": "a", "title": "t"}\n', 1, "no 'text' field"),
        ('{"_id": "a", "title": 3, "text": "x"}\n', 1, "'title' must be a string"),
        ('{"_id": "", "text": "x"}\n', 1, "non-empty string or an integer"),
    ],
)
def test_malformed_corpus_names_file_and_line(
    folder: Path, text: str, line: int, fragment: str
) -> None:
    path = folder / "corpus.jsonl"
    path.write_text(text)
    with pytest.raises(DataError) as err:
        load_corpus(folder)
    assert err.value.line == line
    assert f"{path}:{line}" in err.value.render()
    assert fragment in err.value.render()
    assert err.value.hint, "every data error carries a hint"


def test_a_null_title_counts_as_none(folder: Path) -> None:
    (folder / "corpus.jsonl").write_text('{"_id": "a", "title": null, "text": "x"}\n')
    assert load_corpus(folder).documents[0].text == "x"


def test_empty_corpus_is_an_error(folder: Path) -> None:
    (folder / "corpus.jsonl").write_text("\n")
    with pytest.raises(DataError, match="empty"):
        load_corpus(folder)


@pytest.mark.parametrize("include_title", [True, False])
@pytest.mark.parametrize("empty_docs", ["keep", "drop"])
def test_texts_of_chosen_documents_are_those_load_gives(
    folder: Path, include_title: bool, empty_docs: str
) -> None:
    with (folder / "corpus.jsonl").open("a") as fh:
        fh.write('{"_id": "blank", "title": " ", "text": "  "}\n')
    cfg = BeirCorpusConfig(path=str(folder), include_title=include_title, empty_docs=empty_docs)
    loader = BeirCorpus(cfg, PluginContext())
    loaded = {d.id: d.text for d in loader.load().documents}
    asked = [*loaded, "blank", "absent"]
    assert loader.texts(asked) == loaded  # a dropped blank document is absent from both
    assert ("blank" in loaded) == (empty_docs == "keep")
    assert loader.sources() == [folder / "corpus.jsonl"]
