"""Rank order: which document is at rank 1, 2, ... of each ranking.

Every ranking is ordered by score, descending. Documents with equal scores
are ordered by the tie rule (:attr:`~evalframe.metrics.policies.Policies.ties`):

- ``trec_eval``: by doc id descending (byte order), trec_eval's rule. The
  order the retriever returned them in does not matter, so a run file's rank
  column can be ignored, as trec_eval ignores it.
- ``given``: in the order the retriever returned them, which is how B.O.B
  (``for i, chunk_id in enumerate(retrieved, 1)``), Galaxy and ADK score a
  list. To a user an order by id is arbitrary; the retriever's is not.

Scores are compared at the configured precision: in float32 (trec_eval 9's
``float``) scores equal in float32 tie.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from evalframe.metrics._ids import order_words
from evalframe.metrics.policies import ScorePrecision, TieRule

__all__ = [
    "block_rank_order",
    "rank_order",
    "rank_sort",
    "sort_scores",
    "tied_rows",
    "trec_order",
]

_SHIFT32 = np.uint64(32)
#: Rows handled at a time where a whole-column temporary would cost 80 MB.
_BLOCK = 1 << 20


def sort_scores(scores: np.ndarray, score_precision: ScorePrecision) -> np.ndarray:
    """Scores at the precision at which they are compared for ranking."""
    dtype = np.float32 if score_precision == "float32" else np.float64
    with np.errstate(over="ignore"):  # 1e308 as float32 is inf, as trec_eval's float is
        return np.asarray(scores, dtype=dtype)


def _descending_key(scores: np.ndarray) -> np.ndarray:
    """Unsigned integers whose ascending order is the scores' descending order.

    The IEEE bit pattern, with negatives' bits flipped, orders like the
    numbers. -0.0 ties with 0.0 and NaN sorts last, as ``lexsort`` on
    ``-scores`` does.
    """
    utype = np.uint32 if scores.dtype == np.float32 else np.uint64
    top = utype(1) << utype(8 * scores.dtype.itemsize - 1)
    key = np.empty(scores.shape, dtype=utype)
    flat_scores, flat_key = scores.reshape(-1), key.reshape(-1)
    for lo in range(0, flat_scores.size, _BLOCK):  # blocks: no 80 MB temporaries at 10^7 rows
        part = flat_scores[lo : lo + _BLOCK]
        bits = (part + part.dtype.type(0)).view(utype)  # + 0 turns -0.0 into 0.0
        ascending = np.where(bits & top, ~bits, bits | top)
        out = flat_key[lo : lo + _BLOCK]
        np.invert(ascending, out=out)
        out[np.isnan(part)] = ~utype(0)
    return key


def rank_sort(
    run_q: np.ndarray, scores: np.ndarray, run_docs: np.ndarray, ties: TieRule = "trec_eval"
) -> np.ndarray:
    """Permutation into rank order: query, score descending, then the tie rule.

    ``scores`` are already at the comparison precision (:func:`sort_scores`).
    One stable argsort of a packed uint64 (query in the high 32 bits, the
    score's descending key, or its top 32 bits for float64, in the low 32):
    a run already in that order, as most run files are, sorts in linear
    time, and rows with equal keys keep the order they were given in. For
    float32 scores under ``given`` that is already the answer: the rule
    costs nothing. Otherwise rows whose packed keys tie are re-sorted by the
    full score and, under ``trec_eval``, the doc id, compared as integer
    words (:func:`~evalframe.metrics._ids.order_words`); only those rows'
    ids are read.
    """
    desc = _descending_key(scores)
    # built in place: at 10^7 rows every temporary array is 80 MB
    packed = run_q.astype(np.uint64)
    packed <<= _SHIFT32
    if desc.dtype == np.uint32:
        packed |= desc
    else:
        for lo in range(0, packed.size, _BLOCK):
            packed[lo : lo + _BLOCK] |= desc[lo : lo + _BLOCK] >> _SHIFT32
    order = np.argsort(packed, kind="stable")
    if ties == "given" and desc.dtype == np.uint32:
        return order  # the packed key is the whole score: stability keeps the given order
    tie = np.empty(max(order.size - 1, 0), dtype=bool)
    for lo in range(0, tie.size, _BLOCK):  # sorted keys a block at a time, not all at once
        keys = packed[order[lo : lo + _BLOCK + 1]]
        tie[lo : lo + _BLOCK] = keys[1:] == keys[:-1]
    del packed
    if tie.any():
        in_group = np.zeros(order.size, dtype=bool)
        in_group[1:] |= tie
        in_group[:-1] |= tie
        group = np.cumsum(np.concatenate([[True], ~tie]))  # group id per sorted position
        pos = np.flatnonzero(in_group)
        rows = order[pos]
        # A group shares its packed key; for float32 that is the whole score, so
        # only float64 needs the full score as a key.
        score_key = (desc[rows],) if desc.dtype == np.uint64 else ()
        if ties == "given":
            # stable: rows equal in the full score keep the order they were given in
            sub = np.lexsort((*score_key, group[pos]))
        else:
            # doc id descending: the ids' order words, inverted (~), most significant last
            words = [~w for w in order_words(run_docs[rows])]
            sub = np.lexsort((*reversed(words), *score_key, group[pos]))
        order[pos] = rows[sub]
    return order


def tied_rows(score_mat: np.ndarray, k: int | None, score_precision: ScorePrecision) -> np.ndarray:
    """Boolean per query: two documents with equal scores, at least one within the top k.

    ``score_mat`` is a (queries x depth) matrix in rank order, NaN-padded (the
    :class:`~evalframe.metrics.matrix.ScoreMatrix`'s ``scores``). A tie across
    the cutoff (ranks k and k + 1) counts: the rule then decides which
    document is in the top k. ``k=None`` looks at the whole ranking.
    """
    if score_mat.shape[1] < 2:
        return np.zeros(score_mat.shape[0], dtype=bool)
    cols = score_mat if k is None else score_mat[:, : k + 1]
    cols = sort_scores(cols, score_precision)
    return np.asarray((cols[:, 1:] == cols[:, :-1]).any(axis=1))  # NaN padding never ties


def rank_order(
    pairs: Sequence[tuple[str, float]],
    ties: TieRule = "trec_eval",
    score_precision: ScorePrecision = "float32",
) -> list[tuple[str, float]]:
    """One ranking in the engine's rank order under a tie rule, for display and storage."""
    if ties == "trec_eval":
        return trec_order(pairs, score_precision)
    cast = (lambda s: float(np.float32(s))) if score_precision == "float32" else float

    def key(pair: tuple[str, float]) -> tuple[bool, float]:
        score = cast(pair[1])
        return (math.isnan(score), 0.0 if math.isnan(score) else -score)  # NaN last

    return sorted(pairs, key=key)  # stable: equal scores keep the given order


def trec_order(
    pairs: Sequence[tuple[str, float]],
    score_precision: ScorePrecision = "float32",
) -> list[tuple[str, float]]:
    """One ranking in trec_eval order: score descending, then doc id descending.

    The same order :func:`rank_sort` produces under ``ties="trec_eval"``.
    """
    if score_precision == "float32":
        # one conversion for the whole ranking, not a NumPy scalar per pair
        scores = np.asarray([s for _, s in pairs], dtype=np.float32).tolist()
    else:
        scores = [s for _, s in pairs]
    # strictly best first, as retrievers return them: already in order, nothing to sort
    if all(a > b for a, b in itertools.pairwise(scores)):
        return list(pairs)
    order = sorted(range(len(pairs)), key=lambda i: (scores[i], pairs[i][0]), reverse=True)
    return [pairs[i] for i in order]


def block_rank_order(
    counts: np.ndarray,
    scores: np.ndarray,
    doc_ids: np.ndarray,
    ties: TieRule = "trec_eval",
    score_precision: ScorePrecision = "float32",
) -> tuple[np.ndarray, np.ndarray]:
    """Rank order for many rankings laid end to end: ranking ``i`` is the next
    ``counts[i]`` rows of ``scores`` and ``doc_ids``.

    Returns the permutation of the rows that puts each ranking in rank order
    (:func:`rank_sort`'s order, so each ranking stays in its own block), and
    per ranking whether it moved. The per-query records list every ranking in
    rank order: at 10k rankings of 100 this is one sort, which for rankings
    already in order (a run file written by evalframe) runs in linear time.
    A NaN score goes last, where the metric engine ranks it.
    """
    counts = np.asarray(counts, dtype=np.int64)
    block = np.repeat(np.arange(counts.size, dtype=np.int64), counts)
    order = rank_sort(block, sort_scores(scores, score_precision), doc_ids, ties)
    moved = np.zeros(counts.size, dtype=bool)
    moved[block[order != np.arange(order.size)]] = True
    return order, moved
