"""A validator that compares the answer with the expected one: exact, contained, or a regex."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field

from evalframe.core.errors import DataError
from evalframe.plugin.protocols import Answer, Judgement, MiningTask, PluginConfig, PluginContext
from evalframe.plugin.registry import validator

__all__ = ["ExactConfig", "ExactValidator"]


class ExactConfig(PluginConfig):
    """Which ground-truth value to compare with, and how."""

    field: str = Field("answer", description="ground-truth key holding the expected answer")
    mode: Literal["exact", "contains", "regex"] = Field(
        "exact", description="equal, expected text inside the answer, or a regex search"
    )
    normalize: bool = Field(
        True, description="compare case-folded with runs of whitespace as one space"
    )


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


@validator("exact", config=ExactConfig)
class ExactValidator:
    """Passes when the answer equals (or contains, or matches) the expected answer."""

    cacheable = False  # cheaper to recompute than to read back

    def __init__(self, config: ExactConfig, context: PluginContext) -> None:
        self.config = config

    def validate(self, task: MiningTask, answer: Answer) -> Judgement:
        if self.config.field not in task.ground_truth:
            raise DataError(
                f"task {task.id!r} has no ground truth {self.config.field!r} for the exact "
                "validator",
                got=f"ground truth keys {sorted(task.ground_truth) or '(none)'}",
                hint=f"add an extractor benchmarks.<name>.ground_truth.{self.config.field}",
            )
        expected = str(task.ground_truth[self.config.field])
        got = answer.text
        if self.config.mode == "regex":
            flags = re.IGNORECASE if self.config.normalize else 0
            passed = re.search(expected, got, flags) is not None
        else:
            if self.config.normalize:
                expected, got = _norm(expected), _norm(got)
            passed = expected == got if self.config.mode == "exact" else expected in got
        return Judgement(passed=passed, detail="" if passed else f"expected {expected[:60]!r}")
