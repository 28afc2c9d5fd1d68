"""TREC qrels and run files, read as columns: the one reader of both formats.

- qrels: ``qid iter docno rel``, exactly four fields; ``rel`` an integer
  (``1.0`` is read as 1, ``0.5`` and ``high`` are errors).
- run: ``qid Q0 docno rank score tag``, at least six fields (words after the
  tag are ignored, as trec_eval does); ``score`` a number.
- Fields are separated by ASCII whitespace (see :mod:`.files`); blank lines
  and lines whose first field starts with ``#`` (trec_eval 10.0's comments)
  are skipped; a ``#`` inside a doc id is data.

The readers return columns (NumPy arrays in file order) rather than a Python
object per line: ``evalframe trec-eval`` reads a 10M-line run this way about
five times faster than the C trec_eval. Query ids are factorized
(``qid_codes`` index ``qid_names``); doc ids stay UTF-8 bytes (``S``) until the
caller knows which rows it needs. :meth:`QrelsColumns.rows` and
:meth:`RunColumns.to_run` turn them into the records and :class:`Run` that
loaders and retrievers use.

Two ways to cut a file, which give the same columns:

- files as writers produce them (one space between fields, ``\\n`` line
  ends, no blank or comment line) are cut from the positions of their
  separators, with no Python object per field (:func:`_fast_split`);
- anything else goes through ``bytes.split()`` plus NumPy to find each
  line's fields (:func:`_tokenize`), which also locates a malformed line.

It is one module because the two cuts must give the same columns and the
same located errors for the same bytes: they share the format table, the
number parser and its range checks, and a change to one is a change to both.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from evalframe.core.errors import DataError
from evalframe.core.gcpause import gc_paused
from evalframe.core.reader.files import (
    UNICODE_SPACE,
    _input_file,
    _unreadable,
    check_text,
    read_bytes,
    warn_inner_bom,
    warn_unicode_space,
)
from evalframe.core.records import LABEL_MAX, LABEL_MIN
from evalframe.core.types import (
    Ranking,
    Run,
    RunRows,
    is_plain_id,
    normalise_id,
)

__all__ = [
    "QrelsColumns",
    "RunColumns",
    "ascii_id_list",
    "decode_ids",
    "parse_qrels",
    "parse_run",
    "read_qrels_columns",
    "read_run_columns",
    "read_trec_run",
]


@dataclass(frozen=True)
class _Columns:
    """What both files have: query ids factorized, doc ids as bytes, the line of each row."""

    path: str
    qid_codes: np.ndarray  # index into qid_names, in file order
    qid_names: list[str]  # first-seen order
    docs: np.ndarray  # UTF-8 bytes ('S')
    lines: np.ndarray  # 1-based file line of each row
    ascii_only: bool

    def __len__(self) -> int:
        return int(self.lines.size)


@dataclass(frozen=True)
class QrelsColumns(_Columns):
    """A qrels file as columns, in file order."""

    labels: np.ndarray  # int64

    def rows(self) -> Iterator[tuple[str, str, int, int]]:
        """``(qid, doc, label, line)`` for each judgment, in file order."""
        names = self.qid_names
        for code, doc, label, line in zip(
            self.qid_codes.tolist(),
            self.docs.tolist(),
            self.labels.tolist(),
            self.lines.tolist(),
            strict=True,
        ):
            yield names[code], doc.decode("utf-8"), label, line


@dataclass(frozen=True)
class RunColumns(_Columns):
    """A TREC run file as columns, in file order (see :class:`QrelsColumns`)."""

    scores: np.ndarray  # float64
    runid: str  # the tag of the last line, which trec_eval prints as runid
    # The doc ids factorized (``docs == doc_names[doc_codes]``), kept by :meth:`save`:
    # a run of 10k x 100 names about 100k documents, so its rankings are built from
    # 100k strings shared a million times, not a million strings (0.05 s and 50 MB less).
    doc_codes: np.ndarray | None = None
    doc_names: np.ndarray | None = None

    def save(self, handle: BinaryIO) -> None:
        """The columns as one uncompressed ``.npz`` (NumPy arrays only, no pickle), for
        :meth:`load`: a cache of a large run file, which loads 30x faster than it is
        parsed (10k x 100: 0.02 s against 0.6 s)."""
        lines = self.lines
        plain = lines.size == 0 or (lines[0] == 1 and bool((np.diff(lines) == 1).all()))
        if self.doc_codes is None or self.doc_names is None:
            names, codes = np.unique(self.docs, return_inverse=True)
        else:
            names, codes = self.doc_names, self.doc_codes
        np.savez(
            handle,
            # the ids as each distinct one and a code per row: docs is doc_names[doc_codes]
            doc_names=names,
            doc_codes=codes.astype(np.int32 if names.size < 2**31 else np.int64),
            qid_codes=self.qid_codes.astype(np.int32 if len(self.qid_names) < 2**31 else np.int64),
            qid_names=np.asarray(self.qid_names, dtype=str),
            scores=self.scores,
            # 1..n for a file with no blank or comment line: said by an empty array
            lines=np.zeros(0, dtype=np.int64) if plain else lines,
            rows=np.asarray(lines.size, dtype=np.int64),
            runid=np.asarray(self.runid, dtype=str),
            ascii_only=np.asarray(self.ascii_only),
        )

    @classmethod
    def load(cls, source: str | Path | BinaryIO, path: str) -> RunColumns:
        """What :meth:`save` wrote, as the columns of the run file ``path``. A file that
        is not what :meth:`save` writes raises ``ValueError`` (or ``OSError``)."""
        if isinstance(source, (str, Path)):
            with open(source, "rb") as handle:  # closed even when NumPy refuses what it holds
                return cls.load(handle, path)
        try:
            with np.load(source, allow_pickle=False) as saved:
                arrays = {name: saved[name] for name in _SAVED}
        except KeyError as exc:
            raise ValueError(f"not saved run columns: {exc}") from None
        rows = int(arrays["rows"])
        lines = arrays["lines"]
        if lines.size == 0:
            lines = np.arange(1, rows + 1, dtype=np.int64)
        names, codes = arrays["doc_names"], arrays["doc_codes"]
        if codes.size and not 0 <= int(codes.min()) <= int(codes.max()) < names.size:
            raise ValueError("saved run columns with doc codes out of range")
        columns = cls(
            path,
            arrays["qid_codes"].astype(np.int64),  # as the readers give them
            arrays["qid_names"].tolist() if arrays["qid_names"].size else [],
            names[codes] if codes.size else np.zeros(0, dtype="S1"),
            lines,
            bool(arrays["ascii_only"]),
            scores=arrays["scores"],
            runid=str(arrays["runid"]),
            doc_codes=arrays["doc_codes"],
            doc_names=arrays["doc_names"],
        )
        sizes = {columns.qid_codes.size, columns.docs.size, columns.scores.size, lines.size}
        if sizes != {rows} or columns.docs.dtype.kind != "S":
            raise ValueError("saved run columns of different lengths")
        return columns

    def to_run(self, latency: Mapping[str, float] | None = None) -> Run:
        """The run's rankings in file order per query (the engine sorts by score);
        ``latency`` (query id -> ms, as ``timings.json`` keeps it) goes into them."""
        order = np.argsort(self.qid_codes, kind="stable")
        score_array = self.scores[order]
        count_array = np.bincount(self.qid_codes, minlength=len(self.qid_names))
        scores = score_array.tolist()
        # Ids cut from a TREC line hold no space; when none holds a control character
        # either (one look at all of them), each is what Ranking's validator would
        # make of it, and the rankings are built without that second look (10k
        # rankings of 100: 0.1 s less). Otherwise every ranking is validated, which
        # names the offending id.
        ordered = self.docs[order]
        docs, printable = self._id_list(order, ordered) if self.ascii_only else ([], False)
        if not printable:  # the slow way, which also says which id is wrong
            docs = decode_ids(self.docs, self.ascii_only)[order].tolist()
            printable = "".join(docs).isprintable()
        checked = printable and all(is_plain_id(q) for q in self.qid_names)
        if not checked:
            self._refuse_unusable_ids(docs, order)
        with gc_paused():  # a million ids, 20k tuples, 10k rankings: no cycles among them
            rankings = self._rankings(count_array, docs, scores, checked, latency)
        run = Run(rankings=rankings, metadata={"source": self.path})
        # The columns the engine would otherwise flatten the 10k rankings back into;
        # ASCII ids as the bytes they were read as, a quarter of the memory of
        # unicode (and the same order: UTF-8 keeps code point order).
        kept = ordered if self.ascii_only else np.asarray(docs, dtype=str)
        run.keep_rows(RunRows(tuple(self.qid_names), count_array, kept, score_array))
        return run

    def _id_list(self, order: np.ndarray, ordered: np.ndarray) -> tuple[list[str], bool]:
        """The ASCII doc ids in ``order`` as strings (:func:`ascii_id_list`), from the
        factorized ids when :meth:`load` gave them: each document's id is one string."""
        if self.doc_codes is None or self.doc_names is None:
            return ascii_id_list(ordered)
        names, printable = ascii_id_list(self.doc_names)
        if not printable:
            return [], False
        shared = np.array(names, dtype=object)[self.doc_codes[order]]
        return shared.tolist(), True

    def _rankings(
        self,
        count_array: np.ndarray,
        docs: list[str],
        scores: list[float],
        checked: bool,
        latency: Mapping[str, float] | None,
    ) -> dict[str, Ranking]:
        counts = count_array.tolist()
        times = {q: float(v) for q, v in (latency or {}).items() if type(v) in (int, float)}
        bounds = np.cumsum(count_array).tolist()
        parts = [
            (name, tuple(docs[end - n : end]), tuple(scores[end - n : end]), times.get(name))
            for name, n, end in zip(self.qid_names, counts, bounds, strict=True)
        ]
        if checked:
            return dict(zip(self.qid_names, unchecked_rankings(parts), strict=True))
        rankings: dict[str, Ranking] = {}
        for name, doc_ids, values, ms in parts:
            timed = {} if ms is None else {"latency_ms": ms}
            rankings[name] = Ranking(query_id=name, doc_ids=doc_ids, scores=values, **timed)
        return rankings

    def _refuse_unusable_ids(self, docs: list[str], order: np.ndarray) -> None:
        """A located error for the first id evalframe cannot keep (a control character
        inside it), which trec_eval's reading lets through; ``docs`` is in ``order``."""
        bad: tuple[str, str, int] | None = None
        for code, name in enumerate(self.qid_names):
            if not is_plain_id(name) and _id_refused(name):
                row = int(np.flatnonzero(self.qid_codes == code)[0])
                bad = ("query id", name, row)
                break
        for i, doc in enumerate(docs):
            if not is_plain_id(doc) and _id_refused(doc):
                row = int(order[i])
                if bad is None or row < bad[2]:
                    bad = ("doc id", doc, row)
                break
        if bad is not None:
            what, value, row = bad
            raise DataError(
                f"the {what} {value!r} holds a control character, which evalframe does not "
                "keep in an id (a TREC file splits on whitespace; a control character would "
                "be read back differently)",
                path=self.path,
                line=int(self.lines[row]) if row < self.lines.size else None,
                hint="ids are single words of printable characters; fix the file",
            )


