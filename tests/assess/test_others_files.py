"""A run never writes over files it did not write: a folder holding files named like
the run's own (``hydra.run.dir=.`` in a project with its own ``config.yaml``) is
refused before anything is retrieved; a folder an evalframe run left unfinished
(:attr:`RunFolder.UNFINISHED`) or finished is the next run's to write over."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import evalframe
from evalframe.assess.runfolder import RunFolder
from evalframe.core.errors import ConfigError

DOCS = {"d1": "cats sit on mats", "d2": "dogs bark at night"}
GOLDEN = [
    {"id": "q1", "text": "cat on a mat", "relevant": ["d1"]},
    {"id": "q2", "text": "barking dogs", "relevant": ["d2"]},
]
ANSWERS = {"cat on a mat": ["d1", "d2"], "barking dogs": ["d1", "d2"]}
SETTINGS = ["depth=2", "metrics.measures=[RR]", "tracking=none", "report.html=false"]
#: what `dvc repro` leaves of a run before it runs the stage again: the files that are
#: no DVC output (docs/dvc.md), with summary.json and the rest removed
LEFT_BY_DVC = {
    RunFolder.TIMINGS,
    RunFolder.REPORT_HTML,
    RunFolder.SUMMARY_MD,
    RunFolder.CORPUS_MANIFEST,  # the exp stage's: its experiment may have no corpus
}

pytestmark = pytest.mark.usefixtures("fresh_folder")


def search(query: str) -> list[str]:
    calls.append(query)
    return ANSWERS[query]


calls: list[str] = []


def toy(out: str | Path) -> evalframe.Result:
    return evalframe.run(
        retriever=search,
        golden=GOLDEN,
        corpus=DOCS,
        overrides=SETTINGS,
        output_dir=str(out),
        progress=False,
    )


def test_a_users_files_of_the_runs_names_are_refused_before_retrieval() -> None:
    mine = Path("project")
    mine.mkdir()
    (mine / "config.yaml").write_text("my: own config\n")
    (mine / "metrics.json").write_text('{"mine": 1}\n')
    calls.clear()
    with pytest.raises(ConfigError) as caught:
        toy(mine)
    message = str(caught.value)
    assert "config.yaml" in message and "metrics.json" in message
    assert "would write over them" in message and caught.value.key == "output.dir"
    assert calls == []  # refused before the retriever was asked anything
    assert (mine / "config.yaml").read_text() == "my: own config\n"
    assert sorted(p.name for p in mine.iterdir()) == ["config.yaml", "metrics.json"]


def test_other_files_of_a_user_stay_beside_the_run() -> None:
    mine = Path("notes")
    mine.mkdir()
    (mine / "README.md").write_text("mine")
    result = toy(mine)
    assert (mine / "README.md").read_text() == "mine"
    # RR: q1 finds d1 at rank 1, q2 finds d2 at rank 2
    assert result.metric("RR") == pytest.approx((1 + 1 / 2) / 2)
    assert not (mine / RunFolder.UNFINISHED).exists()


def test_a_finished_run_leaves_no_marker_and_may_be_written_over() -> None:
    first = toy("same")
    assert not (first.path / RunFolder.UNFINISHED).exists()
    second = toy("same")
    assert second.metric("RR") == pytest.approx(0.75)


def test_a_run_that_stopped_before_its_summary_is_written_over(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run stopped while writing (Ctrl-C, kill -9) between its first file and its
    summary.json leaves its files and the marker; the next run writes over them."""
    write_json = RunFolder.write_json

    def stopped_at_summary(self: RunFolder, name: str, payload: object) -> Path:
        if name == RunFolder.SUMMARY:
            raise KeyboardInterrupt
        return write_json(self, name, payload)

    with monkeypatch.context() as patch:
        patch.setattr(RunFolder, "write_json", stopped_at_summary)
        with pytest.raises(KeyboardInterrupt):
            toy("stopped")
    folder = Path("stopped")
    left = {p.name for p in folder.iterdir()}
    assert {RunFolder.UNFINISHED, "config.yaml", "run.trec", "metrics.json"} <= left
    assert RunFolder.SUMMARY not in left
    result = toy(folder)
    assert result.metric("RR") == pytest.approx(0.75)
    assert not (folder / RunFolder.UNFINISHED).exists()


def test_a_run_that_fails_before_writing_leaves_no_marker() -> None:
    def broken(query: str) -> list[str]:
        raise RuntimeError("the service is down")

    with pytest.raises(RuntimeError, match="the service is down"):
        evalframe.run(
            retriever=broken,
            golden=GOLDEN,
            corpus=DOCS,
            overrides=SETTINGS,
            output_dir="failed",
            progress=False,
        )
    assert not Path("failed", RunFolder.UNFINISHED).exists()


def test_what_dvc_leaves_of_an_earlier_run_is_written_over() -> None:
    first = evalframe.run(
        retriever=search,
        golden=GOLDEN,
        corpus=DOCS,
        overrides=[*SETTINGS[:-1], "report.html=true"],
        output_dir="results",
        progress=False,
    )
    for entry in first.path.iterdir():
        if entry.is_file() and entry.name not in LEFT_BY_DVC:
            entry.unlink()
    assert {p.name for p in first.path.iterdir() if p.is_file()} == LEFT_BY_DVC
    again = toy("results")
    assert again.metric("RR") == pytest.approx(0.75)


@pytest.mark.parametrize("name", sorted(LEFT_BY_DVC))
def test_a_users_file_named_like_one_dvc_leaves_is_still_refused(name: str) -> None:
    mine = Path("mine")
    mine.mkdir()
    (mine / name).write_text("{}\n" if name.endswith(".json") else "my own page\n")
    with pytest.raises(ConfigError, match=name.replace(".", r"\.")):
        toy(mine)
    assert (mine / name).read_text() in ("{}\n", "my own page\n")


def test_the_cli_says_it_in_one_paragraph_with_exit_2(tmp_path: Path) -> None:
    (tmp_path / "metrics.json").write_text('{"mine": 1}\n')
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "evalframe",
            "+experiment=quickstart",
            f"hydra.run.dir={tmp_path}",
            "tracking=none",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "metrics.json" in done.stderr and "hydra.run.dir=" in done.stderr
    assert (tmp_path / "metrics.json").read_text() == '{"mine": 1}\n'
