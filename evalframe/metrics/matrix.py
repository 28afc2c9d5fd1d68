"""The label matrix: a run joined with its judgments, in rank order, built once.

:func:`build_matrix` puts every ranking into rank order (score descending,
then the tie rule: see :mod:`evalframe.metrics.order`) with one argsort of
packed integer keys, and looks every retrieved doc up in the judgments with
one ``searchsorted`` on (query, doc-id hash) keys, confirming each match
against the ids (:mod:`evalframe.metrics._ids`). Every metric kernel is then
plain array arithmetic on the resulting :class:`ScoreMatrix`: there is no
per-query Python loop in scoring. (See ``docs/performance.md`` for why the
join hashes ids instead of sorting them.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from evalframe.core.errors import DataError
from evalframe.core.types import GoldenSet
from evalframe.metrics._ids import (
    SHIFT32,
    as_text,
    duplicate_candidates,
    hash_ids,
    id_arrays,
    later_occurrences,
    top32,
    word_count,
)
from evalframe.metrics.columns import Columns, Qrels, RunLike, to_columns
from evalframe.metrics.order import rank_sort, sort_scores
from evalframe.metrics.policies import ScorePrecision, TieRule

__all__ = ["PAD", "ScoreMatrix", "build_matrix"]

#: Rows joined with the judgments at a time (bounds the join's temporaries).
_JOIN_BLOCK = 1 << 18

#: Padding of the ``ideal`` matrix: below every real label, so it is never
#: relevant, never judged and never a gain.
PAD = np.iinfo(np.int64).min // 2


@dataclass(frozen=True)
class ScoreMatrix:
    """Judgment labels of every retrieved doc, in rank order (under the tie rule).

    ``labels[q, r]`` is the label of the doc at rank ``r + 1`` of query ``q``
    (0 when unjudged or past the end of the ranking); ``judged`` tells which
    were judged, where a negative label means "pooled but unjudged" as in
    trec_eval and so is *not* judged. ``ideal[q]`` holds the query's labels
    sorted descending, padded with :data:`PAD`, for normalisers such as the
    ideal DCG and for counting relevant and judged non-relevant documents.
    """

    query_ids: tuple[str, ...]
    labels: np.ndarray
    judged: np.ndarray
    n_ret: np.ndarray
    ideal: np.ndarray
    present: np.ndarray
    extra_queries: int = 0
    scores: np.ndarray | None = None

    def __post_init__(self) -> None:
        # Every metric reads the same arrays: a kernel that wrote into one (a view of
        # labels edited in place) changed the metrics computed after it without a word.
        # Read-only, such a write fails in that kernel (the engine names it).
        for array in (self.labels, self.judged, self.n_ret, self.ideal, self.present, self.scores):
            if array is not None:
                array.flags.writeable = False

    @property
    def depth(self) -> int:
        return int(self.labels.shape[1])

    def rows(self, lo: int, hi: int) -> ScoreMatrix:
        """Queries ``lo:hi`` only (views, no copy), for a row-wise kernel on a block."""
        return ScoreMatrix(
            query_ids=self.query_ids[lo:hi],
            labels=self.labels[lo:hi],
            judged=self.judged[lo:hi],
            n_ret=self.n_ret[lo:hi],
            ideal=self.ideal[lo:hi],
            present=self.present[lo:hi],
            extra_queries=self.extra_queries,
            scores=None if self.scores is None else self.scores[lo:hi],
        )

    def relevant(self, rel: int = 1, k: int | None = None) -> np.ndarray:
        """Boolean (queries x k) matrix: doc at this rank has label >= rel."""
        mat = self.labels if k is None else self.labels[:, :k]
        return mat >= rel

    def num_rel(self, rel: int = 1) -> np.ndarray:
        """Judged relevant docs per query at threshold ``rel``."""
        return np.asarray((self.ideal >= rel).sum(axis=1))

    def num_nonrel(self, rel: int = 1) -> np.ndarray:
        """Judged non-relevant docs per query (0 <= label < rel); negative labels are unjudged."""
        return np.asarray(((self.ideal >= 0) & (self.ideal < rel)).sum(axis=1))

    def nonrelevant(self, rel: int = 1, k: int | None = None) -> np.ndarray:
        """Boolean (queries x k): the doc at this rank is judged and not relevant."""
        labels = self.labels if k is None else self.labels[:, :k]
        judged = self.judged if k is None else self.judged[:, :k]
        return judged & (labels < rel)


def build_matrix(
    qrels: GoldenSet | Qrels | Columns,
    run: RunLike | None = None,
    *,
    duplicates: Literal["error", "keep_first", "keep_position"] = "error",
    score_precision: ScorePrecision = "float32",
    drop_self_matches: bool = False,
    ties: TieRule = "trec_eval",
) -> ScoreMatrix:
    """Join a run with judgments into a :class:`ScoreMatrix` (see module docstring).

    ``ties`` orders documents with equal scores: ``trec_eval`` by doc id
    descending, ``given`` as the run's rows were given for each query.

    ``duplicates="keep_position"`` is for views: a second entity of the same
    file keeps its rank but counts as neither relevant nor judged, so
    "files among the top k results" is counted once per file.
    """
    if isinstance(qrels, Columns):
        cols = qrels
    else:
        if run is None:
            raise TypeError("build_matrix needs a run unless given Columns")
        cols = to_columns(qrels, run)
    query_ids = cols.query_ids
    nq = len(query_ids)
    run_q, run_scores = np.asarray(cols.run_q, dtype=np.int64), cols.run_scores
    qrel_q = np.asarray(cols.qrel_q, dtype=np.int64)
    qrel_labels = np.asarray(cols.qrel_labels, dtype=np.int64)
    run_docs, qrel_docs = id_arrays(cols.run_docs, cols.qrel_docs)

    if drop_self_matches and run_q.size:
        # BEIR drops a retrieved doc whose id equals the query id; only on request here.
        qid_arr = np.asarray(query_ids, dtype=str)
        if run_docs.dtype.kind == "S":
            qid_arr = np.char.encode(qid_arr, "utf-8")
        keep_self = run_docs != qid_arr[run_q]
        run_q, run_scores, run_docs = run_q[keep_self], run_scores[keep_self], run_docs[keep_self]

    # Rank order: query, then score descending, then the tie rule. trec_eval
    # stores scores as C floats, so (by default) scores equal in float32 tie.
    # `order` maps rank-ordered rows back to input rows; the (large) string
    # column is never permuted, only read where a row needs its id.
    in_q = run_q  # input order, for the keep_first policy and error messages
    order = rank_sort(in_q, sort_scores(run_scores, score_precision), run_docs, ties)
    if order.size < 2**31 - 1:  # row and query numbers as int32: 40 MB less at 10^7 rows
        order = order.astype(np.int32)
    run_q, run_scores = in_q[order], np.asarray(run_scores, dtype=np.float64)[order]
    if nq < 2**31 - 1:
        run_q = run_q.astype(np.int32)
    n_words = max(word_count(run_docs), word_count(qrel_docs))
    # the top 32 bits of each id's hash, in rank order (uint32: half the memory)
    run_h32 = top32(hash_ids(run_docs, n_words))[order]

    def ranks(q: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
        """Rankings' lengths, the row where each query's ranking starts, the depth."""
        n_ret = np.bincount(q, minlength=nq).astype(np.int64)
        starts = np.zeros(nq, dtype=np.int64)
        if nq:
            starts[1:] = np.cumsum(n_ret)[:-1]
        depth = int(n_ret.max()) if nq and n_ret.size else 0
        return n_ret, starts, depth

    def rank_of(lo: int, hi: int) -> np.ndarray:
        """0-based rank of rows ``lo:hi`` (rows are in rank order within each query)."""
        rank: np.ndarray = np.arange(lo, hi, dtype=np.int64) - starts[run_q[lo:hi]]
        return rank

    n_ret, starts, depth = ranks(run_q)

    # Duplicate (query, doc) pairs: hashes find the candidates, the ids decide.
    shadowed = np.zeros(run_q.size, dtype=bool)
    full = run_q.size == nq * depth  # every ranking is full: rank order is a reshape
    cand = duplicate_candidates(run_q, None if full else rank_of(0, run_q.size), run_h32, nq, depth)
    if cand.size and duplicates == "keep_position":
        # In rank order, every occurrence of a (query, doc) after the first is shadowed.
        later, _ = later_occurrences(run_q[cand], run_docs[order[cand]])
        shadowed[cand[later]] = True
    elif cand.size:
        inputs = np.sort(order[cand])  # the same rows, in the order they were given
        later, first = later_occurrences(in_q[inputs], run_docs[inputs])
        if first is not None and duplicates == "error":
            row = int(inputs[first])
            raise DataError(
                f"query {query_ids[in_q[row]]!r} lists doc {as_text(run_docs[row])!r} more "
                f"than once ({int(later.sum())} duplicate entries in the run)",
                key="metrics.policies.duplicates",
                hint="fix the retriever, or set metrics.policies.duplicates=keep_first "
                "to keep each doc's first occurrence",
            )
        if first is not None:  # keep_first: drop the later occurrences, in input order
            drop = np.zeros(in_q.size, dtype=bool)
            drop[inputs[later]] = True
            keep = ~drop[order]  # what remains is still in rank order
            order, run_q, run_scores = order[keep], run_q[keep], run_scores[keep]
            run_h32, shadowed = run_h32[keep], shadowed[keep]
            n_ret, starts, depth = ranks(run_q)

    # Join with the judgments on (query, doc hash) packed into one uint64,
    # then confirm each match with the ids (a 32-bit hash can collide).
    qrel_key = (qrel_q.astype(np.uint64) << SHIFT32) | top32(hash_ids(qrel_docs, n_words))
    qorder = np.argsort(qrel_key, kind="stable")
    qrel_key_sorted = qrel_key[qorder]
    same = np.flatnonzero(qrel_key_sorted[1:] == qrel_key_sorted[:-1])
    if same.size and (qrel_docs[qorder[same]] != qrel_docs[qorder[same + 1]]).any():
        # Two judged docs of one query share a hash: the lookup would be
        # ambiguous, so use exact codes (np.unique over the ids) instead.
        _, codes = np.unique(np.concatenate([qrel_docs, run_docs]), return_inverse=True)
        codes = codes.ravel().astype(np.uint64)
        qrel_key = (qrel_q.astype(np.uint64) << SHIFT32) | codes[: qrel_docs.size]
        run_h32 = codes[qrel_docs.size :][order]
        qorder = np.argsort(qrel_key, kind="stable")
        qrel_key_sorted = qrel_key[qorder]
    labels = np.zeros((nq, depth), dtype=np.int64)
    judged_mat = np.zeros((nq, depth), dtype=bool)
    if full:  # the scores are the matrix
        score_mat = run_scores.reshape(nq, depth)
    else:
        score_mat = np.full((nq, depth), np.nan, dtype=np.float64)
    # Rows are in rank order, so row i is cell (run_q[i], rank i) of every matrix:
    # one flat scatter per matrix. Done a block of rows at a time, so that the
    # keys, positions and cells of 10^7 rows never exist all at once.
    for lo in range(0, run_q.size, _JOIN_BLOCK):
        hi = min(lo + _JOIN_BLOCK, run_q.size)
        flat = run_q[lo:hi].astype(np.int64)
        flat *= depth
        flat += rank_of(lo, hi)
        if not full:
            score_mat.ravel()[flat] = run_scores[lo:hi]
        if not qrel_key_sorted.size:
            continue
        run_key = run_q[lo:hi].astype(np.uint64)
        run_key <<= SHIFT32
        run_key |= run_h32[lo:hi]
        pos = np.searchsorted(qrel_key_sorted, run_key)
        np.minimum(pos, qrel_key_sorted.size - 1, out=pos)
        matched = qrel_key_sorted[pos] == run_key
        matched &= ~shadowed[lo:hi]
        hit = np.flatnonzero(matched)
        qrow = qorder[pos[hit]]
        exact = qrel_docs[qrow] == run_docs[order[lo + hit]]
        hit, qrow = hit[exact], qrow[exact]
        found_labels = qrel_labels[qrow]
        labels.ravel()[flat[hit]] = found_labels
        judged_mat.ravel()[flat[hit]] = found_labels >= 0
    del run_h32

    # Ideal ordering: each query's judged labels, descending.
    counts = np.bincount(qrel_q, minlength=nq) if qrel_q.size else np.zeros(nq, dtype=np.int64)
    width = int(counts.max()) if counts.size and counts.max() > 0 else 0
    ideal = np.full((nq, width), PAD, dtype=np.int64)
    if qrel_q.size:
        iorder = np.lexsort((-qrel_labels, qrel_q))
        iq, il = qrel_q[iorder], qrel_labels[iorder]
        istarts = np.zeros(nq, dtype=np.int64)
        istarts[1:] = np.cumsum(counts)[:-1]
        ideal[iq, np.arange(iq.size) - istarts[iq]] = il

    return ScoreMatrix(
        query_ids=query_ids,
        labels=labels,
        judged=judged_mat,
        n_ret=n_ret,
        ideal=ideal,
        present=cols.present,
        extra_queries=cols.extra_queries,
        scores=score_mat,
    )
