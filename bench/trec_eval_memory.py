"""``evalframe trec-eval`` against NIST trec_eval's C binary: time, CPU and peak memory.

On ``gen.py``'s files (50k queries x 100 by default), each round runs both
programs, each in its own process, with and without ``-q``, and checks that
their outputs are byte for byte the same. The C binary is not shipped: build
it from https://github.com/usnistgov/trec_eval (``make``) and pass its path,
or put it on PATH as ``trec_eval``.

    .venv/bin/python bench/trec_eval_memory.py --trec-eval /tmp/trec_eval/trec_eval
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from child import machine, measure  # noqa: E402
from gen import generate_in_child  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trec-eval", default=shutil.which("trec_eval"), help="the C binary")
    parser.add_argument("--queries", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "trec_eval_memory.json")
    args = parser.parse_args()
    if not args.trec_eval:
        raise SystemExit("give the C binary: --trec-eval PATH (build it from usnistgov/trec_eval)")
    data = HERE / "data"
    run, qrels = data / f"run-{args.queries}.txt", data / f"qrels-{args.queries}.txt"
    if not run.is_file() or not qrels.is_file():
        generate_in_child(args.queries, data)
    work = Path(tempfile.mkdtemp(prefix="evalframe-bench-te-"))
    programs = {
        "trec_eval (C)": [args.trec_eval],
        "evalframe trec-eval": [sys.executable, "-m", "evalframe", "trec-eval"],
    }
    rows: dict[str, list[dict[str, float]]] = {}
    same: dict[str, bool] = {}
    try:
        for r in range(args.rounds):
            for flags in ([], ["-q"]):
                outputs = []
                for name, prefix in programs.items():
                    label = f"{name} {' '.join(flags)}".strip()
                    out = work / f"{len(outputs)}.txt"
                    rows.setdefault(label, []).append(
                        measure(
                            [*prefix, *flags, str(qrels), str(run)], cwd=HERE.parent, stdout_to=out
                        )[0]
                    )
                    outputs.append(out.read_bytes())
                    print(f"round {r + 1}: {label}: {rows[label][-1]}", flush=True)
                same[" ".join(flags) or "summary"] = outputs[0] == outputs[1]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result = {
        "queries": args.queries,
        "machine": machine(),
        "runs": rows,
        "same_output": same,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print("\n| program | wall s (median) | CPU s (median) | peak RSS MB (max) |")
    print("|---|---:|---:|---:|")
    for label, xs in rows.items():
        wall = statistics.median(x["wall_s"] for x in xs)
        cpu = statistics.median(x["cpu_s"] for x in xs)
        print(f"| {label} | {wall:.2f} | {cpu:.2f} | {max(x['peak_mb'] for x in xs):.0f} |")
    print(f"\nsame output, byte for byte: {same}")


if __name__ == "__main__":
    main()
