"""Scored results: per-query vectors first, aggregates (overall and per slice) second.

Gates, reports and trackers all read a :class:`GateView`/:class:`Evaluation`
rather than recomputing anything, so every consumer sees the same numbers.
It is one module because the evaluation and the gates' view of it change
together: a view reads exactly what the evaluation holds.
"""

from __future__ import annotations

import difflib
import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evalframe.assess.stats import bootstrap_ci, bootstrap_cis
from evalframe.core.errors import ConfigError, DataError
from evalframe.core.messages import warn
from evalframe.core.types import GoldenSet, Run
from evalframe.metrics import Metric, Policies, Scores, parse_metric

__all__ = [
    "Aggregate",
    "Evaluation",
    "GateResult",
    "GateView",
    "SliceChoice",
    "aggregate",
    "bootstrap_ci",
    "bootstrap_cis",
    "choose_slices",
    "latency_summary",
]


@dataclass(frozen=True)
class Aggregate:
    """Mean, sample standard deviation and count over the queries a metric covered.

    ``skipped`` counts queries a policy left out (NaN in the per-query
    vector). The standard deviation uses n - 1 (0.0 when n < 2).
    ``ci_low``/``ci_high`` bound a seeded percentile-bootstrap confidence
    interval of the mean (NaN when no bootstrap was asked for). ``total`` is
    the sum, which trec_eval reports for counts such as ``NumRel``.
    """

    mean: float
    std: float
    n: int
    skipped: int = 0
    ci_low: float = math.nan
    ci_high: float = math.nan
    total: float = math.nan

    def as_dict(self) -> dict[str, float | int]:
        return {
            "mean": self.mean,
            "std": self.std,
            "n": self.n,
            "skipped": self.skipped,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
        }


def slice_label(value: Any) -> str:
    """The label of a slice value in tables and gates; a query without the field is 'unset'."""
    return "unset" if value is None else str(value)


#: A default slice has at most this many values (``unset`` included): more make
#: a table nobody reads, and every cell joins the comparison's correction family.
MAX_SLICE_VALUES = 12
#: A string value longer than this, or with more words, is free text, not a label.
MAX_LABEL_CHARS = 60
MAX_LABEL_WORDS = 6


@dataclass(frozen=True)
class SliceChoice:
    """The slice fields used, and the fields left out with the reason for each."""

    fields: list[str]
    skipped: dict[str, str] = field(default_factory=dict)


