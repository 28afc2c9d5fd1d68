"""Pending records: runs not logged yet, and ``evalframe sync``, which logs them.

A record is written *before* its upload is tried (``mlflow_pending.json`` in
the run's folder) and renamed to ``mlflow_synced.json`` (with the run id)
once MLflow has the whole run. So a run whose upload failed, timed out, or
was cut off by Ctrl-C or a kill always leaves a record behind. A pointer to
each record is kept in ``<cache>/mlflow-pending/<uid>.path``
(``$EVALFRAME_CACHE_DIR`` or ``~/.cache/evalframe``), so ``evalframe sync``
with no arguments finds every record this machine left.

Whoever uploads a record (the tracker, or a sync) holds an exclusive
``flock`` on its file meanwhile; a second sync waits for it to finish (the
record is then synced, and both report success) and skips only a running
sweep's open record. The lock goes with the process, so a killed upload never
blocks a later one.
Uploads find an earlier, cut-off upload of the same record by its uid (see
:mod:`evalframe_mlflow.upload`), so each record becomes exactly one run.

A sweep's parent has an *open* record from the start of the sweep, locked by
the process that runs the sweep. If that process dies before the sweep ends,
``evalframe sync`` rebuilds the parent from the sweep folder and closes it as
FAILED, so no parent stays RUNNING forever.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from evalframe.core.io import atomic_write, atomic_write_json
from evalframe_mlflow.locks import flock_within

if TYPE_CHECKING:
    from evalframe_mlflow.record import RunRecord

__all__ = [
    "SyncResult",
    "find_pending_in",
    "index_dir",
    "index_pending",
    "indexed_records",
    "keep_beyond_dvc_copy",
    "lock_record",
    "mark_synced",
    "sync",
]

#: How long a sync waits for another process uploading the same record (at least).
SYNC_WAIT_SECONDS = 60.0


def index_dir() -> Path:
    from evalframe.core.io import default_cache_dir

    return default_cache_dir() / "mlflow-pending"


def index_pending(uid: str, record_path: Path) -> None:
    """Remember where a pending record is; a failure here only costs the no-argument sync."""
    from evalframe.core.errors import DataError
    from evalframe.core.store import tag_cache

    folder = index_dir()
    with contextlib.suppress(OSError, DataError):  # a fresh cache folder is tagged first
        folder.parent.mkdir(parents=True, exist_ok=True)
        tag_cache(folder.parent)
    with contextlib.suppress(OSError):
        atomic_write(folder / f"{uid}.path", str(record_path.resolve()) + "\n")


def keep_beyond_dvc_copy(record: RunRecord, folder: Path) -> Path | None:
    """When ``folder`` is in DVC's temporary copy of the repository (a queued experiment,
    ``dvc exp run --temp``), keep the pending record and the files it uploads where they
    outlive it: ``<cache>/mlflow-pending/kept/<uid>/``, the index pointing there. The
    copy is deleted when the experiment ends, and the results folder's
    ``mlflow_pending.json`` is no stage output, so the record was lost with it. Returns
    the kept record's path; None when ``folder`` is no such copy, or when it could not
    be kept (the record in ``folder`` stays, as for any other run)."""
    import shutil

    from evalframe.core.io import dvc_workspace, in_workspace
    from evalframe_mlflow.record import PENDING_FILE

    here = folder.resolve()
    if dvc_workspace(here) == here:
        return None
    # a relative $EVALFRAME_CACHE_DIR would be read in the copy, and go with it
    target = in_workspace(index_dir()) / "kept" / record.uid
    artifacts = []
    try:
        for name in record.artifacts:
            source = Path(name)
            if here in source.parents and source.is_file():
                copy = target / source.relative_to(here)
                copy.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, copy)
                artifacts.append(str(copy))
            else:  # outside the run folder: left where it is (missing at sync, then said)
                artifacts.append(name)
        kept = dataclasses.replace(record, artifacts=artifacts)
        path = atomic_write_json(target / PENDING_FILE, kept.to_json(target))
    except OSError:
        return None
    index_pending(record.uid, path)
    return path


def unindex(uid: str) -> None:
    with contextlib.suppress(OSError):
        (index_dir() / f"{uid}.path").unlink(missing_ok=True)


def indexed_records() -> list[Path]:
    """The pending records the index knows of that still exist (stale pointers are dropped)."""
    found: list[Path] = []
    folder = index_dir()
    if not folder.is_dir():
        return found
    for pointer in sorted(folder.glob("*.path")):
        target = Path(pointer.read_text(encoding="utf-8").strip())
        if target.is_file():
            found.append(target)
        else:
            pointer.unlink(missing_ok=True)
    return found


def find_pending_in(roots: list[Path]) -> list[Path]:
    """Every ``mlflow_pending.json`` under ``roots`` (files or folders)."""
    from evalframe_mlflow.record import PENDING_FILE

    found: set[Path] = set()
    for root in roots:
        if root.is_file() and root.name == PENDING_FILE:
            found.add(root.resolve())
        elif root.is_dir():
            found.update(p.resolve() for p in root.rglob(PENDING_FILE))
    return sorted(found)


@contextlib.contextmanager
def lock_record(path: Path, wait: float = 0.0) -> Iterator[IO[bytes] | None]:
    """An exclusive lock on a record file: the open file, or None if another process has it.

    ``wait`` seconds: how long to wait for another process to let go first (a
    sync uploading the same record takes a few seconds; a running sweep holds
    its open record for hours, so that one is never waited for).
    """
    try:
        handle = open(path, "rb")  # noqa: SIM115  # closed below, after the lock is released
    except FileNotFoundError:
        yield None
        return
    try:
        if not flock_within(handle, wait, poll=0.1):
            yield None
            return
        # a sync that held the lock before us may have finished and renamed it away
        yield handle if path.exists() else None
    finally:
        handle.close()


def mark_synced(path: Path, run_id: str) -> None:
    """Turn a pending record into a synced one: write ``mlflow_synced.json``, then remove it."""
    from evalframe_mlflow.record import SYNCED_FILE

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return  # synced by someone else meanwhile
    data["run_id"] = run_id
    atomic_write_json(path.parent / SYNCED_FILE, data)
    path.unlink(missing_ok=True)
    if isinstance(data.get("uid"), str):
        unindex(data["uid"])


@dataclass
class SyncResult:
    path: Path
    run_id: str | None
    #: "uploaded", "already there", "synced by another process", "busy", "failed" (the
    #: upload), "damaged" (the file is no record evalframe wrote: the user's to fix)
    status: str
    message: str = ""


def _read(path: Path) -> tuple[dict[str, Any] | None, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, "gone (synced meanwhile)"
    except (OSError, ValueError) as exc:
        return None, f"unreadable record ({type(exc).__name__}: {exc}); fix or delete the file"
    if not isinstance(data, dict):
        return None, "unreadable record (not a JSON object); fix or delete the file"
    return data, ""


def _close_abandoned_sweep(record: Any, folder: Path) -> Any:
    """An open sweep record whose process is gone: rebuilt from the folder, closed as FAILED."""
    from evalframe.assess.runfolder import SweepFolder
    from evalframe.plugin.hooks import SweepContext
    from evalframe_mlflow.record import build_sweep_record
    from evalframe_mlflow.sweeps import read_sweep_marker

    marker = read_sweep_marker(folder) or {"uid": record.uid, "run_name": record.run_name}
    rebuilt = build_sweep_record(
        SweepContext(experiment=record.tags.get("evalframe.experiment", ""), sweep_dir=folder,
                     config={}),
        SweepFolder(folder).jobs(),
        {**marker, "uid": record.uid, "start_time": record.start_time},
        uri=record.uri,
        experiment_name=record.experiment_name,
        cwd=folder,
    )  # fmt: skip
    rebuilt.status = "FAILED"
    rebuilt.tags["evalframe.sweep_abandoned"] = "true"
    return rebuilt


def sync(
    paths: list[Path],
    *,
    uri: str | None = None,
    timeout_seconds: float = 5,
    retries: int = 1,
) -> list[SyncResult]:
    """Upload every pending record in ``paths``; ``uri`` overrides the one each record names.

    Sweep parents go first, so their jobs can be linked to them.
    """
    from evalframe_mlflow.record import RunRecord
    from evalframe_mlflow.upload import Uploader

    loaded: list[tuple[Path, dict[str, Any]]] = []
    results: list[SyncResult] = []
    for path in paths:
        data, problem = _read(path)
        if data is None:
            if not problem.startswith("gone"):
                results.append(SyncResult(path, None, "damaged", problem))
            continue
        loaded.append((path, data))
    loaded.sort(key=lambda pd: (pd[1].get("kind") != "sweep", str(pd[0])))
    uploaders: dict[str, Uploader] = {}
    for path, data in loaded:
        # Another sync uploading this record: wait for it (then the record is gone,
        # synced). A running sweep's open record: not waited for, it is still going.
        running = data.get("kind") == "sweep" and bool(data.get("open"))
        wait = 0.0 if running else max(SYNC_WAIT_SECONDS, 4 * timeout_seconds)
        with lock_record(path, wait=wait) as handle:
            if handle is None:
                if not path.exists():
                    results.append(_synced_elsewhere(path))
                elif running:
                    results.append(SyncResult(path, None, "busy", "its sweep is still running"))
                else:
                    results.append(SyncResult(path, None, "busy", "another process is on it"))
                continue
            try:
                record = RunRecord.from_json(data, path.parent)
            except (ValueError, TypeError, KeyError, AttributeError) as exc:
                said = f"not a record evalframe wrote: {exc}; fix or delete the file"
                results.append(SyncResult(path, None, "damaged", said))
                continue
            if record.kind == "sweep" and record.open:
                record = _close_abandoned_sweep(record, path.parent)
            record.uri = uri or record.uri
            try:
                uploader = uploaders.get(record.uri) or Uploader(
                    record.uri, timeout_seconds, retries
                )
                uploaders[record.uri] = uploader
                run_id, already = uploader.upload(record)
            except Exception as exc:  # noqa: BLE001  # reported per record; the others still go
                from evalframe_mlflow.upload import failure_reason

                results.append(SyncResult(path, None, "failed", failure_reason(exc)))
                continue
            mark_synced(path, run_id)
            results.append(SyncResult(path, run_id, "already there" if already else "uploaded"))
    return results


def _synced_elsewhere(path: Path) -> SyncResult:
    """A record another process synced while this one waited: its run, from the synced file."""
    from evalframe_mlflow.record import SYNCED_FILE

    try:
        data = json.loads((path.parent / SYNCED_FILE).read_text(encoding="utf-8"))
        run_id = data.get("run_id") if isinstance(data, dict) else None
    except (OSError, ValueError):
        run_id = None
    return SyncResult(
        path, run_id if isinstance(run_id, str) else None, "synced by another process"
    )


def relpath(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)
