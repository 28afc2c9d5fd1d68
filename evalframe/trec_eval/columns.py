"""From a qrels file and a run file, as read, to the metric engine's columns, trec_eval's way.

trec_eval's own conventions about its inputs live here: which queries are
evaluated (``-c``), its sort (score descending, then doc id descending),
``-M`` (cut after that sort), ``-J`` (judged documents only), and its
duplicate check, which reports a doc listed twice for one query with both
file lines.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evalframe.core.errors import DataError
from evalframe.core.reader import QrelsColumns, RunColumns, decode_ids
from evalframe.metrics.engine import Columns
from evalframe.trec_eval.measures import Compat

__all__ = ["Rows", "align", "direct_columns", "ordered_columns"]


@dataclass(frozen=True)
class Rows:
    """Which rows of the two files are in play, and their query indexes."""

    q_in: np.ndarray
    r_in: np.ndarray
    qrel_qi: np.ndarray
    run_qi: np.ndarray
    query_ids: np.ndarray  # sorted: strcmp order, as trec_eval prints queries
    present: np.ndarray  # in the run
    evaluated: np.ndarray  # scored: present, or every qrels query with -c
    extra_queries: int  # run queries not in the qrels


def align(qrels: QrelsColumns, run: RunColumns, complete: bool) -> Rows:
    """Index both files by the qrels' queries in code point order (= strcmp for UTF-8)."""
    names = np.asarray(qrels.qid_names, dtype=str)
    by_name = np.argsort(names, kind="stable")
    query_ids = names[by_name]
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
        raise _nothing_to_score(qrels, run)
    q_in = evaluated[qrel_qi]
    r_in = (run_qi >= 0) & evaluated[np.maximum(run_qi, 0)]
    extra = int((run_slot < 0).sum())
    return Rows(q_in, r_in, qrel_qi, run_qi, query_ids, present, evaluated, extra)


def _nothing_to_score(qrels: QrelsColumns, run: RunColumns) -> DataError:
    """No query is evaluated: an empty qrels file, an empty run, or query ids that
    match none of the other file's, each said of the file it is about."""
    run_name = "standard input" if run.path == "-" else run.path
    if len(qrels) == 0:
        return DataError(
            "the qrels file is empty: it holds no judgments, so no query of the run can be scored",
            path=qrels.path,
            expected="one judgment a line, 'qid iter docno rel', as in '1 0 doc7 1'",
            hint="check that this is the qrels file of the run's topics and that it was "
            "written completely; trec-eval takes the qrels first: evalframe trec-eval QRELS RUN",
        )
    if len(run) == 0:
        return DataError(
            f"the run file{' on standard input' if run.path == '-' else ''} is empty: it "
            "holds no results, so there is no query to score",
            path=run.path,
            expected="one result a line, 'qid Q0 docno rank score tag', as in "
            "'1 Q0 doc7 1 12.5 bm25'",
            hint="check that the retrieval finished writing it (with -c, a run with no "
            "results scores 0 on every qrels query)",
        )
    return DataError(
        "no queries with both results and relevance info: none of the run's query ids is "
        "in the qrels file",
        path=run.path,
        got=f"{_some(run.qid_names)} in {run_name}; {_some(qrels.qid_names)} in {qrels.path}",
        hint="check that the run and the qrels are of the same topics, and the order of the "
        "files: evalframe trec-eval QRELS RUN",
    )


def _some(names: list[str], shown: int = 3) -> str:
    """A few of a file's query ids, for a message: ``ids '1', '2', '3' (of 50)``."""
    listed = ", ".join(repr(n) for n in names[:shown])
    return f"ids {listed}" + (f" (of {len(names)})" if len(names) > shown else "")


def direct_columns(qrels: QrelsColumns, run: RunColumns, rows: Rows) -> Columns:
    """The engine's columns straight from the readers: byte ids, file order.

    ``build_matrix`` sorts into trec_eval order and stops on a duplicate in
    the run; the caller redoes a failing run with :func:`ordered_columns`
    to report it the trec_eval way.
    """
    full_q, full_r = bool(rows.q_in.all()), bool(rows.r_in.all())
    q_q = rows.qrel_qi if full_q else rows.qrel_qi[rows.q_in]
    r_q = rows.run_qi if full_r else rows.run_qi[rows.r_in]
    q_labels = qrels.labels if full_q else qrels.labels[rows.q_in]
    q_lines = qrels.lines if full_q else qrels.lines[rows.q_in]
    q_docs = qrels.docs if full_q else qrels.docs[rows.q_in]
    if q_docs.size > 1:
        _, codes = np.unique(q_docs, return_inverse=True)
        codes = codes.astype(np.int64).ravel()
        keys = q_q * (int(codes.max()) + 1) + codes
        _check_duplicates(keys, q_lines, "qrels", qrels.path, rows, q_q, q_docs)
    return Columns(
        query_ids=tuple(rows.query_ids.tolist()),
        run_q=r_q.astype(np.int64, copy=False),
        run_docs=run.docs if full_r else run.docs[rows.r_in],
        run_scores=run.scores if full_r else run.scores[rows.r_in],
        qrel_q=q_q.astype(np.int64, copy=False),
        qrel_docs=q_docs,
        qrel_labels=q_labels,
        present=rows.present,
        extra_queries=rows.extra_queries,
    )


