"""``evalframe rescore`` of a 10k-query bm25 run, beside pytrec_eval scoring the same files.

Makes the run once (``retrieval_data.py``'s 100k documents x 10k queries, a
cold ``python -m evalframe`` into ``bench/data/rescore-run``), then each round
times, each in its own process: ``evalframe rescore`` of a fresh copy of the
run folder, and a short script that reads ``run.trec`` and the judgments
with pytrec_eval's parsers and scores five of its measures (the obvious
alternative; no report, no files written), and the floor: evalframe's own
engine scoring the same inputs with nothing around it (the least a rescore
could cost on this machine, whatever its design). Rescore and the floor must
reproduce the run's ``metrics.json`` exactly. ``--baseline SRC`` times an earlier checkout's
rescore too (``git worktree add SRC <commit>``; see ``at_source.py``).

    .venv/bin/python bench/rescore.py [--rounds 3] [--baseline SRC]

The first use generates the data (``retrieval_data.py``, into bench/data/,
about 150 MB) and makes the run with a cold bm25 run (a minute or two);
later uses find both. Needs pytrec_eval (the ``bench`` extra).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from child import compile_sources, machine, measure, save, timing_table  # noqa: E402
from retrieval_data import default_dir, generate_in_child  # noqa: E402

PYTREC = """
import json, sys, pytrec_eval
run, golden = sys.argv[1], sys.argv[2]
qrels = {}
for line in open(golden, encoding="utf-8"):
    r = json.loads(line)
    qrels[r["id"]] = dict(r["expected_chunks"])
with open(run, encoding="utf-8") as fh:
    ranked = pytrec_eval.parse_run(fh)
for q in qrels:
    ranked.setdefault(q, {})
measures = {"recall.5", "P.5", "recip_rank", "ndcg_cut.10", "map"}
per = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(ranked)
print(len(per))
"""


# The least a rescore can do with evalframe's engine: the judgments read with orjson, the
# run's cached columns (what a repeat rescore reads) loaded, the seven measures scored and
# averaged; no config, no checks, no bootstrap, nothing written. Not an alternative to
# rescore, but its floor on this machine: what a redesign could at best reach.
FLOOR = """
import glob, json, sys
import numpy as np, orjson
from evalframe.core.types import RunRows
from evalframe.metrics import parse_metric
from evalframe.metrics.engine import evaluate
from evalframe.metrics.policies import Policies
golden, columns = sys.argv[1], sys.argv[2]
qrels = {}
with open(golden, "rb") as fh:
    for line in fh:
        r = orjson.loads(line)
        qrels[r["id"]] = r["expected_chunks"]
with np.load(columns, allow_pickle=False) as z:
    names, codes, qids = z["doc_names"], z["doc_codes"], z["qid_codes"]
    order = np.argsort(qids, kind="stable")
    rows = RunRows(
        tuple(z["qid_names"].tolist()),
        np.bincount(qids, minlength=z["qid_names"].size),
        names[codes][order],
        z["scores"][order],
    )
