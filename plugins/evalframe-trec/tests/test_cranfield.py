"""The Cranfield collection: each quirk of its README pinned down, and every malformed input.

Most tests read ``tests/data/cranfield``, a subset of the original files (see
``tests/data/README.md``); a few read the full copy packaged with the plugin.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from evalframe_trec.cranfield import (
    PACKAGED,
    CranfieldCorpus,
    CranfieldCorpusConfig,
    CranfieldDataset,
    CranfieldDatasetConfig,
)
from pydantic import ValidationError

from evalframe.core.errors import DataError
from evalframe.core.types import Corpus, GoldenSet
from evalframe.plugin.protocols import PluginContext
from evalframe.plugin.registry import DATASETS
from evalframe.plugin.testing import CorpusLoaderContract, PluginContract

SUBSET = Path(__file__).parent / "data" / "cranfield"

#: The subset's judgments under the default grades (code 1 -> 4, ..., 4 -> 1; -1 dropped),
#: worked out by hand from tests/data/cranfield/cranqrel.
JUDGMENTS = {
    "1": {"184": 3, "29": 3, "12": 2, "13": 1},
    "2": {"12": 4, "184": 3, "14": 1},
    "3": {"5": 2},
    "4": {"187": 2, "995": 2},
}


def load(path: Path | None = SUBSET, context: PluginContext | None = None, **kw: Any) -> GoldenSet:
    config = CranfieldDatasetConfig(path=None if path is None else str(path), **kw)
    return CranfieldDataset(config, context or PluginContext()).load()


def load_corpus(path: Path | None = SUBSET, **kw: Any) -> Corpus:
    config = CranfieldCorpusConfig(path=None if path is None else str(path), **kw)
    return CranfieldCorpus(config, PluginContext()).load()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A writable copy of the subset, for tests that break one file."""
    return Path(shutil.copytree(SUBSET, tmp_path / "cranfield"))


class TestCranfieldDatasetContract(PluginContract):
    plugin_name = "cranfield"
    registry = DATASETS


class TestCranfieldCorpusContract(CorpusLoaderContract):
    plugin_name = "cranfield"

    @pytest.fixture
    def loader(self) -> CranfieldCorpus:
        return CranfieldCorpus(CranfieldCorpusConfig(path=str(SUBSET)), PluginContext())


# -- queries: numbering -------------------------------------------------------------


def test_queries_are_numbered_by_position_as_cranqrel_numbers_them() -> None:
    golden = load()
    assert [q.id for q in golden] == ["1", "2", "3", "4"]
    assert [q.metadata["original_id"] for q in golden] == ["001", "002", "004", "183"]
    assert [q.metadata["position"] for q in golden] == [1, 2, 3, 4]
    assert {q.id: q.judgments for q in golden} == JUDGMENTS


def test_original_ids_map_the_qrels_onto_the_dot_i_numbers() -> None:
    golden = load(query_ids="original")
    assert [q.id for q in golden] == ["1", "2", "4", "183"]
    # cranqrel's "3 5 3" is the third query, whose .I is 004
    assert golden.by_id()["4"].judgments == {"5": 2}
    assert golden.by_id()["183"].judgments == {"187": 2, "995": 2}


def test_query_text_is_joined_across_lines_despite_crlf_endings() -> None:
    assert b"\r\n" in (SUBSET / "cran.qry").read_bytes()
    texts = {q.id: q.text for q in load()}
    assert texts["1"] == (
        "what similarity laws must be obeyed when constructing aeroelastic models "
        "of heated high speed aircraft ."
    )
    assert texts["4"] == "jet interference with supersonic flow -dash experimental papers ."


# -- judgments: grades and the -1 artifact --------------------------------------------


def test_code_1_is_the_most_relevant_grade() -> None:
    q2 = load().by_id()["2"]
    assert q2.judgments["12"] == 4  # "2 12 1": code 1
    assert q2.judgments["14"] == 1  # "2 14 4": code 4, the least relevant, still relevant
    assert max(q2.judgments, key=q2.judgments.__getitem__) == "12"


