"""User code the python adapter's tests point at (like a user's my_retriever.py)."""

from __future__ import annotations

from evalframe import Query, Ranking

DOCS = {
    "cats": ["d1", "d4"],
    "dogs": ["d2", "d5"],
    "fish": ["d3"],
}


def search(query, k):
    """The README example: ids, best first."""
    return [d for word, docs in DOCS.items() if word in query for d in docs][:k]


def search_one_arg(query):
    return [d for word, docs in DOCS.items() if word in query for d in docs]


def scored_pairs(query, k):
    return [("d1", 0.2), ("d2", 0.9), ("d3", 0.5)]


def scored_dicts(query, k):
    return [{"id": 1, "score": 3.0}, {"id": "d2", "score": 4.0}]


def mapping(query, k):
    return {"a": 0.1, "b": 0.7}


def with_query(query: Query, k: int) -> Ranking:
    return Ranking.from_pairs(query.id, [(f"{query.id}-hit", 1.0)], answer="yes")


def wrong_query_id(query: Query, k: int) -> Ranking:
    return Ranking.from_pairs("other", [("d1", 1.0)])


def nothing(query, k):
    return None


def duplicates(query, k):
    return ["d1", "d2", "d1"]


def returns_a_string(query, k):
    return "d1"


def unsorted_mixed(query, k):
    return [("d1", 1.0), "d2"]


def broken(query, k):
    raise RuntimeError("my index is corrupt")


def batch_search(queries, k):
    return [search(q, k) for q in queries]


def batch_by_id(queries: list[Query], k):
    return {q.id: search(q.text, k) for q in queries}


BATCH_CALLS: list[int] = []


def counted_batch(queries, k):
    BATCH_CALLS.append(len(queries))
    return batch_search(queries, k)


class Searcher:
    """A class: built once with init_kwargs, its retrieve() used."""

    instances = 0

    def __init__(self, prefix: str = "doc") -> None:
        type(self).instances += 1
        self.prefix = prefix

    def retrieve(self, query, k):
        return [f"{self.prefix}{i}" for i in range(k)]


class CallableSearcher:
    def __call__(self, query: Query, k: int):
        return [query.id]


class NotARetriever:
    pass


ready_made = Searcher(prefix="obj")
NOT_CALLABLE = 42
