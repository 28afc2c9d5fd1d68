"""One measured child process: wall and CPU seconds and peak memory, the same way in every script.

``os.wait4`` gives the child's own resource usage (CPU = user + system,
``ru_maxrss`` its peak resident set), so nothing else running in the
benchmark's process is counted. A child that fails stops the benchmark with
the end of its stderr.
"""

from __future__ import annotations

import compileall
import json
import os
import platform
import re
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["compile_sources", "machine", "measure", "save", "timing_table"]


def measure(
    args: list[str],
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    stdout_to: Path | None = None,
) -> tuple[dict[str, float], str]:
    """Run ``args``; ``({"wall_s", "cpu_s", "peak_mb"}, stdout)``.

    ``stdout_to``: write the child's output to that file instead (the text
    returned is then empty), for outputs too large to hold or to be compared.
    """
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as err, tempfile.TemporaryFile("w+") as captured:
        out = open(stdout_to, "wb") if stdout_to is not None else captured  # noqa: SIM115 - closed below
        try:
            proc = subprocess.Popen(args, stdout=out, stderr=err, env=env, cwd=cwd)
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            if out is not captured:
                out.close()
        wall = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            err.seek(0)
            raise SystemExit(f"{' '.join(args)} failed ({code}):\n{err.read()[-3000:]}")
        captured.seek(0)
        timing = {
            "wall_s": wall,
            "cpu_s": usage.ru_utime + usage.ru_stime,
            "peak_mb": usage.ru_maxrss / 1024,
        }
        return timing, captured.read()


def compile_sources(*checkouts: Path) -> None:
    """Byte-compile evalframe and its plugins in each checkout, as ``pip install`` does.

    An editable install compiles a module on its first import and keeps the
    ``.pyc``, so a user pays that once; with ``PYTHONDONTWRITEBYTECODE`` set
    (as in some containers, this machine's included) nothing is kept and every
    run compiles evalframe's 150 modules again, 0.3 s that no user's run
    spends. Compiling first measures what a user's second run costs.
    """
    for root in checkouts:
        for part in ("evalframe", "plugins"):
            if (root / part).is_dir():
                # not the code kept as data (evalframe/data/knowcode/code: a corpus)
                compileall.compile_dir(str(root / part), quiet=1, rx=re.compile(r"/data/"))


def machine() -> dict[str, Any]:
    """Where a result was measured, as every result file records it."""
    return {
        "nproc": os.cpu_count(),
        "platform": platform.platform(),
        "load_average_1min": os.getloadavg()[0],
    }


def save(path: Path, result: dict[str, Any]) -> None:
    """Write a result file (``bench/results/*.json``), its folder made if need be."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")


def timing_table(rows: dict[str, list[dict[str, float]]]) -> str:
    """The Markdown table of :func:`measure`'s figures per program: min and median wall,
    median CPU, the highest peak."""
    lines = [
        "| program | wall s (min) | wall s (median) | CPU s (median) | peak RSS MB |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, runs in rows.items():
        walls = [t["wall_s"] for t in runs]
        cpus = [t["cpu_s"] for t in runs]
        lines.append(
            f"| {name} | {min(walls):.2f} | {statistics.median(walls):.2f} | "
            f"{statistics.median(cpus):.2f} | {max(t['peak_mb'] for t in runs):.0f} |"
        )
    return "\n".join(lines)
