"""evalframe.core.reader: one set of rules for every input file (paths, bytes, lines, fields).

Each rule is checked on the functions loaders use; tests/core/test_bad_input_cli.py
checks what a user sees from the commands.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from evalframe.core.errors import DataError
from evalframe.core.reader import (
    parse_qrels,
    parse_run,
    read_fields,
    read_json,
    read_json_array,
    read_jsonl,
    read_lines,
    read_qrels_columns,
    read_run_columns,
    read_text,
    read_trec_run,
    split_fields,
)
from evalframe.core.reader.trec import RunColumns, ascii_id_list, unchecked_rankings
from evalframe.core.types import Ranking

BOM = b"\xef\xbb\xbf"


def write(tmp_path: Path, data: bytes, name: str = "f.txt") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


# -- paths -------------------------------------------------------------------------


def test_a_missing_file_names_the_path_and_the_config_key(tmp_path: Path) -> None:
    with pytest.raises(DataError) as err:
        list(read_lines(tmp_path / "nope.txt", what="qrels file", key="dataset.qrels"))
    assert err.value.key == "dataset.qrels"
    assert "qrels file not found" in err.value.message


@pytest.mark.parametrize(
    "read",
    [
        lambda p: list(read_lines(p, what="topics file", key="dataset.topics")),
        lambda p: read_text(p, what="topics file", key="dataset.topics"),
        lambda p: read_qrels_columns(p, key="dataset.topics", what="topics file"),
    ],
)
def test_a_folder_given_as_a_file_is_a_one_paragraph_error(tmp_path: Path, read: object) -> None:
    with pytest.raises(DataError) as err:
        read(tmp_path)  # type: ignore[operator]
    assert f"topics file is a folder, not a file: {tmp_path}" in err.value.render()
    assert err.value.key == "dataset.topics"
    assert err.value.hint


def test_a_file_that_cannot_be_read_is_a_data_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, b"1 0 a 1\n")

    def denied(*args: object, **kwargs: object) -> bytes:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "read_bytes", denied)
    monkeypatch.setattr(Path, "open", denied)  # the columnar readers stream the file
    with pytest.raises(DataError) as err:
        read_qrels_columns(path)
    assert f"qrels file cannot be read (permission denied): {path}" in err.value.render()
    assert "chmod" in (err.value.hint or "")


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file_on_disk_is_a_data_error(tmp_path: Path) -> None:
    path = write(tmp_path, b'{"a": 1}\n')
    path.chmod(0)
    try:
        with pytest.raises(DataError, match="cannot be read"):
            list(read_jsonl(path))
    finally:
        path.chmod(0o600)


# -- encodings ---------------------------------------------------------------------


def test_a_utf8_bom_is_dropped_so_the_first_line_is_kept(tmp_path: Path) -> None:
    path = write(tmp_path, BOM + b"q1 Q0 a 1 2.0 t\nq2 Q0 b 1 1.0 t\n")
    assert next(line for _, line in read_lines(path, what="run file")) == "q1 Q0 a 1 2.0 t"
    assert read_text(path, what="run file").startswith("q1 ")
    run = read_trec_run(path)
    assert list(run.rankings) == ["q1", "q2"]  # not '\ufeffq1'
    assert read_run_columns(path).qid_names == ["q1", "q2"]
    jsonl = write(tmp_path, BOM + b'{"id": 1}\n', "r.jsonl")
    assert list(read_jsonl(jsonl)) == [(1, {"id": 1})]


def test_crlf_and_a_missing_final_newline(tmp_path: Path) -> None:
    path = write(tmp_path, b"a b\r\n\r\nc\r\nd")
    assert list(read_lines(path, what="f")) == [(1, "a b"), (2, ""), (3, "c"), (4, "d")]


def test_undecodable_bytes_name_line_column_and_byte_offset(tmp_path: Path) -> None:
    path = write(tmp_path, BOM + b"ok line\nq1 caf\xe9 x\n")
    for read in (
        lambda: list(read_lines(path, what="topics file")),
        lambda: read_text(path, what="topics file"),
    ):
        with pytest.raises(DataError) as err:
            read()
        e = err.value
        assert (e.line, e.column) == (2, 7)
        # bytes counted in the file as it is on disk: 3 (BOM) + 8 ("ok line\n") + 6
        assert "byte 0xe9 at column 7 (byte 17 of the file)" in e.message
        assert f"{path}:2:7: topics file is not UTF-8 text" in e.render()
        assert "iconv" in (e.hint or "")


def test_undecodable_bytes_in_a_trec_file_are_located_too(tmp_path: Path) -> None:
    path = write(tmp_path, b"1 0 a 1\n1 0 caf\xe9 1\n")
    with pytest.raises(DataError) as err:
        read_qrels_columns(path)
    assert (err.value.line, err.value.column) == (2, 8)


@pytest.mark.parametrize("data", [b"1 0 a 1\n1 0 b\x00 1\n", b"x\n\x00"])
def test_a_nul_byte_is_an_error_not_data(tmp_path: Path, data: bytes) -> None:
    path = write(tmp_path, data)
    for read in (
        lambda: list(read_lines(path, what="qrels file")),
        lambda: read_qrels_columns(path),
    ):
        with pytest.raises(DataError) as err:
            read()
        assert "qrels file holds a NUL byte" in err.value.message
        assert err.value.line == 2 and err.value.column is not None


def test_a_utf16_file_is_named_as_such(tmp_path: Path) -> None:
    path = write(tmp_path, "q1 Q0 a 1 1 t\n".encode("utf-16"))
    with pytest.raises(DataError) as err:
        read_run_columns(path)
    assert "run file is UTF-16 text, not UTF-8" in err.value.message
    assert "iconv -f utf-16" in (err.value.hint or "")


# -- fields: the whitespace policy ---------------------------------------------------


def test_fields_are_separated_by_ascii_whitespace_only() -> None:
    """C's isspace, as trec_eval: a no-break space is part of the field."""
    assert split_fields(" a\u00a0b \tc\x0bd\x0ce\r") == ["a\u00a0b", "c", "d", "e"]
    assert split_fields("x\u3000y\u2003z") == ["x\u3000y\u2003z"]


