"""A finding: one thing a golden-set check has to say, at a level and a place."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["LEVELS", "Finding", "Level", "count_levels"]

Level = Literal["error", "warning", "info"]
#: Report order: the things that fail a check first.
LEVELS: tuple[Level, ...] = ("error", "warning", "info")


@dataclass(frozen=True)
class Finding:
    """One result of a check.

    ``check`` names the rule (``duplicate``, ``plan``, ``entity``, ...) so a
    report can group findings and a test can select them; ``location`` is
    ``file:line`` when the record's line is known, else ``query <id>`` or None
    for set-wide findings.
    """

    level: Level
    check: str
    message: str
    location: str | None = None
    query_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "check": self.check,
            "message": self.message,
            "location": self.location,
            "query_id": self.query_id,
        }

    def render(self) -> str:
        where = f"{self.location}: " if self.location else ""
        return f"[{self.check}] {where}{self.message}"


def count_levels(findings: Iterable[Finding]) -> dict[str, int]:
    """``{"error": n, "warning": n, "info": n}``, every level present."""
    counts = Counter(f.level for f in findings)
    return {level: counts.get(level, 0) for level in LEVELS}
