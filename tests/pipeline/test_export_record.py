"""Where the pipeline puts the exporters' files (pipeline.run): produced and checked before
the run writes anything, written before summary.json, and recorded there, so that the
next run written into the folder can tell them from a user's files (tests/assess/
test_rerun_same_folder.py tests that removal)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

import evalframe.core.io
from evalframe.assess.runfolder import RunFolder
from evalframe.core.errors import PluginError
from evalframe.pipeline.config import validate_experiment
from evalframe.pipeline.run import PipelineResult, run_experiment
from evalframe.plugin.registry import EXPORTERS
from tests.conftest import Project, raw_config


class Notes:
    """Writes one small file of its own (a test exporter)."""

    def __init__(self, config: Any, context: Any) -> None: ...

    def export(self, run: Any) -> Mapping[str, str | bytes]:
        return {"notes_a.txt": f"{len(run.golden)} queries\n", "notes_b.bin": b"\x00\xff"}


class Raises:
    """Fails in export(), as a plugin with a bug does."""

    def __init__(self, config: Any, context: Any) -> None: ...

    def export(self, run: Any) -> Mapping[str, str | bytes]:
        raise RuntimeError("the exporter broke")


class TakesTheSummary:
    """Returns a file named like one of the run's own."""

    def __init__(self, config: Any, context: Any) -> None: ...

    def export(self, run: Any) -> Mapping[str, str | bytes]:
        return {"summary.json": "{}"}


@pytest.fixture(autouse=True)
def exporters() -> Iterator[None]:
    with EXPORTERS.scoped() as reg:
        reg.add("t_notes", Notes)
        reg.add("t_raises", Raises)
        reg.add("t_summary", TakesTheSummary)
        yield


def run(project: Project, *exports: str) -> PipelineResult:
    exp = validate_experiment(raw_config(project, exports=dict.fromkeys(exports)))
    return run_experiment(exp, progress=False)


def test_the_exports_are_written_before_the_summary_which_records_them(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """summary.json marks the folder finished (a run stopped before it is said to be
    incomplete): the exports are in place before it, and it names each with its digest."""
    order: list[str] = []
    write = evalframe.core.io.atomic_write_chunks

    def recorded(path: str | Path, chunks: Iterable[str | bytes]) -> Path:
        written = write(path, chunks)
        order.append(Path(path).name)
        return written

    monkeypatch.setattr(evalframe.core.io, "atomic_write_chunks", recorded)
    result = run(project, "t_notes")

    out = project.root / "out"
    assert order[-1] == "summary.json"
    assert {"notes_a.txt", "notes_b.bin"} <= set(order[:-1])
    assert result.outputs["export/notes_a.txt"] == out / "notes_a.txt"
    assert (out / "notes_a.txt").read_text() == "4 queries\n"
    assert RunFolder(out).summary()["exports"] == {
        "notes_a.txt": hashlib.sha256(b"4 queries\n").hexdigest(),
        "notes_b.bin": hashlib.sha256(b"\x00\xff").hexdigest(),
    }


@pytest.mark.parametrize(
    ("exporter", "error"),
    [("t_raises", RuntimeError), ("t_summary", PluginError)],
    ids=["raises", "takes-a-run-file-name"],
)
def test_a_failing_exporter_leaves_the_earlier_run_in_the_folder_as_it_was(
    project: Project, exporter: str, error: type[Exception]
) -> None:
    """No file of the failed run is written: the earlier run stays whole, its exports
    and their record with it, and still reads as that run."""
    run(project, "t_notes")
    out = project.root / "out"
    (out / "mine.txt").write_text("mine")
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    with pytest.raises(error):
        run(project, "t_notes", exporter)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert set(RunFolder(out).recorded_exports()) == {"notes_a.txt", "notes_b.bin"}

    # the next run that succeeds, without the exports, removes them (and only them)
    run(project)
    names = {p.name for p in out.iterdir()}
    assert "notes_a.txt" not in names and "notes_b.bin" not in names
    assert (out / "mine.txt").read_text() == "mine"
