"""trec_eval's measures: their names, parameters, order, and the evalframe metrics behind them.

The table :data:`SUPPORTED` is the one place a measure is declared: how it
takes parameters, which evalframe metric computes it, whether ``-l`` reaches
it, how its ``all`` line aggregates. Most measures are one of two regular
shapes (one metric, or one metric per cutoff) and need nothing more; the few
irregular ones name a builder. :func:`parse_measures` turns ``-m`` flags into
requests and :func:`plan` turns requests into printed outputs.

It is one module because the table and the parsing of ``-m`` read each other:
a measure's entry says how its parameters parse, and the parser checks a
flag against the entry, so a split would put one rule in two places.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

import numpy as np

from evalframe.core.errors import ConfigError
from evalframe.metrics import Metric, ScoreMatrix, parse_metric

__all__ = [
    "ALL_TREC",
    "MEASURE_ORDER",
    "SUPPORTED",
    "UNSUPPORTED",
    "Compat",
    "parse_measures",
    "plan",
]

Compat = Literal["10.0", "9.0.8"]

#: Every measure trec_eval 10.0 knows, in the order it computes and prints them
#: (``te_trec_measures`` in measures.c); the output follows this order, not the
#: order of the ``-m`` flags.
MEASURE_ORDER: tuple[str, ...] = (
    "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec",
    "bpref", "recip_rank", "iprec_at_recall", "P", "relstring", "recall", "infAP",
    "gm_bpref", "Rprec_mult", "utility", "11pt_avg", "binG", "G", "dcg", "ideal_dcg",
    "ndcg", "ndcg_rel", "Rndcg", "ndcg_cut", "map_cut", "relative_P", "success", "set_P",
    "set_relative_P", "set_recall", "set_map", "set_F", "num_nonrel_judged_ret",
    "prefs_num_prefs_poss", "prefs_num_prefs_ful", "prefs_num_prefs_ful_ret",
    "prefs_simp", "prefs_pair", "prefs_avgjg", "prefs_avgjg_Rnonrel", "prefs_simp_ret",
    "prefs_pair_ret", "prefs_avgjg_ret", "prefs_avgjg_Rnonrel_ret", "prefs_simp_imp",
    "prefs_pair_imp", "prefs_avgjg_imp", "map_avgjg", "P_avgjg", "Rprec_mult_avgjg",
    "yaap", "rbp", "rbp_resid", "unj",
)  # fmt: skip

_OFFICIAL = (
    "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec",
    "bpref", "recip_rank", "iprec_at_recall", "P",
)  # fmt: skip
#: trec_eval 10.0's ``all_trec`` nickname (9.0.8's lacks unj, rbp and rbp_resid).
ALL_TREC = (
    *_OFFICIAL, "relstring", "recall", "unj", "rbp", "rbp_resid", "infAP", "gm_bpref",
    "utility", "11pt_avg", "ndcg", "relative_P", "Rprec_mult", "success", "map_cut",
    "ndcg_cut", "ndcg_rel", "Rndcg", "binG", "G", "set_P", "set_recall", "set_relative_P",
    "set_map", "set_F", "num_nonrel_judged_ret",
)  # fmt: skip
_V9_ONLY_MISSING = ("unj", "rbp", "rbp_resid")
_NICKNAMES: dict[str, tuple[str, ...]] = {
    "official": _OFFICIAL,
    "all_trec": ALL_TREC,
    "set": (
        "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "set_P",
        "set_recall", "set_relative_P", "set_map", "set_F",
    ),
}  # fmt: skip
_UNSUPPORTED_NICKNAMES = ("all_prefs", "prefs", "qrels_jg")

_CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
_LEVELS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)

ParamKind = Literal["none", "long_cuts", "double_cuts", "double_params", "pairs"]
Aggregate = Literal["mean", "sum", "gm", "none", "num_q", "runid"]


@dataclass
class Request:
    """One requested measure: its root name and the parameter text given, if any."""

    root: str
    params: str | None = None


@dataclass
class Context:
    """What the outputs compute from: every metric's per-query values and the matrix."""

    values: dict[Metric, np.ndarray]
    matrix: ScoreMatrix
    depth: int
    #: trec_eval 10.0 -c scores a missing query on a one-doc stand-in ranking and
    #: blanks relstring afterwards, but only under that exact name: relstring_N
    #: shows the stand-in doc as '-' (not in the pool).
    stand_in: np.ndarray | None = None


