"""The retriever suite's rules for what the pipeline needs: the signatures it calls, and
finite scores, a NaN not taken for a ranking that changed (audit 47, findings 24 and 25).
Each on a retriever that breaks it and on one that keeps it."""

from __future__ import annotations

from typing import Any

from evalframe.core.types import Ranking
from evalframe.plugin.protocols import Query
from evalframe.plugin.registry import RETRIEVERS
from evalframe.testing import RetrieverContract
from tests.testing.test_suites import broken

QUERIES = [Query(id="q1", text="a"), Query(id="q2", text="b")]


class Good:
    def __init__(self, config: Any, context: Any) -> None: ...

    def retrieve(self, query: Query, k: int) -> Ranking:
        return Ranking.from_pairs(query.id, [("d1", 2.0), ("d2", 1.0)][:k])


class NoContext(Good):
    def __init__(self, config: Any) -> None: ...


class NoK(Good):
    def retrieve(self, query: Query) -> Ranking:  # type: ignore[override]  # the mistake
        return super().retrieve(query, 5)


class Infinite(Good):
    def retrieve(self, query: Query, k: int) -> Ranking:
        return Ranking.from_pairs(query.id, [("d1", float("inf")), ("d2", 1.0)][:k])


def suite(cls: type) -> Any:
    RETRIEVERS.add("t_rules", cls)
    return type("T", (RetrieverContract,), {"plugin_name": "t_rules"})()


def test_the_signatures_the_pipeline_calls_are_checked() -> None:
    with RETRIEVERS.scoped():
        suite(Good).test_called_as_the_pipeline_calls_it(Good(None, None))
    with RETRIEVERS.scoped():
        contract = suite(NoContext)
        broken(
            lambda: contract.test_called_as_the_pipeline_calls_it(NoContext(None)),
            "it is called as Plugin(config, context)",
        )
    with RETRIEVERS.scoped():
        contract = suite(NoK)
        broken(
            lambda: contract.test_called_as_the_pipeline_calls_it(NoK(None, None)),
            "it is called as retrieve(query, k)",
        )


def test_an_infinite_score_breaks_the_finite_rule() -> None:
    with RETRIEVERS.scoped():
        suite(Good).test_scores_are_finite(Good(None, None), QUERIES)
    with RETRIEVERS.scoped():
        contract = suite(Infinite)
        broken(
            lambda: contract.test_scores_are_finite(Infinite(None, None), QUERIES),
            "every score is a finite number (query 'q1' has inf)",
        )


class NotANumber(Good):
    def retrieve(self, query: Query, k: int) -> Ranking:
        return Ranking.from_pairs(query.id, [("d1", float("nan")), ("d2", 1.0)][:k])


class Changing(Good):
    calls = 0

    def retrieve(self, query: Query, k: int) -> Ranking:
        Changing.calls += 1
        return Ranking.from_pairs(query.id, [("d1", float(Changing.calls)), ("d2", 0.0)][:k])


def test_a_nan_score_is_blamed_on_the_finite_rule_not_on_determinism() -> None:
    with RETRIEVERS.scoped():
        contract = suite(NotANumber)
        broken(
            lambda: contract.test_scores_are_finite(NotANumber(None, None), QUERIES),
            "every score is a finite number (query 'q1' has nan)",
        )
        contract.test_deterministic(NotANumber(None, None), QUERIES)  # NaN each time: same
    with RETRIEVERS.scoped():
        contract = suite(Changing)
        broken(
            lambda: contract.test_deterministic(Changing(None, None), QUERIES),
            "the same query gives the same ranking every time",
        )
