"""Step A: the committed sampling plan, machine-checked, and each cell's author quota.

KnowCode §7 and §10.1 A: the plan is the task type × difficulty matrix,
committed before the pipeline runs; "the pipeline reads it and emits queries
only into the cells it defines. Overflow cells are rejected." Here a plan
naming a task type or difficulty outside the matrix is an error (exit 2)
before any call, and later steps reject a candidate that lands outside its
cell, or a record beyond its cell's target, with the rule ``plan-overflow``.

§10.1 B: "each agent emits 1.5× its cell's target (to allow for rejection
headroom)". A cell's quota is ``ceil(headroom × target)``, computed exactly
(1.1 × 10 is 11, where floating point says 11.000000000000002 and ceil 12).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from evalframe.core.errors import DataError, EvalframeError
from evalframe.golden.checks import load_plan
from evalframe.plugin.roles import DIFFICULTIES, TASK_TYPES

__all__ = ["Cell", "assign_ids", "id_offset", "plan_cells", "quota"]


@dataclass(frozen=True)
class Cell:
    task_type: str
    difficulty: str
    target: int
    quota: int

    @property
    def name(self) -> str:
        return f"{self.task_type}/{self.difficulty}"


def quota(target: int, headroom: float) -> int:
    """``ceil(headroom × target)`` in exact arithmetic: the candidates a cell's authors write."""
    return math.ceil(Fraction(str(headroom)) * target)


def _raw(plan: str | Mapping[str, Any]) -> tuple[dict[str, dict[str, int]], str | None]:
    if isinstance(plan, str):
        try:
            return load_plan(plan), plan
        except EvalframeError as exc:  # the file came from the config, not a --plan flag
            exc.key = "plan"
            raise
    out: dict[str, dict[str, int]] = {}
    for task, cells in plan.items():
        if not isinstance(cells, Mapping):
            raise DataError(
                f"plan entry {task!r} must map difficulty to a target count",
                key="plan",
                got=repr(cells)[:60],
            )
        for difficulty, target in cells.items():
            if isinstance(target, bool) or not isinstance(target, int) or target < 0:
                raise DataError(
                    f"plan cell {task}/{difficulty}: the target must be a count >= 0",
                    key="plan",
                    got=repr(target),
                )
            out.setdefault(str(task), {})[str(difficulty)] = target
    return out, None


def plan_cells(plan: str | Mapping[str, Any], headroom: float) -> tuple[list[Cell], str | None]:
    """The plan's cells in KnowCode's order (task types, then easy/medium/hard), with
    their quotas, and the plan file's path (None for a plan written in the config)."""
    raw, path = _raw(plan)
    seen: dict[tuple[str, str], int] = {}
    for task, cells in raw.items():
        for difficulty, target in cells.items():
            t, d = task.strip().casefold(), difficulty.strip().casefold()
            if t not in TASK_TYPES or d not in DIFFICULTIES:
                wrong = (
                    f"task type {task!r}" if t not in TASK_TYPES else f"difficulty {difficulty!r}"
                )
                raise DataError(
                    f"plan cell {task}/{difficulty}: {wrong} is outside the sampling matrix",
                    path=path,
                    key="plan",
                    expected=f"task types {', '.join(TASK_TYPES)} × difficulties "
                    f"{', '.join(DIFFICULTIES)} (KnowCode §7.1)",
                    hint="overflow cells are rejected: a query can only be written into a "
                    "cell of the matrix",
                )
            if (t, d) in seen:
                raise DataError(
                    f"plan cell {t}/{d} is given twice",
                    path=path,
                    key="plan",
                    hint="cell names match case-insensitively; keep one",
                )
            seen[(t, d)] = target
    out = [
        Cell(t, d, seen[(t, d)], quota(seen[(t, d)], headroom))
        for t in TASK_TYPES
        for d in DIFFICULTIES
        if (t, d) in seen
    ]
    if not any(c.target for c in out):
        raise DataError(
            "the plan asks for no query: every cell's target is 0",
            path=path,
            key="plan",
            expected="at least one cell with a target above 0",
        )
    return out, path


_NUMBERED = re.compile(r"^q_(\d+)$")


def id_offset(query_ids: Sequence[str]) -> int:
    """Where a new batch's ``q_NNNNN`` ids start: after the blessed set's highest one."""
    numbers = [int(m.group(1)) for q in query_ids if (m := _NUMBERED.match(q))]
    return max([len(query_ids), *numbers]) if query_ids else 0


def assign_ids(cells: Sequence[Cell], offset: int = 0) -> dict[str, list[str]]:
    """``{cell: [query ids of its author slots]}``: one id per slot, in plan order."""
    out: dict[str, list[str]] = {}
    n = offset
    for cell in cells:
        ids = []
        for _ in range(cell.quota):
            n += 1
            ids.append(f"q_{n:05d}")
        out[cell.name] = ids
    return out
