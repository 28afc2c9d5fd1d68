"""Safe writes shared by the core and plugins.

Every output is written to a temporary file in the destination folder and
then renamed over the target, so a crash or Ctrl-C never leaves a
half-written file that a later step (DVC, a baseline comparison) would trust.

Reading lives in :mod:`evalframe.core.reader`; ``read_jsonl``,
``read_json_array``, ``read_trec_run`` and ``require_file`` are importable
from here too, for code written before the reader had its own module.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from evalframe.core.reader import read_json_array, read_jsonl, read_trec_run, require_file
from evalframe.core.types import Run

__all__ = [
    "atomic_write",
    "atomic_write_json",
    "atomic_write_jsonl",
    "default_cache_dir",
    "read_json_array",
    "read_jsonl",
    "read_trec_run",
    "require_file",
    "write_trec_run",
]


def default_cache_dir() -> Path:
    """Where caches go unless ``output.cache_dir`` says otherwise:
    ``$EVALFRAME_CACHE_DIR``, else ``~/.cache/evalframe``."""
    env = os.environ.get("EVALFRAME_CACHE_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "evalframe"


def atomic_write(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` via a temp file + rename (never half-written)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        Path(tmp).replace(target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def _jsonable(value: Any) -> Any:
    """NaN is not JSON: write it as null so every JSON reader accepts the file."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def atomic_write_json(path: str | Path, payload: Any) -> Path:
    text = json.dumps(_jsonable(payload), indent=2, sort_keys=False, ensure_ascii=False)
    return atomic_write(path, text + "\n")


def atomic_write_jsonl(path: str | Path, records: Iterable[Any]) -> Path:
    lines = (json.dumps(_jsonable(r), ensure_ascii=False) for r in records)
    return atomic_write(path, "".join(line + "\n" for line in lines))


def write_trec_run(path: str | Path, run: Run, tag: str = "evalframe") -> Path:
    """Write the run in TREC format: ``qid Q0 docid rank score tag``."""
    lines = []
    for qid, ranking in run.rankings.items():
        for rank, (doc, score) in enumerate(ranking.pairs(), start=1):
            lines.append(f"{qid} Q0 {doc} {rank} {score!r} {tag}\n")
    return atomic_write(path, "".join(lines))
