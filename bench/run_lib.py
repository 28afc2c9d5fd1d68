"""One library, one size, one path: the child process the benchmark driver starts.

Every library runs in its own process so that imports, JIT caches and peak
memory do not leak between them. The child prints one JSON object per line:
``ready`` once its inputs are prepared (for the in-memory path: after the
dicts or columns are built, outside the timing), one ``run`` per timed
repetition, and ``done`` with the five means and the peak RSS
(``ru_maxrss`` of this process, so it includes the prebuilt inputs).

    python bench/run_lib.py LIB N PATH [--repeats 3] [--warmup 0]

LIB is evalframe, evalframe-dict, evalframe-trec_eval, ranx, pytrec_eval or ir_measures; PATH is
``file`` (TREC files on disk -> means) or ``memory`` (prebuilt inputs -> means).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from trec_files import read_dicts  # noqa: E402 - bench/ is put on the path just above

# The five measures, named as the issue names them; the value is each
# library's own spelling. pytrec_eval has no RR cut-off: it reports
# recip_rank over the whole ranking (see docs/performance.md).
MEASURES = ["nDCG@10", "AP", "RR@10", "R@100", "P@5"]
RANX = {
    "nDCG@10": "ndcg@10",
    "AP": "map",
    "RR@10": "mrr@10",
    "R@100": "recall@100",
    "P@5": "precision@5",
}
PYTREC = {
    "nDCG@10": "ndcg_cut_10",
    "AP": "map",
    "RR@10": "recip_rank",
    "R@100": "recall_100",
    "P@5": "P_5",
}


def emit(**event: Any) -> None:
    print(json.dumps(event), flush=True)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


# ---------------------------------------------------------------- evalframe


def evalframe_means(cols: Any) -> dict[str, float]:
    """Columns -> matrix -> kernels -> means, as evaluate() does for mapping inputs.

    evaluate() takes mappings, not Columns, so this repeats its scoring loop;
    the policies it applies are no-ops here (every query is in the run and
    has a relevant judgment).
    """
    import numpy as np

    from evalframe.metrics.engine import build_matrix
    from evalframe.metrics.measures import parse_metrics

    matrix = build_matrix(cols)
    out = {}
    for m in parse_metrics(MEASURES):
        values = m.definition.kernel(matrix, m.k, m.param_model())
        out[str(m)] = float(np.nanmean(values))
    return out


def setup_evalframe(path: str, qp: Path, rp: Path) -> Callable[[], dict[str, float]]:
    from trec_files import read_columns  # the core reader, lined up as trec_eval does

    from evalframe.metrics.measures import parse_metrics

    parse_metrics(MEASURES)  # load the metric registry (entry points) outside the timing
    if path == "file":
        return lambda: evalframe_means(read_columns(qp, rp))
    cols = read_columns(qp, rp)
    return lambda: evalframe_means(cols)


def setup_evalframe_dict(path: str, qp: Path, rp: Path) -> Callable[[], dict[str, float]]:
    """evaluate() on nested dicts: the public API most callers use."""
    import numpy as np

    from evalframe.metrics.engine import evaluate
    from evalframe.metrics.measures import parse_metrics

    if path != "memory":
        raise SystemExit("evalframe-dict has only the memory path")
    qrels, run = read_dicts(qp, rp)
    run_pairs = {q: list(d.items()) for q, d in run.items()}
    metrics = parse_metrics(MEASURES)

    def go() -> dict[str, float]:
        scores = evaluate(metrics, qrels, run_pairs)
        return {str(m): float(np.nanmean(v)) for m, v in scores.values.items()}

    return go


def setup_evalframe_trec_eval(path: str, qp: Path, rp: Path) -> Callable[[], dict[str, float]]:
    """``evalframe trec-eval``'s own entry point: its reader plus the engine."""
    from evalframe.trec_eval.drop_in import run_trec_eval

    if path != "file":
        raise SystemExit("evalframe-trec_eval has only the file path")
    wanted = ["ndcg_cut.10", "map", "recip_rank", "recall.100", "P.5"]

    def go() -> dict[str, float]:
        res = run_trec_eval(str(qp), str(rp), wanted)
        return {m: float(res.summary[PYTREC[m]]) for m in MEASURES}

    return go


