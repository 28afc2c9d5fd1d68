"""``evalframe trec-eval``: a drop-in for NIST trec_eval on the evalframe metric engine.

Reads a qrels file and a TREC run, maps trec_eval's measure names
(``ndcg_cut.10``, ``P.5``, ``iprec_at_recall..5``) onto canonical evalframe
metrics (``nDCG@10``, ``P@5``, ``IPrec@0.5``), scores them with the metric
engine and prints the result byte for byte as trec_eval does::

    measure<22 chars, left-justified>\\tqid|all\\tvalue

Only the conventions that are trec_eval's own live here: its command line,
its measure names and parameter syntax, its output order and format, which
queries it evaluates, ``-M``/``-J`` (applied to the run before scoring), the
geometric means (``gm_map``, ``gm_bpref``) and the summed counts. Every
per-query number comes from an evalframe :class:`~evalframe.metrics.Metric`.

See ``docs/trec-eval.md`` for the supported measures and the differences.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Literal, TextIO

import numpy as np

from evalframe.core.errors import ConfigError, DataError
from evalframe.metrics import Metric, Policies, ScoreMatrix, parse_metric
from evalframe.metrics.engine import Columns, evaluate_columns

__all__ = [
    "ALL_TREC",
    "MEASURE_ORDER",
    "SUPPORTED",
    "UNSUPPORTED",
    "TrecEvalResult",
    "main",
    "read_qrels",
    "read_run",
    "run_trec_eval",
]

#: Every measure trec_eval 10.0 knows, in the order it computes and prints them
#: (``te_trec_measures`` in measures.c); the output follows this order, not the
#: order of the ``-m`` flags.
MEASURE_ORDER: tuple[str, ...] = (
    "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec",
    "bpref", "recip_rank", "iprec_at_recall", "P", "relstring", "recall", "infAP",
    "gm_bpref", "Rprec_mult", "utility", "11pt_avg", "binG", "G", "dcg", "ideal_dcg",
    "ndcg", "ndcg_rel", "Rndcg", "ndcg_cut", "map_cut", "relative_P", "success", "set_P",
    "set_relative_P", "set_recall", "set_map", "set_F", "num_nonrel_judged_ret",
    "prefs_num_prefs_poss", "prefs_num_prefs_ful", "prefs_num_prefs_ful_ret",
    "prefs_simp", "prefs_pair", "prefs_avgjg", "prefs_avgjg_Rnonrel", "prefs_simp_ret",
    "prefs_pair_ret", "prefs_avgjg_ret", "prefs_avgjg_Rnonrel_ret", "prefs_simp_imp",
    "prefs_pair_imp", "prefs_avgjg_imp", "map_avgjg", "P_avgjg", "Rprec_mult_avgjg",
    "yaap", "rbp", "rbp_resid", "unj",
)  # fmt: skip

_OFFICIAL = (
    "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec",
    "bpref", "recip_rank", "iprec_at_recall", "P",
)  # fmt: skip
#: trec_eval 10.0's ``all_trec`` nickname (9.0.8's lacks unj, rbp and rbp_resid).
ALL_TREC = (
    *_OFFICIAL, "relstring", "recall", "unj", "rbp", "rbp_resid", "infAP", "gm_bpref",
    "utility", "11pt_avg", "ndcg", "relative_P", "Rprec_mult", "success", "map_cut",
    "ndcg_cut", "ndcg_rel", "Rndcg", "binG", "G", "set_P", "set_recall", "set_relative_P",
    "set_map", "set_F", "num_nonrel_judged_ret",
)  # fmt: skip
_V9_ONLY_MISSING = ("unj", "rbp", "rbp_resid")
_NICKNAMES: dict[str, tuple[str, ...]] = {
    "official": _OFFICIAL,
    "all_trec": ALL_TREC,
    "set": (
        "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "set_P",
        "set_recall", "set_relative_P", "set_map", "set_F",
    ),
}  # fmt: skip
_UNSUPPORTED_NICKNAMES = ("all_prefs", "prefs", "qrels_jg")

_CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
_LEVELS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)

ParamKind = Literal["none", "long_cuts", "double_cuts", "double_params", "pairs"]


@dataclass(frozen=True)
class _Spec:
    """How one trec_eval measure takes parameters and what it derives from."""

    kind: ParamKind
    default: tuple[Any, ...] = ()
    equivalent: str = ""  # the evalframe metric(s), for the docs and --help


#: The trec_eval measures this command computes, with their parameter kind.
SUPPORTED: dict[str, _Spec] = {
    "runid": _Spec("none", equivalent="(the run tag of the run file's last line)"),
    "num_q": _Spec("none", equivalent="(number of queries evaluated)"),
    "num_ret": _Spec("none", equivalent="NumRet (summed)"),
    "num_rel": _Spec("none", equivalent="NumRel (summed)"),
    "num_rel_ret": _Spec("none", equivalent="NumRelRet (summed)"),
    "map": _Spec("none", equivalent="AP"),
    "gm_map": _Spec("none", equivalent="AP, geometric mean over queries"),
    "Rprec": _Spec("none", equivalent="Rprec"),
    "bpref": _Spec("none", equivalent="bpref"),
    "recip_rank": _Spec("none", equivalent="RR"),
    "iprec_at_recall": _Spec("double_cuts", _LEVELS, "IPrec@r"),
    "P": _Spec("long_cuts", _CUTS, "P@k"),
    "relstring": _Spec("double_params", (10.0,), "(labels of the top N, as text)"),
    "recall": _Spec("long_cuts", _CUTS, "R@k"),
    "gm_bpref": _Spec("none", equivalent="bpref, geometric mean over queries"),
    "11pt_avg": _Spec("double_params", _LEVELS, "11pt (custom levels: mean of IPrec@r)"),
    "ndcg": _Spec("pairs", equivalent="nDCG, nDCG(gain=1:3;2:9)"),
    "ndcg_cut": _Spec("long_cuts", _CUTS, "nDCG@k"),
    "map_cut": _Spec("long_cuts", _CUTS, "AP@k"),
    "success": _Spec("long_cuts", (1, 5, 10), "Hit@k"),
    "set_P": _Spec("none", equivalent="SetP"),
    "set_recall": _Spec("none", equivalent="SetR"),
    "set_F": _Spec("double_params", (1.0,), "SetF(beta=sqrt(x))"),
    "num_nonrel_judged_ret": _Spec("none", equivalent="Judged@depth x depth - NumRelRet"),
    "unj": _Spec("long_cuts", (5, 10, 20), "min(k, NumRet)/k - Judged@k"),
}
#: trec_eval measures this command does not compute (they have no evalframe metric).
UNSUPPORTED: tuple[str, ...] = tuple(m for m in MEASURE_ORDER if m not in SUPPORTED)

#: Values printed as integers (``%ld``) and summed, not averaged, in 'all'.
_COUNTS = frozenset({"num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret"})
#: Printed in the summary only.
_SUMMARY_ONLY = frozenset({"runid", "num_q", "gm_map", "gm_bpref"})
_MIN_GEO_MEAN = 0.00001

Compat = Literal["10.0", "9.0.8"]


# --------------------------------------------------------------------------- readers


@dataclass(frozen=True)
class Qrels:
    """A qrels file as columns, in file order.

    Query ids are factorized (``qid_codes`` index ``qid_names``); doc ids stay
    bytes until the rows in play are known, so only those are decoded.
    """

    path: str
    qid_codes: np.ndarray
    qid_names: list[str]
    docs: np.ndarray  # bytes ('S')
    labels: np.ndarray
    lines: np.ndarray
    ascii_only: bool


@dataclass(frozen=True)
class RunColumns:
    """A TREC run file as columns, in file order (see :class:`Qrels`)."""

    path: str
    qid_codes: np.ndarray
    qid_names: list[str]
    docs: np.ndarray  # bytes ('S')
    scores: np.ndarray
    lines: np.ndarray
    runid: str
    ascii_only: bool


_WS = np.zeros(256, dtype=bool)
_WS[[9, 10, 11, 12, 13, 32]] = True  # C isspace(); the same set as bytes.split()


def _read_bytes(path: str, what: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    p = Path(path)
    if not p.is_file():
        raise DataError(
            f"{what} not found: {path}",
            expected="an existing file",
            hint=f"check the path (relative paths are read from {Path.cwd()})",
        )
    return p.read_bytes()


def _line_text(data: bytes, line: int) -> str:
    """The text of 1-based line ``line`` (error paths only)."""
    text = data.split(b"\n")[line - 1].strip()
    return repr(text[:80].decode("utf-8", "replace"))


@dataclass(frozen=True)
class _Table:
    """Content lines of a whitespace-separated file, found without a Python line loop."""

    tokens: list[bytes]  # every token of the file, in order
    first: np.ndarray  # index into tokens of each content line's first token
    count: np.ndarray  # tokens on each content line
    line: np.ndarray  # 1-based file line of each content line

    def column(self, j: int, width: int) -> list[bytes]:
        """Token ``j`` of every content line."""
        n = self.first.size
        if n and self.first[-1] == (n - 1) * width and len(self.tokens) == n * width:
            return self.tokens[j::width]  # every line has exactly `width` tokens
        picked = np.array(self.tokens, dtype=object)[self.first + j] if n else []
        return list(picked)


def _tokenize(data: bytes) -> _Table:
    """Split into tokens and group them by line, skipping blank and ``#`` comment lines.

    ``bytes.split()`` cuts the tokens; the byte array tells which line each
    token starts on, so the per-line counts are one ``diff`` away and a
    malformed line is located exactly, without a Python loop over lines.
    """
    tokens = data.split()
    arr = np.frombuffer(data, dtype=np.uint8)
    ws = _WS[arr]
    prev_ws = np.empty_like(ws)
    if ws.size:
        prev_ws[0] = True
        prev_ws[1:] = ws[:-1]
    starts = np.flatnonzero(~ws & prev_ws)
    if starts.size != len(tokens):  # pragma: no cover - the two splits agree by construction
        raise AssertionError("tokenizer disagreement")
    newlines = np.flatnonzero(arr == 10)
    line_of = np.searchsorted(newlines, starts)  # 0-based line of each token
    first_mask = np.ones(starts.size, dtype=bool)
    first_mask[1:] = line_of[1:] != line_of[:-1]
    first = np.flatnonzero(first_mask)
    count = np.diff(np.append(first, starts.size))
    # A comment line starts with '#' (trec_eval 10.0); a '#' inside a doc id is data.
    comment = arr[starts[first]] == ord("#") if first.size else np.zeros(0, dtype=bool)
    keep = ~comment
    return _Table(
        tokens=tokens, first=first[keep], count=count[keep], line=line_of[first[keep]] + 1
    )


_POW10 = np.array([float(10**k) for k in range(23)])  # exact doubles


@dataclass(frozen=True)
class _Fast:
    """A regular file's columns, cut with array operations (see :func:`_fast_split`)."""

    arr: np.ndarray  # the file's bytes
    sep: np.ndarray  # offset of every separator (space or newline), ``width`` per line
    width: int

    @property
    def n(self) -> int:
        return self.sep.size // self.width

    def span(self, j: int) -> tuple[np.ndarray, np.ndarray]:
        """Start offset and length of token ``j`` on every line."""
        end = self.sep[j :: self.width]
        if j:
            start = self.sep[j - 1 :: self.width] + 1
        else:
            start = np.empty_like(end)
            start[0] = 0
            start[1:] = self.sep[self.width - 1 : -1 : self.width] + 1
        return start, end - start

    def matrix(self, j: int) -> np.ndarray:
        """Token ``j`` of every line as a (lines x longest) zero-padded uint8 matrix."""
        start, length = self.span(j)
        width = max(1, int(length.max()))
        limit = self.arr.size - width
        windows = np.lib.stride_tricks.as_strided(
            self.arr, shape=(limit + 1, width), strides=(1, 1), writeable=False
        )
        mat: np.ndarray = windows[np.minimum(start, limit)]
        for row in np.flatnonzero(start > limit):  # the file's last few bytes
            mat[row] = 0
            tail = self.arr[int(start[row]) :]
            mat[row, : tail.size] = tail
        mat *= np.arange(width) < length[:, None]  # zero past the token's end
        return mat

    def strings(self, j: int) -> np.ndarray:
        mat = self.matrix(j)
        return mat.view(f"S{mat.shape[1]}").ravel()