measures = [parse_metric(m) for m in ("R@5", "P@5", "RR", "RR@10", "nDCG@10", "AP", "Hit@5")]
scored = evaluate(measures, qrels, rows, Policies())
means = {str(m): float(np.mean(scored.values[m])) for m in measures}
print(json.dumps(means))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=100_000, help="corpus size (100000)")
    parser.add_argument("--queries", type=int, default=10_000, help="queries (10000)")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds (3)")
    parser.add_argument(
        "--out",
        type=Path,
        default=HERE / "results" / "rescore.json",
        help="where the figures go (bench/results/rescore.json)",
    )
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="rescore overrides"
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="SRC",
        help="also time the rescore of an earlier checkout (bench/at_source.py), each round",
    )
    args = parser.parse_args()
    # what a user's second run costs: no recompiling of every module (see child.py)
    compile_sources(HERE.parent, *([args.baseline] if args.baseline else []))
    data = default_dir(args.docs, args.queries)
    if not (data / "golden.jsonl").is_file():
        generate_in_child(args.docs, args.queries, data)
    env = {**os.environ, "EVALFRAME_TRACKING": "none"}
    stored = HERE / "data" / f"rescore-run-{args.docs}x{args.queries}"
    if not (stored / "metrics.json").is_file():
        print("making the run to re-score (a cold bm25 run) ...", flush=True)
        with tempfile.TemporaryDirectory() as cache:
            subprocess.run(
                [
                    *(sys.executable, "-m", "evalframe", f"dataset.path={data / 'golden.jsonl'}"),
                    *(f"corpus.path={data / 'corpus.jsonl'}", f"hydra.run.dir={stored}"),
                ],
                env={**env, "EVALFRAME_CACHE_DIR": cache},
                check=True,
                stdout=subprocess.DEVNULL,
            )
    rows: dict[str, list[dict[str, float]]] = {
        "evalframe rescore": [],
        "evalframe rescore, first (run.trec parsed)": [],
        "pytrec_eval": [],
        "floor: evalframe's engine on the cached columns, nothing else": [],
    }
    if args.baseline:
        rows[f"evalframe rescore at {args.baseline}"] = []
    same = []
    work = Path(tempfile.mkdtemp(prefix="evalframe-bench-rescore-"))
    # One cache folder for every rescore, of either version (the stored config names
    # the run's own, long gone), filled by one untimed rescore of each first: each timed one
    # finds what the analyses keep there (document frequencies, terms), as a user's
    # rescore does after their run.
    where = [f"output.cache_dir={work / 'cache'}", *args.set]
    try:
        shutil.copytree(stored, work / "warm-up")
        measure(
            [sys.executable, "-m", "evalframe", "rescore", str(work / "warm-up"), *where], env=env
        )
        if args.baseline:  # what the baseline keeps may be under other keys: its own warm-up
            shutil.copytree(stored, work / "warm-up-base")
            launcher = [sys.executable, str(HERE / "at_source.py"), str(args.baseline)]
            measure([*launcher, "rescore", str(work / "warm-up-base"), *where], env=env)
        for r in range(args.rounds):
            copy = work / f"run-{r}"
            shutil.copytree(stored, copy)
            # The copy's 100 MB are dirty pages: written out now, not by the first fsync
            # of the timed rescore (ext4 commits them with its journal), which would time
            # this setup instead of the command.
            os.sync()
            rows["evalframe rescore"].append(
                measure([sys.executable, "-m", "evalframe", "rescore", str(copy), *where], env=env)[
                    0
                ]
            )
            got, want = (json.loads((f / "metrics.json").read_text()) for f in (copy, stored))
            # the metrics themselves; analysis counts (failures.*) follow --set
            same.append(all(got[k] == v for k, v in want.items() if not k.startswith("failures.")))
            # A user's first rescore of a run: the same cache without the parsed run.trec
            # (columns/), which that rescore parses and keeps for the next.
            first, cache = work / f"first-{r}", work / f"cache-first-{r}"
            shutil.copytree(stored, first)
            shutil.copytree(work / "cache", cache, ignore=shutil.ignore_patterns("columns"))
            os.sync()
            command = [sys.executable, "-m", "evalframe", "rescore", str(first), *where]
            command.append(f"output.cache_dir={cache}")  # the last of two overrides wins
            rows["evalframe rescore, first (run.trec parsed)"].append(measure(command, env=env)[0])
            shutil.rmtree(first)
            if args.baseline:
                base = work / f"base-{r}"
                shutil.copytree(stored, base)
                os.sync()
                launcher = [sys.executable, str(HERE / "at_source.py"), str(args.baseline)]
                rows[f"evalframe rescore at {args.baseline}"].append(
                    measure([*launcher, "rescore", str(base), *where], env=env)[0]
                )
            pytrec = [sys.executable, "-c", PYTREC, str(stored / "run.trec")]
            rows["pytrec_eval"].append(measure([*pytrec, str(data / "golden.jsonl")], env=env)[0])
            (entry,) = (work / "cache" / "columns").glob("*.npz")
            floor = [sys.executable, "-c", FLOOR, str(data / "golden.jsonl"), str(entry)]
            timing, printed = measure(floor, env=env)
            rows["floor: evalframe's engine on the cached columns, nothing else"].append(timing)
            means = json.loads(printed)
            # the floor scores what rescore scores: the run's own means, to the last digit
            same.append(all(means[m] == want[m] for m in means))
            done = ", ".join(f"{k} {v[-1]['wall_s']:.2f}s" for k, v in rows.items())
            print(f"round {r + 1}: {done}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    save(
        args.out,
        {
            "queries": args.queries,
            "machine": machine(),
            "overrides": args.set,
            "runs": rows,
            "metrics_reproduced": same,
        },
    )
    print("\n" + timing_table(rows))
    print(f"\nrescore reproduced metrics.json exactly: {same}")


if __name__ == "__main__":
    main()
