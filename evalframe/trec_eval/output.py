"""What ``evalframe trec-eval`` prints: trec_eval's lines, byte for byte, or JSON.

A line is ``measure<22 chars, left-justified>\\tqid|all\\tvalue``: floats with
four decimals, counts as integers, ``runid`` bare and ``relstring`` quoted.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["TrecEvalResult", "format_line"]


@dataclass
class TrecEvalResult:
    """What trec_eval would print: per-query rows (with -q) and the 'all' rows."""

    runid: str
    num_q: int
    measures: list[str]
    equivalents: dict[str, list[str]]
    per_query: list[tuple[str, dict[str, float | int | str]]] = field(default_factory=list)
    summary: dict[str, float | int | str] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)

    def lines(self) -> list[str]:
        return list(self.iter_lines())

    def iter_lines(self) -> Iterator[str]:
        """The printed lines one at a time (-q at 50k queries is 1.5M lines)."""
        for qid, row in self.per_query:
            for name, value in row.items():
                yield format_line(name, qid, value, self.kinds[name])
        for name, v in self.summary.items():
            yield format_line(name, "all", v, self.kinds[name])

    def to_json(self) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "runid": self.runid,
            "num_q": self.num_q,
            "measures": {name: self.equivalents[name] for name in self.measures},
        }
        if self.per_query:
            payload["per_query"] = dict(self.per_query)
        if self.summary:
            payload["all"] = self.summary
        return payload


def format_line(name: str, qid: str, value: float | int | str, kind: str) -> str:
    """One printed line, exactly as trec_eval formats it."""
    if name == "runid":
        text = str(value)
    elif kind == "str":
        text = f"'{value}'"
    elif kind == "int":
        text = str(int(value))
    else:
        text = f"{float(value):6.4f}"
    return f"{name:<22}\t{qid}\t{text}"
