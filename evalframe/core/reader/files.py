"""Opening, decoding and splitting input files: one set of rules for every loader.

The rules, which every reader in :mod:`evalframe.core.reader` applies:

- **Paths**: ``~`` is expanded; a missing path, a folder where a file is
  expected and a file that cannot be read are each a :class:`DataError`
  naming the path (and the config key, when the caller gives one).
- **Encoding**: UTF-8. A UTF-8 byte-order mark is dropped (Excel and
  Notepad write one). A UTF-16 or UTF-32 byte-order mark, a NUL byte or a
  byte that is not UTF-8 is an error at ``file:line:column`` that also gives
  the byte's offset in the file, so ``head -c``/``xxd`` find it.
- **Lines**: ``\\n`` or ``\\r\\n``; the last line may lack its newline. Line
  numbers are 1-based and count every line, blank or not.
- **Fields** of whitespace-separated formats (TREC qrels and runs, cranqrel)
  are separated by runs of ASCII whitespace: space, tab, CR, VT, FF. That is
  C's ``isspace``, as trec_eval reads them. Other Unicode whitespace (a
  no-break space U+00A0, U+2000-U+200A, U+3000, ...) is part of the field, not
  a separator; since it is almost always pasted by accident, each file that
  holds some gets one warning with the count and the first place.

Errors are :class:`~evalframe.core.errors.DataError`, rendered as one
paragraph with exit code 2; nothing here lets a ``UnicodeDecodeError`` or an
``OSError`` escape as a traceback.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path

from evalframe.core.errors import DataError
from evalframe.core.messages import Tally
from evalframe.core.records import label_problem

__all__ = [
    "ASCII_SPACE",
    "UNICODE_SPACE",
    "check_text",
    "decode",
    "inner_bom_phrase",
    "parse_int",
    "read_bytes",
    "read_fields",
    "read_lines",
    "read_text",
    "require_file",
    "require_folder",
    "split_fields",
    "strip_bom",
    "unicode_space_phrase",
    "warn_inner_bom",
    "warn_unicode_space",
]

#: The field separators of whitespace-separated formats: C's ``isspace``.
ASCII_SPACE = " \t\n\r\v\f"
#: Whitespace to Python's ``str.split()`` but data to C and to evalframe.
UNICODE_SPACE = re.compile("[\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")
_SEPARATORS = re.compile(f"[{re.escape(ASCII_SPACE)}]+")
_UTF8_BOM = b"\xef\xbb\xbf"
_OTHER_BOMS = (
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"),
    (b"\xfe\xff", "UTF-16"),
)
_CONVERT = "convert it to UTF-8, e.g. iconv -f {enc} -t utf-8 FILE > FILE.utf8"


def _missing(p: Path, what: str, key: str | None, expected: str) -> DataError:
    tracked = dvc_placeholder(p)
    if tracked is not None:  # a fresh clone: DVC keeps the data, git only its .dvc file
        hint = f"it is tracked by DVC ({tracked}): fetch it with `dvc pull {tracked}`"
    else:
        hint = f"check the path (relative paths are read from {Path.cwd()})"
    return DataError(f"{what} not found: {p}", key=key, expected=expected, hint=hint)


def dvc_placeholder(path: Path) -> Path | None:
    """The ``.dvc`` file that tracks a missing ``path`` (its own, or a folder's above it
    up to the current folder), as a fresh clone has it before ``dvc pull``; else None."""
    p = Path(path)
    for candidate in (p, *p.parents):
        marker = candidate.with_name(candidate.name + ".dvc") if candidate.name else None
        if marker is not None and marker.is_file():
            return marker
        if candidate.resolve() == Path.cwd().resolve():
            break
    return None


def require_file(
    path: str | Path, *, what: str, key: str | None = None, expected: str = "an existing file"
) -> Path:
    """The path as a :class:`Path` if it exists (a file or a folder), else a :class:`DataError`.

    Loaders that accept either (a golden-set file or a folder of them) call
    this, then look, and say so in ``expected``; the ``read_*`` functions below
    reject a folder themselves.
    """
    if not str(path).strip():  # Path("") is the current folder, which exists
        raise DataError(
            f"no path given for the {what}: the setting is empty",
            key=key,
            expected="a file or folder path",
            hint="set it to the path (an empty one would read the current folder)",
        )
    p = Path(path).expanduser()
    if not p.exists():
        raise _missing(p, what, key, expected)
    return p


def require_folder(
    path: str | Path,
    *,
    what: str,
    key: str | None = None,
    expected: str = "a folder",
    hint: str = "point the setting at the folder",
) -> Path:
    """The path if it is a folder; a missing path or a file is a :class:`DataError`."""
    p = require_file(  # the default said as a missing folder's; a caller's own kept
        path,
        what=what,
        key=key,
        expected="an existing folder" if expected == "a folder" else expected,
    )
    if not p.is_dir():
        raise DataError(
            f"{what} is a file, not a folder: {p}",
            key=key,
            expected=expected,
            hint=hint,
        )
    return p


def _input_file(path: str | Path, what: str, key: str | None) -> Path:
    p = require_file(path, what=what, key=key)
    if p.is_dir():
        raise DataError(
            f"{what} is a folder, not a file: {p}",
            key=key,
            expected="a file",
            hint="point the setting at the file itself",
        )
    return p


def _unreadable(p: Path, what: str, key: str | None, exc: OSError) -> DataError:
    reason = exc.strerror or type(exc).__name__
    hint = "check the file's permissions (ls -l)"
    if isinstance(exc, PermissionError):
        hint = f"make it readable (chmod u+r {p}) or run as a user who may read it"
    return DataError(f"{what} cannot be read ({reason.lower()}): {p}", key=key, hint=hint)


def read_bytes(path: str | Path, *, what: str, key: str | None = None) -> bytes:
    """The file's bytes; missing, a folder or unreadable is a :class:`DataError`."""
    p = _input_file(path, what, key)
    try:
        return p.read_bytes()
    except OSError as exc:
        raise _unreadable(p, what, key, exc) from None


