"""The command line's exit codes for what is not a run: a crash in a subcommand is 3 with
its traceback (not 1, a failed gate), and a misspelt command gets a suggestion."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evalframe.app import cli
from tests.conftest import Project


def test_a_crash_in_a_subcommand_exits_3_and_says_it_is_a_bug(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import evalframe.app.compare_cmd as commands

    def broken(argv: list[str]) -> int:
        raise KeyError("ndcg@10")  # what `compare --metrics ndcg@10` raised before

    monkeypatch.setattr(commands, "compare_main", broken)
    assert cli.main(["compare", "a", "b"]) == 3
    err = capsys.readouterr().err
    assert "Traceback" in err and "KeyError: 'ndcg@10'" in err
    assert "this is a bug, not a mistake in your config" in err


def test_a_misspelt_command_exits_2_with_a_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["rescroe", "outputs/x"]) == 2
    err = capsys.readouterr().err
    assert "error: unknown command 'rescroe'" in err
    assert "hint: did you mean 'rescore'?" in err
    assert "Traceback" not in err


def test_a_full_disk_is_the_machines_state_exit_2_not_a_bug(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import errno

    import evalframe.app.compare_cmd as commands

    def full(argv: list[str]) -> int:
        raise OSError(errno.ENOSPC, "No space left on device", "/data/out/per_query.jsonl.tmp")

    monkeypatch.setattr(commands, "compare_main", full)
    assert cli.main(["compare", "a", "b"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        "error: cannot use /data/out/per_query.jsonl.tmp: No space left on device"
    )
    assert "hint: free some space" in err and "Traceback" not in err


def test_a_file_where_the_out_folder_must_be_exits_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`golden sample --out notes.txt/review.jsonl`: the real command, a real file in the
    way. Before, mkdir's FileExistsError crashed it (exit 3, "this is a bug")."""
    golden = tmp_path / "golden.jsonl"
    golden.write_text(
        "".join(
            f'{{"id": "q{i}", "question": "question {i}", "expected_chunks": ["c{i}"]}}\n'
            for i in range(4)
        )
    )
    blocker = tmp_path / "notes.txt"
    blocker.write_text("mine\n")
    for out, said in (
        (blocker / "review.jsonl", f"error: cannot use {blocker} as a folder: it is a file"),
        (
            blocker / "sub" / "review.jsonl",
            f"error: cannot write {blocker / 'sub'}: {blocker} is a file, not a folder",
        ),
    ):
        code = cli.main(["golden", "sample", str(golden), "--out", str(out), "--fraction", "0.5"])
        err = capsys.readouterr().err
        assert code == 2, err
        assert said in err and "hint: give a path whose folders are folders" in err
        assert "Traceback" not in err
    assert blocker.read_text() == "mine\n"  # the file in the way is left as it was
    assert sorted(p.name for p in tmp_path.iterdir()) == ["golden.jsonl", "notes.txt"]


def test_an_existing_folder_is_not_mistaken_for_a_file_in_the_way() -> None:
    """EEXIST over a folder (os.mkdir without exist_ok) is not the user's path: no message,
    so it stays a crash (exit 3) as a bug should."""
    import errno

    from evalframe.app.stderr import environment_error

    here = str(Path.cwd())
    assert environment_error(FileExistsError(errno.EEXIST, "File exists", here)) is None
    assert environment_error(FileExistsError(errno.EEXIST, "File exists")) is None


def test_a_reader_that_stops_early_is_no_crash() -> None:
    """`evalframe plugins list | head -1`: the pipe closes before the list is written."""
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-m", "evalframe", "plugins", "list"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the first line
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait() == 141  # 128 + SIGPIPE, as a shell reports it
    assert err == ""  # no traceback, no "this is a bug", no "Exception ignored"


def test_a_folder_where_a_run_writes_a_file_is_found_before_anything_is_written(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """`summary.json/` in output.dir: the run wrote eight files, then crashed renaming the
    summary (exit 3, a run folder without its summary). Now: exit 2 before retrieval, with
    the folder named; an output.dir that cannot be made is the key's error. `report RUN`
    whose report.html is a folder: the same, from the write itself."""
    out = project.root / "pre"
    (out / "summary.json").mkdir(parents=True)
    res = project.run(
        *project.data_args(), f"hydra.run.dir={project.root / 'h'}", f"output.dir={out}"
    )
    assert res.code == 2, res.stderr
    assert res.stderr.startswith(f"error: {out / 'summary.json'}: this is a folder, where the run ")
    assert "Traceback" not in res.stderr
    assert sorted(p.name for p in out.iterdir()) == ["summary.json"]  # nothing written
    res = project.run(
        *project.data_args(), f"hydra.run.dir={project.root / 'h2'}", "output.dir=/proc/evalframe-x"
    )
    assert res.code == 2, res.stderr
    assert res.stderr.startswith("error: config key output.dir: the run's folder /proc/evalframe-x")

    run = project.root / "run"
    res = project.run(*project.data_args(), f"hydra.run.dir={run}")
    assert res.code == 0, res.stderr
    (run / "report.html").mkdir()
    before = sorted(p.name for p in run.iterdir())
    capsys.readouterr()
    assert cli.main(["report", str(run)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: cannot write {run / 'report.html'}: it is a folder")
    assert sorted(p.name for p in run.iterdir()) == before


def test_a_run_folder_that_cannot_be_written_is_the_keys_error(tmp_path: Path) -> None:
    """An existing hydra.run.dir without write permission: Hydra's logging setup failed
    on its log file, a 30-line traceback ending in "Unable to configure handler 'file'"
    (exit 2 all the same). Said as the key's error now. As root (CI, here), the
    permission is dropped for the process with setpriv, as a user's shell has none."""
    run_dir = tmp_path / "ro"
    run_dir.mkdir()
    run_dir.chmod(0o555)
    command = [sys.executable, "-m", "evalframe", "+experiment=quickstart", "tracking=none"]
    command.append(f"hydra.run.dir={run_dir}")
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("root without setpriv: a read-only folder is writable")
        drop = "-dac_override,-dac_read_search"
        command = [setpriv, f"--bounding-set={drop}", f"--inh-caps={drop}", *command]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    finally:
        run_dir.chmod(0o755)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith(
        "error: config key hydra.run.dir: the run's folder cannot be made or written: "
        f"Permission denied: '{run_dir / 'hydra_app.log'}'"
    ), done.stderr
