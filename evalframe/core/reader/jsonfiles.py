"""JSON Lines and JSON documents, read with the line of every record.

``json.loads`` forgets where a value was; a loader's error must say
``golden.json:42``. :func:`read_jsonl` yields each line's value with its
number; :func:`read_json` keeps the text beside the parsed value so that
:class:`JsonDocument` can say on which line any element or member starts.
Both read through :mod:`evalframe.core.reader.files`, so a byte-order mark,
a NUL byte or bad UTF-8 is handled as in every other format.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalframe.core.errors import DataError
from evalframe.core.jsoncodec import loads
from evalframe.core.reader.files import read_lines, read_text

try:  # what the JSON codec reads with, when installed (evalframe.core.jsoncodec)
    import orjson as _orjson
except ImportError:  # pragma: no cover - orjson is a dependency
    _orjson = None  # type: ignore[assignment]

__all__ = ["JsonDocument", "read_json", "read_json_array", "read_jsonl"]

_DECODER = json.JSONDecoder()
_JSON_SPACE = " \t\r\n"


def read_jsonl(
    path: str | Path,
    *,
    what: str = "JSONL file",
    key: str | None = None,
    unique_keys: bool = True,
) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, value)`` for each non-blank line; bad JSON names its line.

    A key repeated within one record (``{"c1": 1, "c1": 0}``) is an error at its
    line: JSON keeps the last value without a word, which turned a relevant
    judgment into a non-relevant one. ``unique_keys=False`` skips the check, for
    files evalframe wrote itself (a run's ``per_query.jsonl``), which cannot
    repeat one.
    """
    p = Path(path).expanduser()
    for lineno, line in read_lines(p, what=what, key=key):
        if not line.strip():
            continue
        try:
            value = loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(
                f"line is not valid JSON ({_where(exc)})",
                path=p,
                line=lineno,
                got=repr(line.strip()[:80]),
                hint="each line must be one complete JSON object",
            ) from None
        except (RecursionError, ValueError) as exc:  # valid JSON evalframe cannot hold
            raise DataError(
                _unreadable(exc), path=p, line=lineno, got=repr(line.strip()[:80])
            ) from None
        if "\\u" in line:  # an escape, perhaps half a surrogate pair (one look, in C)
            _refuse_lone_surrogates(line, value, p, lineno)
        if unique_keys:
            repeated = _repeated_key(line, value)
            if repeated is not None:
                raise DataError(
                    f"the key {repeated!r} appears twice in one record; JSON keeps only the "
                    "last value, so the first would be dropped without a word",
                    path=p,
                    line=lineno,
                    got=repr(line.strip()[:80]),
                    hint="keep one of the two (for judgments: one label per document)",
                )
        yield lineno, value


def _count_keys(value: Any) -> int:
    """How many keys the objects in ``value`` hold, nested ones too (no recursion:
    a parsed value may be nested deeper than Python's stack)."""
    count, stack = 0, [value]
    while stack:
        item = stack.pop()
        if type(item) is dict:
            count += len(item)
            stack.extend(v for v in item.values() if type(v) in (dict, list))
        elif type(item) is list:
            stack.extend(v for v in item if type(v) in (dict, list))
    return count


def _repeated_key(line: str, value: Any) -> str | None:
    """A key that ``line``'s text repeats within one object, or None.

    Fast path: every key in the text ends in ``":`` (a string's own ``"`` is
    escaped, ``\\":``), so when the text holds exactly as many ``":`` as the
    parsed value holds keys, and no key is spaced from its colon, no key was
    repeated (the keys of the record and of its object members are counted
    first, without walking deeper: 10k golden lines, 35 ms less). Otherwise the
    line is parsed again, pair by pair, to be sure.
    """
    kind = type(value)
    if kind is not dict and kind is not list:
        return None
    colons = line.count('":')
    if '" :' in line or '"\t:' in line:
        pass  # a key spaced from its colon is not counted: the careful path
    elif kind is dict and colons == len(value) + sum(
        len(v) for v in value.values() if type(v) is dict
    ):
        # the usual record, flat or with one level of objects (judgments): every
        # colon is one of these keys. Any lower bound on the distinct keys does:
        # colons >= keys written >= distinct keys >= bound, so equality leaves
        # no room for a repeat.
        return None
    elif colons == _count_keys(value):
        return None
    repeated: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: set[str] = set()
        for name, _ in items:
            if name in seen and not repeated:
                repeated.append(name)
            seen.add(name)
        return dict(items)

    json.loads(line, object_pairs_hook=pairs)
    return repeated[0] if repeated else None


