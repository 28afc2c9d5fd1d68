"""What the pipeline checks of a retriever as it drives it (retrieval.retrieve): the
direction of its scores, the signature of retrieve, generators from retrieve_batch,
max_concurrency, and whose exception a crash is. Audit 47, findings 4, 12, 13, 14, 19."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from evalframe.core.errors import PluginError
from evalframe.core.types import GoldenQuery, GoldenSet, Ranking
from evalframe.plugin.blame import culprit
from evalframe.plugin.protocols import PluginContext, Query
from evalframe.retrieval.cache import RunCache
from evalframe.retrieval.retrieve import retrieve_all

GOLDEN = GoldenSet.build(
    "g", [GoldenQuery(id=f"q{i}", text=f"text {i}", judgments={"a": 1}) for i in range(1, 4)]
)
HERE = f"retriever plugin 'r' ({__name__})"


class Scored:
    """Answers every query with the documents a, b, c and the scores it is given."""

    def __init__(self, *scores: Sequence[float]) -> None:
        self.scores = {f"q{i + 1}": s for i, s in enumerate(scores)}

    def retrieve(self, query: Query, k: int) -> Ranking:
        return Ranking.from_pairs(query.id, list(zip("abc", self.scores[query.id], strict=True)))


def test_distances_as_scores_are_refused_naming_the_retriever() -> None:
    with pytest.raises(PluginError) as info:
        retrieve_all(Scored((0, 1, 2), (0.5, 0.7, 0.9), (1, 1, 3)), GOLDEN, 3, name="r")
    assert info.value.message == (
        f"{HERE} returned scores that rise down every ranking (query 'q1': 0, 1, 2): "
        "evalframe ranks by score, highest first, so each ranking would be scored upside down"
    )
    assert info.value.hint is not None
    assert info.value.hint.startswith("return similarities (higher is better)")


def test_cached_distances_are_refused_as_fresh_ones(tmp_path: Path) -> None:
    class NotAsked:
        def retrieve(self, query: Query, k: int) -> Ranking:
            raise AssertionError("every query is cached")

    cache = RunCache(tmp_path, {"retriever": "r"})
    rising = [(0.1, 0.2, 0.3), (1, 2, 3), (5, 5, 6)]
    cache.put_many(
        [
            (q.text, Ranking.from_pairs(q.id, list(zip("abc", s, strict=True))), None)
            for q, s in zip(GOLDEN.queries, rising, strict=True)
        ],
        3,
    )
    with pytest.raises(PluginError) as info:
        retrieve_all(NotAsked(), GOLDEN, 3, name="r", cache=cache)
    assert "(query 'q1': 0.1, 0.2, 0.3)" in info.value.message
    assert cache.hits == 3


def test_a_run_file_listing_rising_scores_is_not_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a TREC run file's order is ignored (trec_eval sorts by score): run_file hands the
    # documents back best score first, so a file written worst first is no distance
    runfile = pytest.importorskip("evalframe_runfile.retriever")
    path = tmp_path / "run.trec"
    path.write_text(
        "".join(
            f"q{i} Q0 {doc} {rank} {score} tag\n"
            for i in (1, 2, 3)
            for rank, (doc, score) in enumerate([("a", 1.0), ("b", 2.0), ("c", 3.0)], 1)
        )
    )
    config = runfile.RunFileConfig(path=str(path), format="trec")
    retriever = runfile.RunFileRetriever(config, PluginContext())
    run = retrieve_all(retriever, GOLDEN, 3, name="run_file", progress=False)
    assert {q: r.doc_ids for q, r in run.rankings.items()} == {
        "q1": ("c", "b", "a"),
        "q2": ("c", "b", "a"),
        "q3": ("c", "b", "a"),
    }
    assert capsys.readouterr().err == ""


def test_some_rising_rankings_are_one_warning_with_the_count(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # q1 best first; q2 rises; q3 all equal (no direction): 1 of the 2 that have one
    run = retrieve_all(Scored((3, 2, 1), (1, 2, 3), (1, 1, 1)), GOLDEN, 3, name="r")
    assert len(run.rankings) == 3
    assert capsys.readouterr().err == (
        f"warning: {HERE}: 1 of 2 rankings have scores that rise down the list (query 'q2': "
        "1, 2, 3); evalframe ranks by score, highest first, so they are scored in the "
        "scores' order, not in the order returned\n"
    )


def test_results_in_no_order_are_a_warning_not_a_refusal(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # every ranking's first score is below its last, but none is sorted: no distances
    retrieve_all(Scored((1, 3, 2), (1, 3, 2), (1, 3, 2)), GOLDEN, 3, name="r")
    assert "3 of 3 rankings have scores that rise" in capsys.readouterr().err


def test_best_first_and_tied_rankings_pass_without_a_word(
    capsys: pytest.CaptureFixture[str],
) -> None:
    retrieve_all(Scored((3, 2, 1), (2, 2, 2), (5, 5, 1)), GOLDEN, 3, name="r")
    assert capsys.readouterr().err == ""


def test_retrieve_without_k_is_refused_before_any_query() -> None:
    class NoK:
        asked = 0

        def retrieve(self, query: Query) -> Ranking:
            NoK.asked += 1
            return Ranking.from_pairs(query.id, [])

    with pytest.raises(PluginError) as info:
        retrieve_all(NoK(), GOLDEN, 3, name="r")  # type: ignore[arg-type]
    assert info.value.message.startswith(
        f"{HERE} cannot be called as retrieve(query, k): its signature is "
        "retrieve(query: 'Query') -> 'Ranking' (too many positional arguments)"
    )
    assert NoK.asked == 0


def test_a_generator_from_retrieve_batch_is_taken_as_its_answers() -> None:
    class Yields:
        def retrieve(self, query: Query, k: int) -> Ranking:
            raise AssertionError("the batch is asked")

        def retrieve_batch(self, queries: Sequence[Query], k: int) -> Iterator[Ranking]:
            for q in queries:
                yield Ranking.from_pairs(q.id, [("a", 1.0)])

    run = retrieve_all(Yields(), GOLDEN, 3, name="r")
    assert {q: r.doc_ids for q, r in run.rankings.items()} == {
        "q1": ("a",),
        "q2": ("a",),
        "q3": ("a",),
    }


def test_max_concurrency_of_the_wrong_type_names_the_plugin() -> None:
    class FromEnv(Scored):
        max_concurrency: Any = "4"

    with pytest.raises(PluginError) as info:
        retrieve_all(FromEnv((3, 2, 1), (3, 2, 1), (3, 2, 1)), GOLDEN, 3, name="r")
    assert info.value.message == f"{HERE} has max_concurrency='4' (a str)"


@pytest.mark.parametrize("workers", [1, 4])
def test_what_retrieve_raises_is_blamed_with_the_query(workers: int) -> None:
    class Crashes(Scored):
        max_concurrency = workers

        def retrieve(self, query: Query, k: int) -> Ranking:
            if query.id == "q2":
                answers: dict[str, Ranking] = {}
                return answers["boom"]  # a KeyError from inside the plugin
            return super().retrieve(query, k)

    with pytest.raises(KeyError) as info:
        retrieve_all(Crashes((3, 2, 1), (3, 2, 1), (3, 2, 1)), GOLDEN, 3, name="r")
    assert culprit(info.value) == (HERE, "retrieving query 'q2'")


def test_one_rising_ranking_alone_is_a_warning_not_a_refusal(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Two documents in no order rise one time in two: one ranking is no evidence."""
    one = GoldenSet.build("g", [GOLDEN.queries[0]])
    retrieve_all(Scored((1, 2, 3)), one, 3, name="r")
    assert "1 of 1 rankings have scores that rise" in capsys.readouterr().err