@dataclass(frozen=True)
class Output:
    """One printed measure (``P_5``) and how its per-query values are made."""

    name: str
    root: str
    kind: Literal["float", "int", "str"]
    metrics: tuple[Metric, ...]
    compute: Callable[[Context], np.ndarray | list[str]]
    aggregate: Aggregate = "mean"


@dataclass(frozen=True)
class _Params:
    """The flags every builder may need: ``-l`` as metric parameters, and --compat."""

    rel: dict[str, Any]  # {"rel": N} unless N is 1
    iprec: dict[str, Any]  # rel, plus rounding=v9 under --compat 9.0.8


Builder = Callable[[Request, _Params], list[Output]]


@dataclass(frozen=True)
class _Spec:
    """How one trec_eval measure takes parameters and which evalframe metric computes it.

    ``metric`` names the evalframe metric of the two regular shapes: a
    parameterless measure is that metric; a cutoff measure is that metric
    at each cutoff (``P`` -> ``P@5``, ``P@10``...). ``build`` replaces both
    for the measures that fit neither.
    """

    kind: ParamKind
    default: tuple[Any, ...] = ()
    equivalent: str = ""  # the evalframe metric(s), for the docs and --help
    metric: str = ""
    rel: bool = True  # -l reaches it (nDCG takes label-valued gains instead)
    value: Literal["float", "int"] = "float"
    aggregate: Aggregate = "mean"
    build: Builder | None = None


# ------------------------------------------------------------------ the irregular ones


def _summary_only(aggregate: Aggregate) -> Builder:
    def build(req: Request, p: _Params) -> list[Output]:
        kind: Literal["str", "int"] = "str" if aggregate == "runid" else "int"
        return [Output(req.root, req.root, kind, (), _nothing, aggregate)]

    return build


def _unj(req: Request, p: _Params) -> list[Output]:
    n_ret = _metric("NumRet")
    out = []
    for k in _long_cuts(req):
        judged = _metric(f"Judged@{k}")
        compute = partial(_unjudged, judged=judged, n_ret=n_ret, k=k)
        out.append(Output(f"unj_{k}", req.root, "float", (judged, n_ret), compute))
    return out


def _relstring(req: Request, p: _Params) -> list[Output]:
    length = int(_atof(req.params.split(",")[0])) if req.params else 10
    name = f"relstring_{req.params}" if req.params else "relstring"
    compute = partial(_relstring_values, n=length, named=bool(req.params))
    return [Output(name, req.root, "str", (), compute, "none")]


def _eleven_pt(req: Request, p: _Params) -> list[Output]:
    if req.params is None:
        m = _with("11pt", p.iprec)
        return [Output("11pt_avg", req.root, "float", (m,), _value(m))]
    levels = sorted(_finite(v, req) for v in req.params.split(","))
    ms = tuple(_with("IPrec", p.iprec, _recall_level(v, req)) for v in levels)
    return [Output(f"11pt_avg_{req.params}", req.root, "float", ms, partial(_pt_avg, ms=ms))]


def _ndcg(req: Request, p: _Params) -> list[Output]:
    gains = _gain_map(req)
    m = _with("nDCG", {"gain": gains} if gains else {})
    name = f"ndcg_{req.params}" if req.params else "ndcg"
    return [Output(name, req.root, "float", (m,), _value(m))]


