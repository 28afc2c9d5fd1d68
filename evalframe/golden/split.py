"""Subsets of a golden set: the tuning/held-out split and the shards of one evaluation.

Both are chosen from the queries alone, deterministically, so that every job of
a sweep, on any machine, picks the same queries without talking to the others.

**Tuning split** (``tuning:``). Tuning a retriever's parameters on the whole
golden set and reporting the best figure overstates it: the parameters were
chosen on those very queries. The split puts each query in the *tuning* part
or the *held-out* part by a keyed hash of its id: queries are ordered by
``sha256("<seed>:<id>")`` and the first ``round(fraction × n)`` are the tuning
part. The same seed always gives the same split, adding a query to the golden
set moves no other query across (only the boundary shifts), and the split does
not depend on a random generator's implementation. ``part`` picks what a run
evaluates: ``all`` (the default), ``tune`` or ``heldout``.

**Shards** (``shard=i/n``). One evaluation too large for one job is spread over
``n`` jobs; shard ``i`` retrieves the queries at positions ``i, i + n, i + 2n,
...`` of the golden set's order. Round robin rather than blocks, so that slow
queries that sit together in a file (one long topic) are spread over the jobs.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from evalframe.core.types import GoldenSet

__all__ = ["Shard", "TuningConfig", "apply_split", "parse_shard", "shard_queries", "split_ids"]


class TuningConfig(BaseModel):
    """``tuning:`` the objective of a tuning sweep, and which split of the queries a run uses."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    metric: str | None = Field(
        None,
        description="the metric a sweeper optimises (the mean over the evaluated queries); "
        "null: the run returns no objective",
    )
    part: Literal["all", "tune", "heldout"] = Field(
        "all", description="the queries this run evaluates: all, the tuning or the held-out part"
    )
    fraction: float = Field(0.5, gt=0, lt=1, description="share of the queries in the tuning part")
    seed: int = Field(0, description="the split's seed: the same seed gives the same split")
    direction: Literal["maximize", "minimize"] = Field(
        "maximize", description="whether a higher or a lower objective is better"
    )


def split_ids(ids: list[str], fraction: float, seed: int) -> tuple[list[str], list[str]]:
    """``(tuning, held_out)`` ids, each in the order given (see the module docstring)."""
    ranked = sorted(ids, key=lambda q: (hashlib.sha256(f"{seed}:{q}".encode()).hexdigest(), q))
    n_tune = round(fraction * len(ids))
    if len(ids) >= 2:
        n_tune = min(max(n_tune, 1), len(ids) - 1)  # neither part is ever empty
    tuning = set(ranked[:n_tune])
    return [q for q in ids if q in tuning], [q for q in ids if q not in tuning]


def apply_split(golden: GoldenSet, tuning: TuningConfig) -> GoldenSet:
    """The part of ``golden`` that ``tuning.part`` names, as a golden set of its own.

    The part gets its own content hash (it *is* the set the run is scored on,
    so a baseline from the whole set is refused), and its provenance records
    the split: the whole set's name and hash, seed, fraction, and both sizes.
    """
    if tuning.part == "all":
        return golden
    tune_ids, held_ids = split_ids([q.id for q in golden], tuning.fraction, tuning.seed)
    keep = set(tune_ids if tuning.part == "tune" else held_ids)
    record: dict[str, Any] = {
        "part": tuning.part,
        "seed": tuning.seed,
        "fraction": tuning.fraction,
        "of": {"name": golden.name, "content_hash": golden.content_hash, "queries": len(golden)},
        "tune_queries": len(tune_ids),
        "heldout_queries": len(held_ids),
    }
    return GoldenSet.build(
        f"{golden.name}[{tuning.part}]",
        [q for q in golden if q.id in keep],
        provenance={**golden.provenance, "split": record},
        projections=golden.projections,
    )


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (``shard=index/count`` on the command line)."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


def parse_shard(value: str) -> Shard:
    """``"i/n"`` with ``0 <= i < n``; a ValueError that says what was expected otherwise."""
    found = _SHARD.match(value)
    if found is None:
        raise ValueError("expected i/n, e.g. shard=0/4")  # the caller says what it got
    index, count = int(found[1]), int(found[2])
    if count < 1:
        raise ValueError(f"shard {value!r}: the number of shards (after the /) is at least 1")
    if not 0 <= index < count:
        raise ValueError(
            f"shard {value!r}: the index counts from 0 and must be below the number of shards "
            f"(0/{count} to {count - 1}/{count})"
        )
    return Shard(index, count)


def shard_queries(golden: GoldenSet, shard: Shard) -> list[str]:
    """The ids of the queries shard ``shard`` retrieves, in golden-set order."""
    return [q.id for q in golden.queries[shard.index :: shard.count]]
