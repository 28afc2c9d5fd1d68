"""Generate a synthetic TREC run and qrels file pair for the benchmark.

Shape (from the performance issue): ``n`` queries x 100 retrieved docs, about
8 judged docs per query with graded labels 0-3 (at least one label >= 1, so
every library agrees on which queries count), string doc ids drawn from an
8.8M-doc corpus (the size of MS MARCO passages), distinct float scores per
ranking. About 5 of the 8 judged docs are retrieved; the rest are not.

The data is a pure function of ``(n, seed)``, so every library reads the same
bytes and reruns are comparable.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

DEPTH = 100
CORPUS = 8_800_000


def _distinct_rows(rng: np.random.Generator, n: int, width: int) -> np.ndarray:
    """(n x width) doc numbers, distinct within each row (resample the few clashing rows)."""
    docs = rng.integers(0, CORPUS, size=(n, width), dtype=np.int64)
    while True:
        s = np.sort(docs, axis=1)
        bad = np.flatnonzero((s[:, 1:] == s[:, :-1]).any(axis=1))
        if bad.size == 0:
            return docs
        docs[bad] = rng.integers(0, CORPUS, size=(bad.size, width), dtype=np.int64)


def generate(n: int, out: Path, seed: int = 0) -> tuple[Path, Path]:
    rng = np.random.default_rng(seed)
    out.mkdir(parents=True, exist_ok=True)
    n_judged = 8
    # 100 retrieved + 3 judged-but-not-retrieved docs per query, all distinct.
    docs = _distinct_rows(rng, n, DEPTH + 3)
    retrieved = docs[:, :DEPTH]
    # judged: 5 random retrieved docs (any rank) and the 3 extra ones
    pick = np.argsort(rng.random((n, DEPTH)), axis=1)[:, :5]
    judged_docs = np.concatenate([np.take_along_axis(retrieved, pick, 1), docs[:, DEPTH:]], 1)
    labels = rng.choice(4, size=(n, n_judged), p=[0.4, 0.3, 0.2, 0.1]).astype(np.int64)
    labels[:, 0] = np.maximum(labels[:, 0], 1)  # every query has something relevant

    # Scores strictly decreasing with rank: distinct even in float32.
    scores = 50.0 - np.cumsum(rng.uniform(0.01, 0.2, size=(n, DEPTH)), axis=1)
    qids = np.char.add("q", np.arange(n).astype(str))

    def doc_ids(a: np.ndarray) -> pa.Array:
        return pa.array(np.char.add("D", a.ravel().astype(str)))

    run = pa.table(
        {
            "q": pa.array(np.repeat(qids, DEPTH)),
            "q0": pa.array(np.full(n * DEPTH, "Q0")),
            "doc": doc_ids(retrieved),
            "rank": pa.array(np.tile(np.arange(1, DEPTH + 1), n)),
            "score": pa.array(np.round(scores.ravel(), 4)),
            "tag": pa.array(np.full(n * DEPTH, "bench")),
        }
    )
    qrels = pa.table(
        {
            "q": pa.array(np.repeat(qids, n_judged)),
            "it": pa.array(np.zeros(n * n_judged, dtype=np.int64)),
            "doc": doc_ids(judged_docs),
            "rel": pa.array(labels.ravel()),
        }
    )
    opts = pacsv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none")
    run_path, qrels_path = out / f"run-{n}.txt", out / f"qrels-{n}.txt"
    pacsv.write_csv(run, run_path, write_options=opts)
    pacsv.write_csv(qrels, qrels_path, write_options=opts)
    return run_path, qrels_path


def generate_in_child(n: int, out: Path) -> None:
    """:func:`generate` in a process of its own (see ``retrieval_data.generate_in_child``:
    a measuring parent must not have held the generated data)."""
    command = [sys.executable, str(Path(__file__).resolve()), str(n), "--out", str(out)]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", type=int, help="number of queries")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "data")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    for path in generate(args.n, args.out, args.seed):
        print(path)


if __name__ == "__main__":
    main()