def _set_f(req: Request, p: _Params) -> list[Output]:
    x = _finite(req.params.split(",")[0], req) if req.params else 1.0
    if x < 0:
        raise ConfigError(f"measure set_F.{req.params}: the weight must not be negative", key="-m")
    name = f"set_F_{req.params}" if req.params else "set_F"
    if x == 1.0:
        m = _with("SetF", p.rel)
        return [Output(name, req.root, "float", (m,), _value(m))]
    # SetF(beta=sqrt(x)) squares beta back into x +- 1 ulp, enough to flip a
    # printed digit: apply trec_eval's (x+1)PR/(xP+R) to SetP and SetR.
    sp, sr = _with("SetP", p.rel), _with("SetR", p.rel)
    return [Output(name, req.root, "float", (sp, sr), partial(_f, sp=sp, sr=sr, x=x))]


def _nonrel_judged(req: Request, p: _Params) -> list[Output]:
    relret = _with("NumRelRet", p.rel)
    compute = partial(_judged_minus, relret=relret)
    return [Output(req.root, req.root, "int", (relret,), compute, "sum")]


#: The trec_eval measures this command computes, declared once each.
SUPPORTED: dict[str, _Spec] = {
    "runid": _Spec("none", equivalent="(the run tag of the run file's last line)",
                   build=_summary_only("runid")),
    "num_q": _Spec("none", equivalent="(number of queries evaluated)",
                   build=_summary_only("num_q")),
    "num_ret": _Spec("none", equivalent="NumRet (summed)", metric="NumRet", rel=False,
                     value="int", aggregate="sum"),
    "num_rel": _Spec("none", equivalent="NumRel (summed)", metric="NumRel", value="int",
                     aggregate="sum"),
    "num_rel_ret": _Spec("none", equivalent="NumRelRet (summed)", metric="NumRelRet",
                         value="int", aggregate="sum"),
    "map": _Spec("none", equivalent="AP", metric="AP"),
    "gm_map": _Spec("none", equivalent="AP, geometric mean over queries", metric="AP",
                    aggregate="gm"),
    "Rprec": _Spec("none", equivalent="Rprec", metric="Rprec"),
    "bpref": _Spec("none", equivalent="bpref", metric="bpref"),
    "recip_rank": _Spec("none", equivalent="RR", metric="RR"),
    "iprec_at_recall": _Spec("double_cuts", _LEVELS, "IPrec@r", metric="IPrec"),
    "P": _Spec("long_cuts", _CUTS, "P@k", metric="P"),
    "relstring": _Spec("double_params", (10.0,), "(labels of the top N, as text)",
                       build=_relstring),
    "recall": _Spec("long_cuts", _CUTS, "R@k", metric="R"),
    "gm_bpref": _Spec("none", equivalent="bpref, geometric mean over queries",
                      metric="bpref", aggregate="gm"),
    "11pt_avg": _Spec("double_params", _LEVELS, "11pt (custom levels: mean of IPrec@r)",
                      build=_eleven_pt),
    "ndcg": _Spec("pairs", equivalent="nDCG, nDCG(gain=1:3;2:9)", build=_ndcg),
    "ndcg_cut": _Spec("long_cuts", _CUTS, "nDCG@k", metric="nDCG", rel=False),
    "map_cut": _Spec("long_cuts", _CUTS, "AP@k", metric="AP"),
    "success": _Spec("long_cuts", (1, 5, 10), "Hit@k", metric="Hit"),
    "set_P": _Spec("none", equivalent="SetP", metric="SetP"),
    "set_recall": _Spec("none", equivalent="SetR", metric="SetR"),
    "set_F": _Spec("double_params", (1.0,), "SetF(beta=sqrt(x))", build=_set_f),
    "num_nonrel_judged_ret": _Spec("none", equivalent="Judged@depth x depth - NumRelRet",
                                   build=_nonrel_judged),
    "unj": _Spec("long_cuts", (5, 10, 20), "min(k, NumRet)/k - Judged@k", build=_unj),
}  # fmt: skip
#: trec_eval measures this command does not compute (they have no evalframe metric).
UNSUPPORTED: tuple[str, ...] = tuple(m for m in MEASURE_ORDER if m not in SUPPORTED)


