"""Human spot-check: a stratified review sample, and the verdict ceilings (KnowCode §8).

KnowCode's protocol: review at least 15% of each batch, stratified so every
(task type, difficulty) cell has at least one reviewed record; each record
gets one verdict, ``correct | minor_issue | major_issue | wrong``; the batch
passes when major_issue + wrong < 5% of the sample, minor_issue < 15%, and no
easy query is ``wrong``. Phase 2 tightens the first ceiling to 3%: every
number is a parameter.

Some records go to a human whatever the draw: an oracle that answered with
``confidence: "low"`` ("low-confidence records flow to mandatory human
review", §3.2) and an adversary that gave any ``partial`` verdict ("any
partial verdict triggers the query for human review", §3.3).
:func:`mandatory_reviews` finds them, in the golden records themselves or in
the pipeline's ``01_oracle_answers.jsonl`` and ``02_adversary_reports.jsonl``,
and :func:`sample_for_review` adds them on top of the stratified draw.
"""

from __future__ import annotations

import json
import math
import random
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalframe.core.errors import DataError
from evalframe.core.io import read_jsonl
from evalframe.core.records import At, UniqueIds, field_names
from evalframe.core.types import GoldenSet

__all__ = [
    "REVIEW_FIELDS",
    "VERDICTS",
    "Ceilings",
    "ReviewResult",
    "allocate",
    "apply_ceilings",
    "check_review",
    "mandatory_reviews",
    "read_review",
    "read_stage_records",
    "sample_for_review",
]

VERDICTS = ("correct", "minor_issue", "major_issue", "wrong")
#: Added to each sampled record; a record's own field of the same name is kept as ``record_<name>``.
REVIEW_FIELDS = ("verdict", "reviewer", "notes")
LOW_CONFIDENCE = "low-confidence oracle answer"
PARTIAL_VERDICT = "partial adversary verdict"
DRAWN = "stratified draw"


def _low_confidence(record: Mapping[str, Any]) -> bool:
    """An OracleAnswer (or a golden record carrying its fields) with confidence low."""
    for source in (record, record.get("oracle"), record.get("provenance")):
        if isinstance(source, Mapping):
            value = source.get("confidence")
            if isinstance(value, str) and value.strip().casefold() == "low":
                return True
    return False


def _partial(record: Mapping[str, Any]) -> bool:
    """An AdversaryReport (or a golden record carrying it) with any partial verdict."""
    for source in (record, record.get("adversary"), record.get("provenance")):
        if not isinstance(source, Mapping):
            continue
        for key in ("overall_verdict", "adversary_verdict"):
            value = source.get(key)
            if isinstance(value, str) and value.strip().casefold() == "partial":
                return True
        claims = source.get("claim_verdicts")
        if isinstance(claims, list) and any(
            isinstance(c, Mapping)
            and isinstance(c.get("verdict"), str)
            and c["verdict"].strip().casefold() == "partial"
            for c in claims
        ):
            return True
    return False


def read_stage_records(path: str | Path, what: str) -> dict[str, list[dict[str, Any]]]:
    """A pipeline stage file (JSON Lines keyed by ``query_id``) as ``{query id: records}``.

    A line that is not an object or has no ``query_id`` is a :class:`DataError` at its line.
    """
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line, record in read_jsonl(path, what=what):
        if not isinstance(record, dict) or "query_id" not in record:
            raise DataError(
                f"a line of the {what} must be a JSON object with a query_id",
                path=path,
                line=line,
                got=type(record).__name__ if not isinstance(record, dict) else "no query_id",
            )
        out[str(record["query_id"])].append(record)
    return dict(out)


