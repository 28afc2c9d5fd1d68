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

import functools
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from evalframe.core.jsoncodec import dumps_line, jsonable
from evalframe.core.reader import read_json_array, read_jsonl, read_trec_run, require_file
from evalframe.core.types import Run

__all__ = [
    "atomic_copy",
    "atomic_write",
    "atomic_write_chunks",
    "atomic_write_json",
    "atomic_write_jsonl",
    "default_cache_dir",
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


def atomic_write(path: str | Path, text: str | bytes) -> Path:
    """Write ``text`` (or bytes) to ``path`` via a temp file + rename (never half-written)."""
    return atomic_write_chunks(path, [text])


def atomic_write_chunks(path: str | Path, chunks: Iterable[str | bytes]) -> Path:
    """:func:`atomic_write` of the chunks one after the other, each written as it comes:
    a large file (a run of 10M lines) is never held whole in memory. A chunk that
    fails to come (an exception from the iterable) leaves no file behind."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        os.fchmod(fd, _file_mode())
        with os.fdopen(fd, "wb") as handle:
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
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
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
    text = json.dumps(jsonable(payload), indent=2, ensure_ascii=False, allow_nan=False)
    return atomic_write(path, text + "\n")


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
