"""`evalframe golden validate`: reports, exit codes, inference, thresholds and bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evalframe.app.golden_cli import main
from tests.golden.golden_helpers import (
    BOB_DATA,
    KNOWCODE_DATA,
    bob_records,
    copy_knowcode,
    corpus_for,
    write_jsonl,
)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_a_good_bob_set_passes_with_exit_0(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    records = bob_records(22, negatives=3)
    golden = write_jsonl(tmp_path / "gold.jsonl", records)
    corpus = corpus_for(records, tmp_path / "corpus.jsonl")
    code, out, err = run(capsys, "validate", str(golden), "--corpus", str(corpus))
    assert code == 0, out + err
    assert "result: PASSED" in out
    assert "22 queries, 3 negative example(s); label 1: 19" in out
    assert "format jsonl (inferred from the .jsonl suffix" in err


def test_the_bob_sample_is_too_small_and_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "validate", str(BOB_DATA / "bob_gold.jsonl"))
    assert code == 1
    assert "the golden set has 4 queries; at least 20 are required (--min-queries)" in out
    assert "result: FAILED (1 error(s)" in out
    code, out, _ = run(capsys, "validate", str(BOB_DATA / "bob_gold.jsonl"), "--min-queries", "4")
    assert code == 0, out


def test_findings_name_file_and_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    records = bob_records(20)
    records[5]["question"] = records[2]["question"].upper()
    records[7]["expected_chunks"] = ["nowhere"]
    golden = write_jsonl(tmp_path / "gold.jsonl", records)
    corpus = corpus_for(bob_records(20), tmp_path / "corpus.jsonl")
    code, out, err = run(capsys, "validate", str(golden), "--corpus", str(corpus), "--json")
    assert code == 1
    report = json.loads(out)
    assert report["passed"] is False
    assert report["format"] == "jsonl"
    errors = [f for f in report["findings"] if f["level"] == "error"]
    got = {(f["check"], f["location"]) for f in errors}
    assert got == {("duplicate", f"{golden}:6"), ("corpus", f"{golden}:8")}
    # stdout is the JSON (a DVC stage sends it to a file): the errors are said on stderr
    assert f"{golden}: 2 error(s); the checks failed:" in err
    for f in errors:
        assert f"  {f['location']}: {f['message']}" in err


def test_domain_folders_are_checked_per_domain(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    folder = tmp_path / "domains"
    write_jsonl(folder / "food.jsonl", bob_records(10, negatives=2, prefix="f"))
    write_jsonl(folder / "travel.jsonl", bob_records(12, negatives=1, start=100, prefix="t"))
    code, out, err = run(capsys, "validate", str(folder))
    assert code == 1
    assert "inferred from a folder" in err
    assert "domain 'travel' has 1 negative example(s)" in out
    assert "domain 'food'" not in out
    code, out, _ = run(capsys, "validate", str(folder), "--min-domain-negatives", "1")
    assert code == 0, out


def test_knowcode_with_a_plan_and_the_mechanical_gate(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data = copy_knowcode(tmp_path)
    plan = tmp_path / "plan.yaml"
    plan.write_text("locate: {easy: 2, medium: 1}\nexplain: {hard: 1}\n")
    golden = str(data / "golden_v1.0.json")
    args = ["validate", golden, "--plan", str(plan), "--min-queries", "4"]
    code, out, _ = run(capsys, *args, "--source-root", str(data))
    assert code == 0, out
    assert "source" not in out  # the gate ran, so no "skipped" note
    # break an entity and grow the plan: both show up, with the record's line
    records = json.loads((data / "golden_v1.0.json").read_text())
    records[3]["expected_entities"] = ["src/knowcode/config.py::AppConfig.missing"]
    (data / "golden_v1.0.json").write_text(json.dumps(records, indent=2))
    plan.write_text("locate: {easy: 4, medium: 1}\nexplain: {hard: 1}\n")
    code, out, _ = run(capsys, *args, "--source-root", str(data), "--json")
    assert code == 1
    errors = [f for f in json.loads(out)["findings"] if f["level"] == "error"]
    assert {f["check"] for f in errors} == {"entity", "plan"}
    entity = next(f for f in errors if f["check"] == "entity")
    lines = (data / "golden_v1.0.json").read_text().splitlines()
    line = [i for i, text in enumerate(lines, start=1) if text == "  {"][3]  # 4th record
    assert entity["location"] == f"{golden}:{line}"


def test_knowcode_drift_is_a_warning_not_a_stop(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data = copy_knowcode(tmp_path)
    with open(data / "src/knowcode/config.py", "a") as handle:
        handle.write("# edited\n")
    code, out, _ = run(
        capsys,
        "validate",
        str(data / "golden_v1.0.json"),
        "--source-root",
        str(data),
        "--min-queries",
        "0",
    )
    assert code == 0, out
    assert "src/knowcode/config.py (changed)" in out


def test_knowcode_without_source_root_notes_the_skipped_gate(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys, "validate", str(KNOWCODE_DATA / "golden_v1.0.json"))
    assert code == 1  # 4 queries < 20
    assert "give --source-root DIR" in out


@pytest.mark.parametrize(
    ("content", "where"),
    [
        ('{"id": 1, "question": "ok", "expected_chunks": []}\n{"id": 2, "question": \n', ":2"),
        ('{"id": 1, "question": "ok", "expected_chunks": "5, 6"}\n', ":1"),
        (
            '{"id": 1, "question": "a", "expected_chunks": []}\n{"id": 1, "question": "b", '
            '"expected_chunks": []}\n',
            ":2",
        ),
    ],
)
def test_malformed_input_is_exit_2_with_file_and_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str, where: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    code, out, err = run(capsys, "validate", str(path))
    assert code == 2
    assert out == ""
    assert err.splitlines()[-2 if "hint" in err else -1].startswith(f"error: {path}{where}:")
    assert "Traceback" not in err


def test_unknowable_format_missing_file_and_bad_flags_are_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    odd = tmp_path / "gold.csv"
    odd.write_text("x")
    code, _, err = run(capsys, "validate", str(odd))
    assert code == 2 and "give --format explicitly" in err
    code, _, err = run(capsys, "validate", str(tmp_path / "absent.jsonl"))
    assert code == 2 and "golden set not found" in err
    code, _, err = run(capsys, "validate", str(odd), "--format", "nosuch")
    assert code == 2 and "no dataset named 'nosuch'" in err
    code, _, err = run(capsys, "validate", str(odd), "--plan-fill", "3")
    assert code == 2 and "not between 0 and 1" in err
    code, _, err = run(
        capsys, "validate", str(BOB_DATA / "bob_gold.jsonl"), "--source-root", str(tmp_path)
    )
    assert code == 2 and "--source-root applies to --format knowcode" in err


def test_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for command in ("validate", "stats", "diff", "create", "sample", "review-check"):
        assert command in out
    code, out, _ = run(capsys, "validate", "--help")
    assert code == 0 and "--min-domain-negatives" in out


def test_as_a_subprocess_the_exit_code_and_streams_are_right(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("not json\n")
    code = (
        "from evalframe.app.golden_cli import main; "
        f"raise SystemExit(main(['validate', {str(path)!r}]))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert f"error: {path}:1: line is not valid JSON" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_file_in_another_format_than_guessed_is_told_to_say_which(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Galaxy's gold file is .jsonl too: the jsonl error says the format was a guess,
    and how to name the right one; named, the same file loads."""
    golden = write_jsonl(tmp_path / "gold.jsonl", [{"id": "q1", "tools": ["upload1"]}])
    code, _, err = run(capsys, "validate", str(golden))
    assert code == 2
    assert f"{golden}:1: record has no 'question', 'expected_chunks' field" in err
    assert "jsonl was a guess from the .jsonl suffix: a file in another format needs " in err
    assert "--format NAME (" in err and "galaxy" in err and "Traceback" not in err
    assert 'hint: each line is {"id": ..., "question": ...' in err
    # only expected_chunks missing: the likelier mistake is a negative example without []
    write_jsonl(golden, [{"id": "q1", "question": "Which tool trims reads?"}])
    _, _, err = run(capsys, "validate", str(golden))
    assert 'hint: a negative example still needs "expected_chunks": []' in err
    write_jsonl(golden, [{"id": "q1", "tools": ["upload1"]}])
    code, out, err = run(capsys, "validate", str(golden), "--format", "galaxy")
    assert code == 1, err  # read; one query is below --min-queries
    assert out.startswith("golden set gold (galaxy, 1 query, hash ")


