"""``evalframe trec-eval``: a drop-in for NIST trec_eval on the evalframe metric engine.

Reads a qrels file and a TREC run with the core's reader
(:mod:`evalframe.core.reader.trec`), maps trec_eval's measure names
(``ndcg_cut.10``, ``P.5``, ``iprec_at_recall..5``) onto canonical evalframe
metrics (``nDCG@10``, ``P@5``, ``IPrec@0.5``, :mod:`.measures`), brings the
files into the engine's columns the trec_eval way (:mod:`.columns`), scores
them with the metric engine and prints the result byte for byte as trec_eval
does (:mod:`.output`)::

    measure<22 chars, left-justified>\\tqid|all\\tvalue

Only the conventions that are trec_eval's own live in this package: its
command line, its measure names and parameter syntax, its output order and
format, which queries it evaluates, ``-M``/``-J`` (applied to the run before
scoring), the geometric means (``gm_map``, ``gm_bpref``) and the summed
counts. Every per-query number comes from an evalframe
:class:`~evalframe.metrics.Metric`.

See ``docs/trec-eval.md`` for the supported measures and the differences.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import math
import sys
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, TextIO

import numpy as np

from evalframe.core.errors import ConfigError, DataError
from evalframe.core.reader import (
    QrelsColumns,
    RunColumns,
    parse_run,
    read_qrels_columns,
    read_run_columns,
)
from evalframe.metrics import Policies
from evalframe.metrics.engine import Columns, evaluate_columns
from evalframe.trec_eval.columns import align, direct_columns, ordered_columns
from evalframe.trec_eval.measures import (
    ALL_TREC,
    MEASURE_ORDER,
    SUPPORTED,
    UNSUPPORTED,
    Compat,
    Context,
    judged_metric,
    parse_measures,
    supported_list,
)
from evalframe.trec_eval.measures import plan as _plan
from evalframe.trec_eval.output import TrecEvalResult
from evalframe.trec_eval.output import format_line as _format  # noqa: F401 - the tests' name

__all__ = [
    "ALL_TREC",
    "MEASURE_ORDER",
    "SUPPORTED",
    "UNSUPPORTED",
    "TrecEvalResult",
    "main",
    "parse_measures",
    "run_trec_eval",
]

_MIN_GEO_MEAN = 0.00001


def _read(qrels_path: str, run_path: str) -> tuple[QrelsColumns, RunColumns]:
    qrels = read_qrels_columns(qrels_path)
    if run_path == "-":
        return qrels, parse_run(sys.stdin.buffer.read(), "-")
    return qrels, read_run_columns(run_path)


def run_trec_eval(
    qrels_path: str,
    run_path: str,
    measures: Sequence[str] = (),
    *,
    per_query: bool = False,
    complete: bool = False,
    summary: bool = True,
    rel_level: int = 1,
    max_per_query: int | None = None,
    judged_only: bool = False,
    compat: Compat = "10.0",
) -> TrecEvalResult:
    """Evaluate like ``trec_eval [-q] [-c] [-n] [-l N] [-M N] [-J] [-m ...] qrels run``."""
    if rel_level < 1:
        raise ConfigError(
            f"-l {rel_level}: the relevance level must be at least 1",
            hint="evalframe's binary metrics take rel >= 1",
        )
    if max_per_query is not None and max_per_query < 0:
        raise ConfigError("-M must not be negative")
    outputs = _plan(parse_measures(list(measures), compat), rel_level, compat)
    qrels, run = _read(qrels_path, run_path)
    _check_gains(outputs, qrels)
    policies = Policies(
        no_relevant="zero",  # trec_eval scores a query with no relevant doc (as 0 mostly)
        missing_query="zero" if complete else "skip",
        # trec_eval 10.0 keeps scores as double, 9.0.8 as float (ties in float32)
        score_precision="float32" if compat == "9.0.8" else "float64",
        duplicates="error",
    )
    rows = align(qrels, run, complete)
    ordered: Callable[[], Columns] = partial(
        ordered_columns, qrels, run, rows, max_per_query, judged_only, compat
    )
    direct = max_per_query is None and not judged_only
    # Without -M and -J the engine sorts into trec_eval order and finds the
    # run's duplicates itself, on the byte ids as read.
    cols = direct_columns(qrels, run, rows) if direct else ordered()
    runid = run.runid
    if direct and run_path != "-":
        # The engine needs only `cols`; the run's query codes and line numbers
        # (80 MB at 50k x 100) are read again if a duplicate must be reported.
        del run

        def reread() -> Columns:
            again = read_run_columns(run_path)
            return ordered_columns(qrels, again, rows, max_per_query, judged_only, compat)

        ordered = reread

    r_q = cols.run_q
    depth = max(1, int(np.bincount(r_q).max()) if r_q.size else 1)
    metrics = list(dict.fromkeys(m for o in outputs for m in o.metrics))
    if any(o.root == "num_nonrel_judged_ret" for o in outputs):
        metrics.append(judged_metric(depth))
    try:
        scores = evaluate_columns(metrics, cols, policies)
    except DataError:
        if not direct:
            raise
        ordered()  # a duplicate in the run: reported with its file lines, as trec_eval does
        raise  # pragma: no cover - the engine and trec_eval's checks find the same duplicates
    matrix = scores.matrix
    assert matrix is not None  # evaluate_columns sets it
    present = rows.present
    stand_in = (~present) if (complete and compat == "10.0" and not judged_only) else None
    ctx = Context(values=scores.values, matrix=matrix, depth=depth, stand_in=stand_in)

    idx = np.flatnonzero(rows.evaluated)
    shown = idx if (compat == "10.0" or not complete) else np.flatnonzero(present)
    n = int(idx.size)
    result = TrecEvalResult(
        runid=runid,
        num_q=n,
        measures=[o.name for o in outputs],
        equivalents={o.name: [str(m) for m in o.metrics] for o in outputs},
        kinds={o.name: o.kind for o in outputs},
    )
    values: dict[str, Any] = {}
    for o in outputs:
        if o.aggregate in ("runid", "num_q"):
            continue
        computed = o.compute(ctx)
        if o.kind == "str":
            values[o.name] = computed
            continue
        arr = np.asarray(computed, dtype=np.float64)
        if np.isnan(arr[idx]).any():  # pragma: no cover - policies make none here
            raise AssertionError(f"{o.name}: a policy skipped an evaluated query")
        values[o.name] = arr

    if per_query:
        for i in shown:
            row: dict[str, float | int | str] = {}
            for o in outputs:
                if o.aggregate in ("runid", "num_q", "gm"):
                    continue  # printed in the summary only
                v = values[o.name][i]
                row[o.name] = (
                    str(v) if o.kind == "str" else (int(v) if o.kind == "int" else float(v))
                )
            result.per_query.append((str(rows.query_ids[i]), row))
    if summary:
        for o in outputs:
            if o.aggregate == "runid":
                result.summary[o.name] = runid
            elif o.aggregate == "num_q":
                result.summary[o.name] = n
            elif o.aggregate == "none":
                continue
            elif o.aggregate == "sum":
                if o.name == "num_rel" and complete:
                    # trec_eval -c recounts from the qrels: every label > 0, whatever -l says
                    result.summary[o.name] = int((qrels.labels > 0).sum())  # all qrels queries
                else:
                    result.summary[o.name] = int(np.cumsum(values[o.name][idx])[-1])
            elif o.aggregate == "gm":
                logs = np.log(np.maximum(values[o.name][idx], _MIN_GEO_MEAN))
                result.summary[o.name] = math.exp(float(np.cumsum(logs)[-1]) / n)
            else:  # trec_eval adds the queries in order, then divides
                result.summary[o.name] = float(np.cumsum(values[o.name][idx])[-1]) / n
    return result


def _check_gains(outputs: Sequence[Any], qrels: QrelsColumns) -> None:
    """Refuse an ``ndcg`` gain map whose ideal DCG can overflow a double on these qrels.

    Each gain is finite (:func:`~evalframe.trec_eval.measures.parse_measures`), but
    their sum need not be: ``ndcg.1=1e308,2=1.7e308`` made one query's DCG and ideal DCG
    inf, and nDCG inf/inf = NaN (it crashed); had only the ideal overflowed, nDCG would
    have been 0 without a word. The ideal DCG of a query is at most its largest gain
    times the discounts of its relevant documents, so this is checked before scoring.
    """
    from evalframe.metrics.builtin import GainParams

    maps = [
        (o.name, str(dict(m.params)["gain"]))
        for o in outputs
        if o.root == "ndcg"
        for m in o.metrics
        if "gain" in dict(m.params)
    ]
    positive = qrels.labels > 0
    if not maps or not positive.any():
        return
    counts = np.bincount(qrels.qid_codes[positive])
    worst = int(counts.argmax())
    discounts = float(np.sum(1.0 / np.log2(np.arange(2, int(counts[worst]) + 2))))
    labels = np.unique(qrels.labels[positive])
    for name, gain in maps:
        gains = GainParams(gain=gain).table(labels)
        top = int(gains.argmax())
        with np.errstate(over="ignore"):
            bound = float(gains[top]) * discounts
        if bound < _DBL_MAX / (1 + 1e-6):  # the margin: rounding in the sums
            continue
        raise ConfigError(
            f"measure {name.replace('_', '.', 1)}: the gain {float(gains[top]):g} of label "
            f"{int(labels[top])} is too large: the ideal DCG of query {qrels.qid_names[worst]} "
            f"({int(counts[worst])} relevant documents) would overflow a double",
            key="-m",
            hint="nDCG is a ratio, unchanged when every gain (a label without one gains its "
            "own value) is divided by the same number: give smaller gains",
        )


_DBL_MAX = float(np.finfo(np.float64).max)


# -------------------------------------------------------------------------------- CLI


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # usage errors are exit 2 with one paragraph
        raise ConfigError(message, hint="`evalframe trec-eval --help` lists the options")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="evalframe trec-eval",
        description="Evaluate a TREC run against qrels exactly as NIST trec_eval prints it.",
        epilog=(
            "supported measures: " + supported_list() + "; sets: official (the default), "
            "all_trec, set. Unsupported: " + ", ".join(UNSUPPORTED) + ". See docs/trec-eval.md."
        ),
    )
    p.add_argument("-q", "--query_eval_wanted", action="store_true", help="also print per query")
    p.add_argument(
        "-m",
        "--measure",
        action="append",
        default=[],
        metavar="MEASURE[.PARAMS]",
        help="measure to print (repeatable), e.g. map, P.5,10, ndcg_cut.10, all_trec",
    )
    p.add_argument(
        "-c",
        "--complete_rel_info_wanted",
        action="store_true",
        help="average over every query in the qrels (a missing ranking scores 0)",
    )
    p.add_argument("-n", "--nosummary", action="store_true", help="do not print the 'all' lines")
    p.add_argument(
        "-l", "--level_for_rel", type=int, default=1, metavar="N", help="relevant if label >= N"
    )
    p.add_argument(
        "-M",
        "--Max_retrieved_per_topic",
        type=int,
        default=None,
        metavar="N",
        help="use only the top N docs of each query (after trec_eval's sort)",
    )
    p.add_argument(
        "-J",
        "--Judged_docs_only",
        action="store_true",
        help="drop unjudged retrieved docs before scoring",
    )
    p.add_argument("-N", "--Number_docs_in_coll", type=int, default=None, help="accepted, unused")
    p.add_argument("-R", "--Rel_info_format", choices=["qrels"], default="qrels")
    p.add_argument("-T", "--Results_format", choices=["trec_results"], default="trec_results")
    p.add_argument("--json", action="store_true", help="print full-precision values as JSON")
    p.add_argument(
        "--compat",
        choices=["10.0", "9.0.8"],
        default="10.0",
        help="match trec_eval 10.0 (default) or 9.0.8 / pytrec_eval: 9.0.8 turns recall "
        "levels into counts with floor(level*R + 0.9), ties scores in float32, omits "
        "queries missing from the run from -q -c output and unj from all_trec",
    )
    p.add_argument("qrels", help="qrels file: qid iter docno rel")
    p.add_argument("run", help="run file: qid Q0 docno rank score tag ('-' for stdin)")
    return p


#: glibc's ``mallopt`` parameter for the size above which a block is mmap()ed.
_M_MMAP_THRESHOLD = -3


def _release_big_blocks() -> None:
    """Make glibc hand freed arrays of 4 MiB or more straight back to the system.

    By default glibc raises that threshold as big blocks are freed, and later
    temporaries (the readers' and the engine's per-block arrays) then fragment
    its heap: the process's peak memory at 50k x 100 varied between 400 and
    455 MB from run to run. A fixed threshold makes the peak what is live
    (409 MB; trec_eval's C binary: 425 MB) for about 0.3 s more system time.
    Elsewhere than glibc this does nothing.
    """
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).mallopt(_M_MMAP_THRESHOLD, 4 << 20)


#: trec_eval's options evalframe does not implement (docs/trec-eval.md), by what they do.
UNSUPPORTED_FLAGS = {"-Z": "z-scores against a file of per-topic means", "-D": "its debug level"}


def main(argv: Sequence[str], out: TextIO | None = None) -> int:
    """``evalframe trec-eval ARGS``; errors raise :class:`~evalframe.core.errors.EvalframeError`."""
    if out is None:
        _release_big_blocks()  # the command line's own process only
    stream = out if out is not None else sys.stdout
    for arg in argv:  # said as what they are, not as "unrecognized arguments: -Z RUN"
        flag = arg[:2]
        if flag in UNSUPPORTED_FLAGS:
            raise ConfigError(
                f"trec_eval's {flag} ({UNSUPPORTED_FLAGS[flag]}) is not supported",
                key=flag,
                hint="docs/trec-eval.md lists what is; run NIST's trec_eval for this option",
            )
    try:
        args = _parser().parse_args(list(argv))
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    result = run_trec_eval(
        args.qrels,
        args.run,
        args.measure,
        per_query=args.query_eval_wanted,
        complete=args.complete_rel_info_wanted,
        summary=not args.nosummary,
        rel_level=args.level_for_rel,
        max_per_query=args.Max_retrieved_per_topic,
        judged_only=args.Judged_docs_only,
        compat=args.compat,
    )
    if args.json:
        stream.write(json.dumps(result.to_json(), indent=2) + "\n")
    else:
        stream.writelines(line + "\n" for line in result.iter_lines())  # no giant string
    return 0
