"""B.O.B JSONL golden sets and JSONL corpora: what loads, and every way it is rejected."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from evalframe_jsonl.corpus import JsonlCorpus, JsonlCorpusConfig
from evalframe_jsonl.dataset import JsonlDataset, JsonlDatasetConfig

from evalframe.core.errors import DataError
from evalframe.core.types import Corpus, Document
from evalframe.plugin.protocols import PluginContext
from evalframe.plugin.testing import CorpusLoaderContract
from evalframe.testing import DatasetLoaderContract

DATA = Path(__file__).parent / "data"


def load(path: Path, context: PluginContext | None = None):  # type: ignore[no-untyped-def]  # test helper
    return JsonlDataset(JsonlDatasetConfig(path=str(path)), context or PluginContext()).load()


def write(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "gold.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


class TestJsonlDatasetContract(DatasetLoaderContract):
    plugin_name = "jsonl"

    @pytest.fixture
    def loader(self) -> JsonlDataset:
        return JsonlDataset(JsonlDatasetConfig(path=str(DATA / "bob_gold.jsonl")), PluginContext())


class TestJsonlCorpusContract(CorpusLoaderContract):
    plugin_name = "jsonl"

    @pytest.fixture
    def loader(self, tmp_path: Path) -> JsonlCorpus:
        path = tmp_path / "corpus.jsonl"
        path.write_text(
            '{"id": "a", "text": "alpha", "title": "A"}\n{"id": 7, "text": "seven"}\n'
            '{"id": " c ", "text": "gamma", "title": ""}\n'
        )
        return JsonlCorpus(JsonlCorpusConfig(path=str(path), title_field="title"), PluginContext())


def test_bob_sample_loads_with_normalised_ids_and_slices() -> None:
    golden = load(DATA / "bob_gold.jsonl")
    assert [q.id for q in golden] == ["1", "2", "3", "4"]
    q3 = golden.by_id()["3"]
    assert q3.judgments == {"45": 1, "46": 1, "47": 1}
    assert q3.metadata["difficulty"] == "hard"
    assert q3.metadata["category"] == "api"
    assert golden.name == "bob_gold"
    assert golden.provenance["format"] == "jsonl"


def test_empty_expected_chunks_is_a_negative_example() -> None:
    golden = load(DATA / "bob_gold.jsonl")
    assert [q.id for q in golden if q.is_negative] == ["4"]


def test_folder_of_domains_loads_as_one_set_with_a_domain_slice() -> None:
    golden = load(DATA / "domains")
    assert {q.id: q.metadata["domain"] for q in golden} == {
        "r1": "recipes",
        "r2": "recipes",
        "t1": "taxes",
    }
    assert "domain" in golden.slice_fields()


def test_what_a_folder_holds_besides_jsonl_files_is_said_not_dropped_silently(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """travel.JSONL, sports.json and a subfolder are not read: one warning names them."""
    import shutil

    folder = tmp_path / "domains"
    shutil.copytree(DATA / "domains", folder)
    (folder / "travel.JSONL").write_text((folder / "taxes.jsonl").read_text())
    (folder / "sports.json").write_text("[]")
    (folder / "old").mkdir()
    (folder / ".hidden").write_text("")
    golden = load(folder)
    assert {q.metadata["domain"] for q in golden} == {"recipes", "taxes"}
    err = capsys.readouterr().err
    assert (
        f"{folder}: 3 entries are not *.jsonl and not read as part of the golden set: "
        "old/, sports.json, travel.JSONL (a folder loads every <domain>.jsonl file in it"
    ) in " ".join(err.split())
    load(DATA / "domains")
    assert "not read" not in capsys.readouterr().err  # nothing else there: nothing said


def test_graded_judgments_as_a_mapping(tmp_path: Path) -> None:
    path = write(tmp_path, '{"id": 1, "question": "q", "expected_chunks": {"a": 2, "b": 1}}')
    assert load(path).queries[0].judgments == {"a": 2, "b": 1}


def test_the_same_content_hashes_the_same_from_any_path(tmp_path: Path) -> None:
    copy = tmp_path / "elsewhere.jsonl"
    copy.write_text((DATA / "bob_gold.jsonl").read_text())
    assert load(copy).content_hash == load(DATA / "bob_gold.jsonl").content_hash


@pytest.mark.parametrize(
    ("lines", "line", "fragment"),
    [
        (
            ['{"id": 1, "question": "a", "expected_chunks": [1]}', '{"id": 1, "question": "b",'],
            2,
            "not valid JSON",
        ),
        (
            [
                '{"id": 1, "question": "a", "expected_chunks": [1]}',
                '{"id": 1, "question": "b", "expected_chunks": [2]}',
            ],
            2,
            "duplicated (first at",
        ),
        (['{"id": 1, "question": "a", "expected_chunks": "12, 13"}'], 1, "must be a list of ids"),
        (['{"id": 1, "question": "a"}'], 1, "'expected_chunks'"),
        (['{"id": 1, "question": "  ", "expected_chunks": []}'], 1, "non-empty text"),
        (['{"id": true, "question": "a", "expected_chunks": []}'], 1, "field 'id'"),
        (['{"id": 1, "question": "a", "expected_chunks": [1, 1]}'], 1, "same chunk twice"),
        # "c1 " is "c1" (the identifier policy): the same chunk, not two
        (['{"id": 1, "question": "a", "expected_chunks": ["c1", "c1 "]}'], 1, "same chunk twice"),
        (
            ['{"id": 1, "question": "a", "expected_chunks": {"c1": 1, " c1": 2}}'],
            1,
            "labels chunk 'c1' twice",
        ),
        (
            ['{"id": 1, "question": "a", "expected_chunks": {"c 1": 1}}'],
            1,
            "maps 'c 1', which is not a chunk id",
        ),
        (["[1, 2]"], 1, "JSON object"),
    ],
)
def test_malformed_records_name_file_and_line(
    tmp_path: Path, lines: list[str], line: int, fragment: str
) -> None:
    path = write(tmp_path, *lines)
    with pytest.raises(DataError) as err:
        load(path)
    assert err.value.line == line
    rendered = err.value.render()
    assert f"{path}:{line}" in rendered
    assert fragment in rendered


def test_a_comma_separated_string_gets_a_hint(tmp_path: Path) -> None:
    path = write(tmp_path, '{"id": 1, "question": "a", "expected_chunks": "12, 13"}')
    with pytest.raises(DataError) as err:
        load(path)
    assert err.value.hint == 'write it as a JSON list: "expected_chunks": [12, 13]'


def test_missing_file_names_the_config_key(tmp_path: Path) -> None:
    with pytest.raises(DataError) as err:
        load(tmp_path / "nope.jsonl")
    assert err.value.key == "dataset.path"


def test_expected_ids_absent_from_the_corpus_are_warned_about(
    capsys: pytest.CaptureFixture[str],
) -> None:
    corpus = Corpus.build("c", [Document(id="5", text="install"), Document(id="6", text="pip")])
    load(DATA / "bob_gold.jsonl", PluginContext(corpus=corpus))
    err = capsys.readouterr().err
    assert "4 expected chunk id(s) are not in corpus" in err  # 23, 45, 46, 47
    assert "23 (query 2), 45 (query 3), 46 (query 3), 47 (query 3)" in err


def test_query_ids_that_are_also_chunk_ids_are_said_once_with_the_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """B.O.B numbers questions and chunks alike: one line with the count, not one per record."""
    records = [f'{{"id": {i}, "question": "q{i}", "expected_chunks": [{i}]}}' for i in range(1, 13)]
    corpus = Corpus.build("c", [Document(id=str(i), text=f"chunk {i}") for i in range(1, 21)])
    path = write(tmp_path, *records)
    load(path, PluginContext(corpus=corpus))
    lines = [line for line in capsys.readouterr().err.splitlines() if "chunk ids" in line]
    assert lines == [
        "warning: 12 query id(s) are also chunk ids of the corpus, so runs and reports cannot "
        "tell them apart (renumber the questions, e.g. q101, or the chunks): "
        f"1, 2, 3, 4, 5, 6, 7, 8, 9, 10 … (first at {path}:1)"
    ]


def corpus_load(tmp_path: Path, text: str, **settings: str) -> Corpus:
    path = tmp_path / "corpus.jsonl"
    path.write_text(text)
    return JsonlCorpus(JsonlCorpusConfig(path=str(path), **settings), PluginContext()).load()


def test_corpus_keeps_extra_fields_as_metadata_and_prepends_titles(tmp_path: Path) -> None:
    corpus = corpus_load(
        tmp_path,
        '{"id": 7, "text": "body", "title": "Heading", "source": "a.md"}\n',
        title_field="title",
    )
    doc = corpus.documents[0]
    assert doc.id == "7"
    assert doc.text == "Heading\nbody"
    assert doc.metadata == {"title": "Heading", "source": "a.md"}


def test_a_title_field_no_document_has_is_said_and_a_title_that_is_no_text_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`corpus.title_field=titel`: no title was prepended, without a word; a title that
    is a list was indexed as the text "['x']"."""
    corpus = corpus_load(tmp_path, '{"id": 7, "text": "body", "title": "H"}\n', title_field="titel")
    assert corpus.documents[0].text == "body"
    err = capsys.readouterr().err
    assert "corpus.title_field='titel': no document of" in err
    assert "(the first document's fields: id, text, title)" in err
    with pytest.raises(DataError, match=r"field 'title' \(corpus.title_field\) must be text") as e:
        corpus_load(
            tmp_path,
            '{"id": 1, "text": "a"}\n{"id": 2, "text": "b", "title": ["x"]}\n',
            title_field="title",
        )
    assert e.value.line == 2


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ('{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n', 2, "duplicated (first at "),
        ('{"id": "a"}\n', 1, "record has no 'text' field"),
        ('{"id": "a", "text": 3}\n', 1, "field 'text' must be text"),
        ('{"id": "", "text": "x"}\n', 1, "non-empty string"),
        # the inline check takes plain ids; these go through the located checks
        ('{"id": "a", "text": "x"}\n{"id": " a ", "text": "y"}\n', 2, "duplicated (first at "),
        ('{"id": 5, "text": "x"}\n{"id": "5", "text": "y"}\n', 2, "duplicated (first at "),
        ('{"id": "a b", "text": "x"}\n', 1, "TREC file cannot hold"),
        ('{"id": "a\\u0001", "text": "x"}\n', 1, "TREC file cannot hold"),
        ('["a", "x"]\n', 1, "must be a JSON object"),
        ('{"id": true, "text": "x"}\n', 1, "non-empty string or an integer"),
    ],
)
def test_corpus_errors_name_file_and_line(
    tmp_path: Path, text: str, line: int, fragment: str
) -> None:
    with pytest.raises(DataError) as err:
        corpus_load(tmp_path, text)
    assert err.value.line == line
    assert fragment in err.value.render()
    if "duplicated" in fragment:  # the first place is named too
        assert f"{tmp_path / 'corpus.jsonl'}:1" in err.value.render()