def test_the_format_is_questioned_only_where_the_error_may_come_of_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Every load error ended "jsonl was a guess from the .jsonl suffix: ... --format NAME":
    noise on a duplicate id or a bad label at line 7, where records before it were read
    in that format. Kept where the first record fails (not JSON, fields missing)."""
    guess = "jsonl was a guess from the .jsonl suffix: a file in another format needs "
    records = bob_records(6)
    dup = write_jsonl(tmp_path / "dup.jsonl", [*records, records[0]])
    code, _, err = run(capsys, "validate", str(dup))
    assert code == 2 and f"{dup}:7: query id " in err and "is duplicated" in err
    assert err.endswith("  hint: give every question its own id\n"), err
    label = write_jsonl(
        tmp_path / "label.jsonl",
        [*records, {**records[0], "id": "x", "expected_chunks": {"a": "high"}}],
    )
    for command in ("validate", "stats"):
        code, _, err = run(capsys, command, str(label))
        assert code == 2 and f"{label}:7: the label of chunk 'a'" in err
        assert err.endswith("  hint: labels > 0 are relevant, labels <= 0 judged not relevant\n")
    good = write_jsonl(tmp_path / "good.jsonl", records)
    broken = tmp_path / "broken.jsonl"
    broken.write_text(good.read_text() + '{"id": "q9",\n')
    code, _, err = run(capsys, "diff", str(good), str(broken))
    assert code == 2 and f"{broken}:7: line is not valid JSON" in err
    assert err.endswith("  hint: each line must be one complete JSON object\n"), err
    # the first record: not JSON (after blank lines), or without the format's fields
    first = tmp_path / "first.jsonl"
    first.write_text("\n\nid,question\n")
    code, _, err = run(capsys, "validate", str(first))
    assert code == 2 and f"{first}:3: line is not valid JSON" in err and guess in err
    write_jsonl(first, [{"qid": "1", "text": "x"}, *records])
    code, _, err = run(capsys, "validate", str(first))
    assert code == 2 and f"{first}:1: record has no 'id'" in err and guess in err
    # a JSON array (KnowCode's .json) opens with "[": its first record is still the first
    knowcode = json.loads((KNOWCODE_DATA / "golden_v1.0.json").read_text())
    del knowcode[0]["query_text"]
    array = tmp_path / "golden.json"
    array.write_text(json.dumps(knowcode, indent=2))
    code, _, err = run(capsys, "validate", str(array))
    assert code == 2 and f"{array}:2: record has no 'query_text' field" in err
    assert "knowcode was a guess from the .json suffix" in err
    knowcode = json.loads((KNOWCODE_DATA / "golden_v1.0.json").read_text())
    del knowcode[-1]["query_text"]  # after records read as KnowCode
    array.write_text(json.dumps(knowcode, indent=2))
    code, _, err = run(capsys, "validate", str(array))
    assert code == 2 and "record has no 'query_text' field" in err and "a guess" not in err
    # named with --format, the same rule: asked only of the first record
    code, _, err = run(capsys, "validate", str(dup), "--format", "jsonl")
    assert code == 2 and "is it in another format" not in err
    code, _, err = run(capsys, "validate", str(first), "--format", "jsonl")
    assert code == 2 and "it was read as --format jsonl: is it in another format (" in err


def test_a_param_written_as_a_list_or_mapping_is_read_as_yaml() -> None:
    from evalframe.core.errors import ConfigError
    from evalframe.golden.load import parse_params

    got = parse_params(
        ["normalise=[strip_version]", "m={a: 1}", "set_name=001", "x=0.5"], "--param"
    )
    assert got == {"normalise": ["strip_version"], "m": {"a": 1}, "set_name": "001", "x": "0.5"}
    with pytest.raises(ConfigError) as err:
        parse_params(["normalise=[strip_version"], "--param")
    assert err.value.key == "--param normalise" and "[a, b]" in err.value.render()


def test_galaxy_gold_validated_with_the_runs_normalisation_has_the_runs_hash(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/experiments.md: with --param 'normalise=[strip_version]', the hash that
    `golden validate` prints is the one a `+experiment=galaxy` run records."""
    import evalframe

    data = Path(evalframe.__file__).parent / "data" / "galaxy"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EVALFRAME_CACHE_DIR", str(tmp_path / ".cache"))
    result = evalframe.run("galaxy", ["report.html=false", "tracking=none"], output_dir="run")
    ran = result.summary["golden_set"]["content_hash"]
    argv = ["validate", "--format", "galaxy", str(data / "gold.jsonl")]
    argv += ["--queries", str(data / "queries.jsonl")]
    capsys.readouterr()
    _, out, _ = run(capsys, *argv, "--param", "normalise=[strip_version]")
    assert f"hash {ran})" in out.splitlines()[0]
    _, out, _ = run(capsys, *argv)  # the versions kept in the ids: another set
    assert f"hash {ran})" not in out.splitlines()[0]


