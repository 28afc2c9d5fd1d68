"""Evaluate: per-query values of every metric, under the configured policies.

The work is split by responsibility:

- :mod:`~evalframe.metrics.policies`: the :class:`Policies` (empty sets,
  missing queries, ties, score precision, duplicates, self-matches);
- :mod:`~evalframe.metrics.columns`: the flat input format and flattening;
- :mod:`~evalframe.metrics.order`: rank order and the tie rules;
- :mod:`~evalframe.metrics.matrix`: the label matrix the kernels read;
- this module: running the kernels and applying the policies to their
  values, in one place rather than inside each kernel.

The names that lived here before the split (``Columns``, ``build_matrix``,
``trec_order``, ...) are re-exported, so imports of them keep working.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evalframe.core.errors import ConfigError, DataError, PluginError
from evalframe.core.types import GoldenSet
from evalframe.metrics.columns import Columns, Qrels, RunLike, project_ids, to_columns
from evalframe.metrics.matrix import PAD, ScoreMatrix, build_matrix
from evalframe.metrics.measures import Metric
from evalframe.metrics.order import rank_order, tied_rows, trec_order
from evalframe.metrics.policies import Policies, TieRule
from evalframe.plugin.blame import blamed
from evalframe.plugin.registry import METRICS

__all__ = [
    "PAD",
    "Columns",
    "Policies",
    "ScoreMatrix",
    "Scores",
    "TieSummary",
    "build_matrix",
    "evaluate",
    "evaluate_columns",
    "project_ids",
    "rank_order",
    "tie_cutoff",
    "to_columns",
    "trec_order",
]


@dataclass(frozen=True)
class TieSummary:
    """Which tie rule ranked the run, and how often it mattered.

    ``queries`` counts the rankings with two documents of equal score at
    least one of which is within the top ``k`` (``None``: anywhere in the
    ranking), out of ``ranked`` queries that have a ranking. Only those
    queries can score differently under the other rule.
    """

    rule: TieRule
    k: int | None
    queries: int
    ranked: int

    def as_dict(self) -> dict[str, object]:
        return {"rule": self.rule, "k": self.k, "queries": self.queries, "ranked": self.ranked}

    def describe(self) -> str:
        """One line for a report: the rule, and how many queries it could have changed."""
        rule = (
            "given (equal scores keep the retriever's order)"
            if self.rule == "given"
            else "trec_eval (equal scores rank by doc id, descending)"
        )
        where = "in the ranking" if self.k is None else f"within the top {self.k}"
        return f"ties: {rule}; {self.queries} of {self.ranked} queries have equal scores {where}"


@dataclass
class Scores:
    """Per-query values for every metric, aligned with ``query_ids``.

    NaN marks a query that a policy left out of that metric (a skipped
    negative example, a skipped missing query); aggregates ignore NaN.
    """

    query_ids: tuple[str, ...]
    values: dict[Metric, np.ndarray]
    missing: tuple[str, ...] = ()
    extra_queries: int = 0
    skipped: dict[Metric, int] = field(default_factory=dict)
    #: the tie rule and how many queries had a tie inside the top k
    ties: TieSummary | None = None
    #: the matrix the values were computed on (set by :func:`evaluate_columns`)
    matrix: ScoreMatrix | None = field(default=None, repr=False, compare=False)
    #: ``query_ids`` -> position, built on the first :meth:`position` (for that tuple)
    _positions: tuple[tuple[str, ...], dict[str, int]] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def position(self, qid: str) -> int:
        """Where ``qid`` is in ``query_ids``: one dictionary look-up, not a scan.

        A caller that asks for each of 10k queries in turn would otherwise scan
        the tuple each time (10^8 comparisons). ValueError for an id not scored.
        """
        if self._positions is None or self._positions[0] is not self.query_ids:
            ids = self.query_ids
            self._positions = (ids, {q: i for i, q in enumerate(ids)})
        try:
            return self._positions[1][qid]
        except KeyError:
            raise ValueError(f"query {qid!r} was not scored in this run") from None

    def per_query(self) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for i, qid in enumerate(self.query_ids):
            out[qid] = {str(m): float(v[i]) for m, v in self.values.items()}
        return out


def evaluate(
    metrics: Sequence[Metric],
    qrels: GoldenSet | Qrels,
    run: RunLike,
    policies: Policies | None = None,
) -> Scores:
    """Per-query values of every metric under the given policies.

    Metrics on a view (``R(view=files)@5``) are scored on that view's
    judgments, with run ids projected into it; one matrix is built per view.
    """
    pol = policies or Policies()
    matrices: dict[str | None, ScoreMatrix] = {}
    for view in dict.fromkeys(m.view for m in metrics) or [None]:
        try:
            matrices[view] = build_matrix(
                to_columns(qrels, run, view),
                duplicates="keep_position" if view is not None else pol.duplicates,
                score_precision=pol.score_precision,
                drop_self_matches=pol.drop_self_matches,
                ties=pol.ties,
            )
        except DataError as exc:
            raise _whose_duplicates(exc, run) from None
    base = matrices.get(None) or next(iter(matrices.values()))
    values, skipped = _apply_policies(metrics, matrices, pol)
    missing = tuple(q for q, p in zip(base.query_ids, base.present, strict=True) if not p)
    return Scores(
        query_ids=base.query_ids,
        values=values,
        missing=missing,
        extra_queries=base.extra_queries,
        skipped=skipped,
        ties=_tie_summary(base, metrics, pol),
    )


def _whose_duplicates(exc: DataError, run: RunLike) -> DataError:
    """A document twice in a ranking is the retriever's doing: said as such when the run
    names its retriever (a fresh run does), not as a mistake in the policy setting."""
    metadata = getattr(run, "metadata", None)
    retriever = metadata.get("retriever") if isinstance(metadata, Mapping) else None
    if exc.key != "metrics.policies.duplicates" or not isinstance(retriever, str):
        return exc
    return DataError(
        f"retriever {retriever!r} returned a ranking with a document twice: {exc.message}",
        key="retriever",
        hint="fix the retriever (each document once a ranking), or set "
        "metrics.policies.duplicates=keep_first to keep each doc's first occurrence",
    )


def evaluate_columns(
    metrics: Sequence[Metric], columns: Columns, policies: Policies | None = None
) -> Scores:
    """:func:`evaluate` for pre-built :class:`Columns` (a columnar file reader's output).

    Applies the same policies; the returned :class:`Scores` carries the
    :class:`ScoreMatrix` in ``matrix``. Metrics on views need :func:`evaluate`
    (the view's projection of the ids is made from a golden set).
    """
    pol = policies or Policies()
    viewed = [str(m) for m in metrics if m.view is not None]
    if viewed:
        raise ConfigError(
            f"metric {viewed[0]!r} is on a view, which pre-built columns do not have",
            key="metrics.measures",
            hint="use evaluate() with a golden set that declares the view",
        )
    matrix = build_matrix(
        columns,
        duplicates=pol.duplicates,
        score_precision=pol.score_precision,
        drop_self_matches=pol.drop_self_matches,
        ties=pol.ties,
    )
    values, skipped = _apply_policies(metrics, {None: matrix}, pol)
    return Scores(
        query_ids=matrix.query_ids,
        values=values,
        missing=tuple(q for q, p in zip(matrix.query_ids, matrix.present, strict=True) if not p),
        extra_queries=matrix.extra_queries,
        skipped=skipped,
        ties=_tie_summary(matrix, metrics, pol),
        matrix=matrix,
    )


def _apply_policies(
    metrics: Sequence[Metric], matrices: Mapping[str | None, ScoreMatrix], pol: Policies
) -> tuple[dict[Metric, np.ndarray], dict[Metric, int]]:
    """Every metric's kernel values, with the policies applied (NaN: left out)."""
    values: dict[Metric, np.ndarray] = {}
    skipped: dict[Metric, int] = {}
    for m in metrics:
        matrix = matrices[m.view]
        definition = m.definition
        raw = _kernel_values(m, matrix)
        if raw.shape != (len(matrix.query_ids),):
            raise DataError(
                f"metric {str(m)!r} returned shape {raw.shape}; a kernel must return one "
                f"value per query ({len(matrix.query_ids)})",
                hint=f"fix the kernel in {METRICS.get(m.name).module}",
            )
        _check_finite(m, raw, matrix.query_ids)  # before the policies add their own NaNs
        _check_bounds(m, raw)
        out = raw.copy()
        no_rel = matrix.num_rel(m.rel) == 0
        if definition.applies_to == "negatives":
            out[~no_rel] = np.nan  # scored on negative examples only, whatever the policy
        elif pol.no_relevant == "skip":
            out[no_rel] = np.nan
        elif pol.no_relevant == "bob" and definition.vacuous is not None:
            out[no_rel] = definition.vacuous
        if pol.missing_query == "skip":
            out[~matrix.present] = np.nan
        # under "zero" a missing query is scored as an empty ranking, which
        # every rank metric scores 0 (and Abstained, rightly, scores 1)
        values[m] = out
        skipped[m] = int(np.isnan(out).sum())
    return values, skipped


def _check_finite(m: Metric, raw: np.ndarray, query_ids: Sequence[str]) -> None:
    """A kernel's values are finite numbers. NaN is how the policies mark a query left
    out, so a kernel's own NaN (a 0/0) was counted as one more skipped query, with no
    word of why; an infinity (a division by 0) made the mean infinite, which the run's
    JSON files can only write as null, and passed or failed every gate at once."""
    nan = np.isnan(raw)
    bad = np.flatnonzero(nan | np.isinf(raw))
    if not bad.size:
        return
    module = METRICS.get(m.name).module
    n, first, nans = int(bad.size), int(bad[0]), int(nan.sum())
    kind = "NaN" if nans == n else "an infinity" if not nans else "NaN or an infinity"
    why = []
    if nans:
        why.append("NaN is how the policies mark a query left out, so it would count as skipped")
    if nans < n:
        why.append("an infinity makes the mean infinite, which no gate or JSON file can hold")
    raise PluginError(
        f"metric {str(m)!r} ({module}) returned {kind} for {n} of {len(raw)} "
        f"quer{'y' if len(raw) == 1 else 'ies'}, e.g. query {query_ids[first]!r} "
        f"({raw[first]:g}); {'; '.join(why)}",
        expected="a finite number for every query",
        hint=f"fix the kernel in {module}: it must return a number for every query (e.g. 0 "
        "where it would divide by 0) and leave skipping to the policies "
        "(metrics.policies.no_relevant, metrics.policies.missing_query)",
    )


def _check_bounds(m: Metric, raw: np.ndarray) -> None:
    """A kernel's values must lie within the range its metric declares (MetricDef.bounds):
    gates check thresholds against that range, so a value beyond it (a share of 95 where
    the range says 0 to 1) would pass a gate told the threshold cannot be met."""
    bounds = m.bounds
    finite = raw[np.isfinite(raw)]
    if bounds is None or not finite.size:
        return
    low, high = bounds
    slack = 1e-9 * max(1.0, abs(low), abs(high) if np.isfinite(high) else 1.0)  # rounding
    below, above = float(finite.min()), float(finite.max())
    if below >= low - slack and above <= high + slack:
        return
    bad = below if below < low - slack else above
    raise PluginError(
        f"metric {str(m)!r} gave a value of {bad:g}, outside the range it declares "
        f"({low:g} to {high:g})",
        expected=f"every value from {low:g} to {high:g} (MetricDef.bounds)",
        hint=f"fix the kernel in {METRICS.get(m.name).module}, or declare the range it has",
    )


#: Matrix cells a row-wise kernel sees at a time: its float64 temporaries stay
#: near 8 MB each instead of 40 MB at 50k queries x 100.
KERNEL_CELLS = 1 << 20


def _kernel_values(m: Metric, matrix: ScoreMatrix) -> np.ndarray:
    """The kernel's value per query, naming the kernel when it writes into the matrix."""
    try:
        return _kernel_blocks(m, matrix)
    except ValueError as exc:
        if "read-only" not in str(exc):
            raise
        raise PluginError(
            f"metric {str(m)!r} wrote into the score matrix, which every metric reads "
            "(its arrays are read-only)",
            got=str(exc),
            hint=f"fix the kernel in {METRICS.get(m.name).module}: compute on a copy "
            "(m.labels.copy(), or arithmetic that makes a new array)",
        ) from None


def _called(m: Metric, matrix: ScoreMatrix, params: Any) -> Any:
    """The kernel's answer; what it raises is its plugin's (:mod:`evalframe.plugin.blame`),
    a read-only write included (said by :func:`_kernel_values`)."""
    with blamed(METRICS.get(m.name), f"computing {str(m)!r}"):
        return m.definition.kernel(matrix, m.k, params)


def _numbers(m: Metric, values: Any) -> np.ndarray:
    """The kernel's values as float64; values that are not numbers are its mistake."""
    try:
        return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise PluginError(
            f"metric {str(m)!r} ({METRICS.get(m.name).module}) returned values that are not "
            f"numbers ({exc})",
            expected="a NumPy array of floats, one per query",
            hint=f"fix the kernel in {METRICS.get(m.name).module}",
        ) from None


def _kernel_blocks(m: Metric, matrix: ScoreMatrix) -> np.ndarray:
    """The kernel's value per query; a row-wise kernel runs on blocks of queries."""
    definition, params = m.definition, m.param_model()
    nq = len(matrix.query_ids)
    cells = nq * max(matrix.depth, matrix.ideal.shape[1], 1)
    if not definition.rowwise or cells <= KERNEL_CELLS:
        return _numbers(m, _called(m, matrix, params))
    step = max(1, KERNEL_CELLS * nq // cells)
    out = np.empty(nq, dtype=np.float64)
    for lo in range(0, nq, step):
        part = _numbers(m, _called(m, matrix.rows(lo, lo + step), params))
        if part.shape != (min(step, nq - lo),):
            return np.asarray(part)  # the caller reports the shape, naming the kernel
        out[lo : lo + step] = part
    return out


def tie_cutoff(metrics: Sequence[Metric]) -> int | None:
    """The k within which ties are counted: the metrics' largest rank cutoff.

    ``None`` (the whole ranking) when no metric has one.
    """
    ks = [
        int(m.k)
        for m in metrics
        if m.k is not None and m.definition.cutoff == "rank" and float(m.k).is_integer()
    ]
    return max(ks) if ks else None


def _tie_summary(matrix: ScoreMatrix, metrics: Sequence[Metric], pol: Policies) -> TieSummary:
    k = tie_cutoff(metrics)
    if k is not None and matrix.scores is not None and k > matrix.scores.shape[1]:
        # no ranking reaches the cutoff (depth 5, nDCG@10): the whole ranking is what
        # counts, and the report says so rather than "within the top 10"
        k = None
    tied = (
        tied_rows(matrix.scores, k, pol.score_precision)
        if matrix.scores is not None
        else np.zeros(len(matrix.query_ids), dtype=bool)
    )
    return TieSummary(
        rule=pol.ties,
        k=k,
        queries=int((tied & matrix.present).sum()),
        ranked=int(matrix.present.sum()),
    )
