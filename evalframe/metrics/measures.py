"""Metric identities: one canonical string per metric, kept apart from the maths.

A :class:`Metric` is a hashable value object. Its string form
(``nDCG@10``, ``R@100``, ``RR@10``, ``P(rel=2)@5``) is its identity in YAML,
code, gates, reports and tracking, and ``parse(str(m)) == m`` always holds.
Parameters equal to their defaults are dropped, so ``P(rel=1)@5`` *is*
``P@5``; parameters are printed in sorted order.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalframe.core.errors import ConfigError, PluginError
from evalframe.plugin.registry import METRICS

__all__ = [
    "ALIASES",
    "Metric",
    "MetricDef",
    "MetricParams",
    "RelParams",
    "bounds_problem",
    "metric",
    "parse_metric",
    "parse_metrics",
    "refuse_label",
    "threshold_problem",
    "tolerance_problem",
]

#: Names users bring from other tools, mapped to the canonical name. The
#: canonical string is what gets printed, so ``MRR@10`` reads back as ``RR@10``.
ALIASES: dict[str, str] = {
    "MRR": "RR",
    "Recall": "R",
    "recall": "R",
    "Precision": "P",
    "precision": "P",
    "MAP": "AP",
    "map": "AP",
    "NDCG": "nDCG",
    "ndcg": "nDCG",
    "Success": "Hit",
    "success": "Hit",
    "HitRate": "Hit",
}

ParamValue = int | float | str
_SYNTAX = re.compile(
    r"^(?P<name>[A-Za-z0-9_]+)"
    r"(?:\((?P<params>[^()]*)\))?"
    r"(?:@(?P<k>[0-9]+(?:\.[0-9]+)?))?$"
)


class MetricParams(BaseModel):
    """Base for a metric's parameters: frozen, unknown parameters are errors."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def bounds(self, declared: tuple[float, float] | None) -> tuple[float, float] | None:
        """The range of the metric's values under these parameters: the one its
        definition declares, unless a parameter widens it (nDCG with a negative gain
        can leave [0, 1]; :class:`~evalframe.metrics.builtin.GainParams` says so)."""
        return declared


class RelParams(MetricParams):
    """The relevance threshold shared by the binary metrics."""

    rel: int = Field(1, ge=1, description="labels >= rel count as relevant")


@dataclass(frozen=True)
class MetricDef:
    """How a metric is computed: a vectorized kernel plus what it accepts.

    ``kernel(matrix, k, params) -> ndarray`` returns one value per query.
    ``k`` says whether ``@k`` is ``"required"``, ``"optional"`` or ``"none"``.
    ``vacuous`` is the value the B.O.B convention gives a query with nothing
    relevant (recall of an empty set is 1.0); ``None`` means "compute as usual".
    ``cutoff`` says what ``@k`` means: a rank (an integer, ``P@5``) or a recall
    level (a number in [0, 1], ``IPrec@0.5``). ``aggregate`` is how the
    per-query values combine across queries in trec_eval's ``all`` line:
    counts (``NumRel``) are summed, everything else is averaged.
    ``rowwise`` says each query's value depends on that query's rows of the
    matrix only, so the engine may run the kernel on a block of queries at a
    time (less memory on large runs); a kernel says so explicitly.
    """

    name: str
    kernel: Callable[..., np.ndarray]
    params: type[MetricParams]
    k: Literal["required", "optional", "none"]
    description: str
    vacuous: float | None = None
    cutoff: Literal["rank", "recall"] = "rank"
    aggregate: Literal["mean", "sum"] = "mean"
    applies_to: Literal["positives", "negatives"] = "positives"
    rowwise: bool = False
    #: the smallest and largest value a query (so also a mean) can have: (0, 1) for a
    #: fraction, (0, inf) for a count; None when not known. Gates use it to refuse a
    #: threshold no run can meet (``R@5 >= 80``, a percentage written for a fraction).
    bounds: tuple[float, float] | None = None


