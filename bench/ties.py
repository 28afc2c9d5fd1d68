"""What the tie rule costs: ``build_matrix`` under ``ties: trec_eval`` and ``ties: given``.

    python bench/ties.py 10000 50000      # sizes in queries (x 100 docs); generates data if missing

On the benchmark's own data (distinct scores, no ties) and on the same run
with every score rounded to two decimals (ties in almost every ranking, as a
service returning 0.83, 0.83, 0.81 ... gives), in one process on the same
prebuilt Columns: the median and the minimum of 7 timings and the tracemalloc peak of one
more. ``--before REV`` adds the engine as it was at a Git revision (its
trec_eval order, the only rule it had) to show that the new rule costs
nothing when unused. Results and their reading: docs/performance.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def _old_engine(rev: str) -> Any:
    """``evalframe/metrics/engine.py`` at ``rev``, loaded as a module of its own."""
    source = subprocess.run(
        ["git", "show", f"{rev}:evalframe/metrics/engine.py"],
        cwd=HERE.parent,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    path = Path(tempfile.mkdtemp()) / "engine_before.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("engine_before", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["engine_before"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def measure(fn: Callable[[], Any], repeats: int = 7) -> tuple[float, float, float]:
    """(median seconds, min seconds, peak MB allocated by NumPy and Python during one call)."""
    fn()  # warm
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return statistics.median(times), min(times), peak / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[10_000, 50_000])
    parser.add_argument("--before", help="a Git revision whose engine to time as well")
    args = parser.parse_args()

    from gen import generate
    from trec_files import read_columns

    from evalframe.metrics.matrix import build_matrix

    old = _old_engine(args.before) if args.before else None
    print("| queries | scores | variant | median s | min s | peak MB | min vs trec_eval |")
    print("|---:|---|---|---:|---:|---:|---:|")
    for n in args.sizes:
        qrels, run = HERE / "data" / f"qrels-{n}.txt", HERE / "data" / f"run-{n}.txt"
        if not run.is_file():
            generate(n, HERE / "data")
        cols = read_columns(qrels, run)
        # the generator's scores lie in about [40, 50]: scaled to [0.4, 0.5] and rounded
        # to two decimals, as a service printing 0.47, 0.47, 0.46 ... returns them
        tied = dataclasses.replace(cols, run_scores=np.round(cols.run_scores / 100, 2))
        share = float((tied.run_scores[1:] == tied.run_scores[:-1]).mean())
        for label, data in (("distinct", cols), (f"2 decimals ({share:.0%} equal to next)", tied)):
            variants: list[tuple[str, Callable[[], Any]]] = []
            if old is not None:
                # the old engine checks for its own Columns class
                old_cols = old.Columns(
                    **{f.name: getattr(data, f.name) for f in dataclasses.fields(data)}
                )
                variants.append(("before (trec_eval)", lambda d=old_cols: old.build_matrix(d)))
            for prec in ("float32", "float64"):
                for rule in ("trec_eval", "given"):
                    variants.append(
                        (
                            f"{rule}, {prec}",
                            lambda d=data, r=rule, p=prec: build_matrix(
                                d, ties=r, score_precision=p
                            ),
                        )
                    )
            base: dict[str, float] = {}
            for name, fn in variants:
                seconds, fastest, peak = measure(fn)
                prec = "float64" if "float64" in name else "float32"
                if name.startswith("trec_eval"):
                    base[prec] = fastest
                ref = base.get(prec)
                ratio = f"{fastest / ref:.2f}×" if ref and not name.startswith("before") else ""
                print(
                    f"| {n // 1000}k | {label} | {name} | {seconds:.3f} | {fastest:.3f} "
                    f"| {peak:.0f} | {ratio} |"
                )
                sys.stdout.flush()


if __name__ == "__main__":
    main()
