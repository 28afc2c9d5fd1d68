"""``evalframe merge``'s own behaviour: what it tracks, where it writes, what it keeps.

That a merged run is value for value the unsharded run is ``tests/test_shard.py``'s
subject. Here: a refused merge writes and tracks nothing (a real MLflow store), an
accepted one is tracked once; ``--out`` is new, empty or an earlier run (replaced
whole, said in one line), never a folder of other files; and the merged
``summary.json`` keeps what loading the golden set again warned about.

The two shards are made once for the module (the sharded project and sweep of
``tests/conftest.py``): every merge here only reads them, each into a folder of its
own, in this process.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from evalframe.app.cli import main
from tests.conftest import SHARD_LOADER_WARNING, make_shard_project, make_two_shards

#: no run page: drawing its plots costs a merge a second (tests/report covers it)
NO_PAGE = "report.html=false"


@pytest.fixture(scope="module")
def sharded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with pytest.MonkeyPatch.context() as mp:
        yield make_two_shards(make_shard_project(tmp_path_factory.mktemp("sharded"), mp))


def _shards(root: Path) -> list[str]:
    return [str(root / "sh" / "0"), str(root / "sh" / "1")]


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.slow  # MLflow's store: about 5 s
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # MLflow's sqlalchemy, not ours
def test_a_refused_merge_tracks_nothing_and_an_accepted_one_is_one_run(
    sharded: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    mlflow_store: Callable[[Path], str],
) -> None:
    """The golden set changed since the shards ran: found before any tracker starts, so
    no FAILED run in MLflow and no --out folder (the tracker's record was kept there)."""
    store = mlflow_store(tmp_path / "mlflow.db")
    tracked = ["tracking=mlflow", f"tracking.uri={store}", NO_PAGE]
    changed = tmp_path / "golden.jsonl"  # q0's question, one word changed
    changed.write_text((sharded / "golden.jsonl").read_text().replace('"w', '"x', 1))
    out = tmp_path / "merged"
    argv = ["merge", *_shards(sharded), "--out", str(out), *tracked]
    capsys.readouterr()
    assert main([*argv, f"dataset.path={changed}"]) == 2
    err = capsys.readouterr().err
    assert "error: the golden set changed since the shards ran" in err
    assert "mlflow" not in err and "Traceback" not in err
    assert not out.exists()

    from mlflow.tracking import MlflowClient

    client = MlflowClient(store)
    assert client.search_runs([e.experiment_id for e in client.search_experiments()]) == []

    assert main(argv) == 1  # the sharded project's gate `too_high` fails, as unsharded
    runs = client.search_runs([e.experiment_id for e in client.search_experiments()])
    assert [(r.info.status, r.data.tags["evalframe.run_folder"]) for r in runs] == [
        ("FINISHED", str(out.resolve()))
    ]
    assert int(runs[0].data.metrics["queries"]) == 37


@pytest.mark.slow  # MLflow's store: about 5 s
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # MLflow's sqlalchemy, not ours
def test_a_merge_is_tracked_as_a_run_whatever_its_shards_were_tracked_by(
    sharded: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    mlflow_store: Callable[[Path], str],
) -> None:
    """Shards of a sweep run with EVALFRAME_TRACKING=none kept `tracking: none` in their
    config.yaml, which the merge inherited: `tracking.uri=...` alone (which tracks a run)
    was ignored without a word, and the merged run was never tracked."""
    for shard in _shards(sharded):  # like a run's, the shard's config.yaml has no tracking
        assert "tracking" not in (Path(shard) / "config.yaml").read_text()
    # shards an earlier evalframe wrote, with the section
    old = tmp_path / "old"
    for i, shard in enumerate(_shards(sharded)):
        copy = old / str(i)
        copy.mkdir(parents=True)
        for f in Path(shard).iterdir():
            if f.is_file():
                (copy / f.name).write_bytes(f.read_bytes())
        with (copy / "config.yaml").open("a") as handle:
            handle.write("tracking:\n  name: none\n")
    monkeypatch.delenv("EVALFRAME_TRACKING")
    store = mlflow_store(tmp_path / "mlflow.db")
    out = tmp_path / "merged"
    argv = ["merge", str(old / "0"), str(old / "1"), "--out", str(out), NO_PAGE]
    assert main([*argv, f"tracking.uri={store}"]) == 1  # the project's gate fails
    from mlflow.tracking import MlflowClient

    client = MlflowClient(store)
    runs = client.search_runs([e.experiment_id for e in client.search_experiments()])
    assert [r.data.tags["evalframe.run_folder"] for r in runs] == [str(out.resolve())]


def test_out_is_new_empty_or_an_earlier_run_and_never_other_files(
    sharded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shards = _shards(sharded)
    capsys.readouterr()

    # a folder of other files: refused before anything is loaded, and left as it was
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("my notes\n")
    assert main(["merge", *shards, "--out", str(mine), NO_PAGE]) == 2
    assert capsys.readouterr().err == (
        f"error: option --out: {mine} holds files that are not an evalframe run's: a merge "
        "does not write its run among other files (expected a new or empty folder, or an "
        "earlier run's folder (with summary.json) to replace; got 1 entry: notes.txt)\n"
        "  hint: give --out a new folder, or move those files out of this one\n"
    )
    assert _files(mine) == {"notes.txt": b"my notes\n"}

    # a shard being merged, or the folder that holds them: the rankings are the input
    assert main(["merge", *shards, "--out", shards[1], NO_PAGE]) == 2
    err = capsys.readouterr().err
    assert f"error: option --out: {shards[1]} is the folder of shard 1/2, one of those " in err
    assert f"hint: give --out a new folder, e.g. {sharded / 'sh' / 'merged'}" in err
    assert main(["merge", *shards, "--out", str(sharded / "sh"), NO_PAGE]) == 2
    assert f"{sharded / 'sh'} holds {shards[0]}, the folder of shard 0/2" in capsys.readouterr().err
    # or a new folder inside a shard's: the merged run would nest in that shard's run
    assert main(["merge", *shards, "--out", f"{shards[0]}/merged", NO_PAGE]) == 2
    err = capsys.readouterr().err
    assert f"{shards[0]}/merged is inside {shards[0]}, the folder of shard 0/2" in err
    assert not Path(shards[0], "merged").exists()

    # an empty folder: the merged run is written in it, without a note
    out = tmp_path / "merged"
    out.mkdir()
    assert main(["merge", *shards, "--out", str(out), NO_PAGE]) == 1
    assert "note:" not in capsys.readouterr().err
    first = _files(out)
    assert {"summary.json", "metrics.json", "per_query.jsonl", "run.trec"} <= set(first)

    # an earlier run: replaced whole (a file it had and the merge does not write goes
    # too), said in one line
    (out / "comparison.md").write_text("stale: an earlier run's comparison\n")
    assert main(["merge", *shards, "--out", str(out), NO_PAGE]) == 1
    notes = [line for line in capsys.readouterr().err.splitlines() if "note:" in line]
    assert notes == [
        f"note: replacing the run in {out} with the merged run: none of its files are kept "
        "unless the merge fails (--out ANOTHER_DIR keeps it)"
    ]
    second = _files(out)
    assert "comparison.md" not in second
    # the same shards, the same numbers: only what is measured or dated differs
    assert {k: v for k, v in second.items() if k != "timings.json"} == {
        k: v for k, v in first.items() if k != "timings.json"
    }
    assert sorted(p.name for p in tmp_path.iterdir()) == ["merged", "mine"]  # nothing aside


def test_a_merge_that_fails_while_replacing_puts_the_earlier_run_back(
    sharded: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C once the new files are written (while the report prints): the folder is the
    earlier run as it was, not a mix of the two."""
    from evalframe.report.terminal import TerminalReport

    out = tmp_path / "merged"
    shards = _shards(sharded)
    assert main(["merge", *shards, "--out", str(out), NO_PAGE]) == 1
    (out / "comparison.md").write_text("an earlier run's own file\n")
    before = _files(out)

    def interrupted(self: TerminalReport, result: object) -> None:
        assert (out / "summary.json").is_file()  # the attempt's files are there by now
        raise KeyboardInterrupt

    monkeypatch.setattr(TerminalReport, "__call__", interrupted)
    assert main(["merge", *shards, "--out", str(out), NO_PAGE, "stats.seed=4"]) == 130
    assert _files(out) == before
    assert [p.name for p in tmp_path.iterdir()] == ["merged"]


def test_the_merged_summary_keeps_what_loading_the_golden_set_warned_about(
    sharded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The merge loads the golden set and corpus again: their loaders' warnings are the
    run's, in summary.json (which the page and summary.md read), as a run keeps them."""
    out = tmp_path / "merged"
    capsys.readouterr()
    assert main(["merge", *_shards(sharded), "--out", str(out), NO_PAGE]) == 1
    assert f"warning: {SHARD_LOADER_WARNING}\n" in capsys.readouterr().err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["warnings"] == [SHARD_LOADER_WARNING]
    assert summary["retrieval_warnings"] == []  # BM25 said nothing while retrieving