def _fast_split(data: bytes, width: int) -> _Fast | None:
    """Cut a file in which every line is exactly ``width`` tokens separated by one space.

    That is what run and qrels writers produce; the columns then come from
    the positions of the separators, with no Python object per token. Any
    other layout (tabs, CR, other control bytes, runs of spaces, blank or
    comment lines, extra columns, a missing final newline) returns None, and
    the general tokenizer, which also reports malformed lines, reads the file.
    """
    if not data.endswith(b"\n") or data.startswith(b"#"):
        return None
    arr = np.frombuffer(data, dtype=np.uint8)
    sep = np.flatnonzero(arr <= 32)
    lines = data.count(b"\n")
    # every byte <= 32 is a space or a newline, and every width-th one ends a line
    if sep.size != lines * width or sep.size != lines + data.count(b" ") or sep[0] == 0:
        return None
    ends = sep[width - 1 :: width]
    if not (arr[ends] == 10).all() or (arr[ends[:-1] + 1] == ord("#")).any():
        return None
    step = 1 << 20
    for at in range(0, sep.size, step):  # no empty token (blocks: no 240 MB temporary)
        if np.diff(sep[at : at + step + 1]).min(initial=2) < 2:
            return None
    return _Fast(arr=arr, sep=sep, width=width)


