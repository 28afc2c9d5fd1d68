"""The metric engine: build a (queries x depth) label matrix once, then score.

Retrieval results arrive as rankings keyed by query. The engine flattens them
into columns, sorts every ranking into trec_eval order (score descending,
then doc id descending) with one argsort of packed integer keys, and looks
every retrieved doc up in the judgments with one ``searchsorted`` on
(query, doc-id hash) keys, confirming each match against the ids. Every
metric kernel is then plain array arithmetic on the resulting matrix: there is
no per-query Python loop in scoring. (See ``docs/performance.md`` for why the
join hashes ids instead of sorting them.)

Conventions that differ between tools are explicit :class:`Policies`, applied
here in one place rather than inside each kernel.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from evalframe.core.errors import ConfigError, DataError
from evalframe.core.types import GoldenSet, Ranking, Run
from evalframe.metrics.measures import Metric
from evalframe.plugin.registry import METRICS

__all__ = [
    "Columns",
    "Policies",
    "ScoreMatrix",
    "Scores",
    "build_matrix",
    "evaluate",
    "evaluate_columns",
    "project_ids",
    "to_columns",
    "trec_order",
]

Qrels = Mapping[str, Mapping[str, int]]

#: Padding of the ``ideal`` matrix: below every real label, so it is never
#: relevant, never judged and never a gain.
PAD = np.iinfo(np.int64).min // 2
RunLike = Run | Mapping[str, Ranking] | Mapping[str, Sequence[tuple[str, float]]]


class Policies(BaseModel):
    """How the engine treats the cases on which evaluation tools disagree.

    See ``docs/metrics.md`` for each policy's rationale.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    no_relevant: Literal["skip", "zero", "bob"] = Field(
        "skip",
        description=(
            "a query with no relevant judged doc (a negative example): 'skip' leaves it out of "
            "rank-metric means, 'zero' scores it 0 like trec_eval, 'bob' gives recall 1.0 "
            "(B.O.B's convention) and computes the rest"
        ),
    )
    missing_query: Literal["zero", "skip"] = Field(
        "zero",
        description=(
            "a golden query the run has no ranking for: 'zero' scores it 0 (trec_eval -c), "
            "'skip' leaves it out (trec_eval's default)"
        ),
    )
    score_precision: Literal["float32", "float64"] = Field(
        "float32",
        description=(
            "precision at which scores are compared when ranking: 'float32' makes scores "
            "equal in float32 ties, as trec_eval does (it stores scores as float)"
        ),
    )
    drop_self_matches: bool = Field(
        False,
        description=(
            "drop a retrieved doc whose id equals the query id before scoring (BEIR does "
            "this silently; here it is an explicit choice, off by default)"
        ),
    )
    duplicates: Literal["error", "keep_first"] = Field(
        "error",
        description=(
            "a doc id twice in one ranking: 'error' stops (trec_eval), 'keep_first' keeps its "
            "first occurrence in the order given"
        ),
    )


