"""Atomic writes: what every output file of a run goes through."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalframe.core.io import atomic_write


def test_outputs_follow_the_umask_not_mkstemps_private_mode(tmp_path: Path) -> None:
    """mkstemp's 0o600 would make every run file private to its writer (#16)."""
    mask = os.umask(0o022)
    os.umask(mask)
    text = atomic_write(tmp_path / "a.txt", "x")
    raw = atomic_write(tmp_path / "b.bin", b"\x00\x01")
    for path in (text, raw):
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~mask
    assert raw.read_bytes() == b"\x00\x01"


def test_json_outputs_are_strict_json_whatever_numbers_they_hold(tmp_path: Path) -> None:
    """NaN and ±inf are null (no JSON reader accepts them); NumPy scalars are plain numbers."""
    import json

    import numpy as np

    from evalframe.core.io import atomic_write_json

    payload = {
        "nan": float("nan"),
        "inf": float("inf"),
        "f32": np.float32(0.5),
        "i64": np.int64(7),
        "flag": np.bool_(True),
        "deep": [np.float64("-inf"), 1.5],
    }
    path = atomic_write_json(tmp_path / "x.json", payload)
    assert json.loads(path.read_text()) == {
        "nan": None,
        "inf": None,
        "f32": 0.5,
        "i64": 7,
        "flag": True,
        "deep": [None, 1.5],
    }


def test_chunks_are_written_whole_or_not_at_all(tmp_path: Path) -> None:
    from evalframe.core.io import atomic_write_chunks

    target = tmp_path / "out.trec"
    atomic_write_chunks(target, ["q1 Q0 a 1 2.0 t\n", b"q1 Q0 b 2 1.0 t\n"])
    assert target.read_text() == "q1 Q0 a 1 2.0 t\nq1 Q0 b 2 1.0 t\n"

    def failing() -> Iterator[str]:
        yield "partial line\n"
        raise RuntimeError("the producer failed halfway")

    with pytest.raises(RuntimeError):
        atomic_write_chunks(target, failing())
    assert target.read_text() == "q1 Q0 a 1 2.0 t\nq1 Q0 b 2 1.0 t\n"  # the old file, whole
    assert [p.name for p in tmp_path.iterdir()] == ["out.trec"]  # no temp file left


def _tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): p.read_text() for p in folder.rglob("*") if p.is_file()}


def test_a_folder_replaced_holds_the_new_files_alone(tmp_path: Path) -> None:
    """The old folder's files that the new one does not write (an export, a page) go too."""
    from evalframe.core.io import replacing_folder

    run = tmp_path / "run"
    (run / "sub").mkdir(parents=True)
    (run / "summary.json").write_text("old")
    (run / "export.csv").write_text("old export")
    (run / "sub" / "x").write_text("old x")
    with replacing_folder(run) as target:
        assert target == run and not run.exists()  # written into an absent folder
        run.mkdir()
        (run / "summary.json").write_text("new")
    assert _tree(run) == {"summary.json": "new"}
    assert [p.name for p in tmp_path.iterdir()] == ["run"]  # nothing set aside is left

    fresh = tmp_path / "fresh"  # a folder that does not exist: nothing to replace
    with replacing_folder(fresh):
        fresh.mkdir()
        (fresh / "a").write_text("a")
    assert _tree(fresh) == {"a": "a"}


@pytest.mark.parametrize("interruption", [RuntimeError("an exporter failed"), KeyboardInterrupt()])
def test_a_replacement_that_fails_puts_the_old_folder_back_as_it_was(
    tmp_path: Path, interruption: BaseException
) -> None:
    from evalframe.core.io import replacing_folder

    run = tmp_path / "run"
    (run / "sub").mkdir(parents=True)
    (run / "summary.json").write_text("old")
    (run / "sub" / "x").write_text("old x")

    def half_written() -> None:
        with replacing_folder(run):
            run.mkdir()
            (run / "summary.json").write_text("new, half of the run")
            (run / "metrics.json").write_text("new")
            raise interruption

    with pytest.raises(type(interruption)):
        half_written()
    assert _tree(run) == {"summary.json": "old", "sub/x": "old x"}
    assert [p.name for p in tmp_path.iterdir()] == ["run"]

    def at_once() -> None:
        with replacing_folder(run):
            raise interruption  # before the block wrote anything

    with pytest.raises(type(interruption)):
        at_once()
    assert _tree(run) == {"summary.json": "old", "sub/x": "old x"}
    assert [p.name for p in tmp_path.iterdir()] == ["run"]


def test_a_relative_path_in_dvcs_temporary_copy_is_the_workspaces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A queued experiment's `output.cache_dir: .evalframe-cache` was made in the copy
    under .dvc/tmp/exps and deleted with it: it is the workspace's folder instead."""
    from evalframe.core.io import in_workspace

    workspace = (tmp_path / "ws").resolve()
    copy = workspace / ".dvc" / "tmp" / "exps" / "tmp5q1c"
    (copy / ".dvc").mkdir(parents=True)
    monkeypatch.chdir(copy)
    monkeypatch.delenv("DVC_ROOT", raising=False)
    assert in_workspace(Path(".evalframe-cache")) == Path(".evalframe-cache")  # no DVC
    monkeypatch.setenv("DVC_ROOT", str(workspace))
    assert in_workspace(Path(".evalframe-cache")) == workspace / ".evalframe-cache"
    assert in_workspace(Path("a/b")) == workspace / "a" / "b"
    assert in_workspace(tmp_path / "elsewhere") == tmp_path / "elsewhere"  # absolute: kept
    monkeypatch.chdir(workspace)  # `dvc repro` in the workspace: relative, as given
    assert in_workspace(Path(".evalframe-cache")) == Path(".evalframe-cache")
