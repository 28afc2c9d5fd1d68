"""The gate contract: a verdict the pipeline can trust, from what the gate reads."""

from __future__ import annotations

import math
import numbers
from typing import Any, ClassVar

import numpy as np
import pytest

from evalframe.assess.results import Evaluation, GateResult, GateView
from evalframe.core.types import GoldenQuery, GoldenSet, Ranking, Run
from evalframe.metrics import Metric, Policies, evaluate, parse_metric
from evalframe.plugin.protocols import Gate
from evalframe.plugin.registry import GATES, Registry
from evalframe.plugin.testing.base import PluginContract

__all__ = ["GateContract", "sample_view"]

#: What the default view scores besides the gate's own ``required_metrics()``.
DEFAULT_METRICS = ("RR", "R@5", "P@5", "nDCG@10", "AP", "Hit@5")


def sample_view(metrics: list[str] | tuple[str, ...] = DEFAULT_METRICS) -> GateView:
    """Six queries in two slices (``difficulty`` easy/hard, ``category`` a/b), one of
    them negative, scored with ``metrics`` and 200 bootstrap resamples: what a gate
    sees on a small run."""
    judged = [
        ("e1", "easy", "a", {"d1": 2, "d2": 1}, ["d1", "x1", "d2"]),
        ("e2", "easy", "b", {"d3": 1}, ["x1", "d3", "x2"]),
        ("e3", "easy", "a", {"d4": 1}, ["d4"]),
        ("h1", "hard", "b", {"d5": 1, "d6": 2}, ["x1", "x2", "x3", "x4", "d6"]),
        ("h2", "hard", "a", {"d7": 1}, ["x1", "x2"]),
        ("n1", "hard", "b", {"d8": 0}, ["x1"]),  # a negative example: nothing relevant
    ]
    golden = GoldenSet.build(
        "contract",
        [
            GoldenQuery(
                id=qid,
                text=f"query {qid}",
                judgments=labels,
                metadata={"difficulty": difficulty, "category": category},
            )
            for qid, difficulty, category, labels, _ in judged
        ],
    )
    run = Run(
        rankings={
            qid: Ranking.from_pairs(qid, [(d, float(len(ids) - i)) for i, d in enumerate(ids)])
            for qid, _, _, _, ids in judged
        }
    )
    measures: list[Metric] = list(dict.fromkeys(parse_metric(m) for m in metrics))
    policies = Policies()
    scores = evaluate(measures, golden, run, policies)
    evaluation = Evaluation.build(golden, run, scores, measures, policies, bootstrap=200, seed=1)
    return GateView(evaluation)


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)


class GateContract(PluginContract):
    """Rules for gates. Provide a ``gate`` fixture (the plugin built with its config).

    The suite's ``view`` fixture is :func:`sample_view` with the metrics the
    gate requires; override it for a gate that needs more (a baseline: build
    an :class:`Evaluation` with ``baseline`` set). A run's exit code follows
    ``passed``: a truthy string there once passed a failing run, so the rule
    is a bool. The gate reads the evaluation; it must not change it, since
    every gate after it and every report reads the same one.
    """

    registry: ClassVar[Registry[Any]] = GATES

    @pytest.fixture
    def gate(self) -> Gate:
        pytest.fail(f"{type(self).__name__} must define a `gate` fixture")

    @pytest.fixture
    def view(self, gate: Gate) -> GateView:
        return sample_view([*DEFAULT_METRICS, *self._required(gate)])

    def _required(self, gate: Gate) -> list[str]:
        required = getattr(gate, "required_metrics", None)
        if required is None:
            return []
        names = required()
        assert isinstance(names, list | tuple), self._rule(
            f"required_metrics() returns a list of metric names (got {type(names).__name__})"
        )
        assert all(isinstance(n, str) for n in names), self._rule(
            f"required_metrics() returns metric names as strings (got {names!r})"
        )
        return list(names)

    def test_required_metrics_are_metric_names(self, gate: Gate) -> None:
        for name in self._required(gate):
            try:
                parse_metric(name)
            except Exception as exc:  # noqa: BLE001 - any parse failure is the rule broken
                pytest.fail(self._rule(f"required_metrics() names metrics ({name!r}: {exc})"))

    def test_gives_a_gate_result_with_a_bool_verdict(self, gate: Gate, view: GateView) -> None:
        assert isinstance(gate, Gate), self._rule("it must have evaluate(view)")
        result = gate.evaluate(view)
        assert isinstance(result, GateResult), self._rule(
            f"evaluate() returns a GateResult (got {type(result).__name__})"
        )
        assert isinstance(result.passed, bool | np.bool_), self._rule(
            f"GateResult.passed is True or False (got {result.passed!r})"
        )
        said = isinstance(result.message, str) and bool(result.message.strip())
        assert said, self._rule("GateResult.message says why, in words")
        for name in ("value", "threshold"):
            got = getattr(result, name)
            assert got is None or _is_real(got), self._rule(
                f"GateResult.{name} is a number or None (got {got!r})"
            )
        for name in ("failures", "hints"):
            got = getattr(result, name)
            words = isinstance(got, list | tuple) and all(isinstance(s, str) for s in got)
            assert words, self._rule(f"GateResult.{name} is a sequence of strings (got {got!r})")

    def test_the_same_results_give_the_same_verdict(self, gate: Gate, view: GateView) -> None:
        first, second = gate.evaluate(view), gate.evaluate(view)
        same = first.as_dict() == second.as_dict() or (
            # NaN is not equal to itself: a value of NaN twice is the same verdict
            first.passed == second.passed and first.message == second.message
        )
        assert same, self._rule("the same results give the same verdict and message")

    def test_reads_the_results_without_changing_them(self, gate: Gate, view: GateView) -> None:
        ev: Evaluation = view._ev  # the suite's own view: compared before and after
        before = {m: v.copy() for m, v in ev.scores.values.items()}
        overall = dict(ev.overall)
        gate.evaluate(view)
        for m, values in before.items():
            assert np.array_equal(values, ev.scores.values[m], equal_nan=True), self._rule(
                f"it must not change the per-query values it reads ({m})"
            )
        assert all(
            overall[m] == ev.overall[m]
            or (math.isnan(overall[m].mean) and math.isnan(ev.overall[m].mean))
            for m in overall
        ), self._rule("it must not change the aggregates it reads")