# --------------------------------------------------------------------- ranx


def setup_ranx(path: str, qp: Path, rp: Path) -> Callable[[], dict[str, float]]:
    from ranx import Qrels, Run, evaluate

    names = [RANX[m] for m in MEASURES]

    def score(qrels: Any, run: Any) -> dict[str, float]:
        res = evaluate(qrels, run, names)
        return {m: float(res[RANX[m]]) for m in MEASURES}

    if path == "file":
        return lambda: score(
            Qrels.from_file(str(qp), kind="trec"), Run.from_file(str(rp), kind="trec")
        )
    qd, rd = read_dicts(qp, rp)
    return lambda: score(Qrels(qd), Run(rd))


# -------------------------------------------------------------- pytrec_eval


def setup_pytrec_eval(path: str, qp: Path, rp: Path) -> Callable[[], dict[str, float]]:
    import pytrec_eval

    wanted = {"ndcg_cut.10", "map", "recip_rank", "recall.100", "P.5"}

    def score(qrels: Any, run: Any) -> dict[str, float]:
        per_query = pytrec_eval.RelevanceEvaluator(qrels, wanted).evaluate(run)
        n = len(per_query)
        return {m: sum(v[PYTREC[m]] for v in per_query.values()) / n for m in MEASURES}

    if path == "file":

        def from_files() -> dict[str, float]:
            with open(qp) as fq, open(rp) as fr:
                return score(pytrec_eval.parse_qrel(fq), pytrec_eval.parse_run(fr))

        return from_files
    qd, rd = read_dicts(qp, rp)
    return lambda: score(qd, rd)


# -------------------------------------------------------------- ir_measures


def setup_ir_measures(path: str, qp: Path, rp: Path) -> Callable[[], dict[str, float]]:
    import ir_measures
    from ir_measures import AP, RR, P, R, nDCG

    measures = {"nDCG@10": nDCG @ 10, "AP": AP, "RR@10": RR @ 10, "R@100": R @ 100, "P@5": P @ 5}

    def score(qrels: Any, run: Any) -> dict[str, float]:
        res = ir_measures.calc_aggregate(list(measures.values()), qrels, run)
        return {m: float(res[v]) for m, v in measures.items()}

    if path == "file":
        return lambda: score(
            ir_measures.read_trec_qrels(str(qp)), ir_measures.read_trec_run(str(rp))
        )
    qd, rd = read_dicts(qp, rp)
    return lambda: score(qd, rd)


SETUP = {
    "evalframe": setup_evalframe,
    "evalframe-dict": setup_evalframe_dict,
    "evalframe-trec_eval": setup_evalframe_trec_eval,
    "ranx": setup_ranx,
    "pytrec_eval": setup_pytrec_eval,
    "ir_measures": setup_ir_measures,
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("lib", choices=sorted(SETUP))
    ap.add_argument("n", type=int)
    ap.add_argument("path", choices=["file", "memory"])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=0, help="untimed runs first (numba JIT)")
    ap.add_argument("--data", type=Path, default=HERE / "data")
    args = ap.parse_args()
    qp, rp = args.data / f"qrels-{args.n}.txt", args.data / f"run-{args.n}.txt"
    emit(event="start", rss_mb=peak_rss_mb())
    t0 = time.perf_counter()
    go = SETUP[args.lib](args.path, qp, rp)
    emit(event="ready", seconds=time.perf_counter() - t0, rss_mb=peak_rss_mb())
    means: dict[str, float] = {}
    for i in range(args.warmup + args.repeats):
        t0 = time.perf_counter()
        means = go()
        emit(event="run", i=i, warmup=i < args.warmup, seconds=time.perf_counter() - t0)
    emit(event="done", means=means, rss_mb=peak_rss_mb())


if __name__ == "__main__":
    main()
