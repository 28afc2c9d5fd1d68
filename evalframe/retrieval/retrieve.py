"""Asking a retriever for every golden query: in batches or concurrently, checked, timed, cached.

How a retriever is driven depends on what it offers (see
:class:`evalframe.plugin.protocols.Retriever`):

* ``retrieve_batch(queries, k)``: the queries are handed over in chunks of
  :data:`BATCH` and the retriever answers each chunk at once (bm25 tokenises
  and scores a chunk in one call, dense encodes it in one call);
* otherwise ``retrieve(query, k)`` is called from ``max_concurrency`` threads
  (a retriever's attribute; 1 when absent: one query at a time), which is
  what a remote service needs.

Every answer is checked as it arrives (a ``Ranking`` for the query asked, at
most k documents); a broken one stops the run with a ``PluginError`` naming
the retriever and the query. Answers are written to the cache as soon as they
are known (one write per chunk, or per group of finished requests), so an
interrupted run resumes where it stopped.
"""

from __future__ import annotations

import functools
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from evalframe.core.errors import PluginError
from evalframe.core.messages import warn
from evalframe.core.progress import quiet, step
from evalframe.core.types import Corpus, GoldenSet, Ranking, Run
from evalframe.plugin.blame import blamed, check_signature, who_made
from evalframe.plugin.protocols import Query, Retriever
from evalframe.retrieval.cache import RunCache, retriever_fingerprint
from evalframe.retrieval.stopping import Stopped, stoppable

__all__ = ["BATCH", "answers_in_batches", "ask_all", "concurrency", "retrieve_all", "run_cache"]

#: Queries handed to ``retrieve_batch`` at once: large enough for a batch API
#: to pay off, small enough that a killed run loses little and progress moves.
BATCH = 1024

#: ``(position in the queries asked, ranking or None, latency in ms)``
Answer = tuple[int, Ranking | None, float]


def concurrency(retriever: Any, name: str | None = None) -> int:
    """How many ``retrieve`` calls may run at once: the retriever's ``max_concurrency``, or 1.

    ``name``: the plugin's, said in the error (else the Python class's)."""
    value = getattr(retriever, "max_concurrency", 1)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        said = (
            who_made("retriever", name, retriever)
            if name is not None
            else f"retriever {type(retriever).__name__}"
        )
        raise PluginError(
            f"{said} has max_concurrency={value!r} (a {type(value).__name__})",
            expected="an integer >= 1 (how many queries it may be asked at once)",
        )
    return value


def answers_in_batches(retriever: Any) -> bool:
    """Whether the pipeline hands ``retriever`` its queries in batches: each query's
    latency is then its batch's time shared out evenly (p50 = p95 within a batch)."""
    return _batch_method(retriever) is not None


def _batch_method(retriever: Any) -> Callable[[Sequence[Query], int], Sequence[Any]] | None:
    method = getattr(retriever, "retrieve_batch", None)
    return method if callable(method) else None


def _check(name: str, query: Query, ranking: Any, depth: int) -> Ranking | None:
    """The answer for ``query`` if it is valid; a PluginError naming the rule it breaks."""
    if ranking is None:
        return None  # no answer for this query: metrics.policies.missing_query decides
    if not isinstance(ranking, Ranking):
        raise PluginError(
            f"retriever {name!r} returned {type(ranking).__name__} for query {query.id!r}, "
            "not a Ranking",
            hint="build the result with evalframe.Ranking.from_pairs(query.id, pairs)",
        )
    if ranking.query_id != query.id:
        raise PluginError(
            f"retriever {name!r} answered query {query.id!r} with a ranking for "
            f"{ranking.query_id!r}",
            hint="set Ranking.query_id to the id of the query passed in",
        )
    if len(ranking) > depth:
        raise PluginError(
            f"retriever {name!r} returned {len(ranking)} docs for query {query.id!r}, "
            f"more than k={depth}",
            hint="a retriever must return at most k documents",
        )
    scores = ranking.scores
    if any(s != s for s in scores):  # NaN: no order, so no metric; caught before the cache
        at = next(i for i, s in enumerate(scores) if s != s)
        raise PluginError(
            f"retriever {name!r} gave document {ranking.doc_ids[at]!r} (rank {at + 1}) of "
            f"query {query.id!r} the score NaN",
            expected="a number for every document (or no scores, then the order is the ranking)",
            hint="a NaN usually comes from a division by zero or an empty embedding; "
            "fix it in the retriever",
        )
    return ranking


