"""Turning what an adapter got back (ids, pairs, dicts) into a valid Ranking.

Every adapter funnels its results through :func:`build_ranking`, so the rules
are the same everywhere: ids are non-empty strings (integers are turned into
their decimal string), scores are finite numbers or all absent (then synthetic
scores ``n - i`` keep the given order), the ranking is best first and at most
``k`` long, and a document appears once. The rules live in the core
(:mod:`evalframe.retrieval.answers`), which the Python API applies to a
function passed to ``evalframe.run`` too.
"""

from __future__ import annotations

from typing import Any

from evalframe.retrieval.answers import Item, build_ranking, coerce_id

__all__ = ["Item", "build_ranking", "clipped", "coerce_id", "dotted"]

#: How much of an id or a value a message quotes.
QUOTED = 80


def clipped(value: Any, limit: int = QUOTED) -> str:
    """``repr(value)`` cut to ``limit`` characters with ``…``: a runaway id (50 MB from a
    broken service) is quoted in a message by its start, not whole."""
    if isinstance(value, str) and len(value) > limit:
        value = value[:limit]  # cut before repr: repr of 50 MB is 50 MB
        return repr(value)[:limit] + "…"
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


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
