"""Human spot-check: a stratified review sample, and the verdict ceilings (KnowCode §8).

KnowCode's protocol: review at least 15% of each batch, stratified so every
(task type, difficulty) cell has at least one reviewed record; each record
gets one verdict, ``correct | minor_issue | major_issue | wrong``; the batch
passes when major_issue + wrong < 5% of the sample, minor_issue < 15%, and no
easy query is ``wrong``. Phase 2 tightens the first ceiling to 3%: every
number is a parameter.
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalframe.core.errors import DataError
from evalframe.core.io import read_jsonl
from evalframe.core.types import GoldenSet

__all__ = [
    "REVIEW_FIELDS",
    "VERDICTS",
    "Ceilings",
    "ReviewResult",
    "allocate",
    "check_review",
    "read_review",
    "sample_for_review",
]

VERDICTS = ("correct", "minor_issue", "major_issue", "wrong")
#: Added to each sampled record; a record's own field of the same name is kept as ``record_<name>``.
REVIEW_FIELDS = ("verdict", "reviewer", "notes")


def allocate(sizes: Mapping[Any, int], fraction: float) -> dict[Any, int]:
    """How many to draw from each stratum: at least one per non-empty stratum, and
    ``ceil(fraction * total)`` overall when that is larger, spread proportionally
    (largest remainder) without exceeding any stratum's size."""
    total = sum(sizes.values())
    target = math.ceil(fraction * total - 1e-9)
    alloc = {k: min(n, max(1, math.floor(fraction * n))) for k, n in sizes.items() if n > 0}
    remaining = target - sum(alloc.values())
    if remaining > 0:
        order = sorted(
            (k for k in alloc if alloc[k] < sizes[k]),
            key=lambda k: (-(fraction * sizes[k] - alloc[k]), str(k)),
        )
        while remaining > 0 and order:
            for k in list(order):
                if remaining == 0:
                    break
                alloc[k] += 1
                remaining -= 1
                if alloc[k] >= sizes[k]:
                    order.remove(k)
    return alloc


def sample_for_review(
    golden: GoldenSet,
    records: Mapping[str, dict[str, Any]],
    *,
    fraction: float = 0.15,
    seed: int = 0,
    strata: Sequence[str] = ("task_type", "difficulty"),
    locations: Mapping[str, str] | None = None,
) -> tuple[list[dict[str, Any]], dict[tuple[str, ...], tuple[int, int]]]:
    """A stratified sample as review records, and ``{cell: (sampled, size)}``.

    Each review record is the query's record as written in the golden file,
    plus ``verdict: null``, ``reviewer: null``, ``notes: ""``, its ``stratum``
    and the ``location`` it came from. Records keep the golden set's order; the
    same seed always draws the same sample.
    """
    if not 0 < fraction <= 1:
        raise DataError(
            "the review fraction must be in (0, 1]",
            key="--fraction",
            got=str(fraction),
        )
    cells: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for q in golden.queries:
        cell = tuple(str(q.metadata.get(f, "(none)")) for f in strata)
        cells[cell].append(q.id)
    alloc = allocate({c: len(ids) for c, ids in cells.items()}, fraction)
    rng = random.Random(seed)
    chosen: set[str] = set()
    for cell in sorted(cells):
        chosen.update(rng.sample(cells[cell], alloc[cell]))
    out = []
    for q in golden.queries:
        if q.id not in chosen:
            continue
        record = dict(records.get(q.id) or {"id": q.id, "text": q.text})
        for name in (*REVIEW_FIELDS, "stratum", "location"):
            if name in record:
                record[f"record_{name}"] = record.pop(name)
        record["stratum"] = {f: q.metadata.get(f) for f in strata}
        if locations and q.id in locations:
            record["location"] = locations[q.id]
        record.update({"verdict": None, "reviewer": None, "notes": ""})
        out.append(record)
    summary = {c: (alloc[c], len(ids)) for c, ids in sorted(cells.items())}
    return out, summary


# -- checking verdicts ----------------------------------------------------------------


@dataclass(frozen=True)
class Ceilings:
    """The spot-check ceilings; a rate must stay strictly below its ceiling."""

    major_wrong: float = 0.05
    minor: float = 0.15
    wrong_easy: int = 0  # at most this many `wrong` verdicts on easy queries
    easy_value: str = "easy"