def _decimals(mat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Parse ``[-]digits[.digits]`` rows of a zero-padded byte matrix exactly.

    With at most 15 digits the digits form an integer below 2**53 and the
    power of ten is exact, so one IEEE division is correctly rounded: the
    same double as ``strtod`` (and NumPy's ``astype``). Returns the values
    and a mask of the rows that had that form; the others must be parsed
    the general way.
    """
    n, width = mat.shape
    if width > 64:  # (the counts below are uint8)
        return np.zeros(n, dtype=np.float64), np.zeros(n, dtype=bool)
    by_column = np.ascontiguousarray(mat.T)  # one contiguous row per character position
    neg = by_column[0] == ord("-")
    mantissa = np.zeros(n, dtype=np.float64)  # exact while below 2**53
    n_digits = np.zeros(n, dtype=np.uint8)
    n_frac = np.zeros(n, dtype=np.uint8)
    n_dots = np.zeros(n, dtype=np.uint8)
    bad = np.zeros(n, dtype=bool)
    for c in range(width):
        col = by_column[c]
        d = col - np.uint8(48)
        is_digit = d < 10
        is_dot = col == ord(".")
        allowed = is_digit | is_dot | (col == 0)
        if c == 0:
            allowed |= neg
        bad |= ~allowed
        np.multiply(mantissa, 10.0, out=mantissa, where=is_digit)
        np.add(mantissa, d, out=mantissa, where=is_digit)
        n_digits += is_digit
        n_frac += is_digit & (n_dots > 0)
        n_dots += is_dot
    # up to 15 digits the mantissa is an integer below 10**15 < 2**53: exact
    ok = ~bad & (n_dots <= 1) & (n_digits >= 1) & (n_digits <= 15)
    mantissa /= _POW10[np.minimum(n_frac, 22)]
    np.negative(mantissa, out=mantissa, where=neg)
    return mantissa, ok


def _decode(values: np.ndarray, ascii_only: bool, path: str, lines: np.ndarray) -> np.ndarray:
    """Bytes ('S') array -> numpy unicode array; bad UTF-8 names its line."""
    if values.size == 0:
        return np.zeros(0, dtype=str)
    if ascii_only:
        return values.astype(str)
    out = []
    for i, b in enumerate(values.tolist()):
        try:
            out.append(b.decode("utf-8"))
        except UnicodeDecodeError:
            raise DataError("the line is not valid UTF-8", path=path, line=int(lines[i])) from None
    return np.asarray(out, dtype=str)


def _factorize(values: list[bytes], path: str, lines: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Codes into the distinct values (first-seen order), decoded; one dict pass, no sort."""
    index: dict[bytes, int] = {}
    codes = np.fromiter(
        (index.setdefault(v, len(index)) for v in values), dtype=np.int64, count=len(values)
    )
    names = []
    for code, raw in enumerate(index):
        try:
            names.append(raw.decode("utf-8"))
        except UnicodeDecodeError:
            line = int(lines[int(np.argmax(codes == code))])
            raise DataError("the query id is not valid UTF-8", path=path, line=line) from None
    return codes, names


def _numbers(
    values: list[bytes] | np.ndarray,
    dtype: type[np.floating[Any]] | type[np.integer[Any]],
    path: str,
    lines: np.ndarray,
    what: str,
    expected: str,
) -> np.ndarray:
    """Parse a column of numbers; on failure, name the first bad line."""
    if len(values) == 0:
        return np.zeros(0, dtype=dtype)
    raw = values if isinstance(values, np.ndarray) else np.array(values, dtype="S")
    try:
        return raw.astype(dtype)
    except (ValueError, OverflowError):
        pass
    if dtype is np.int64:  # accept integral floats such as "1.0"
        try:
            as_float = raw.astype(np.float64)
            if np.all(np.isfinite(as_float)) and np.all(as_float == np.round(as_float)):
                return as_float.astype(np.int64)
        except ValueError:
            pass
    parse: Callable[[bytes], Any] = int if dtype is np.int64 else float
    for i, b in enumerate(values.tolist() if isinstance(values, np.ndarray) else values):
        try:
            parse(b)
        except (ValueError, OverflowError):
            raise DataError(
                f"the {what} column is not a number",
                path=path,
                line=int(lines[i]),
                expected=expected,
                got=repr(b.decode("utf-8", "replace")),
            ) from None
    raise DataError(f"cannot read the {what} column", path=path)  # pragma: no cover


def _factorize_runs(
    values: np.ndarray, path: str, lines: np.ndarray
) -> tuple[np.ndarray, list[str]]:
    """:func:`_factorize` for an ``S`` column, one dict step per run of equal values.

    Files list a query's lines together, so there are few runs; the result
    (first-seen codes, decoded names, the same error) is :func:`_factorize`'s.
    """
    n = values.size
    if n == 0:
        return np.zeros(0, dtype=np.int64), []
    cut = np.flatnonzero(values[1:] != values[:-1]) + 1
    run_starts = np.concatenate([[0], cut])
    seg_codes, names = _factorize(values[run_starts].tolist(), path, lines[run_starts])
    counts = np.diff(np.append(run_starts, n))
    return np.repeat(seg_codes, counts), names


def _fast_numbers(
    mat: np.ndarray,
    dtype: type[np.floating[Any]] | type[np.integer[Any]],
    path: str,
    lines: np.ndarray,
    what: str,
    expected: str,
) -> np.ndarray:
    """:func:`_numbers` on a byte matrix, parsing plain decimals without ``strtod``."""
    raw = mat.view(f"S{mat.shape[1]}").ravel()
    if dtype is np.float64:
        values, ok = _decimals(mat)
        if ok.all():
            return values
        if not ok.any():
            return _numbers(raw, dtype, path, lines, what, expected)
        bad = np.flatnonzero(~ok)
        values[bad] = _numbers(raw[bad], dtype, path, lines[bad], what, expected)
        return values
    return _numbers(raw, dtype, path, lines, what, expected)


def read_qrels(path: str) -> Qrels:
    """Read ``qid iter docno rel`` lines (blank and ``#`` lines skipped)."""
    data = _read_bytes(path, "qrels file")
    fast = _fast_split(data, 4)
    if fast is not None:
        lines = np.arange(1, fast.n + 1, dtype=np.int64)
        codes, names = _factorize_runs(fast.strings(0), path, lines)
        return Qrels(
            path=path,
            qid_codes=codes,
            qid_names=names,
            docs=fast.strings(2),
            labels=_fast_numbers(
                fast.matrix(3), np.int64, path, lines, "relevance", "an integer in column 4"
            ),
            lines=lines,
            ascii_only=data.isascii(),
        )
    table = _tokenize(data)
    bad = np.flatnonzero(table.count != 4)
    if bad.size:
        i = int(bad[0])
        raise DataError(
            f"a qrels line has {int(table.count[i])} columns",
            path=path,
            line=int(table.line[i]),
            expected="4 columns: qid iter docno rel",
            got=_line_text(data, int(table.line[i])),
        )
    lines = table.line
    codes, names = _factorize(table.column(0, 4), path, lines)
    return Qrels(
        path=path,
        qid_codes=codes,
        qid_names=names,
        docs=np.array(table.column(2, 4), dtype="S") if lines.size else np.zeros(0, "S1"),
        labels=_numbers(
            table.column(3, 4), np.int64, path, lines, "relevance", "an integer in column 4"
        ),
        lines=lines,
        ascii_only=data.isascii(),
    )


def read_run(path: str) -> RunColumns:
    """Read ``qid Q0 docno rank score tag [anything]`` lines (blank and ``#`` lines skipped)."""
    data = _read_bytes(path, "run file")
    fast = _fast_split(data, 6)
    if fast is not None:
        lines = np.arange(1, fast.n + 1, dtype=np.int64)
        last = int(fast.sep[-2]) + 1
        codes, names = _factorize_runs(fast.strings(0), path, lines)
        return RunColumns(
            path=path,
            qid_codes=codes,
            qid_names=names,
            docs=fast.strings(2),
            scores=_fast_numbers(
                fast.matrix(4), np.float64, path, lines, "score", "a number in column 5"
            ),
            lines=lines,
            runid=data[last:-1].decode("utf-8", "replace"),
            ascii_only=data.isascii(),
        )
    table = _tokenize(data)
    bad = np.flatnonzero(table.count < 6)
    if bad.size:
        i = int(bad[0])
        raise DataError(
            f"a run line has {int(table.count[i])} columns",
            path=path,
            line=int(table.line[i]),
            expected="at least 6 columns: qid Q0 docno rank score tag",
            got=_line_text(data, int(table.line[i])),
        )
    lines = table.line
    # the run tag trec_eval prints is the one on the file's last content line
    runid = table.tokens[table.first[-1] + 5].decode("utf-8", "replace") if lines.size else ""
    codes, names = _factorize(table.column(0, 6), path, lines)
    return RunColumns(
        path=path,
        qid_codes=codes,
        qid_names=names,
        docs=np.array(table.column(2, 6), dtype="S") if lines.size else np.zeros(0, "S1"),
        scores=_numbers(
            table.column(4, 6), np.float64, path, lines, "score", "a number in column 5"
        ),
        lines=lines,
        runid=runid,
        ascii_only=data.isascii(),
    )


# --------------------------------------------------------------------- measure requests


def _atol(text: str) -> int:
    match = re.match(r"\s*[+-]?\d+", text)
    return int(match.group()) if match else 0


def _atof(text: str) -> float:
    match = re.match(r"\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", text)
    return float(match.group()) if match else 0.0


@dataclass
class _Request:
    """One requested measure: its root name and the parameter text given, if any."""

    root: str
    params: str | None = None


@dataclass(frozen=True)
class _Output:
    """One printed measure (``P_5``) and how its per-query values are made."""

    name: str
    root: str
    kind: Literal["float", "int", "str"]
    metrics: tuple[Metric, ...]
    compute: Callable[[_Context], np.ndarray | list[str]]
    aggregate: Literal["mean", "sum", "gm", "none", "num_q", "runid"] = "mean"


@dataclass
class _Context:
    values: dict[Metric, np.ndarray]
    matrix: ScoreMatrix
    depth: int
    #: trec_eval 10.0 -c scores a missing query on a one-doc stand-in ranking and
    #: blanks relstring afterwards, but only under that exact name: relstring_N
    #: shows the stand-in doc as '-' (not in the pool).
    stand_in: np.ndarray | None = None


def _supported_list() -> str:
    return ", ".join(SUPPORTED)


def parse_measures(flags: Sequence[str], compat: Compat = "10.0") -> list[_Request]:
    """Turn ``-m`` values into requests in trec_eval's order (first parameters win)."""
    marked: set[str] = set()
    params: dict[str, str] = {}
    for flag in flags or ["official"]:
        root, dot, param = flag.partition(".")
        if dot:
            if not param:
                raise ConfigError(
                    f"measure {flag!r} has an empty parameter list",
                    expected="NAME or NAME.PARAMS, e.g. P.5,10",
                )
            params.setdefault(root, param)  # trec_eval uses the first one given
        if root in _NICKNAMES:
            if dot:
                raise ConfigError(f"the measure set {root!r} takes no parameters")
            names = _NICKNAMES[root]
            if compat == "9.0.8":
                names = tuple(n for n in names if n not in _V9_ONLY_MISSING)
            marked.update(n for n in names if n in SUPPORTED)
            continue
        if root in SUPPORTED:
            marked.add(root)
            continue
        known = root in MEASURE_ORDER or root in _UNSUPPORTED_NICKNAMES
        raise ConfigError(
            f"{'unsupported' if known else 'unknown'} trec_eval measure {root!r}",
            expected=f"one of: {_supported_list()}, or the sets official, all_trec, set",
            hint=(
                f"{root!r} has no evalframe equivalent yet; see docs/trec-eval.md"
                if known
                else "measure names are trec_eval's, e.g. map, P.5,10, ndcg_cut.10"
            ),
        )
    return [_Request(name, params.get(name)) for name in MEASURE_ORDER if name in marked]


def _long_cuts(req: _Request) -> list[int]:
    spec = SUPPORTED[req.root]
    if req.params is None:
        return list(spec.default)
    cuts = sorted(_atol(p) for p in req.params.split(","))
    if cuts[0] <= 0:
        raise ConfigError(f"measure {req.root}.{req.params}: cutoffs must be positive", key="-m")
    if len(set(cuts)) != len(cuts):
        raise ConfigError(f"measure {req.root}.{req.params}: duplicate cutoffs")
    return cuts


def _double_cuts(req: _Request) -> list[float]:
    if req.params is None:
        return list(SUPPORTED[req.root].default)
    cuts = sorted(_atof(p) for p in req.params.split(","))
    if len(set(cuts)) != len(cuts):
        raise ConfigError(f"measure {req.root}.{req.params}: duplicate cutoffs")
    return cuts


def _recall_level(value: float, req: _Request) -> str:
    if not 0.0 <= value <= 1.0:
        raise ConfigError(
            f"measure {req.root}.{req.params}: recall level {value} is outside [0, 1]",
            hint="trec_eval accepts it and prints 0; evalframe's IPrec needs a level in [0, 1]",
        )
    return np.format_float_positional(value, trim="-")


def _gain_map(req: _Request) -> str | None:
    """``1=3,2=9`` -> evalframe's ``1:3;2:9`` (None for the default linear gains)."""
    if req.params is None:
        return None
    entries = []
    for part in req.params.split(","):
        label, eq, gain = part.partition("=")
        if not eq:
            raise ConfigError(
                f"measure ndcg.{req.params}: malformed pair parameters",
                expected="label=gain pairs, e.g. ndcg.1=3,2=9",
            )
        if not re.fullmatch(r"[+-]?\d+", label):
            continue  # trec_eval ignores a non-integer label
        level, value = int(label), _atof(gain)
        if level <= 0 or value < 0:
            raise ConfigError(
                f"measure ndcg.{req.params}: gain {part!r} is not supported",
                hint="evalframe's nDCG gives gains to positive labels only, and gains "
                "must not be negative",
            )
        entries.append(f"{level}:{np.format_float_positional(value, trim='-')}")
    return ";".join(entries) or None


def _metric(text: str) -> Metric:
    return parse_metric(text)


def _with(name: str, params: dict[str, Any], k: Any = None) -> Metric:
    inner = ",".join(f"{key}={value}" for key, value in params.items())
    text = name + (f"({inner})" if inner else "")
    if k is not None:
        text += f"@{k}"
    return _metric(text)


def _plan(requests: Sequence[_Request], rel: int, compat: Compat) -> list[_Output]:
    """Expand the requests into printed measures with their evalframe metrics."""
    relp: dict[str, Any] = {"rel": rel} if rel != 1 else {}
    iprecp = dict(relp)
    if compat == "9.0.8":
        iprecp["rounding"] = "v9"
    out: list[_Output] = []

    def single(name: str, m: Metric, kind: Literal["float", "int"] = "float") -> None:
        agg: Literal["sum", "mean"] = "sum" if name in _COUNTS else "mean"
        out.append(_Output(name, name, kind, (m,), _value(m), agg))

    for req in requests:
        root = req.root
        if root == "runid":
            out.append(_Output("runid", root, "str", (), _nothing, "runid"))
        elif root == "num_q":
            out.append(_Output("num_q", root, "int", (), _nothing, "num_q"))
        elif root == "num_ret":
            single(root, _metric("NumRet"), "int")
        elif root == "num_rel":
            single(root, _with("NumRel", relp), "int")
        elif root == "num_rel_ret":
            single(root, _with("NumRelRet", relp), "int")
        elif root == "map":
            single(root, _with("AP", relp))
        elif root in ("gm_map", "gm_bpref"):
            m = _with("AP" if root == "gm_map" else "bpref", relp)
            out.append(_Output(root, root, "float", (m,), _value(m), "gm"))
        elif root == "Rprec":
            single(root, _with("Rprec", relp))
        elif root == "bpref":
            single(root, _with("bpref", relp))
        elif root == "recip_rank":
            single(root, _with("RR", relp))
        elif root == "iprec_at_recall":
            for level in _double_cuts(req):
                m = _with("IPrec", iprecp, _recall_level(level, req))
                out.append(_Output(f"{root}_{level:3.2f}", root, "float", (m,), _value(m)))
        elif root in ("P", "recall", "map_cut", "success", "ndcg_cut"):
            base = {"P": "P", "recall": "R", "map_cut": "AP", "success": "Hit", "ndcg_cut": "nDCG"}
            for k in _long_cuts(req):
                m = _with(base[root], {} if root == "ndcg_cut" else relp, k)
                out.append(_Output(f"{root}_{k}", root, "float", (m,), _value(m)))
        elif root == "unj":
            n_ret = _metric("NumRet")
            for k in _long_cuts(req):
                jm = _metric(f"Judged@{k}")
                out.append(
                    _Output(
                        f"unj_{k}",
                        root,
                        "float",
                        (jm, n_ret),
                        partial(_unj, judged=jm, n_ret=n_ret, k=k),
                    )
                )
        elif root == "relstring":
            length = int(_atof(req.params.split(",")[0])) if req.params else 10
            name = f"relstring_{req.params}" if req.params else "relstring"

            def relstring(
                c: _Context, n: int = length, named: bool = bool(req.params)
            ) -> list[str]:
                strings = _relstrings(c.matrix, n)
                if named and n >= 1 and c.stand_in is not None:
                    strings = ["-" if s else r for r, s in zip(strings, c.stand_in, strict=True)]
                return strings

            out.append(_Output(name, root, "str", (), relstring, "none"))
        elif root == "11pt_avg":
            name = f"11pt_avg_{req.params}" if req.params else "11pt_avg"
            if req.params is None:
                m = _with("11pt", iprecp)
                out.append(_Output(name, root, "float", (m,), _value(m)))
            else:
                levels = sorted(_atof(p) for p in req.params.split(","))
                ms = tuple(_with("IPrec", iprecp, _recall_level(v, req)) for v in levels)
                out.append(_Output(name, root, "float", ms, partial(_pt_avg, ms=ms)))
        elif root == "ndcg":
            gains = _gain_map(req)
            m = _with("nDCG", {"gain": gains} if gains else {})
            name = f"ndcg_{req.params}" if req.params else "ndcg"
            out.append(_Output(name, root, "float", (m,), _value(m)))
        elif root == "set_P":
            single(root, _with("SetP", relp))
        elif root == "set_recall":
            single(root, _with("SetR", relp))
        elif root == "set_F":
            x = _atof(req.params.split(",")[0]) if req.params else 1.0
            if x < 0:
                raise ConfigError(
                    f"measure set_F.{req.params}: the weight must not be negative", key="-m"
                )
            name = f"set_F_{req.params}" if req.params else "set_F"
            if x == 1.0:
                m = _with("SetF", relp)
                out.append(_Output(name, root, "float", (m,), _value(m)))
            else:
                # SetF(beta=sqrt(x)) squares beta back into x +- 1 ulp, enough to flip a
                # printed digit: apply trec_eval's (x+1)PR/(xP+R) to SetP and SetR.
                sp, sr = _with("SetP", relp), _with("SetR", relp)
                out.append(_Output(name, root, "float", (sp, sr), partial(_f, sp=sp, sr=sr, x=x)))
        elif root == "num_nonrel_judged_ret":
            relret = _with("NumRelRet", relp)

            def nonrel(c: _Context, relret: Metric = relret) -> np.ndarray:
                judged = c.values[_metric(f"Judged@{c.depth}")] * c.depth
                return np.asarray(np.round(judged) - c.values[relret], dtype=np.float64)

            out.append(_Output(root, root, "int", (relret,), nonrel, "sum"))
        else:  # pragma: no cover - parse_measures only lets supported names through
            raise ConfigError(f"unsupported trec_eval measure {root!r}")
    return out


def _value(m: Metric) -> Callable[[_Context], np.ndarray]:
    def get(c: _Context) -> np.ndarray:
        return c.values[m]

    return get


def _nothing(c: _Context) -> list[str]:
    return []


def _unj(c: _Context, judged: Metric, n_ret: Metric, k: int) -> np.ndarray:
    """trec_eval's unj_k: unjudged docs in the top k (those past the end are not) / k."""
    unjudged = np.round(np.minimum(c.values[n_ret], k) - c.values[judged] * k)
    return np.asarray(unjudged / k, dtype=np.float64)


def _f(c: _Context, sp: Metric, sr: Metric, x: float) -> np.ndarray:
    p, r = c.values[sp], c.values[sr]
    out = np.zeros(p.shape)
    hit = p > 0
    out[hit] = (x + 1.0) * p[hit] * r[hit] / (x * p[hit] + r[hit])
    return out


def _pt_avg(c: _Context, ms: tuple[Metric, ...]) -> np.ndarray:
    total = np.zeros(len(c.matrix.query_ids))
    for m in reversed(ms):  # trec_eval adds from the highest level down
        total = total + c.values[m]
    return total / len(ms)


def _relstrings(matrix: ScoreMatrix, n: int) -> list[str]:
    """trec_eval's relstring: one character per retrieved doc among the top n."""
    width = max(0, min(n, matrix.depth))
    labels = matrix.labels[:, :width]
    judged = matrix.judged[:, :width]
    chars = np.where(
        judged,
        np.where(labels > 9, ">", np.char.mod("%d", np.clip(labels, 0, 9))),
        np.where(labels < 0, ".", "-"),  # in the pool but unjudged / not in the pool
    )
    out: list[str] = []
    for i in range(labels.shape[0]):
        length = int(min(width, matrix.n_ret[i]))
        out.append("".join(chars[i, :length].tolist()))
    return out


# ------------------------------------------------------------------------- evaluation


@dataclass
class TrecEvalResult:
    """What trec_eval would print: per-query rows (with -q) and the 'all' rows."""

    runid: str
    num_q: int
    measures: list[str]
    equivalents: dict[str, list[str]]
    per_query: list[tuple[str, dict[str, float | int | str]]] = field(default_factory=list)
    summary: dict[str, float | int | str] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)

    def lines(self) -> list[str]:
        out: list[str] = []
        for qid, row in self.per_query:
            out.extend(_format(name, qid, value, self.kinds[name]) for name, value in row.items())
        out.extend(_format(name, "all", v, self.kinds[name]) for name, v in self.summary.items())
        return out

    def to_json(self) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "runid": self.runid,
            "num_q": self.num_q,
            "measures": {name: self.equivalents[name] for name in self.measures},
        }
        if self.per_query:
            payload["per_query"] = dict(self.per_query)
        if self.summary:
            payload["all"] = self.summary
        return payload


