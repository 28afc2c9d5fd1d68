"""The obvious alternative to an evalframe bm25 run: bm25s's batch API called directly.

Loads the same corpus.jsonl and golden.jsonl that evalframe reads, tokenises
the corpus and all queries in one call each (the same stopwords and stemmer
as evalframe's bm25 defaults), indexes, retrieves the top k of every query in
one call, and writes a TREC run. Documents with a zero score are left out, as
the bm25 plugin leaves them out (they share no term with the query).

    .venv/bin/python bench/bm25_direct.py CORPUS GOLDEN RUN_OUT [--k 100]

Prints one JSON line: the seconds of each step, the total, and peak RSS.
"""

from __future__ import annotations

import argparse
import json
import resource
import time


def main() -> None:
    start = time.perf_counter()
    parser = argparse.ArgumentParser()
    parser.add_argument("corpus")
    parser.add_argument("golden")
    parser.add_argument("run_out")
    parser.add_argument("--k", type=int, default=100)
    args = parser.parse_args()

    import bm25s
    import Stemmer

    steps: dict[str, float] = {}
    t = time.perf_counter()
    with open(args.corpus, encoding="utf-8") as fh:
        docs = [json.loads(line) for line in fh]
    with open(args.golden, encoding="utf-8") as fh:
        queries = [json.loads(line) for line in fh]
    steps["load"] = time.perf_counter() - t

    t = time.perf_counter()
    stemmer = Stemmer.Stemmer("english")
    corpus_tokens = bm25s.tokenize(
        [d["text"] for d in docs], stopwords="en", stemmer=stemmer, show_progress=False
    )
    model = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
    model.index(corpus_tokens, show_progress=False)
    steps["index"] = time.perf_counter() - t

    t = time.perf_counter()
    query_tokens = bm25s.tokenize(
        [str(q["question"]) for q in queries],
        stopwords="en",
        stemmer=stemmer,
        return_ids=False,
        show_progress=False,
    )
    found, scores = model.retrieve(query_tokens, k=min(args.k, len(docs)), show_progress=False)
    steps["retrieve"] = time.perf_counter() - t

    t = time.perf_counter()
    ids = [str(d["id"]) for d in docs]
    with open(args.run_out, "w", encoding="utf-8") as out:
        for q, row, row_scores in zip(queries, found, scores, strict=True):
            rank = 0
            for d, s in zip(row.tolist(), row_scores.tolist(), strict=True):
                if s > 0:
                    rank += 1
                    out.write(f"{q['id']} Q0 {ids[d]} {rank} {s!r} direct\n")
    steps["write"] = time.perf_counter() - t
    steps["total"] = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": steps, "peak_mb": round(peak_mb, 1)}))


if __name__ == "__main__":
    main()