def metric(
    name: str,
    *,
    params: type[MetricParams] = MetricParams,
    k: Literal["required", "optional", "none"] = "optional",
    vacuous: float | None = None,
    cutoff: Literal["rank", "recall"] = "rank",
    aggregate: Literal["mean", "sum"] = "mean",
    applies_to: Literal["positives", "negatives"] = "positives",
    rowwise: bool = False,
    bounds: tuple[float, float] | None = None,
) -> Callable[[Callable[..., np.ndarray]], Callable[..., np.ndarray]]:
    """Register a vectorized metric kernel under ``name`` in the metric registry.

    Third-party packages use this exactly as the built-ins do, and expose the
    registering module through the ``evalframe.metrics`` entry-point group.
    ``bounds`` (see :attr:`MetricDef.bounds`) is worth declaring: without it no
    gate can tell a threshold of 80 on a fraction from a real one.
    """
    if bounds is not None and not (
        len(bounds) == 2 and not math.isnan(bounds[0]) and bounds[0] <= bounds[1]
    ):
        raise PluginError(
            f"metric {name!r} declares bounds {bounds!r}",
            expected="(low, high) with low <= high, e.g. (0.0, 1.0)",
        )

    def register(kernel: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
        doc = (kernel.__doc__ or "").strip()
        description = doc.splitlines()[0] if doc else name
        definition = MetricDef(
            name=name,
            kernel=kernel,
            params=params,
            k=k,
            description=description,
            vacuous=vacuous,
            cutoff=cutoff,
            aggregate=aggregate,
            applies_to=applies_to,
            rowwise=rowwise,
            bounds=None if bounds is None else (float(bounds[0]), float(bounds[1])),
        )
        METRICS.add(name, definition, params, description=description, module=kernel.__module__)
        return kernel

    return register


def _format_value(value: ParamValue) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def _coerce(text: str) -> ParamValue:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


@dataclass(frozen=True)
class Metric:
    """A metric with its parameters and cutoff; ``str()`` is its canonical name."""

    name: str
    params: tuple[tuple[str, ParamValue], ...] = ()
    k: int | float | None = None

    def __str__(self) -> str:
        text = self.name
        if self.params:
            text += "(" + ",".join(f"{key}={_format_value(v)}" for key, v in self.params) + ")"
        if self.k is not None:
            text += f"@{self.k}"
        return text

    def __repr__(self) -> str:
        return f"Metric({str(self)!r})"

    @property
    def definition(self) -> MetricDef:
        return METRICS.get(self.name).obj  # type: ignore[no-any-return]  # registry holds Any

    def param_model(self) -> MetricParams:
        return self.definition.params(**{k: v for k, v in self.params if k != "view"})

    @property
    def view(self) -> str | None:
        """The judgment view this metric is scored on (``R(view=files)@5``), if any."""
        value = dict(self.params).get("view")
        return None if value is None else str(value)

    @property
    def rel(self) -> int:
        """The relevance threshold (1 unless the metric says otherwise)."""
        value = dict(self.params).get("rel", 1)
        return int(value)

    @property
    def bounds(self) -> tuple[float, float] | None:
        """The range of this metric's values (:attr:`MetricDef.bounds`, as its parameters
        leave it); None when the metric does not declare one."""
        return self.param_model().bounds(self.definition.bounds)


def parse_metric(text: str | Metric, *, key: str | None = None) -> Metric:
    """Parse ``nDCG@10``/``P(rel=2)@5``/``MRR`` into its canonical :class:`Metric`."""
    if isinstance(text, Metric):
        return text
    raw = str(text).strip()
    match = _SYNTAX.match(raw)
    if match is None:
        raise ConfigError(
            f"cannot read metric {raw!r}",
            key=key,
            expected="NAME, NAME@k or NAME(param=value,...)@k, e.g. nDCG@10 or P(rel=2)@5",
            got=repr(raw),
        )
    name = ALIASES.get(match["name"], match["name"])
    try:
        spec = METRICS.get(name, key=key)
    except PluginError as exc:
        raise ConfigError(exc.message, key=key, hint=exc.hint) from None
    definition: MetricDef = spec.obj
    k: int | float | None = None
    if match["k"] is not None and definition.cutoff == "recall":
        k = float(match["k"])
        if not 0.0 <= k <= 1.0:
            raise ConfigError(
                f"metric {raw!r}: the recall level must be between 0 and 1", key=key, got=str(k)
            )
    elif match["k"] is not None:
        if "." in match["k"]:
            raise ConfigError(
                f"metric {raw!r}: the cutoff is a rank, a whole number",
                key=key,
                expected=f"{name}@<integer>",
                got=match["k"],
            )
        k = int(match["k"])
        if k < 1:
            raise ConfigError(f"metric {raw!r}: the cutoff must be at least 1", key=key, got=str(k))
    if definition.k == "required" and k is None:
        raise ConfigError(
            f"metric {name!r} needs a cutoff", key=key, expected=f"{name}@k", got=repr(raw)
        )
    if definition.k == "none" and k is not None:
        raise ConfigError(f"metric {name!r} takes no cutoff", key=key, expected=name, got=repr(raw))
    given: dict[str, Any] = {}
    if match["params"]:
        for part in match["params"].split(","):
            pkey, sep, pval = part.partition("=")
            if not sep or not pkey.strip():
                raise ConfigError(
                    f"metric {raw!r}: parameter {part!r} is not key=value",
                    key=key,
                    expected="NAME(key=value,...)",
                )
            value = _coerce(pval.strip())
            if isinstance(value, float) and not math.isfinite(value):  # nan, inf, 1e400
                raise ConfigError(
                    f"metric {raw!r}: parameter {pkey.strip()!r} is {pval.strip()!r}, which is "
                    "not a finite number",
                    key=key,
                    expected="a finite number, e.g. beta=0.5",
                )
            given[pkey.strip()] = value
    view = given.pop("view", None)
    if view is not None and not (isinstance(view, str) and view.isidentifier()):
        raise ConfigError(
            f"metric {raw!r}: a view is a name such as 'files'", key=key, got=repr(view)
        )
    try:
        model = definition.params(**given)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
        )
        raise ConfigError(
            f"metric {raw!r}: bad parameter ({problems})",
            key=key,
            # view: every metric takes it (a judgment view such as KnowCode's files)
            hint=f"{name} accepts: {', '.join([*definition.params.model_fields, 'view'])}",
        ) from None
    dumped = model.model_dump(exclude_defaults=True)
    if view is not None:
        dumped["view"] = view  # any metric can be scored on a view of the judgments
    canonical = tuple(sorted(dumped.items()))
    return Metric(name=name, params=canonical, k=k)