#: The arrays :meth:`RunColumns.save` writes.
_SAVED = (
    *("qid_codes", "qid_names", "doc_codes", "doc_names", "scores", "lines", "rows"),
    *("runid", "ascii_only"),
)

#: What :func:`unchecked_rankings` marks as given: pydantic's record of set fields.
_RANKING_SET = frozenset({"query_id", "doc_ids", "scores"})
_RANKING_TIMED = frozenset({"query_id", "doc_ids", "scores", "latency_ms"})


def unchecked_rankings(
    parts: Iterable[tuple[str, tuple[str, ...], tuple[float, ...], float | None]],
) -> Iterator[Ranking]:
    """Rankings from ``(query_id, doc_ids, scores, latency_ms)`` that the caller has
    checked (plain ids, one float score per id), built without validation.

    What ``Ranking.model_construct`` builds, field for field, at a fifth of its
    cost: it looks at every field's default and alias each time, which is
    0.17 s for the 10k rankings of a stored run. tests/core/test_reader.py holds
    the two to the same result.
    """
    new = Ranking.__new__
    put = object.__setattr__
    for query_id, doc_ids, scores, latency in parts:
        ranking = new(Ranking)
        put(
            ranking,
            "__dict__",
            {
                "query_id": query_id,
                "doc_ids": doc_ids,
                "scores": scores,
                "confidence": None,
                "answer": None,
                "latency_ms": latency,
                "tokens": None,
                "tool_calls": None,
            },
        )
        put(
            ranking,
            "__pydantic_fields_set__",
            set(_RANKING_SET if latency is None else _RANKING_TIMED),
        )
        put(ranking, "__pydantic_extra__", None)
        put(ranking, "__pydantic_private__", None)
        yield ranking