def supported_list() -> str:
    return ", ".join(SUPPORTED)


# ------------------------------------------------------------------- requests and plan


def parse_measures(flags: Sequence[str], compat: Compat = "10.0") -> list[Request]:
    """Turn ``-m`` values into requests in trec_eval's order (first parameters win)."""
    marked: set[str] = set()
    params: dict[str, str] = {}
    for flag in flags or ["official"]:
        root, dot, param = flag.partition(".")
        if dot:
            if not param:
                raise ConfigError(
                    f"measure {flag!r} has an empty parameter list",
                    expected="NAME or NAME.PARAMS, e.g. P.5,10",
                )
            params.setdefault(root, param)  # trec_eval uses the first one given
        if root in _NICKNAMES:
            if dot:
                raise ConfigError(f"the measure set {root!r} takes no parameters")
            names = _NICKNAMES[root]
            if compat == "9.0.8":
                names = tuple(n for n in names if n not in _V9_ONLY_MISSING)
            marked.update(n for n in names if n in SUPPORTED)
            continue
        if root in SUPPORTED:
            marked.add(root)
            continue
        known = root in MEASURE_ORDER or root in _UNSUPPORTED_NICKNAMES
        raise ConfigError(
            f"{'unsupported' if known else 'unknown'} trec_eval measure {root!r}",
            expected=f"one of: {supported_list()}, or the sets official, all_trec, set",
            hint=(
                f"{root!r} has no evalframe equivalent yet; see docs/trec-eval.md"
                if known
                else "measure names are trec_eval's, e.g. map, P.5,10, ndcg_cut.10"
            ),
        )
    return [Request(name, params.get(name)) for name in MEASURE_ORDER if name in marked]


def plan(requests: Sequence[Request], rel: int, compat: Compat) -> list[Output]:
    """Expand the requests into printed measures with their evalframe metrics."""
    relp: dict[str, Any] = {"rel": rel} if rel != 1 else {}
    iprecp = dict(relp)
    if compat == "9.0.8":
        iprecp["rounding"] = "v9"
    params = _Params(rel=relp, iprec=iprecp)
    out: list[Output] = []
    for req in requests:
        spec = SUPPORTED[req.root]
        if spec.build is not None:
            out.extend(spec.build(req, params))
            continue
        mparams = iprecp if spec.kind == "double_cuts" else (relp if spec.rel else {})
        if spec.kind == "none":
            m = _with(spec.metric, mparams)
            out.append(Output(req.root, req.root, spec.value, (m,), _value(m), spec.aggregate))
        elif spec.kind == "long_cuts":
            for k in _long_cuts(req):
                m = _with(spec.metric, mparams, k)
                out.append(Output(f"{req.root}_{k}", req.root, spec.value, (m,), _value(m)))
        else:  # double_cuts: recall levels
            for level in _double_cuts(req):
                m = _with(spec.metric, mparams, _recall_level(level, req))
                name = f"{req.root}_{level:3.2f}"
                out.append(Output(name, req.root, spec.value, (m,), _value(m)))
    return out


# ------------------------------------------------------------------------- parameters


def _atol(text: str) -> int:
    match = re.match(r"\s*[+-]?\d+", text)
    return int(match.group()) if match else 0


def _atof(text: str) -> float:
    match = re.match(r"\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", text)
    return float(match.group()) if match else 0.0


