"""The engine's input format: a run and its judgments as flat columns.

Mapping and model inputs (``{qid: [(doc, score), ...]}``, :class:`Run`,
:class:`GoldenSet`) are flattened here once; readers of large files build
:class:`Columns` directly, with no per-ranking Python objects. Rows keep the
order each ranking was given in, which the ``given`` tie rule relies on.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from evalframe.core.errors import ConfigError
from evalframe.core.types import GoldenSet, Ranking, Run, RunRows

__all__ = ["Columns", "Qrels", "RunLike", "project_ids", "run_rows", "to_columns"]

Qrels = Mapping[str, Mapping[str, int]]
RunLike = Run | RunRows | Mapping[str, Ranking] | Mapping[str, Sequence[tuple[str, float]]]


@dataclass(frozen=True)
class Columns:
    """A run and its judgments as flat columns, the engine's input format.

    ``run_q``/``qrel_q`` index into ``query_ids``. Doc ids are NumPy strings;
    when both id columns are UTF-8 bytes (dtype ``S``) they are compared as
    bytes, which is trec_eval's order, so a file reader need not decode them.
    Within one query, run rows are in the order the ranking was given.
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


def run_rows(run: Run) -> RunRows:
    """``run``'s rankings as flat rows (:class:`RunRows`), made once and kept with the run.

    A run read from a file comes with them (the reader has the columns); a
    run from a retriever is flattened here, once, for the engine and the
    per-query records both.
    """
    rows = run.rows()
    if rows is not None:
        return rows
    rankings = list(run.rankings.values())
    counts = np.fromiter((len(r.doc_ids) for r in rankings), dtype=np.int64, count=len(rankings))
    total = int(counts.sum())
    rows = RunRows(
        query_ids=tuple(run.rankings),
        counts=counts,
        doc_ids=np.asarray(
            list(itertools.chain.from_iterable(r.doc_ids for r in rankings)), dtype=str
        ),
        scores=np.fromiter(
            itertools.chain.from_iterable(r.scores for r in rankings),
            dtype=np.float64,
            count=total,
        ),
    )
    run.keep_rows(rows)
    return rows


def _run_columns(
    rows: RunRows, query_ids: tuple[str, ...]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """A run's rows as the engine's run columns: query codes into ``query_ids``, doc
    ids, scores, which queries are present, and how many run queries are not asked."""
    qindex = {qid: i for i, qid in enumerate(query_ids)}
    codes = np.fromiter(
        (qindex.get(q, -1) for q in rows.query_ids), dtype=np.int64, count=len(rows.query_ids)
    )
    asked = codes >= 0
    present = np.zeros(len(query_ids), dtype=bool)
    present[codes[asked]] = True
    run_q = np.repeat(codes, rows.counts)
    docs, scores = rows.doc_ids, rows.scores
    if not asked.all():
        keep = run_q >= 0
        run_q, docs, scores = run_q[keep], docs[keep], scores[keep]
    if docs.size == 0:
        docs = np.zeros(0, dtype=str)
    return run_q, docs, scores, present, int((~asked).sum())


def to_columns(qrels: GoldenSet | Qrels, run: RunLike, view: str | None = None) -> Columns:
    """Flatten judgments (optionally one named view of them) and a run into :class:`Columns`.

    A run given as :class:`RunRows` (flat rows made elsewhere, such as a run
    folder's records) is taken as it is, with no ranking built."""
    judgments = _judgments(qrels, view)
    query_ids = tuple(judgments)
    qrel_columns = _qrel_columns(judgments, query_ids)
    if isinstance(run, Run | RunRows) and view is None:
        rows = run if isinstance(run, RunRows) else run_rows(run)
        run_q, run_docs, run_scores, present, extra = _run_columns(rows, query_ids)
        qrel_q, qrel_docs, qrel_labels = qrel_columns
        if run_docs.dtype.kind == "S" and "".join(qrel_docs.tolist()).isascii():
            # a run file's ASCII ids are bytes: judged ids as bytes too, so the engine
            # compares bytes (trec_eval's order) rather than decoding a million ids
            qrel_docs = qrel_docs.astype("S")
        return Columns(
            query_ids, run_q, run_docs, run_scores, qrel_q, qrel_docs, qrel_labels, present, extra
        )
    qindex = {qid: i for i, qid in enumerate(query_ids)}
    rankings: Iterable[tuple[str, object]]
    if isinstance(run, RunRows):  # on a view: the rows as (doc, score) pairs a query
        ends = np.cumsum(run.counts).tolist()
        starts = [0, *ends[:-1]]
        ids = run.doc_ids.astype(str).tolist()  # a run file's ASCII bytes decoded
        values = run.scores.tolist()
        rankings = (
            (qid, list(zip(ids[a:b], values[a:b], strict=True)))
            for qid, a, b in zip(run.query_ids, starts, ends, strict=True)
        )
    else:
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
    if view is not None and isinstance(qrels, GoldenSet):
        docs = project_ids(docs, qrels.projections[view])
    return Columns(
        query_ids,
        np.concatenate(qs) if qs else np.zeros(0, dtype=np.int64),
        np.asarray(docs, dtype=str),
        np.asarray(scores, dtype=np.float64),
        *qrel_columns,
        present,
        extra,
    )


def _qrel_columns(
    judgments: Mapping[str, Mapping[str, int]], query_ids: tuple[str, ...]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The judgments as the engine's qrel columns: query codes, doc ids, labels."""
    qrel_q: list[int] = []
    qrel_docs: list[str] = []
    qrel_labels: list[int] = []
    for i, judged in enumerate(judgments.values()):
        qrel_q.extend([i] * len(judged))
        qrel_docs.extend(map(str, judged))
        qrel_labels.extend(map(int, judged.values()))
    return (
        np.asarray(qrel_q, dtype=np.int64),
        np.asarray(qrel_docs, dtype=str),
        np.asarray(qrel_labels, dtype=np.int64),
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
