"""Run folders that lost files or records, and baseline names that are not names, as a
user meets them: `baseline promote --name`, `rescore`, `report` and `compare` say what is
wrong with exit 2 (or warn, for a reader), never a traceback or a silent drop."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import Project

pytestmark = pytest.mark.slow

#: The tiny project's golden set (tests/conftest.py GOLDEN): 4 queries, so 4 records.
QUERIES = 4


def stored(project: Project, out: str = "run") -> Path:
    res = project.run(*project.data_args(), f"hydra.run.dir={project.root / out}")
    assert res.code in (0, 1), res.stderr
    assert len((project.root / out / "per_query.jsonl").read_text().splitlines()) == QUERIES
    return project.root / out


def copy(run: Path, name: str) -> Path:
    return Path(shutil.copytree(run, run.parent / name))


def drop_line(path: Path, index: int) -> str:
    """Delete one line of ``path``; the query id of the record it held."""
    lines = path.read_text().splitlines(keepends=True)
    gone = lines.pop(index)
    path.write_text("".join(lines))
    return str(json.loads(gone)["query_id"])


def test_promote_refuses_a_name_that_is_not_one_word(project: Project) -> None:
    """`--name x/y`, '', '..' crashed (exit 3, renaming baselines/ itself); 'a b' and
    '.hidden' (the swap's own temporary names start with '.') were accepted."""
    run = stored(project)
    root = project.root / "baselines"
    for name in ("x/y", "", "..", ".", "a b", ".hidden", "-x", "../escape"):
        res = project.run("baseline", "promote", str(run), f"--name={name}", "--root", str(root))
        assert res.code == 2, (name, res.stderr)
        assert "Traceback" not in res.stderr
        assert res.stderr.startswith(
            "error: option --name: a baseline name must be one word: letters, digits, "
            "'.', '_' or '-', starting with a letter or digit"
        ), res.stderr
        assert f"got {name!r}" in res.stderr
        assert "hint: for example --name " in res.stderr
        assert not root.exists() or list(root.iterdir()) == []  # nothing copied anywhere
    assert not (project.root / "escape").exists()
    res = project.run("baseline", "promote", str(run), "--name", "a b", "--root", str(root))
    assert "hint: for example --name a-b" in res.stderr  # the name it meant, made one word
    ok = project.run("baseline", "promote", str(run), "--name", "bm25_v2.1-x", "--root", str(root))
    assert ok.code == 0, ok.stderr
    assert sorted(p.name for p in root.iterdir()) == ["bm25_v2.1-x"]


def test_promote_of_a_folder_that_is_no_finished_run_says_so_as_compare_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """It said "run output per_query.jsonl not found ... hint: check the path", the
    first file of the copy it missed; compare and rescore name the summary.json a run
    writes last. A folder of runs names its newest run; no folder, the one to give."""
    from evalframe.app.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "notarun").mkdir()
    (tmp_path / "notarun" / "per_query.jsonl").write_text("")
    root = tmp_path / "baselines"

    def promote(folder: str) -> str:
        assert main(["baseline", "promote", folder, "--name", "x", "--root", str(root)]) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err and not root.exists()
        return err

    err = promote("notarun")
    assert err.startswith(
        "error: notarun/summary.json: notarun is not a finished run: it has no summary.json, "
        "which a run writes last, so it is no run's folder or the run stopped while writing "
        "its outputs (expected a finished run's folder (it printed 'Saved results to:'))"
    ), err
    assert "hint: give a folder a run finished, or run the experiment again" in err
    assert "restore summary.json from where the folder came" in err
    newest = tmp_path / "outputs" / "2026-01-02_03-04-05"
    newest.mkdir(parents=True)
    (newest / "summary.json").write_text("{}")
    err = promote("outputs")
    assert "got outputs, a folder of 1 run(s)" in err
    assert f"hint: give one of its runs, e.g. the newest: {Path('outputs', newest.name)}" in err
    assert promote("absent").startswith(
        "error: run folder not found: absent (expected a folder a run wrote (config.yaml, "
        "per_query.jsonl, summary.json))"
    )


def test_promote_refuses_a_folder_that_lost_records_and_shares_what_it_makes(
    project: Project,
) -> None:
    """A baseline is every later run's reference: one promoted with a record missing
    would compare that query as missing, run after run. And the team reads it: the
    folder gets the umask's mode, not mkdtemp's owner-only 0700."""
    import os
    import stat

    run = stored(project)
    lost = copy(run, "lost")
    drop_line(lost / "per_query.jsonl", 1)
    root = project.root / "baselines"
    res = project.run("baseline", "promote", str(lost), "--name", "main", "--root", str(root))
    assert res.code == 2 and "Traceback" not in res.stderr
    assert f"per_query.jsonl holds {QUERIES - 1} records where the run's summary.json counts " in (
        res.stderr
    )
    assert not (root / "main").exists()
    ok = project.run("baseline", "promote", str(run), "--name", "main", "--root", str(root))
    assert ok.code == 0, ok.stderr
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE((root / "main").stat().st_mode) == 0o777 & ~umask