def _where(data: bytes, pos: int) -> tuple[int, int]:
    """1-based line and column (in characters) of byte ``pos``."""
    line_start = data.rfind(b"\n", 0, pos) + 1
    column = len(data[line_start:pos].decode("utf-8", "replace")) + 1
    return data.count(b"\n", 0, pos) + 1, column


def _nul_error(data: bytes, pos: int, offset: int, path: Path, what: str, line: int) -> DataError:
    _, column = _where(data, pos)
    return DataError(
        f"{what} holds a NUL byte (byte {offset + pos} of the file): it is not text",
        path=path,
        line=line,
        column=column,
        expected="UTF-8 text",
        hint="is it a binary or compressed file, or UTF-16 without a byte-order mark? "
        + _CONVERT.format(enc="utf-16"),
    )


def _decode_error(
    data: bytes, exc: UnicodeDecodeError, offset: int, path: Path, what: str, line: int
) -> DataError:
    _, column = _where(data, exc.start)
    bad = data[exc.start : exc.end]
    return DataError(
        f"{what} is not UTF-8 text: byte 0x{bad[0]:02x} at column {column} "
        f"(byte {offset + exc.start} of the file) cannot be decoded ({exc.reason})",
        path=path,
        line=line,
        column=column,
        got=repr(data[max(0, exc.start - 20) : exc.end + 20])[:90],
        hint=_CONVERT.format(enc="latin1") + " (if the file is Latin-1)",
    )


def strip_bom(data: bytes, *, path: str | Path, what: str) -> bytes:
    """``data`` without a UTF-8 byte-order mark; a UTF-16/32 mark is an error."""
    if data.startswith(_UTF8_BOM):
        return data[len(_UTF8_BOM) :]
    for bom, encoding in _OTHER_BOMS:
        if data.startswith(bom):
            raise DataError(
                f"{what} is {encoding} text, not UTF-8",
                path=path,
                line=1,
                expected="UTF-8 text",
                got=f"a {encoding} byte-order mark ({bom.hex(' ')})",
                hint=_CONVERT.format(enc=encoding.lower()),
            )
    return data


def check_text(data: bytes, *, path: str | Path, what: str) -> bytes:
    """``data`` without its UTF-8 byte-order mark, checked to be UTF-8 text without NUL bytes.

    Pure-ASCII data (the common case for ids and numbers) costs two scans in C.
    Byte offsets in errors count from the start of the file, mark included.
    """
    body = strip_bom(data, path=path, what=what)
    bom, p = len(data) - len(body), Path(path)
    nul = body.find(b"\0")
    if nul >= 0:
        line, _ = _where(body, nul)
        raise _nul_error(body, nul, bom, p, what, line)
    if not body.isascii():
        try:
            body.decode("utf-8")
        except UnicodeDecodeError as exc:
            line, _ = _where(body, exc.start)
            raise _decode_error(body, exc, bom, p, what, line) from None
    return body