def _finite(text: str, req: Request) -> float:
    """A real parameter (a recall level, set_F's weight), stricter than C's ``atof``,
    which reads ``nan``, ``inf`` and ``1e400`` as such and a word as 0: they named a
    level "0.00" or crashed the scoring. Anything but a finite number is refused."""
    if _NUMBER.fullmatch(text) is None or not math.isfinite(float(text)):
        raise ConfigError(
            f"measure {req.root}.{req.params}: {text.strip()!r} is not a finite number",
            key="-m",
            expected="numbers such as 0.5 or 1e-3, comma-separated",
        )
    return float(text)


def _long_cuts(req: Request) -> list[int]:
    spec = SUPPORTED[req.root]
    if req.params is None:
        return list(spec.default)
    cuts = sorted(_atol(p) for p in req.params.split(","))
    if cuts[0] <= 0:
        # trec_eval reads each as C's atol: a word or an empty one is 0
        bad = [p for p in req.params.split(",") if _atol(p) <= 0]
        raise ConfigError(
            f"measure {req.root}.{req.params}: cutoffs must be positive",
            key="-m",
            expected="whole numbers of documents from 1 up, comma-separated",
            got=", ".join(repr(p) for p in bad),
            hint=f"for example -m {req.root}.5,10 ({req.root} at 5 and at 10 documents)",
        )
    if len(set(cuts)) != len(cuts):
        raise ConfigError(
            f"measure {req.root}.{req.params}: duplicate cutoffs",
            key="-m",
            hint=f"give each cutoff once, for example -m {req.root}.5,10",
        )
    return cuts


def _double_cuts(req: Request) -> list[float]:
    if req.params is None:
        return list(SUPPORTED[req.root].default)
    cuts = sorted(_finite(p, req) for p in req.params.split(","))
    if len(set(cuts)) != len(cuts):
        raise ConfigError(f"measure {req.root}.{req.params}: duplicate cutoffs", key="-m")
    return cuts


def _recall_level(value: float, req: Request) -> str:
    if not 0.0 <= value <= 1.0:
        raise ConfigError(
            f"measure {req.root}.{req.params}: recall level {value} is outside [0, 1]",
            hint="trec_eval accepts it and prints 0; evalframe's IPrec needs a level in [0, 1]",
        )
    return np.format_float_positional(value, trim="-")


#: A qrels label is a C ``int`` (:mod:`evalframe.core.reader`): a gain for a label outside
#: it could never be used.
_INT_RANGE = (-(2**31), 2**31 - 1)
_NUMBER = re.compile(r"\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*")


def _gain_map(req: Request) -> str | None:
    """``1=3,2=9`` -> evalframe's ``1:3;2:9`` (None for the default linear gains).

    Stricter than trec_eval, which reads the pairs without a word where they make no
    sense: a label that is not an integer (``x=1``, ``1.5=2``) is skipped, a gain goes
    through C's ``atof`` (``nan``, ``inf``, ``3x`` read as NaN, inf, 3), and a label given
    twice keeps one of its gains. Each of these is refused here, naming the pair.
    """
    if req.params is None:
        return None
    spelled = f"measure ndcg.{req.params}"
    entries = []
    seen: set[int] = set()
    for part in req.params.split(","):
        label, eq, gain = part.partition("=")
        if not eq:
            raise ConfigError(
                f"{spelled}: malformed pair parameters",
                key="-m",
                expected="label=gain pairs, e.g. ndcg.1=3,2=9",
            )
        if not re.fullmatch(r"[+-]?\d+", label):  # trec_eval's valid_int(); it skips the pair
            raise ConfigError(
                f"{spelled}: label {label!r} of {part!r} is not an integer",
                key="-m",
                expected="label=gain pairs whose labels are the qrels' whole numbers, "
                "e.g. ndcg.1=3,2=9",
                hint="trec_eval skips such a pair without a word, so its gain would "
                "silently not count",
            )
        if not _NUMBER.fullmatch(gain):
            raise ConfigError(
                f"{spelled}: gain {part!r} is not a number",
                key="-m",
                expected="label=gain pairs of numbers, e.g. ndcg.1=3,2=9",
            )
        level, value = int(label), _atof(gain)
        if not _INT_RANGE[0] <= level <= _INT_RANGE[1]:
            raise ConfigError(
                f"{spelled}: label {label} is outside a C int, which no qrels label can be",
                key="-m",
                expected=f"a label from {_INT_RANGE[0]} to {_INT_RANGE[1]}",
            )
        if level <= 0 or not 0 <= value < math.inf:  # nan, inf (1e400): no gain to add
            raise ConfigError(
                f"{spelled}: gain {part!r} is not supported",
                key="-m",
                hint="evalframe's nDCG gives gains to positive labels only, and gains "
                "are finite numbers, not negative",
            )
        if level in seen:  # which of the two would count?
            raise ConfigError(
                f"{spelled}: label {level} is given two gains",
                key="-m",
                expected="each label once, e.g. ndcg.1=3,2=9",
            )
        seen.add(level)
        entries.append(f"{level}:{np.format_float_positional(value, trim='-')}")
    return ";".join(entries) or None


