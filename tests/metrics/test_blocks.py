"""Work done a block at a time (to bound memory on large runs) gives what one pass gives.

The engine, the tie order, the id hashing and the TREC reader cut large inputs
into blocks of about a million rows. The suite's inputs are far smaller, so
here every block size is shrunk to a few rows and the results are compared
with those of the default sizes on the same random run: ties, short
rankings, unjudged and negatively judged documents, duplicates kept first,
every built-in metric.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from evalframe.core.errors import DataError
from evalframe.core.reader import parse_run, read_qrels_columns, read_run_columns, trec
from evalframe.metrics import Policies, _ids, engine, matrix, order, parse_metric
from evalframe.metrics.engine import Columns, evaluate_columns

METRICS = [
    parse_metric(m)
    for m in (
        "P@5",
        "R@10",
        "RR",
        "RR@10",
        "AP",
        "AP@10",
        "nDCG@10",
        "nDCG",
        "Hit@3",
        "Rprec",
        "bpref",
        "Judged@10",
        "NumRet",
        "NumRel",
        "NumRelRet",
        "SetP",
        "SetR",
        "SetF",
        "IPrec@0.3",
        "11pt",
    )
]


def random_columns(seed: int) -> Columns:
    rng = np.random.default_rng(seed)
    nq, pool = 60, 40
    rows_q, rows_d, rows_s = [], [], []
    for q in range(nq):
        depth = int(rng.integers(0, 25))  # short, empty and full rankings
        docs = rng.choice(pool, size=depth, replace=True)  # some repeated: kept first
        rows_q += [q] * depth
        rows_d += [f"d{d}".encode() for d in docs]
        rows_s += list(np.round(rng.random(depth), 1))  # one decimal: many ties
    judged = [(q, d) for q in range(nq) for d in rng.choice(pool, size=8, replace=False)]
    return Columns(
        query_ids=tuple(f"q{q}" for q in range(nq)),
        run_q=np.array(rows_q, dtype=np.int64),
        run_docs=np.array(rows_d, dtype="S"),
        run_scores=np.array(rows_s, dtype=np.float64),
        qrel_q=np.array([q for q, _ in judged], dtype=np.int64),
        qrel_docs=np.array([f"d{d}".encode() for _, d in judged], dtype="S"),
        qrel_labels=rng.integers(-1, 4, size=len(judged)),
        present=np.ones(nq, dtype=bool),
    )


def scores(cols: Columns, precision: str, ties: str) -> dict[str, np.ndarray]:
    policies = Policies(
        duplicates="keep_first", score_precision=precision, ties=ties, no_relevant="zero"
    )
    result = evaluate_columns(METRICS, cols, policies)
    assert result.matrix is not None
    return {
        **{str(m): v for m, v in result.values.items()},
        "labels": result.matrix.labels,
        "scores": result.matrix.scores,
    }


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize(("precision", "ties"), [("float64", "trec_eval"), ("float32", "given")])
def test_tiny_blocks_give_the_same_values(
    seed: int, precision: str, ties: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    cols = random_columns(seed)
    whole = scores(cols, precision, ties)
    monkeypatch.setattr(matrix, "_JOIN_BLOCK", 7)
    monkeypatch.setattr(order, "_BLOCK", 5)
    monkeypatch.setattr(_ids, "_BLOCK", 3)
    monkeypatch.setattr(engine, "KERNEL_CELLS", 50)
    blocked = scores(cols, precision, ties)
    assert whole.keys() == blocked.keys()
    for name, values in whole.items():
        np.testing.assert_array_equal(blocked[name], values, err_msg=name)


def test_the_run_file_read_in_tiny_blocks_gives_the_same_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cols = random_columns(4)
    lines = [
        f"{cols.query_ids[q]} Q0 {d.decode()} {i} {s!r} tag-{i % 3}\n"
        for i, (q, d, s) in enumerate(
            zip(cols.run_q.tolist(), cols.run_docs.tolist(), cols.run_scores.tolist(), strict=True)
        )
    ]
    path = tmp_path / "run.txt"
    path.write_text("".join(lines), encoding="utf-8")
    whole = parse_run(path.read_bytes(), str(path))
    monkeypatch.setattr(trec, "_STREAM_BLOCK", 64)
    streamed = read_run_columns(path)
    for name in ("qid_codes", "docs", "lines", "scores"):
        np.testing.assert_array_equal(getattr(streamed, name), getattr(whole, name), name)
    assert (streamed.qid_names, streamed.runid, streamed.ascii_only) == (
        whole.qid_names,
        whole.runid,
        whole.ascii_only,
    )
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 0\nq2 0 d9 2\n", encoding="utf-8")
    assert read_qrels_columns(qrels).labels.tolist() == [1, 0, 2]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 high t\n", "score column"),
        (b"q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2\n", "4 columns"),
        (b"q1 Q0 d1 1 0.5 t\nq1 Q0 d\x002 2 0.4 t\n", "NUL"),
    ],
)
def test_a_bad_line_found_while_streaming_is_still_located(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: bytes, message: str
) -> None:
    monkeypatch.setattr(trec, "_STREAM_BLOCK", 8)
    path = tmp_path / "run.txt"
    path.write_bytes(content)
    with pytest.raises(DataError, match=message) as err:
        read_run_columns(path)
    assert err.value.line == 2