def decode(data: bytes, *, path: str | Path, what: str) -> str:
    """The text of a whole file's bytes (see the module's rules); errors are located."""
    return check_text(data, path=path, what=what).decode("utf-8")


def read_text(path: str | Path, *, what: str, key: str | None = None) -> str:
    """The whole file as text, for formats parsed as one document (JSON, YAML, CSV)."""
    p = Path(path).expanduser()
    return decode(read_bytes(p, what=what, key=key), path=p, what=what)


#: Bytes read at a time by :func:`read_lines`.
_BLOCK = 1 << 20


def _checked_lines(
    block: bytes, p: Path, what: str, lineno: int, offset: int
) -> Iterator[tuple[int, str]]:
    """The lines of ``block`` one at a time, locating a NUL byte or bad UTF-8 exactly."""
    pos = 0
    while pos < len(block):
        end = block.find(b"\n", pos)
        end = len(block) if end < 0 else end + 1
        raw, pos = block[pos:end], end
        nul = raw.find(b"\0")
        if nul >= 0:
            raise _nul_error(raw, nul, offset, p, what, lineno)
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _decode_error(raw, exc, offset, p, what, lineno) from None
        offset += len(raw)
        if line.endswith("\n"):
            line = line[:-1]
            if line.endswith("\r"):
                line = line[:-1]
        yield lineno, line
        lineno += 1


def read_lines(path: str | Path, *, what: str, key: str | None = None) -> Iterator[tuple[int, str]]:
    """``(line_number, line)`` for every line, without its line ending, as the file is read.

    Streams: a large corpus is never held in memory whole. Every rule of the
    module applies; an error names the line (and column) where it occurs.
    The file is read a block of whole lines at a time, each block checked and
    decoded in one call; a block with a NUL byte or bad UTF-8 is gone over
    again line by line to say where.
    """
    p = _input_file(path, what, key)
    try:
        handle = open(p, "rb")  # noqa: SIM115 - closed by the with below; open errors located
    except OSError as exc:
        raise _unreadable(p, what, key, exc) from None
    with handle:
        lineno, offset, pending, first = 1, 0, b"", True
        while True:
            data = handle.read(_BLOCK)
            at_end = not data
            data = pending + data
            if first:
                body = strip_bom(data, path=p, what=what) if len(data) >= 4 or at_end else None
                if body is None:  # fewer than 4 bytes so far: a mark may be incomplete
                    pending = data
                    continue
                offset, data, first = len(data) - len(body), body, False
            cut = len(data) if at_end else data.rfind(b"\n") + 1
            block, pending = data[:cut], data[cut:]
            if block:
                text = None
                if block.find(b"\0") < 0:
                    with contextlib.suppress(UnicodeDecodeError):
                        text = block.decode("utf-8")
                if text is None:  # a NUL byte or bad UTF-8: find the line, and say where
                    for number, line in _checked_lines(block, p, what, lineno, offset):
                        yield number, line
                        lineno = number + 1
                else:
                    lines = text.split("\n")
                    last = lines.pop()  # "" when the block ends with a newline
                    for line in lines:
                        yield lineno, line[:-1] if line.endswith("\r") else line
                        lineno += 1
                    if last:  # the file's last line, without a newline: kept as it is
                        yield lineno, last
                        lineno += 1
                offset += len(block)
            if at_end:
                return


def split_fields(line: str) -> list[str]:
    """The fields of a whitespace-separated line: cut at ASCII whitespace only."""
    return [f for f in _SEPARATORS.split(line) if f]