def _batches(
    method: Callable[[Sequence[Query], int], Sequence[Any]],
    queries: Sequence[Query],
    depth: int,
    name: str,
    label: str,
) -> Iterator[list[Answer]]:
    for start in range(0, len(queries), BATCH):
        chunk = list(queries[start : start + BATCH])
        began = time.perf_counter()
        with blamed(label, f"retrieving a batch of {len(chunk)} queries from {chunk[0].id!r}"):
            answers = method(chunk, depth)
            if not isinstance(answers, Sequence | str | bytes) and isinstance(answers, Iterable):
                answers = list(answers)  # a generator: one answer per query all the same
        elapsed_ms = (time.perf_counter() - began) * 1000.0
        if isinstance(answers, (str, bytes)) or len(answers) != len(chunk):
            got = len(answers) if not isinstance(answers, (str, bytes)) else type(answers).__name__
            raise PluginError(
                f"retriever {name!r}: retrieve_batch returned {got} answers for "
                f"{len(chunk)} queries",
                hint="return one Ranking (or None) per query, in the order of the queries",
            )
        share = elapsed_ms / len(chunk)
        yield [
            (start + i, _check(name, q, a, depth), share)
            for i, (q, a) in enumerate(zip(chunk, answers, strict=True))
        ]


def _one(retriever: Retriever, query: Query, depth: int, label: str) -> tuple[Any, float]:
    """``retrieve(query, depth)`` and its wall time; what it raises is the plugin's
    (``label``: :func:`evalframe.plugin.blame.who_made`)."""
    began = time.perf_counter()
    with blamed(label, f"retrieving query {query.id!r}"):
        ranking = retriever.retrieve(query, depth)
    return ranking, (time.perf_counter() - began) * 1000.0


def _sequential(
    retriever: Retriever, queries: Sequence[Query], depth: int, name: str, label: str
) -> Iterator[list[Answer]]:
    for i, query in enumerate(queries):
        ranking, elapsed_ms = _one(retriever, query, depth, label)
        yield [(i, _check(name, query, ranking, depth), elapsed_ms)]


def _untold(label: str, query: Query, exc: Stopped) -> PluginError:
    return PluginError(
        f"{label} gave up query {query.id!r} (raised Stopped) though no earlier query had failed",
        hint="raise Stopped only when evalframe.retrieval.stopping.stop_requested() is true",
    )


def _after(first_failed: list[int], i: int) -> bool:
    """Whether query ``i`` comes after the earliest query that failed so far."""
    return first_failed[0] < i


#: What a worker hands back for a queued query it did not start (a query had failed).
_SKIPPED = RuntimeError("not started: an earlier query failed")