def test_unicode_whitespace_is_kept_and_warned_once_per_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "1 184\u00a0 2\n1 29 2\n2 7\u00a0 3\n".encode())
    rows = list(read_fields(path, what="judgments file"))
    assert rows[0] == (1, ["1", "184\u00a0", "2"])
    err = capsys.readouterr().err
    assert err.count("warning:") == 1
    assert "2 Unicode whitespace character(s)" in err
    assert f"(first at {path}:1:6, U+00A0)" in err


def test_trec_readers_follow_the_same_policy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "q1 Q0 a\u00a0b 1 2.0 t\n".encode())
    run = read_trec_run(path)
    assert run.rankings["q1"].doc_ids == ("a\u00a0b",)
    assert "1 Unicode whitespace character(s)" in capsys.readouterr().err


def test_a_mark_where_two_files_were_joined_is_kept_as_trec_eval_keeps_it_and_warned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``cat a b`` of two files saved with a mark: the second mark glues to its id."""
    joined = b"q1 Q0 a 1 2.0 t\n" + BOM + b"q2 Q0 b 1 1.0 t\n"
    path = write(tmp_path, BOM + joined)  # the file's own leading mark is dropped
    assert list(read_trec_run(path).rankings) == ["q1", "\ufeffq2"]
    err = capsys.readouterr().err
    assert err.count("warning:") == 1
    assert "1 byte-order mark(s) (U+FEFF) inside the run file" in err
    assert f"(first at {path}:2)" in err
    qrels = write(tmp_path, b"1 0 a 1\n" + BOM + b"2 0 b 1\n" + BOM + b"3 0 c 1\n", "q.txt")
    assert read_qrels_columns(qrels).qid_names == ["1", "\ufeff2", "\ufeff3"]
    assert f"2 byte-order mark(s) (U+FEFF) inside the qrels file {qrels}" in capsys.readouterr().err
    rows = list(read_fields(qrels, what="judgments file"))
    assert rows[1] == (2, ["\ufeff2", "0", "b", "1"])
    assert f"(first at {qrels}:2)" in capsys.readouterr().err


# -- JSON ----------------------------------------------------------------------------


def test_json_documents_know_the_line_of_every_element_and_member(tmp_path: Path) -> None:
    path = write(tmp_path, b'[\n  {"a": 1},\n\n  {"b":\n 2}\n]\n', "x.json")
    assert [line for line, _ in read_json_array(path)] == [2, 4]
    obj = write(tmp_path, b'{"q1": {"d": 1},\n "q2":\n {}}', "y.json")
    doc = read_json(obj)
    assert [(k, doc.line_at(at)) for k, at in doc.members(doc.start())] == [("q1", 1), ("q2", 3)]


def test_invalid_json_names_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, b'[\n {"a": 1,}\n]', "x.json")
    with pytest.raises(DataError) as err:
        read_json_array(path, what="KnowCode golden set")
    assert err.value.line == 2
    assert "the KnowCode golden set is not valid JSON" in err.value.message


@pytest.mark.parametrize(
    ("text", "name", "line"),
    [
        # a judgment twice in one record of a list (KnowCode's golden set)
        (b'[\n {"id": "q1",\n  "judged": {"d1": 1,\n   "d1": 0}}\n]\n', "d1", 4),
        # a top-level member twice (a results file's second "recall")
        (b'{"recall": 1.0,\n "mrr": 0.5,\n "recall": 0.0}\n', "recall", 3),
        # deep down, after objects that repeat nothing
        (b'{"a": [{"x": 1}, {"y": 2}],\n "b": {"c": [{"k": 1,\n "k": 2}]}}', "k", 3),
    ],
)
def test_a_key_twice_in_one_json_object_is_refused_at_its_line(
    tmp_path: Path, text: bytes, name: str, line: int
) -> None:
    """JSON keeps the last value: the first was dropped without a word. Refused as the
    JSONL reader refuses it, at the line of the second."""
    path = write(tmp_path, text, "x.json")
    with pytest.raises(DataError) as err:
        read_json(path, what="golden set")
    assert err.value.message.startswith(f"the key {name!r} appears twice in one object")
    assert err.value.line == line
    assert read_json(path, unique_keys=False).data is not None  # files evalframe wrote


def test_the_same_key_in_two_objects_is_not_a_repeat(tmp_path: Path) -> None:
    path = write(tmp_path, b'[{"id": 1, "r": {"d": 1}}, {"id": 2, "r": {"d": 1}}]', "x.json")
    assert len(read_json(path).data) == 2


# -- TREC files ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("label", "value", "problem"),
    [("1.0", 1, None), ("-1", -1, None), ("0.5", None, "not an integer"), ("x", None, "a number")],
)
def test_qrels_labels_are_whole_numbers(label: str, value: int | None, problem: str | None) -> None:
    data = f"1 0 a 2\n1 0 b {label}\n".encode()
    if problem is None:
        assert parse_qrels(data, "q").labels.tolist() == [2, value]
        return
    with pytest.raises(DataError) as err:
        parse_qrels(data, "q")
    assert err.value.line == 2 and problem in err.value.message


def test_runs_ignore_comments_blank_lines_and_words_after_the_tag() -> None:
    run = parse_run(b"# a comment\n\nq2 Q0 b 1 1.5 tag extra words\nq1 Q0 a 1 2 tag2\n", "r")
    assert run.qid_names == ["q2", "q1"]
    assert run.lines.tolist() == [3, 4]
    assert run.runid == "tag2"
    assert read_run_to_pairs(run) == {"q2": [("b", 1.5)], "q1": [("a", 2.0)]}


def read_run_to_pairs(run: object) -> dict[str, list[tuple[str, float]]]:
    out = run.to_run()  # type: ignore[attr-defined]
    return {q: r.pairs() for q, r in out.rankings.items()}


def test_a_short_line_gets_the_column_hint() -> None:
    with pytest.raises(DataError) as err:
        parse_qrels(b"1 0 a 1\n1 a 1\n", "q")
    assert err.value.line == 2
    assert err.value.hint == "is the iteration column missing? write 'qid 0 docno rel'"


@pytest.mark.parametrize(
    ("line", "said"),
    [
        (b"q1 Q0 a 2 1.5\n", "is the run tag missing?"),  # the last field a number: a score
        (b"q1 Q0 a 2 adk\n", "is the score missing? column 5 ('adk') is not a number"),
    ],
)
def test_a_five_column_run_line_names_the_column_it_likely_lacks(line: bytes, said: str) -> None:
    with pytest.raises(DataError) as err:
        parse_run(b"q1 Q0 b 1 2.0 adk\n" + line, "r")
    assert err.value.line == 2
    assert err.value.hint == f"a TREC run line is 'qid Q0 docno rank score tag'; {said}"


_token = st.text(alphabet="abcXYZ019._-:/#", min_size=1, max_size=6).filter(
    lambda t: not t.startswith("#")
)
_space = st.sampled_from([" ", "  ", "\t", " \t "])


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(
        st.tuples(_token, _token, st.integers(-2, 3), st.floats(-1e6, 1e6, allow_nan=False)),
        min_size=1,
        max_size=20,
    ),
    sep=_space,
    crlf=st.booleans(),
)
def test_the_fast_and_the_careful_cut_give_the_same_columns(
    rows: list[tuple[str, str, int, float]], sep: str, crlf: bool
) -> None:
    """Single-space files take the array cut, anything else the tokenizer: same columns."""
    end = "\r\n" if crlf else "\n"
    plain = "".join(f"{q} 0 {d} {lab}\n" for q, d, lab, _ in rows).encode()
    other = "".join(sep.join([q, "0", d, str(lab)]) + end for q, d, lab, _ in rows).encode()
    a, b = parse_qrels(plain, "a"), parse_qrels(other, "b")
    assert a.qid_names == b.qid_names
    assert np.array_equal(a.qid_codes, b.qid_codes)
    assert a.docs.tolist() == b.docs.tolist() and a.labels.tolist() == b.labels.tolist()
    runs = "".join(f"{q} Q0 {d} 1 {s!r} t\n" for q, d, _, s in rows).encode()
    spaced = "".join(sep.join([q, "Q0", d, "1", repr(s), "t"]) + end for q, d, _, s in rows)
    r1, r2 = parse_run(runs, "r"), parse_run(spaced.encode(), "r")
    assert r1.scores.tolist() == r2.scores.tolist() == [s for *_, s in rows]


# -- scores: parsed without strtod, to the same double ---------------------------------------
def _scores(tokens: list[str]) -> list[float]:
    run = "".join(f"q Q0 d{i} {i + 1} {t} x\n" for i, t in enumerate(tokens)).encode()
    return parse_run(run, "r").scores.tolist()


def _bits(values: list[float]) -> list[int]:
    return np.array(values, dtype=np.float64).view(np.uint64).tolist()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=50))
def test_every_repr_of_a_double_is_read_back_as_that_double(values: list[float]) -> None:
    """``repr`` writes up to 17 significant digits (every score a Python program writes)."""
    assert _bits(_scores([repr(v) for v in values])) == _bits(values)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.text("0123456789", min_size=1, max_size=22), st.integers(0, 22)),
        min_size=1,
        max_size=50,
    )
)
def test_long_decimals_are_read_as_strtod_reads_them(digits: list[tuple[str, int]]) -> None:
    tokens = [d[:k] + "." + d[k:] if k < len(d) else d for d, k in digits]
    assert _bits(_scores(tokens)) == _bits([float(t) for t in tokens])


@pytest.mark.parametrize(
    "token",
    [
        "9007199254740993",  # 2**53 + 1: halfway between two doubles, ties to even
        "9007199254740995",  # halfway again, rounds up this time
        "9007199254740993.0000",
        "0.30000000000000004",
        "1.7976931348623157",  # 17 digits
        "9999999999999999999",  # 19 digits, the most a uint64 holds
        "99999999999999999999",  # 20: the general way
        "-2.2250738585072014",
        "0.0000000000000000001",
    ],
)
def test_halfway_and_edge_decimals_are_read_as_strtod_reads_them(token: str) -> None:
    assert _bits(_scores([token])) == _bits([float(token)])


@pytest.mark.parametrize("latency", [None, 12.5])
def test_unchecked_rankings_are_what_model_construct_builds(latency: float | None) -> None:
    """The stored run's fast constructor holds to pydantic's own unvalidated build:
    the same fields, the same record of which were given, and a working model."""
    given = {"latency_ms": latency} if latency is not None else {}
    want = Ranking.model_construct(query_id="q1", doc_ids=("d1", "d2"), scores=(2.0, 1.0), **given)
    (got,) = unchecked_rankings([("q1", ("d1", "d2"), (2.0, 1.0), latency)])
    assert type(got) is Ranking
    assert got.__dict__ == want.__dict__
    assert got.model_fields_set == want.model_fields_set
    assert got.__pydantic_extra__ == want.__pydantic_extra__
    assert got.__pydantic_private__ == want.__pydantic_private__
    assert got == want and got == Ranking(
        query_id="q1", doc_ids=("d1", "d2"), scores=(2.0, 1.0), **given
    )
    assert got.model_dump(exclude_unset=True) == want.model_dump(exclude_unset=True)
    assert got.model_copy(update={"answer": "x"}).answer == "x"
    with pytest.raises(ValidationError):
        got.query_id = "q2"  # type: ignore[misc]  # frozen, as any ranking


def test_a_missing_file_that_dvc_tracks_says_dvc_pull(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh clone has golden/x.jsonl.dvc but not the file: the error says how to get it,
    not "check the path". A folder's .dvc covers the files under it."""
    from evalframe.core.errors import DataError
    from evalframe.core.reader import require_file

    monkeypatch.chdir(tmp_path)
    (tmp_path / "golden").mkdir()
    (tmp_path / "golden" / "set.jsonl.dvc").write_text("outs:\n- path: set.jsonl\n")
    (tmp_path / "baselines.dvc").write_text("outs:\n- path: baselines\n")
    with pytest.raises(DataError) as err:
        require_file("golden/set.jsonl", what="golden set", key="dataset.path")
    assert err.value.hint == (
        "it is tracked by DVC (golden/set.jsonl.dvc): fetch it with `dvc pull golden/set.jsonl.dvc`"
    )
    with pytest.raises(DataError) as err:
        require_file("baselines/main/summary.json", what="run summary")
    assert err.value.hint is not None and "`dvc pull baselines.dvc`" in err.value.hint
    with pytest.raises(DataError) as err:
        require_file("elsewhere.jsonl", what="golden set")
    assert err.value.hint is not None and err.value.hint.startswith("check the path")