def test_rescore_of_a_folder_that_lost_its_rankings_is_a_data_error(project: Project) -> None:
    """run.trec deleted and per_query.jsonl emptied: it scored every query as missing
    and failed the gates (exit 1); the folder's summary.json says what was there."""
    broken = copy(stored(project), "broken")
    (broken / "run.trec").unlink()
    (broken / "per_query.jsonl").write_text("")
    res = project.run("rescore", str(broken), "--out", str(project.root / "rs"))
    assert res.code == 2, res.stdout + res.stderr
    assert "Traceback" not in res.stderr
    assert res.stderr.startswith(
        f"error: {broken / 'per_query.jsonl'}: per_query.jsonl holds 0 records where the "
        f"run's summary.json counts {QUERIES} queries: the folder lost records; and run.trec, "
        "which the run wrote (summary.json records its SHA-256), is gone"
    ), res.stderr
    assert f"hint: restore {broken} from where it came" in res.stderr
    assert not (project.root / "rs" / "summary.json").exists()  # nothing scored


def test_rescore_of_a_folder_that_lost_one_record_is_a_data_error(project: Project) -> None:
    """One line of per_query.jsonl gone (run.trec gone too): it scored that query as
    missing and passed (exit 0)."""
    broken = copy(stored(project), "broken")
    (broken / "run.trec").unlink()
    drop_line(broken / "per_query.jsonl", 2)
    res = project.run("rescore", str(broken), "--out", str(project.root / "rs"))
    assert res.code == 2, res.stdout + res.stderr
    assert "Traceback" not in res.stderr
    assert (
        f"per_query.jsonl holds {QUERIES - 1} records where the run's summary.json counts "
        f"{QUERIES} queries: the folder lost records; and run.trec" in res.stderr
    )
    # in place too: the folder is not written again without the record
    before = (broken / "summary.json").read_bytes()
    assert project.run("rescore", str(broken)).code == 2
    assert (broken / "summary.json").read_bytes() == before


def test_rescore_refuses_added_and_repeated_records(project: Project) -> None:
    run = stored(project)
    extra = copy(run, "extra")
    (extra / "run.trec").unlink()
    path = extra / "per_query.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    record = json.loads(lines[0])
    path.write_text("".join(lines) + json.dumps({**record, "query_id": "99"}) + "\n")
    res = project.run("rescore", str(extra), "--out", str(project.root / "rs"))
    assert res.code == 2 and "Traceback" not in res.stderr
    assert (
        f"per_query.jsonl holds {QUERIES + 1} records where the run's summary.json counts "
        f"{QUERIES} queries: records were added to it since the run wrote it" in res.stderr
    )
    # a record repeated in place of another: as many lines, one query lost to the other
    twice = copy(run, "twice")
    (twice / "run.trec").unlink()
    path = twice / "per_query.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join([*lines[:-1], lines[0]]))
    res = project.run("rescore", str(twice), "--out", str(project.root / "rs2"))
    assert res.code == 2 and "Traceback" not in res.stderr
    assert f"{path}:{QUERIES}: query '1' has two records (first at line 1)" in res.stderr


def test_a_folder_without_run_trec_but_every_record_still_rescores(project: Project) -> None:
    """A baseline keeps no run.trec (summary.json still has its facts): per_query.jsonl
    holds every ranking, and the rescore gives the run's numbers."""
    run = stored(project)
    kept = copy(run, "kept")
    (kept / "run.trec").unlink()
    res = project.run("rescore", str(kept), "--out", str(project.root / "rs"))
    assert res.code in (0, 1), res.stderr
    assert json.loads((project.root / "rs" / "metrics.json").read_text()) == json.loads(
        (run / "metrics.json").read_text()
    )


def test_an_older_folder_that_does_not_count_its_queries_is_trusted(project: Project) -> None:
    """A summary.json without golden_set.queries or run_file (an older evalframe) cannot
    tell a lost record: the rescore scores the query as missing, as it always did."""
    old = copy(stored(project), "old")
    (old / "run.trec").unlink()
    summary = json.loads((old / "summary.json").read_text())
    del summary["golden_set"]["queries"], summary["run_file"]
    (old / "summary.json").write_text(json.dumps(summary))
    gone = drop_line(old / "per_query.jsonl", 0)
    res = project.run("rescore", str(old), "--out", str(project.root / "rs"))
    assert res.code in (0, 1), res.stderr
    rescored = json.loads((project.root / "rs" / "summary.json").read_text())
    assert rescored["counts"]["missing_queries"] == [gone]
    # but a file with no record at all is never a run's
    (old / "per_query.jsonl").write_text("")
    res = project.run("rescore", str(old), "--out", str(project.root / "rs2"))
    assert res.code == 2 and "Traceback" not in res.stderr
    assert "per_query.jsonl holds no records: the folder lost them" in res.stderr


