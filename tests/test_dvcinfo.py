"""DVC's record of a golden set, read from .dvc files and dvc.lock (no dvc involved)."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

from evalframe.golden.dvcinfo import DvcRecord, dvc_root, file_md5, lookup
from evalframe.pipeline.config import validate_experiment
from evalframe.pipeline.run import run_experiment
from evalframe.report.terminal import TerminalReport
from tests.conftest import Project, raw_config


def dvc_repo(tmp_path: Path) -> Path:
    (tmp_path / ".dvc").mkdir()
    return tmp_path


def track(path: Path, md5: str | None = None, *, legacy: bool = False) -> Path:
    """Write the .dvc file `dvc add path` would write beside it."""
    digest = md5 or hashlib.md5(path.read_bytes()).hexdigest()
    entry = f"- md5: {digest}\n  size: 1\n" + ("" if legacy else "  hash: md5\n")
    dvc_file = path.parent / f"{path.name}.dvc"
    dvc_file.write_text(f"outs:\n{entry}  path: {path.name}\n")
    return dvc_file


def test_untracked_or_outside_dvc_gives_an_empty_record(tmp_path: Path) -> None:
    golden = tmp_path / "golden.jsonl"
    golden.write_text("{}\n")
    assert lookup(golden) == DvcRecord()
    assert DvcRecord().as_summary() == {"dvc_md5": None, "dvc_file": None, "dvc_modified": None}
    dvc_repo(tmp_path)
    assert lookup(golden) == DvcRecord()  # in a DVC repo, but nothing tracks it


def test_a_dvc_file_beside_the_golden_set(tmp_path: Path) -> None:
    root = dvc_repo(tmp_path)
    golden = root / "golden" / "set.jsonl"
    golden.parent.mkdir()
    golden.write_text('{"id": 1}\n')
    track(golden)
    record = lookup(golden)
    assert record.md5 == hashlib.md5(b'{"id": 1}\n').hexdigest() == file_md5(golden)
    assert record.file == "golden/set.jsonl.dvc"
    assert record.tracked == "golden/set.jsonl"
    assert record.modified is False
    assert dvc_root(golden.parent) == root.resolve()


def test_an_edited_file_reports_its_own_md5_and_says_so(tmp_path: Path) -> None:
    root = dvc_repo(tmp_path)
    golden = root / "set.jsonl"
    golden.write_text("old\n")
    track(golden)
    golden.write_text("new\n")
    record = lookup(golden)
    assert record.md5 == hashlib.md5(b"new\n").hexdigest()
    assert record.modified is True


def test_a_legacy_entry_keeps_the_recorded_md5(tmp_path: Path) -> None:
    root = dvc_repo(tmp_path)
    golden = root / "set.jsonl"
    golden.write_text("x\n")
    track(golden, md5="ab" * 16, legacy=True)
    assert lookup(golden).md5 == "ab" * 16
    assert lookup(golden).modified is None


def test_a_tracked_folder_gives_its_dir_md5(tmp_path: Path) -> None:
    root = dvc_repo(tmp_path)
    folder = root / "golden"
    folder.mkdir()
    (folder / "a.jsonl").write_text("{}\n")
    (root / "golden.dvc").write_text(
        "outs:\n- md5: abc123.dir\n  size: 3\n  nfiles: 1\n  hash: md5\n  path: golden\n"
    )
    for path in (folder / "a.jsonl", folder):
        record = lookup(path)
        assert (record.md5, record.file, record.tracked) == ("abc123.dir", "golden.dvc", "golden")
        assert record.modified is None


def test_a_stage_dependency_in_dvc_lock(tmp_path: Path) -> None:
    root = dvc_repo(tmp_path)
    golden = root / "data" / "golden.jsonl"
    golden.parent.mkdir()
    golden.write_text("q\n")
    digest = file_md5(golden)
    (root / "dvc.lock").write_text(
        "schema: '2.0'\nstages:\n  evaluate@x:\n    cmd: evalframe\n    deps:\n"
        f"    - path: data/golden.jsonl\n      hash: md5\n      md5: {digest}\n      size: 2\n"
    )
    record = lookup(golden)
    assert (record.md5, record.file, record.modified) == (digest, "dvc.lock", False)


def test_a_stage_that_reads_a_whole_folder_is_not_the_golden_sets_identity(
    tmp_path: Path,
) -> None:
    """A stage depends on `evalframe/` (the source tree), which holds a shipped golden
    set: the folder's md5 hashes all the code and said nothing about the set (the
    knowcode_calibration run showed it as the set's "DVC md5"). A stage that writes the
    folder still names it: an output folder is the data."""
    root = dvc_repo(tmp_path)
    golden = root / "evalframe" / "data" / "golden.jsonl"
    golden.parent.mkdir(parents=True)
    golden.write_text("q\n")
    lock = (
        "schema: '2.0'\nstages:\n  evaluate@x:\n    cmd: evalframe\n    {kind}:\n"
        "    - path: evalframe\n      hash: md5\n      md5: 0123.dir\n      size: 2\n"
    )
    (root / "dvc.lock").write_text(lock.format(kind="deps"))
    assert lookup(golden) == DvcRecord()
    (root / "dvc.lock").write_text(lock.format(kind="outs"))
    assert (lookup(golden).md5, lookup(golden).tracked) == ("0123.dir", "evalframe")


def test_broken_records_are_ignored_not_fatal(tmp_path: Path) -> None:
    root = dvc_repo(tmp_path)
    golden = root / "set.jsonl"
    golden.write_text("x\n")
    (root / "set.jsonl.dvc").write_text("outs: [unclosed\n")
    (root / "dvc.lock").write_text("just a string\n")
    assert lookup(golden) == DvcRecord()


def test_summary_json_carries_the_golden_sets_dvc_md5(project: Project) -> None:
    (project.root / ".dvc").mkdir()
    track(project.golden)
    exp = validate_experiment(raw_config(project))
    result = run_experiment(exp, reporters=[TerminalReport(io.StringIO())], progress=False)
    summary = json.loads(result.outputs["summary"].read_text())
    golden = summary["golden_set"]
    assert golden["dvc_md5"] == file_md5(project.golden)
    assert golden["dvc_file"] == "golden.jsonl.dvc"
    assert golden["dvc_modified"] is False