def _concurrent(
    retriever: Retriever,
    queries: Sequence[Query],
    depth: int,
    name: str,
    workers: int,
    label: str,
) -> Iterator[list[Answer]]:
    """Answers as they finish, from ``workers`` threads.

    At most ``2 * workers`` queries are in flight or queued, so an error or
    Ctrl-C stops the run quickly. On the first failure no new query is
    started (the queued ones neither: a service that never answers made each
    of them wait out its retries too), those already running finish (and are
    yielded, so they are cached), or, when they come after the failed one in
    the golden order, may give up their retries (:mod:`evalframe.retrieval.stopping`),
    then the failure of the earliest query in the golden order is raised: the same
    error whatever the timing. The threads are daemons: on
    Ctrl-C the process exits at once, abandoning the requests in flight
    (they were not answered, so nothing is lost) instead of waiting for them.
    """
    tasks: queue.SimpleQueue[int | None] = queue.SimpleQueue()
    done: queue.SimpleQueue[tuple[int, Any, float, BaseException | None]] = queue.SimpleQueue()
    stopping = threading.Event()  # a query failed: the queued ones are not started
    # the earliest position that failed so far: a query in flight after it may give up
    # its retries (retrieval.stopping), one before it may not (its failure could be first)
    first_failed = [len(queries)]
    lock = threading.Lock()

    def failed(i: int) -> None:
        with lock:
            first_failed[0] = min(first_failed[0], i)
        stopping.set()

    def work() -> None:
        while (i := tasks.get()) is not None:
            if stopping.is_set():
                # queued after the failing query (the queue is in golden order), so never
                # the earliest failure: skipping it changes which error is raised in no case
                done.put((i, None, 0.0, _SKIPPED))
                continue
            try:
                with stoppable(functools.partial(_after, first_failed, i)):
                    ranking, elapsed_ms = _one(retriever, queries[i], depth, label)
                done.put((i, ranking, elapsed_ms, None))
            except Stopped as exc:  # given up after an earlier query failed: never started
                if _after(first_failed, i):
                    done.put((i, None, 0.0, _SKIPPED))
                else:  # raised untold, it would drop the query without a word
                    failed(i)
                    done.put((i, None, 0.0, _untold(label, queries[i], exc)))
            except BaseException as exc:  # noqa: BLE001  # handed to the main thread
                failed(i)  # before this thread takes the next queued query
                done.put((i, None, 0.0, exc))

    threads = [
        threading.Thread(target=work, name=f"evalframe-retrieve-{n}", daemon=True)
        for n in range(workers)
    ]
    for thread in threads:
        thread.start()
    failures: dict[int, BaseException] = {}
    following = iter(range(len(queries)))
    running = 0
    try:
        while True:
            while not failures and running < 2 * workers:
                i = next(following, None)
                if i is None:
                    break
                tasks.put(i)
                running += 1
            if not running:
                break
            answers: list[Answer] = []
            first = True
            while running and (first or not done.empty()):  # all that finished by now
                i, ranking, elapsed_ms, error = done.get()
                first, running = False, running - 1
                if error is _SKIPPED:
                    continue
                if error is None:
                    try:
                        answers.append((i, _check(name, queries[i], ranking, depth), elapsed_ms))
                    except PluginError as exc:
                        error = exc
                if error is not None:
                    failures[i] = error
                    failed(i)
            if answers:
                yield sorted(answers, key=lambda a: a[0])
        if failures:
            raise failures[min(failures)]
    finally:
        for _ in threads:
            tasks.put(None)  # each thread ends after its current query


def ask_all(
    retriever: Retriever, queries: Sequence[Query], depth: int, *, name: str = "retriever"
) -> Iterator[list[Answer]]:
    """Every query's checked answer, in groups as they become known.

    Each group is a list of ``(position, ranking or None, latency_ms)``; groups
    arrive in no fixed order when the retriever is driven concurrently. This
    is how the pipeline drives a retriever, and how a retriever that wraps
    others (fusion) drives its components.
    """
    label = who_made("retriever", name, retriever)
    method = _batch_method(retriever)
    if method is not None:
        check_signature(method, (None, 0), label, "queries, k", type(retriever).__module__)
        return _batches(method, queries, depth, name, label)
    workers = concurrency(retriever, name)
    # `def retrieve(self, query)`, k forgotten: said before the first query, naming it
    check_signature(retriever.retrieve, (None, 0), label, "query, k", type(retriever).__module__)
    if workers == 1 or len(queries) <= 1:
        return _sequential(retriever, queries, depth, name, label)
    return _concurrent(retriever, queries, depth, name, workers, label)


def retrieve_all(
    retriever: Retriever,
    golden: GoldenSet,
    depth: int,
    *,
    name: str = "retriever",
    progress: bool = True,
    cache: RunCache | None = None,
) -> Run:
    """Ask the retriever for every golden query, timing each answer.

    The latency recorded is the wall time of the call (for a batch, its time
    divided by its queries) unless the retriever reports its own
    ``latency_ms`` (a remote service may know better). A retriever returns
    ``None`` for a query it has no answer for (a run file without that
    query); the query is then *missing*, not empty.

    With a ``cache``, a query whose ranking is cached is not retrieved again,
    and new rankings are stored as they arrive, so an interrupted run resumes
    where it stopped.
    """
    queries = [Query(id=gq.id, text=gq.text, metadata=gq.metadata) for gq in golden.queries]
    extras = _cache_inputs(retriever, queries) if cache is not None else {}
    found: dict[str, Ranking | None] = {}
    todo = queries
    if cache is not None:
        cached = cache.get_many([(q.id, q.text, extras[q.id]) for q in queries], depth)
        found.update(cached)
        todo = [q for q in queries if q.id not in cached]
    with quiet(not progress), step(f"retrieving ({name})", total=len(queries), unit="q") as bar:
        bar.advance(len(queries) - len(todo))
        for group in ask_all(retriever, todo, depth, name=name):
            fresh: list[tuple[str, Ranking, Any]] = []
            for i, ranking, elapsed_ms in group:
                query = todo[i]
                if ranking is not None and ranking.latency_ms is None:
                    ranking = ranking.model_copy(update={"latency_ms": elapsed_ms})
                found[query.id] = ranking
                if ranking is not None:
                    fresh.append((query.text, ranking, extras.get(query.id)))
            if cache is not None and fresh:
                cache.put_many(fresh, depth)
            bar.advance(len(group))
    rankings = {q.id: r for q in queries if (r := found.get(q.id)) is not None}
    _check_direction(rankings, who_made("retriever", name, retriever))
    return Run(rankings=rankings, metadata={"retriever": name})


