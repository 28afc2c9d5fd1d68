"""The run folder Hydra makes before a job runs, when the job does not finish.

Hydra makes ``outputs/<experiment>/<time>/`` (with ``.hydra/`` and a log) before
evalframe's job starts. A job that stops on a user's mistake or on Ctrl-C must
not leave something that reads as a run: an empty stub is removed, and a
folder with some outputs but no ``summary.json`` (written last) is said to be
incomplete. A folder that is no run's (a user's project, ``hydra.run.dir=.``)
keeps what it held: only the files Hydra wrote there for this job are removed.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import time
from pathlib import Path

#: When this process began, well before Hydra made the job's folder: a file of Hydra's
#: modified since is this job's (the clock's tick, a few ms, is the margin).
_STARTED = time.time() - 0.05
#: What Hydra writes into ``.hydra/`` for a job (``hydra.output_subdir``).
_HYDRA_FILES = ("config.yaml", "hydra.yaml", "overrides.yaml")

__all__ = ["drop_stub_folder", "say_if_incomplete"]


def drop_stub_folder() -> None:
    """After a usage, config or data error, the run folder Hydra made before the job ran,
    if it holds nothing else: ``.hydra/``, an empty ``hydra_app.log`` and the marker of a
    run that had begun (:attr:`RunFolder.UNFINISHED`) are not a run,
    and left behind they read as one (``evalframe compare`` then calls it "not a run
    folder"). A sweep's jobs keep theirs: ``job.json`` records how each ended."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    if not HydraConfig.initialized() or HydraConfig.get().mode == RunMode.MULTIRUN:
        return
    folder = Path(HydraConfig.get().runtime.output_dir)
    here = Path.cwd().resolve()
    from evalframe.assess.runfolder import RunFolder

    if folder.resolve() in (here, *here.parents):  # hydra.run.dir=. : never the user's folder
        _drop_hydra_files(folder)
        return
    try:
        for entry in folder.iterdir():
            empty_log = entry.suffix == ".log" and entry.is_file() and not entry.stat().st_size
            # the marker of a run that had begun (RunFolder.prepare) is not a run either
            if entry.name not in (".hydra", RunFolder.UNFINISHED) and not empty_log:
                _drop_hydra_files(folder)
                return
        shutil.rmtree(folder)
        # and the folders Hydra made above it, when they are empty now (`outputs/quickstart/`
        # on the first run): only below the working folder, and never one holding anything
        for parent in folder.resolve().parents:
            if parent == here or here not in parent.parents:
                break
            parent.rmdir()  # OSError when not empty: it was there before, and stays
    except OSError:
        return  # a folder that cannot be read or removed stays: the error was the point


def _drop_hydra_files(folder: Path) -> None:
    """In a folder that is no run's (a user's, refused for the files it holds), what
    Hydra wrote there for this job: ``.hydra/``'s three files and an empty log, when
    modified since this process began, and ``.hydra/`` when nothing else is left in
    it. A run's folder keeps its ``.hydra/`` (a job failed in it has written over it
    already; removing it would leave the run without one)."""
    from evalframe.assess.runfolder import RunFolder

    if RunFolder.holds_run(folder) or RunFolder.is_shard(folder):
        return
    if (folder / RunFolder.UNFINISHED).exists():  # this run's own, stopped part way: its
        return  # .hydra/ records the config that made what it wrote
    hydra = folder / ".hydra"
    made = [hydra / name for name in _HYDRA_FILES]
    made += [p for p in folder.glob("*.log") if p.is_file() and not p.stat().st_size]
    for path in made:
        try:
            if path.is_file() and path.stat().st_mtime >= _STARTED:
                path.unlink()
        except OSError:
            continue  # stays: the error was the point
    with contextlib.suppress(OSError):  # when it holds anything else, or is not there
        hydra.rmdir()


def say_if_incomplete() -> None:
    """After Ctrl-C, a run folder left with some outputs but no ``summary.json`` (written
    last) is not a run: said, so that nobody reads its metrics.json as one."""
    from hydra.core.hydra_config import HydraConfig

    from evalframe.assess.runfolder import RunFolder

    if not HydraConfig.initialized():
        return
    folder = Path(HydraConfig.get().runtime.output_dir)
    if folder.is_dir() and not RunFolder.is_run(folder):
        print(
            f"{folder} is incomplete (interrupted before its summary.json was written): "
            "delete it, or run again",
            file=sys.stderr,
        )
