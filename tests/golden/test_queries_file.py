"""A separate queries file joined to the golden set by id (#25 §3), and gold without text (#13).

Galaxy keeps its gold (``{"id", "tools"}``) and its query texts apart. The
join is the core's (``queries.path``, ``golden validate --queries``), so it
is tested here on Galaxy's gold and on a B.O.B set alike.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalframe.app.golden_cli import main
from evalframe.core.errors import DataError
from evalframe.core.types import GoldenQuery, GoldenSet
from evalframe.golden.checks import check_duplicates
from evalframe.golden.queries import QueriesConfig, join_queries, read_queries

ROOT = Path(__file__).resolve().parents[2]
GALAXY = ROOT / "evalframe" / "data" / "galaxy"
TS = "toolshed.g2.bx.psu.edu/repos"


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def jsonl(path: Path, *records: object) -> Path:
    return write(path, "".join(json.dumps(r) + "\n" for r in records))


def gold(*queries: tuple[str, str]) -> GoldenSet:
    return GoldenSet.build(
        "g", [GoldenQuery(id=qid, text=text, judgments={"t": 1}) for qid, text in queries]
    )


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


# -- #13 item 2: Galaxy's own gold has no text -------------------------------------------


def test_gold_without_text_is_not_a_set_of_duplicate_questions(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Before: 65 'duplicate question' errors, one per record after the first, on
    Galaxy's own 66 gold records. Now: none, and an info finding says why they were
    not compared and how to give their texts."""
    code, out, err = run(capsys, "validate", "--format", "galaxy", str(GALAXY / "gold.jsonl"))
    assert code == 0, out + err
    assert "duplicate (" not in out and "repeats the question" not in out
    assert "66 of 66 queries have no text (ids and judgments only), so the duplicate-" in out
    assert "--queries FILE" in out


def test_records_without_text_are_skipped_and_the_rest_still_checked() -> None:
    golden = gold(("a", ""), ("b", "  "), ("c", "Trim my reads"), ("d", "trim my reads!"))
    findings = check_duplicates(golden)
    assert [(f.check, f.query_id) for f in findings] == [("no-text", None), ("duplicate", "d")]
    assert findings[0].message.startswith("2 of 4 queries have no text")


def test_validate_with_the_queries_file_checks_the_joined_texts(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = run(
        capsys,
        "validate",
        "--format",
        "galaxy",
        str(GALAXY / "gold.jsonl"),
        "--queries",
        str(GALAXY / "queries.jsonl"),
    )
    assert code == 0, out + err
    assert "no text" not in out
    # a repeated question in the queries file is found through the join
    records = [json.loads(line) for line in (GALAXY / "queries.jsonl").read_text().splitlines()]
    records[4]["query"] = records[1]["query"].upper()
    queries = jsonl(tmp_path / "q.jsonl", *records)
    code, out, _ = run(
        capsys,
        "validate",
        "--format",
        "galaxy",
        str(GALAXY / "gold.jsonl"),
        "--queries",
        str(queries),
    )
    assert code == 1
    assert "query v1-q05 repeats the question of query v1-q02" in out
    # the field names are settings; an unknown one is a usage error naming the flag
    code = main(
        ["validate", "--format", "galaxy", str(GALAXY / "gold.jsonl"), "--queries", str(queries),
         "--queries-param", "text=query"]
    )  # fmt: skip
    assert code == 2
    assert "--queries-param" in capsys.readouterr().err


# -- the join --------------------------------------------------------------------------


def test_texts_and_metadata_join_by_id_and_the_hash_follows(tmp_path: Path) -> None:
    golden = gold(("q1", ""), ("q2", ""))
    path = jsonl(
        tmp_path / "queries.jsonl",
        {"id": "q2", "query": "Align reads", "topic": "mapping", "extra": {"a": 1}},
        {"id": "q1", "query": "Check quality", "topic": "qc"},
        {"id": "q9", "query": "Not in the gold"},
    )
    joined = join_queries(golden, QueriesConfig(path=str(path)))
    by_id = joined.by_id()
    assert by_id["q1"].text == "Check quality" and by_id["q1"].metadata == {"topic": "qc"}
    assert by_id["q2"].metadata == {"topic": "mapping", "extra": {"a": 1}}
    assert [q.id for q in joined] == ["q1", "q2"]  # the golden set's order and queries
    assert joined.provenance["queries"] == {"path": str(path), "joined": 2, "unused": 1}
    assert joined.content_hash != golden.content_hash  # the texts are part of the set
    assert join_queries(golden, QueriesConfig()) is golden  # no file: nothing changes


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("q.json", '[{"id": "q1", "query": "Check quality"}, {"id": 2, "query": "Align"}]'),
        ("q.json", '{"q1": "Check quality", "2": {"query": "Align"}}'),
        ("q.tsv", "# id<TAB>text\nq1\tCheck quality\n\n2\tAlign\n"),
    ],
)
def test_json_and_tsv_queries_files(tmp_path: Path, name: str, text: str) -> None:
    records = read_queries(QueriesConfig(path=str(write(tmp_path / name, text))))
    assert {qid: r.text for qid, r in records.items()} == {"q1": "Check quality", "2": "Align"}


