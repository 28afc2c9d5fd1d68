"""Safe writes shared by the core and plugins.

Every output is written to a temporary file in the destination folder and
then renamed over the target, so a crash or Ctrl-C never leaves a
half-written file that a later step (DVC, a baseline comparison) would trust.
A folder written again whole (:func:`replacing_folder`) holds the old files
or the new ones when the writing ends, never some of each.

Reading lives in :mod:`evalframe.core.reader`; ``read_jsonl``,
``read_json_array``, ``read_trec_run`` and ``require_file`` are importable
from here too, for code written before the reader had its own module.
"""

from __future__ import annotations

import errno
import functools
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from evalframe.core.jsoncodec import dumps_document, dumps_line
from evalframe.core.reader import read_json_array, read_jsonl, read_trec_run, require_file
from evalframe.core.types import Run

__all__ = [
    "UnwritableTargetError",
    "atomic_copy",
    "atomic_write",
    "atomic_write_chunks",
    "atomic_write_json",
    "atomic_write_jsonl",
    "check_writable",
    "default_cache_dir",
    "dvc_workspace",
    "in_workspace",
    "read_json_array",
    "read_jsonl",
    "read_trec_run",
    "replacing_folder",
    "require_file",
    "write_trec_run",
]


def default_cache_dir() -> Path:
    """Where caches go unless ``output.cache_dir`` says otherwise:
    ``$EVALFRAME_CACHE_DIR``, else ``~/.cache/evalframe``."""
    env = os.environ.get("EVALFRAME_CACHE_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "evalframe"


def dvc_workspace(cwd: Path) -> Path:
    """``cwd``, or the same folder of the workspace when ``cwd`` is in DVC's temporary copy.

    A queued experiment (``dvc exp run --queue``, then ``dvc queue start``) and a
    ``dvc exp run --temp`` run in a copy of the repository under
    ``<workspace>/.dvc/tmp/exps/`` (``tmpXXXX``, or ``standalone/tmpXXXX``), deleted
    when it ends; DVC sets ``DVC_ROOT`` to the workspace it was started from, not the
    copy. So a folder of the copy (the copy's root holds ``.dvc``) stands for the same
    folder of the workspace. Anywhere else, and without ``DVC_ROOT`` (``dvc repro``
    sets it to the repository the stage runs in), ``cwd`` is its own answer.
    """
    root = os.environ.get("DVC_ROOT", "").strip()
    if not root:
        return cwd
    workspace = Path(root).resolve()
    exps = workspace / ".dvc" / "tmp" / "exps"
    if exps not in cwd.parents:
        return cwd
    for folder in (cwd, *cwd.parents):
        if folder == exps:
            break
        if (folder / ".dvc").is_dir():  # the copy's root (below the Git root in a monorepo)
            return workspace / cwd.relative_to(folder)
    return workspace


def in_workspace(path: Path) -> Path:
    """``path``, or, relative in DVC's temporary copy, the same path in the workspace.

    A relative cache folder (``output.cache_dir: .evalframe-cache``, as DVC's
    ``params.yaml`` names it) would otherwise be made in the copy of a queued
    experiment and deleted with it, and the next experiment would retrieve every
    query again; the workspace's cache is content-addressed and safe to share
    between concurrent jobs. Anything else is returned as it was, relative or not.
    """
    if path.is_absolute():
        return path
    cwd = Path.cwd().resolve()
    base = dvc_workspace(cwd)
    return path if base == cwd else base / path


@functools.cache
def _file_mode() -> int:
    """The mode ``open()`` would give a new file: 0o666 less the process umask.

    mkstemp creates its temp file 0o600; without this every output (read by
    colleagues, CI artifacts, a web server) would be private to its writer.
    The umask can only be read by setting it, so it is read once and set back.
    """
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


class UnwritableTargetError(OSError):
    """A file cannot be made beside ``filename`` (a read-only folder, ``/proc``): raised
    for the user's path, not for the hidden temp file that failed, which no one named.
    An OSError still, for callers that warn and go on."""


def _temp_beside(target: Path) -> tuple[int, str]:
    """mkstemp in ``target``'s folder (made if missing); a failure of either said of
    ``target`` (UnwritableTargetError)."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        return tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        if exc.errno in (errno.EEXIST, errno.ENOTDIR):
            raise  # a file where a folder must be: the caller's message names it
        raise UnwritableTargetError(exc.errno, exc.strerror, str(target)) from None


def check_writable(path: str | Path) -> None:
    """Make (and remove) a file beside ``path``, before work whose result would be lost
    if it could not be saved (``golden create``'s answers, ``golden sample``'s draw):
    UnwritableTargetError now rather than after the work."""
    target = Path(path)
    fd, tmp = _temp_beside(target)
    os.close(fd)
    Path(tmp).unlink(missing_ok=True)


def atomic_write(path: str | Path, text: str | bytes) -> Path:
    """Write ``text`` (or bytes) to ``path`` via a temp file + rename (never half-written)."""
    return atomic_write_chunks(path, [text])


def atomic_write_chunks(path: str | Path, chunks: Iterable[str | bytes]) -> Path:
    """:func:`atomic_write` of the chunks one after the other, each written as it comes:
    a large file (a run of 10M lines) is never held whole in memory. A chunk that
    fails to come (an exception from the iterable) leaves no file behind."""
    target = Path(path)
    fd, tmp = _temp_beside(target)
    try:
        os.fchmod(fd, _file_mode())
        # a 1 MB buffer: 30 MB of per-query records in 30 writes, not 3,700 of 8 KB
        with os.fdopen(fd, "wb", buffering=1 << 20) as handle:
            for chunk in chunks:
                handle.write(chunk.encode("utf-8") if isinstance(chunk, str) else chunk)
            handle.flush()
            os.fsync(handle.fileno())
        Path(tmp).replace(target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def atomic_copy(source: str | Path, path: str | Path) -> Path:
    """Copy a file to ``path`` via a temp file + rename (never half-written)."""
    target = Path(path)
    fd, tmp = _temp_beside(target)
    try:
        os.fchmod(fd, _file_mode())
        with os.fdopen(fd, "wb") as handle, open(source, "rb") as src:
            shutil.copyfileobj(src, handle, 1 << 20)
            handle.flush()
            os.fsync(handle.fileno())
        Path(tmp).replace(target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def atomic_write_json(path: str | Path, payload: Any) -> Path:
    return atomic_write(path, dumps_document(payload))


def atomic_write_jsonl(path: str | Path, records: Iterable[Any]) -> Path:
    """One JSON value per line (:func:`evalframe.core.jsoncodec.dumps_line`), atomically."""
    return atomic_write_chunks(path, (dumps_line(r) for r in records))


def write_trec_run(path: str | Path, run: Run, tag: str = "evalframe") -> Path:
    """Write the run in TREC format: ``qid Q0 docid rank score tag``, a ranking at a time
    (the lines of a 5k x 100 run, held at once, were 60 MB that the process kept)."""

    def rankings() -> Iterator[str]:
        for qid, ranking in run.rankings.items():
            yield "".join(
                f"{qid} Q0 {doc} {rank} {score!r} {tag}\n"
                for rank, (doc, score) in enumerate(ranking.pairs(), start=1)
            )

    return atomic_write_chunks(path, rankings())


@contextmanager
def replacing_folder(folder: str | Path) -> Iterator[Path]:
    """Write ``folder`` anew inside the block, in place of what it holds now.

    The folder as it is (if it exists) is first renamed aside, into a hidden
    temporary folder beside it (``.<name>.replaced-*``, on the same file
    system, so the rename is atomic), and the block writes into an absent
    ``folder``. When the block ends the old files are deleted; if it raises
    (an error, Ctrl-C) what it wrote is deleted and the old folder is renamed
    back. So no file of the old folder is left beside the new ones, and a
    failed attempt leaves the old folder as it was. (A process killed outright
    leaves the old folder in its hidden temporary folder.)
    """
    target = Path(folder)
    if not target.exists():
        yield target
        return
    aside = Path(tempfile.mkdtemp(prefix=f".{target.name}.replaced-", dir=target.parent))
    old = aside / target.name
    try:
        target.rename(old)
    except BaseException:
        aside.rmdir()
        raise
    try:
        yield target
    except BaseException:
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        else:
            target.unlink(missing_ok=True)
        old.rename(target)
        aside.rmdir()
        raise
    shutil.rmtree(aside, ignore_errors=True)
