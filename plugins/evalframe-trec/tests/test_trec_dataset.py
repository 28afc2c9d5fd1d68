"""TREC topics (TSV and <top> format) with qrels: what loads, and every way it is rejected."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from evalframe_trec.trec import TrecDataset, TrecDatasetConfig

from evalframe.core.errors import DataError
from evalframe.core.types import Corpus, Document, GoldenSet
from evalframe.plugin.protocols import PluginContext
from evalframe.plugin.registry import DATASETS
from evalframe.plugin.testing import PluginContract

DATA = Path(__file__).parent / "data" / "trec"

#: The judgments of tests/data/trec/qrels.txt, written out by hand.
QRELS = {
    "401": {"FT911-3012": 2, "FT911-0040": 1, "LA010189-0001": 0},
    "402": {"FBIS3-10082": 1, "FBIS3-10491": -1, "FT934-5418": 0},
    "403": {"LA052390-0123": 2, "FT921-7702": 1},
}
TITLES = {
    "401": "solar panel recycling",
    "402": "honeybee colony collapse",
    "403": "deep sea mining regulation",
    "404": "tidal energy in Scotland",
}


def load(
    topics: Path = DATA / "topics.trec",
    qrels: Path = DATA / "qrels.txt",
    context: PluginContext | None = None,
    **settings: Any,
) -> GoldenSet:
    config = TrecDatasetConfig(topics=str(topics), qrels=str(qrels), **settings)
    return TrecDataset(config, context or PluginContext()).load()


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


class TestTrecDatasetContract(PluginContract):
    plugin_name = "trec"
    registry = DATASETS


# -- what loads ---------------------------------------------------------------------


def test_trec_topics_load_titles_and_judgments() -> None:
    golden = load()
    assert [q.id for q in golden] == ["401", "402", "403", "404"]
    assert {q.id: q.text for q in golden} == TITLES
    assert {q.id: q.judgments for q in golden if q.judgments} == QRELS
    assert golden.name == "topics"
    assert golden.provenance["format"] == "trec"
    assert golden.provenance["topics_format"] == "trec"
    assert golden.provenance["topic_field"] == "title"


def test_tsv_topics_load_the_same_queries() -> None:
    golden = load(DATA / "topics.tsv")
    assert {q.id: q.text for q in golden} == TITLES
    assert golden.provenance["topics_format"] == "tsv"


def test_the_same_queries_hash_the_same_from_tsv_and_trec_format() -> None:
    assert load(DATA / "topics.tsv").content_hash == load(DATA / "topics.trec").content_hash


def test_forcing_a_format_gives_the_same_result_as_auto() -> None:
    assert load(topics_format="trec").content_hash == load().content_hash
    assert load(DATA / "topics.tsv", topics_format="tsv").content_hash == load().content_hash


def test_description_as_the_query_text() -> None:
    texts = {q.id: q.text for q in load(topic_field="desc")}
    assert texts["401"] == "How are photovoltaic panels recycled at the end of their working life?"
    assert texts["403"] == "Which international bodies regulate mining of the deep sea bed?"


def test_title_and_description_joined() -> None:
    texts = {q.id: q.text for q in load(topic_field="title+desc")}
    assert texts["402"] == (
        "honeybee colony collapse What causes the collapse of honeybee colonies?"
    )


def test_zero_and_negative_labels_are_kept_as_judged() -> None:
    q402 = load().by_id()["402"]
    assert q402.judgments["FBIS3-10491"] == -1
    assert q402.judgments["FT934-5418"] == 0
    assert q402.relevant == {"FBIS3-10082"}


def test_unjudged_topics_are_kept_as_negatives_with_a_warning(
    capsys: pytest.CaptureFixture[str],
) -> None:
    golden = load()
    assert [q.id for q in golden if q.is_negative] == ["404"]
    assert golden.by_id()["404"].judgments == {}
    err = capsys.readouterr().err
    assert "1 topic(s) have no judgments" in err
    assert "negative examples" in err
    assert "404" in err


def test_unjudged_topics_can_be_dropped_with_a_warning(capsys: pytest.CaptureFixture[str]) -> None:
    golden = load(unjudged_topics="drop")
    assert [q.id for q in golden] == ["401", "402", "403"]
    assert "1 topic(s) have no judgments" in capsys.readouterr().err


def test_unjudged_topics_can_be_an_error_naming_the_topic_line() -> None:
    with pytest.raises(DataError) as err:
        load(unjudged_topics="error")
    assert err.value.path == str(DATA / "topics.trec")
    assert err.value.line == 34  # the <top> of topic 404
    assert "'404'" in err.value.message


def test_judged_ids_absent_from_the_corpus_are_warned_about(
    capsys: pytest.CaptureFixture[str],
) -> None:
    corpus = Corpus.build("c", [Document(id="FT911-3012", text="x")])
    load(context=PluginContext(corpus=corpus))
    assert "7 judged document id(s) are not in corpus 'c'" in capsys.readouterr().err


def test_golden_set_name_can_be_set() -> None:
    assert load(set_name="robust-sample").name == "robust-sample"


def test_qrels_of_unknown_topics_can_be_skipped_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    qrels = write(tmp_path, "q.txt", "401 0 A 1\n999 0 B 1\n999 0 C 0\n")
    golden = load(qrels=qrels, allow_unknown_qrels=True)
    assert golden.by_id()["401"].judgments == {"A": 1}
    err = capsys.readouterr().err
    assert "2 judgment line(s)" in err
    assert "1 query id(s) not in the topics file" in err


# -- every way it is rejected ----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        # the wording is the core TREC reader's, shared with `evalframe trec-eval`
        ("401 0 A 1\n401 0 B\n", 2, "a qrels line has 3 columns"),
        ("401 0 A 1\n\n401 0 B 1 x\n", 3, "a qrels line has 5 columns"),
        ("401 0 A 1\n401 0 B high\n", 2, "the relevance column is not a number"),
        ("401 0 A 1\n401 0 B 0.5\n", 2, "the relevance column is not an integer"),
        ("401 0 A 1\n402 0 A 1\n401 1 A 2\n", 3, "judged twice for query '401' (first on line 1)"),
        ("401 0 A 1\n402 0 B 1\n999 0 C 1\n998 0 D 1\n", 3, "query '999', which is not in"),
    ],
)
def test_malformed_qrels_name_file_and_line(
    tmp_path: Path, text: str, line: int, fragment: str
) -> None:
    qrels = write(tmp_path, "qrels.txt", text)
    with pytest.raises(DataError) as err:
        load(qrels=qrels)
    assert err.value.line == line
    rendered = err.value.render()
    assert f"{qrels}:{line}" in rendered
    assert fragment in rendered
    assert err.value.hint


def test_a_three_column_qrels_line_gets_a_hint(tmp_path: Path) -> None:
    with pytest.raises(DataError) as err:
        load(qrels=write(tmp_path, "qrels.txt", "401 A 1\n"))
    assert err.value.hint == "is the iteration column missing? write 'qid 0 docno rel'"


def test_unknown_zero_padded_topic_gets_a_hint(tmp_path: Path) -> None:
    topics = write(tmp_path, "t.tsv", "051\tantitrust\n")
    with pytest.raises(DataError) as err:
        load(topics, write(tmp_path, "q.txt", "51 0 A 1\n"))
    assert err.value.line == 1
    assert err.value.hint is not None and "'51' is not '051'" in err.value.hint


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("401\tsolar\n402 honeybee colony\n", 2, "has 1 tab-separated column(s)"),
        ("401\tsolar\t2020\n", 1, "has 3 tab-separated column(s)"),
        ("401\tsolar\n\tpanels\n", 2, "topic id is empty"),
        ("401\tsolar\n402\t  \n", 2, "topic '402' has no text"),
        ("401\tsolar\n401\tpanels\n", 2, "topic '401' is duplicated (first on line 1)"),
        ("4 01\tsolar\n", 1, "contains spaces"),
    ],
)
def test_malformed_tsv_topics_name_file_and_line(
    tmp_path: Path, text: str, line: int, fragment: str
) -> None:
    topics = write(tmp_path, "topics.tsv", text)
    with pytest.raises(DataError) as err:
        load(topics, topics_format="tsv")
    assert err.value.line == line
    assert f"{topics}:{line}" in err.value.render()
    assert fragment in err.value.render()
    assert err.value.hint, "every data error carries a hint"


def test_trec_topics_read_as_tsv_get_a_hint() -> None:
    with pytest.raises(DataError) as err:
        load(topics_format="tsv")
    assert err.value.line == 1
    assert err.value.hint == "this looks like TREC topic format: set dataset.topics_format=trec"


TOP = "<top>\n<num> Number: 401\n<title> solar\n</top>\n"


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        (TOP + "<top>\n<num> Number: 402\n<title> bees\n", 5, "never closed with </top>"),
        ("<top>\n<num> Number: 401\n<top>\n", 3, "still open"),
        (TOP + "</top>\n", 5, "</top> without an opening <top>"),
        (TOP + "stray words\n", 5, "text outside any <top> block"),
        (TOP + "<title> bees\n", 5, "<title> outside any <top> block"),
        ("<top>\n<title> solar\n</top>\n", 1, "the topic has no number"),
        ("<top>\n<num> Number:\n<title> solar\n</top>\n", 2, "the topic has no number"),
        ("<top>\n<num> Number: 4 01\n<title> solar\n</top>\n", 2, "not one token"),
        ("<top>\n<num> Number: 401\n<desc> x\n</top>\n", 1, "no <title> text"),
        ("<top>\n<num> 401\n<title>\n<desc> x\n</top>\n", 3, "no <title> text"),
        ("<top>\n<num> 401\n<title> a\n<title> b\n</top>\n", 4, "appears twice"),
        (TOP + "\n" + TOP, 6, "topic '401' is duplicated (first at line 1)"),
        ("<top>\n<num> 401 </num>\nloose\n<title> a\n</top>\n", 3, "outside any field"),
    ],
)
def test_malformed_trec_topics_name_file_and_line(
    tmp_path: Path, text: str, line: int, fragment: str
) -> None:
    topics = write(tmp_path, "topics.txt", text)
    with pytest.raises(DataError) as err:
        load(topics, topics_format="trec")
    assert err.value.line == line
    assert f"{topics}:{line}" in err.value.render()
    assert fragment in err.value.render()
    assert err.value.hint, "every data error carries a hint"


def test_a_missing_field_chosen_as_text_names_the_setting(tmp_path: Path) -> None:
    topics = write(tmp_path, "t.txt", TOP)
    with pytest.raises(DataError) as err:
        load(topics, topic_field="desc")
    assert "dataset.topic_field=desc" in err.value.message


def test_non_utf8_topics_name_the_line(tmp_path: Path) -> None:
    topics = tmp_path / "t.tsv"
    topics.write_bytes(b"401\tsolar\n402\tcaf\xe9\n")
    with pytest.raises(DataError) as err:
        load(topics)
    assert err.value.line == 2
    assert "not UTF-8" in err.value.message


def test_empty_topics_and_empty_qrels_are_errors(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no topics"):
        load(write(tmp_path, "t.tsv", "\n\n"))
    with pytest.raises(DataError, match="no judgments"):
        load(qrels=write(tmp_path, "q.txt", "\n"))


def test_no_topic_left_after_dropping_is_an_error(tmp_path: Path) -> None:
    qrels = write(tmp_path, "q.txt", "999 0 A 1\n")
    with pytest.raises(DataError, match="no topic is left"):
        load(qrels=qrels, allow_unknown_qrels=True, unjudged_topics="drop")


def test_missing_files_name_their_config_keys(tmp_path: Path) -> None:
    with pytest.raises(DataError) as err:
        load(tmp_path / "nope.tsv")
    assert err.value.key == "dataset.topics"
    with pytest.raises(DataError) as err:
        load(qrels=tmp_path / "nope.txt")
    assert err.value.key == "dataset.qrels"


# -- golden validate on a topics + qrels pair (#13 item 12) --------------------------


def test_golden_validate_reads_a_topics_and_qrels_pair(capsys: pytest.CaptureFixture[str]) -> None:
    """The positional path is the topics file; the qrels come as --param qrels=..."""
    from evalframe.app.cli import main

    topics, qrels = DATA / "topics.tsv", DATA / "qrels.txt"
    code = main(["golden", "validate", "--format", "trec", str(topics), "--param",
                 f"qrels={qrels}", "--min-queries", "4", "--json"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    import json

    report = json.loads(out)
    assert report["queries"] == len(TITLES)
    # the one unjudged topic (404) is reported, not dropped
    assert any("404" in f["message"] for f in report["findings"])


def test_golden_validate_without_qrels_says_which_param(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from evalframe.app.cli import main

    assert main(["golden", "validate", "--format", "trec", str(DATA / "topics.tsv")]) == 2
    err = capsys.readouterr().err
    assert "--param qrels" in err and "Traceback" not in err