def _metric(text: str) -> Metric:
    return parse_metric(text)


def _with(name: str, params: dict[str, Any], k: Any = None) -> Metric:
    inner = ",".join(f"{key}={value}" for key, value in params.items())
    text = name + (f"({inner})" if inner else "")
    if k is not None:
        text += f"@{k}"
    return _metric(text)


# ------------------------------------------------------------- per-query computations


def judged_metric(depth: int) -> Metric:
    """The metric num_nonrel_judged_ret needs at the run's depth."""
    return _metric(f"Judged@{depth}")


def _value(m: Metric) -> Callable[[Context], np.ndarray]:
    def get(c: Context) -> np.ndarray:
        return c.values[m]

    return get


def _nothing(c: Context) -> list[str]:
    return []


def _unjudged(c: Context, judged: Metric, n_ret: Metric, k: int) -> np.ndarray:
    """trec_eval's unj_k: unjudged docs in the top k (those past the end are not) / k."""
    unjudged = np.round(np.minimum(c.values[n_ret], k) - c.values[judged] * k)
    return np.asarray(unjudged / k, dtype=np.float64)


def _judged_minus(c: Context, relret: Metric) -> np.ndarray:
    judged = c.values[judged_metric(c.depth)] * c.depth
    return np.asarray(np.round(judged) - c.values[relret], dtype=np.float64)


def _f(c: Context, sp: Metric, sr: Metric, x: float) -> np.ndarray:
    p, r = c.values[sp], c.values[sr]
    out = np.zeros(p.shape)
    hit = p > 0
    out[hit] = (x + 1.0) * p[hit] * r[hit] / (x * p[hit] + r[hit])
    return out


def _pt_avg(c: Context, ms: tuple[Metric, ...]) -> np.ndarray:
    total = np.zeros(len(c.matrix.query_ids))
    for m in reversed(ms):  # trec_eval adds from the highest level down
        total = total + c.values[m]
    return total / len(ms)


def _relstring_values(c: Context, n: int, named: bool) -> list[str]:
    strings = _relstrings(c.matrix, n)
    if named and n >= 1 and c.stand_in is not None:
        strings = ["-" if s else r for r, s in zip(strings, c.stand_in, strict=True)]
    return strings


def _relstrings(matrix: ScoreMatrix, n: int) -> list[str]:
    """trec_eval's relstring: one character per retrieved doc among the top n."""
    width = max(0, min(n, matrix.depth))
    labels = matrix.labels[:, :width]
    judged = matrix.judged[:, :width]
    chars = np.where(
        judged,
        np.where(labels > 9, ">", np.char.mod("%d", np.clip(labels, 0, 9))),
        np.where(labels < 0, ".", "-"),  # in the pool but unjudged / not in the pool
    )
    out: list[str] = []
    for i in range(labels.shape[0]):
        length = int(min(width, matrix.n_ret[i]))
        out.append("".join(chars[i, :length].tolist()))
    return out
