"""Asking a retriever for every golden query: checks on each answer, timing, and the cache.

A retriever's answer is checked as it arrives (a ``Ranking`` for the query asked,
at most k documents); a broken one stops the run with a ``PluginError`` naming
the retriever and the query.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from evalframe.core.errors import PluginError
from evalframe.core.types import Corpus, GoldenSet, Ranking, Run
from evalframe.plugin.protocols import Query, Retriever
from evalframe.retrieval.cache import RunCache, retriever_fingerprint

__all__ = ["retrieve_all", "run_cache"]


def retrieve_all(
    retriever: Retriever,
    golden: GoldenSet,
    depth: int,
    *,
    name: str = "retriever",
    progress: bool = True,
    cache: RunCache | None = None,
) -> Run:
    """Ask the retriever for every golden query, timing each call.

    The latency recorded is wall time around ``retrieve`` unless the
    retriever reports its own ``latency_ms`` (a remote service may know better).
    A retriever returns ``None`` for a query it has no answer for (a run file
    without that query); the query is then *missing*, not empty.

    With a ``cache``, a query whose ranking is cached is not retrieved again,
    and each new ranking is stored as soon as it arrives, so an interrupted
    run resumes where it stopped.
    """
    from tqdm import tqdm

    rankings: dict[str, Ranking] = {}
    bar = tqdm(
        golden.queries,
        desc=f"retrieving ({name})",
        unit="q",
        disable=None if progress else True,  # None: only on a terminal
        file=sys.stderr,
        leave=False,
    )
    inputs_of = getattr(retriever, "cache_inputs", None)
    for gq in bar:
        query = Query(id=gq.id, text=gq.text, metadata=gq.metadata)
        # what of the query besides its text the answer depends on (a template's fields)
        extra = inputs_of(query) if cache is not None and callable(inputs_of) else None
        if cache is not None and not gq.text.strip():
            # no text to key on (gold without a queries file): the id is then all that
            # tells two queries apart, or every one would get the first one's ranking
            extra = {"id": gq.id, "inputs": extra}
        if cache is not None:
            cached = cache.get(gq.id, gq.text, depth, extra)
            if cached is not None:
                rankings[gq.id] = cached
                continue
        start = time.perf_counter()
        ranking = retriever.retrieve(query, depth)
        elapsed_ms = (time.perf_counter() - start) * 1000.0
        if ranking is None:
            continue  # no answer for this query: metrics.policies.missing_query decides
        if not isinstance(ranking, Ranking):
            raise PluginError(
                f"retriever {name!r} returned {type(ranking).__name__} for query {gq.id!r}, "
                "not a Ranking",
                hint="build the result with evalframe.Ranking.from_pairs(query.id, pairs)",
            )
        if ranking.query_id != gq.id:
            raise PluginError(
                f"retriever {name!r} answered query {gq.id!r} with a ranking for "
                f"{ranking.query_id!r}",
                hint="set Ranking.query_id to the id of the query passed in",
            )
        if len(ranking) > depth:
            raise PluginError(
                f"retriever {name!r} returned {len(ranking)} docs for query {gq.id!r}, "
                f"more than k={depth}",
                hint="a retriever must return at most k documents",
            )
        if ranking.latency_ms is None:
            ranking = ranking.model_copy(update={"latency_ms": elapsed_ms})
        rankings[gq.id] = ranking
        if cache is not None:
            cache.put(gq.text, depth, ranking, extra)
    return Run(rankings=rankings, metadata={"retriever": name})


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
    )
    return RunCache(cache_dir, fingerprint)