def test_json_of_a_set_that_cannot_be_read_is_still_one_json_document(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A script reading ``--json`` from stdout gets a document saying why, not nothing; the
    error is on stderr as without ``--json``, and the exit code is 2."""
    from evalframe.app.cli import main as cli

    golden = tmp_path / "gold.jsonl"
    golden.write_text('{"id": 1, "question": "no judgments"}\n')
    code = cli(["golden", "validate", str(golden), "--json"])
    out = capsys.readouterr()
    assert code == 2
    report = json.loads(out.out)
    assert report["passed"] is False
    assert report["findings"] == []
    assert report["counts"] == {"error": 1, "warning": 0, "info": 0}
    assert report["error"]["where"] == f"{golden}:1"
    assert "no 'expected_chunks' field" in report["error"]["message"]
    assert f"error: {golden}:1: record has no 'expected_chunks' field" in out.err

    # a set that is not there: the error is the set's, never placed nowhere
    absent = tmp_path / "absent.jsonl"
    assert cli(["golden", "validate", str(absent), "--json"]) == 2
    report = json.loads(capsys.readouterr().out)
    assert report["error"]["where"] == str(absent)
    assert "golden set not found" in report["error"]["message"]


def test_errors_name_the_commands_options_not_a_runs_config_keys(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """On `golden validate` a format's setting is `--param KEY=...` and a corpus's is
    `--corpus-param KEY=...`: hints that named `dataset.text_field` or `corpus.id_field`
    sent a newcomer to settings the command does not take."""
    from evalframe.app.cli import main as cli

    golden = write_jsonl(tmp_path / "gold.jsonl", bob_records(3))

    def said(*argv: str) -> tuple[int, str]:
        code = cli(["golden", "validate", str(golden), "--min-queries", "0", *argv])
        return code, capsys.readouterr().err

    code, err = said("--format", "generic")  # the text is in "question", not "query"
    assert code == 2
    assert "hint: set --param text_field=... to the field that holds the query text" in err
    assert "it was read as --format generic: is it in another format (" in err
    code, err = said("--format", "generic", "--param", "dataset.text_field=question")
    assert code == 2
    assert "without 'dataset.': --param text_field=VALUE" in err
    code, _ = said("--format", "generic", "--param", "text_field=question", "--param",
                   "judgments_field=expected_chunks")  # fmt: skip
    assert code == 0
    code, err = said("--corpus", str(tmp_path / "nope.jsonl"))
    assert code == 2
    assert "error: option --corpus: corpus file not found" in err
    # a corpus whose fields have other names is read with --corpus-param
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"doc": d, "body": "x"}) + "\n" for d in ("a", "b")))
    code, err = said("--corpus", str(corpus))
    assert code == 2
    assert "--corpus-param id_field=... / --corpus-param text_field=..." in err
    code, err = said("--corpus", str(corpus), "--corpus-param", "id_field=doc", "--corpus-param",
                     "text_field=body")  # fmt: skip
    assert code == 1, err  # read; its expected ids are not in this corpus


def test_only_a_plugins_own_settings_are_renamed_as_options() -> None:
    """`corpus.jsonl` in a hint is a file, and `corpus.empty_docs=keep` keeps its value."""
    from evalframe.core.errors import DataError
    from evalframe.golden.load import as_options

    exc = DataError(
        "x",
        key="corpus.id_field",
        hint="the folder that holds corpus.jsonl; set corpus.empty_docs=keep or corpus.id_field",
    )
    as_options(exc, "corpus", "--corpus", "--corpus-param", ["path", "id_field", "empty_docs"])
    assert exc.key == "--corpus-param id_field"
    assert exc.hint == (
        "the folder that holds corpus.jsonl; set --corpus-param empty_docs=keep or "
        "--corpus-param id_field=..."
    )


def test_adks_file_name_is_read_as_adks_format(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """retrieval_dataset.yaml is the name ADK's pipeline (and `evalframe mine`) gives it."""
    source = Path(__file__).parents[2] / "evalframe" / "data" / "adk" / "retrieval_dataset.yaml"
    copy = tmp_path / "retrieval_dataset.yaml"
    copy.write_bytes(source.read_bytes())
    code, out, err = run(capsys, "validate", str(copy))
    assert code == 0, out + err
    assert "format adk (inferred from the name ADK gives its retrieval dataset" in err
    assert "(adk, 51 queries" in out