def _id_refused(value: str) -> bool:
    """Whether :func:`~evalframe.core.types.normalise_id` refuses ``value``."""
    try:
        normalise_id(value)
    except ValueError:
        return True
    return False


def ascii_id_list(values: np.ndarray) -> tuple[list[str], bool]:
    """ASCII bytes (``S``) ids as a list of ``str``, when every id is printable and holds
    no space (what :func:`~evalframe.core.types.is_plain_id` asks of each); else
    ``([], False)``, and the caller decodes them the slow way.

    ``values.astype(str).tolist()`` with ``str.isprintable`` on the joined ids
    gives the same, at twice the cost for a run of 10k x 100 (0.24 s): here the
    bytes are checked with one table lookup, and the ids laid end to end,
    newline-separated, in one array operation, decoded once, cleared of the
    NUL bytes an ``S`` array pads them with (an id never holds one: the
    readers refuse NUL), and split once.
    """
    n, width = values.size, values.itemsize
    if n == 0:
        return [], True
    as_bytes = np.ascontiguousarray(values).view(np.uint8)
    if _NOT_IN_PLAIN_ID[as_bytes].any():
        return [], False  # a space or a control byte (a newline would cut the split wrong)
    grid = np.empty((n, width + 1), dtype=np.uint8)
    grid[:, :width] = as_bytes.reshape(n, width)
    grid[:, width] = 10
    ids = grid.tobytes().decode("ascii").replace("\0", "").split("\n")
    ids.pop()  # after the last separator
    return (ids, True) if len(ids) == n and all(ids) else ([], False)


