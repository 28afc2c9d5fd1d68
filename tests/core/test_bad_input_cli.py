"""Bad input files as a user meets them (#16): the same mistake, the same answer, everywhere.

A file with a byte-order mark reads as if it had none; a NUL byte, bytes that
are not UTF-8 and a folder given as a file stop with exit 2 and one paragraph
naming ``file:line`` (and the column and byte for decoding errors), never a
traceback and never exit 1 or 3. Unicode whitespace follows the one policy
of docs/trec-eval.md: ASCII whitespace separates fields, anything else is data.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalframe.app import cli
from evalframe.core.errors import DataError
from evalframe.core.reader.jsonfiles import read_json

DATA = Path(__file__).parents[1] / "data" / "trec_eval"
BOM = b"\xef\xbb\xbf"
QRELS = b"1 0 a 1\n1 0 b 0\n2 0 c 1\n"
RUN = b"1 Q0 a 1 0.9 t\n1 Q0 b 2 0.5 t\n2 Q0 c 1 0.7 t\n"


def write(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


def trec_eval(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(["trec-eval", "-m", "num_ret", "-m", "map", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def one_paragraph_error(code: int, err: str) -> str:
    """The error paragraph: exit 2, no traceback, ``error: where: what`` and a hint."""
    assert code == 2, err
    assert "Traceback" not in err
    assert err.count("error: ") == 1
    return err[err.index("error: ") :]


# -- evalframe trec-eval -------------------------------------------------------------


def test_a_bom_does_not_cost_the_run_its_first_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    q = write(tmp_path / "q", QRELS)
    plain = trec_eval(capsys, q, write(tmp_path / "r", RUN))
    with_bom = trec_eval(
        capsys, write(tmp_path / "q2", BOM + QRELS), write(tmp_path / "rb", BOM + RUN)
    )
    assert plain[0] == with_bom[0] == 0
    assert with_bom[1] == plain[1]
    assert "num_ret               \tall\t3\n" in with_bom[1]


def test_a_nul_byte_in_the_run_is_an_error_not_a_silent_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    q = write(tmp_path / "q", QRELS)
    r = write(tmp_path / "r", RUN.replace(b"b 2", b"b\x00 2"))
    code, _, err = trec_eval(capsys, q, r)
    err = one_paragraph_error(code, err)
    assert f"{r}:2:7: run file holds a NUL byte (byte 21 of the file)" in err


def test_undecodable_bytes_name_line_column_and_byte(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    q = write(tmp_path / "q", QRELS)
    r = write(tmp_path / "r", RUN.replace(b"2 Q0 c", b"2 Q0 \xe9c"))
    code, _, err = trec_eval(capsys, q, r)
    err = one_paragraph_error(code, err)
    assert f"{r}:3:6: run file is not UTF-8 text: byte 0xe9 at column 6 (byte 35" in err
    assert "hint: convert it to UTF-8" in err


def test_a_folder_given_as_the_run_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = trec_eval(capsys, write(tmp_path / "q", QRELS), str(tmp_path))
    assert f"run file is a folder, not a file: {tmp_path}" in one_paragraph_error(code, err)


def test_a_no_break_space_is_data_as_documented_and_is_warned_about(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/trec-eval.md: fields are cut at ASCII whitespace; 'a\u00a0' is not doc 'a'."""
    q = write(tmp_path / "q", QRELS)
    r = write(tmp_path / "r", RUN.replace(b"1 Q0 a 1", "1 Q0 a\u00a0 1".encode()))
    code, out, err = trec_eval(capsys, q, r)
    assert code == 0
    # query 1: the relevant doc 'a' is not retrieved ('a\u00a0' is another id): AP 0; query 2: 1
    assert "map                   \tall\t0.5000" in out
    assert "1 Unicode whitespace character(s)" in err and f"(first at {r}:1:7, U+00A0)" in err


# -- evalframe golden validate ------------------------------------------------------


def golden_validate(
    capsys: pytest.CaptureFixture[str], path: Path, *flags: str
) -> tuple[int, str, str]:
    code = cli.main(["golden", "validate", str(path), *flags])
    out = capsys.readouterr()
    return code, out.out, out.err


RECORD = {"id": 1, "question": "How do I install it?", "expected_chunks": [1]}


def test_golden_validate_on_latin1_bytes_exits_2_not_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "gold.jsonl"
    path.write_bytes(json.dumps(RECORD).encode() + b"\n" + b'{"id": 2, "question": "caf\xe9"}\n')
    code, _, err = golden_validate(capsys, path)
    err = one_paragraph_error(code, err)  # after the inferred-format line
    assert f"{path}:2:27: golden set is not UTF-8 text" in err


