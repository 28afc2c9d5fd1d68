"""What DVC records about a file: the md5 in its ``.dvc`` file or in ``dvc.lock``.

A run's summary names the golden set it was scored on by content hash; this
module adds the identity DVC gives the same data, so a verdict can be traced
to a committed version (``git log -p golden/docs.jsonl.dvc``). It only reads
the small YAML files DVC writes and never imports dvc, so it costs nothing in
a repository without DVC.

Where the record comes from, first match wins:

1. a ``.dvc`` file beside the path or beside one of its folders up to the DVC
   root (``golden/docs.jsonl.dvc``, or ``golden.dvc`` tracking the folder);
2. ``dvc.lock`` at the DVC root: an ``outs`` or ``deps`` entry of any stage
   for the path or one of its folders.

For a single file DVC's md5 is the md5 of its bytes, so the md5 reported is
computed from the file: it equals the recorded one unless the file was edited
since (``modified``), which is also the case while ``dvc repro`` re-runs a
stage whose golden set changed, before ``dvc.lock`` is rewritten. For a
folder the recorded ``.dir`` md5 is reported as it is.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["DvcRecord", "dvc_root", "file_md5", "lookup"]

_CHUNK = 1 << 20


@dataclass(frozen=True)
class DvcRecord:
    """DVC's record of one path; every field is ``None`` when DVC does not track it."""

    md5: str | None = None
    #: the ``.dvc`` file or ``dvc.lock`` holding the record, relative to the DVC root
    file: str | None = None
    #: the tracked path (the file itself or a folder holding it), relative to the DVC root
    tracked: str | None = None
    #: the file differs from the recorded md5 (``None`` for a folder: not checked)
    modified: bool | None = None

    def as_summary(self) -> dict[str, Any]:
        """The keys a run's ``summary.json`` carries under ``golden_set``."""
        return {"dvc_md5": self.md5, "dvc_file": self.file, "dvc_modified": self.modified}


def dvc_root(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` holding a ``.dvc/`` folder."""
    here = start.resolve()
    for folder in (here, *here.parents):
        if (folder / ".dvc").is_dir():
            return folder
    return None


def file_md5(path: Path) -> str:
    """The md5 of a file's bytes: what DVC 3 records for a file."""
    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _load_yaml(path: Path) -> Any:
    import yaml

    # libyaml's loader where PyYAML has it: a repository's dvc.lock of 1,000 lines
    # takes 60 ms in the pure-Python one, on every run
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=loader)  # a safe loader
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None  # a broken record is treated as no record, never as a failed run


def _entries(data: Any, key: str) -> list[dict[str, Any]]:
    items = data.get(key) if isinstance(data, dict) else None
    return [e for e in items if isinstance(e, dict)] if isinstance(items, list) else []


def _from_dvc_files(target: Path, root: Path) -> tuple[Path, Path, dict[str, Any]] | None:
    for tracked in (target, *target.parents):
        dvc_file = tracked.parent / f"{tracked.name}.dvc"
        if dvc_file.is_file():
            for out in _entries(_load_yaml(dvc_file), "outs"):
                if (dvc_file.parent / str(out.get("path", ""))).resolve() == tracked:
                    return dvc_file, tracked, out
        if tracked == root:
            break
    return None


def _from_lock(target: Path, root: Path) -> tuple[Path, Path, dict[str, Any]] | None:
    lock = root / "dvc.lock"
    if not lock.is_file():
        return None
    data = _load_yaml(lock)
    stages = data.get("stages") if isinstance(data, dict) else None
    if not isinstance(stages, dict):
        return None
    # The stage that wrote a file (or a folder holding it) knows it best; a stage that
    # reads it names it only when it reads the file itself: a dependency on a folder
    # above it (the source tree `evalframe/`) hashes everything in that folder, which
    # is not the golden set's identity.
    candidates = {"outs": (target, *target.parents), "deps": (target,)}
    for key in ("outs", "deps"):
        for stage in stages.values():
            for entry in _entries(stage, key):
                tracked = (root / str(entry.get("path", ""))).resolve()
                if tracked in candidates[key]:
                    return lock, tracked, entry
    return None


def lookup(path: str | Path) -> DvcRecord:
    """DVC's record of ``path`` (a golden-set file or folder), or an empty record."""
    target = Path(path).expanduser().resolve()
    root = dvc_root(target if target.is_dir() else target.parent)
    if root is None:
        return DvcRecord()
    found = _from_dvc_files(target, root) or _from_lock(target, root)
    if found is None:
        return DvcRecord()
    record_file, tracked, entry = found
    recorded = entry.get("md5")
    md5 = str(recorded) if recorded is not None else None
    modified: bool | None = None
    # DVC 3 entries say `hash: md5` and hash a file's raw bytes; older entries
    # normalised line endings first, so only the recorded value can be trusted.
    if tracked == target and target.is_file() and entry.get("hash") == "md5":
        try:
            actual = file_md5(target)
        except OSError:
            actual = None
        if actual is not None:
            modified, md5 = actual != md5, actual
    return DvcRecord(
        md5=md5,
        file=record_file.relative_to(root).as_posix(),
        tracked=tracked.relative_to(root).as_posix() if tracked != root else ".",
        modified=modified,
    )