def mandatory_reviews(
    records: Mapping[str, Mapping[str, Any]],
    oracle_answers: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    adversary_reports: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
) -> dict[str, list[str]]:
    """Query ids a human must review whatever the draw, with the reasons (§3.2, §3.3).

    ``records`` are the golden records by query id; the optional stage files
    add OracleAnswers and AdversaryReports by query id. Ids of the stage files
    that are not in the golden set (rejected candidates) are ignored.
    """
    out: dict[str, list[str]] = {}
    for qid, record in records.items():
        reasons = []
        answers = [record, *((oracle_answers or {}).get(qid, []))]
        reports = [record, *((adversary_reports or {}).get(qid, []))]
        if any(_low_confidence(r) for r in answers):
            reasons.append(LOW_CONFIDENCE)
        if any(_partial(r) for r in reports):
            reasons.append(PARTIAL_VERDICT)
        if reasons:
            out[qid] = reasons
    return out


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
    always: Mapping[str, Sequence[str]] | None = None,
) -> tuple[list[dict[str, Any]], dict[tuple[str, ...], tuple[int, int]]]:
    """A stratified sample as review records, and ``{cell: (drawn, size)}``.

    Each review record is the query's record as written in the golden file,
    plus ``verdict: null``, ``reviewer: null``, ``notes: ""``, its ``stratum``,
    the ``location`` it came from and ``review_reasons`` (``stratified draw``
    and/or the reasons given in ``always``). The queries in ``always``
    (:func:`mandatory_reviews`) are added on top of the draw, which they do
    not change: the same seed always draws the same stratified sample.
    Records keep the golden set's order.
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
    extra = always or {}
    out = []
    for q in golden.queries:
        if q.id not in chosen and q.id not in extra:
            continue
        record = dict(records.get(q.id) or {"id": q.id, "text": q.text})
        for name in (*REVIEW_FIELDS, "stratum", "location", "review_reasons"):
            if name in record:
                record[f"record_{name}"] = record.pop(name)
        record["stratum"] = {f: q.metadata.get(f) for f in strata}
        if locations and q.id in locations:
            record["location"] = locations[q.id]
        reasons = [DRAWN] if q.id in chosen else []
        record["review_reasons"] = [*reasons, *extra.get(q.id, ())]
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


def _record_id(record: dict[str, Any], line: int | str) -> str:
    for key in ("query_id", "id"):
        if key in record:
            return str(record[key])
    return f"line {line}"


def read_review(path: str | Path) -> list[tuple[int, dict[str, Any]]]:
    """``(line, record)`` for each line of a review file; a missing or unknown verdict,
    a record without an id (``query_id`` or ``id``) and a record listed twice are each a
    :class:`DataError` naming the line.

    Why a repeat is refused: every record counts once in the rates, so a line
    copied or merged in twice dilutes them (20 records with one ``major_issue``
    breach the 5% ceiling; a 21st, repeated ``correct`` passes them).
    """
    out = []
    seen = UniqueIds(
        "query id",
        hint="each sampled record counts once: remove the repeated line (a copy-paste or "
        "two review files merged)",
    )
    for line, record in read_jsonl(path, what="review file"):
        if not isinstance(record, dict):
            raise DataError(
                "a review line must be a JSON object",
                path=path,
                line=line,
                got=type(record).__name__,
            )
        at = At(Path(path), line)
        name = next((k for k in ("query_id", "id") if k in record), None)
        if name is None:
            raise at.error(
                "the record has no 'query_id' or 'id' field",
                expected="the id `sample` wrote on every line",
                got=f"fields {field_names(record)}",
                hint="keep each line's id as `sample` wrote it: a record without one could "
                "be a repeat, counted twice",
            )
        seen.add(at.ident(record[name], name), at)
        verdict = record.get("verdict")
        if verdict not in VERDICTS:
            what = "has no verdict" if verdict is None else "has an unknown verdict"
            raise DataError(
                f"record {_record_id(record, line)} {what}",
                path=path,
                line=line,
                expected=" | ".join(VERDICTS),
                # as the file writes it (null, "accpet"), or that it has none
                got=json.dumps(verdict) if "verdict" in record else "no 'verdict' field",
                hint="every sampled record needs a verdict before the batch can be checked",
            )
        out.append((line, record))
    if not out:
        raise DataError("the review file has no records", path=path, expected="one JSON per line")
    return out


def check_review(path: str | Path, ceilings: Ceilings | None = None) -> ReviewResult:
    """Read verdicts from ``path`` and apply ``ceilings``."""
    return apply_ceilings(read_review(path), str(path), ceilings)


def apply_ceilings(
    records: Sequence[tuple[int | str, Mapping[str, Any]]],
    source: str,
    ceilings: Ceilings | None = None,
    keys: tuple[str, str, str] = ("--max-major-wrong", "--max-minor", "--max-wrong-easy"),
) -> ReviewResult:
    """Apply ``ceilings`` to reviewed records: ``(where, record)`` pairs whose ``verdict``
    is one of :data:`VERDICTS`; ``where`` is a line number of ``source`` or a label.

    ``evalframe golden build`` calls this on the verdicts it reads back, and
    ``review-check`` on a review file, so both bless on the same arithmetic.
    ``keys`` name where each ceiling is set (flags, or the build's config keys).
    """
    c = ceilings or Ceilings()
    counts = Counter(r["verdict"] for _, r in records)
    result = ReviewResult(
        path=source, counts={v: counts.get(v, 0) for v in VERDICTS}, total=len(records)
    )
    anonymous = []
    for line, r in records:
        record = dict(r)
        easy = str(_difficulty(record)).casefold() == c.easy_value.casefold()
        if r["verdict"] == "wrong" and easy:
            result.wrong_easy.append(f"{source}:{line} ({_record_id(record, line)})")
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
            f"{c.major_wrong:.0%} ({keys[0]})"
        )
    minor = result.rate("minor_issue")
    if minor >= c.minor:
        result.breaches.append(
            f"minor_issue is {minor:.1%} of the sample; the ceiling is < {c.minor:.0%} ({keys[1]})"
        )
    if len(result.wrong_easy) > c.wrong_easy:
        result.breaches.append(
            f"{len(result.wrong_easy)} `wrong` verdict(s) on easy queries"
            f" (at most {c.wrong_easy} allowed, {keys[2]}): " + "; ".join(result.wrong_easy)
        )
    return result