def test_golden_validate_names_a_nul_byte(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "gold.jsonl"
    path.write_bytes(json.dumps(RECORD).replace("it?", "it?\x00").encode() + b"\n")
    code, _, err = golden_validate(capsys, path)
    assert "golden set holds a NUL byte" in one_paragraph_error(code, err)


def test_golden_validate_reads_through_a_bom(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "gold.jsonl"
    path.write_bytes(BOM + json.dumps(RECORD).encode() + b"\n")
    _, out, err = golden_validate(capsys, path)
    assert "not valid JSON" not in err
    assert "golden set gold (jsonl, 1 query," in out  # read; the checks then judge it


def test_golden_validate_on_a_folder_named_like_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "golden_v1.0.json"
    folder.mkdir()
    code, _, err = golden_validate(capsys, folder, "--format", "knowcode")
    assert f"KnowCode golden set is a folder, not a file: {folder}" in one_paragraph_error(
        code, err
    )


@pytest.mark.parametrize(
    ("line", "said"),
    [
        # nested past Python's stack: orjson refuses it, the json module recursed (exit 3)
        (
            '{"id": 2, "question": "x", "expected_chunks": [], "m": '
            + "[" * 3000
            + "]" * 3000
            + "}",
            "its JSON is nested too deeply to read",
        ),
        # an integer of 5,000 digits: Python's int limit (ValueError, exit 3)
        (
            '{"id": 1' + "0" * 5000 + ', "question": "x", "expected_chunks": ["a"]}',
            "it holds a number evalframe cannot read (Exceeds the limit (4300 digits)",
        ),
        # half of a surrogate pair: valid JSON, no character (content hash: exit 3)
        (
            '{"id": 2, "question": "x \\ud800 y", "expected_chunks": [1]}',
            "a string holds half of a UTF-16 surrogate pair",
        ),
    ],
    ids=["deep", "huge-int", "lone-surrogate"],
)
def test_json_python_cannot_hold_is_a_located_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, said: str
) -> None:
    path = tmp_path / "gold.jsonl"
    path.write_text(json.dumps(RECORD) + "\n" + line + "\n", encoding="utf-8")
    code, _, err = golden_validate(capsys, path)
    err = one_paragraph_error(code, err)
    assert f"{path}:2: " in err and said in err
    # a whole JSON document (KnowCode's, Galaxy's formats read them): the same error
    doc = tmp_path / "gold.json"
    doc.write_text("[\n" + json.dumps(RECORD) + ",\n" + line + "\n]\n", encoding="utf-8")
    with pytest.raises(DataError) as refused:
        read_json(doc, what="golden set")
    assert said in refused.value.render() and str(doc) in refused.value.render()


def test_a_lone_surrogate_in_a_document_is_placed_at_its_own_line(tmp_path: Path) -> None:
    """A whole pair (😀 as two escapes) on line 2, half a pair on line 4: the error named
    line 2, the first escape of any kind."""
    doc = tmp_path / "gold.json"
    lines = ["[", '"\\ud83d\\ude00",', '"ok",', '"x \\ud800 y"', "]"]
    doc.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DataError) as refused:
        read_json(doc, what="golden set")
    assert refused.value.line == 4


def test_a_surrogate_pair_is_one_character_and_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``\\ud83d\\ude00`` is 😀 written as two escapes: whole, it is read as it was."""
    path = tmp_path / "gold.jsonl"
    record = {**RECORD, "question": "How do I install it? \\ud83d\\ude00"}
    path.write_text(json.dumps(record).replace("\\\\u", "\\u") + "\n", encoding="utf-8")
    code, _, err = golden_validate(capsys, path)
    assert code in (0, 1) and "half of a UTF-16" not in err, err


def test_golden_validate_refuses_a_pipe_it_would_read_twice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A named pipe: read once to infer its format, the second read hung forever (the
    writer gone); from ``<(...)`` it came back empty and every location was lost."""
    import os
    import threading

    pipe = tmp_path / "gold.jsonl"
    os.mkfifo(pipe)

    def feed() -> None:
        try:  # whoever opens the other end first: never left blocking the test
            fd = os.open(pipe, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            return
        os.close(fd)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    code, _, err = golden_validate(capsys, pipe)
    writer.join(timeout=5)
    err = one_paragraph_error(code, err)
    assert err.startswith(f"error: {pipe}: the golden set is a pipe or a device, not a file")


def test_a_queries_files_error_gets_no_hint_about_the_golden_sets_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--format`` names the golden set's format: an error of the ``--queries`` file (or
    JSON no format could hold) said "jsonl was a guess ...: --format NAME", no fix."""
    gold = tmp_path / "g.jsonl"
    gold.write_text('{"id": "q01", "question": "x", "expected_chunks": ["a"]}\n')
    queries = tmp_path / "qs.jsonl"
    queries.write_text('{"id": "q01", "query": "x \\ud800"}\n')
    code, _, err = golden_validate(capsys, gold, "--queries", str(queries))
    err = one_paragraph_error(code, err)
    assert f"{queries}:1: a string holds half of a UTF-16 surrogate pair" in err
    assert "--format" not in err
