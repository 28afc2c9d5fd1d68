"""A run never writes over files it did not write: a folder holding files named like
the run's own (``hydra.run.dir=.`` in a project with its own ``config.yaml``) is
refused before anything is retrieved; a folder an evalframe run left unfinished
(:attr:`RunFolder.UNFINISHED`) or finished is the next run's to write over."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import evalframe
from evalframe.assess.runfolder import RunFolder, SweepFolder
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
    base = toy("base")
    first = evalframe.run(
        retriever=search,
        golden=GOLDEN,
        corpus=DOCS,
        overrides=[*SETTINGS[:-1], "report.html=true", f"baseline={base.path}"],
        output_dir="results",
        progress=False,
    )
    left = LEFT_BY_DVC | {RunFolder.COMPARISON, RunFolder.COMPARISON_MD}
    for entry in first.path.iterdir():
        if entry.is_file() and entry.name not in left:
            entry.unlink()
    assert {p.name for p in first.path.iterdir() if p.is_file()} == left
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
    # and Hydra's files for the refused job are gone with it: the folder is as it was
    assert sorted(p.name for p in tmp_path.iterdir()) == ["metrics.json"]


def test_a_refused_run_leaves_what_was_in_hydras_folder_before(tmp_path: Path) -> None:
    """Only what Hydra wrote for the refused job goes: a ``.hydra/`` that held a file of
    the user's stays, with that file, and so does a log with something in it."""
    (tmp_path / "config.yaml").write_text("my: own config\n")
    (tmp_path / ".hydra").mkdir()
    (tmp_path / ".hydra" / "notes.txt").write_text("mine\n")
    (tmp_path / "__main__.log").write_text("my log\n")
    done = subprocess.run(
        [
            *(sys.executable, "-m", "evalframe", "+experiment=quickstart"),
            *(f"hydra.run.dir={tmp_path}", "tracking=none"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert sorted(p.name for p in (tmp_path / ".hydra").iterdir()) == ["notes.txt"]
    assert (tmp_path / "__main__.log").read_text() == "my log\n"
    assert (tmp_path / "config.yaml").read_text() == "my: own config\n"


def test_a_failed_sweep_jobs_folder_is_written_over() -> None:
    """A sweep job that failed keeps only its job.json; the sweep run again into the same
    ``hydra.sweep.dir`` writes that job's run there."""
    folder = Path("sweep", "1")
    folder.mkdir(parents=True)
    (folder / RunFolder.JOB).write_text(
        '{"exit_code": 3, "error": "the service is down", "sweep_id": "abc"}\n'
    )
    assert toy(folder).metric("RR") == pytest.approx(0.75)


def test_a_job_folder_deep_in_a_sweep_gets_the_sweep_hint() -> None:
    """``hydra.sweep.subdir=${a}/${b}`` puts a job two folders under its sweep's: the
    hint still names ``hydra.sweep.dir``, the setting that moves it."""
    SweepFolder(Path("multi")).start()
    folder = Path("multi", "bm25", "0")
    folder.mkdir(parents=True)
    (folder / "config.yaml").write_text("my: own config\n")
    with pytest.raises(ConfigError) as refused:
        RunFolder(folder).prepare()
    assert "hydra.sweep.dir=multirun/NAME" in refused.value.hint


def test_a_users_job_json_is_not_written_over_by_the_sweeps_record() -> None:
    """A sweep job refused for a user's files still records how it ended, but never
    over a ``job.json`` of the user's: the record is refused (OSError, said as a
    warning by the job) and the file is left as it was."""
    SweepFolder(Path("multi")).start()
    mine = Path("multi", "0")
    mine.mkdir()
    (mine / RunFolder.JOB).write_text('{"my": "own job file"}\n')
    with pytest.raises(OSError, match="not a sweep job's record"):
        SweepFolder.record_job(mine, 2, "refused")
    assert (mine / RunFolder.JOB).read_text() == '{"my": "own job file"}\n'
    # a sweep's own record of an earlier try is written over
    ours = Path("multi", "1")
    ours.mkdir()
    SweepFolder.record_job(ours, 3, "the service is down")
    SweepFolder.record_job(ours, 0)
    assert json.loads((ours / RunFolder.JOB).read_text())["exit_code"] == 0


def test_a_summary_from_before_the_layout_key_is_an_earlier_runs() -> None:
    first = toy("old")
    summary = json.loads((first.path / "summary.json").read_text())
    del summary["layout"]
    (first.path / "summary.json").write_text(json.dumps(summary))
    assert toy("old").metric("RR") == pytest.approx(0.75)


def test_a_stopped_run_in_a_users_folder_does_not_make_it_replaceable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The marker of a run stopped in a project folder (its files under other names) does
    not let ``rescore --out`` replace the folder whole: only a folder of a run's files."""
    from evalframe.app.outfolder import out_holds_a_run

    project = Path("project")
    (project / "src").mkdir(parents=True)
    (project / "NOTES.md").write_text("mine")
    RunFolder(project).mark_unfinished()
    with pytest.raises(ConfigError, match="files that are not a run's") as caught:
        out_holds_a_run(project, [], command="rescore", new="run", made_from="x", suggest="y")
    assert "NOTES.md" in str(caught.value) and "src" in str(caught.value)
    stopped = Path("stopped")
    stopped.mkdir()
    RunFolder(stopped).mark_unfinished()
    (stopped / "config.yaml").write_text("half: written\n")
    assert out_holds_a_run(stopped, [], command="rescore", new="run", made_from="x", suggest="y")


@pytest.mark.slow
def test_a_shard_refuses_a_users_files_and_writes_over_its_own(tmp_path: Path) -> None:
    def shard(folder: Path) -> subprocess.CompletedProcess[str]:
        argv = ["+experiment=quickstart", "shard=0/2", f"hydra.run.dir={folder}"]
        return subprocess.run(
            [sys.executable, "-m", "evalframe", *argv, "tracking=none"],
            capture_output=True,
            text=True,
            timeout=120,
        )

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "config.yaml").write_text("my: own\n")
    refused = shard(mine)
    assert refused.returncode == 2, refused.stderr
    assert "config.yaml" in refused.stderr and "Traceback" not in refused.stderr
    assert (mine / "config.yaml").read_text() == "my: own\n"
    own = tmp_path / "own"
    for _ in range(2):  # the second writes over the finished shard of the first
        done = shard(own)
        assert done.returncode == 0, done.stderr
    assert (own / RunFolder.SHARD).is_file() and not (own / RunFolder.UNFINISHED).exists()
    run = toy(tmp_path / "run").path  # a shard would cut its run.trec to the slice
    before = (run / "run.trec").read_bytes()
    over_a_run = shard(run)
    assert over_a_run.returncode == 2, over_a_run.stderr
    assert "a finished run" in over_a_run.stderr
    assert (run / "run.trec").read_bytes() == before


def test_a_finished_run_in_a_users_folder_is_not_replaced_whole() -> None:
    """A run written among a user's notes: ``rescore --out`` there would have replaced
    the folder whole, notes and all; it is refused, naming them."""
    from evalframe.app.outfolder import out_holds_a_run

    mine = Path("notes")
    mine.mkdir()
    (mine / "NOTES.md").write_text("mine")
    toy(mine)
    with pytest.raises(ConfigError, match=r"NOTES\.md"):
        out_holds_a_run(mine, [], command="rescore", new="run", made_from="x", suggest="y")
    assert out_holds_a_run(
        toy("clean").path, [], command="rescore", new="run", made_from="x", suggest="y"
    )


def test_a_users_summary_naming_an_experiment_is_not_a_runs() -> None:
    mine = Path("mine")
    mine.mkdir()
    (mine / "summary.json").write_text('{"experiment": "my notes"}\n')
    (mine / "config.yaml").write_text("my: own\n")
    with pytest.raises(ConfigError, match=r"summary\.json"):
        toy(mine)
    assert (mine / "config.yaml").read_text() == "my: own\n"


def test_a_comparison_of_compare_out_is_not_taken_for_a_runs_leftovers() -> None:
    """``evalframe compare A B --out D`` writes comparison.json and .md: with no run's
    timings.json beside them they are not what DVC left of a run."""
    base = toy("base")
    with_baseline = evalframe.run(
        retriever=search,
        golden=GOLDEN,
        corpus=DOCS,
        overrides=[*SETTINGS, f"baseline={base.path}"],
        output_dir="run",
        progress=False,
    )
    mine = Path("compared")
    mine.mkdir()
    for name in (RunFolder.COMPARISON, RunFolder.COMPARISON_MD):
        (mine / name).write_bytes((with_baseline.path / name).read_bytes())
    with pytest.raises(ConfigError, match="comparison"):
        toy(mine)