#: Bytes that send :func:`ascii_id_list` the slow way: the space, control bytes,
#: DEL, and bytes of 128 and above (not ASCII). NUL (0) is an ``S`` array's padding.
_NOT_IN_PLAIN_ID = np.zeros(256, dtype=bool)
_NOT_IN_PLAIN_ID[1:33] = True
_NOT_IN_PLAIN_ID[127:] = True


def decode_ids(values: np.ndarray, ascii_only: bool) -> np.ndarray:
    """Bytes ('S') ids -> a NumPy unicode array (the file was checked to be UTF-8)."""
    if values.size == 0:
        return np.zeros(0, dtype=str)
    if ascii_only:
        return values.astype(str)
    return np.asarray([b.decode("utf-8") for b in values.tolist()], dtype=str)


# --------------------------------------------------------------------------- formats


@dataclass(frozen=True)
class _Format:
    """What one TREC file format looks like, for the reader and its errors."""

    name: str
    what: str  # "qrels file"
    width: int
    exact: bool  # exactly `width` fields, or at least
    layout: str
    number: int  # the numeric column
    number_what: str
    dtype: type[np.floating[Any]] | type[np.integer[Any]]
    hint: Callable[[list[str]], str]  # for a line of the wrong width, given its fields
    number_hint: str

    @property
    def expected_number(self) -> str:
        kind = "an integer" if self.dtype is np.int64 else "a number"
        return f"{kind} in column {self.number + 1}"


def _qrels_hint(fields: list[str]) -> str:
    if len(fields) == 3:
        return "is the iteration column missing? write 'qid 0 docno rel'"
    if len(fields) == 6:  # a run's line: the two files given the other way round, mostly
        return (
            "this line has a run's six columns (qid Q0 docno rank score tag): is a run file "
            "given where the qrels belong? (trec-eval takes QRELS first, then RUN)"
        )
    return "TREC qrels have four columns; the second (iteration) is usually 0"


def _run_hint(fields: list[str]) -> str:
    layout = "a TREC run line is 'qid Q0 docno rank score tag'"
    if len(fields) != 5:
        return layout
    try:  # five columns: the last a number is a score without its tag
        float(fields[4])
    except ValueError:
        return f"{layout}; is the score missing? column 5 ({fields[4][:40]!r}) is not a number"
    return f"{layout}; is the run tag missing?"


_QRELS = _Format(
    "qrels", "qrels file", 4, True, "qid iter docno rel", 3, "relevance", np.int64, _qrels_hint,
    "a relevance label is a whole number such as 0, 1, 2 or -1 (1.0 is read as 1)",
)  # fmt: skip
_RUN = _Format(
    "run", "run file", 6, False, "qid Q0 docno rank score tag", 4, "score", np.float64, _run_hint,
    "a score is a number such as 12.5, -0.3 or 1e-4",
)  # fmt: skip


