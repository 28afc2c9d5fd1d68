"""A cold dense run on Cranfield (1,400 documents, 225 queries) against ``dense_direct.py``.

Each round runs, each in its own process: ``dense_direct.py`` (the model, one
encode of the documents, one of the queries, one matrix product) and
``python -m evalframe corpus=cranfield dataset=cranfield retriever=dense``
with an empty cache folder (so the model loads and every document and query
is encoded). Records wall and CPU time, peak RSS, and the documents encoded
per second (evalframe's from the embedding cache's ``meta.json``).

    .venv/bin/python bench/dense_cranfield.py [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from child import machine, measure  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "dense_cranfield.json")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="evalframe-bench-dense-"))
    env = {**os.environ, "EVALFRAME_TRACKING": "none"}
    rows: dict[str, list[dict[str, Any]]] = {"direct": [], "evalframe cold": []}
    try:
        for r in range(args.rounds):
            timing, out = measure(
                [sys.executable, str(HERE / "dense_direct.py")], env=env, cwd=work
            )
            direct = json.loads(out.strip().splitlines()[-1])
            rows["direct"].append({**timing, **direct})
            cache = work / f"cache-{r}"
            command = [
                *(sys.executable, "-m", "evalframe", "corpus=cranfield", "dataset=cranfield"),
                *("retriever=dense", "depth=100", f"hydra.run.dir={work / f'run-{r}'}"),
            ]
            timing, _ = measure(command, env={**env, "EVALFRAME_CACHE_DIR": str(cache)}, cwd=work)
            meta = json.loads(next((cache / "dense").glob("*/meta.json")).read_text())
            timing["documents_per_second"] = meta["documents_per_second"]
            timing["encode_seconds"] = meta["encode_seconds"]
            rows["evalframe cold"].append(timing)
            print(
                f"round {r + 1}: direct {rows['direct'][-1]['wall_s']:.1f}s, "
                f"evalframe {timing['wall_s']:.1f}s",
                flush=True,
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result = {
        "machine": machine(),
        "runs": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    base = min(x["wall_s"] for x in rows["direct"])
    print("\n| run | wall s (min) | CPU s (median) | / direct | docs/s (median) | peak RSS MB |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, xs in rows.items():
        best = min(x["wall_s"] for x in xs)
        cpu = statistics.median(x["cpu_s"] for x in xs)
        dps = statistics.median(x["documents_per_second"] for x in xs)
        peak = max(x["peak_mb"] for x in xs)
        print(f"| {name} | {best:.1f} | {cpu:.1f} | {best / base:.2f}x | {dps:.1f} | {peak:.0f} |")


if __name__ == "__main__":
    main()
