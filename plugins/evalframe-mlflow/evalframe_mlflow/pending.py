"""Pending records: runs that could not be logged, and ``evalframe sync``, which logs them.

A pending record lives in its run's folder (``mlflow_pending.json``) and a
pointer to it in ``<cache>/mlflow-pending/<uid>.path`` (``$EVALFRAME_CACHE_DIR``
or ``~/.cache/evalframe``), so ``evalframe sync`` with no arguments finds
every record this machine left, wherever its run folder is.

Sync uploads sweep parents before their jobs, and after each upload renames
the record to ``mlflow_synced.json`` (with the run id). A record uploaded
but not yet renamed (sync killed in between) is found by its uid on the next
sync and only renamed: exactly once.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from evalframe.io import atomic_write

__all__ = [
    "SyncResult",
    "find_pending_in",
    "index_dir",
    "index_pending",
    "indexed_records",
    "sync",
]


def index_dir() -> Path:
    from evalframe.commands import default_cache_dir

    return default_cache_dir() / "mlflow-pending"


def index_pending(uid: str, record_path: Path) -> None:
    """Remember where a pending record is; a failure here only costs the no-argument sync."""
    with contextlib.suppress(OSError):
        atomic_write(index_dir() / f"{uid}.path", str(record_path.resolve()) + "\n")


def indexed_records() -> list[Path]:
    """The pending records the index knows of that still exist (stale pointers are dropped)."""
    found = []
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


@dataclass
class SyncResult:
    path: Path
    run_id: str | None
    status: str  # "uploaded", "already there", "failed"
    message: str = ""


def _order(paths: list[Path]) -> list[tuple[Path, dict[str, object]]]:
    """Records read, sweep parents first so their jobs can be linked to them."""
    loaded = []
    for path in paths:
        data = json.loads(path.read_text(encoding="utf-8"))
        loaded.append((path, data))
    loaded.sort(key=lambda pd: (pd[1].get("kind") != "sweep", str(pd[0])))
    return loaded


def sync(
    paths: list[Path],
    *,
    uri: str | None = None,
    timeout_seconds: float = 10,
    retries: int = 2,
) -> list[SyncResult]:
    """Upload every pending record in ``paths``; ``uri`` overrides the one each record names."""
    from evalframe_mlflow.record import RunRecord
    from evalframe_mlflow.upload import Uploader, mark_synced

    results = []
    uploaders: dict[str, Uploader] = {}
    for path, data in _order(paths):
        try:
            record = RunRecord.from_json(data, path.parent)
        except (ValueError, TypeError, KeyError) as exc:
            results.append(SyncResult(path, None, "failed", f"unreadable record: {exc}"))
            continue
        target = uri or record.uri
        record.uri = target
        try:
            uploader = uploaders.get(target) or Uploader(target, timeout_seconds, retries)
            uploaders[target] = uploader
            run_id, already = uploader.upload(record)
        except Exception as exc:  # noqa: BLE001  # reported per record; the others still go
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            results.append(SyncResult(path, None, "failed", f"{type(exc).__name__}: {first}"))
            continue
        mark_synced(path, run_id)
        (index_dir() / f"{record.uid}.path").unlink(missing_ok=True)
        results.append(SyncResult(path, run_id, "already there" if already else "uploaded"))
    return results


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


def relpath(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)