def read_qrels_columns(
    path: str | Path, *, key: str | None = None, what: str = "qrels file"
) -> QrelsColumns:
    """Read a qrels file (see the module's rules); a bad line names its file and line."""
    p = Path(path).expanduser()
    streamed = _streamed(p, _QRELS, key, what)
    if streamed is not None:
        lines, codes, names, docs, labels, _, ascii_only = streamed
        return QrelsColumns(str(p), codes, names, docs, lines, ascii_only, labels=labels)
    return parse_qrels(read_bytes(p, what=what, key=key), str(p))


def read_run_columns(
    path: str | Path, *, key: str | None = None, what: str = "run file"
) -> RunColumns:
    """Read a TREC run file (see the module's rules); a bad line names its file and line."""
    p = Path(path).expanduser()
    streamed = _streamed(p, _RUN, key, what)
    if streamed is not None:
        lines, codes, names, docs, scores, tag, ascii_only = streamed
        return RunColumns(str(p), codes, names, docs, lines, ascii_only, scores=scores, runid=tag)
    return parse_run(read_bytes(p, what=what, key=key), str(p))


#: Bytes of a file cut at a time by :func:`_streamed`.
_STREAM_BLOCK = 8 << 20


def _streamed(
    p: Path, fmt: _Format, key: str | None, what: str
) -> tuple[np.ndarray, np.ndarray, list[str], np.ndarray, np.ndarray, str, bool] | None:
    """A regular file's columns, cut :data:`_STREAM_BLOCK` bytes of whole lines at a time.

    Holds the columns and one block, never the whole file: a 50k x 100 run
    (177 MB) peaks at about half the memory of reading it whole. ``None``
    when any block is not the regular layout of :func:`_fast_split`, is not
    plain UTF-8 text, or holds Unicode whitespace: the caller then reads the
    whole file the careful way, which also says what is wrong and where.
    """
    p = _input_file(p, what, key)  # a missing file or a folder: the usual errors
    try:
        handle = p.open("rb")
    except OSError as exc:
        raise _unreadable(p, what, key, exc) from None
    qids: list[np.ndarray] = []
    docs: list[np.ndarray] = []
    numbers: list[np.ndarray] = []
    ascii_only, first_line, tag, pending = True, 1, "", b""
    with handle:
        while True:
            chunk = handle.read(_STREAM_BLOCK)
            data = pending + chunk
            if not chunk:
                if data:
                    return None  # no final newline: the careful path
                break
            cut = data.rfind(b"\n") + 1
            block, pending = data[:cut], data[cut:]
            if not block:
                continue
            if first_line == 1 and block.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")):
                return None
            if b"\0" in block:
                return None
            if not block.isascii():
                if b"\xef\xbb\xbf" in block:  # a mark where files were joined: warned of there
                    return None
                try:
                    if UNICODE_SPACE.search(block.decode("utf-8")):
                        return None
                except UnicodeDecodeError:
                    return None
                ascii_only = False
            fast = _fast_split(block, fmt.width)
            if fast is None:
                return None
            lines = np.arange(first_line, first_line + fast.n, dtype=np.int64)
            qids.append(fast.strings(0))
            docs.append(fast.strings(2))
            numbers.append(_fast_numbers(fast.matrix(fmt.number), str(p), lines, fmt))
            tag = block[int(fast.sep[-2]) + 1 : -1].decode("utf-8")
            first_line += fast.n
    if not qids:
        return None  # an empty file: the careful path says so
    codes, names = _factorize_runs(np.concatenate(qids))
    del qids
    lines = np.arange(1, first_line, dtype=np.int64)
    return lines, codes, names, np.concatenate(docs), np.concatenate(numbers), tag, ascii_only


def read_trec_run(path: str | Path, *, key: str | None = None) -> Run:
    """A TREC run file as a :class:`Run`; rankings keep the file's order.

    The metric engine re-sorts by score with trec_eval's tie rule, so the
    rank column is informational, as in trec_eval.
    """
    return read_run_columns(path, key=key).to_run()


def parse_qrels(data: bytes, path: str) -> QrelsColumns:
    """:func:`read_qrels_columns` on bytes already read (``path`` names them in errors)."""
    data = _checked(data, path, _QRELS)
    lines, codes, names, docs, labels, _ = _columns(data, path, _QRELS)
    return QrelsColumns(path, codes, names, docs, lines, data.isascii(), labels=labels)


def parse_run(data: bytes, path: str) -> RunColumns:
    """:func:`read_run_columns` on bytes already read (``-`` for standard input)."""
    data = _checked(data, path, _RUN)
    lines, codes, names, docs, scores, tag = _columns(data, path, _RUN)
    return RunColumns(path, codes, names, docs, lines, data.isascii(), scores=scores, runid=tag)