def _check_direction(rankings: dict[str, Ranking], label: str) -> None:
    """Scores that rise down the rankings a retriever returned: distances given as scores.

    evalframe ranks by score, highest first (trec_eval's rule), so a ranking whose
    first (best) document scores lower than its last is scored upside down. When
    every ranking with two different end scores is sorted by rising score, the
    retriever returns distances: refused, exit 2, naming it (a list in no order
    is almost never sorted). When only some rise (a reranker's order kept with
    the first stage's scores, results in no order), one warning with the count
    says the scores, not the order returned, were scored. Rankings of fewer than
    two documents, or whose first and last scores are equal, have no direction
    and are not counted. ``rankings`` are the run's, cached ones included: a
    cached run of distances is refused as the fresh one was. ``run_file`` is
    never refused: it hands back each query's documents best score first
    whatever its file's order (which trec_eval ignores too). The cost: one
    comparison a ranking, and a C-level ``sorted`` of those that rise.
    """
    judged = rising = ascending = 0
    example: Ranking | None = None
    for ranking in rankings.values():
        scores = ranking.scores
        if len(scores) < 2 or scores[0] == scores[-1]:
            continue
        judged += 1
        if scores[0] < scores[-1]:
            rising += 1
            example = example or ranking
            ascending += sorted(scores) == list(scores)  # non-decreasing: C, no Python loop
    if not rising or example is None:
        return
    shown = ", ".join(f"{s:g}" for s in example.scores[:3]) + (
        ", …" if len(example.scores) > 3 else ""
    )
    # sorted by rising score, every one of two or more: distances, not a fluke (a single
    # ranking of two documents in no order rises one time in two: a warning then)
    if ascending == judged >= 2:
        raise PluginError(
            f"{label} returned scores that rise down every ranking (query "
            f"{example.query_id!r}: {shown}): evalframe ranks by score, highest first, so "
            "each ranking would be scored upside down",
            expected="higher scores for better documents (similarities, not distances)",
            hint="return similarities (higher is better): e.g. -distance, or 1 - cosine "
            "distance, as the score",
        )
    warn(
        f"{label}: {rising} of {judged} rankings have scores that rise down the list (query "
        f"{example.query_id!r}: {shown}); evalframe ranks by score, highest first, so they are "
        "scored in the scores' order, not in the order returned"
    )


def _cache_inputs(retriever: Any, queries: Sequence[Query]) -> dict[str, Any]:
    """What of each query besides its text its answer depends on, for the cache key.

    A retriever's ``cache_inputs(query)`` (a template's fields); and a query
    with no text (gold without a queries file) is keyed on its id too, or
    every such query would get the first one's ranking.
    """
    inputs_of = getattr(retriever, "cache_inputs", None)
    extras: dict[str, Any] = {}
    for q in queries:
        extra = inputs_of(q) if callable(inputs_of) else None
        if not q.text.strip():
            extra = {"id": q.id, "inputs": extra}
        extras[q.id] = extra
    return extras


def run_cache(
    spec: Any, config: Any, corpus: Corpus | None, retriever: Any, cache_dir: Any
) -> RunCache | None:
    """The retrieval cache for a retriever plugin, unless it says caching is pointless."""
    if not getattr(spec.obj, "cacheable", True):
        return None
    identity = getattr(retriever, "cache_identity", None)
    fingerprint = retriever_fingerprint(
        spec.name,
        spec.version,
        config,
        corpus.content_hash if corpus is not None else None,
        identity() if callable(identity) else None,
        module=spec.module,  # its code hash, unless its version pins it (plugin.codeid)
    )
    return RunCache(cache_dir, fingerprint)
