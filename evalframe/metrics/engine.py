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

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from evalframe.errors import ConfigError, DataError
from evalframe.metrics.measures import Metric
from evalframe.registry import METRICS
from evalframe.types import GoldenSet, Ranking, Run

__all__ = [
    "Columns",
    "Policies",
    "ScoreMatrix",
    "Scores",
    "build_matrix",
    "evaluate",
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
    model inputs of :func:`evaluate` are flattened into them first.
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
            docs.extend(str(d) for d, _ in pairs)
            scores.extend(float(s) for _, s in pairs)
            n = len(pairs)
        qs.append(np.full(n, i, dtype=np.int64))
    qrel_q: list[int] = []
    qrel_docs: list[str] = []
    qrel_labels: list[int] = []
    for qid, judged in judgments.items():
        qrel_q.extend([qindex[qid]] * len(judged))
        qrel_docs.extend(str(d) for d in judged)
        qrel_labels.extend(int(v) for v in judged.values())
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
    run_q, run_scores = cols.run_q, cols.run_scores
    qrel_q, qrel_labels = cols.qrel_q, cols.qrel_labels

    if drop_self_matches and run_q.size:
        # BEIR drops a retrieved doc whose id equals the query id; only on request here.
        qid_arr = np.asarray(query_ids, dtype=str)
        keep_self = cols.run_docs != qid_arr[run_q]
        run_q, run_scores = run_q[keep_self], run_scores[keep_self]
        run_docs_arr = cols.run_docs[keep_self]
    else:
        run_docs_arr = cols.run_docs

    # One shared integer code per doc id. np.unique sorts by code point, which
    # equals the byte order trec_eval's strcmp uses for UTF-8 ids.
    all_docs = np.concatenate([run_docs_arr.astype(str), cols.qrel_docs.astype(str)])
    if all_docs.size:
        _, codes = np.unique(all_docs, return_inverse=True)
        codes = codes.astype(np.int64).ravel()
    else:
        codes = np.zeros(0, dtype=np.int64)
    ndocs = int(codes.max()) + 1 if codes.size else 1
    n_run = run_docs_arr.size
    run_codes, qrel_codes = codes[:n_run], codes[n_run:]

    run_key = run_q * ndocs + run_codes
    shadowed = np.zeros(run_key.size, dtype=bool)
    if run_key.size:
        order = np.argsort(run_key, kind="stable")
        sorted_key = run_key[order]
        dup = np.zeros(run_key.size, dtype=bool)
        dup[1:] = sorted_key[1:] == sorted_key[:-1]
        if dup.any():
            if duplicates == "error":
                first = order[np.flatnonzero(dup)[0]]
                doc = str(run_docs_arr[first])
                raise DataError(
                    f"query {query_ids[run_q[first]]!r} lists doc {doc!r} more "
                    f"than once ({int(dup.sum())} duplicate entries in the run)",
                    key="metrics.policies.duplicates",
                    hint="fix the retriever, or set metrics.policies.duplicates=keep_first "
                    "to keep each doc's first occurrence",
                )
            if duplicates == "keep_first":
                keep = np.ones(run_key.size, dtype=bool)
                keep[order[dup]] = False  # stable sort: the first occurrence is never marked
                run_q, run_codes, run_scores, run_key = (
                    run_q[keep],
                    run_codes[keep],
                    run_scores[keep],
                    run_key[keep],
                )
                shadowed = np.zeros(run_key.size, dtype=bool)
            else:
                shadowed[order[dup]] = True  # keep_position: decided after sorting below

    # trec_eval order: query, then score descending, then doc id descending.
    # trec_eval stores scores as C floats, so scores equal in float32 tie.
    sort_scores = run_scores.astype(np.float32) if score_precision == "float32" else run_scores
    order = np.lexsort((-run_codes, -sort_scores, run_q))
    run_q, run_codes, run_key = run_q[order], run_codes[order], run_key[order]
    run_scores, shadowed = run_scores[order], shadowed[order]
    if shadowed.any():
        # In rank order, every occurrence of a (query, doc) after the first is shadowed.
        by_key = np.argsort(run_key, kind="stable")
        later = np.zeros(run_key.size, dtype=bool)
        later[1:] = run_key[by_key][1:] == run_key[by_key][:-1]
        shadowed = np.zeros(run_key.size, dtype=bool)
        shadowed[by_key[later]] = True
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
        (pos < qrel_key_sorted.size) & (qrel_key_sorted[pos_clip] == run_key) & ~shadowed
        if qrel_key_sorted.size
        else np.zeros(run_key.size, dtype=bool)
    )

    labels = np.zeros((nq, depth), dtype=np.int64)
    judged_mat = np.zeros((nq, depth), dtype=bool)
    score_mat = np.full((nq, depth), np.nan, dtype=np.float64)
    score_mat[run_q, rank] = run_scores
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
    missing = tuple(q for q, p in zip(base.query_ids, base.present, strict=True) if not p)
    return Scores(
        query_ids=base.query_ids,
        values=values,
        missing=missing,
        extra_queries=base.extra_queries,
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
