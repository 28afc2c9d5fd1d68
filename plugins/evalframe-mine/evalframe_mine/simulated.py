"""A solver whose success probabilities are known: the miner's test bench and demo.

Its chance of success is ``base_rate`` plus the ``lift`` of each planted
document present in the context. Lifts add up, and the config must keep the
sum at most 1, so a planted document's true Δp is exactly its lift (the
other documents' draws are independent of it) and every other document's is
exactly 0. The miner's estimates can then be checked against the truth.

The coin is seeded by the trial's seed, so a trial always gives the same
answer and different trials are independent. A task may carry its own
script in the metadata field ``simulation`` (``{base_rate, lift, answer}``;
pass it with the benchmark's ``solver_fields``); the config's values are the
defaults.
"""

from __future__ import annotations

import random
from typing import Any

from pydantic import Field, model_validator

from evalframe.core.errors import DataError
from evalframe.plugin.protocols import Answer, Attempt, PluginConfig, PluginContext
from evalframe.plugin.registry import solver

__all__ = ["SimulatedConfig", "SimulatedSolver", "success_probability"]


class SimulatedConfig(PluginConfig):
    """Known success probabilities: a base rate plus a lift per planted document."""

    base_rate: float = Field(0.1, ge=0, le=1, description="chance of success with no planted doc")
    lift: dict[str, float] = Field(
        default_factory=dict, description="planted doc id -> added chance of success"
    )
    answer: str = Field("solved", description="the answer given on success")
    wrong_answer: str = Field("I could not solve this.", description="the answer on failure")
    metadata_key: str | None = Field(
        "simulation", description="task metadata field with a per-task {base_rate, lift, answer}"
    )

    @model_validator(mode="after")
    def _at_most_one(self) -> SimulatedConfig:
        _check(self.base_rate, self.lift, "the config")
        return self


def _check(base: float, lift: dict[str, float], where: str) -> None:
    if any(not 0 <= v <= 1 for v in lift.values()) or base + sum(lift.values()) > 1 + 1e-12:
        raise ValueError(
            f"in {where}, base_rate + the lifts must stay within [0, 1] (got base_rate {base} "
            f"and lifts {lift}); otherwise a planted document's Δp is no longer its lift"
        )


def success_probability(base: float, lift: dict[str, float], context_ids: set[str]) -> float:
    return base + sum(v for doc, v in lift.items() if doc in context_ids)


@solver("simulated", config=SimulatedConfig)
class SimulatedSolver:
    """Succeeds with a known probability that rises when planted documents are in the context."""

    def __init__(self, config: SimulatedConfig, context: PluginContext) -> None:
        self.config = config

    def script(self, attempt: Attempt) -> tuple[float, dict[str, float], str]:
        base, lift, answer = self.config.base_rate, dict(self.config.lift), self.config.answer
        key = self.config.metadata_key
        own: Any = attempt.metadata.get(key) if key else None
        if own is None:
            return base, lift, answer
        if not isinstance(own, dict):
            raise DataError(
                f"task {attempt.task_id!r}: metadata field {key!r} must be a mapping "
                "{base_rate, lift, answer}",
                got=repr(own)[:80],
            )
        base = float(own.get("base_rate", base))
        lift = {str(k): float(v) for k, v in (own.get("lift") or {}).items()}
        try:
            _check(base, lift, f"task {attempt.task_id!r}")
        except ValueError as exc:
            raise DataError(str(exc)) from None
        return base, lift, str(own.get("answer", answer))

    def solve(self, attempt: Attempt) -> Answer:
        base, lift, answer = self.script(attempt)
        chance = success_probability(base, lift, {d.id for d in attempt.context})
        success = random.Random(attempt.seed).random() < chance
        return Answer(
            text=answer if success else self.config.wrong_answer,
            metadata={"p_success": round(chance, 12)},
        )
