"""A columnar TREC run/qrels reader for the benchmark (pyarrow).

``evalframe/trec_eval.py`` (the trec_eval drop-in, with its own reader) did not
exist when this benchmark was written, so the benchmark carries this small
reader. It parses both files with pyarrow's multi-threaded CSV reader and
returns :class:`evalframe.metrics.engine.Columns` without building a Python
object per line. Doc ids stay UTF-8 bytes (NumPy ``S``), which the engine
compares as bytes: that is trec_eval's strcmp order, and it saves decoding
millions of ids into 4-byte-per-character unicode.

Limitation: fields must be separated by exactly one space (or one tab with
``delimiter="\\t"``), which is what the generator writes; trec_eval itself
accepts any run of whitespace.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from evalframe.metrics.engine import Columns


def _release_memory_promptly() -> None:
    """Make Arrow hand freed memory back to the OS at once.

    Arrow's default allocator (mimalloc) keeps what the CSV parser freed, and
    NumPy cannot reuse it, so the engine's arrays came on top of it: 870 MB
    peak at 50k x 100 instead of 650 MB with jemalloc and no decay delay.
    """
    try:
        pa.set_memory_pool(pa.jemalloc_memory_pool())
        pa.jemalloc_set_decay_ms(0)
    except (NotImplementedError, pa.ArrowNotImplementedError):
        pass  # a pyarrow built without jemalloc: keep its default


def _read(path: Path, names: list[str], keep: dict[str, pa.DataType], delimiter: str) -> pa.Table:
    return pacsv.read_csv(
        path,
        read_options=pacsv.ReadOptions(column_names=names, block_size=1 << 24),
        parse_options=pacsv.ParseOptions(delimiter=delimiter, quote_char=False),
        convert_options=pacsv.ConvertOptions(include_columns=list(keep), column_types=keep),
    )


def fixed_width(strings: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Arrow strings or binaries -> a NumPy ``S`` (UTF-8 bytes) array, no Python object per id.

    NUL-padding every id to the longest one makes the Arrow data buffer a
    contiguous fixed-width block that NumPy can view as ``S<width>``
    (NumPy strips trailing NULs, so the ids come back unchanged). Chunk by
    chunk, so only one chunk's padded copy exists at a time.
    """
    chunks = strings.chunks if isinstance(strings, pa.ChunkedArray) else [strings]
    chunks = [c for c in chunks if len(c)]
    if not chunks:
        return np.zeros(0, dtype="S1")
    width = max(max(int(pc.max(pc.binary_length(c)).as_py()), 1) for c in chunks)
    out = np.empty(sum(len(c) for c in chunks), dtype=f"S{width}")
    at = 0
    for chunk in chunks:
        out[at : at + len(chunk)] = _padded(chunk, width)
        at += len(chunk)
    return out


def _padded(arr: pa.Array, width: int) -> np.ndarray:
    text = arr.view(pa.string()) if pa.types.is_binary(arr.type) else arr
    padded = pc.utf8_rpad(text, width=width, padding="\x00")
    offsets = np.frombuffer(
        padded.buffers()[1], dtype=np.int32, count=len(padded) + 1, offset=padded.offset * 4
    )
    if offsets[-1] - offsets[0] != len(padded) * width:
        # utf8_rpad counts code points: non-ASCII ids are not `width` bytes after it
        return np.array(arr.cast(pa.binary()).to_pylist(), dtype=f"S{width}")
    return np.frombuffer(
        padded.buffers()[2], dtype=f"S{width}", count=len(padded), offset=int(offsets[0])
    )


def _codes(arr: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Non-null int32 codes (from ``index_in``) -> int64 NumPy, straight from the buffers."""
    chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    parts = [
        np.frombuffer(c.buffers()[1], dtype=np.int32, count=len(c), offset=c.offset * 4)
        for c in chunks
    ]
    return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, dtype=np.int64)


def read_columns(qrels_path: Path, run_path: Path, delimiter: str = " ") -> Columns:
    """Read a qrels file and a run file into engine columns.

    The query set is the qrels' queries in first-seen order; run lines of
    other queries are dropped and counted in ``extra_queries``.
    """
    _release_memory_promptly()
    # binary, not string: ids need no UTF-8 validation to be compared as bytes
    s, f, i = pa.binary(), pa.float64(), pa.int64()
    qrels = _read(qrels_path, ["q", "it", "doc", "rel"], {"q": s, "doc": s, "rel": i}, delimiter)
    run = _read(
        run_path,
        ["q", "q0", "doc", "rank", "score", "tag"],
        {"q": s, "doc": s, "score": f},
        delimiter,
    )
    qids = pc.unique(qrels["q"])  # first-seen order
    qrel_q = _codes(pc.index_in(qrels["q"], value_set=qids))
    run_q_arr = pc.index_in(run["q"], value_set=qids)
    known = pc.is_valid(run_q_arr)
    extra = 0
    if not pc.all(known).as_py():
        extra = len(pc.unique(pc.filter(run["q"], pc.invert(known))))
        run = run.filter(known)
        run_q_arr = pc.filter(run_q_arr, known)
    run_q = _codes(run_q_arr)
    present = np.bincount(run_q, minlength=len(qids)) > 0
    return Columns(
        query_ids=tuple(q.decode("utf-8") for q in qids.to_pylist()),
        run_q=run_q,
        run_docs=fixed_width(run["doc"]),
        run_scores=run["score"].to_numpy(),
        qrel_q=qrel_q,
        qrel_docs=fixed_width(qrels["doc"]),
        qrel_labels=qrels["rel"].to_numpy(),
        present=present,
        extra_queries=extra,
    )