def test_report_and_compare_warn_alike_about_lost_records(project: Project) -> None:
    """`report` rendered a folder that lost a record without a word; `compare` warned."""
    run = stored(project)
    lost = copy(run, "lost")
    drop_line(lost / "per_query.jsonl", 2)
    said = (
        f"warning: {lost / 'per_query.jsonl'}: {QUERIES - 1} per-query records, but the run's "
        f"summary counts {QUERIES} queries (the folder lost records since the run wrote it); "
    )
    page = project.run("report", str(lost), "--format", "md")
    assert page.code == 0, page.stderr
    assert said + "the page shows the records it has" in page.stderr
    compared = project.run("compare", str(run), str(lost))
    assert compared.code == 0, compared.stderr
    assert said + "the records are compared as they are" in compared.stderr
    clean = project.run("report", str(run), "--format", "md")
    assert clean.code == 0 and "warning" not in clean.stderr


def test_compare_names_the_missing_summary(project: Project) -> None:
    """B without summary.json was "not a run folder, a baseline…, or a run id" with a
    hint about promoting baselines; `report` names the file, and so does compare now."""
    run = stored(project)
    nosum = copy(run, "nosum")
    (nosum / "summary.json").unlink()
    for refs in ((str(run), str(nosum)), (str(nosum), str(run))):
        res = project.run("compare", *refs)
        assert res.code == 2, res.stderr
        assert "Traceback" not in res.stderr
        assert res.stderr.startswith(
            f"error: {nosum / 'summary.json'}: {nosum} is not a run folder: it has no summary.json"
        ), res.stderr
        assert "restore summary.json" in res.stderr
        assert "promote" not in res.stderr
    # a bare name that is a folder here may have meant a baseline: both are said
    res = project.run("compare", str(run), "nosum")
    assert res.code == 2
    assert "nosum is not a run folder: it has no summary.json (nor is there a baseline " in (
        res.stderr
    )


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("golden_set", "x", "golden_set is not as evalframe writes it (expected an object"),
        ("metrics", 5, "metrics is not as evalframe writes it (expected an array"),
        ("gates_passed", "yes", "gates_passed is not as evalframe writes it (expected true or"),
    ],
)
def test_a_summary_field_of_the_wrong_type_is_a_located_error(
    project: Project, field: str, value: object, said: str
) -> None:
    run = stored(project)
    edited = copy(run, "edited")
    path = edited / "summary.json"
    summary = json.loads(path.read_text())
    summary[field] = value
    path.write_text(json.dumps(summary))
    for args in (("compare", str(edited), str(run)), ("report", str(edited))):
        res = project.run(*args)
        assert res.code == 2, res.stderr
        assert "Traceback" not in res.stderr
        assert res.stderr.startswith(f"error: {path}: {said}"), res.stderr
        assert f"got {value!r})" in res.stderr


def test_rescore_refuses_a_folder_without_its_summary(project: Project) -> None:
    """A run writes summary.json last: a folder without it stopped while writing, and a
    rescore in place turned it into one that looked finished (exit 0)."""
    run = stored(project)
    nosum = copy(run, "nosum")
    (nosum / "summary.json").unlink()
    before = sorted(p.name for p in nosum.iterdir())
    res = project.run("rescore", str(nosum))
    assert res.code == 2, res.stderr
    assert "Traceback" not in res.stderr
    assert res.stderr.startswith(
        f"error: {nosum / 'summary.json'}: {nosum} is not a finished run: it has no "
        "summary.json, which a run writes last"
    ), res.stderr
    assert "run the experiment again" in res.stderr
    assert sorted(p.name for p in nosum.iterdir()) == before  # nothing written


def test_a_file_gone_from_a_run_folder_and_a_file_given_as_one_are_said_as_such(
    project: Project,
) -> None:
    """The right folder with per_query.jsonl gone got "check the path (relative paths are
    read from ...)"; a file given for the run folder got "summary.json not found" (report)
    or "run folder not found" (rescore)."""
    run = stored(project)
    lost = copy(run, "lost")
    (lost / "per_query.jsonl").unlink()
    res = project.run("compare", str(run), str(lost))
    assert res.code == 2 and "Traceback" not in res.stderr
    assert f"(expected the per_query.jsonl the run wrote into {lost})" in res.stderr
    assert "hint: restore per_query.jsonl from where the folder came" in res.stderr
    afile = project.root / "afile"
    afile.write_text("x")
    for command in ("report", "rescore"):
        res = project.run(command, str(afile))
        assert res.code == 2, res.stderr
        assert "a file, not a run folder" in res.stderr, res.stderr