def test_the_minus_one_line_is_dropped_with_a_warning(capsys: pytest.CaptureFixture[str]) -> None:
    golden = load()
    assert all("486" not in q.judgments for q in golden)
    err = capsys.readouterr().err
    assert "4 code -1 line(s)" in err
    assert "an artifact, not a judgment" in err


def test_the_minus_one_line_can_be_kept_as_judged_non_relevant() -> None:
    golden = load(minus_one="nonrelevant")
    assert golden.by_id()["1"].judgments == {**JUDGMENTS["1"], "486": 0}
    assert golden.by_id()["3"].judgments == {"5": 2, "485": 0}
    assert golden.by_id()["4"].relevant == {"187", "995"}  # 942 is not relevant


def test_minus_one_can_never_be_given_a_grade() -> None:
    with pytest.raises(ValidationError, match="artifact"):
        CranfieldDatasetConfig(grades={-1: 5, 1: 4, 2: 3, 3: 2, 4: 1})
    with pytest.raises(ValidationError, match="at least one code"):
        CranfieldDatasetConfig(grades={})


def test_grades_can_be_remapped_for_example_to_binary() -> None:
    golden = load(grades={1: 1, 2: 1, 3: 0, 4: 0})
    assert golden.by_id()["1"].judgments == {"184": 1, "29": 1, "12": 0, "13": 0}
    assert golden.by_id()["3"].is_negative  # its only document has code 3