@dataclass(frozen=True)
class ScoreMatrix:
    """Judgment labels of every retrieved doc, in trec_eval rank order.

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

    @property
    def depth(self) -> int:
        return int(self.labels.shape[1])

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


@dataclass
class Scores:
    """Per-query values for every metric, aligned with ``query_ids``.

    NaN marks a query that a policy left out of that metric (a skipped
    negative example, a skipped missing query); aggregates ignore NaN.
    """

    query_ids: tuple[str, ...]
    values: dict[Metric, np.ndarray]
    missing: tuple[str, ...] = ()
    extra_queries: int = 0
    skipped: dict[Metric, int] = field(default_factory=dict)
    #: the matrix the values were computed on (set by :func:`evaluate_columns`)
    matrix: ScoreMatrix | None = field(default=None, repr=False, compare=False)

    def per_query(self) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for i, qid in enumerate(self.query_ids):
            out[qid] = {str(m): float(v[i]) for m, v in self.values.items()}
        return out


@dataclass(frozen=True)
class Columns:
    """A run and its judgments as flat columns, the engine's input format.

    ``run_q``/``qrel_q`` index into ``query_ids``. Readers of large files
    build these directly (no per-ranking Python objects); the mapping and
    model inputs of :func:`evaluate` are flattened into them first. Doc ids
    are NumPy strings; when both id columns are UTF-8 bytes (dtype ``S``)
    they are compared as bytes, which is trec_eval's order, so a file reader
    need not decode them.
    """

    query_ids: tuple[str, ...]
    run_q: np.ndarray
    run_docs: np.ndarray
    run_scores: np.ndarray
    qrel_q: np.ndarray
    qrel_docs: np.ndarray
    qrel_labels: np.ndarray
    present: np.ndarray
    extra_queries: int = 0


def _judgments(qrels: GoldenSet | Qrels, view: str | None) -> dict[str, Mapping[str, int]]:
    if isinstance(qrels, GoldenSet):
        if view is None:
            return {q.id: q.judgments for q in qrels.queries}
        if view not in qrels.projections:
            raise ConfigError(
                f"metric view {view!r} is not declared by golden set {qrels.name!r}",
                key="metrics.measures",
                expected=f"one of: {', '.join(sorted(qrels.projections)) or '(no views)'}",
                hint="a dataset declares views (e.g. 'files' for KnowCode); drop (view=...) "
                "or pick a dataset that has it",
            )
        return {q.id: q.views.get(view, {}) for q in qrels.queries}
    if view is not None:
        raise ConfigError(
            f"metric view {view!r} needs a golden set that declares views, not plain qrels",
            key="metrics.measures",
        )
    return {str(k): v for k, v in qrels.items()}


def to_columns(qrels: GoldenSet | Qrels, run: RunLike, view: str | None = None) -> Columns:
    """Flatten judgments (optionally one named view of them) and a run into :class:`Columns`."""
    judgments = _judgments(qrels, view)
    query_ids = tuple(judgments)
    qindex = {qid: i for i, qid in enumerate(query_ids)}
    rankings: Iterable[tuple[str, object]]
    rankings = run.rankings.items() if isinstance(run, Run) else run.items()
    qs: list[np.ndarray] = []
    docs: list[str] = []
    scores: list[float] = []
    present = np.zeros(len(query_ids), dtype=bool)
    extra = 0
    for qid, ranking in rankings:
        i = qindex.get(str(qid))
        if i is None:
            extra += 1
            continue
        present[i] = True
        if isinstance(ranking, Ranking):
            docs.extend(ranking.doc_ids)
            scores.extend(ranking.scores)
            n = len(ranking.doc_ids)
        else:
            pairs = list(ranking)  # type: ignore[call-overload,unused-ignore]  # (doc, score) pairs
            n = len(pairs)
            if n:
                # zip/map run in C: about twice as fast as a generator per pair
                ids, values = zip(*pairs, strict=True)
                docs.extend(map(str, ids))
                scores.extend(map(float, values))
        qs.append(np.full(n, i, dtype=np.int64))
    qrel_q: list[int] = []
    qrel_docs: list[str] = []
    qrel_labels: list[int] = []
    for qid, judged in judgments.items():
        qrel_q.extend([qindex[qid]] * len(judged))
        qrel_docs.extend(map(str, judged))
        qrel_labels.extend(map(int, judged.values()))
    if view is not None and isinstance(qrels, GoldenSet):
        docs = project_ids(docs, qrels.projections[view])
    return Columns(
        query_ids=query_ids,
        run_q=np.concatenate(qs) if qs else np.zeros(0, dtype=np.int64),
        run_docs=np.asarray(docs, dtype=str),
        run_scores=np.asarray(scores, dtype=np.float64),
        qrel_q=np.asarray(qrel_q, dtype=np.int64),
        qrel_docs=np.asarray(qrel_docs, dtype=str),
        qrel_labels=np.asarray(qrel_labels, dtype=np.int64),
        present=present,
        extra_queries=extra,
    )


def project_ids(ids: Sequence[str], pattern: str) -> list[str]:
    """Map ids into a view: the regex's first group, or the whole id when it does not match.

    ``^(.*?)::`` maps the KnowCode entity ``pkg/mod.py::Class.method`` to the
    file ``pkg/mod.py``. Each distinct id is matched once.
    """
    regex = re.compile(pattern)
    cache: dict[str, str] = {}
    out = []
    for doc in ids:
        mapped = cache.get(doc)
        if mapped is None:
            match = regex.search(doc)
            mapped = match.group(1) if match and match.groups() else doc
            cache[doc] = mapped
        out.append(mapped)
    return out


# --------------------------------------------------------------------------
# build_matrix internals. At 10^7 run lines the cost of evaluation is in id
# handling and sorting, not in metric arithmetic, so the join avoids sorting
# strings: doc ids are hashed to integers (vectorised over their characters),
# every hashed match is verified against the ids themselves, and strings are
# only compared where the order depends on them (ties in score).

_FNV = np.uint64(0x100000001B3)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_LOW32 = np.uint64(0xFFFFFFFF)
_SHIFT32 = np.uint64(32)


def _id_arrays(run_docs: np.ndarray, qrel_docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both id columns as one NumPy string kind.

    UTF-8 bytes (``S``, what a file reader has without decoding) are kept as
    bytes when both columns are bytes: byte order is trec_eval's strcmp order
    and equality is the same. Anything else becomes unicode, as before.
    """
    run_docs, qrel_docs = np.asarray(run_docs), np.asarray(qrel_docs)
    if run_docs.dtype.kind == "S" and qrel_docs.dtype.kind == "S":
        return run_docs, qrel_docs
    return run_docs.astype(str, copy=False), qrel_docs.astype(str, copy=False)


