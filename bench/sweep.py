"""A 6-job k1 x b sweep on Cranfield against 6 independent runs (docs/performance.md).

Every setting starts from an empty cache folder of its own (no index, no
tokens, no rankings from an earlier setting), tracking off, and is repeated
``--repeats`` times; the median wall time and the CPU time of the processes
(children's user + system, from ``getrusage``) are printed as a Markdown table.

- ``6 runs, nothing shared``: six ``python -m evalframe`` commands, each with
  a cache folder of its own, as six people on six machines would run them;
- ``6 runs, one cache``: the same six commands sharing one cache folder (the
  default ``~/.cache/evalframe``): the first tokenises the corpus, the five
  after it reuse the tokens;
- ``-m sweep, basic``: one ``-m`` command (``retriever.k1=... retriever.b=...``),
  six jobs in one process, one cache;
- ``-m sweep, joblib x2``: the same sweep on the joblib launcher, two workers.

``--tokens`` also times the step the cache saves, in this process: building
the BM25 retriever for the six settings with an empty token cache each time,
and with the tokens cached.

    .venv/bin/python bench/sweep.py [--repeats 3] [--tokens]
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

K1 = ("0.9", "1.2", "1.5")
B = ("0.4", "0.75")
GRID = [(k1, b) for k1 in K1 for b in B]
BASE = ["+experiment=cranfield_bm25", "tracking=none"]


def _cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _evalframe(args: list[str], cache: Path, out: Path) -> None:
    env = {**os.environ, "EVALFRAME_CACHE_DIR": str(cache), "EVALFRAME_TRACKING": "none"}
    subprocess.run(
        [sys.executable, "-m", "evalframe", *args],
        cwd=out,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def independent(root: Path, shared: bool) -> None:
    for i, (k1, b) in enumerate(GRID):
        cache = root / ("cache" if shared else f"cache{i}")
        run_dir = root / f"run{i}"
        _evalframe([*BASE, f"retriever.k1={k1}", f"retriever.b={b}",
                    f"hydra.run.dir={run_dir}"], cache, root)  # fmt: skip


def sweep(root: Path, launcher: list[str]) -> None:
    _evalframe(
        ["-m", *BASE, f"retriever.k1={','.join(K1)}", f"retriever.b={','.join(B)}",
         *launcher, f"hydra.sweep.dir={root / 'sweep'}"],
        root / "cache",
        root,
    )  # fmt: skip


SETTINGS = {
    "6 runs, nothing shared": lambda root: independent(root, shared=False),
    "6 runs, one cache": lambda root: independent(root, shared=True),
    "-m sweep, basic launcher": lambda root: sweep(root, []),
    "-m sweep, joblib x2": lambda root: sweep(
        root, ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"]
    ),
}


def measure(repeats: int) -> list[tuple[str, float, float]]:
    rows = []
    for name, body in SETTINGS.items():
        walls, cpus = [], []
        for _ in range(repeats):
            with tempfile.TemporaryDirectory(prefix="evalframe-sweep-bench-") as tmp:
                cpu, start = _cpu(), time.perf_counter()
                body(Path(tmp))
                walls.append(time.perf_counter() - start)
                cpus.append(_cpu() - cpu)
        rows.append((name, statistics.median(walls), statistics.median(cpus)))
        print(f"  {name}: {rows[-1][1]:.1f} s wall, {rows[-1][2]:.1f} s CPU", file=sys.stderr)
    return rows


def tokens(repeats: int) -> tuple[float, float]:
    """Seconds to build the six retrievers: tokens never cached, and tokens cached."""
    from evalframe_bm25.retriever import BM25Config, BM25Retriever
    from evalframe_trec.cranfield import CranfieldCorpus, CranfieldCorpusConfig

    from evalframe.plugin.protocols import PluginContext

    corpus = CranfieldCorpus(CranfieldCorpusConfig(include_title=True), PluginContext()).load()
    cold, warm = [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            for i, (k1, b) in enumerate(GRID):  # a cache folder each: nothing to reuse
                ctx = PluginContext(corpus=corpus, cache_dir=Path(tmp) / str(i))
                BM25Retriever(BM25Config(k1=float(k1), b=float(b)), ctx)
            cold.append(time.perf_counter() - start)
        with tempfile.TemporaryDirectory() as tmp:
            ctx = PluginContext(corpus=corpus, cache_dir=Path(tmp) / "tokens")
            BM25Retriever(BM25Config(k1=2.0, b=0.1), ctx)  # tokenises once
            start = time.perf_counter()
            for k1, b in GRID:
                BM25Retriever(BM25Config(k1=float(k1), b=float(b)), ctx)
            warm.append(time.perf_counter() - start)
    return statistics.median(cold), statistics.median(warm)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tokens", action="store_true", help="also time the retriever builds")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"load {load:.1f} at start; median of {args.repeats}\n")  # fmt: skip
    rows = measure(args.repeats)
    base = rows[0][1]
    print("| 6 settings of k1 x b on cranfield_bm25 | wall time | CPU time | wall vs. 6 runs |")
    print("|---|---|---|---|")
    for name, wall, cpu in rows:
        print(f"| {name} | {wall:.1f} s | {cpu:.1f} s | {wall / base:.2f} |")
    if args.tokens:
        cold, warm = tokens(args.repeats)
        print(f"\nbuilding the 6 BM25 retrievers in one process: {cold:.2f} s tokenising "
              f"each time, {warm:.2f} s from cached tokens")  # fmt: skip
    print(f"\nload at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
