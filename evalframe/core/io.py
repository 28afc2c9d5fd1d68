"""File formats and safe writes shared by the core and plugins.

Every output is written to a temporary file in the destination folder and
then renamed over the target, so a crash or Ctrl-C never leaves a
half-written file that a later step (DVC, a baseline comparison) would trust.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from evalframe.core.errors import DataError
from evalframe.core.types import Ranking, Run

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


def require_file(path: str | Path, *, what: str, key: str | None = None) -> Path:
    """The path as a :class:`Path`, or a :class:`DataError` saying what is missing."""
    p = Path(path).expanduser()
    if not p.exists():
        raise DataError(
            f"{what} not found: {p}",
            key=key,
            expected="an existing file",
            hint=f"check the path (relative paths are read from {Path.cwd()})",
        )
    return p


def read_jsonl(path: str | Path, *, what: str = "JSONL file") -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, value)`` for each non-blank line; bad JSON names its line."""
    p = require_file(path, what=what)
    with open(p, encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                yield lineno, json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(
                    f"line is not valid JSON ({exc.msg} at column {exc.colno})",
                    path=p,
                    line=lineno,
                    got=repr(line.strip()[:80]),
                    hint="each line must be one complete JSON object",
                ) from None


def read_json_array(path: str | Path, *, what: str = "JSON file") -> list[tuple[int, Any]]:
    """``(line_number, element)`` for each element of a top-level JSON array.

    The line numbers let a loader say ``golden_v1.0.json:42`` about the record
    that starts on line 42, which plain ``json.load`` cannot.
    """
    p = require_file(path, what=what)
    text = p.read_text(encoding="utf-8")
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(
            f"not valid JSON ({exc.msg} at column {exc.colno})",
            path=p,
            line=exc.lineno,
            hint="check the brackets and commas around this line",
        ) from None
    decoder = json.JSONDecoder()
    i = _skip_ws(text, 0)
    if i >= len(text) or text[i] != "[":
        raise DataError(
            f"the {what} must be a JSON list of records",
            path=p,
            line=1,
            got=f"a JSON {type(json.loads(text)).__name__}",
        )
    out: list[tuple[int, Any]] = []
    i = _skip_ws(text, i + 1)
    while i < len(text) and text[i] != "]":
        value, end = decoder.raw_decode(text, i)
        out.append((text.count("\n", 0, i) + 1, value))
        i = _skip_ws(text, end)
        if i < len(text) and text[i] == ",":
            i = _skip_ws(text, i + 1)
    return out


def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def write_trec_run(path: str | Path, run: Run, tag: str = "evalframe") -> Path:
    """Write the run in TREC format: ``qid Q0 docid rank score tag``."""
    lines = []
    for qid, ranking in run.rankings.items():
        for rank, (doc, score) in enumerate(ranking.pairs(), start=1):
            lines.append(f"{qid} Q0 {doc} {rank} {score!r} {tag}\n")
    return atomic_write(path, "".join(lines))


def read_trec_run(path: str | Path, *, key: str | None = None) -> Run:
    """Read a TREC run file (6 whitespace-separated columns) into a :class:`Run`.

    Rankings keep the file's order; the metric engine re-sorts by score with
    trec_eval's tie rule, so the rank column is informational as in trec_eval.
    """
    p = require_file(path, what="run file", key=key)
    pairs: dict[str, list[tuple[str, float]]] = {}
    with open(p, encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            cols = line.split()
            if len(cols) != 6:
                raise DataError(
                    f"a TREC run line has {len(cols)} columns",
                    path=p,
                    line=lineno,
                    expected="6 columns: qid Q0 docid rank score tag",
                    got=repr(line.strip()[:80]),
                )
            qid, _, doc, _, score, _ = cols
            try:
                value = float(score)
            except ValueError:
                raise DataError(
                    "the score column is not a number",
                    path=p,
                    line=lineno,
                    expected="a number in column 5",
                    got=repr(score),
                ) from None
            pairs.setdefault(qid, []).append((doc, value))
    rankings = {q: Ranking.from_pairs(q, items) for q, items in pairs.items()}
    return Run(rankings=rankings, metadata={"source": str(p)})