def test_a_broken_json_line_says_its_column_once(tmp_path: Path) -> None:
    from evalframe.core.errors import DataError
    from evalframe.core.reader import read_jsonl

    path = tmp_path / "gold.jsonl"
    path.write_text('{"id": 1}\n{"id": "v1-q\n')
    with pytest.raises(DataError) as err:
        list(read_jsonl(path))
    assert err.value.line == 2
    assert "line is not valid JSON (Unterminated string starting at column 8)" in str(err.value)


def test_a_digit_separator_is_not_part_of_a_number(tmp_path: Path) -> None:
    """Python reads "1_0" as 10, and so did the run reader; trec_eval's strtod stops at
    the "_". Neither reading is safe: the line is refused, named."""
    from evalframe.core.errors import DataError
    from evalframe.core.reader import read_qrels_columns, read_run_columns

    run = tmp_path / "r"
    run.write_text("1 Q0 a 1 2.5 t\n1 Q0 d 2 1_0 t\n")
    with pytest.raises(DataError) as err:
        read_run_columns(run)
    assert err.value.line == 2 and "digit separator" in err.value.message
    qrels = tmp_path / "q"
    qrels.write_text("1 0 a 1_0\n")
    with pytest.raises(DataError, match="digit separator") as err:
        read_qrels_columns(qrels)
    assert err.value.line == 1


