"""``--out DIR`` of the commands that write a run folder from other folders (merge, rescore).

Why one rule for both: a run folder is read back by ``report``, ``compare``,
``promote`` and the trackers, which take every file in it as the run's. Written
among other files, the new run could not be told from them; written over an
earlier run file by file, it would keep that run's files it does not write
itself (an old ``calibration.json``, a page). So ``--out`` is new, empty, or an
earlier run's folder, which is replaced whole (``core.io.replacing_folder``);
anything else is refused before anything is loaded, written or tracked.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from evalframe.assess.runfolder import RunFolder
from evalframe.core.errors import ConfigError
from evalframe.core.messages import shown

__all__ = ["out_holds_a_run", "refuse_a_folder", "refuse_a_run_folder"]


def out_holds_a_run(
    out: Path,
    sources: Sequence[tuple[Path, str]],
    *,
    command: str,
    new: str,
    made_from: str,
    suggest: str,
) -> bool:
    """Whether ``out`` holds an earlier run, to replace; False for a new or empty folder.
    A folder of trackers' records alone (what a tracked rescore or merge that failed
    leaves) is replaced as a run's is.

    Refused (ConfigError, key ``--out``): a folder inside one of ``sources``
    (new or not: the run would nest in a run folder); a file; a folder that is or
    holds one of ``sources`` (each ``(path, what it is)``, e.g. ``(shard, "the folder of
    shard 0/2, one of those being merged")``), whose files the ``new`` run
    ("merged run") is ``made_from`` (a hint names a folder ``suggest`` beside
    it); and a folder holding files that are not a run's (a ``command`` does
    not write its run among them).
    """
    where = out.resolve()
    for path, what in sources:
        source = path.resolve()
        if where != source and where.is_relative_to(source):
            said = (
                f"is inside {path}, {what}: the {new} would be written inside the run folder "
                "it is made from, whose files every reader takes as that run's"
            )
        elif source.is_relative_to(where):
            verb = "is" if where == source else f"holds {path},"
            said = f"{verb} {what}: the {new} would be written over the {made_from} it is made from"
        else:
            continue
        raise ConfigError(
            f"{out} {said}",
            key="--out",
            expected=f"a folder apart from {what}",
            hint=f"give --out a new folder, e.g. {path.parent / suggest}",
        )
    if not out.exists():
        return False
    if not out.is_dir():
        raise ConfigError(
            f"{out} is a file, not a folder",
            key="--out",
            expected=f"a folder for the {new}: new, empty, or an earlier run's",
            hint="give --out a folder path",
        )
    entries = sorted(p.name for p in out.iterdir())
    # a tracked rescore or merge that failed leaves only its record of the failed run:
    # the same command again, the mistake mended, replaces it as it would a run
    failed = RunFolder(out).only_records()
    # ... and one that stopped before its end (its marker) is replaced as a finished one
    unfinished = (out / RunFolder.UNFINISHED).is_file()
    if unfinished or RunFolder.holds_run(out):
        # replaced whole, but only a run's folder: one written into a user's project
        # folder would take the user's files with it
        others = RunFolder(out).others_files()
        if others:
            raise ConfigError(
                f"{out} holds a run and files that are not a run's: replacing the run's "
                f"folder whole would delete them",
                key="--out",
                expected="a new folder, or an earlier run's folder holding nothing else",
                got=f"{len(others)} other entr{'y' if len(others) == 1 else 'ies'}: "
                f"{shown(others, 5)}",
                hint=f"give --out a new folder, e.g. {out.parent / suggest}",
            )
    if failed or unfinished or RunFolder.holds_run(out):
        waiting = RunFolder(out).undelivered()
        if waiting:
            # replaced whole, the folder would take the record with it, and the tracker
            # (its sync) would never hear of that run again
            held, whole = (
                ("the record of a failed run that was", "folder")
                if failed
                else ("a run whose tracking record was", "run")
            )
            raise ConfigError(
                f"{out} holds {held} never delivered "
                f"({shown(waiting, 3)}): replacing the {whole} would delete it",
                key="--out",
                expected="an earlier run whose record was delivered, or a new folder",
                hint=f"deliver it first (for MLflow: `evalframe sync {out}`), or give --out "
                f"a new folder, e.g. {out.parent / suggest}",
            )
        return True
    if not entries:
        return False
    raise ConfigError(
        f"{out} holds files that are not an evalframe run's"
        + (" (it is a shard folder)" if RunFolder.is_shard(out) else "")
        + f": a {command} does not write its run among other files",
        key="--out",
        expected="a new or empty folder, or an earlier run's folder (with summary.json) to replace",
        got=f"{len(entries)} entr{'y' if len(entries) == 1 else 'ies'}: {shown(entries, 5)}",
        hint="give --out a new folder, or move those files out of this one",
    )


def replaced(out: Path) -> str:
    """What replacing ``out`` replaces, for the note that says so: ``the run``, or the
    record a failed tracked run left (:func:`out_holds_a_run` accepts both)."""
    return "the failed run's tracking record" if RunFolder(out).only_records() else "the run"


def refuse_a_run_folder(out: Path | None, *, writes: str, why: str, suggest: str) -> None:
    """Refuse ``--out`` that is a run's folder, for a command that writes one file of a
    run's own name (``comparison.json``, ``benefit.json``) into a folder of its own.

    A run's folder keeps its own such file (its comparison with its baseline, its
    benefit analysis) and its page and the API read it as the run's: another one
    written there would be taken for the run's. ``why``: what it would replace,
    said after "there would" (ConfigError, key ``--out``, before any work).
    """
    if out is None or not RunFolder.holds_run(out):
        return
    raise ConfigError(
        f"{out} is the folder of a run: {writes} there would {why}",
        key="--out",
        expected="a folder that holds no run (new, or one of its own)",
        hint=f"give --out a folder of its own, e.g. {out.parent / suggest}",
    )


def refuse_a_folder(out: Path, *, expected: str, name: str) -> None:
    """Refuse ``--out`` that is an existing folder, for a command that writes one file
    there (``golden sample``'s review file, ``mine rejudge``'s dataset): the write would
    fail at its last step (exit 3). ``name``: a file name to suggest inside it."""
    if out.is_dir():
        raise ConfigError(
            f"{out} is a folder",
            key="--out",
            expected=expected,
            hint=f"name a file, e.g. --out {out / name}",
        )