@dataclass
class JsonDocument:
    """A parsed JSON file and its text, to find the line where any value starts.

    The offset-walking methods assume the text is valid JSON, which
    :func:`read_json` has checked.
    """

    path: Path
    text: str
    data: Any
    _newlines: list[int] | None = field(default=None, repr=False)

    def line_at(self, offset: int) -> int:
        """The 1-based line of character ``offset``."""
        if self._newlines is None:
            self._newlines = [m.start() for m in re.finditer("\n", self.text)]
        return bisect.bisect_left(self._newlines, offset) + 1

    def skip(self, offset: int) -> int:
        """The offset of the next non-whitespace character at or after ``offset``."""
        text = self.text
        while offset < len(text) and text[offset] in _JSON_SPACE:
            offset += 1
        return offset

    def start(self) -> int:
        """Where the top-level value starts."""
        return self.skip(0)

    def items(self, offset: int) -> list[int]:
        """Where each element of the array that starts at ``offset`` starts."""
        out: list[int] = []
        pos = self.skip(offset + 1)
        while pos < len(self.text) and self.text[pos] != "]":
            out.append(pos)
            _, pos = _DECODER.raw_decode(self.text, pos)
            pos = self.skip(pos)
            if pos < len(self.text) and self.text[pos] == ",":
                pos = self.skip(pos + 1)
        return out

    def members(self, offset: int) -> list[tuple[str, int]]:
        """``(key, value offset)`` of each member of the object that starts at ``offset``."""
        out: list[tuple[str, int]] = []
        pos = self.skip(offset + 1)
        while pos < len(self.text) and self.text[pos] != "}":
            name, pos = _DECODER.raw_decode(self.text, pos)
            pos = self.skip(self.skip(pos) + 1)  # past the colon
            out.append((name, pos))
            _, pos = _DECODER.raw_decode(self.text, pos)
            pos = self.skip(pos)
            if pos < len(self.text) and self.text[pos] == ",":
                pos = self.skip(pos + 1)
        return out

    def member(self, offset: int, name: str) -> int | None:
        """Where the value of ``name`` starts (the last one wins, as in ``json.loads``)."""
        found = None
        for key, at in self.members(offset):
            if key == name:
                found = at
        return found


def read_json(
    path: str | Path,
    *,
    what: str = "JSON file",
    key: str | None = None,
    hint: str = "check the brackets and commas around this line",
    unique_keys: bool = True,
) -> JsonDocument:
    """A whole JSON file, parsed; invalid JSON names its line, and so does a key repeated
    within one object (as :func:`read_jsonl` refuses it: JSON keeps the last value
    without a word, so a judgment or a baseline's figure was replaced silently)."""
    p = Path(path).expanduser()
    text = read_text(p, what=what, key=key)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(
            f"the {what} is not valid JSON ({_where(exc)})",
            path=p,
            line=exc.lineno,
            hint=hint,
        ) from None
    except (RecursionError, ValueError) as exc:  # valid JSON evalframe cannot hold
        raise DataError(f"the {what}: {_unreadable(exc)}", path=p) from None
    _refuse_lone_surrogates(text, data, p, None)
    doc = JsonDocument(p, text, data)
    repeated = _repeated_key(text, data) if unique_keys else None
    if repeated is not None:
        raise DataError(
            f"the key {repeated!r} appears twice in one object; JSON keeps only the last "
            "value, so the first would be dropped without a word",
            path=p,
            line=_second_occurrence(doc, repeated),
            hint="keep one of the two (for judgments: one label per document)",
        )
    return doc