# -- the ids of a run as Python strings, and the columns saved for the cache ----------


@given(
    st.lists(
        st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=127), min_size=1, max_size=9),
        min_size=1,
        max_size=40,
    )
)
@settings(max_examples=200, deadline=None, database=None)
def test_ascii_ids_are_listed_as_the_slow_way_lists_them(ids: list[str]) -> None:
    """ascii_id_list is astype(str).tolist() for ids that are plain (printable, no
    space): what to_run may build rankings from unchecked. Anything else, it declines."""
    values = np.array([i.encode("ascii") for i in ids], dtype="S")
    if any("\0" in i for i in ids):  # an S array drops trailing NULs; the readers refuse NUL
        return
    plain = all(i.isprintable() and " " not in i for i in ids)
    got = ascii_id_list(values)
    assert got == ((values.astype(str).tolist(), True) if plain else ([], False))


def test_ascii_ids_in_any_order_and_of_any_width() -> None:
    values = np.array([b"d10", b"a", b"longest-id", b"x"], dtype="S")
    assert ascii_id_list(values[::-1]) == (["x", "longest-id", "a", "d10"], True)
    assert ascii_id_list(np.zeros(0, dtype="S1")) == ([], True)
    assert ascii_id_list(np.array([b"a\tb", b"c"], dtype="S")) == ([], False)
    assert ascii_id_list(np.array([b"caf\xc3\xa9"], dtype="S")) == ([], False)  # not ASCII


