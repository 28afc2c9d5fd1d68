"""A bm25 run through evalframe, cold and warm, beside bm25s called directly, in one session.

On the data of ``retrieval_data.py`` (100k documents x 5k queries by
default), each round runs, each in its own process, one after the other:

* ``direct``: ``bm25_direct.py``, bm25s's batch API on the same files;
* ``cold``: ``python -m evalframe`` with an empty cache folder (the bm25
  index is built, every query is retrieved);
* ``warm``: the same command again (index and rankings come from the cache);
* with ``--baseline SRC``, ``baseline cold`` and ``baseline warm``: the same
  two with an earlier checkout's code (``bench/at_source.py``), own cache.

For each it records the wall time (from process start to exit) and the peak
resident memory (``ru_maxrss`` of that process), and it checks that the
cold and warm runs' rankings are the direct script's (every doc id, every
score) and that their metrics are those of the direct run scored by the same
metric engine, to the last digit. pytrec_eval scores the direct run as an
outside reference. Prints a Markdown table; the raw figures go to
``bench/results/pipeline.json``.

    .venv/bin/python bench/pipeline.py [--docs 100000] [--queries 5000] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from child import compile_sources, measure  # noqa: E402
from retrieval_data import default_dir, generate_in_child  # noqa: E402

PY = sys.executable
#: CPU seconds (user + system) of each child, in the order they ran.
CPU: list[float] = []


def run_child(args: list[str], env: dict[str, str] | None) -> tuple[float, float, str]:
    """(wall seconds, peak RSS MB, stdout) of one child process; its CPU seconds in CPU[-1]."""
    timing, out = measure(args, env=env, cwd=HERE.parent)
    CPU.append(timing["cpu_s"])
    return timing["wall_s"], timing["peak_mb"], out


def read_run(path: Path) -> dict[str, list[tuple[str, float]]]:
    run: dict[str, list[tuple[str, float]]] = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            qid, _, doc, _, score, _ = line.split()
            run.setdefault(qid, []).append((doc, float(score)))
    return run


def metrics_of(golden: Path, run_file: Path) -> dict[str, float]:
    """The direct run scored by evalframe's metric engine with the pipeline's default metrics."""
    from omegaconf import OmegaConf

    from evalframe.assess.results import aggregate
    from evalframe.core.reader import read_jsonl
    from evalframe.core.types import GoldenQuery, GoldenSet, Ranking, Run
    from evalframe.metrics import Policies, evaluate, parse_metric

    conf = OmegaConf.load(HERE.parent / "conf" / "metrics" / "default.yaml")
    metrics = [parse_metric(m) for m in conf.measures]
    policies = Policies(**OmegaConf.to_container(conf.policies))  # type: ignore[arg-type]
    golden_set = GoldenSet.build(
        "g",
        [
            GoldenQuery(id=r["id"], text=r["question"], judgments=r["expected_chunks"])
            for _, r in read_jsonl(golden)
        ],
    )
    run = Run(rankings={q: Ranking.from_pairs(q, pairs) for q, pairs in read_run(run_file).items()})
    scores = evaluate(metrics, golden_set, run, policies)
    return {str(m): aggregate(scores.values[m]).mean for m in metrics}


def trec_reference(golden: Path, run_file: Path) -> dict[str, float]:
    """nDCG@10, AP and P@5 of the direct run by pytrec_eval, an outside reference."""
    import pytrec_eval

    from evalframe.core.reader import read_jsonl

    qrels = {r["id"]: dict(r["expected_chunks"]) for _, r in read_jsonl(golden)}
    run = {q: dict(pairs) for q, pairs in read_run(run_file).items()}
    for q in qrels:
        run.setdefault(q, {})
    per = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "map", "P.5"}).evaluate(run)
    n = len(qrels)
    return {
        "nDCG@10": sum(v["ndcg_cut_10"] for v in per.values()) / n,
        "AP": sum(v["map"] for v in per.values()) / n,
        "P@5": sum(v["P_5"] for v in per.values()) / n,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=5_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "pipeline.json")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an override for the evalframe runs (e.g. analysis.failures.enabled=false)",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="SRC",
        help="also run cold and warm with an earlier checkout (bench/at_source.py), each round",
    )
    args = parser.parse_args()
    # what a user's second run costs: no recompiling of every module (see child.py)
    compile_sources(HERE.parent, *([args.baseline] if args.baseline else []))

    data = default_dir(args.docs, args.queries)
    corpus, golden = data / "corpus.jsonl", data / "golden.jsonl"
    if not corpus.is_file() or not golden.is_file():
        generate_in_child(args.docs, args.queries, data)
    work = Path(tempfile.mkdtemp(prefix="evalframe-bench-pipeline-"))
    env = {**os.environ, "EVALFRAME_TRACKING": "none", "HYDRA_FULL_ERROR": "1"}
    kinds = ["cold", "warm"] + (["baseline cold", "baseline warm"] if args.baseline else [])
    timings: dict[str, list[tuple[float, float]]] = {k: [] for k in ["direct", *kinds]}
    cpu: dict[str, list[float]] = {k: [] for k in ["direct", *kinds]}
    loads: list[float] = [os.getloadavg()[0]]
    checks: dict[str, Any] = {}
    try:
        for r in range(args.rounds):
            direct_run = work / f"direct-{r}.run"
            wall, peak, out = run_child(
                [PY, str(HERE / "bm25_direct.py"), str(corpus), str(golden), str(direct_run)], env
            )
            timings["direct"].append((wall, peak))
            cpu["direct"].append(CPU[-1])
            steps = json.loads(out.strip().splitlines()[-1])["seconds"]
            checks.setdefault("direct_steps", []).append(steps)
            for kind in kinds:
                baseline = kind.startswith("baseline")
                cache = work / f"cache-{r}{'-baseline' if baseline else ''}"
                out_dir = work / f"{kind.replace(' ', '-')}-{r}"
                launcher = (
                    [str(HERE / "at_source.py"), str(args.baseline)]
                    if baseline
                    else ["-m", "evalframe"]
                )
                command = [
                    PY,
                    *launcher,
                    f"dataset.path={golden}",
                    f"corpus.path={corpus}",
                    f"hydra.run.dir={out_dir}",
                    *args.set,
                ]
                wall, peak, _ = run_child(command, {**env, "EVALFRAME_CACHE_DIR": str(cache)})
                timings[kind].append((wall, peak))
                cpu[kind].append(CPU[-1])
                same = read_run(out_dir / "run.trec") == read_run(direct_run)
                checks.setdefault(f"{kind}_run_equals_direct", []).append(same)
                got = json.loads((out_dir / "metrics.json").read_text())
                want = metrics_of(golden, direct_run)
                checks.setdefault(f"{kind}_metrics_equal_direct", []).append(
                    all(got[m] == v for m, v in want.items())
                )
            loads.append(os.getloadavg()[0])
            done = ", ".join(f"{k} {v[-1][0]:.1f}s" for k, v in timings.items())
            print(f"round {r + 1}: {done}", flush=True)
        checks["metrics"] = metrics_of(golden, direct_run)
        checks["pytrec_eval_on_direct"] = trec_reference(golden, direct_run)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    direct_walls = [w for w, _ in timings["direct"]]
    summary = {
        kind: {
            "min_s": min(w for w, _ in rows),
            "median_s": statistics.median(w for w, _ in rows),
            "cpu_median_s": statistics.median(cpu[kind]),
            # each round's run against the direct script of the same round
            "ratio_wall_median": statistics.median(
                w / d for (w, _), d in zip(rows, direct_walls, strict=True)
            ),
            "ratio_cpu_median": statistics.median(
                c / d for c, d in zip(cpu[kind], cpu["direct"], strict=True)
            ),
            "peak_mb": max(p for _, p in rows),
            "runs": rows,
            "cpu_s": cpu[kind],
        }
        for kind, rows in timings.items()
    }
    result = {
        "docs": args.docs,
        "queries": args.queries,
        "rounds": args.rounds,
        "overrides": args.set,
        "machine": {
            "nproc": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "load_average_1min": loads,
        },
        "summary": summary,
        "checks": checks,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    direct = summary["direct"]["min_s"]
    print()
    print(
        "| run | wall s min | wall s median | CPU s median | / direct: min wall | "
        "median of rounds, wall | median of rounds, CPU | peak RSS MB |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for kind, row in summary.items():
        print(
            f"| {kind} | {row['min_s']:.2f} | {row['median_s']:.2f} | "
            f"{row['cpu_median_s']:.2f} | {row['min_s'] / direct:.2f}x | "
            f"{row['ratio_wall_median']:.2f}x | {row['ratio_cpu_median']:.2f}x | "
            f"{row['peak_mb']:.0f} |"
        )
    print()
    print("checks:", json.dumps({k: v for k, v in checks.items() if k != "direct_steps"}))
    print("load average (1 min) over the session:", ", ".join(f"{x:.1f}" for x in loads))


if __name__ == "__main__":
    main()
