"""A run's flat rows (``Run.rows``, ``run_rows``) and the engine's columns made from them.

The rows are derived data kept with a run: a run file's reader hands them
over, anything else is flattened once. Whichever way they come, the
engine's columns must be exactly those of flattening the rankings one by one
(the mapping path of ``to_columns``, which never looks at rows).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given

from evalframe.core.reader import read_run_columns
from evalframe.core.types import GoldenQuery, GoldenSet, Ranking, Run, RunRows
from evalframe.metrics import evaluate, parse_metrics
from evalframe.metrics.columns import Columns, run_rows, to_columns
from tests.strategies import PROPERTY_SETTINGS, Case, cases


def _run(case: Case) -> Run:
    return Run(rankings={qid: Ranking.from_pairs(qid, pairs) for qid, pairs in case.run.items()})


def _assert_same(a: Columns, b: Columns) -> None:
    assert a.query_ids == b.query_ids
    assert a.extra_queries == b.extra_queries
    for name in ("run_q", "run_scores", "qrel_q", "qrel_labels", "present"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    # a run file's ASCII ids stay bytes, and the judged ids then too (the engine
    # compares bytes as it compares strings): the same ids either way
    for name in ("run_docs", "qrel_docs"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype.kind in "SU" and y.dtype.kind in "SU"
        assert x.astype(str).tolist() == y.astype(str).tolist(), name


@PROPERTY_SETTINGS
@given(cases())
def test_columns_from_rows_are_the_rankings_flattened_one_by_one(case: Case) -> None:
    """Extra queries are left out and counted, missing ones marked absent, empty
    rankings present with no rows: as the per-ranking path does it."""
    run = _run(case)
    by_rows = to_columns(case.qrels, run)
    assert run.rows() is not None  # made once, kept for the per-query records
    _assert_same(by_rows, to_columns(case.qrels, dict(run.rankings)))
    _assert_same(to_columns(case.qrels, run), by_rows)  # the kept rows, used again


@PROPERTY_SETTINGS
@given(cases())
def test_rows_given_as_the_run_are_the_rankings_flattened_one_by_one(case: Case) -> None:
    """Flat rows made elsewhere (the page's curves make them from a run folder's
    records) are a run to the engine, with no ranking built."""
    rows = run_rows(_run(case))
    _assert_same(to_columns(case.qrels, rows), to_columns(case.qrels, dict(_run(case).rankings)))


@pytest.mark.parametrize("kind", ["U", "S"], ids=["str ids", "a run file's ASCII bytes"])
def test_rows_given_as_the_run_are_scored_on_a_view_too(kind: str) -> None:
    golden = GoldenSet.build(
        "kc",
        [GoldenQuery(id="q1", text="t", judgments={"a.py::f": 1}, views={"files": {"a.py": 1}})],
        projections={"files": r"^(.*?)::"},
    )
    rows = RunRows(
        ("q1",),
        np.array([3], dtype=np.int64),
        np.array(["b.py::g", "a.py::h", "a.py::f"], dtype=kind),
        np.array([3.0, 2.0, 1.0]),
    )
    metrics = parse_metrics(["R(view=files)@2", "RR"])
    got = evaluate(metrics, golden, rows)
    # by hand: a.py is the file of rank 2; the entity a.py::f is at rank 3
    assert {str(m): v.tolist() for m, v in got.values.items()} == {
        "R(view=files)@2": [1.0],
        "RR": [1 / 3],
    }


@pytest.mark.parametrize("doc", ["d9", "dé"])
def test_a_run_files_rows_come_from_the_reader(tmp_path: Path, doc: str) -> None:
    path = tmp_path / "run.trec"
    path.write_text(
        f"q2 Q0 d7 1 3.5 t\nq1 Q0 d1 1 2.0 t\nq2 Q0 {doc} 2 1.25 t\nq1 Q0 d3 2 1.0 t\n",
        encoding="utf-8",
    )
    run = read_run_columns(path).to_run()
    rows = run.rows()
    assert rows is not None
    assert rows.query_ids == ("q2", "q1")  # first appearance, as the rankings are keyed
    assert rows.counts.tolist() == [2, 2]
    # ASCII ids as the bytes read (a quarter of the memory), others decoded
    assert rows.doc_ids.dtype.kind == ("S" if doc.isascii() else "U")
    assert [d.decode() if isinstance(d, bytes) else d for d in rows.doc_ids.tolist()] == [
        "d7",
        doc,
        "d1",
        "d3",
    ]
    assert rows.scores.tolist() == [3.5, 1.25, 2.0, 1.0]
    assert run_rows(run) is rows
    qrels = {"q1": {"d3": 1, "é": 1}, "q2": {doc: 2}}  # an unretrieved judged id, not ASCII
    _assert_same(to_columns(qrels, run), to_columns(qrels, dict(run.rankings)))
    scores = evaluate(parse_metrics(["RR", "nDCG@10"]), qrels, run)
    by_rankings = evaluate(parse_metrics(["RR", "nDCG@10"]), qrels, dict(run.rankings))
    for metric, values in scores.values.items():
        np.testing.assert_array_equal(values, by_rankings.values[metric])
    # by hand: q1 ranks d1 (2.0) over d3 (1.0), q2 d7 (3.5) over the judged id (1.25)
    assert scores.values[parse_metrics(["RR"])[0]].tolist() == [1 / 2, 1 / 2]
    ascii_qrels = {"q1": {"d3": 1}, "q2": {doc: 2}}
    _assert_same(to_columns(ascii_qrels, run), to_columns(ascii_qrels, dict(run.rankings)))


def test_rows_are_derived_data_not_part_of_the_run() -> None:
    ranking = Ranking(query_id="q1", doc_ids=("d1", "d2"), scores=(2.0, 1.0))
    run = Run(rankings={"q1": ranking})
    plain = Run(rankings={"q1": ranking})
    run_rows(run)
    assert run.rows() is not None and plain.rows() is None
    assert run == plain  # equality is the rankings' and metadata's, with rows or without
    assert run.model_copy().rows() is run.rows()  # the same rankings: the rows hold
    # other rankings: the kept rows no longer describe them
    other = run.model_copy(
        update={"rankings": {"q1": ranking.model_copy(update={"scores": (1.0, 2.0)})}}
    )
    assert other.rows() is None
    assert run_rows(other).scores.tolist() == [1.0, 2.0]
    run.release_rows()  # the pipeline lets them go once the engine and the records are done
    assert run.rows() is None and run == plain


def test_rows_for_other_queries_are_refused() -> None:
    run = Run(rankings={"q1": Ranking(query_id="q1")})
    rows = RunRows(("q1", "q2"), np.zeros(2, dtype=np.int64), np.zeros(0, dtype=str), np.zeros(0))
    with pytest.raises(ValueError, match="2 queries do not match a run of 1"):
        run.keep_rows(rows)