@pytest.mark.parametrize(
    "data",
    [
        b"q1 Q0 d1 1 2.5 tag\nq1 Q0 d2 2 1.5 tag\nq2 Q0 d1 1 0.5 tag\n",
        # the careful cut: a comment and a blank line, so lines are not 1..n
        b"# a run\nq1 Q0 d1 1 2.5 tag\n\nq2\tQ0 d3 1 -1e-4 other extra words\n",
        "q1 Q0 café 1 2.5 tag\n".encode(),
    ],
)
def test_run_columns_saved_and_loaded_are_the_same_columns(tmp_path: Path, data: bytes) -> None:
    path = write(tmp_path, data, "run.trec")
    columns = read_run_columns(path)
    saved = tmp_path / "columns.npz"
    with saved.open("wb") as handle:
        columns.save(handle)
    loaded = RunColumns.load(saved, str(path))
    for field in dataclasses.fields(columns):
        if field.name.startswith("doc_"):  # what save adds: the ids factorized
            continue
        want, got = getattr(columns, field.name), getattr(loaded, field.name)
        if isinstance(want, np.ndarray):
            assert got.dtype == want.dtype and np.array_equal(got, want), field.name
        else:
            assert got == want, field.name
    assert loaded.doc_names is not None and loaded.doc_codes is not None
    assert loaded.doc_names[loaded.doc_codes].tolist() == columns.docs.tolist()
    assert loaded.to_run() == columns.to_run()
    shared = loaded.to_run().rankings
    if "q2" in shared and "d1" in shared["q2"].doc_ids:  # one string per document
        assert shared["q2"].doc_ids[0] is shared["q1"].doc_ids[0]