def _format(name: str, qid: str, value: float | int | str, kind: str) -> str:
    if name == "runid":
        text = str(value)
    elif kind == "str":
        text = f"'{value}'"
    elif kind == "int":
        text = str(int(value))
    else:
        text = f"{float(value):6.4f}"
    return f"{name:<22}\t{qid}\t{text}"


def _duplicate_error(
    what: str, path: str, qid: str, doc: str, first_line: int, second_line: int
) -> DataError:
    return DataError(
        f"query {qid!r} lists doc {doc!r} twice (first at line {first_line})",
        path=path,
        line=second_line,
        hint=f"trec_eval stops on duplicate docs in the {what} too; remove the repeat",
    )


def _find_duplicate(keys: np.ndarray, lines: np.ndarray) -> tuple[int, int] | None:
    """Row indexes (earlier, later) of the first duplicate key by file line, if any."""
    if keys.size < 2:
        return None
    order = np.lexsort((lines, keys))
    sk = keys[order]
    dup = np.flatnonzero(sk[1:] == sk[:-1])
    if not dup.size:
        return None
    later = order[dup + 1]
    pick = int(np.argmin(lines[later]))
    j = int(dup[pick])
    return int(order[j]), int(order[j + 1])


@dataclass(frozen=True)
class _Rows:
    """Which rows of the two files are in play, and their query indexes."""

    q_in: np.ndarray
    r_in: np.ndarray
    qrel_qi: np.ndarray
    run_qi: np.ndarray
    query_ids: np.ndarray
    present: np.ndarray
    extra_queries: int