def refuse_label(name: str, labels: Mapping[str, str], *, key: str, who: str) -> None:
    """A ConfigError when ``name`` is the report label (``metrics.labels``, {canonical:
    label}) of a metric: a label is a display name, never an identity, and parsed it
    is another metric (ADK's ``Recall@1`` labels ``Hit@1`` and parses as ``R@1``).
    ``who`` is what takes the name (``report.criterion``, ``--metrics``)."""
    for canonical, label in labels.items():
        if str(label) != name or str(canonical) == name:
            continue
        try:  # a label that reads as its own metric (B.O.B's MRR for RR) names it rightly
            if str(parse_metric(name)) == str(canonical):
                continue
        except ConfigError:
            pass
        raise ConfigError(
            f"{name!r} is the report label of {canonical} (metrics.labels), not a metric's name",
            key=key,
            hint=f"{who} takes metrics by their canonical string: {canonical}",
        )


def parse_metrics(texts: Iterable[str | Metric], *, key: str = "metrics") -> list[Metric]:
    """Parse a list, naming the index of a bad entry; duplicates are an error."""
    out: list[Metric] = []
    for i, text in enumerate(texts):
        m = parse_metric(text, key=f"{key}[{i}]")
        if m in out:
            raise ConfigError(
                f"metric {str(m)!r} is listed twice", key=f"{key}[{i}]", hint="remove the repeat"
            )
        out.append(m)
    return out


_HOLDS = {
    ">=": lambda v, lo, hi: v <= hi,
    ">": lambda v, lo, hi: v < hi,
    "<=": lambda v, lo, hi: v >= lo,
    "<": lambda v, lo, hi: v > lo,
}


def _span(bounds: tuple[float, float]) -> str:
    low, high = bounds
    return f"from {low:g} to {high:g}" if math.isfinite(high) else f"of {low:g} or more"


def threshold_problem(metric: str | Metric, op: str, value: float) -> str | None:
    """Why ``metric op value`` can never hold for any value of ``metric``, or None.

    None too when the metric is unknown, cannot be read, or declares no
    :attr:`~MetricDef.bounds`: the gate then reports what it reports. The usual
    cause is a percentage written for a fraction (``R@5 >= 80``), which makes a
    gate fail on every run without a word about why; the sentence says the
    range and, for a share, the fraction meant.
    """
    try:
        m = parse_metric(metric)
        bounds = m.bounds
    except (ConfigError, PluginError, ValidationError):
        return None
    return bounds_problem(str(m), bounds, op, value)


def bounds_problem(
    name: str, bounds: tuple[float, float] | None, op: str, value: float
) -> str | None:
    """Why ``name op value`` can never hold for a value within ``bounds``, or None (also
    for unknown bounds): :func:`threshold_problem` for any named value with a range, such
    as an analysis value (``calibration.ece`` lies from 0 to 1)."""
    if bounds is None or op not in _HOLDS or math.isnan(value):
        return None
    if _HOLDS[op](value, *bounds):
        return None
    said = (
        f"{name} takes values {_span(bounds)}, so '{name} {op} {value:g}' can never hold and "
        "the gate would fail on every run"
    )
    if bounds == (0.0, 1.0) and 1 < value <= 100:
        said += f" (for a percentage, write the fraction: {value:g}% is {value / 100:g})"
    return said


def tolerance_problem(metric: str | Metric, drop: float, *, relative: bool = False) -> str | None:
    """Why a tolerated drop of ``drop`` on ``metric`` can never be exceeded, or None.

    A drop of more than the metric's whole range (``max_drop: 5`` on R@5, meant
    as 5 points: 0.05) or, ``relative``, more than the whole baseline mean
    (``5`` meant as 5%: 0.05) lets every change through: the gate passes on
    every run. None when the metric declares no bounds.
    """
    try:
        m = parse_metric(metric)
        bounds = m.bounds
    except (ConfigError, PluginError, ValidationError):
        return None
    if bounds is None or math.isnan(drop):
        return None
    low, high = bounds
    if relative:
        if low < 0 or drop <= 1:
            return None
        return (
            f"a relative drop of {drop:g} is {drop:.0%} of the baseline mean, more than all "
            f"of it ({m} is never below {low:g}), so the gate would pass on every run "
            f"(for a percentage, write the fraction: {drop:g}% is {drop / 100:g})"
        )
    if not math.isfinite(high) or drop <= high - low:
        return None
    said = (
        f"{m} takes values {_span(bounds)}, so a drop of {drop:g} is more than its whole "
        "range and the gate would pass on every run"
    )
    if bounds == (0.0, 1.0) and drop <= 100:
        said += f" (on a 0-1 scale, {drop:g} percentage points is {drop / 100:g})"
    return said