def test_what_is_not_saved_run_columns_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "other.npz"
    np.savez(other, qid_codes=np.zeros(2))
    with pytest.raises(ValueError, match="not saved run columns"):
        RunColumns.load(other, "run.trec")
    garbage = write(tmp_path, b"not a zip file", "garbage.npz")
    with pytest.raises((ValueError, OSError)):
        RunColumns.load(garbage, "run.trec")


def test_saved_columns_whose_doc_codes_point_nowhere_are_refused(tmp_path: Path) -> None:
    path = write(tmp_path, b"q1 Q0 d1 1 2.5 tag\nq1 Q0 d2 2 1.5 tag\n", "run.trec")
    columns = read_run_columns(path)
    saved = tmp_path / "columns.npz"
    with saved.open("wb") as handle:
        columns.save(handle)
    with np.load(saved) as npz:
        arrays = {name: npz[name] for name in npz.files}
    arrays["doc_codes"] = np.array([0, 7], dtype=np.int32)  # 7: no such document
    np.savez(saved, **arrays)
    with pytest.raises(ValueError, match="out of range"):
        RunColumns.load(saved, str(path))


@pytest.mark.parametrize(
    ("line", "repeated"),
    [
        ('{"id": "q1", "expected_chunks": {"c1": 1, "c1": 0}}', "c1"),  # a label flipped
        ('{"id": "qXX", "id": "q01", "question": "x"}', "id"),
        ('{"a" : 1, "a": 2}', "a"),  # spaced from its colon: the careful path
        ('[{"x": 1, "x": 2}]', "x"),
    ],
)
def test_a_key_repeated_in_one_record_is_named_at_its_line(
    tmp_path: Path, line: str, repeated: str
) -> None:
    path = tmp_path / "g.jsonl"
    path.write_text('{"id": "q0"}\n' + line + "\n")
    with pytest.raises(DataError) as err:
        list(read_jsonl(path, what="golden set", key="dataset.path"))
    assert err.value.line == 2
    assert err.value.message.startswith(f"the key {repeated!r} appears twice in one record")
    assert len(list(read_jsonl(path, unique_keys=False))) == 2  # a file evalframe wrote


