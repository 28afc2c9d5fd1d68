"""The retriever contract: one query, a batch and threads all give the same rankings."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

import pytest

from evalframe.core.types import Ranking
from evalframe.plugin.protocols import (
    Query,
    Retriever,
)
from evalframe.plugin.registry import (
    RETRIEVERS,
    Registry,
)
from evalframe.plugin.testing.base import PluginContract

__all__ = ["RetrieverContract"]


class RetrieverContract(PluginContract):
    """Rules for retrievers. Provide ``retriever`` and ``queries`` fixtures.

    Both ways the pipeline drives a retriever are covered: a batch retriever's
    ``retrieve_batch`` must answer every query as ``retrieve`` does, and one
    that declares ``max_concurrency`` must give the same answers when called
    from that many threads at once. Set ``score_tolerance`` for a retriever
    whose scores differ in the last float bits between a batch and one query
    (a neural encoder pads a batch); doc ids must still be equal.
    """

    registry: ClassVar[Registry[Any]] = RETRIEVERS
    k: ClassVar[int] = 5
    score_tolerance: ClassVar[float] = 0.0

    @pytest.fixture
    def retriever(self) -> Retriever:
        pytest.fail(f"{type(self).__name__} must define a `retriever` fixture")

    @pytest.fixture
    def queries(self) -> list[Query]:
        pytest.fail(f"{type(self).__name__} must define a `queries` fixture (2+ queries)")

    def _answers(self, retriever: Retriever, queries: list[Query], k: int) -> list[Ranking]:
        out = []
        for q in queries:
            r = retriever.retrieve(q, k)
            if r is not None:
                assert isinstance(r, Ranking), self._rule(
                    f"retrieve() returns a Ranking or None (got {type(r).__name__})"
                )
                out.append(r)
        return out

    def test_satisfies_the_protocol(self, retriever: Retriever) -> None:
        assert isinstance(retriever, Retriever), self._rule("it must have retrieve(query, k)")
        spec = self.registry.get(self.plugin_name)
        assert isinstance(retriever, spec.obj), self._rule(
            "the fixture must build the registered class"
        )

    def test_called_as_the_pipeline_calls_it(self, retriever: Retriever) -> None:
        """``Plugin(config, context)`` and ``retrieve(query, k)`` (and
        ``retrieve_batch(queries, k)``): a fixture may build the plugin another way,
        so the signatures are checked, as the run checks them before its first query."""
        import inspect

        spec = self.registry.get(self.plugin_name)
        calls = [(spec.obj, "Plugin(config, context)")]
        calls.append((retriever.retrieve, "retrieve(query, k)"))
        batch = getattr(retriever, "retrieve_batch", None)
        if callable(batch):
            calls.append((batch, "retrieve_batch(queries, k)"))
        for call, shown in calls:
            try:
                inspect.signature(call).bind(None, None)
            except TypeError as exc:
                pytest.fail(self._rule(f"it is called as {shown} ({exc})"))
            except ValueError:  # no signature to read (a C callable)
                continue

    def test_scores_are_finite(self, retriever: Retriever, queries: list[Query]) -> None:
        for r in self._answers(retriever, queries, self.k):
            bad = [s for s in r.scores if not math.isfinite(s)]
            assert not bad, self._rule(
                f"every score is a finite number (query {r.query_id!r} has {bad[0]!r})"
            )

    def test_answers_at_least_one_query(self, retriever: Retriever, queries: list[Query]) -> None:
        assert len(queries) >= 2, "give the contract at least two queries"
        answers = self._answers(retriever, queries, self.k)
        assert any(len(a) for a in answers), self._rule("it must find something for some query")

    def test_ranking_is_for_the_query_asked(
        self, retriever: Retriever, queries: list[Query]
    ) -> None:
        for q in queries:
            r = retriever.retrieve(q, self.k)
            if r is not None:
                assert r.query_id == q.id, self._rule("Ranking.query_id is the query's id")

    @pytest.mark.parametrize("k", [1, 3])
    def test_returns_at_most_k(self, retriever: Retriever, queries: list[Query], k: int) -> None:
        for r in self._answers(retriever, queries, k):
            assert len(r) <= k, self._rule(f"at most k={k} documents (got {len(r)})")

    def test_no_duplicate_documents(self, retriever: Retriever, queries: list[Query]) -> None:
        for r in self._answers(retriever, queries, self.k):
            assert len(set(r.doc_ids)) == len(r.doc_ids), self._rule("no doc id twice in a ranking")

    def test_best_first(self, retriever: Retriever, queries: list[Query]) -> None:
        for r in self._answers(retriever, queries, self.k):
            assert list(r.scores) == sorted(r.scores, reverse=True), self._rule(
                "documents come best first (scores non-increasing)"
            )

    def test_ids_are_strings(self, retriever: Retriever, queries: list[Query]) -> None:
        for r in self._answers(retriever, queries, self.k):
            assert all(isinstance(d, str) and d for d in r.doc_ids), self._rule(
                "doc ids are non-empty strings"
            )

    def test_deterministic(self, retriever: Retriever, queries: list[Query]) -> None:
        def plain(rankings: list[Ranking]) -> list[Any]:
            # NaN != NaN: compared as a marker, so a NaN score is blamed by
            # test_scores_are_finite, not taken for a ranking that changed
            return [
                (r.model_dump(exclude={"scores"}), [None if s != s else s for s in r.scores])
                for r in rankings
            ]

        first = plain(self._answers(retriever, queries, self.k))
        second = plain(self._answers(retriever, queries, self.k))
        assert first == second, self._rule("the same query gives the same ranking every time")

    # -- how the pipeline drives it: in batches, or from several threads ---------------
    def _same(self, got: Ranking | None, want: Ranking | None, how: str, query: Query) -> None:
        rule = f"{how} answers query {query.id!r} as retrieve() does"
        if got is None or want is None:
            assert got is want, self._rule(rule)
            return
        assert isinstance(got, Ranking), self._rule(f"{how} returns Rankings or None")
        assert got.query_id == query.id, self._rule(f"{how}: Ranking.query_id is the query's id")
        assert got.doc_ids == want.doc_ids, self._rule(rule + " (the same documents, in order)")
        assert got.scores == pytest.approx(want.scores, rel=0, abs=self.score_tolerance), (
            self._rule(rule + f" (scores within {self.score_tolerance:g})")
        )
        plain = {"doc_ids", "scores", "latency_ms"}
        assert got.model_dump(exclude=plain) == want.model_dump(exclude=plain), self._rule(rule)

    def test_batch_answers_equal_one_by_one(
        self, retriever: Retriever, queries: list[Query]
    ) -> None:
        batch = getattr(retriever, "retrieve_batch", None)
        if not callable(batch):
            pytest.skip("not a batch retriever")
        one_by_one = [retriever.retrieve(q, self.k) for q in queries]
        answers = list(batch(queries, self.k))
        assert len(answers) == len(queries), self._rule(
            "retrieve_batch returns one answer per query, in order"
        )
        for q, got, want in zip(queries, answers, one_by_one, strict=True):
            self._same(got, want, "retrieve_batch", q)
        assert list(batch([], self.k)) == [], self._rule("an empty batch has no answers")

    def test_max_concurrency_is_a_positive_integer(self, retriever: Retriever) -> None:
        value = getattr(retriever, "max_concurrency", 1)
        rule = self._rule("max_concurrency, when set, is an integer >= 1")
        assert isinstance(value, int), rule
        assert not isinstance(value, bool), rule
        assert value >= 1, rule

    def test_notes_are_a_list_of_sentences(
        self, retriever: Retriever, queries: list[Query]
    ) -> None:
        notes = getattr(retriever, "notes", None)
        if notes is None:
            pytest.skip("no notes()")
        for q in queries:
            retriever.retrieve(q, self.k)
        said = notes()
        rule = self._rule("notes(), when present, returns a list of str (one warning each)")
        assert isinstance(said, list), rule
        assert all(isinstance(n, str) and n.strip() for n in said), rule

    def test_concurrent_calls_answer_as_one_by_one(
        self, retriever: Retriever, queries: list[Query]
    ) -> None:
        workers = getattr(retriever, "max_concurrency", 1)
        if callable(getattr(retriever, "retrieve_batch", None)) or workers == 1:
            pytest.skip("not called from several threads")
        one_by_one = [retriever.retrieve(q, self.k) for q in queries]
        asked = queries * 3  # the same query in flight more than once, too
        with ThreadPoolExecutor(max_workers=workers) as pool:
            answers = list(pool.map(lambda q: retriever.retrieve(q, self.k), asked))
        for q, got, want in zip(asked, answers, one_by_one * 3, strict=True):
            self._same(got, want, f"retrieve() from {workers} threads", q)
