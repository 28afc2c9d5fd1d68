"""JSON for the large files (corpora, per-query results, token caches), by json's rules.

A 100k-document corpus is 100k ``json.loads`` calls, and a 10k-query run
writes 10k records of a hundred ids and scores each: with the standard
library that is about a second each way. orjson (a dependency of dvc, so
installed with evalframe) does the same work several times faster. The json
module stays the authority wherever the two could differ, so a file means
the same thing whichever parser read it:

* :func:`loads` gives text that orjson refuses (``NaN``, ``1e400``, a lone
  surrogate, broken JSON) to ``json.loads``: what is accepted, and every
  error message, is the json module's. orjson reads an integer beyond 64
  bits as a float, where json keeps it an ``int``; a value holding a float
  that large is parsed again by ``json.loads``.
* :func:`dumps_line` hands a value orjson does not write as the json module
  would (a NumPy scalar, a non-string key, an integer beyond 64 bits) to
  ``json.dumps``, with NaN and infinities written as ``null`` either way
  (:func:`evalframe.core.io.atomic_write_json`'s policy). Separators are
  compact (``{"a":1}``); JSON readers do not care.

Without orjson both fall back to the json module.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

__all__ = ["dumps_compact", "dumps_line", "jsonable", "loads"]

try:  # pragma: no branch - orjson comes with dvc; the fallback is for a bare install
    import orjson as _orjson
except ImportError:  # pragma: no cover
    _orjson = None  # type: ignore[assignment]

#: Beyond 64 bits orjson reads an integer as a float; json keeps it an int.
_INT_LIMIT = float(2**63)


def _wide(value: Any) -> bool:
    """Whether ``value`` holds a float as large as an integer orjson would have turned
    into one (checked on the parsed value: scanning the text costs more than parsing)."""
    kind = type(value)
    if kind is dict:
        items: Any = value.values()
    elif kind is list:
        if not value:
            return False
        if type(value[0]) is str:
            try:  # strings only (a ranking's ids): one C-level pass, no number in them
                "".join(value)
                return False
            except TypeError:
                items = value  # mixed: item by item
        else:
            try:  # numbers only (a ranking's scores): two C-level passes
                return not -_INT_LIMIT < min(value) <= max(value) < _INT_LIMIT
            except TypeError:
                items = value  # nulls, nesting, mixed: item by item
    else:
        return kind is float and abs(value) >= _INT_LIMIT
    for item in items:
        kind = type(item)
        if kind is str or kind is int:
            continue
        if kind is float:
            if abs(item) >= _INT_LIMIT:
                return True
        elif (kind is dict or kind is list) and _wide(item):
            return True
    return False


def _loads_orjson(text: str | bytes) -> Any:
    try:
        value = _orjson.loads(text)
    except _orjson.JSONDecodeError:
        return json.loads(text)  # json's verdict and message
    return json.loads(text) if _wide(value) else value


loads: Callable[[str | bytes], Any] = _loads_orjson if _orjson is not None else json.loads
loads.__doc__ = "Parse one JSON value as ``json.loads`` would (see the module docstring)."


def jsonable(value: Any) -> Any:
    """Strict JSON: NaN and ±inf become null (no JSON reader accepts them), NumPy
    scalars become Python numbers, so every JSON reader accepts the file."""
    if hasattr(value, "item") and type(value).__module__ == "numpy":
        value = value.item()  # np.float32, np.int64, np.bool_ -> float, int, bool
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


def _dumps_json(record: Any) -> bytes:
    try:  # most records hold no NaN, inf or NumPy scalar: one C-level dump, no walk
        text = json.dumps(record, ensure_ascii=False, allow_nan=False)
    except (ValueError, TypeError):
        text = json.dumps(jsonable(record), ensure_ascii=False, allow_nan=False)
    return (text + "\n").encode("utf-8")


def dumps_line(record: Any) -> bytes:
    """``record`` as one line of JSON Lines, UTF-8, ending in a newline."""
    if _orjson is not None:
        try:
            return _orjson.dumps(record, option=_orjson.OPT_APPEND_NEWLINE)
        except TypeError:
            pass  # a NumPy scalar, a non-string key, a huge int: the json module's way
    return _dumps_json(record)


def dumps_compact(value: list[Any]) -> bytes:
    """``json.dumps(value, separators=(",", ":"), ensure_ascii=False)`` as UTF-8, byte for byte.

    For content hashes over lists of strings (a corpus's ids and texts):
    orjson escapes exactly the characters the json module escapes, the same
    way (tests/core/test_jsoncodec.py checks every code point), so the digest
    does not depend on which one wrote it. Not for dicts: the hash's key order
    is the json module's ``sort_keys``.
    """
    if _orjson is not None:
        try:
            return _orjson.dumps(value)
        except TypeError:
            pass  # a lone surrogate, a NumPy scalar: as the json module writes it
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