def test_field_names_are_settings(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "q.jsonl", {"_id": "q1", "text": "Check quality", "title": "QC"})
    cfg = QueriesConfig(path=str(path), id_field="_id", text_field="text")
    assert read_queries(cfg)["q1"].metadata == {"title": "QC"}


def test_a_gold_query_without_text_or_record_is_an_error_listing_them(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "q.jsonl", {"id": "q1", "query": "Check quality"})
    golden = gold(("q1", ""), ("q2", ""), ("q3", "Has its own text"))
    with pytest.raises(DataError) as err:
        join_queries(golden, QueriesConfig(path=str(path)))
    text = err.value.render()
    assert "1 of 3 golden queries have no text and no record in the queries file: q2" in text
    assert "queries.path" in text


def test_the_file_wins_over_a_gold_text_and_the_gold_over_file_metadata(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    golden = GoldenSet.build(
        "g",
        [
            GoldenQuery(id="q1", text="old wording", metadata={"topic": "qc"}),
            GoldenQuery(id="q2", text="same", metadata={"topic": "mapping"}),
        ],
    )
    path = jsonl(
        tmp_path / "q.jsonl",
        {"id": "q1", "query": "new wording", "topic": "sequence-analysis"},
        {"id": "q2", "query": "same", "topic": "mapping"},
    )
    joined = join_queries(golden, QueriesConfig(path=str(path))).by_id()
    assert joined["q1"].text == "new wording" and joined["q1"].metadata == {"topic": "qc"}
    err = capsys.readouterr().err
    assert f"1 golden query has a text of its own that the queries file {path} replaces: q1" in err
    assert "1 metadata field(s) differ between the golden set and the queries file" in err
    assert "q1.topic" in err and "q2" not in err.split("q1.topic")[1]


@pytest.mark.parametrize(
    ("lines", "line", "message"),
    [
        ('{"id": "q1", "query": "a"}\n{"id": "q1", "query": "b"}\n', 2, "query id 'q1' is dup"),
        ('{"id": "q1", "text": "a"}\n', 1, "record has no 'query' field"),
        ('{"id": "q1", "query": ""}\n', 1, "field 'query' must be non-empty text"),
        ('{"id": true, "query": "a"}\n', 1, "field 'id' must be a non-empty string"),
        ('["q1", "a"]\n', 1, "a queries record must be a JSON object"),
    ],
)
def test_bad_records_are_located(tmp_path: Path, lines: str, line: int, message: str) -> None:
    path = write(tmp_path / "q.jsonl", lines)
    with pytest.raises(DataError) as err:
        read_queries(QueriesConfig(path=str(path)))
    assert err.value.line == line
    assert message in str(err.value)


def test_a_tsv_line_without_a_tab_and_an_empty_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="id<TAB>text") as err:
        read_queries(QueriesConfig(path=str(write(tmp_path / "q.tsv", "q1 Check quality\n"))))
    assert err.value.line == 1
    with pytest.raises(DataError, match="no queries"):
        read_queries(QueriesConfig(path=str(write(tmp_path / "e.jsonl", "\n"))))
    with pytest.raises(DataError, match="queries file"):
        read_queries(QueriesConfig(path=str(tmp_path / "absent.jsonl")))