def _ordered_columns(
    qrels: Qrels,
    run: RunColumns,
    rows: _Rows,
    max_per_query: int | None,
    judged_only: bool,
    compat: Compat,
) -> Columns:
    """The engine's columns after trec_eval's own sort, ``-M``, duplicate checks and ``-J``.

    Also the reference for the error messages: duplicates are reported with
    both file lines, in the order trec_eval finds them.
    """
    qrels_path, run_path = qrels.path, run.path
    q_in, r_in, qrel_qi, run_qi, query_ids = (
        rows.q_in, rows.r_in, rows.qrel_qi, rows.run_qi, rows.query_ids
    )  # fmt: skip
    # Rows of the queries in play, with doc ids as integer codes shared by both files.
    q_q, r_q = qrel_qi[q_in], run_qi[r_in]
    q_labels, q_lines = qrels.labels[q_in], qrels.lines[q_in]
    r_scores, r_lines = run.scores[r_in], run.lines[r_in]
    q_docs = _decode(qrels.docs[q_in], qrels.ascii_only, qrels_path, q_lines)
    r_docs = _decode(run.docs[r_in], run.ascii_only, run_path, r_lines)
    all_docs = np.concatenate([q_docs, r_docs])
    if all_docs.size:
        _, codes = np.unique(all_docs, return_inverse=True)
        codes = codes.astype(np.int64).ravel()
    else:
        codes = np.zeros(0, dtype=np.int64)
    ndocs = int(codes.max()) + 1 if codes.size else 1
    q_codes, r_codes = codes[: q_docs.size], codes[q_docs.size :]
    q_keys = q_q * ndocs + q_codes

    dup = _find_duplicate(q_keys, q_lines)
    if dup is not None:
        a, b = dup
        raise _duplicate_error(
            "qrels", qrels_path, str(query_ids[q_q[b]]), str(q_docs[b]),
            int(q_lines[a]), int(q_lines[b]),
        )  # fmt: skip

    # trec_eval order (score descending, then doc id descending), then -M.
    sort_scores = r_scores.astype(np.float32) if compat == "9.0.8" else r_scores
    order = np.lexsort((-r_codes, -sort_scores, r_q))
    r_q, r_codes, r_docs = r_q[order], r_codes[order], r_docs[order]
    r_scores, r_lines = r_scores[order], r_lines[order]
    if max_per_query is not None:
        counts = np.bincount(r_q, minlength=query_ids.size)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        keep = (np.arange(r_q.size) - starts[r_q]) < max_per_query
        r_q, r_codes, r_docs = r_q[keep], r_codes[keep], r_docs[keep]
        r_scores, r_lines = r_scores[keep], r_lines[keep]
    r_keys = r_q * ndocs + r_codes
    dup = _find_duplicate(r_keys, r_lines)
    if dup is not None:
        a, b = dup
        raise _duplicate_error(
            "run", run_path, str(query_ids[r_q[b]]), str(r_docs[b]),
            int(r_lines[a]), int(r_lines[b]),
        )  # fmt: skip
    if judged_only:  # -J: drop retrieved docs that are not judged (label >= 0)
        korder = np.argsort(q_keys, kind="stable")
        sorted_keys, sorted_labels = q_keys[korder], q_labels[korder]
        if sorted_keys.size:
            pos = np.minimum(np.searchsorted(sorted_keys, r_keys), sorted_keys.size - 1)
            judged = (sorted_keys[pos] == r_keys) & (sorted_labels[pos] >= 0)
        else:
            judged = np.zeros(r_keys.size, dtype=bool)
        r_q, r_docs, r_scores = r_q[judged], r_docs[judged], r_scores[judged]

    cols = Columns(
        query_ids=tuple(query_ids.tolist()),
        run_q=r_q.astype(np.int64),
        run_docs=r_docs,
        run_scores=r_scores,
        qrel_q=q_q.astype(np.int64),
        qrel_docs=q_docs,
        qrel_labels=q_labels,
        present=rows.present,
        extra_queries=rows.extra_queries,
    )
    return cols


