"""The checks `retrieve_all` makes on every answer, whichever way the retriever is driven.

A broken answer stops the run with a PluginError that names the retriever, the query and
the rule, before anything is cached: one by one, in batches and from threads alike.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from evalframe.core.errors import PluginError
from evalframe.core.types import GoldenQuery, GoldenSet, Ranking
from evalframe.plugin.protocols import Query
from evalframe.retrieval.retrieve import retrieve_all

GOLDEN = GoldenSet.build(
    "g", [GoldenQuery(id=f"q{i}", text=f"text {i}", judgments={"d1": 1}) for i in range(3)]
)


class Answers:
    """Answers ``q1`` with ``bad`` and every other query with a plain ranking."""

    def __init__(self, bad: Ranking | object, mode: str) -> None:
        self.bad, self.mode = bad, mode
        if mode == "threads":
            self.max_concurrency = 2
        if mode == "batch":
            self.retrieve_batch = self._batch

    def retrieve(self, query: Query, k: int) -> Ranking | object:
        if query.id == "q1":
            return self.bad
        return Ranking(query_id=query.id, doc_ids=("d1", "d2"), scores=(2.0, 1.0))

    def _batch(self, queries: Sequence[Query], k: int) -> list[Ranking | object]:
        return [self.retrieve(q, k) for q in queries]


MODES = ["one-by-one", "batch", "threads"]


@pytest.mark.parametrize("mode", MODES)
def test_a_nan_score_names_the_document_and_the_query(mode: str) -> None:
    bad = Ranking(query_id="q1", doc_ids=("d1", "d2", "d3"), scores=(3.0, float("nan"), 1.0))
    with pytest.raises(PluginError) as info:
        retrieve_all(Answers(bad, mode), GOLDEN, 10, name="mine", progress=False)
    text = info.value.render()
    assert "retriever 'mine' gave document 'd2' (rank 2) of query 'q1' the score NaN" in text


@pytest.mark.parametrize("mode", MODES)
def test_more_than_k_documents_is_refused(mode: str) -> None:
    bad = Ranking(query_id="q1", doc_ids=("a", "b", "c"), scores=(3.0, 2.0, 1.0))
    with pytest.raises(PluginError, match="returned 3 docs for query 'q1', more than k=2"):
        retrieve_all(Answers(bad, mode), GOLDEN, 2, name="mine", progress=False)


@pytest.mark.parametrize("mode", MODES)
def test_an_answer_for_another_query_is_refused(mode: str) -> None:
    bad = Ranking(query_id="q2", doc_ids=("d1",), scores=(1.0,))
    with pytest.raises(PluginError, match="answered query 'q1' with a ranking for 'q2'"):
        retrieve_all(Answers(bad, mode), GOLDEN, 10, name="mine", progress=False)


@pytest.mark.parametrize("mode", MODES)
def test_an_answer_that_is_not_a_ranking_is_refused(mode: str) -> None:
    with pytest.raises(PluginError, match="returned list for query 'q1', not a Ranking"):
        retrieve_all(Answers(["d1"], mode), GOLDEN, 10, name="mine", progress=False)


def test_infinite_scores_are_an_order_and_are_kept() -> None:
    """±inf sort like any number (a hard filter's 'always first'); only NaN has no order."""
    ranked = Ranking(query_id="q1", doc_ids=("a", "b"), scores=(float("inf"), float("-inf")))
    run = retrieve_all(Answers(ranked, "one-by-one"), GOLDEN, 10, progress=False)
    assert run.rankings["q1"].scores == (float("inf"), float("-inf"))


def test_after_a_failure_the_queued_queries_are_not_started() -> None:
    """From threads, a failing query let every query already queued (up to twice the
    threads) start and wait out its own retries: a service that never answers took twice
    as long to report. The queries running finish, the queued ones are not started, and
    the earliest failure in the golden order is raised, whatever the timing."""
    import threading
    import time

    golden = GoldenSet.build(
        "g", [GoldenQuery(id=f"q{i}", text=f"t{i}", judgments={"d": 1}) for i in range(20)]
    )
    started: list[str] = []
    lock = threading.Lock()

    class Down:
        max_concurrency = 2

        def retrieve(self, query: Query, k: int) -> Ranking:
            with lock:
                started.append(query.id)
            time.sleep(0.05)
            raise RuntimeError(f"service down ({query.id})")

    with pytest.raises(RuntimeError, match=r"service down \(q0\)"):
        retrieve_all(Down(), golden, 5, progress=False)
    # the two running when they failed; q2 and q3, queued (2 * workers), never started
    assert sorted(started) == ["q0", "q1"], started


def test_only_the_queries_after_the_failed_one_are_told_to_stop() -> None:
    """retrieval.stopping: q1 fails at once while q0 and q2 are in flight. q2, after it in
    the golden order, is told to stop (its answer cannot matter); q0, before it, is not:
    its own failure is the earliest, and is the error raised, whatever the timing."""
    import threading

    from evalframe.retrieval.stopping import Stopped, stop_requested, wait_or_stop

    golden = GoldenSet.build(
        "g", [GoldenQuery(id=f"q{i}", text=f"t{i}", judgments={"d": 1}) for i in range(3)]
    )
    told: dict[str, bool] = {}
    both_started = threading.Barrier(3)

    class Mixed:
        max_concurrency = 3

        def retrieve(self, query: Query, k: int) -> Ranking:
            both_started.wait(timeout=5)  # all three in flight before any fails
            if query.id == "q1":
                raise RuntimeError("q1 refused")
            told[query.id] = wait_or_stop(1.0)  # a retry's wait, cut short if told
            if told[query.id]:
                assert stop_requested()
                raise Stopped()
            raise RuntimeError(f"{query.id} refused after its wait")

    with pytest.raises(RuntimeError, match="q0 refused after its wait"):
        retrieve_all(Mixed(), golden, 5, progress=False)
    assert told == {"q0": False, "q2": True}
    assert not stop_requested()  # outside the pipeline's threads, never


def test_a_retriever_that_gives_up_untold_is_an_error_not_a_silent_drop() -> None:
    from evalframe.retrieval.stopping import Stopped

    golden = GoldenSet.build(
        "g", [GoldenQuery(id=f"q{i}", text=f"t{i}", judgments={"d": 1}) for i in range(3)]
    )

    class Quitter:
        max_concurrency = 2

        def retrieve(self, query: Query, k: int) -> Ranking:
            if query.id == "q1":
                raise Stopped()  # no query had failed: nobody told it to stop
            return Ranking(query_id=query.id, doc_ids=("d",), scores=(1.0,))

    with pytest.raises(PluginError, match=r"gave up query 'q1' \(raised Stopped\) though no"):
        retrieve_all(Quitter(), golden, 5, progress=False)