def test_empty_corpus_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="empty"):
        corpus_load(tmp_path, "\n")


def test_texts_of_chosen_documents_are_those_load_gives_in_every_id_form(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    path.write_text(
        '{"id": "a", "text": "alpha", "title": "A"}\n'
        '{"id": 7, "text": "seven"}\n'  # an integer id is the string "7"
        '{"id": " c ", "text": "gamma"}\n'  # surrounding space is not part of an id
        '{"id": "d", "text": "delta", "title": "D"}\n'
    )
    loader = JsonlCorpus(JsonlCorpusConfig(path=str(path), title_field="title"), PluginContext())
    assert loader.texts(["a", "7", "c", "zz"]) == {"a": "A\nalpha", "7": "seven", "c": "gamma"}
    assert loader.texts(["d"]) == {"d": "D\ndelta"}


def test_texts_refuses_a_title_that_is_no_text_as_load_does(tmp_path: Path) -> None:
    """The page's document text (texts(), a deferred corpus) showed a list title as
    "['x']\nb" where load() refuses the record at its line."""
    path = tmp_path / "corpus.jsonl"
    path.write_text('{"id": "a", "text": "alpha"}\n{"id": "b", "text": "b", "title": ["x"]}\n')
    loader = JsonlCorpus(JsonlCorpusConfig(path=str(path), title_field="title"), PluginContext())
    with pytest.raises(DataError, match=r"field 'title' \(corpus.title_field\) must be text") as e:
        loader.texts(["b"])
    assert e.value.line == 2
    assert loader.texts(["a"]) == {"a": "alpha"}  # a record not asked for is not looked at


def test_texts_skips_other_documents_without_checking_them_but_not_a_broken_line(
    tmp_path: Path,
) -> None:
    path = tmp_path / "corpus.jsonl"
    path.write_text('{"id": "a", "text": "alpha"}\n["not", "an", "object"]\n')
    loader = JsonlCorpus(JsonlCorpusConfig(path=str(path)), PluginContext())
    with pytest.raises(DataError) as err:  # a line load() refuses is refused here too
        loader.texts(["a"])
    assert err.value.line == 2 and "must be a JSON object" in err.value.render()


def test_an_expected_chunk_with_a_space_says_so(tmp_path: Path) -> None:
    """It said "must list chunk ids (strings or integers)" of a string: the space was the
    problem, and now the message names it."""
    from evalframe_jsonl.dataset import _judgments

    from evalframe.core.errors import DataError
    from evalframe.core.records import At

    with pytest.raises(DataError) as err:
        _judgments(["d 4"], At(tmp_path / "g.jsonl", 3))
    assert "'d 4' contains a space" in err.value.message and err.value.line == 3


def test_the_fast_path_builds_what_the_checks_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Usual records skip the per-field checks (JsonlDataset._plain); unusual ones go
    through them. Both ways must give the same set, hash included, and the unusual
    records must still be normalised ("c1 " is "c1", 7 is "7")."""
    lines = [
        {"id": "q1", "question": "a?", "expected_chunks": ["c1", "c2"], "difficulty": "easy"},
        {"id": 7, "question": "b?", "expected_chunks": {"c3": 2, "c4": 0}},
        {"id": "q3", "question": "c?", "expected_chunks": []},
        {"id": " q4 ", "question": "d?", "expected_chunks": ["c1 ", 12]},  # the slow path
        {"id": "q5", "question": "e?", "expected_chunks": {"c5": 1}, "notes": None},
    ]
    path = tmp_path / "g.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    loader = JsonlDataset(JsonlDatasetConfig(path=str(path)), PluginContext())
    fast = loader.load()
    monkeypatch.setattr(JsonlDataset, "_plain", lambda *a, **k: None)  # every record checked
    slow = loader.load()
    assert fast == slow and fast.content_hash == slow.content_hash
    assert [q.id for q in fast] == ["q1", "7", "q3", "q4", "q5"]
    assert fast.by_id()["q4"].judgments == {"c1": 1, "12": 1}
    assert fast.by_id()["7"].judgments == {"c3": 2, "c4": 0}


@pytest.mark.parametrize(
    ("record", "fragment"),
    [
        ('{"id": "q1", "question": "a?", "expected_chunks": {"c1": true}}', "label of chunk"),
        ('{"id": "q1", "question": "a?", "expected_chunks": {"c1": 1.5}}', "label of chunk"),
        ('{"id": "q1", "question": "a?", "expected_chunks": ["c1", "c1"]}', "same chunk twice"),
        ('{"id": "q1", "question": "a?", "expected_chunks": ["c 1"]}', "space"),
        ('{"id": "q1", "question": "a?", "expected_chunks": [""]}', "non-empty"),
        ('{"id": true, "question": "a?", "expected_chunks": []}', "'id'"),
        ('{"id": "q1", "question": " ", "expected_chunks": []}', "'question'"),
    ],
)
def test_what_the_fast_path_passes_on_is_still_refused(
    tmp_path: Path, record: str, fragment: str
) -> None:
    path = tmp_path / "g.jsonl"
    path.write_text('{"id": "q0", "question": "ok?", "expected_chunks": ["c0"]}\n' + record + "\n")
    with pytest.raises(DataError) as err:
        JsonlDataset(JsonlDatasetConfig(path=str(path)), PluginContext()).load()
    assert err.value.line == 2
    assert fragment in err.value.render()