def _second_occurrence(doc: JsonDocument, name: str) -> int | None:
    """The line of the first object member that repeats ``name`` in its object (walked
    only once a repeat is known: the document is valid JSON)."""
    stack = [doc.start()]
    while stack:
        at = stack.pop()
        opening = doc.text[at]
        if opening == "{":
            seen: set[str] = set()
            members = doc.members(at)
            for member, value_at in members:
                if member == name and member in seen:
                    return doc.line_at(value_at)
                seen.add(member)
            stack.extend(v for _, v in reversed(members) if doc.text[v] in "{[")
        elif opening == "[":
            stack.extend(v for v in reversed(doc.items(at)) if doc.text[v] in "{[")
    return None


def read_json_array(
    path: str | Path, *, what: str = "JSON file", key: str | None = None
) -> list[tuple[int, Any]]:
    """``(line_number, element)`` for each element of a top-level JSON array.

    The line numbers let a loader say ``golden_v1.0.json:42`` about the record
    that starts on line 42, which plain ``json.load`` cannot.
    """
    doc = read_json(path, what=what, key=key)
    if not isinstance(doc.data, list):
        raise DataError(
            f"the {what} must be a JSON list of records",
            path=doc.path,
            line=doc.line_at(doc.start()),
            got=f"a JSON {type(doc.data).__name__}",
        )
    offsets = doc.items(doc.start())
    return [(doc.line_at(at), value) for at, value in zip(offsets, doc.data, strict=True)]


def _unreadable(exc: BaseException) -> str:
    """What is wrong with JSON the parser read but Python cannot hold: arrays or objects
    nested past the interpreter's stack, or an integer of thousands of digits."""
    if isinstance(exc, RecursionError):
        return (
            "its JSON is nested too deeply to read (arrays or objects inside one another "
            "about a thousand levels down)"
        )
    return f"it holds a number evalframe cannot read ({str(exc).split(';')[0]})"


#: A high surrogate's escape with its low partner, or either alone (half a pair).
_SURROGATE_ESCAPE = re.compile(
    r"\\u[dD][89abAB][0-9a-fA-F]{2}(?P<low>\\u[dD][c-fC-F][0-9a-fA-F]{2})?"
    r"|\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)


def _refuse_lone_surrogates(text: str, value: Any, path: Path, line: int | None) -> None:
    """A ``\\ud800`` escape with no partner is valid JSON but no character: it cannot be
    written as UTF-8 (the set's content hash, every file a run writes), and failed there
    as a crash. Refused at its line. Looked for only in a text with a ``\\u`` escape, and
    there by orjson first, which refuses half a pair and parses a whole one (😀 as two
    escapes) at C speed: a corpus of emoji is not written out again to find none."""
    if "\\u" not in text:  # one look, in C: no escape at all
        return
    if _orjson is not None:
        try:
            _orjson.loads(text)
            return  # orjson read it: no half pair in it
        except _orjson.JSONDecodeError:
            pass  # half a pair, or JSON orjson reads otherwise than json: look
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        at = line
        if at is None:  # a whole document: the line of the first escape without a partner
            lone = next((m for m in _SURROGATE_ESCAPE.finditer(text) if not _paired(m)), None)
            at = text.count("\n", 0, lone.start() if lone else 0) + 1
        raise DataError(
            "a string holds half of a UTF-16 surrogate pair (an escape such as \\ud800 "
            "with no partner), which is no character and cannot be written as UTF-8",
            path=path,
            line=at,
            hint="the tool that wrote the file cut a character (an emoji) in two: fix "
            "or remove that escape",
        ) from None


def _paired(match: re.Match[str]) -> bool:
    """Whether a :data:`_SURROGATE_ESCAPE` match is a whole pair (a high one and its low)."""
    return match.group("low") is not None


def _where(exc: json.JSONDecodeError) -> str:
    """The parser's message with its column: "Unterminated string starting at column 34",
    not "... starting at at column 34" (some messages end in "at" already)."""
    return f"{exc.msg.removesuffix(' at')} at column {exc.colno}"
