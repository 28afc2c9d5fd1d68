"""Policies: the cases on which evaluation tools disagree, decided once and in the open.

Every policy is a field of :class:`Policies`, stored in each run's summary so
that two runs (or a run and its baseline) can be checked for comparability.
See ``docs/metrics.md`` for each policy's rationale.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Policies", "ScorePrecision", "TieRule", "same_policies"]

#: How documents with equal scores are ordered (see :attr:`Policies.ties`).
TieRule = Literal["trec_eval", "given"]
#: The precision at which scores are compared when ranking.
ScorePrecision = Literal["float32", "float64"]


class Policies(BaseModel):
    """How the engine treats the cases on which evaluation tools disagree.

    See ``docs/metrics.md`` for each policy's rationale.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    no_relevant: Literal["skip", "zero", "bob"] = Field(
        "skip",
        description=(
            "a query with no relevant judged doc (a negative example): 'skip' leaves it out of "
            "rank-metric means, 'zero' scores it 0 like trec_eval, 'bob' gives recall 1.0 "
            "(B.O.B's convention) and computes the rest"
        ),
    )
    missing_query: Literal["zero", "skip"] = Field(
        "zero",
        description=(
            "a golden query the run has no ranking for: 'zero' scores it 0 (trec_eval -c), "
            "'skip' leaves it out (trec_eval's default)"
        ),
    )
    ties: TieRule = Field(
        "trec_eval",
        description=(
            "the order of documents with equal scores: 'trec_eval' ranks them by doc id "
            "descending (trec_eval's rule), 'given' keeps the order the retriever returned "
            "them in (B.O.B, Galaxy and ADK score the list as returned)"
        ),
    )
    score_precision: ScorePrecision = Field(
        "float32",
        description=(
            "precision at which scores are compared when ranking: 'float32' makes scores "
            "equal in float32 ties, as trec_eval does (it stores scores as float)"
        ),
    )
    drop_self_matches: bool = Field(
        False,
        description=(
            "drop a retrieved doc whose id equals the query id before scoring (BEIR does "
            "this silently; here it is an explicit choice, off by default)"
        ),
    )
    duplicates: Literal["error", "keep_first"] = Field(
        "error",
        description=(
            "a doc id twice in one ranking: 'error' stops (trec_eval), 'keep_first' keeps its "
            "first occurrence in the order given"
        ),
    )


def policy_differences(
    stored: Mapping[str, Any], current: Policies | Mapping[str, Any]
) -> list[str]:
    """``["ties: given vs trec_eval", ...]``: what :func:`same_policies` found unequal,
    read the same way (a key a run did not store is its default)."""
    now = current.model_dump() if isinstance(current, Policies) else dict(current)
    defaults = Policies().model_dump()
    a, b = {**defaults, **stored}, {**defaults, **now}
    return [
        f"{k}: {a.get(k)} vs {b.get(k)}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)
    ]


def same_policies(stored: Mapping[str, Any], current: Policies | Mapping[str, Any]) -> bool:
    """Whether policies stored by a run (a plain mapping) equal ``current``.

    A run written before a policy existed stored no value for it; it was
    scored under that policy's default (the only rule there was), so missing
    keys are read as defaults. Keys this evalframe does not know make the two
    unequal rather than an error: the run came from a newer version.
    """
    now = current.model_dump() if isinstance(current, Policies) else dict(current)
    known = set(Policies.model_fields)
    if set(stored) - known or set(now) - known:
        return dict(stored) == now
    defaults = Policies().model_dump()
    return {**defaults, **stored} == {**defaults, **now}
