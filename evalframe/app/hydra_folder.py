"""The run folder Hydra makes before a job runs, when the job does not finish.

Hydra makes ``outputs/<experiment>/<time>/`` (with ``.hydra/`` and a log) before
evalframe's job starts. A job that stops on a user's mistake or on Ctrl-C must
not leave something that reads as a run: an empty stub is removed, and a
folder with some outputs but no ``summary.json`` (written last) is said to be
incomplete.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

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
    if folder.resolve() in (here, *here.parents):  # hydra.run.dir=. : never the user's folder
        return
    from evalframe.assess.runfolder import RunFolder

    try:
        for entry in folder.iterdir():
            empty_log = entry.suffix == ".log" and entry.is_file() and not entry.stat().st_size
            # the marker of a run that had begun (RunFolder.prepare) is not a run either
            if entry.name not in (".hydra", RunFolder.UNFINISHED) and not empty_log:
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