def _checked(data: bytes, path: str, fmt: _Format) -> bytes:
    """The file's bytes without a BOM, checked to be UTF-8 without NUL bytes, and not
    with lines that end in a carriage return alone (:func:`_refuse_cr_line_ends`)."""
    data = check_text(data, path=path, what=fmt.what)
    if b"\r" in data:  # one look (memchr); most files have none, or only CRLF ends
        _refuse_cr_line_ends(data, path, fmt)
    if not data.isascii():  # only non-ASCII text can hold a no-break space, or a mark
        warn_unicode_space(data.decode("utf-8"), path=path, what=fmt.what)
        warn_inner_bom(data, path=path, what=fmt.what)
    return data


def _refuse_cr_line_ends(data: bytes, path: str, fmt: _Format) -> None:
    """A carriage return not followed by a newline is whitespace between fields, as in
    trec_eval. A line with one that holds more fields than a record has is a file whose
    lines end in CR alone (an old Mac format, a tool's export): read as one line, a run
    kept its first record and dropped the rest without a word (words after the tag are
    ignored). Refused at that line."""
    if data.count(b"\r") == data.count(b"\r\n"):
        return
    # a run's line may hold words after its tag (exact is False): a second record's
    # fields, not one more word, tell a line that holds two
    limit = fmt.width if fmt.exact else 2 * fmt.width - 1
    checked_to = -1
    for bare in _BARE_CR.finditer(data):  # only the lines holding one are looked at
        if bare.start() < checked_to:
            continue
        start = data.rfind(b"\n", 0, bare.start()) + 1
        end = data.find(b"\n", bare.start())
        checked_to = end = len(data) if end == -1 else end
        # at most limit + 1 fields split off: a CR-only file is one "line" of all of them
        if len(data[start:end].split(None, limit)) > limit:
            raise DataError(
                "the line holds carriage returns between what reads as more than one "
                f"record, where a {fmt.what} line holds one ({fmt.layout}): the file's "
                "lines end in a carriage return alone, and it would be read as one line",
                path=path,
                line=data.count(b"\n", 0, start) + 1,
                expected="lines that end in \\n or \\r\\n",
                hint=f"convert its line ends: tr '\\r' '\\n' < {path} > fixed.{fmt.name}",
            )


#: A carriage return with no newline after it.
_BARE_CR = re.compile(rb"\r(?!\n)")


def _columns(
    data: bytes, path: str, fmt: _Format
) -> tuple[np.ndarray, np.ndarray, list[str], np.ndarray, np.ndarray, str]:
    """``(lines, qid codes, qid names, docs, numbers, tag of the last line)``."""
    width = fmt.width
    fast = _fast_split(data, width)
    if fast is not None:
        lines = np.arange(1, fast.n + 1, dtype=np.int64)
        codes, names = _factorize_runs(fast.strings(0))
        numbers = _fast_numbers(fast.matrix(fmt.number), path, lines, fmt)
        tag = data[int(fast.sep[-2]) + 1 : -1].decode("utf-8")
        return lines, codes, names, fast.strings(2), numbers, tag
    table = _tokenize(data)
    bad = np.flatnonzero(table.count != width if fmt.exact else table.count < width)
    if bad.size:
        i = int(bad[0])
        n, line = int(table.count[i]), int(table.line[i])
        raise DataError(
            f"a {fmt.name} line has {n} columns",
            path=path,
            line=line,
            expected=f"{'' if fmt.exact else 'at least '}{width} columns: {fmt.layout}",
            got=_line_text(data, line),
            hint=fmt.hint(data.split(b"\n")[line - 1].decode("utf-8", "replace").split()),
        )
    lines = table.line
    codes, names = _factorize(table.column(0, width))
    docs = np.array(table.column(2, width), dtype="S") if lines.size else np.zeros(0, "S1")
    numbers = _numbers(table.column(fmt.number, width), path, lines, fmt)
    last = table.tokens[int(table.first[-1]) + width - 1] if lines.size else b""
    return lines, codes, names, docs, numbers, last.decode("utf-8")


def _line_text(data: bytes, line: int) -> str:
    """The text of 1-based line ``line`` (error paths only)."""
    text = data.split(b"\n")[line - 1].strip()
    return repr(text[:80].decode("utf-8", "replace"))


# ------------------------------------------------------------------- the careful cut

_WS = np.zeros(256, dtype=bool)
_WS[[9, 10, 11, 12, 13, 32]] = True  # C isspace(); the same set as bytes.split()


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


