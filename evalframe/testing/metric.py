"""The metric contract: one value per query, in its range, from that query alone."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import pytest

from evalframe.metrics import Metric, Policies, evaluate, parse_metric
from evalframe.metrics.measures import MetricDef
from evalframe.plugin.registry import METRICS, Registry
from evalframe.plugin.testing.base import PluginContract

__all__ = ["MetricContract"]

#: Judgments the suite scores: graded labels, an unjudged document, a query whose
#: relevant documents are all missed, one with nothing relevant (a negative example)
QRELS: dict[str, dict[str, int]] = {
    "top": {"a": 2, "b": 1, "c": 0},
    "deep": {"a": 1, "e": 2, "f": 1},
    "missed": {"m": 1},
    "tied": {"b": 1, "c": 1},
    "negative": {"a": 0, "b": 0},
    "empty": {"a": 1},
}
#: The rankings: best first, deeper than @3, with ties and an empty ranking
RUN: dict[str, list[tuple[str, float]]] = {
    "top": [("a", 9.0), ("b", 8.0), ("z", 7.0), ("c", 6.0)],
    "deep": [("x", 9.0), ("e", 8.0), ("y", 7.0), ("z", 6.0), ("w", 5.0), ("a", 4.0)],
    "missed": [("x", 3.0), ("y", 2.0), ("z", 1.0)],
    "tied": [("x", 5.0), ("b", 5.0), ("c", 5.0), ("y", 1.0)],
    "negative": [("a", 2.0), ("z", 1.0)],
    "empty": [],
}


class MetricContract(PluginContract):
    """Rules for metrics. Set ``plugin_name``; ``measures`` defaults to the metric with
    and without ``@k`` as it accepts (``Name@3``, ``Name@0.5`` for a recall cutoff).

    The engine averages per-query values and gates compare them with their
    declared range, so each query gets one number within ``bounds``; a value
    that moves when other queries are added (a kernel normalising over the
    whole matrix, or reading its padding) changes with the size of the golden
    set; and the canonical string is the metric's identity in every file.
    """

    registry: ClassVar[Registry[Any]] = METRICS
    measures: ClassVar[Sequence[str] | None] = None

    def _definition(self) -> MetricDef:
        spec = self.registry.get(self.plugin_name)
        assert isinstance(spec.obj, MetricDef), self._rule("it is registered with @metric")
        return spec.obj

    def _measures(self) -> list[Metric]:
        if self.measures is not None:
            return [parse_metric(m) for m in self.measures]
        d = self._definition()
        at = "@0.5" if d.cutoff == "recall" else "@3"
        names = {"required": [d.name + at], "optional": [d.name, d.name + at], "none": [d.name]}
        return [parse_metric(m) for m in names[d.k]]

    def test_the_canonical_string_names_the_same_metric(self) -> None:
        for m in self._measures():
            again = parse_metric(str(m))
            same = again == m and str(again) == str(m)
            assert same, self._rule(
                f"its canonical string parses back to itself ({str(m)!r} -> {str(again)!r})"
            )

    def test_one_value_per_query_within_its_range(self) -> None:
        definition = self._definition()
        bounds = definition.bounds
        # the queries it must score: with relevant documents retrieved, or (a metric of
        # negative examples, applies_to="negatives") the one with nothing relevant
        must = ("negative",) if definition.applies_to == "negatives" else ("top", "deep", "tied")
        scores = evaluate(self._measures(), QRELS, RUN, Policies(no_relevant="zero"))
        for m, values in scores.values.items():
            assert values.shape == (len(QRELS),), self._rule(
                f"{m} gives one value per query (got shape {values.shape})"
            )
            by_query = dict(zip(scores.query_ids, values.tolist(), strict=True))
            scored = {q: v for q, v in by_query.items() if not math.isnan(v)}
            for q in must:
                assert q in scored, self._rule(f"{m} gives query {q!r} a number (got NaN)")
            infinite = {q: v for q, v in scored.items() if not math.isfinite(v)}
            assert not infinite, self._rule(f"{m}'s values are finite (got {infinite})")
            if bounds is not None:
                low, high = bounds
                outside = {q: v for q, v in scored.items() if not low - 1e-9 <= v <= high + 1e-9}
                assert not outside, self._rule(
                    f"{m}'s values lie in the range it declares, {low} to {high} (got {outside})"
                )

    def test_a_querys_value_depends_on_that_query_alone(self) -> None:
        measures = self._measures()
        policies = Policies(no_relevant="zero")
        together = evaluate(measures, QRELS, RUN, policies)
        for i, q in enumerate(together.query_ids):
            alone = evaluate(measures, {q: QRELS[q]}, {q: RUN[q]}, policies)
            for m in measures:
                a, b = float(together.values[m][i]), float(alone.values[m][0])
                assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b), self._rule(
                    f"{m} of a query depends on that query alone ({q!r} is {b} alone and "
                    f"{a} beside the others): a kernel must not normalise over the queries, "
                    "nor read the padding of shorter rankings"
                )

    def test_the_same_input_gives_the_same_values(self) -> None:
        measures = self._measures()
        first = evaluate(measures, QRELS, RUN, Policies())
        second = evaluate(measures, QRELS, RUN, Policies())
        for m in measures:
            assert np.array_equal(first.values[m], second.values[m], equal_nan=True), self._rule(
                f"{m} is deterministic"
            )
