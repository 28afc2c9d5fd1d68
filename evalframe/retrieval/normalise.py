"""Retrieved ids written the way the golden set writes its ids, before anything is scored.

A dataset may say how its document ids are normalised (Galaxy's
``--normalize-tools`` drops the version of a Tool Shed id): the loader then
has ``id_normaliser()``, and the pipeline passes every ranking through the
same function here. One setting thus normalises gold and predictions alike,
whatever the retriever: a run file, an LLM recommender, your own code.

Two retrieved ids that become one id are one document listed twice. Galaxy
de-duplicates predictions in order, which is ``metrics.policies.duplicates:
keep_first`` (the first, higher-ranked one stays); under ``error`` the run
stops and says which two ids met. A repeat that was already a repeat before
normalising is left for the metric engine, which applies the same policy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from evalframe.core.errors import DataError
from evalframe.core.messages import shown, warn
from evalframe.core.types import Ranking, Run

__all__ = ["normalise_run"]


def _normalise(
    ranking: Ranking, normalise_id: Callable[[str], str], duplicates: str
) -> tuple[Ranking, int]:
    ids = [normalise_id(d) for d in ranking.doc_ids]
    if ids == list(ranking.doc_ids):
        return ranking, 0
    first: dict[str, str] = {}  # normalised id -> the raw id first seen with it
    keep: list[int] = []
    for i, (raw, doc) in enumerate(zip(ranking.doc_ids, ids, strict=True)):
        seen = first.get(doc)
        if seen is not None and seen != raw:
            if duplicates == "error":
                raise DataError(
                    f"query {ranking.query_id!r}: retrieved ids {seen!r} and {raw!r} are the "
                    f"same id {doc!r} once normalised, so one document is listed twice",
                    key="metrics.policies.duplicates",
                    hint="set metrics.policies.duplicates=keep_first to keep the first of the "
                    "two (Galaxy de-duplicates predictions in order), or drop the dataset's "
                    "normalise setting",
                )
            continue
        first.setdefault(doc, raw)
        keep.append(i)
    update = {
        "doc_ids": tuple(ids[i] for i in keep),
        "scores": tuple(ranking.scores[i] for i in keep),
    }
    return ranking.model_copy(update=update), len(ids) - len(keep)


def normalise_run(
    run: Run,
    normalise_id: Callable[[str], str] | None,
    duplicates: Literal["error", "keep_first"] = "error",
) -> Run:
    """``run`` with every id passed through ``normalise_id`` (the run itself when None).

    Rankings keep their order and scores; an id that normalising turned into
    an earlier one is dropped (keep_first) or stops the run (error). One
    warning says how many were dropped, in which queries.
    """
    if normalise_id is None:
        return run
    rankings: dict[str, Ranking] = {}
    dropped: dict[str, int] = {}
    for qid, ranking in run.rankings.items():
        rankings[qid], gone = _normalise(ranking, normalise_id, duplicates)
        if gone:
            dropped[qid] = gone
    if dropped:
        total = sum(dropped.values())
        warn(
            f"{total} retrieved id(s) in {len(dropped)} quer{'y' if len(dropped) == 1 else 'ies'} "
            "repeated an id ranked above them once normalised (the dataset's normalise "
            f"setting) and were dropped, keeping the first: {shown(list(dropped))}"
        )
    return run.model_copy(update={"rankings": rankings})