def _factorize(values: list[bytes]) -> tuple[np.ndarray, list[str]]:
    """Codes into the distinct values (first-seen order), decoded; one dict pass, no sort."""
    index: dict[bytes, int] = {}
    codes = np.fromiter(
        (index.setdefault(v, len(index)) for v in values), dtype=np.int64, count=len(values)
    )
    return codes, [raw.decode("utf-8") for raw in index]


def _numbers(
    values: list[bytes] | np.ndarray, path: str, lines: np.ndarray, fmt: _Format
) -> np.ndarray:
    """Parse the numeric column; on failure, name the first bad line."""
    dtype = fmt.dtype
    if len(values) == 0:
        return np.zeros(0, dtype=dtype)
    raw = values if isinstance(values, np.ndarray) else np.array(values, dtype="S")
    parsed: np.ndarray | None = None
    # Python's (and NumPy's) number parsing takes "1_0" for 10; C's strtod, which
    # trec_eval uses, stops at the "_": a digit separator is refused, never guessed.
    if not (np.frombuffer(raw.tobytes(), dtype=np.uint8) == ord("_")).any():
        try:
            parsed = raw.astype(dtype)
        except (ValueError, OverflowError):
            parsed = None
    if parsed is None and dtype is np.int64 and b"_" not in raw.tobytes():  # "1.0" is 1
        try:
            as_float = raw.astype(np.float64)
            if np.all(np.abs(as_float) <= LABEL_MAX) and np.all(as_float == np.round(as_float)):
                parsed = as_float.astype(np.int64)
        except ValueError:
            pass
    if parsed is not None:
        bad = _out_of_range(parsed)
        if not bad.size:
            return parsed
        raw, lines = raw[bad], lines[bad]
    for i, b in enumerate(raw.tolist()):
        problem = _not_a_number(b, dtype)
        if problem is not None:
            raise DataError(
                f"the {fmt.number_what} column is {problem}",
                path=path,
                line=int(lines[i]),
                expected=fmt.expected_number,
                got=repr(b.decode("utf-8", "replace")),
                hint=fmt.number_hint,
            ) from None
    raise DataError(f"cannot read the {fmt.number_what} column", path=path)  # pragma: no cover


def _out_of_range(values: np.ndarray) -> np.ndarray:
    """Indices of values no evaluation can order or weigh: NaN scores, labels out of range.

    A NaN score has no place in a ranking (every comparison with it is false,
    so its rank would depend on the sort); ±inf scores order fine and are kept.
    """
    if values.dtype == np.float64:
        return np.flatnonzero(np.isnan(values))
    return np.flatnonzero((values < LABEL_MIN) | (values > LABEL_MAX))


def _not_a_number(token: bytes, dtype: Any) -> str | None:
    """Why ``token`` is not a value of the column, or None when it is one."""
    if b"_" in token:
        return "not a number (a digit separator '_' is not part of one)"
    try:
        value = float(token)
    except ValueError:
        return "not a number"
    if dtype is np.int64:
        if not (np.isfinite(value) and value == round(value)):
            return "not an integer"
        if not LABEL_MIN <= value <= LABEL_MAX:  # exact: doubles hold every int32
            return f"outside the label range {LABEL_MIN}..{LABEL_MAX}"
    if np.isnan(value):
        return "NaN (not a number, so it has no rank)"
    return None


# ----------------------------------------------------------------------- the fast cut

_POW10 = np.array([float(10**k) for k in range(23)])  # exact doubles

#: Whether ``np.longdouble`` holds a 64-bit significand (x87 extended on x86-64 Linux,
#: IEEE quad elsewhere): then every mantissa of up to 19 digits is exact in it.
_WIDE = np.finfo(np.longdouble).nmant >= 63


def _pow10_wide() -> np.ndarray:
    """10**0 .. 10**19 as exact long doubles (from exact uint64s, never through a double)."""
    return np.array([10**k for k in range(20)], dtype=np.uint64).astype(np.longdouble)