def test_a_query_whose_only_line_is_the_artifact_becomes_a_negative(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    qrels = folder / "cranqrel"
    qrels.write_text(qrels.read_text().replace("3 5 3 \n", ""))
    golden = load(folder)
    assert golden.by_id()["3"].judgments == {}
    assert "once its code -1 lines are dropped" in capsys.readouterr().err
    with pytest.raises(DataError) as err:
        load(folder, unjudged_queries="error")
    assert err.value.path == str(folder / "cran.qry")
    assert err.value.line == 9  # .I 004
    assert [q.id for q in load(folder, unjudged_queries="drop")] == ["1", "2", "4"]


def test_judged_documents_absent_from_the_corpus_are_warned_about(
    capsys: pytest.CaptureFixture[str],
) -> None:
    load(context=PluginContext(corpus=load_corpus()))
    assert "1 judged document id(s) are not in corpus 'cranfield'" in capsys.readouterr().err


# -- documents ------------------------------------------------------------------------


def test_documents_keep_their_dot_i_ids_and_fields() -> None:
    corpus = load_corpus()
    assert [d.id for d in corpus.documents] == [
        "5", "12", "13", "14", "29", "184", "240", "471", "576", "995",
    ]  # fmt: skip
    d12 = {d.id: d for d in corpus.documents}["12"]
    assert d12.metadata == {
        "title": "some structural and aerelastic considerations of high speed flight .",
        "authors": "bisplinghoff,r.l.",
        "bibliography": "j. ae. scs. 23, 1956, 289.",
    }
    assert d12.text.startswith(
        "some structural and aerelastic considerations of high\nspeed flight .\n"
        "the dominating factors in structural design of high-speed\n"
    )
    assert d12.text.endswith("research are suggested .")


def test_the_title_is_not_prepended_by_default_because_w_repeats_it() -> None:
    plain = {d.id: d.text for d in load_corpus().documents}
    titled = {d.id: d.text for d in load_corpus(include_title=True).documents}
    title = "some structural and aerelastic considerations of high speed flight ."
    assert titled["12"] == f"{title}\n{plain['12']}"


def test_empty_documents_are_kept_with_a_warning(capsys: pytest.CaptureFixture[str]) -> None:
    docs = {d.id: d for d in load_corpus().documents}
    assert docs["471"].text == docs["995"].text == ""
    assert docs["471"].metadata == {}
    err = capsys.readouterr().err
    assert "2 document(s)" in err and "kept as empty documents" in err and "471, 995" in err


def test_empty_documents_can_be_dropped_or_rejected(capsys: pytest.CaptureFixture[str]) -> None:
    assert not {"471", "995"} & load_corpus(empty_docs="drop").ids()
    assert "dropped (corpus.empty_docs=drop): 471, 995" in capsys.readouterr().err
    with pytest.raises(DataError) as err:
        load_corpus(empty_docs="error")
    assert err.value.line == 218  # .I 471
    assert err.value.path == str(SUBSET / "cran.all.1400")


def test_stray_markers_inside_w_keep_their_lines_in_the_text(
    capsys: pytest.CaptureFixture[str],
) -> None:
    docs = {d.id: d for d in load_corpus().documents}
    d240 = docs["240"]
    assert (
        "into the separated region  .\n"
        "application to turbulent separations is made for a prandtl number of\n"
        "unity in low-speed flow without injection ."
    ) in d240.text
    assert d240.metadata["authors"] == "dean r. chapman"  # not the stray .A's line
    assert d240.metadata["bibliography"] == "naca technote 3792"
    assert "benser, w.a.\nlimit characteristics . the analysis indicated" in docs["576"].text
    assert not any(line.startswith(".") for d in docs.values() for line in d.text.splitlines())
    err = capsys.readouterr().err
    assert "2 document(s)" in err and "stray field markers" in err and "240, 576" in err


def test_stray_markers_can_be_an_error() -> None:
    with pytest.raises(DataError) as err:
        load_corpus(stray_markers="error")
    assert err.value.line == 202  # the .A inside document 240's text
    assert "field marker .A after .W or repeated" in err.value.message


# -- the packaged full collection -------------------------------------------------------


def test_the_packaged_copy_is_the_original_distribution() -> None:
    sizes = {p.name: p.stat().st_size for p in PACKAGED.iterdir() if p.name.startswith("cran")}
    assert sizes == {"cran.all.1400": 1644707, "cran.qry": 28957, "cranqrel": 19541}
    assert CranfieldDatasetConfig().path is None
    assert CranfieldCorpusConfig().path is None


def test_the_full_collection_loads_from_the_packaged_copy(
    capsys: pytest.CaptureFixture[str],
) -> None:
    golden = load(None)
    assert len(golden) == 225
    assert [q.id for q in golden] == [str(i) for i in range(1, 226)]
    assert golden.by_id()["3"].metadata["original_id"] == "004"
    assert golden.by_id()["225"].metadata["original_id"] == "365"
    # 1837 lines: 225 artifacts and 128/387/734/363 of codes 1/2/3/4
    labels = Counter(label for q in golden for label in q.judgments.values())
    assert labels == {4: 128, 3: 387, 2: 734, 1: 363}
    assert not any(q.is_negative for q in golden)
    assert golden.provenance["packaged"] is True
    assert golden.provenance["artifact_lines"] == 225
    assert "225 code -1 line(s)" in capsys.readouterr().err


def test_the_full_corpus_loads_from_the_packaged_copy(capsys: pytest.CaptureFixture[str]) -> None:
    corpus = load_corpus(None)
    assert len(corpus) == 1400
    assert [d.id for d in corpus.documents] == [str(i) for i in range(1, 1401)]
    err = capsys.readouterr().err
    assert "3 document(s)" in err and "240, 576, 578" in err
    assert "2 document(s)" in err and "471, 995" in err


# -- every way it is rejected --------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("1 184 2\n1 29\n", 2, "has 2 column(s)"),
        ("1 184 2\n0 29 2\n", 2, "query number 0 is out of range"),
        ("1 184 2\n5 29 2\n", 2, "query number 5 is out of range"),
        ("1 184 2\n1 29 5\n", 2, "relevance code 5 has no grade"),
        ("1 184 2\n1 29 0\n", 2, "relevance code 0 has no grade"),
        ("1 184 2\n1 29 x\n", 2, "relevance code is not an integer"),
        ("1 184 2\n1 d29 2\n", 2, "document id is not an integer"),
        ("1 184 2\none 29 2\n", 2, "query number is not an integer"),
        ("1 184 2\n1 29 2\n1 184 3\n", 3, "'184' is judged twice for query '1' (first on line 1)"),
    ],
)
def test_malformed_qrels_name_file_and_line(
    folder: Path, text: str, line: int, fragment: str
) -> None:
    qrels = folder / "cranqrel"
    qrels.write_text(text)
    with pytest.raises(DataError) as err:
        load(folder)
    assert err.value.line == line
    assert f"{qrels}:{line}" in err.value.render()
    assert fragment in err.value.render()
    assert err.value.hint, "every data error carries a hint"