def _direct_columns(qrels: Qrels, run: RunColumns, rows: _Rows) -> Columns:
    """The engine's columns straight from the readers: byte ids, file order.

    ``build_matrix`` sorts into trec_eval order and stops on a duplicate in
    the run; the caller redoes a failing run with :func:`_ordered_columns`
    to report it the trec_eval way.
    """
    q_in, r_in, qrel_qi, run_qi, query_ids = (
        rows.q_in, rows.r_in, rows.qrel_qi, rows.run_qi, rows.query_ids
    )  # fmt: skip
    full_q, full_r = bool(q_in.all()), bool(r_in.all())
    q_q = qrel_qi if full_q else qrel_qi[q_in]
    r_q = run_qi if full_r else run_qi[r_in]
    q_labels = qrels.labels if full_q else qrels.labels[q_in]
    q_lines = qrels.lines if full_q else qrels.lines[q_in]
    q_docs = qrels.docs if full_q else qrels.docs[q_in]
    r_docs = run.docs if full_r else run.docs[r_in]
    r_scores = run.scores if full_r else run.scores[r_in]
    # bad UTF-8 is reported as before (only a non-ASCII file needs the check)
    if not qrels.ascii_only:
        _decode(q_docs, False, qrels.path, q_lines)
    if not run.ascii_only:
        _decode(r_docs, False, run.path, run.lines if full_r else run.lines[r_in])
    if q_docs.size > 1:
        _, codes = np.unique(q_docs, return_inverse=True)
        codes = codes.astype(np.int64).ravel()
        dup = _find_duplicate(q_q * (int(codes.max()) + 1) + codes, q_lines)
        if dup is not None:
            a, b = dup
            raise _duplicate_error(
                "qrels", qrels.path, str(query_ids[q_q[b]]), _as_str(q_docs[b]),
                int(q_lines[a]), int(q_lines[b]),
            )  # fmt: skip
    return Columns(
        query_ids=tuple(query_ids.tolist()),
        run_q=r_q.astype(np.int64, copy=False),
        run_docs=r_docs,
        run_scores=r_scores,
        qrel_q=q_q.astype(np.int64, copy=False),
        qrel_docs=q_docs,
        qrel_labels=q_labels,
        present=rows.present,
        extra_queries=rows.extra_queries,
    )