def ordered_columns(
    qrels: QrelsColumns,
    run: RunColumns,
    rows: Rows,
    max_per_query: int | None,
    judged_only: bool,
    compat: Compat,
) -> Columns:
    """The engine's columns after trec_eval's own sort, ``-M``, duplicate checks and ``-J``.

    Also the reference for the error messages: duplicates are reported with
    both file lines, in the order trec_eval finds them.
    """
    # Rows of the queries in play, with doc ids as integer codes shared by both files.
    q_q, r_q = rows.qrel_qi[rows.q_in], rows.run_qi[rows.r_in]
    q_labels, q_lines = qrels.labels[rows.q_in], qrels.lines[rows.q_in]
    r_scores, r_lines = run.scores[rows.r_in], run.lines[rows.r_in]
    q_docs = decode_ids(qrels.docs[rows.q_in], qrels.ascii_only)
    r_docs = decode_ids(run.docs[rows.r_in], run.ascii_only)
    all_docs = np.concatenate([q_docs, r_docs])
    if all_docs.size:
        _, codes = np.unique(all_docs, return_inverse=True)
        codes = codes.astype(np.int64).ravel()
    else:
        codes = np.zeros(0, dtype=np.int64)
    ndocs = int(codes.max()) + 1 if codes.size else 1
    q_codes, r_codes = codes[: q_docs.size], codes[q_docs.size :]
    q_keys = q_q * ndocs + q_codes
    _check_duplicates(q_keys, q_lines, "qrels", qrels.path, rows, q_q, q_docs)

    # trec_eval order (score descending, then doc id descending), then -M.
    sort_scores = r_scores.astype(np.float32) if compat == "9.0.8" else r_scores
    order = np.lexsort((-r_codes, -sort_scores, r_q))
    r_q, r_codes, r_docs = r_q[order], r_codes[order], r_docs[order]
    r_scores, r_lines = r_scores[order], r_lines[order]
    if max_per_query is not None:
        counts = np.bincount(r_q, minlength=rows.query_ids.size)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        keep = (np.arange(r_q.size) - starts[r_q]) < max_per_query
        r_q, r_codes, r_docs = r_q[keep], r_codes[keep], r_docs[keep]
        r_scores, r_lines = r_scores[keep], r_lines[keep]
    r_keys = r_q * ndocs + r_codes
    _check_duplicates(r_keys, r_lines, "run", run.path, rows, r_q, r_docs)
    if judged_only:  # -J: drop retrieved docs that are not judged (label >= 0)
        korder = np.argsort(q_keys, kind="stable")
        sorted_keys, sorted_labels = q_keys[korder], q_labels[korder]
        if sorted_keys.size:
            pos = np.minimum(np.searchsorted(sorted_keys, r_keys), sorted_keys.size - 1)
            judged = (sorted_keys[pos] == r_keys) & (sorted_labels[pos] >= 0)
        else:
            judged = np.zeros(r_keys.size, dtype=bool)
        r_q, r_docs, r_scores = r_q[judged], r_docs[judged], r_scores[judged]

    return Columns(
        query_ids=tuple(rows.query_ids.tolist()),
        run_q=r_q.astype(np.int64),
        run_docs=r_docs,
        run_scores=r_scores,
        qrel_q=q_q.astype(np.int64),
        qrel_docs=q_docs,
        qrel_labels=q_labels,
        present=rows.present,
        extra_queries=rows.extra_queries,
    )


def _check_duplicates(
    keys: np.ndarray,
    lines: np.ndarray,
    what: str,
    path: str,
    rows: Rows,
    qis: np.ndarray,
    docs: np.ndarray,
) -> None:
    """Stop at the first (query, doc) pair listed twice, by file line, as trec_eval does."""
    if keys.size < 2:
        return
    order = np.lexsort((lines, keys))
    sk = keys[order]
    dup = np.flatnonzero(sk[1:] == sk[:-1])
    if not dup.size:
        return
    later = order[dup + 1]
    j = int(dup[int(np.argmin(lines[later]))])
    a, b = int(order[j]), int(order[j + 1])
    doc = docs[b]
    raise DataError(
        f"query {str(rows.query_ids[qis[b]])!r} lists doc "
        f"{doc.decode('utf-8') if isinstance(doc, bytes) else str(doc)!r} twice "
        f"(first at line {int(lines[a])})",
        path=path,
        line=int(lines[b]),
        hint=f"trec_eval stops on duplicate docs in the {what} too; remove the repeat",
    )