def _words(ids: np.ndarray) -> int:
    """How many uint64 words an id of this array's width spans."""
    return -(-ids.dtype.itemsize // 8)


def _hash_ids(ids: np.ndarray, n_words: int) -> np.ndarray:
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


def _top32(h: np.ndarray) -> np.ndarray:
    h >>= _SHIFT32
    return h.astype(np.uint32)


def _descending_key(scores: np.ndarray) -> np.ndarray:
    """Unsigned integers whose ascending order is the scores' descending order.

    The IEEE bit pattern, with negatives' bits flipped, orders like the
    numbers. -0.0 ties with 0.0 and NaN sorts last, as ``lexsort`` on
    ``-scores`` does.
    """
    utype = np.uint32 if scores.dtype == np.float32 else np.uint64
    top = utype(1) << utype(8 * scores.dtype.itemsize - 1)
    bits = (scores + scores.dtype.type(0)).view(utype)  # + 0 turns -0.0 into 0.0
    ascending = np.where(bits & top, ~bits, bits | top)
    key = ~ascending
    key[np.isnan(scores)] = ~utype(0)
    return np.asarray(key)


def _trec_sort(run_q: np.ndarray, sort_scores: np.ndarray, run_docs: np.ndarray) -> np.ndarray:
    """Permutation into trec_eval order: query, score descending, doc id descending.

    One stable argsort of a packed uint64 (query in the high 32 bits, the
    score's descending key, or its top 32 bits for float64, in the low 32):
    a run already in that order, as most run files are, sorts in linear
    time. Rows whose packed keys tie are then re-sorted by the full score
    and the doc id; only they have their strings compared.
    """
    desc = _descending_key(sort_scores)
    # built in place: at 10^7 rows every temporary array is 80 MB
    packed = run_q.astype(np.uint64)
    packed <<= _SHIFT32
    packed |= desc if desc.dtype == np.uint32 else desc >> _SHIFT32
    order = np.argsort(packed, kind="stable")
    sorted_packed = packed[order]
    del packed
    tie = sorted_packed[1:] == sorted_packed[:-1]
    if tie.any():
        in_group = np.zeros(order.size, dtype=bool)
        in_group[1:] |= tie
        in_group[:-1] |= tie
        group = np.cumsum(np.concatenate([[True], ~tie]))  # group id per sorted position
        pos = np.flatnonzero(in_group)
        rows = order[pos]
        # np.unique sorts by code point (or byte), trec_eval's strcmp order for UTF-8.
        _, doc_rank = np.unique(run_docs[rows], return_inverse=True)
        # stable, so rows equal in everything keep the order they were given in
        sub = np.lexsort((-doc_rank.ravel().astype(np.int64), desc[rows], group[pos]))
        order[pos] = rows[sub]
    return order


def _later_occurrences(q: np.ndarray, docs: np.ndarray) -> tuple[np.ndarray, int | None]:
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


def _duplicate_candidates(
    run_q: np.ndarray, rank: np.ndarray, h32: np.ndarray, nq: int, depth: int
) -> np.ndarray:
    """Positions (in the given row order) whose (query, doc hash) occurs more than once.

    Sorting each query's hashes in a (queries x depth) matrix finds repeats
    with one vectorised row-wise sort; the padding is distinct and above
    every 32-bit hash so it never matches.
    """
    if run_q.size < 2:
        return np.zeros(0, dtype=np.int64)
    if run_q.size == nq * depth:  # every query has `depth` rows, in order: a reshape
        mat = h32.reshape(nq, depth).copy()
    else:
        pad = np.arange(depth, dtype=np.uint64) + (_LOW32 + np.uint64(1))
        mat = np.broadcast_to(pad, (nq, depth)).copy()
        mat[run_q, rank] = h32
    mat.sort(axis=1)
    rep = mat[:, 1:] == mat[:, :-1]
    if not rep.any():
        return np.zeros(0, dtype=np.int64)
    qi, ci = np.nonzero(rep)
    wanted = np.unique((qi.astype(np.uint64) << _SHIFT32) | mat[qi, ci + 1])
    packed = (run_q.astype(np.uint64) << _SHIFT32) | h32
    at = np.minimum(np.searchsorted(wanted, packed), wanted.size - 1)
    return np.flatnonzero(wanted[at] == packed)


def _as_text(doc: object) -> str:
    return doc.decode("utf-8", "replace") if isinstance(doc, bytes) else str(doc)


def build_matrix(
    qrels: GoldenSet | Qrels | Columns,
    run: RunLike | None = None,
    *,
    duplicates: Literal["error", "keep_first", "keep_position"] = "error",
    score_precision: Literal["float32", "float64"] = "float32",
    drop_self_matches: bool = False,
) -> ScoreMatrix:
    """Join a run with judgments into a :class:`ScoreMatrix` (see module docstring).

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
    run_docs, qrel_docs = _id_arrays(cols.run_docs, cols.qrel_docs)

    if drop_self_matches and run_q.size:
        # BEIR drops a retrieved doc whose id equals the query id; only on request here.
        qid_arr = np.asarray(query_ids, dtype=str)
        if run_docs.dtype.kind == "S":
            qid_arr = np.char.encode(qid_arr, "utf-8")
        keep_self = run_docs != qid_arr[run_q]
        run_q, run_scores, run_docs = run_q[keep_self], run_scores[keep_self], run_docs[keep_self]

    # trec_eval order: query, then score descending, then doc id descending.
    # trec_eval stores scores as C floats, so scores equal in float32 tie.
    sort_scores = (
        np.asarray(run_scores, dtype=np.float32)
        if score_precision == "float32"
        else np.asarray(run_scores, dtype=np.float64)
    )
    # `order` maps rank-ordered rows back to input rows; the (large) string
    # column is never permuted, only read where a row needs its id.
    in_q = run_q  # input order, for the keep_first policy and error messages
    order = _trec_sort(in_q, sort_scores, run_docs)
    run_q, run_scores = in_q[order], np.asarray(run_scores, dtype=np.float64)[order]
    n_words = max(_words(run_docs), _words(qrel_docs))
    # the top 32 bits of each id's hash, in rank order (uint32: half the memory)
    run_h32 = _top32(_hash_ids(run_docs, n_words))[order]

    def ranks(q: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
        n_ret = np.bincount(q, minlength=nq).astype(np.int64)
        starts = np.zeros(nq, dtype=np.int64)
        if nq:
            starts[1:] = np.cumsum(n_ret)[:-1]
        depth = int(n_ret.max()) if nq and n_ret.size else 0
        return n_ret, np.arange(q.size, dtype=np.int64) - starts[q], depth

    n_ret, rank, depth = ranks(run_q)

    # Duplicate (query, doc) pairs: hashes find the candidates, the ids decide.
    shadowed = np.zeros(run_q.size, dtype=bool)
    cand = _duplicate_candidates(run_q, rank, run_h32, nq, depth)
    if cand.size and duplicates == "keep_position":
        # In rank order, every occurrence of a (query, doc) after the first is shadowed.
        later, _ = _later_occurrences(run_q[cand], run_docs[order[cand]])
        shadowed[cand[later]] = True
    elif cand.size:
        inputs = np.sort(order[cand])  # the same rows, in the order they were given
        later, first = _later_occurrences(in_q[inputs], run_docs[inputs])
        if first is not None and duplicates == "error":
            row = int(inputs[first])
            raise DataError(
                f"query {query_ids[in_q[row]]!r} lists doc {_as_text(run_docs[row])!r} more "
                f"than once ({int(later.sum())} duplicate entries in the run)",
                key="metrics.policies.duplicates",
                hint="fix the retriever, or set metrics.policies.duplicates=keep_first "
                "to keep each doc's first occurrence",
            )
        if first is not None:  # keep_first: drop the later occurrences, in input order
            drop = np.zeros(in_q.size, dtype=bool)
            drop[inputs[later]] = True
            keep = ~drop[order]  # what remains is still in trec order
            order, run_q, run_scores = order[keep], run_q[keep], run_scores[keep]
            run_h32, shadowed = run_h32[keep], shadowed[keep]
            n_ret, rank, depth = ranks(run_q)

    # Join with the judgments on (query, doc hash) packed into one uint64,
    # then confirm each match with the ids (a 32-bit hash can collide).
    qrel_key = (qrel_q.astype(np.uint64) << _SHIFT32) | _top32(_hash_ids(qrel_docs, n_words))
    qorder = np.argsort(qrel_key, kind="stable")
    qrel_key_sorted = qrel_key[qorder]
    same = np.flatnonzero(qrel_key_sorted[1:] == qrel_key_sorted[:-1])
    if same.size and (qrel_docs[qorder[same]] != qrel_docs[qorder[same + 1]]).any():
        # Two judged docs of one query share a hash: the lookup would be
        # ambiguous, so use exact codes (np.unique over the ids) instead.
        _, codes = np.unique(np.concatenate([qrel_docs, run_docs]), return_inverse=True)
        codes = codes.ravel().astype(np.uint64)
        qrel_key = (qrel_q.astype(np.uint64) << _SHIFT32) | codes[: qrel_docs.size]
        run_h32 = codes[qrel_docs.size :][order]
        qorder = np.argsort(qrel_key, kind="stable")
        qrel_key_sorted = qrel_key[qorder]
    run_key = run_q.astype(np.uint64)
    run_key <<= _SHIFT32
    run_key |= run_h32
    del run_h32
    labels = np.zeros((nq, depth), dtype=np.int64)
    judged_mat = np.zeros((nq, depth), dtype=bool)
    flat = run_q * depth
    flat += rank  # rows are in rank order: one flat scatter per matrix
    del rank
    if run_q.size == nq * depth:  # every ranking is full: the scores are the matrix
        score_mat = run_scores.reshape(nq, depth)
    else:
        score_mat = np.full((nq, depth), np.nan, dtype=np.float64)
        score_mat.ravel()[flat] = run_scores
    if run_key.size and qrel_key_sorted.size:
        pos = np.searchsorted(qrel_key_sorted, run_key)
        np.minimum(pos, qrel_key_sorted.size - 1, out=pos)
        matched = qrel_key_sorted[pos] == run_key
        del run_key
        matched &= ~shadowed
        hit = np.flatnonzero(matched)
        qrow = qorder[pos[hit]]
        exact = qrel_docs[qrow] == run_docs[order[hit]]
        hit, qrow = hit[exact], qrow[exact]
        found_labels = qrel_labels[qrow]
        labels.ravel()[flat[hit]] = found_labels
        judged_mat.ravel()[flat[hit]] = found_labels >= 0

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


def evaluate(
    metrics: Sequence[Metric],
    qrels: GoldenSet | Qrels,
    run: RunLike,
    policies: Policies | None = None,
) -> Scores:
    """Per-query values of every metric under the given policies.

    Metrics on a view (``R(view=files)@5``) are scored on that view's
    judgments, with run ids projected into it; one matrix is built per view.
    """
    pol = policies or Policies()
    matrices: dict[str | None, ScoreMatrix] = {}
    for view in dict.fromkeys(m.view for m in metrics) or [None]:
        matrices[view] = build_matrix(
            to_columns(qrels, run, view),
            duplicates="keep_position" if view is not None else pol.duplicates,
            score_precision=pol.score_precision,
            drop_self_matches=pol.drop_self_matches,
        )
    base = matrices.get(None) or next(iter(matrices.values()))
    values, skipped = _apply_policies(metrics, matrices, pol)
    missing = tuple(q for q, p in zip(base.query_ids, base.present, strict=True) if not p)
    return Scores(
        query_ids=base.query_ids,
        values=values,
        missing=missing,
        extra_queries=base.extra_queries,
        skipped=skipped,
    )


def evaluate_columns(
    metrics: Sequence[Metric], columns: Columns, policies: Policies | None = None
) -> Scores:
    """:func:`evaluate` for pre-built :class:`Columns` (a columnar file reader's output).

    Applies the same policies; the returned :class:`Scores` carries the
    :class:`ScoreMatrix` in ``matrix``. Metrics on views need :func:`evaluate`
    (the view's projection of the ids is made from a golden set).
    """
    pol = policies or Policies()
    viewed = [str(m) for m in metrics if m.view is not None]
    if viewed:
        raise ConfigError(
            f"metric {viewed[0]!r} is on a view, which pre-built columns do not have",
            key="metrics.measures",
            hint="use evaluate() with a golden set that declares the view",
        )
    matrix = build_matrix(
        columns,
        duplicates=pol.duplicates,
        score_precision=pol.score_precision,
        drop_self_matches=pol.drop_self_matches,
    )
    values, skipped = _apply_policies(metrics, {None: matrix}, pol)
    return Scores(
        query_ids=matrix.query_ids,
        values=values,
        missing=tuple(q for q, p in zip(matrix.query_ids, matrix.present, strict=True) if not p),
        extra_queries=matrix.extra_queries,
        skipped=skipped,
        matrix=matrix,
    )


def _apply_policies(
    metrics: Sequence[Metric], matrices: Mapping[str | None, ScoreMatrix], pol: Policies
) -> tuple[dict[Metric, np.ndarray], dict[Metric, int]]:
    """Every metric's kernel values, with the policies applied (NaN: left out)."""
    values: dict[Metric, np.ndarray] = {}
    skipped: dict[Metric, int] = {}
    for m in metrics:
        matrix = matrices[m.view]
        definition = m.definition
        raw = np.asarray(definition.kernel(matrix, m.k, m.param_model()), dtype=np.float64)
        if raw.shape != (len(matrix.query_ids),):
            raise DataError(
                f"metric {str(m)!r} returned shape {raw.shape}; a kernel must return one "
                f"value per query ({len(matrix.query_ids)})",
                hint=f"fix the kernel in {METRICS.get(m.name).module}",
            )
        out = raw.copy()
        no_rel = matrix.num_rel(m.rel) == 0
        if definition.applies_to == "negatives":
            out[~no_rel] = np.nan  # scored on negative examples only, whatever the policy
        elif pol.no_relevant == "skip":
            out[no_rel] = np.nan
        elif pol.no_relevant == "bob" and definition.vacuous is not None:
            out[no_rel] = definition.vacuous
        if pol.missing_query == "skip":
            out[~matrix.present] = np.nan
        # under "zero" a missing query is scored as an empty ranking, which
        # every rank metric scores 0 (and Abstained, rightly, scores 1)
        values[m] = out
        skipped[m] = int(np.isnan(out).sum())
    return values, skipped


def trec_order(
    pairs: Sequence[tuple[str, float]],
    score_precision: Literal["float32", "float64"] = "float32",
) -> list[tuple[str, float]]:
    """One ranking in trec_eval order: score descending, then doc id descending.

    The same order :func:`build_matrix` produces, for displaying a ranking.
    """
    if score_precision == "float32":
        return sorted(pairs, key=lambda p: (float(np.float32(p[1])), p[0]), reverse=True)
    return sorted(pairs, key=lambda p: (p[1], p[0]), reverse=True)
