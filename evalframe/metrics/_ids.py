"""Doc ids as integers: hashing for the join, and finding repeated ids in a ranking.

At 10^7 run lines the cost of evaluation is in id handling and sorting, not
in metric arithmetic, so the join avoids sorting strings: doc ids are hashed
to integers (vectorised over their characters), every hashed match is
verified against the ids themselves, and strings are only compared where the
order depends on them (ties in score). See ``docs/performance.md``.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "SHIFT32",
    "as_text",
    "duplicate_candidates",
    "hash_ids",
    "id_arrays",
    "later_occurrences",
    "order_words",
    "top32",
    "word_count",
]

_FNV = np.uint64(0x100000001B3)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_LOW32 = np.uint64(0xFFFFFFFF)
SHIFT32 = np.uint64(32)
#: Ids hashed at a time.
_BLOCK = 1 << 20


def id_arrays(run_docs: np.ndarray, qrel_docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both id columns as one NumPy string kind.

    UTF-8 bytes (``S``, what a file reader has without decoding) are kept as
    bytes when both columns are bytes: byte order is trec_eval's strcmp order
    and equality is the same. Anything else becomes unicode, as before.
    """
    run_docs, qrel_docs = np.asarray(run_docs), np.asarray(qrel_docs)
    if run_docs.dtype.kind == "S" and qrel_docs.dtype.kind == "S":
        return run_docs, qrel_docs
    return run_docs.astype(str, copy=False), qrel_docs.astype(str, copy=False)


def word_count(ids: np.ndarray) -> int:
    """How many uint64 words an id of this array's width spans."""
    return -(-ids.dtype.itemsize // 8)


def hash_ids(ids: np.ndarray, n_words: int) -> np.ndarray:
    """A 64-bit hash of every fixed-width id, computed a machine word at a time.

    The ids are viewed as rows of uint64 words (padded with zeros to a whole
    word, which is how NumPy pads short strings anyway), so an 8-byte id
    costs one multiply: no Python object per id and no string sort. Both id
    columns are hashed over the same ``n_words``, the missing words of the
    narrower one being zeros, so equal ids hash equal whatever the widths.
    """
    n = ids.size
    if n == 0:
        return np.zeros(0, dtype=np.uint64)
    if n > _BLOCK:  # a block at a time: the padded copy of 10^7 ids would be 160 MB
        out = np.empty(n, dtype=np.uint64)
        for lo in range(0, n, _BLOCK):
            out[lo : lo + _BLOCK] = hash_ids(ids[lo : lo + _BLOCK], n_words)
        return out
    ids = np.ascontiguousarray(ids)
    if not ids.dtype.isnative:
        ids = ids.astype(ids.dtype.newbyteorder("="))
    size, unit = ids.dtype.itemsize, (4 if ids.dtype.kind == "U" else 1)
    if size % 8:
        ids = ids.astype(f"{ids.dtype.kind}{(-(-size // 8) * 8) // unit}")
    words = ids.view(np.uint64).reshape(n, -1)
    h = words[:, 0] * _FNV
    for j in range(1, words.shape[1]):
        h ^= words[:, j]
        h *= _FNV
    for _ in range(words.shape[1], n_words):
        h *= _FNV  # a zero word: h ^= 0, then the multiply
    # finaliser (splitmix64): spread every input bit into the top 32 bits used below
    h ^= h >> np.uint64(30)
    h *= _MIX1
    h ^= h >> np.uint64(27)
    h *= _MIX2
    h ^= h >> np.uint64(31)
    return h


def top32(h: np.ndarray) -> np.ndarray:
    h >>= SHIFT32
    return h.astype(np.uint32)


def later_occurrences(q: np.ndarray, docs: np.ndarray) -> tuple[np.ndarray, int | None]:
    """Exact duplicate (query, doc) pairs among a few rows, in the order given.

    Returns a mask of every occurrence after the first, and the row to name
    in an error: the second occurrence of the smallest (query, doc id) pair.
    """
    _, codes = np.unique(docs, return_inverse=True)
    key = q.astype(np.int64) * (int(codes.max()) + 1) + codes.ravel()
    order = np.argsort(key, kind="stable")
    dup = np.zeros(key.size, dtype=bool)
    dup[1:] = key[order][1:] == key[order][:-1]
    later = np.zeros(key.size, dtype=bool)
    later[order[dup]] = True  # stable sort: the first occurrence is never marked
    first = int(order[np.flatnonzero(dup)[0]]) if dup.any() else None
    return later, first


def duplicate_candidates(
    run_q: np.ndarray, rank: np.ndarray | None, h32: np.ndarray, nq: int, depth: int
) -> np.ndarray:
    """Positions (in the given row order) whose (query, doc hash) occurs more than once.

    Sorting each query's hashes in a (queries x depth) matrix finds repeats
    with one vectorised row-wise sort; the padding is distinct and above
    every 32-bit hash so it never matches. ``rank`` (each row's 0-based rank)
    is needed only when some ranking is shorter than ``depth``.
    """
    if run_q.size < 2:
        return np.zeros(0, dtype=np.int64)
    if run_q.size == nq * depth:  # every query has `depth` rows, in order: a reshape
        mat = h32.reshape(nq, depth).copy()
    else:
        assert rank is not None  # the caller passes it for short rankings
        pad = np.arange(depth, dtype=np.uint64) + (_LOW32 + np.uint64(1))
        mat = np.broadcast_to(pad, (nq, depth)).copy()
        mat[run_q, rank] = h32
    mat.sort(axis=1)
    rep = mat[:, 1:] == mat[:, :-1]
    if not rep.any():
        return np.zeros(0, dtype=np.int64)
    qi, ci = np.nonzero(rep)
    wanted = np.unique((qi.astype(np.uint64) << SHIFT32) | mat[qi, ci + 1])
    packed = (run_q.astype(np.uint64) << SHIFT32) | h32
    at = np.minimum(np.searchsorted(wanted, packed), wanted.size - 1)
    return np.flatnonzero(wanted[at] == packed)


def as_text(doc: object) -> str:
    return doc.decode("utf-8", "replace") if isinstance(doc, bytes) else str(doc)


def order_words(ids: np.ndarray) -> list[np.ndarray]:
    """uint64 words whose lexicographic order (first word most significant) is the ids' order.

    Byte order for UTF-8 bytes (``S``), code-point order for unicode (``U``):
    both are trec_eval's ``strcmp`` order on UTF-8, and NUL padding sorts a
    prefix first as ``strcmp`` does. Sorting these integers replaces a string
    sort (``np.unique`` over the ids), which dominates when most scores tie.
    """
    n = ids.size
    ids = np.ascontiguousarray(ids)
    if ids.dtype.kind == "S":
        width = max(8, -(-ids.dtype.itemsize // 8) * 8)
        words = ids.astype(f"S{width}").view(">u8").reshape(n, -1).astype(np.uint64)
        return [words[:, j] for j in range(words.shape[1])]
    length = ids.dtype.itemsize // 4  # code points per id
    even = max(2, length + length % 2)  # two code points per word
    points = ids.astype(f"U{even}").view(np.uint32).reshape(n, -1).astype(np.uint64)
    return [(points[:, j] << SHIFT32) | points[:, j + 1] for j in range(0, points.shape[1], 2)]