@pytest.mark.parametrize(
    "line",
    [
        '{"t": "he said \\":\\" twice", "a": 1}',  # a key's end inside a string, escaped
        '{"a": [{"b": 1}, {"b": 2}], "c": {"b": 3}}',  # one name in different objects
        '{"a" :1, "b" : {"a" : 2}}',
        "[1, 2]",
    ],
)
def test_keys_repeated_only_in_appearance_are_not_refused(tmp_path: Path, line: str) -> None:
    path = tmp_path / "g.jsonl"
    path.write_text(line + "\n")
    assert len(list(read_jsonl(path))) == 1


_TEXT = st.text(alphabet=st.sampled_from('ab":\\ {}[],'), max_size=8)
_JSON = st.recursive(
    st.none() | st.integers() | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=8,
)


@given(value=st.dictionaries(_TEXT, _JSON, min_size=1, max_size=4), spaced=st.booleans())
@settings(max_examples=200, deadline=None)
def test_repeating_any_key_is_found_and_none_is_found_where_none_is_repeated(
    value: dict, spaced: bool
) -> None:
    """Keys and strings full of quotes, colons and backslashes: the fast count never
    passes a repeated key, nor refuses a record whose keys are all distinct."""
    import json

    from evalframe.core.reader.jsonfiles import _repeated_key

    sep = (", ", " : ") if spaced else (",", ":")
    text = json.dumps(value, separators=sep)
    assert _repeated_key(text, json.loads(text)) is None
    name = next(iter(value))
    twice = text[:-1] + sep[0] + json.dumps(name) + sep[1] + "0}"
    assert _repeated_key(twice, json.loads(twice)) == name


@given(
    outer=st.dictionaries(_TEXT, _JSON, max_size=3),
    inner=st.dictionaries(_TEXT, st.integers() | _TEXT, min_size=1, max_size=4),
)
@settings(max_examples=200, deadline=None)
def test_a_key_repeated_inside_a_member_object_is_found(outer: dict, inner: dict) -> None:
    """The judgments' shape (``{"id": .., "expected_chunks": {"d1": 1, ..}}``): a key
    repeated one level down is found, and none is found where none is repeated."""
    import json

    from evalframe.core.reader.jsonfiles import _repeated_key

    member = "\u00a7judgments"  # not in _TEXT's alphabet: never one of outer's keys
    text = json.dumps({**outer, member: inner}, separators=(",", ":"))
    assert _repeated_key(text, json.loads(text)) is None
    name = next(iter(inner))
    body = json.dumps(inner, separators=(",", ":"))
    twice = body[:-1] + "," + json.dumps(name) + ":0}"
    text = json.dumps({**outer, member: "@"}, separators=(",", ":")).replace('"@"', twice)
    assert _repeated_key(text, json.loads(text)) == name


@pytest.mark.parametrize("reader", ["columns", "run"])
def test_a_run_whose_lines_end_in_cr_alone_is_refused_not_cut_to_its_first_record(
    tmp_path: Path, reader: str
) -> None:
    """Read as one line, the file was its first record: words after the tag are ignored,
    so every other record was dropped without a word (exit 0)."""
    path = tmp_path / "mac.run"
    path.write_bytes(b"q1 Q0 d1 1 0.9 t\rq1 Q0 d2 2 0.8 t\rq2 Q0 d3 1 0.7 t\r")
    read = read_run_columns if reader == "columns" else read_trec_run
    with pytest.raises(DataError) as refused:
        read(path)
    said = refused.value.render()
    assert f"{path}:1: the line holds carriage returns between what reads as more than" in said
    assert "tr '\\r' '\\n'" in said


def test_crlf_and_a_stray_cr_between_fields_are_read_as_trec_eval_reads_them(
    tmp_path: Path,
) -> None:
    """CR is whitespace (C's isspace): a CRLF file, and a CR inside a line of six
    fields, are read, record for record."""
    path = tmp_path / "ok.run"
    # a CR between fields, and one before a word after the tag (a run's line may hold
    # words after its tag: it was refused as "7 fields")
    path.write_bytes(b"q1 Q0 d1 1 0.9 t\r\nq1 Q0 d2 2 0.8\rt\r\nq2 Q0 d3 1 0.7 t\rnote\r\n")
    run = read_trec_run(path)
    assert {q: r.doc_ids for q, r in run.rankings.items()} == {"q1": ("d1", "d2"), "q2": ("d3",)}
