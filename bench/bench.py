"""Benchmark driver: every library x size x path, each in its own process.

    python bench/bench.py                   # generate data if missing, run all, write results
    python bench/bench.py --libs evalframe  # re-measure one library, merge into the results

Results go to ``bench/results/results.json`` (merged by library/size/path)
and a Markdown table is printed. A single run that takes longer than
``--timeout`` seconds (default 300) kills the child and is recorded as a
timeout. ranx gets one untimed warm-up run first so that its numbers are
warm (numba JIT); the warm-up's time is kept as ``first_seconds``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import selectors
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
LIBS = ["evalframe", "evalframe-trec_eval", "evalframe-dict", "ranx", "pytrec_eval", "ir_measures"]
ONLY = {"evalframe-dict": "memory", "evalframe-trec_eval": "file"}  # the one path they have
# (path, sizes): the file path also runs at 50k, the reference size.
PLAN = {"file": [10_000, 50_000, 100_000], "memory": [10_000, 100_000]}


def run_child(
    lib: str, n: int, path: str, repeats: int, timeout: float, env: dict[str, str]
) -> dict[str, Any]:
    warmup = 1 if lib == "ranx" else 0
    cmd = [
        sys.executable,
        str(HERE / "run_lib.py"),
        lib,
        str(n),
        path,
        f"--repeats={repeats}",
        f"--warmup={warmup}",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    rec: dict[str, Any] = {"lib": lib, "n": n, "path": path, "runs": [], "status": "ok"}
    # The machine may be shared: keep the load average so noisy rows can be spotted.
    rec["loadavg_before"] = os.getloadavg()[0]
    last = time.monotonic()
    while True:
        # Every stage (setup, each run) gets its own `timeout` seconds.
        if not sel.select(timeout=max(0.0, timeout - (time.monotonic() - last))):
            proc.kill()
            proc.wait()
            rec["status"] = f"timeout (> {timeout:.0f} s per run)"
            break
        line = proc.stdout.readline()
        if not line:
            proc.wait()
            if proc.returncode:
                assert proc.stderr is not None
                rec["status"] = f"error: {proc.stderr.read()[-500:]}"
            break
        last = time.monotonic()
        ev = json.loads(line)
        if ev["event"] == "ready":
            rec["setup_seconds"], rec["ready_rss_mb"] = ev["seconds"], ev["rss_mb"]
        elif ev["event"] == "start":
            rec["start_rss_mb"] = ev["rss_mb"]
        elif ev["event"] == "run":
            if ev["warmup"]:
                rec["first_seconds"] = ev["seconds"]
            else:
                rec["runs"].append(ev["seconds"])
        elif ev["event"] == "done":
            rec["means"], rec["peak_rss_mb"] = ev["means"], ev["rss_mb"]
    rec["loadavg_after"] = os.getloadavg()[0]
    if rec["runs"]:
        rec["median_seconds"] = statistics.median(rec["runs"])
        rec["min_seconds"] = min(rec["runs"])
    return rec


def machine() -> dict[str, str]:
    import numpy
    import pyarrow

    def sh(cmd: str) -> str:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout.strip()

    return {
        "nproc": sh("nproc"),
        "cpu": sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2").strip(),
        "memory": sh("free -h | awk '/Mem:/ {print $2}'"),
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "pyarrow": pyarrow.__version__,
    }


def table(results: list[dict[str, Any]]) -> str:
    nan = float("nan")
    rows = [
        "| path | queries | library | median s | min s | runs (s) | peak RSS MB "
        "| RSS before timing MB | load avg |",
        "|---|---:|---|---:|---:|---|---:|---:|---:|",
    ]
    order = {lib: i for i, lib in enumerate(LIBS)}
    for r in sorted(results, key=lambda r: (r["path"], r["n"], order.get(r["lib"], 99))):
        med = f"{r['median_seconds']:.2f}" if "median_seconds" in r else r["status"]
        low = f"{min(r['runs']):.2f}" if r["runs"] else ""
        load = f"{r['loadavg_before']:.1f}" if "loadavg_before" in r else "?"
        runs = ", ".join(f"{x:.2f}" for x in r["runs"])
        rows.append(
            f"| {r['path']} | {r['n']:,} | {r['lib']} | {med} | {low} | {runs} | "
            f"{r.get('peak_rss_mb', nan):.0f} | {r.get('ready_rss_mb', nan):.0f} | {load} |"
        )
    return "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--libs", nargs="+", default=LIBS, choices=LIBS)
    ap.add_argument("--sizes", nargs="+", type=int, help="restrict to these sizes")
    ap.add_argument("--paths", nargs="+", default=list(PLAN), choices=list(PLAN))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "results.json")
    ap.add_argument("--table", action="store_true", help="only print the table of --out")
    args = ap.parse_args()
    if args.table:
        print(table(json.loads(args.out.read_text())["results"]))
        return

    from gen import generate_in_child

    data = HERE / "data"
    sizes = sorted({n for p in args.paths for n in PLAN[p] if not args.sizes or n in args.sizes})
    for n in sizes:
        if not (data / f"run-{n}.txt").exists():
            print(f"generating {n} queries ...", flush=True)
            # in a child: this process's peak memory would otherwise become every
            # later child's (ru_maxrss carries over fork and exec), 2 GB after 100k
            generate_in_child(n, data)
    # ranx's numba functions are cache=True; keep their cache with the data.
    env = dict(os.environ, NUMBA_CACHE_DIR=str(data / "numba-cache"))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    old = json.loads(args.out.read_text()) if args.out.exists() else {"results": []}
    results = {(r["lib"], r["n"], r["path"]): r for r in old["results"]}
    for path in args.paths:
        for n in PLAN[path]:
            if args.sizes and n not in args.sizes:
                continue
            for lib in args.libs:
                if ONLY.get(lib, path) != path:
                    continue
                print(f"{path:6} {n:>7} {lib:14}", end=" ", flush=True)
                rec = run_child(lib, n, path, args.repeats, args.timeout, env)
                results[(lib, n, path)] = rec
                print(
                    rec.get("median_seconds", rec["status"]),
                    f"{rec.get('peak_rss_mb', 0):.0f} MB",
                    flush=True,
                )
                args.out.write_text(
                    json.dumps({"machine": machine(), "results": list(results.values())}, indent=1)
                )
    print(table(list(results.values())))


if __name__ == "__main__":
    main()
