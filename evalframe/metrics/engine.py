"""The metric engine: build a (queries x depth) label matrix once, then score.

Retrieval results arrive as rankings keyed by query. The engine flattens them
into columns, encodes doc ids as integers, sorts every ranking into trec_eval
order (score descending, then doc id descending) with one ``lexsort``, and
looks every retrieved doc up in the judgments with one ``searchsorted``. Every
metric kernel is then plain array arithmetic on the resulting matrix: there is
no per-query Python loop in scoring.

Conventions that differ between tools are explicit :class:`Policies`, applied
here in one place rather than inside each kernel.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from evalframe.errors import DataError
from evalframe.metrics.measures import Metric
from evalframe.registry import METRICS
from evalframe.types import GoldenSet, Ranking, Run

__all__ = ["Policies", "ScoreMatrix", "Scores", "build_matrix", "evaluate", "trec_order"]

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

    def per_query(self) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for i, qid in enumerate(self.query_ids):
            out[qid] = {str(m): float(v[i]) for m, v in self.values.items()}
        return out


def _flatten_run(
    run: RunLike, qindex: Mapping[str, int]
) -> tuple[np.ndarray, list[str], np.ndarray, int]:
    rankings: Iterable[tuple[str, object]]
    rankings = run.rankings.items() if isinstance(run, Run) else run.items()
    qs: list[np.ndarray] = []
    docs: list[str] = []
    scores: list[float] = []
    extra = 0
    for qid, ranking in rankings:
        i = qindex.get(str(qid))
        if i is None:
            extra += 1
            continue
        if isinstance(ranking, Ranking):
            docs.extend(ranking.doc_ids)
            scores.extend(ranking.scores)
            n = len(ranking.doc_ids)
        else:
            pairs = list(ranking)  # type: ignore[call-overload,unused-ignore]  # (doc, score) pairs
            docs.extend(str(d) for d, _ in pairs)
            scores.extend(float(s) for _, s in pairs)
            n = len(pairs)
        qs.append(np.full(n, i, dtype=np.int64))
    q = np.concatenate(qs) if qs else np.zeros(0, dtype=np.int64)
    return q, docs, np.asarray(scores, dtype=np.float64), extra


def build_matrix(
    qrels: GoldenSet | Qrels,
    run: RunLike,
    *,
    duplicates: Literal["error", "keep_first"] = "error",
    score_precision: Literal["float32", "float64"] = "float32",
) -> ScoreMatrix:
    """Join a run with judgments into a :class:`ScoreMatrix` (see module docstring)."""
    if isinstance(qrels, GoldenSet):
        judgments: dict[str, Mapping[str, int]] = {q.id: q.judgments for q in qrels.queries}
    else:
        judgments = {str(k): v for k, v in qrels.items()}
    query_ids = tuple(judgments)
    qindex = {qid: i for i, qid in enumerate(query_ids)}
    nq = len(query_ids)

    run_q, run_docs, run_scores, extra = _flatten_run(run, qindex)
    qrel_q_list: list[int] = []
    qrel_docs: list[str] = []
    qrel_labels_list: list[int] = []
    for qid, judged in judgments.items():
        i = qindex[qid]
        qrel_q_list.extend([i] * len(judged))
        qrel_docs.extend(str(d) for d in judged)
        qrel_labels_list.extend(int(v) for v in judged.values())
    qrel_q = np.asarray(qrel_q_list, dtype=np.int64)
    qrel_labels = np.asarray(qrel_labels_list, dtype=np.int64)

    # One shared integer code per doc id. np.unique sorts by code point, which
    # equals the byte order trec_eval's strcmp uses for UTF-8 ids.
    all_docs = np.asarray(run_docs + qrel_docs, dtype=str)
    if all_docs.size:
        _, codes = np.unique(all_docs, return_inverse=True)
        codes = codes.astype(np.int64).ravel()
    else:
        codes = np.zeros(0, dtype=np.int64)
    ndocs = int(codes.max()) + 1 if codes.size else 1
    run_codes, qrel_codes = codes[: len(run_docs)], codes[len(run_docs) :]

    run_key = run_q * ndocs + run_codes
    if run_key.size:
        order = np.argsort(run_key, kind="stable")
        sorted_key = run_key[order]
        dup = np.zeros(run_key.size, dtype=bool)
        dup[1:] = sorted_key[1:] == sorted_key[:-1]
        if dup.any():
            if duplicates == "error":
                first = order[np.flatnonzero(dup)[0]]
                raise DataError(
                    f"query {query_ids[run_q[first]]!r} lists doc {run_docs[first]!r} more than "
                    f"once ({int(dup.sum())} duplicate entries in the run)",
                    key="metrics.policies.duplicates",
                    hint="fix the retriever, or set metrics.policies.duplicates=keep_first "
                    "to keep each doc's first occurrence",
                )
            keep = np.ones(run_key.size, dtype=bool)
            keep[order[dup]] = False  # stable sort: the first occurrence is never marked
            run_q, run_codes, run_scores, run_key = (
                run_q[keep],
                run_codes[keep],
                run_scores[keep],
                run_key[keep],
            )

    # trec_eval order: query, then score descending, then doc id descending.
    # trec_eval stores scores as C floats, so scores equal in float32 tie.
    sort_scores = run_scores.astype(np.float32) if score_precision == "float32" else run_scores
    order = np.lexsort((-run_codes, -sort_scores, run_q))
    run_q, run_codes, run_key = run_q[order], run_codes[order], run_key[order]
    n_ret = np.bincount(run_q, minlength=nq).astype(np.int64)
    starts = np.zeros(nq, dtype=np.int64)
    if nq:
        starts[1:] = np.cumsum(n_ret)[:-1]
    rank = np.arange(run_q.size, dtype=np.int64) - starts[run_q]
    depth = int(n_ret.max()) if nq and n_ret.size else 0

    qrel_key = qrel_q * ndocs + qrel_codes
    qorder = np.argsort(qrel_key, kind="stable")
    qrel_key_sorted, qrel_labels_sorted = qrel_key[qorder], qrel_labels[qorder]
    pos = np.searchsorted(qrel_key_sorted, run_key)
    pos_clip = np.minimum(pos, max(qrel_key_sorted.size - 1, 0))
    found = (
        (pos < qrel_key_sorted.size) & (qrel_key_sorted[pos_clip] == run_key)
        if qrel_key_sorted.size
        else np.zeros(run_key.size, dtype=bool)
    )

    labels = np.zeros((nq, depth), dtype=np.int64)
    judged_mat = np.zeros((nq, depth), dtype=bool)
    if run_key.size and qrel_key_sorted.size:
        found_labels = qrel_labels_sorted[pos_clip[found]]
        labels[run_q[found], rank[found]] = found_labels
        judged_mat[run_q[found], rank[found]] = found_labels >= 0

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

    present_ids = set(run.rankings) if isinstance(run, Run) else {str(k) for k in run}
    present = np.array([qid in present_ids for qid in query_ids], dtype=bool)
    return ScoreMatrix(
        query_ids=query_ids,
        labels=labels,
        judged=judged_mat,
        n_ret=n_ret,
        ideal=ideal,
        present=present,
        extra_queries=extra,
    )


def evaluate(
    metrics: Sequence[Metric],
    qrels: GoldenSet | Qrels,
    run: RunLike,
    policies: Policies | None = None,
) -> Scores:
    """Per-query values of every metric under the given policies."""
    pol = policies or Policies()
    matrix = build_matrix(
        qrels, run, duplicates=pol.duplicates, score_precision=pol.score_precision
    )
    values: dict[Metric, np.ndarray] = {}
    skipped: dict[Metric, int] = {}
    for m in metrics:
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
        if pol.no_relevant == "skip":
            out[no_rel] = np.nan
        elif pol.no_relevant == "bob" and definition.vacuous is not None:
            out[no_rel] = definition.vacuous
        if pol.missing_query == "skip":
            out[~matrix.present] = np.nan
        values[m] = out
        skipped[m] = int(np.isnan(out).sum())
    missing = tuple(q for q, p in zip(matrix.query_ids, matrix.present, strict=True) if not p)
    return Scores(
        query_ids=matrix.query_ids,
        values=values,
        missing=missing,
        extra_queries=matrix.extra_queries,
        skipped=skipped,
    )


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