def _why_not_a_slice(name: str, values: list[Any], n: int) -> str | None:
    """Why a metadata field makes a poor default slice (None: it makes a good one)."""
    if name in GoldenSet.NOT_SLICES:
        return "free text (a description, not a group)"
    present = [v for v in values if v is not None]
    kinds = sorted({type(v).__name__ for v in present if not isinstance(v, (str, int, float))})
    if kinds:
        return f"not a scalar ({', '.join(kinds)} values)"
    texts = [v for v in present if isinstance(v, str)]
    if any(len(t) > MAX_LABEL_CHARS or len(t.split()) > MAX_LABEL_WORDS for t in texts):
        longest = max(len(t) for t in texts)
        return f"free text (values up to {longest} characters)"
    labels = {slice_label(v) for v in values}
    limit = min(MAX_SLICE_VALUES, max(3, n // 3))
    if len(labels) == 1:
        return "the same value for every query"
    if n >= 4 and len(labels) == n:
        return "a different value for every query (an identifier)"
    if len(labels) > limit:
        return (
            f"{len(labels)} distinct values over {n} queries (a default slice has at most "
            f"{limit}, so that its groups are not single queries)"
        )
    return None


def choose_slices(golden: GoldenSet, requested: Sequence[str] | None) -> SliceChoice:
    """The slice fields for a run, and which were left out and why.

    ``requested`` (the experiment's ``slices:``) is used as given, except a
    field no query has (a one-domain file has no ``domain``). ``None`` picks
    the metadata fields with few distinct values: not free text, not lists,
    not identifiers or counts with a value per query or two.
    """
    queries = golden.queries
    if requested is not None:
        fields, skipped = [], {}
        present = sorted({k for q in queries for k in q.metadata})
        for i, name in enumerate(requested):
            if any(name in q.metadata for q in queries):
                fields.append(name)
                continue
            close = difflib.get_close_matches(name, present, n=1)
            skipped[name] = "no query has this field" + (
                f" (did you mean {close[0]!r}?)" if close else ""
            )
            # Said on stderr too: a misspelt slice must not pass for an absent one.
            warn(
                f"slices[{i}] {name!r}: no query of {golden.name!r} has this field, so there "
                f"is no table for it; the queries' fields are: {', '.join(present) or '(none)'}"
                + (f"; did you mean {close[0]!r}?" if close else "")
            )
        return SliceChoice(fields, skipped)
    names = list(dict.fromkeys(k for q in queries for k in q.metadata))
    fields, skipped = [], {}
    for name in names:
        reason = _why_not_a_slice(name, [q.metadata.get(name) for q in queries], len(queries))
        if reason is None:
            fields.append(name)
        else:
            skipped[name] = reason
    return SliceChoice(fields, skipped)


def aggregate(
    values: np.ndarray, *, bootstrap: int = 0, seed: int = 0, confidence: float = 0.95
) -> Aggregate:
    """Aggregate one per-query vector, ignoring NaN (queries a policy skipped).

    With ``bootstrap > 0`` the result carries a seeded bootstrap CI of the mean.
    """
    return aggregates([values], bootstrap=bootstrap, seed=seed, confidence=confidence)[0]


def aggregates(
    arrays: Sequence[np.ndarray], *, bootstrap: int = 0, seed: int = 0, confidence: float = 0.95
) -> list[Aggregate]:
    """:func:`aggregate` of each array, bootstrapping them together (:func:`bootstrap_cis`)."""
    full = [np.asarray(values, dtype=np.float64) for values in arrays]
    kept = [arr[~np.isnan(arr)] for arr in full]
    cis = bootstrap_cis(kept, resamples=bootstrap, seed=seed, confidence=confidence)
    out = []
    for arr, values, (low, high) in zip(full, kept, cis, strict=True):
        n = int(values.size)
        if n == 0:
            out.append(
                Aggregate(mean=math.nan, std=math.nan, n=0, skipped=int(arr.size), total=0.0)
            )
            continue
        out.append(
            Aggregate(
                mean=float(values.mean()),
                std=float(values.std(ddof=1)) if n > 1 else 0.0,
                n=n,
                skipped=int(arr.size - n),
                ci_low=low,
                ci_high=high,
                total=float(values.sum()),
            )
        )
    return out


def latency_summary(latencies_ms: Sequence[float]) -> dict[str, float]:
    if not latencies_ms:
        return {}
    arr = np.asarray(latencies_ms, dtype=np.float64)
    return {
        "p50_ms": float(np.percentile(arr, 50)),
        "p95_ms": float(np.percentile(arr, 95)),
        "mean_ms": float(arr.mean()),
        "max_ms": float(arr.max()),
    }


@dataclass(frozen=True)
class GateResult:
    """One gate's verdict. ``failures`` lists offending query ids or slices;
    ``hints`` says what to look at when it failed (a report prints both)."""

    name: str
    type: str
    passed: bool
    required: bool
    message: str
    value: float | None = None
    threshold: float | None = None
    failures: tuple[str, ...] = ()
    hints: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "passed": self.passed,
            "required": self.required,
            "message": self.message,
            "value": self.value,
            "threshold": self.threshold,
            "failures": list(self.failures),
            "hints": list(self.hints),
        }


@dataclass
class Evaluation:
    """Everything computed for one run: per-query values and their aggregates."""

    golden: GoldenSet
    run: Run
    scores: Scores
    metrics: list[Metric]
    policies: Policies
    slice_fields: list[str]
    #: slice fields left out, with the reason for each (see :func:`choose_slices`)
    skipped_slices: dict[str, str] = field(default_factory=dict)
    latency: dict[str, float] = field(default_factory=dict)
    baseline: Any = None  # evalframe.assess.baseline.Baseline when the run has one
    #: headline values of the run's analyses (``calibration.ece``, ...), set by the
    #: pipeline before the gates run; an ``analysis`` gate reads them through GateView
    analysis: dict[str, Aggregate] = field(default_factory=dict)
    _overall: dict[Metric, Aggregate] = field(default_factory=dict, repr=False)
    _by_slice: dict[str, dict[str, dict[Metric, Aggregate]]] = field(
        default_factory=dict, repr=False
    )
    #: the aggregates being computed beside the caller (``build(..., beside=True)``)
    _pending: threading.Thread | None = field(default=None, repr=False, compare=False)
    _failed: list[BaseException] = field(default_factory=list, repr=False, compare=False)

    @property
    def overall(self) -> dict[Metric, Aggregate]:
        """Each metric's aggregate over every query (with its bootstrap interval)."""
        self.settle()
        return self._overall

    @property
    def by_slice(self) -> dict[str, dict[str, dict[Metric, Aggregate]]]:
        """``by_slice[field][value][metric]``: the aggregates of each slice's queries."""
        self.settle()
        return self._by_slice

    def settle(self) -> None:
        """Wait for the aggregates computed beside the caller; their error is raised here."""
        pending = self._pending
        if pending is not None:
            pending.join()
            self._pending = None
            if self._failed:
                raise self._failed.pop()

    @property
    def extra_queries(self) -> list[str]:
        """Query ids the run holds that the golden set lacks (ignored by every metric).

        A retriever that answers from a fixed set of queries (a run file) is
        asked only the golden ones, so the scored run never holds others; the
        pipeline records the ids it held beyond them in the run's metadata
        (``extra_queries``). A run built otherwise is checked against the
        engine's count.
        """
        held = self.run.metadata.get("extra_queries")
        if isinstance(held, list):
            return [str(q) for q in held]
        known = {q.id for q in self.golden.queries}
        return sorted(q for q in self.run.rankings if q not in known)

    @classmethod
    def build(
        cls,
        golden: GoldenSet,
        run: Run,
        scores: Scores,
        metrics: list[Metric],
        policies: Policies,
        slice_fields: Sequence[str] | None = None,
        *,
        bootstrap: int = 0,
        seed: int = 0,
        confidence: float = 0.95,
        beside: bool = False,
    ) -> Evaluation:
        """Aggregate overall and per slice; ``bootstrap`` resamples give each mean a CI.

        ``slice_fields=None`` picks the fields with :func:`choose_slices`.
        ``beside=True`` computes the aggregates on a thread of their own, and the
        first read of :attr:`overall` or :attr:`by_slice` waits for them: the bootstrap
        runs in NumPy without the GIL, so the pipeline builds its per-query records
        meanwhile (0.15 s of a 10k-query rescore). The numbers are the same either way.
        """
        choice = choose_slices(golden, slice_fields)
        fields = choice.fields

        def agg(values: dict[Metric, np.ndarray]) -> dict[Metric, Aggregate]:
            found = aggregates(
                list(values.values()), bootstrap=bootstrap, seed=seed, confidence=confidence
            )
            return dict(zip(values, found, strict=True))

        ev = cls(
            golden=golden,
            run=run,
            scores=scores,
            metrics=list(metrics),
            policies=policies,
            slice_fields=fields,
            skipped_slices=choice.skipped,
        )
        # the slices' query indices first, on this thread (it reads the golden set)
        grouped = {name: ev.slice_groups(name) for name in fields}

        def compute() -> None:
            try:
                ev._overall = agg({m: scores.values[m] for m in metrics})
                ev._by_slice = {
                    name: {
                        value: agg({m: scores.values[m][idx] for m in metrics})
                        for value, idx in groups.items()
                    }
                    for name, groups in grouped.items()
                }
            except BaseException as exc:  # noqa: BLE001 - not swallowed: settle() raises it
                ev._failed.append(exc)

        if beside and bootstrap > 0:
            ev._pending = threading.Thread(target=compute, name="evalframe-aggregates")
            ev._pending.start()
        else:
            compute()
            ev.settle()
        latencies = [r.latency_ms for r in run.rankings.values() if r.latency_ms is not None]
        ev.latency = latency_summary(latencies)
        return ev

    def slice_groups(self, name: str) -> dict[str, np.ndarray]:
        """Query indices per value of one slice field (queries without it are 'unset')."""
        by_id = self.golden.by_id()
        groups: dict[str, list[int]] = {}
        for i, qid in enumerate(self.scores.query_ids):
            groups.setdefault(slice_label(by_id[qid].metadata.get(name)), []).append(i)
        return {k: np.asarray(v, dtype=np.int64) for k, v in sorted(groups.items())}

    def per_query_value(self, m: Metric, qid: str) -> float:
        return float(self.scores.values[m][self.scores.position(qid)])


class GateView:
    """The read-only face of an :class:`Evaluation` that gate plugins see."""

    def __init__(self, evaluation: Evaluation) -> None:
        self._ev = evaluation

    @property
    def metrics(self) -> list[Metric]:
        return list(self._ev.metrics)

    def _metric(self, name: str | Metric, key: str) -> Metric:
        m = parse_metric(name, key=key)
        if m not in self._ev.scores.values:
            listed = ", ".join(str(x) for x in self._ev.metrics)
            raise ConfigError(
                f"metric {str(m)!r} is not computed in this run",
                key=key,
                expected=f"one of: {listed}",
                hint=f"add {str(m)!r} to metrics.measures",
            )
        return m

    def aggregate(
        self, name: str | Metric, where: Mapping[str, Any] | None = None, *, key: str = "gates"
    ) -> Aggregate:
        """Aggregate of a metric overall, or within the queries matching ``where``."""
        m = self._metric(name, key)
        if not where:
            return self._ev.overall[m]
        return aggregate(self._ev.scores.values[m][self.select(where, key=key)])

    def per_query(
        self, name: str | Metric, where: Mapping[str, Any] | None = None, *, key: str = "gates"
    ) -> dict[str, float]:
        m = self._metric(name, key)
        idx = self.select(where, key=key) if where else np.arange(len(self._ev.scores.query_ids))
        values = self._ev.scores.values[m]
        return {self._ev.scores.query_ids[i]: float(values[i]) for i in idx}

    def analysis(self, name: str, *, key: str = "gates") -> Aggregate:
        """A headline value of the run's analyses, e.g. ``calibration.ece`` or
        ``calibration.answer_correctness@0.8`` (docs/analyses.md lists them).

        ``mean`` is the value, ``n`` what it rests on (queries, routed queries,
        tasks) and ``ci_low``/``ci_high`` its interval where it has one.
        """
        value = self._ev.analysis.get(name)
        if value is None:
            raise ConfigError(
                f"the run has no analysis value {name!r}",
                key=key,
                expected=f"one of: {', '.join(sorted(self._ev.analysis)) or '(none computed)'}",
                hint="configure the analysis that produces it (analysis=calibration, "
                "analysis.benefit); see docs/analyses.md",
            )
        return value

    @property
    def analysis_names(self) -> list[str]:
        return sorted(self._ev.analysis)

    @property
    def policies(self) -> Policies:
        """The metric policies the run was scored under (what a skip left out)."""
        return self._ev.policies

    @property
    def baseline_name(self) -> str | None:
        baseline = self._ev.baseline
        return None if baseline is None else str(baseline.name)

    def paired(
        self, name: str | Metric, where: Mapping[str, Any] | None = None, *, key: str = "gates"
    ) -> tuple[tuple[str, ...], np.ndarray, np.ndarray]:
        """(query ids, baseline values, current values) for a metric, optionally in a slice;
        a ConfigError naming ``key`` when the run has no baseline."""
        m = self._metric(name, key)
        if (baseline := self._ev.baseline) is None:
            gate = f" (gates.{key.split('.')[1]}=null)" if key.startswith("gates.") else ""
            raise ConfigError(
                "this gate compares with a baseline, and the run has none (baseline is unset)",
                key=key,
                hint="set baseline=NAME (promote one with `evalframe baseline promote RUN_DIR "
                f"--name NAME`), or leave the gate out{gate}",
            )
        idx = self.select(where, key=key) if where else np.arange(len(self._ev.scores.query_ids))
        ids = tuple(self._ev.scores.query_ids[i] for i in idx)
        current = self._ev.scores.values[m][idx]
        return ids, baseline.vector(str(m), ids), current

    def slice_values(self, field: str, *, key: str = "gates") -> list[str]:
        """The values a slice field takes (as the report labels them)."""
        if not any(field in q.metadata for q in self._ev.golden.queries):
            raise ConfigError(
                f"slice field {field!r} is not in any golden query's metadata",
                key=key,
                expected=f"one of: {', '.join(self._ev.golden.slice_fields()) or '(none)'}",
            )
        return list(self._ev.slice_groups(field))

    def select(self, where: Mapping[str, Any] | None, *, key: str = "gates") -> np.ndarray:
        """Indices of queries whose metadata matches every ``field: value`` in ``where``.

        A gate names its metric's key (``gates.g.metric``); a field no query has is
        the fault of the gate's ``slice`` beside it (``gates.g.slice``), and said so.
        """
        by_id = self._ev.golden.by_id()
        wanted = {k: str(v) for k, v in (where or {}).items()}
        where_key = key.removesuffix(".metric") + ".slice" if key.endswith(".metric") else key
        for fname in wanted:
            if not any(fname in q.metadata for q in self._ev.golden.queries):
                raise ConfigError(
                    f"slice field {fname!r} is not in any golden query's metadata",
                    key=where_key,
                    expected=f"one of: {', '.join(self._ev.golden.slice_fields()) or '(none)'}",
                )
        idx = [
            i
            for i, qid in enumerate(self._ev.scores.query_ids)
            if all(slice_label(by_id[qid].metadata.get(f)) == v for f, v in wanted.items())
        ]
        for fname, value in wanted.items():
            self._refuse_near_misses(fname, value, key)
        return np.asarray(idx, dtype=np.int64)

    def _refuse_near_misses(self, fname: str, value: str, key: str) -> None:
        """A slice value written in another case or with spaces ('Easy ' for 'easy') is
        not selected, and a gate on the slice would pass or fail without those queries
        and say nothing: that is refused, naming the values and where they are."""
        folded = value.strip().casefold()
        near: dict[str, list[str]] = {}
        for q in self._ev.golden.queries:
            label = slice_label(q.metadata.get(fname))
            if label != value and label.strip().casefold() == folded:
                near.setdefault(label, []).append(q.id)
        if not near:
            return
        found = "; ".join(
            f"{label!r} on {len(ids)} quer{'y' if len(ids) == 1 else 'ies'} "
            f"({', '.join(ids[:5])}{', …' if len(ids) > 5 else ''})"
            for label, ids in near.items()
        )
        gate = key.rsplit(".", 1)[0] if key.count(".") > 1 else key  # the gate, not its metric
        raise DataError(
            f"the gate selects {fname}={value!r}, and the golden set also writes that value "
            f"as {found}: those queries would be left out of the gate without a word",
            key=gate,
            expected=f"one spelling of {fname} for one value",
            hint=f"write {fname} as {value!r} in the golden set (or change the gate's slice)",
        )