def test_code_5_gets_the_corrected_copies_hint(folder: Path) -> None:
    (folder / "cranqrel").write_text("1 184 5\n")
    with pytest.raises(DataError) as err:
        load(folder)
    assert err.value.hint is not None and "replace the -1 artifact with 5" in err.value.hint


def test_out_of_range_query_number_says_it_is_a_position(folder: Path) -> None:
    (folder / "cranqrel").write_text("183 187 3\n")
    with pytest.raises(DataError) as err:
        load(folder)
    assert err.value.hint == "the first column is a position (1, 2, 3, ...), not the .I number"


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        (".I 001\n.W\nfirst\n.I 001\n.W\nagain\n", 4, "query .I 001 appears twice"),
        (".I 001\n.T\nfirst\n", 2, "unexpected field marker .T"),
        (".I 001\n.W\nfirst\n.W\nagain\n", 4, "unexpected field marker .W"),
        (".I 001\nno marker\n", 2, "query text before its .W marker"),
        ("preamble\n.I 001\n.W\nfirst\n", 1, "query text before its .W marker"),
        (".W\nfirst\n", 1, "a field marker before the first .I line"),
        (".I 001\n.W\nfirst\n.I 00x\n.W\nsecond\n", 4, "must carry one whole number"),
        (".I 001\n.W\nfirst\n.I 002\n.W\n\n.I 003\n.W\nthird\n", 4, "query .I 002 has no text"),
        ("\n\n", None, "has no .I entries"),
    ],
)
def test_malformed_queries_name_file_and_line(
    folder: Path, text: str, line: int | None, fragment: str
) -> None:
    qry = folder / "cran.qry"
    qry.write_text(text)
    with pytest.raises(DataError) as err:
        load(folder)
    assert err.value.line == line
    assert err.value.path == str(qry)
    assert fragment in err.value.render()
    assert err.value.hint, "every data error carries a hint"


DOC = ".I 1\n.T\ntitle .\n.A\nauthor\n.B\nbib\n.W\ntitle .\ntext\n"


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("intro\n" + DOC, 1, "text before the first field marker"),
        (".T\ntitle\n", 1, "a field marker before the first .I line"),
        (DOC + DOC, 11, "document .I 1 appears twice (first on line 1)"),
        (DOC + ".I two\n.W\nx\n", 11, "must carry one whole number"),
        (DOC + ".I 2\n.X\nx\n", 12, "unknown field marker .X"),
        (DOC + ".I 2\norphan\n.W\nx\n", 12, "text before the first field marker"),
        (DOC + ".I 2\n.T\nno text\n", 11, "document 2 has no .W field"),
    ],
)
def test_malformed_documents_name_file_and_line(
    folder: Path, text: str, line: int, fragment: str
) -> None:
    docs = folder / "cran.all.1400"
    docs.write_text(text)
    with pytest.raises(DataError) as err:
        load_corpus(folder)
    assert err.value.line == line
    assert f"{docs}:{line}" in err.value.render()
    assert fragment in err.value.render()
    assert err.value.hint, "every data error carries a hint"


def test_a_repeated_field_before_w_is_a_stray_marker_too(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (folder / "cran.all.1400").write_text(".I 1\n.T\nfirst\n.T\nsecond\n.W\nbody\n")
    doc = load_corpus(folder).documents[0]
    assert doc.metadata["title"] == "first second"
    assert doc.text == "body"
    assert "stray field markers" in capsys.readouterr().err


def test_a_file_instead_of_a_folder_is_an_error() -> None:
    with pytest.raises(DataError) as err:
        load(SUBSET / "cranqrel")
    assert err.value.key == "dataset.path"


def test_missing_files_name_their_config_keys(folder: Path) -> None:
    (folder / "cranqrel").unlink()
    with pytest.raises(DataError) as err:
        load(folder)
    assert err.value.key == "dataset.qrels_file"
    with pytest.raises(DataError) as err:
        load_corpus(folder, docs_file="cran.all")
    assert err.value.key == "corpus.docs_file"
