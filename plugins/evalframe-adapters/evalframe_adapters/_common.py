"""Turning what an adapter got back (ids, pairs, dicts) into a valid Ranking.

Every adapter funnels its results through :func:`build_ranking`, so the rules
are the same everywhere: ids are non-empty strings (integers are turned into
their decimal string), scores are finite numbers or all absent (then synthetic
scores ``n - i`` keep the given order), the ranking is best first and at most
``k`` long, and a document appears once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

from evalframe.core.errors import PluginError
from evalframe.core.types import Ranking

__all__ = ["Item", "build_ranking", "coerce_id", "dotted"]

#: One result before validation: a raw id and a score, or ``None`` for "no score".
Item = tuple[Any, Any]


def coerce_id(value: Any) -> str | None:
    """The id as a string, or ``None`` when it cannot be an id (``bool``, empty, a list...)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and value.strip():
        return value
    return None


def _score(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    f = float(value)
    return f if math.isfinite(f) else None


def dotted(value: Any, path: str) -> Any:
    """``value["a"]["b"][0]`` for path ``a.b.0``; raises ``KeyError`` naming the segment.

    An empty path is the value itself. Integer segments index lists.
    """
    if not path:
        return value
    current = value
    for segment in path.split("."):
        if isinstance(current, dict):
            if segment not in current:
                raise KeyError(segment)
            current = current[segment]
        elif isinstance(current, list) and segment.lstrip("-").isdigit():
            index = int(segment)
            if not -len(current) <= index < len(current):
                raise KeyError(segment)
            current = current[index]
        else:
            raise KeyError(segment)
    return current


def build_ranking(
    query_id: str,
    items: Sequence[Item],
    k: int,
    *,
    source: str,
    duplicates: Literal["error", "first"] = "error",
    **extra: Any,
) -> Ranking:
    """A best-first ranking of at most ``k`` documents from ``(id, score)`` items.

    ``source`` names who produced the items (``function mymod:search``) for
    error messages. Scores must be all numbers or all ``None``; without scores
    the given order is the ranking and the scores are ``n, n-1, ..., 1``. With
    scores, items are sorted by score, highest first (stable, so ties keep the
    given order). ``duplicates="error"`` reports a repeated id as a
    :class:`PluginError` naming the query; ``"first"`` keeps the first one.
    """
    ids: list[str] = []
    raw_scores: list[Any] = []
    seen: set[str] = set()
    for position, (raw_id, raw_score) in enumerate(items, start=1):
        doc = coerce_id(raw_id)
        if doc is None:
            raise PluginError(
                f"{source} returned an invalid document id for query {query_id!r} "
                f"(result {position})",
                expected="a non-empty string or an integer",
                got=repr(raw_id)[:80],
            )
        if doc in seen:
            if duplicates == "first":
                continue
            raise PluginError(
                f"{source} returned document {doc!r} twice for query {query_id!r}",
                hint="return each document once (deduplicate chunk hits per document "
                "before returning them)",
            )
        seen.add(doc)
        ids.append(doc)
        raw_scores.append(raw_score)

    given = [s is not None for s in raw_scores]
    if any(given) and not all(given):
        raise PluginError(
            f"{source} gave scores for some documents but not others for query {query_id!r}",
            hint="give every result a score, or none (then the order is the ranking)",
        )
    if ids and all(given):
        scores: list[float] = []
        for doc, raw in zip(ids, raw_scores, strict=True):
            value = _score(raw)
            if value is None:
                raise PluginError(
                    f"{source} gave document {doc!r} a score that is not a finite number "
                    f"for query {query_id!r}",
                    got=repr(raw)[:80],
                )
            scores.append(value)
        order = sorted(range(len(ids)), key=lambda i: -scores[i])  # stable: ties keep order
        pairs = [(ids[i], scores[i]) for i in order]
    else:
        n = len(ids)
        pairs = [(doc, float(n - i)) for i, doc in enumerate(ids)]
    return Ranking.from_pairs(query_id, pairs[: max(k, 0)], **extra)
