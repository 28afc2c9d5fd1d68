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
* :func:`dumps_document` writes a JSON file (``summary.json``, ``timings.json``)
  exactly as ``json.dumps(..., indent=2)`` does, byte for byte: with orjson
  where the two write the same bytes, and with the json module for any value
  where they could differ (a float that Python writes with an exponent, an
  integer beyond 64 bits, a subclass of a plain type).

Without orjson both fall back to the json module.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

__all__ = ["dumps_compact", "dumps_document", "dumps_line", "jsonable", "loads"]

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


#: Python writes a float below this, or at or above the ceiling, with an exponent
#: (``1e-05``, ``1e+16``) and orjson without one or in its own form (``0.00001``,
#: ``1e16``); between them both write the shortest digits that read back the same.
_POSITIONAL_FLOOR, _POSITIONAL_CEILING = 1e-4, 1e16


def _plain_document(value: Any, odd: list[Any]) -> Any:
    """:func:`jsonable`'s value, with anything orjson might write differently from the
    json module appended to ``odd`` (then the json module writes the whole file)."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return value
    if kind is float:
        if not math.isfinite(value):
            return None
        size = abs(value)
        if size and not _POSITIONAL_FLOOR <= size < _POSITIONAL_CEILING:
            odd.append(value)
        return value
    if kind is int:
        if not -(2**63) <= value < 2**64:
            odd.append(value)
        return value
    if kind is dict:
        return {
            (k if type(k) is str else str(k)): _plain_document(v, odd) for k, v in value.items()
        }
    if kind is list or kind is tuple:
        return [_plain_document(v, odd) for v in value]
    odd.append(value)  # a NumPy scalar, an enum, a subclass: as jsonable makes it
    return jsonable(value)


def dumps_document(value: Any) -> str:
    """``json.dumps(jsonable(value), indent=2, ensure_ascii=False, allow_nan=False)``
    and a newline, byte for byte: a JSON file as people read it.

    The json module writes with an indent in pure Python: ``timings.json`` of a 10k
    query run (a latency per query) took 0.1 s of every run and rescore. orjson
    writes the same bytes (its indent, separators and escapes are the json
    module's) wherever :func:`_plain_document` finds nothing that could differ.
    """
    odd: list[Any] = []
    plain = _plain_document(value, odd)
    if _orjson is not None and not odd:
        try:
            return _orjson.dumps(plain, option=_orjson.OPT_INDENT_2).decode("utf-8") + "\n"
        except TypeError:
            pass  # a lone surrogate: as the json module writes it
    text = json.dumps(jsonable(value), indent=2, ensure_ascii=False, allow_nan=False)
    return text + "\n"


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
