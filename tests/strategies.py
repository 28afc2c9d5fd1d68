"""Hypothesis strategies shared by the property tests: judgments (qrels) and runs.

Doc ids come from a small pool so that runs and judgments overlap, and the
pool mixes ids whose string order differs from their numeric order ("d10" <
"d2") so tie-breaking by id is exercised. Scores come from a handful of values
so ties are frequent unless a strategy asks for distinct scores.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import settings
from hypothesis import strategies as st

__all__ = [
    "DOC_POOL",
    "PROPERTY_SETTINGS",
    "UNJUDGED_DOC",
    "Case",
    "cases",
    "labels",
    "qrels",
    "rankings",
]

DOC_POOL = ("d1", "d2", "d3", "d10", "d11", "d20", "a", "B", "é", "x-1")
#: Never in DOC_POOL, so never judged.
UNJUDGED_DOC = "zz-unjudged"
QUERY_POOL = ("q1", "q2", "q3", "q4", "q5")

#: Fast, deterministic-enough settings for every property test (no example database on disk).
PROPERTY_SETTINGS = settings(max_examples=60, deadline=None, database=None)

Qrels = dict[str, dict[str, int]]
RunDict = dict[str, list[tuple[str, float]]]


def labels(min_label: int = -1, max_label: int = 3) -> st.SearchStrategy[int]:
    return st.integers(min_label, max_label)


def judgments(min_label: int = -1, max_label: int = 3) -> st.SearchStrategy[dict[str, int]]:
    return st.dictionaries(st.sampled_from(DOC_POOL), labels(min_label, max_label), max_size=8)


def qrels(
    min_queries: int = 1, max_queries: int = 4, min_label: int = -1, max_label: int = 3
) -> st.SearchStrategy[Qrels]:
    return st.dictionaries(
        st.sampled_from(QUERY_POOL),
        judgments(min_label, max_label),
        min_size=min_queries,
        max_size=max_queries,
    )


@st.composite
def rankings(
    draw: st.DrawFn, *, distinct_scores: bool = False, max_size: int = 8
) -> list[tuple[str, float]]:
    """One ranking: unique doc ids with scores, in an arbitrary (not sorted) order."""
    docs = draw(st.lists(st.sampled_from(DOC_POOL), unique=True, max_size=max_size))
    if distinct_scores:
        scores = draw(
            st.lists(st.integers(-50, 50), min_size=len(docs), max_size=len(docs), unique=True)
        )
        values = [s / 4 for s in scores]
    else:
        values = draw(
            st.lists(
                st.sampled_from([0.0, 0.5, 1.0, 2.0, -1.0]), min_size=len(docs), max_size=len(docs)
            )
        )
    return list(zip(docs, values, strict=True))


@dataclass(frozen=True)
class Case:
    """Judgments and a run over (mostly) the same queries."""

    qrels: Qrels
    run: RunDict


@st.composite
def cases(
    draw: st.DrawFn,
    *,
    distinct_scores: bool = False,
    allow_missing: bool = True,
    allow_extra: bool = True,
    min_label: int = -1,
    max_label: int = 3,
) -> Case:
    q = draw(qrels(min_label=min_label, max_label=max_label))
    run: RunDict = {}
    for qid in q:
        if allow_missing and draw(st.integers(0, 4)) == 0:
            continue  # the run has no ranking for this query
        run[qid] = draw(rankings(distinct_scores=distinct_scores))
    if allow_extra and draw(st.booleans()):
        extra = draw(st.sampled_from(QUERY_POOL))
        if extra not in q:
            run[extra] = draw(rankings(distinct_scores=distinct_scores))
    return Case(qrels=q, run=run)