@dataclass
class ReviewResult:
    """Verdict counts, rates and the ceilings they breach."""

    path: str
    counts: dict[str, int]
    total: int
    wrong_easy: list[str] = field(default_factory=list)
    breaches: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.breaches

    def rate(self, *verdicts: str) -> float:
        return sum(self.counts.get(v, 0) for v in verdicts) / self.total if self.total else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "total": self.total,
            "counts": self.counts,
            "rates": {
                "major_issue+wrong": self.rate("major_issue", "wrong"),
                "minor_issue": self.rate("minor_issue"),
                "correct": self.rate("correct"),
            },
            "wrong_on_easy": self.wrong_easy,
            "breaches": self.breaches,
            "warnings": self.warnings,
            "passed": self.passed,
        }

    def render(self) -> str:
        lines = [f"spot-check of {self.total} reviewed record(s) in {self.path}"]
        for v in VERDICTS:
            n = self.counts.get(v, 0)
            lines.append(f"  {v:<12} {n:>5}  {self.rate(v):6.1%}")
        lines.append(f"  major_issue + wrong: {self.rate('major_issue', 'wrong'):.1%}")
        lines.append(f"  wrong on easy queries: {len(self.wrong_easy)}")
        for w in self.warnings:
            lines.append(f"warning: {w}")
        for b in self.breaches:
            lines.append(f"✗ {b}")
        lines.append(
            "result: PASSED (every ceiling holds)"
            if self.passed
            else f"result: FAILED ({len(self.breaches)} ceiling(s) breached; requeue the batch)"
        )
        return "\n".join(lines)


def _difficulty(record: dict[str, Any]) -> Any:
    for source in (record, record.get("stratum"), record.get("metadata")):
        if isinstance(source, dict) and "difficulty" in source:
            return source["difficulty"]
    return None


def _record_id(record: dict[str, Any], line: int) -> str:
    for key in ("query_id", "id"):
        if key in record:
            return str(record[key])
    return f"line {line}"


def read_review(path: str | Path) -> list[tuple[int, dict[str, Any]]]:
    """``(line, record)`` for each line of a review file; a missing or unknown verdict
    is a :class:`DataError` naming the line."""
    out = []
    for line, record in read_jsonl(path, what="review file"):
        if not isinstance(record, dict):
            raise DataError(
                "a review line must be a JSON object",
                path=path,
                line=line,
                got=type(record).__name__,
            )
        verdict = record.get("verdict")
        if verdict not in VERDICTS:
            what = "has no verdict" if verdict is None else "has an unknown verdict"
            raise DataError(
                f"record {_record_id(record, line)} {what}",
                path=path,
                line=line,
                expected=" | ".join(VERDICTS),
                got=repr(verdict),
                hint="every sampled record needs a verdict before the batch can be checked",
            )
        out.append((line, record))
    if not out:
        raise DataError("the review file has no records", path=path, expected="one JSON per line")
    return out


def check_review(path: str | Path, ceilings: Ceilings | None = None) -> ReviewResult:
    """Read verdicts from ``path`` and apply ``ceilings``."""
    c = ceilings or Ceilings()
    records = read_review(path)
    counts = Counter(r["verdict"] for _, r in records)
    result = ReviewResult(
        path=str(path), counts={v: counts.get(v, 0) for v in VERDICTS}, total=len(records)
    )
    anonymous = []
    for line, r in records:
        if r["verdict"] == "wrong" and str(_difficulty(r)).casefold() == c.easy_value.casefold():
            result.wrong_easy.append(f"{path}:{line} ({_record_id(r, line)})")
        if not r.get("reviewer"):
            anonymous.append(str(line))
    if anonymous:
        result.warnings.append(
            f"{len(anonymous)} record(s) name no reviewer (lines {', '.join(anonymous[:20])}"
            f"{' …' if len(anonymous) > 20 else ''}); KnowCode records reviewer ids "
            "in the meta file"
        )
    major = result.rate("major_issue", "wrong")
    if major >= c.major_wrong:
        result.breaches.append(
            f"major_issue + wrong is {major:.1%} of the sample; the ceiling is < "
            f"{c.major_wrong:.0%} (--max-major-wrong)"
        )
    minor = result.rate("minor_issue")
    if minor >= c.minor:
        result.breaches.append(
            f"minor_issue is {minor:.1%} of the sample; the ceiling is < {c.minor:.0%} "
            "(--max-minor)"
        )
    if len(result.wrong_easy) > c.wrong_easy:
        result.breaches.append(
            f"{len(result.wrong_easy)} `wrong` verdict(s) on easy queries"
            f" (at most {c.wrong_easy} allowed, --max-wrong-easy): " + "; ".join(result.wrong_easy)
        )
    return result