def _as_str(doc: bytes) -> str:
    return doc.decode("utf-8")


def run_trec_eval(
    qrels_path: str,
    run_path: str,
    measures: Sequence[str] = (),
    *,
    per_query: bool = False,
    complete: bool = False,
    summary: bool = True,
    rel_level: int = 1,
    max_per_query: int | None = None,
    judged_only: bool = False,
    compat: Compat = "10.0",
) -> TrecEvalResult:
    """Evaluate like ``trec_eval [-q] [-c] [-n] [-l N] [-M N] [-J] [-m ...] qrels run``."""
    if rel_level < 1:
        raise ConfigError(
            f"-l {rel_level}: the relevance level must be at least 1",
            hint="evalframe's binary metrics take rel >= 1",
        )
    if max_per_query is not None and max_per_query < 0:
        raise ConfigError("-M must not be negative")
    requests = parse_measures(list(measures), compat)
    outputs = _plan(requests, rel_level, compat)

    qrels = read_qrels(qrels_path)
    run = read_run(run_path)
    policies = Policies(
        no_relevant="zero",  # trec_eval scores a query with no relevant doc (as 0 mostly)
        missing_query="zero" if complete else "skip",
        # trec_eval 10.0 keeps scores as double, 9.0.8 as float (ties in float32)
        score_precision="float32" if compat == "9.0.8" else "float64",
        duplicates="error",
    )

    names = np.asarray(qrels.qid_names, dtype=str)
    by_name = np.argsort(names, kind="stable")
    query_ids = names[by_name]  # code point order = trec_eval's strcmp order for UTF-8
    slot = np.empty(names.size, dtype=np.int64)
    slot[by_name] = np.arange(names.size)
    qrel_qi = slot[qrels.qid_codes]
    where = {str(q): i for i, q in enumerate(query_ids)}
    run_slot = np.array([where.get(q, -1) for q in run.qid_names], dtype=np.int64)
    run_qi = run_slot[run.qid_codes] if run.qid_codes.size else np.zeros(0, dtype=np.int64)
    present = np.zeros(query_ids.size, dtype=bool)
    present[run_slot[run_slot >= 0]] = True
    evaluated = np.ones(query_ids.size, dtype=bool) if complete else present
    if not evaluated.any():
        raise DataError(
            "no queries with both results and relevance info",
            path=run_path,
            hint=f"the run's query ids do not match those in {qrels_path}",
        )

    # Rows of the queries in play.
    q_in = evaluated[qrel_qi]
    r_in = (run_qi >= 0) & evaluated[np.maximum(run_qi, 0)]
    rows = _Rows(q_in, r_in, qrel_qi, run_qi, query_ids, present, int((run_slot < 0).sum()))
    ordered = partial(_ordered_columns, qrels, run, rows, max_per_query, judged_only, compat)
    direct = max_per_query is None and not judged_only
    # Without -M and -J the engine sorts into trec_eval order and finds the
    # run's duplicates itself, on the byte ids as read.
    cols = _direct_columns(qrels, run, rows) if direct else ordered()
    r_q = cols.run_q
    depth = max(1, int(np.bincount(r_q).max()) if r_q.size else 1)
    metrics = list(dict.fromkeys(m for o in outputs for m in o.metrics))
    if any(o.root == "num_nonrel_judged_ret" for o in outputs):
        metrics.append(_metric(f"Judged@{depth}"))
    try:
        scores = evaluate_columns(metrics, cols, policies)
    except DataError:
        if not direct:
            raise
        ordered()  # a duplicate in the run: reported with its file lines, as trec_eval does
        raise  # pragma: no cover - the engine and trec_eval's checks find the same duplicates
    values, matrix = scores.values, scores.matrix
    assert matrix is not None  # evaluate_columns sets it
    stand_in = (~present) if (complete and compat == "10.0" and not judged_only) else None
    ctx = _Context(values=values, matrix=matrix, depth=depth, stand_in=stand_in)

    idx = np.flatnonzero(evaluated)
    shown = idx if (compat == "10.0" or not complete) else np.flatnonzero(present)
    n = int(idx.size)
    result = TrecEvalResult(
        runid=run.runid,
        num_q=n,
        measures=[o.name for o in outputs],
        equivalents={o.name: [str(m) for m in o.metrics] for o in outputs},
        kinds={o.name: o.kind for o in outputs},
    )
    per_query_values: dict[str, Any] = {}
    for o in outputs:
        if o.aggregate in ("runid", "num_q"):
            continue
        computed = o.compute(ctx)
        if o.kind == "str":
            per_query_values[o.name] = computed
            continue
        arr = np.asarray(computed, dtype=np.float64)
        if np.isnan(arr[idx]).any():  # pragma: no cover - policies make none here
            raise AssertionError(f"{o.name}: a policy skipped an evaluated query")
        per_query_values[o.name] = arr

    if per_query:
        for i in shown:
            row: dict[str, float | int | str] = {}
            for o in outputs:
                if o.name in _SUMMARY_ONLY or o.aggregate in ("runid", "num_q", "gm"):
                    continue
                v = per_query_values[o.name][i]
                row[o.name] = (
                    str(v) if o.kind == "str" else (int(v) if o.kind == "int" else float(v))
                )
            result.per_query.append((str(query_ids[i]), row))
    if summary:
        for o in outputs:
            if o.aggregate == "runid":
                result.summary[o.name] = run.runid
            elif o.aggregate == "num_q":
                result.summary[o.name] = n
            elif o.aggregate == "none":
                continue
            elif o.aggregate == "sum":
                if o.name == "num_rel" and complete:
                    # trec_eval -c recounts from the qrels: every label > 0, whatever -l says
                    result.summary[o.name] = int((qrels.labels > 0).sum())  # all qrels queries
                else:
                    result.summary[o.name] = int(np.cumsum(per_query_values[o.name][idx])[-1])
            elif o.aggregate == "gm":
                logs = np.log(np.maximum(per_query_values[o.name][idx], _MIN_GEO_MEAN))
                result.summary[o.name] = math.exp(float(np.cumsum(logs)[-1]) / n)
            else:  # trec_eval adds the queries in order, then divides
                result.summary[o.name] = float(np.cumsum(per_query_values[o.name][idx])[-1]) / n
    return result


