"""KnowCode's authoring rules (reference §3.1, §7.2 and §9) as golden-set findings.

The mechanical gate (:mod:`evalframe_knowcode.checks`) decides whether a
record's structural claims are *true*; these rules decide whether it was
*written* the way the pipeline's authors are told to write it. A record that
breaks one is weaker (a leaked identifier lets grep find the answer, an easy
query with three targets is mislabelled), not wrong, so every rule reports
at level ``warning`` by default; ``golden validate --authoring error`` makes
them fail the check, ``--authoring off`` skips them.

The checks, each a warning by default:

- ``authoring-leak`` (§3.1, §9.1 LOCATE, benefit spec §6.3): the query does
  not contain a target entity's id: the full ``file::symbol``, the qualified
  ``Class.method``, or a last name that is identifier-shaped (``parse_file``,
  ``MarkdownParser``). A one-word name (``load``, ``Agent``) is an ordinary
  word and is not counted.
- ``authoring-difficulty`` (§7.2, §9.1): expected entities per difficulty:
  easy 1, medium 2–3, hard 3 or more. A ``locate`` query may also follow
  §9.1's LOCATE tiers (medium: one entity, hard: 2–3), which the reference
  gives beside §7.2.
- ``authoring-rationale`` (§7.2): a non-empty ``difficulty_rationale`` on
  medium and hard queries.
- ``authoring-facts`` (§9.2 steps 6–7): 3–8 ``must_mention_facts`` and 1–3
  ``must_not_mention_facts``.
- ``authoring-narrative`` (§9.2 step 8): a ``canonical_narrative`` of 80–250
  words.
- ``authoring-classifier`` (§9.1 GENERAL): a ``classifier_expectation`` on
  ``general`` queries (top level, or under ``metadata``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from evalframe.golden.findings import Finding, Level
from evalframe_knowcode.checks import entity_ids, split_entity

#: KnowCode's task types (§3.1): what its cells and gates (task_type=locate) are keyed on.
TASK_TYPES = ("locate", "explain", "debug", "extend", "review", "general")

__all__ = [
    "AUTHORING_CHECKS",
    "FACTS",
    "NARRATIVE_WORDS",
    "AuthoringLevel",
    "authoring_findings",
    "check_authoring",
]

AuthoringLevel = Literal["error", "warning", "off"]

#: (min, max) must-mention and must-not-mention facts (§9.2 steps 6 and 7)
FACTS = {"must_mention_facts": (3, 8), "must_not_mention_facts": (1, 3)}
#: (min, max) words of the canonical narrative (§9.2 step 8)
NARRATIVE_WORDS = (80, 250)
#: difficulty -> (min, max) expected entities (§7.2); None = no upper bound
ENTITY_COUNTS: dict[str, tuple[int, int | None]] = {
    "easy": (1, 1),
    "medium": (2, 3),
    "hard": (3, None),
}
#: §9.1 LOCATE: medium targets ONE entity, hard 2-3 entities across modules
LOCATE_COUNTS: dict[str, tuple[int, int | None]] = {"medium": (1, 1), "hard": (2, 3)}
AUTHORING_CHECKS = (
    "authoring-leak",
    "authoring-difficulty",
    "authoring-rationale",
    "authoring-facts",
    "authoring-narrative",
    "authoring-classifier",
)
_SHAPED = re.compile(r"_|\d|[a-z][A-Z]|[A-Z][a-z0-9]*[A-Z]")


def _identifier_shaped(name: str) -> bool:
    """``parse_file``, ``MarkdownParser``, ``parseFile``: not a word of English."""
    return bool(_SHAPED.search(name))


def _contains(text: str, token: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(token)}(?![\w])", text) is not None


def _leaks(query: str, entity: str) -> str | None:
    """The part of ``entity`` that ``query`` contains, if any."""
    symbol = split_entity(entity)[1]
    if entity in query:
        return entity
    if "." in symbol and _contains(query, symbol):
        return symbol
    name = symbol.rpartition(".")[2]
    if name and _identifier_shaped(name.strip("_")) and _contains(query, name):
        return name
    return None


def _range(lo: int, hi: int | None) -> str:
    if hi is None:
        return f"{lo} or more"
    return str(lo) if lo == hi else f"{lo}–{hi}"


def _fits(n: int, bounds: tuple[int, int | None]) -> bool:
    lo, hi = bounds
    return n >= lo and (hi is None or n <= hi)


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def authoring_findings(
    record: Mapping[str, Any], location: str | None = None, level: Level = "warning"
) -> list[Finding]:
    """The authoring rules on one golden record (or QueryCandidate/OracleAnswer)."""
    qid = str(record.get("query_id", "?"))
    loc = location or f"query {qid}"
    out: list[Finding] = []

    def add(check: str, message: str) -> None:
        out.append(Finding(level, check, message, loc, qid))

    task = _text(record.get("task_type")).casefold()
    difficulty = _text(record.get("difficulty")).casefold()
    targets = entity_ids(record.get("expected_entities")) or entity_ids(
        record.get("target_entity_ids")
    )
    query = record.get("query_text")
    if isinstance(query, str):
        for entity in targets:
            leaked = _leaks(query, entity)
            if leaked is not None:
                add(
                    "authoring-leak",
                    f"query_text contains {leaked!r}, the id of its target {entity}: a "
                    "developer would describe it, and grep alone would find it (§3.1)",
                )

    raw = record.get("difficulty")
    if difficulty in ENTITY_COUNTS and raw != difficulty:
        # read as its tier here, but a gate or a slice on difficulty=easy matches the
        # exact value, and would leave this query out ('Easy' is not 'easy')
        add(
            "authoring-difficulty",
            f"difficulty {raw!r} is the tier {difficulty!r} spelt another way; write it "
            f"{difficulty!r}: gates and slices match the exact value",
        )
    if difficulty in ENTITY_COUNTS:
        bounds = ENTITY_COUNTS[difficulty]
        locate = LOCATE_COUNTS.get(difficulty) if task == "locate" else None
        if not _fits(len(targets), bounds) and not (locate and _fits(len(targets), locate)):
            allowed = _range(*bounds)
            if locate:
                allowed += f" (or {_range(*locate)} for locate, §9.1)"
            add(
                "authoring-difficulty",
                f"{'an' if difficulty == 'easy' else 'a'} {difficulty} query has "
                f"{len(targets)} expected entit{'y' if len(targets) == 1 else 'ies'}; "
                f"§7.2 gives {difficulty} {allowed}",
            )
        if difficulty != "easy" and not _text(record.get("difficulty_rationale")):
            add(
                "authoring-rationale",
                f"a {difficulty} query needs a difficulty_rationale saying why it fits "
                "its tier (§7.2)",
            )
    else:
        add(
            "authoring-difficulty",
            f"difficulty {record.get('difficulty')!r} is not easy, medium or hard (§7.2)",
        )
    if record.get("task_type") not in TASK_TYPES:
        # 'lokate' scored in a row of its own, and a gate on task_type=locate lost it
        add(
            "authoring-task-type",
            f"task_type {record.get('task_type')!r} is not one of {', '.join(TASK_TYPES)} "
            "(§3.1): a gate or a cell on a task type does not see it",
        )

    for name, (lo, hi) in FACTS.items():
        facts = record.get(name)
        n = len(facts) if isinstance(facts, list) else 0
        if not lo <= n <= hi:
            add(
                "authoring-facts",
                f"{name} holds {n} fact{'' if n == 1 else 's'}; the oracle writes {lo}–{hi} (§9.2)",
            )

    narrative = _text(record.get("canonical_narrative"))
    words = len(narrative.split())
    lo, hi = NARRATIVE_WORDS
    if not narrative:
        add("authoring-narrative", f"no canonical_narrative ({lo}–{hi} words, §9.2 step 8)")
    elif not lo <= words <= hi:
        add(
            "authoring-narrative",
            f"canonical_narrative has {words} words; §9.2 asks for {lo}–{hi}",
        )

    if task == "general":
        meta = record.get("metadata")
        expectation = record.get("classifier_expectation") or (
            meta.get("classifier_expectation") if isinstance(meta, Mapping) else None
        )
        if not expectation:
            add(
                "authoring-classifier",
                "a general query must record classifier_expectation: the task type the "
                "classifier is expected to (wrongly) pick (§9.1 GENERAL)",
            )
    return out


def check_authoring(
    records: Iterable[tuple[int | None, Mapping[str, Any]]],
    path: str | None = None,
    level: AuthoringLevel = "warning",
) -> list[Finding]:
    """:func:`authoring_findings` over ``(line, record)`` pairs; ``level="off"`` skips them."""
    if level == "off":
        return []
    out: list[Finding] = []
    for line, record in records:
        loc = f"{path}:{line}" if path is not None and line is not None else None
        out += authoring_findings(record, loc, level)
    return out
