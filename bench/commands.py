"""The commands around a run at 10k queries, each in its own process, beside their alternatives.

* ``evalframe compare`` of two run folders of the 10k-query bm25 run that
  ``rescore.py`` makes (the run, and a re-score of it at depth 10, so the two
  differ), against a short script with scipy: both runs' ``per_query.jsonl``
  read, then for each metric the paired t-test and a paired randomization test
  of 10,000 sign flips (``scipy.stats.permutation_test``), the numbers
  ``compare`` reports overall (it adds bootstrap intervals, effect sizes,
  per-slice tests, a correction and the report).
* ``evalframe golden validate`` of the 10k-question golden set (duplicates,
  near-duplicates, sizes, labels). Its alternative is the earlier checkout
  (``--baseline``): the pairwise near-duplicate loop took 100 s there.

Both were quadratic in the queries until the fourth session of 2026-11-26;
this script is how a later change would see it again.

    .venv/bin/python bench/commands.py [--rounds 3] [--baseline SRC]
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
from retrieval_data import default_dir  # noqa: E402

SCIPY_COMPARE = """
import json, sys
import numpy as np
from scipy import stats

def values(folder):
    out = {}
    for line in open(f"{folder}/per_query.jsonl", encoding="utf-8"):
        r = json.loads(line)
        for m, v in r["metrics"].items():
            out.setdefault(m, {})[r["query_id"]] = v
    return out

a, b = values(sys.argv[1]), values(sys.argv[2])
for m in sorted(set(a) & set(b)):
    shared = [q for q in b[m] if q in a[m] and a[m][q] is not None and b[m][q] is not None]
    x = np.array([a[m][q] for q in shared])
    y = np.array([b[m][q] for q in shared])
    t = stats.ttest_rel(y, x)
    p = stats.permutation_test(
        (y - x,), np.mean, permutation_type="samples", n_resamples=10_000,
        vectorized=True, batch=500, random_state=0,
    )
    print(m, (y - x).mean(), t.pvalue, p.pvalue)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "commands.json")
    parser.add_argument("--baseline", type=Path, metavar="SRC", help="an earlier checkout too")
    args = parser.parse_args()
    compile_sources(HERE.parent, *([args.baseline] if args.baseline else []))
    stored = HERE / "data" / f"rescore-run-{args.docs}x{args.queries}"
    golden = default_dir(args.docs, args.queries) / "golden.jsonl"
    if not (stored / "metrics.json").is_file():
        raise SystemExit(f"{stored} is missing: run bench/rescore.py first (it makes the run)")
    env = {**os.environ, "EVALFRAME_TRACKING": "none"}
    work = Path(tempfile.mkdtemp(prefix="evalframe-bench-commands-"))
    own = [sys.executable, "-m", "evalframe"]
    programs = {"evalframe": own}
    if args.baseline:
        programs[f"evalframe at {args.baseline}"] = [
            sys.executable,
            str(HERE / "at_source.py"),
            str(args.baseline),
        ]
    rows: dict[str, list[dict[str, float]]] = {}
    same: dict[str, list[bool]] = {"compare": [], "validate": []}
    try:
        a, b = work / "a", work / "b"
        shutil.copytree(stored, a)
        opts = ["report.html=false", "analysis.failures.enabled=false"]
        subprocess.run(
            [*own, "rescore", str(a), "--out", str(b), "depth=10", *opts],
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        for r in range(args.rounds):
            for name, launcher in programs.items():
                out = work / f"compare-{name.split()[-1].replace('/', '_')}-{r}"
                timing, _ = measure(
                    [*launcher, "compare", str(a), str(b), "--out", str(out)], env=env
                )
                rows.setdefault(f"{name} compare", []).append(timing)
                report = json.loads((out / "comparison.json").read_text())
                same["compare"].append(report.get("paired_queries") == args.queries)
                timing, text = measure([*launcher, "golden", "validate", str(golden), "--json"])
                rows.setdefault(f"{name} golden validate", []).append(timing)
                same["validate"].append(json.loads(text)["queries"] == args.queries)
            timing, _ = measure([sys.executable, "-c", SCIPY_COMPARE, str(a), str(b)], env=env)
            rows.setdefault("scipy paired tests", []).append(timing)
            done = ", ".join(f"{k} {v[-1]['wall_s']:.2f}s" for k, v in rows.items())
            print(f"round {r + 1}: {done}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    save(args.out, {"queries": args.queries, "machine": machine(), "runs": rows, "checks": same})
    print("\n" + timing_table(rows))
    print(f"\nchecks: {json.dumps(same)}")


if __name__ == "__main__":
    main()