# -------------------------------------------------------------------------------- CLI


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # usage errors are exit 2 with one paragraph
        raise ConfigError(message, hint="`evalframe trec-eval --help` lists the options")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="evalframe trec-eval",
        description="Evaluate a TREC run against qrels exactly as NIST trec_eval prints it.",
        epilog=(
            "supported measures: " + _supported_list() + "; sets: official (the default), "
            "all_trec, set. Unsupported: " + ", ".join(UNSUPPORTED) + ". See docs/trec-eval.md."
        ),
    )
    p.add_argument("-q", "--query_eval_wanted", action="store_true", help="also print per query")
    p.add_argument(
        "-m",
        "--measure",
        action="append",
        default=[],
        metavar="MEASURE[.PARAMS]",
        help="measure to print (repeatable), e.g. map, P.5,10, ndcg_cut.10, all_trec",
    )
    p.add_argument(
        "-c",
        "--complete_rel_info_wanted",
        action="store_true",
        help="average over every query in the qrels (a missing ranking scores 0)",
    )
    p.add_argument("-n", "--nosummary", action="store_true", help="do not print the 'all' lines")
    p.add_argument(
        "-l", "--level_for_rel", type=int, default=1, metavar="N", help="relevant if label >= N"
    )
    p.add_argument(
        "-M",
        "--Max_retrieved_per_topic",
        type=int,
        default=None,
        metavar="N",
        help="use only the top N docs of each query (after trec_eval's sort)",
    )
    p.add_argument(
        "-J",
        "--Judged_docs_only",
        action="store_true",
        help="drop unjudged retrieved docs before scoring",
    )
    p.add_argument("-N", "--Number_docs_in_coll", type=int, default=None, help="accepted, unused")
    p.add_argument("-R", "--Rel_info_format", choices=["qrels"], default="qrels")
    p.add_argument("-T", "--Results_format", choices=["trec_results"], default="trec_results")
    p.add_argument("--json", action="store_true", help="print full-precision values as JSON")
    p.add_argument(
        "--compat",
        choices=["10.0", "9.0.8"],
        default="10.0",
        help="match trec_eval 10.0 (default) or 9.0.8 / pytrec_eval: 9.0.8 turns recall "
        "levels into counts with floor(level*R + 0.9), ties scores in float32, omits "
        "queries missing from the run from -q -c output and unj from all_trec",
    )
    p.add_argument("qrels", help="qrels file: qid iter docno rel")
    p.add_argument("run", help="run file: qid Q0 docno rank score tag ('-' for stdin)")
    return p


def main(argv: Sequence[str], out: TextIO | None = None) -> int:
    """``evalframe trec-eval ARGS``; errors raise :class:`~evalframe.core.errors.EvalframeError`."""
    stream = out if out is not None else sys.stdout
    try:
        args = _parser().parse_args(list(argv))
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    result = run_trec_eval(
        args.qrels,
        args.run,
        args.measure,
        per_query=args.query_eval_wanted,
        complete=args.complete_rel_info_wanted,
        summary=not args.nosummary,
        rel_level=args.level_for_rel,
        max_per_query=args.Max_retrieved_per_topic,
        judged_only=args.Judged_docs_only,
        compat=args.compat,
    )
    if args.json:
        stream.write(json.dumps(result.to_json(), indent=2) + "\n")
    else:
        lines = result.lines()
        stream.write("".join(line + "\n" for line in lines))
    return 0
