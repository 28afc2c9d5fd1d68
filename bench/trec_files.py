"""The benchmark's file path: evalframe's own TREC reader, into the engine's columns.

evalframe has one reader of TREC qrels and runs,
:mod:`evalframe.core.reader` (the one ``evalframe trec-eval`` and the
``run_file`` retriever use), so the benchmark measures that rather than a
reader of its own: a regular file (single spaces, as ``gen.py`` writes) is
cut with array operations and doc ids stay UTF-8 bytes (NumPy ``S``), which
the engine compares as bytes, trec_eval's strcmp order. The columns are
lined up the trec_eval way (:mod:`evalframe.trec_eval.columns`).

:func:`read_dicts` gives the other libraries' in-memory inputs from the same
reader.
"""

from __future__ import annotations

from pathlib import Path

from evalframe.core.reader import decode_ids, read_qrels_columns, read_run_columns
from evalframe.metrics.engine import Columns
from evalframe.trec_eval.columns import align, direct_columns


def read_columns(qrels_path: Path, run_path: Path) -> Columns:
    """Read a qrels file and a run file into engine columns.

    The query set is the qrels' queries that the run answers; run lines of
    other queries are dropped and counted in ``extra_queries``.
    """
    qrels, run = read_qrels_columns(qrels_path), read_run_columns(run_path)
    return direct_columns(qrels, run, align(qrels, run, complete=False))


def read_dicts(
    qrels_path: Path, run_path: Path
) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """Plain nested dicts, the common in-memory format of ranx, pytrec_eval and ir_measures."""
    qrels: dict[str, dict[str, int]] = {}
    for qid, doc, label, _ in read_qrels_columns(qrels_path).rows():
        qrels.setdefault(qid, {})[doc] = label
    columns = read_run_columns(run_path)
    docs = decode_ids(columns.docs, columns.ascii_only).tolist()
    run: dict[str, dict[str, float]] = {}
    for code, doc, score in zip(
        columns.qid_codes.tolist(), docs, columns.scores.tolist(), strict=True
    ):
        run.setdefault(columns.qid_names[code], {})[doc] = score
    return qrels, run
