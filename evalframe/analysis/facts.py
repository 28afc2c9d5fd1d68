"""The ``facts`` judge: an answer is correct when it mentions every must-mention fact
and states no must-not-mention fact.

A judge is a validator (``evalframe.plugin.protocols.Validator``, the kind
``evalframe mine`` uses), so an LLM judge is a validator plugin like any other:
``@validator("llm_judge", config=...)`` with ``validate(task, answer)``. It
receives a :class:`~evalframe.plugin.protocols.MiningTask` whose
``ground_truth`` holds ``must_mention`` and ``must_not_mention`` (lists of
fact texts) and whose id is an opaque key: never a query's arm, system or
confidence, so a judge cannot favour one side (see :func:`judge_blind`).

The built-in rule is lexical (docs/analyses.md, "The facts judge"): both
texts are reduced to content terms (:mod:`evalframe.analysis.text`); a fact
is *mentioned* when at least ``min_share`` of its terms occur in the answer
(``match: terms``), or when its words occur in the answer as one contiguous
run (``match: phrase``). Parenthesised text is removed from every fact
first: KnowCode puts the correction of a must-not fact there.

A must-not fact is most often the right fact with one word wrong ("ties are
broken by document id ascending" beside "... descending"), so the two share
most of their terms, and the share rule alone would find the wrong fact in
every right answer and the right fact in every wrong one. Under ``match:
terms`` a fact of either list therefore counts only when, besides the rule
above, the answer holds ``min_share`` of its *own* terms: those in no fact of
the other list (``ascending``, ``descending``). A fact with no term of its
own is judged by the share rule alone.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field

from evalframe.analysis.text import strip_parentheticals, terms, words
from evalframe.core.errors import DataError, PluginError
from evalframe.core.messages import warn
from evalframe.core.types import GoldenSet
from evalframe.plugin.protocols import (
    Answer,
    Judgement,
    MiningTask,
    PluginConfig,
    PluginContext,
    Validator,
)
from evalframe.plugin.registry import validator

__all__ = [
    "BlindItem",
    "FactCheck",
    "FactsConfig",
    "FactsJudge",
    "check_facts",
    "fact_mentioned",
    "judge_blind",
    "warn_field_unused",
]

MUST = "must_mention"
MUST_NOT = "must_not_mention"


class FactsConfig(PluginConfig):
    """How a fact is matched in an answer (a lexical rule; docs/analyses.md)."""

    match: Literal["terms", "phrase"] = Field(
        "terms",
        description="terms: enough of the fact's content terms occur in the answer; phrase: "
        "the fact's content words occur in it as one contiguous run",
    )
    min_share: float = Field(
        0.75,
        gt=0,
        le=1,
        description="match: terms — a fact is mentioned when at least this share of its "
        "content terms occur in the answer (the same rule finds a stated must-not fact)",
    )


def fact_mentioned(
    fact: str, answer: str, *, match: str = "terms", min_share: float = 0.75
) -> bool:
    """Whether ``answer`` mentions ``fact`` under the rule in the module docstring.

    A fact with no content term left (empty, or only stopwords) cannot be
    checked: that is a data error, raised by :func:`check_facts` with the fact.
    """
    claim = strip_parentheticals(fact)
    if match == "phrase":
        want, have = words(claim), words(answer)
        n = len(want)
        return n > 0 and any(have[i : i + n] == want for i in range(len(have) - n + 1))
    wanted = terms(claim)
    if not wanted:
        return False
    return len(wanted & terms(answer)) / len(wanted) >= min_share


@dataclass(frozen=True)
class FactCheck:
    """Which must-mention facts an answer misses and which must-not facts it states."""

    missing: tuple[str, ...]
    stated: tuple[str, ...]

    @property
    def correct(self) -> bool:
        return not self.missing and not self.stated

    def detail(self) -> str:
        parts = []
        if self.missing:
            parts.append("misses: " + " | ".join(self.missing))
        if self.stated:
            parts.append("states: " + " | ".join(self.stated))
        return "; ".join(parts)


def check_facts(
    answer: str,
    must: Sequence[str],
    must_not: Sequence[str] = (),
    *,
    match: str = "terms",
    min_share: float = 0.75,
) -> FactCheck:
    """Every fact of both lists checked against ``answer``."""
    for fact in (*must, *must_not):
        if not isinstance(fact, str) or not terms(strip_parentheticals(fact)):
            raise DataError(
                "a fact has no content word to look for in an answer",
                got=repr(fact)[:80],
                hint="write each fact as a short claim with its key words "
                "(outside parentheses, which hold the author's notes)",
            )
    return FactCheck(
        missing=tuple(
            f for f in must if not _holds(f, answer, must_not, match=match, min_share=min_share)
        ),
        stated=tuple(
            f for f in must_not if _holds(f, answer, must, match=match, min_share=min_share)
        ),
    )


def _holds(fact: str, answer: str, others: Sequence[str], *, match: str, min_share: float) -> bool:
    """Whether ``answer`` holds ``fact``, told apart from the other list's facts
    (``others``) by its own terms (the module docstring's rule)."""
    if not fact_mentioned(fact, answer, match=match, min_share=min_share):
        return False
    if match != "terms" or not others:
        return True  # a contiguous run of the fact's own words is the fact
    shared = set().union(*(terms(strip_parentheticals(f)) for f in others))
    own = terms(strip_parentheticals(fact)) - shared
    if not own:
        return True  # nothing tells it from the other list's facts: the rule alone
    return len(own & terms(answer)) / len(own) >= min_share


def warn_field_unused(golden: GoldenSet | None, field: str | None, key: str) -> None:
    """Say that a configured facts field is in no golden query: a misspelt name would
    otherwise check no must-not fact at all, without a word."""
    if field is None or golden is None:
        return
    if not any(field in q.metadata for q in golden.queries):
        warn(
            f"{key}: no golden query has a {field!r} field, so no answer is checked against "
            "must-not facts; name the golden set's field, or set it to null to check none"
        )


def _facts(task: MiningTask, key: str) -> list[str]:
    value = task.ground_truth.get(key, [])
    if not isinstance(value, list) or not all(isinstance(f, str) for f in value):
        raise DataError(
            f"task {task.id!r}: ground truth {key!r} must be a list of fact texts",
            got=repr(value)[:80],
        )
    return value


@validator("facts", config=FactsConfig)
class FactsJudge:
    """Correct when the answer mentions every must-mention fact and states no must-not one."""

    cacheable = False  # cheaper to recompute than to read back

    def __init__(self, config: FactsConfig, context: PluginContext) -> None:
        self.config = config

    def validate(self, task: MiningTask, answer: Answer) -> Judgement:
        check = check_facts(
            answer.text,
            _facts(task, MUST),
            _facts(task, MUST_NOT),
            match=self.config.match,
            min_share=self.config.min_share,
        )
        return Judgement(passed=check.correct, detail=check.detail())


@dataclass(frozen=True)
class BlindItem:
    """One answer to judge, with nothing that says who gave it."""

    question: str
    answer: str
    must_mention: tuple[str, ...]
    must_not_mention: tuple[str, ...] = ()


def judge_blind(
    judge: Validator, items: Mapping[Any, BlindItem], *, seed: int, who: str
) -> dict[Any, Judgement]:
    """Judge every item, blind: the judge sees an opaque key, in a shuffled order.

    ``items`` is keyed by whatever the caller needs back (an (arm, task, seed)
    triple, a query id); those keys never reach the judge. Each item gets a
    random hexadecimal id from a generator seeded by ``seed``, and the items
    are judged in a shuffled order, so neither the id nor the position tells
    one arm from another. ``who`` names the judge in errors.
    """
    rng = random.Random(seed)
    keys = list(items)
    rng.shuffle(keys)
    ids: dict[str, Any] = {}
    for key in keys:
        token = f"{rng.getrandbits(64):016x}"
        while token in ids:
            token = f"{rng.getrandbits(64):016x}"
        ids[token] = key
    verdicts: dict[Any, Judgement] = {}
    for token, key in ids.items():
        item = items[key]
        task = MiningTask(
            id=token,
            query=item.question,
            ground_truth={MUST: list(item.must_mention), MUST_NOT: list(item.must_not_mention)},
        )
        verdict = judge.validate(task, Answer(text=item.answer))
        if not isinstance(verdict, Judgement):
            raise PluginError(
                f"{who} returned {type(verdict).__name__}, not a Judgement",
                hint="a judge is a validator: validate(task, answer) -> Judgement",
            )
        verdicts[key] = verdict
    return verdicts