def read_fields(
    path: str | Path, *, what: str, key: str | None = None, sep: str | None = None
) -> Iterator[tuple[int, list[str]]]:
    """``(line_number, fields)`` for every non-blank line of a column format.

    ``sep=None`` splits at runs of ASCII whitespace; ``sep="\\t"`` splits at
    each tab and strips ASCII whitespace around each field. A field holding
    other Unicode whitespace is kept whole and counted in one warning per file.
    """
    spaces, marks = Tally(), Tally()
    for lineno, line in read_lines(path, what=what, key=key):
        if not line.strip(ASCII_SPACE):
            continue
        if "\ufeff" in line:  # the file's leading mark is gone: one past it, where files met
            marks.add(
                inner_bom_phrase(what, path), where=f"{path}:{lineno}", n=line.count("\ufeff")
            )
        if sep is None:
            fields = split_fields(line)
        else:
            fields = [f.strip(ASCII_SPACE) for f in line.split(sep)]
        found = UNICODE_SPACE.findall(line)
        if found:
            first = UNICODE_SPACE.search(line)
            assert first is not None  # findall found one
            spaces.add(
                unicode_space_phrase(what, path),
                where=f"{path}:{lineno}:{first.start() + 1}, U+{ord(first.group()):04X}",
                n=len(found),
            )
        yield lineno, fields
    spaces.flush()
    marks.flush()


def inner_bom_phrase(what: str, path: str | Path) -> str:
    """The warning about a byte-order mark after the start of a file (after its count)."""
    return (
        f"byte-order mark(s) (U+FEFF) inside the {what} {path}, where files were joined "
        "(`cat a b`): each is kept as part of the text it precedes, as trec_eval keeps it, "
        "so an id there does not match the same id elsewhere; re-save the parts without "
        "the mark before joining them"
    )


def warn_inner_bom(data: bytes, *, path: str | Path, what: str) -> None:
    """One warning (count and first line) for UTF-8 byte-order marks past the file's
    start (``data`` is the file without its leading mark). Why: a mark in the middle
    is glued to the id it precedes, and the record then silently matches nothing."""
    first = data.find(_UTF8_BOM)
    if first < 0:
        return
    line = data.count(b"\n", 0, first) + 1
    tally = Tally()
    tally.add(
        inner_bom_phrase(what, path),
        where=f"{path}:{line}",
        n=data.count(_UTF8_BOM),
    )
    tally.flush()


def unicode_space_phrase(what: str, path: str | Path) -> str:
    """The warning about Unicode whitespace inside fields (after its count)."""
    return (
        f"Unicode whitespace character(s) such as a no-break space in the {what} {path} "
        "are kept inside fields: only ASCII spaces and tabs separate fields"
    )


def warn_unicode_space(text: str, *, path: str | Path, what: str) -> None:
    """One warning (count and first place) for Unicode whitespace in a whole file's text."""
    first = UNICODE_SPACE.search(text)
    if first is None:
        return
    at = first.start()
    line, column = text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at)
    tally = Tally()
    tally.add(
        unicode_space_phrase(what, path),
        where=f"{path}:{line}:{column}, U+{ord(first.group()):04X}",
        n=len(UNICODE_SPACE.findall(text, at)),
    )
    tally.flush()


def parse_int(
    token: str, *, what: str, path: str | Path, line: int, expected: str, label: bool = False
) -> int:
    """``int(token)``, or a :class:`DataError` naming the file and line.

    With ``label=True`` the value must also lie in the label range
    (:data:`evalframe.core.records.LABEL_MAX`).
    """
    try:
        value = int(token)
        problem = label_problem(value) if label else None
        if problem is not None:
            raise DataError(
                f"the {what} is {problem}",
                path=path,
                line=line,
                expected=expected,
                got=repr(token),
                hint="a relevance label is a small whole number (e.g. 0, 1, 2, -1)",
            )
        return value
    except ValueError:
        raise DataError(
            f"the {what} is not an integer",
            path=path,
            line=line,
            expected=expected,
            got=repr(token),
            hint="labels and numbers must be written as whole numbers (e.g. 0, 1, 2, -1)",
        ) from None


def yaml_error(exc: Exception, path: str | Path, *, what: str, hint: str) -> DataError:
    """A YAML parser's error (PyYAML's ``MarkedYAMLError``) as a located :class:`DataError`:
    the line of the problem, and where the construct it broke started when that is
    elsewhere (an unclosed ``[`` twenty lines up). Reads the error's attributes only, so
    the core needs no YAML import."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    context, context_mark = getattr(exc, "context", None), getattr(exc, "context_mark", None)
    if context and context_mark is not None and context_mark is not mark:
        problem = f"{context} started on line {context_mark.line + 1}: {problem}"
    return DataError(
        f"{what} is not valid YAML ({problem})",
        path=path,
        line=mark.line + 1 if mark is not None else None,
        hint=hint,
    )