_POW10_WIDE = _pow10_wide() if _WIDE else _POW10


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
    the careful tokenizer, which also reports malformed lines, reads the file.
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

    The digits are gathered into an integer M (exact in a uint64 up to 19
    digits), and the value is M / 10**f for f digits after the point.

    * Up to 15 digits, M is below 2**53 and the power of ten is exact, so one
      IEEE division is correctly rounded: the same double as ``strtod``.
    * 16 to 19 digits (``repr`` of a float writes 17: every run file a Python
      program writes), when long doubles have a 64-bit significand: M and
      10**f are exact in them, so the division gives the true value rounded
      to 64 bits, L. Rounding L to a double gives what ``strtod`` gives,
      except when L is exactly halfway between two doubles (a halfway point
      needs 54 bits, so L lands on it whenever the true value is on the
      other side of it or on it): those rows, and any that would be
      subnormal, go to ``strtod``.

    Returns the values and a mask of the rows parsed here; the others must be
    parsed the general way.
    """
    n, width = mat.shape
    if width > 64:  # (the counts below are uint8)
        return np.zeros(n, dtype=np.float64), np.zeros(n, dtype=bool)
    by_column = np.ascontiguousarray(mat.T)  # one contiguous row per character position
    neg = by_column[0] == ord("-")
    mantissa = np.zeros(n, dtype=np.uint64)  # exact while 19 digits or fewer
    n_digits = np.zeros(n, dtype=np.uint8)
    n_frac = np.zeros(n, dtype=np.uint8)
    n_dots = np.zeros(n, dtype=np.uint8)
    bad = np.zeros(n, dtype=bool)
    ten = np.uint64(10)
    for c in range(width):
        col = by_column[c]
        d = col - np.uint8(48)
        is_digit = d < 10
        is_dot = col == ord(".")
        allowed = is_digit | is_dot | (col == 0)
        if c == 0:
            allowed |= neg
        bad |= ~allowed
        np.multiply(mantissa, ten, out=mantissa, where=is_digit)  # (wraps past 19 digits:
        np.add(mantissa, d, out=mantissa, where=is_digit, casting="unsafe")  # refused below)
        n_digits += is_digit
        n_frac += is_digit & (n_dots > 0)
        n_dots += is_dot
    form = ~bad & (n_dots <= 1) & (n_digits >= 1)
    # up to 15 digits the mantissa is an integer below 10**15 < 2**53: exact
    ok = form & (n_digits <= 15)
    values = mantissa.astype(np.float64)
    values /= _POW10[np.minimum(n_frac, 22)]
    if _WIDE:
        wide = np.flatnonzero(form & (n_digits > 15) & (n_digits <= 19))
        if wide.size:
            good, parsed = _wide_decimals(mantissa[wide], n_frac[wide])
            values[wide[good]] = parsed[good]
            ok[wide[good]] = True
    np.negative(values, out=values, where=neg)
    return values, ok


def _wide_decimals(mantissa: np.ndarray, n_frac: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``mantissa / 10**n_frac`` correctly rounded to doubles, through long doubles (see
    :func:`_decimals`); returns which rows are certain, and the doubles."""
    wide = mantissa.astype(np.longdouble) / _POW10_WIDE[n_frac]
    near = wide.astype(np.float64)
    # the double on the other side of the long double, and the point halfway to it
    other = np.nextafter(near, np.where(wide > near, np.inf, -np.inf))
    halfway = (wide != near) & (wide - near == (other.astype(np.longdouble) - near) / 2)
    usable = np.isfinite(near) & ((near >= np.finfo(np.float64).tiny) | (mantissa == 0))
    return usable & ~halfway, near


def _factorize_runs(values: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """:func:`_factorize` for an ``S`` column, one dict step per run of equal values.

    Files list a query's lines together, so there are few runs; the result
    (first-seen codes, decoded names) is :func:`_factorize`'s.
    """
    n = values.size
    if n == 0:
        return np.zeros(0, dtype=np.int64), []
    cut = np.flatnonzero(values[1:] != values[:-1]) + 1
    run_starts = np.concatenate([[0], cut])
    seg_codes, names = _factorize(values[run_starts].tolist())
    counts = np.diff(np.append(run_starts, n))
    return np.repeat(seg_codes, counts), names


def _fast_numbers(mat: np.ndarray, path: str, lines: np.ndarray, fmt: _Format) -> np.ndarray:
    """:func:`_numbers` on a byte matrix, parsing plain decimals without ``strtod``."""
    raw = mat.view(f"S{mat.shape[1]}").ravel()
    if fmt.dtype is np.float64:
        values, ok = _decimals(mat)
        if ok.all():
            return values
        if not ok.any():
            return _numbers(raw, path, lines, fmt)
        bad = np.flatnonzero(~ok)
        values[bad] = _numbers(raw[bad], path, lines[bad], fmt)
        return values
    return _numbers(raw, path, lines, fmt)
