"""The generic JSONL / JSON / CSV golden set: field mapping, formats, and every rejection."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from evalframe_formats.galaxy import GalaxyDataset, GalaxyDatasetConfig
from evalframe_formats.generic import GenericDataset, GenericDatasetConfig

from evalframe.core.errors import DataError
from evalframe.core.types import GoldenSet
from evalframe.plugin.protocols import PluginContext
from evalframe.testing import DatasetLoaderContract

DATA = Path(__file__).parent / "data" / "generic"
JSONL = DATA / "golden.jsonl"
CSV = DATA / "golden.csv"
JSON = DATA / "golden_v1.0.json"

#: The field mapping of KnowCode's golden dataset (doc 002).
KNOWCODE = {
    "id_field": "query_id",
    "text_field": "query_text",
    "judgments_field": "expected_entities",
    "slice_fields": ["task_type", "difficulty"],
}

MD = "src/knowcode/parsers/markdown_parser.py"
EMB = "src/knowcode/indexing/embedder.py"


def generic(path: Path, **settings: Any) -> GoldenSet:
    config = GenericDatasetConfig(path=str(path), **settings)
    return GenericDataset(config, PluginContext()).load()


def knowcode(path: Path, **settings: Any) -> GoldenSet:
    return generic(path, **{**KNOWCODE, **settings})


def data_file(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


class TestGenericDatasetContract(DatasetLoaderContract):
    plugin_name = "generic"

    @pytest.fixture
    def loader(self) -> GenericDataset:
        return GenericDataset(
            GenericDatasetConfig(path=str(JSONL), **KNOWCODE),
            PluginContext(),  # type: ignore[arg-type]  # the mapping's values are typed by the config
        )


@pytest.mark.parametrize("path", [JSONL, CSV, JSON], ids=["jsonl", "csv", "json"])
def test_each_format_reads_the_same_four_queries(path: Path) -> None:
    golden = knowcode(path)
    assert [q.id for q in golden] == ["q1", "q2", "q3", "q4"]
    q1, _, q3, q4 = golden.queries
    assert q1.text == "Find the function that parses markdown files."
    assert q1.judgments == {f"{MD}::MarkdownParser.parse_file": 1, f"{MD}::MarkdownParser": 1}
    assert q1.metadata == {"task_type": "locate", "difficulty": "easy"}
    assert q3.judgments == {f"{EMB}::EmbeddingCache": 1, f"{EMB}::EmbeddingCache.get": 1}
    assert q4.judgments == {}
    assert [q.id for q in golden if q.is_negative] == ["q4"]
    assert golden.slice_fields() == ["task_type", "difficulty"]


def test_identical_content_hashes_the_same_in_every_format() -> None:
    hashes = {
        fmt: knowcode(p).content_hash for fmt, p in [("jsonl", JSONL), ("csv", CSV), ("json", JSON)]
    }
    assert len(set(hashes.values())) == 1, hashes
    assert knowcode(JSONL, slice_fields=["task_type"]).content_hash != hashes["jsonl"]


def test_provenance_names_the_format_and_the_mapping() -> None:
    golden = knowcode(CSV)
    assert golden.name == "golden"
    assert golden.provenance == {
        "format": "generic/csv",
        "path": str(CSV),
        "fields": {"id": "query_id", "text": "query_text", "judgments": "expected_entities"},
    }


def test_other_fields_are_dropped_unless_kept() -> None:
    kept = knowcode(JSONL, keep_other_fields=True).queries[0]
    assert kept.metadata == {
        "task_type": "locate",
        "difficulty": "easy",
        "expected_files": [MD],
    }
    kept_json = knowcode(JSON, keep_other_fields=True, slice_fields=[]).queries[1]
    assert kept_json.metadata == {
        "task_type": "locate",
        "difficulty": "medium",
        "expected_files": ["src/knowcode/llm/agent.py"],
        "must_mention_facts": [],
        "must_not_mention_facts": [],
    }


def test_the_galaxy_file_read_generically_hashes_like_the_galaxy_loader() -> None:
    gold = Path(__file__).parent / "data" / "galaxy_gold.jsonl"
    as_galaxy = GalaxyDataset(GalaxyDatasetConfig(path=str(gold)), PluginContext()).load()
    as_generic = generic(gold, judgments_field="tools", keep_other_fields=True)
    assert as_generic.content_hash == as_galaxy.content_hash


def test_graded_judgments_as_a_mapping(tmp_path: Path) -> None:
    path = data_file(
        tmp_path, "g.jsonl", '{"id": 1, "query": "q", "relevant": {"a": 2, "b": 0, "7": 1}}\n'
    )
    assert generic(path).queries[0].judgments == {"a": 2, "b": 0, "7": 1}


def test_csv_cells_may_hold_json_and_a_custom_separator(tmp_path: Path) -> None:
    path = data_file(
        tmp_path,
        "g.csv",
        'id,query,relevant\n1,graded,"{""a"": 2, ""b"": 0}"\n'
        '2,listed,"[""c"", 3]"\n3,piped,d | e\n',
    )
    golden = generic(path, list_separator="|")
    assert [q.judgments for q in golden] == [{"a": 2, "b": 0}, {"c": 1, "3": 1}, {"d": 1, "e": 1}]


def test_tsv_files_are_tab_separated_and_other_delimiters_can_be_set(tmp_path: Path) -> None:
    tsv = data_file(tmp_path, "g.tsv", "id\tquery\trelevant\nq1\tfind, then parse\ta;b\n")
    assert generic(tsv).queries[0].text == "find, then parse"
    semi = data_file(tmp_path, "g.csv", "id;query;relevant\nq1;parse;a|b\n")
    assert generic(semi, csv_delimiter=";", list_separator="|").queries[0].judgments == {
        "a": 1,
        "b": 1,
    }


def test_a_multi_line_csv_cell_keeps_later_line_numbers_right(tmp_path: Path) -> None:
    path = data_file(tmp_path, "g.csv", 'id,query,relevant\nq1,"two\nlines",a\nq2,,b\n')
    with pytest.raises(DataError) as err:
        generic(path)
    assert f"{path}:4: " in err.value.render()
    assert "'query' (the query text) must be non-empty text" in err.value.render()


def test_json_object_with_records_key(tmp_path: Path) -> None:
    records = json.loads(JSON.read_text())
    path = data_file(
        tmp_path,
        "golden.json",
        json.dumps({"schema_version": "1.0.0", "queries": records}, indent=2),
    )
    assert knowcode(path, records_key="queries").content_hash == knowcode(JSON).content_hash


def test_format_can_be_forced_for_an_unknown_suffix(tmp_path: Path) -> None:
    path = data_file(tmp_path, "golden.txt", JSONL.read_text())
    with pytest.raises(DataError) as err:
        knowcode(path)
    assert err.value.hint == "set dataset.format to jsonl, json or csv"
    assert len(knowcode(path, format="jsonl")) == 4


def test_slice_values_keep_their_json_types(tmp_path: Path) -> None:
    path = data_file(tmp_path, "g.jsonl", '{"id": "a", "query": "q", "relevant": [], "level": 2}\n')
    assert generic(path, slice_fields=["level"]).queries[0].metadata == {"level": 2}


JSONL_ERRORS = [
    (
        [
            '{"id": "a", "query": "q", "relevant": ["x"]}',
            '{"id": "b", "query": "q", "relevant": [}',
        ],
        2,
        ["not valid JSON"],
        None,
    ),
    (
        ['{"id": "a", "question": "q", "relevant": ["x"]}'],
        1,
        ["record has no 'query' field (the query text)", "got fields 'id', 'question'"],
        "set dataset.text_field to the field that holds the query text",
    ),
    (
        ['{"id": "a", "query": "q", "expected_chunks": ["x"]}'],
        1,
        ["has no 'relevant' field (the judged doc ids)"],
        "set dataset.judgments_field to the field that holds the judged doc ids",
    ),
    (
        ['{"qid": "a", "query": "q", "relevant": ["x"]}'],
        1,
        ["has no 'id' field (the query id)"],
        "set dataset.id_field to the field that holds the query id",
    ),
    (
        ['{"id": "a", "query": "q", "relevant": "x, y"}'],
        1,
        ["field 'relevant' (the judged doc ids) must be a list of ids", "got 'x, y'"],
        'a string of ids is read from CSV files only: write a list, e.g. "relevant": ["x", "y"]',
    ),
    (
        ['{"id": "a", "query": "q", "relevant": null}'],
        1,
        ["must be a list of ids or an {id: label} mapping", "got None"],
        'write "relevant": [] for a query that nothing answers',
    ),
    (
        ['{"id": "a", "query": "q", "relevant": 12}'],
        1,
        ["must be a list of ids"],
        "write a list of ids or an {id: label} mapping; "
        "set dataset.judgments_field if the ids are in another field",
    ),
    (
        ['{"id": "a", "query": "q", "relevant": []}', '{"id": "a", "query": "r", "relevant": []}'],
        2,
        ["query id 'a' is duplicated (first at", "g.jsonl:1)"],
        "give every query its own id",
    ),
    (
        ['{"id": "a", "query": "q", "relevant": ["x", "x"]}'],
        1,
        ["field 'relevant' lists doc 'x' twice"],
        None,
    ),
    (  # "x " is "x" (the identifier policy): the same doc
        ['{"id": "a", "query": "q", "relevant": ["x", "x "]}'],
        1,
        ["field 'relevant' lists doc 'x' twice"],
        None,
    ),
    (  # which label would count?
        ['{"id": "a", "query": "q", "relevant": {"x": 1, "x ": 2}}'],
        1,
        ["field 'relevant' labels doc 'x' twice"],
        "give each judged doc one label (ids are compared without surrounding spaces)",
    ),
    (
        ['{"id": "a", "query": "q", "relevant": {"x y": 1}}'],
        1,
        ["field 'relevant' maps 'x y', which is not a doc id"],
        "map each judged doc id (one word) to its label",
    ),
    (
        ['{"id": "a", "query": "q", "relevant": ["x", {"id": "y"}]}'],
        1,
        ["relevant[1] is not a doc id"],
        None,
    ),
    (
        ['{"id": "a", "query": "q", "relevant": {"x": "2"}}'],
        1,
        ["the label of doc 'x' in 'relevant' is not a whole number", "got '2'"],
        None,
    ),
    (
        ['{"id": true, "query": "q", "relevant": []}'],
        1,
        ["field 'id' (the query id) must be a non-empty string or an integer"],
        None,
    ),
    (
        ['{"id": "a", "query": " ", "relevant": []}'],
        1,
        ["field 'query' (the query text) must be non-empty text"],
        None,
    ),
    (
        ['{"id": "a", "query": "q", "relevant": []}', '{"id": "b", "query": "q", "relevant": []}'],
        1,
        ["record has no 'difficulty' field, listed in dataset.slice_fields"],
        "add 'difficulty' to every record, or remove it from dataset.slice_fields",
    ),
    (['["a", "q", []]'], 1, ["record must be a JSON object"], None),
]


@pytest.mark.parametrize(("lines", "line", "fragments", "hint"), JSONL_ERRORS)
def test_jsonl_errors_name_file_line_and_config_key(
    tmp_path: Path, lines: list[str], line: int, fragments: list[str], hint: str | None
) -> None:
    path = data_file(tmp_path, "g.jsonl", "\n".join(lines) + "\n")
    with pytest.raises(DataError) as err:
        generic(path, slice_fields=["difficulty"] if "difficulty" in fragments[0] else [])
    rendered = err.value.render()
    assert f"{path}:{line}: " in rendered
    for fragment in fragments:
        assert fragment in rendered
    if hint is not None:
        assert err.value.hint == hint


def test_a_slice_field_must_hold_a_single_value(tmp_path: Path) -> None:
    path = data_file(
        tmp_path, "g.jsonl", '{"id": "a", "query": "q", "relevant": [], "tags": [1]}\n'
    )
    with pytest.raises(DataError) as err:
        generic(path, slice_fields=["tags"])
    assert f"{path}:1: record: slice field 'tags' must be a single value" in str(err.value)
    assert "dataset.keep_other_fields=true" in (err.value.hint or "")


JSON_TEXT = """[
  {"id": "a", "query": "first", "relevant": ["x"]},
  {
    "id": "b",
    "query": "second",
    "relevant": ["y"]
  },
  {
    "id": "c",
    "query": "third",
    "relevant": "y"
  }
]
"""


def test_json_errors_name_the_line_where_the_record_starts_and_its_index(tmp_path: Path) -> None:
    path = data_file(tmp_path, "g.json", JSON_TEXT)
    with pytest.raises(DataError) as err:
        generic(path)
    rendered = err.value.render()
    assert f"{path}:8: record [2]: field 'relevant'" in rendered


def test_json_duplicate_ids_name_both_records(tmp_path: Path) -> None:
    path = data_file(tmp_path, "g.json", JSON_TEXT.replace('"id": "c"', '"id": "a"'))
    with pytest.raises(DataError) as err:
        generic(path)
    assert f"{path}:8: query id 'a' is duplicated (first at {path}:2 ([0]))" in str(err.value)


def test_json_errors_inside_a_records_key_count_lines_from_the_file(tmp_path: Path) -> None:
    text = (
        '{\n  "version": 1,\n  "queries": [\n'
        '    {"id": "a", "query": "q", "relevant": []},\n'
        '    {"id": "b", "relevant": []}\n  ]\n}\n'
    )
    path = data_file(tmp_path, "g.json", text)
    with pytest.raises(DataError) as err:
        generic(path, records_key="queries")
    assert f"{path}:5: record queries[1] has no 'query' field" in str(err.value)


@pytest.mark.parametrize(
    ("text", "settings", "line", "fragments", "hint"),
    [
        ('[\n  {"id": "a",\n   "query": "q" "relevant": []}\n]\n', {}, 3, ["not valid JSON"], None),
        (
            '{"queries": [], "other": 1}\n',
            {},
            1,
            ["the file is not a list of records"],
            "set dataset.records_key to the key holding the list of records "
            "(lists here: 'queries')",
        ),
        (
            '{"queries": []}\n',
            {"records_key": "items"},
            1,
            ["no top-level 'items' key (dataset.records_key)", "got keys 'queries'"],
            None,
        ),
        (
            '{\n "queries": {"id": "a"}\n}\n',
            {"records_key": "queries"},
            2,
            ["queries is not a list of records"],
            None,
        ),
        ("[]\n", {}, None, ["the golden set has no queries"], None),
        ('[\n  "q1"\n]\n', {}, 2, ["record [0] must be a JSON object"], None),
    ],
)
def test_malformed_json_files(
    tmp_path: Path,
    text: str,
    settings: dict[str, object],
    line: int | None,
    fragments: list[str],
    hint: str | None,
) -> None:
    path = data_file(tmp_path, "g.json", text)
    with pytest.raises(DataError) as err:
        generic(path, **settings)
    rendered = err.value.render()
    assert f"{path}:{line}: " in rendered if line is not None else f"{path}: " in rendered
    for fragment in fragments:
        assert fragment in rendered
    if hint is not None:
        assert err.value.hint == hint


@pytest.mark.parametrize(
    ("text", "settings", "line", "fragments", "hint"),
    [
        (
            "qid,query,relevant\nq1,a,b\n",
            {},
            1,
            ["the CSV header has no 'id' column", "got columns 'qid', 'query', 'relevant'"],
            "set dataset.id_field to the column that holds it",
        ),
        (
            "id,query,relevant\nq1,a,b\n",
            {"slice_fields": ["difficulty"]},
            1,
            ["the CSV header has no 'difficulty' column"],
            "add the column, or remove 'difficulty' from dataset.slice_fields",
        ),
        ("id,query,relevant,id\nq1,a,b,c\n", {}, 1, ["names column(s) 'id' twice"], None),
        (
            "id,query,relevant\nq1,a,b\n\nq2,a,b,extra\n",
            {},
            4,
            ["the row has 4 cells but the header has 3 columns"],
            None,
        ),
        ('id,query,relevant\nq1,"a"b,x\n', {}, 2, ["not valid CSV"], None),
        (
            'id,query,relevant\nq1,a,"[""x"", "\n',
            {},
            2,
            ["the 'relevant' cell looks like JSON but is not valid"],
            None,
        ),
        ("id,query,relevant\nq1,a,x\nq1,b,y\n", {}, 3, ["query id 'q1' is duplicated"], None),
        ("id,query,relevant\nq1,a,x;y;x\n", {}, 2, ["lists doc 'x' twice"], None),
        (",query,relevant\n,a,x\n", {"id_field": ""}, 2, ["must be a non-empty string"], None),
        ("", {}, None, ["the CSV file is empty"], None),
    ],
)
def test_malformed_csv_files(
    tmp_path: Path,
    text: str,
    settings: dict[str, object],
    line: int | None,
    fragments: list[str],
    hint: str | None,
) -> None:
    path = data_file(tmp_path, "g.csv", text)
    with pytest.raises(DataError) as err:
        generic(path, **settings)
    rendered = err.value.render()
    assert f"{path}:{line}: " in rendered if line is not None else f"{path}: " in rendered
    for fragment in fragments:
        assert fragment in rendered
    if hint is not None:
        assert err.value.hint == hint


def test_missing_file_names_the_config_key(tmp_path: Path) -> None:
    with pytest.raises(DataError) as err:
        generic(tmp_path / "nope.csv")
    assert err.value.key == "dataset.path"
