"""Offline, deterministic roles for ``evalframe golden build``: read a Python tree with ``ast``.

They stand in for KnowCode's LLM agents in tests and in the ``knowcode_demo``
build, and they do the real work on real code:

- author ``ast`` picks target entities per plan cell (easy: one function;
  medium: a function and the helpers it calls; hard: a call chain across
  modules) and phrases a developer's question from the docstring, without the
  target's identifier (§3.1, §9.1);
- oracle ``ast`` answers from the source: entities with roles, files, each
  entity's line range, 3-8 checkable facts, 1-2 plausible falsehoods, an
  80-250-word narrative naming only the expected entities (§9.2);
- adversary ``ast`` re-derives every claim from the source, one at a time, and
  cites the lines (§9.3);
- judge ``claims`` rates the narrative against the adversary's findings (§6).

Each can plant a fault for a query id (``faults: {q_00004: wrong_line_range}``),
so a demo shows every reject path of the pipeline: the author's ``overlap``
(Step C), the oracle's ``wrong_line_range``, ``narrative_entity`` and
``nonexistent_entity`` (the mechanical gate, Step E), ``unsupported_fact``
(the adversary and the judge, Step F) and ``low_confidence`` (mandatory human
review).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from evalframe.plugin.protocols import PluginContext
from evalframe.plugin.registry import adversary, author, judge, oracle
from evalframe.plugin.roles import (
    AdversaryReport,
    AdversaryRequest,
    AuthorRequest,
    ClaimVerdict,
    JudgeRequest,
    LineRange,
    OracleAnswer,
    OracleRequest,
    RoleConfig,
    RoleReply,
    SourceRef,
)
from evalframe_knowcode.authoring import authoring_findings
from evalframe_knowcode.checks import SourceIndex, check_record, split_entity
from evalframe_knowcode.codeindex import CodeIndex, Unit, stable
from evalframe_knowcode.source import open_tree

__all__ = [
    "AstAdversary",
    "AstAdversaryConfig",
    "AstAuthor",
    "AstAuthorConfig",
    "AstOracle",
    "AstOracleConfig",
    "ClaimsJudge",
    "ClaimsJudgeConfig",
]

#: What changes these roles' answers besides their config: their own code.
_CODE = ("roles.py", "codeindex.py", "entities.py")


def code_identity() -> str:
    here = Path(__file__).parent
    digest = hashlib.sha256()
    for name in _CODE:
        digest.update((here / name).read_bytes())
    return digest.hexdigest()[:16]


class _Indexes:
    """One analysed tree per source, for the life of a role instance (one build)."""

    def __init__(self) -> None:
        self._by: dict[tuple[str, str | None], CodeIndex] = {}

    def get(self, source: SourceRef) -> CodeIndex:
        key = (source.root, source.rev)
        if key not in self._by:
            tree = open_tree(source.root, source.rev, key="source.root", rev_key="source.rev")
            self._by[key] = CodeIndex.build(tree)
        return self._by[key]


class _SourceIndexes:
    """The gate's index of a tree (its narrative check), one per source, kept."""

    def __init__(self) -> None:
        self._by: dict[tuple[str, str | None], SourceIndex] = {}

    def get(self, source: SourceRef) -> SourceIndex:
        key = (source.root, source.rev)
        if key not in self._by:
            tree = open_tree(source.root, source.rev, key="source.root", rev_key="source.rev")
            self._by[key] = SourceIndex(tree)
        return self._by[key]


# -- phrasing -------------------------------------------------------------------------

_VERBS = frozenset(
    (  # noqa: SIM905  # a word list reads best as words
        "add apply build check compute convert count create cut decide decode draw drop emit "
        "find flatten format get import join keep list load make map merge normalise open parse "
        "pick print produce raise read record refuse register remove render resolve return run "
        "save score select show skip sort split strip tell turn validate warn wrap write yield"
    ).split()
)
_ARTICLES = frozenset({"the", "a", "an", "one", "each", "every"})
_BAD = re.compile(r"[<>{}\[\]|=()]")


def _verb(word: str) -> str | None:
    w = word.lower()
    for form in (w, w[:-1] if w.endswith("s") else "", w[:-2] if w.endswith("es") else ""):
        if form in _VERBS:
            return form
    return None


def phrase(summary: str, params: Iterable[str] = ()) -> str | None:
    """The docstring summary as a verb phrase after "we" (``write text to path``), or None.

    Only its first clause (up to ``;`` or ``:``), without parenthesised asides. A
    summary that names code-like parameters (``Count n occurrences of what``) or whose
    verb takes a parenthesised object (``Yield (line, value) ...``) reads as code, not as
    a developer's question, and is not used; nor is a noun phrase with a comma."""
    clause = re.sub(r"\s*\([^()]*\)", "", summary)
    clause = re.split(r"[;:]|\. ", clause, maxsplit=1)[0].strip().rstrip(",")
    words = clause.split()
    if not 4 <= len(words) <= 16 or _BAD.search(clause) or not words[0][:1].isupper():
        return None
    codeish = {p for p in params if len(p) <= 2 or "_" in p}
    if {w.strip(",.") for w in words} & codeish or re.match(r"^\w+\s*\(", summary):
        return None
    verb = _verb(words[0])
    if verb is not None:
        return " ".join([verb, *words[1:]])
    if words[0].lower() in _ARTICLES and "," not in clause:
        return " ".join(["produce", words[0].lower(), *words[1:]])
    return None


#: An explain or review query needs a body worth walking through (§9.1 anti-patterns).
_MIN_LINES = 6


@dataclass(frozen=True)
class _Option:
    targets: tuple[str, ...]
    unit: Unit
    exception: tuple[str, str] | None = None

    @property
    def primary(self) -> str:
        return self.targets[0]


def _callables(index: CodeIndex, ids: Iterable[str]) -> list[Unit]:
    units = [index.get(i) for i in ids]
    return [u for u in units if u is not None and u.kind != "class"]


def _chain(index: CodeIndex, unit: Unit, limit: int = 4) -> list[Unit]:
    """The unit and what it calls, breadth first, two hops deep, at most ``limit``."""
    out, frontier = [unit], [unit]
    for _ in range(2):
        nxt = []
        for u in frontier:
            for callee in _callables(index, u.calls):
                if callee not in out and len(out) < limit:
                    out.append(callee)
                    nxt.append(callee)
        frontier = nxt
    return out


def _options(index: CodeIndex, task: str, difficulty: str, seed: int) -> list[_Option]:
    out = []
    for unit in index.units.values():
        if unit.kind == "class" or phrase(unit.summary, unit.params) is None:
            continue
        if task in ("explain", "review") and unit.end - unit.start < _MIN_LINES:
            continue  # §9.1: not a one-liner, nor glue that only forwards
        if difficulty == "easy":
            group = [unit]
        elif difficulty == "medium":
            group = [unit, *_callables(index, unit.calls)[:2]]
            if len(group) < 2:
                continue
        else:
            group = _chain(index, unit)
            if len(group) < 3 or len({u.file for u in group}) < 2:
                continue
        raised = next(((u, r) for u in group for r in u.raises), None)
        if task == "debug" and raised is None:
            continue
        out.append(_Option(tuple(u.entity_id for u in group), unit, raised[1] if raised else None))
    cell = f"{task}/{difficulty}"
    return sorted(out, key=lambda o: (stable(seed, cell, o.primary), o.primary))


_TEMPLATES = {
    "locate": (
        "Where do we {v}?",
        "Which part of the code is responsible when we {v}?",
        "I need to change how we {v}; where is that done?",
    ),
    "explain": ("Walk me through how we {v}.",),
    "extend": ("I want to extend how we {v}. Which code would the change touch?",),
    "review": ("Review how we {v}: are its failure cases handled?",),
    "general": ("What is going on with how we {v}?",),
}


def _query_text(option: _Option, task: str, difficulty: str, slot: int) -> str:
    v = phrase(option.unit.summary, option.unit.params) or option.unit.summary.lower()
    if task == "explain" and difficulty != "easy":
        return f"Explain step by step what happens when we {v}, including the helpers it uses."
    if task == "debug" and option.exception is not None:
        name, message = option.exception
        words = message.strip().rstrip(":(").split()
        if difficulty == "easy" and len(words) >= 3:
            quoted = " ".join(words[:8])
            return f'I get a {name} saying "{quoted}". What is causing it?'
        return f"Something fails with a {name} when we {v}. Where should I look?"
    templates = _TEMPLATES.get(task, _TEMPLATES["general"])
    return templates[slot % len(templates)].format(v=v)


# -- the author -----------------------------------------------------------------------


class AstAuthorConfig(RoleConfig):
    """The ast author's settings."""

    model: str = Field("ast-author/1", description="recorded as the author's model id")
    seed: int = Field(0, description="orders each cell's eligible entities")
    faults: dict[str, Literal["overlap"]] = Field(
        default_factory=dict,
        description="query id -> planted fault: overlap (the targets of the query before it)",
    )


@author("ast", config=AstAuthorConfig)
class AstAuthor:
    """Writes questions from a Python tree's docstrings and call graph, read with ast."""

    def __init__(self, config: AstAuthorConfig, context: PluginContext) -> None:
        self.config = config
        self._indexes = _Indexes()
        self._plans: dict[Any, dict[tuple[str, int], _Option | None]] = {}

    def cache_identity(self) -> str:
        return code_identity()

    def _assign(
        self, index: CodeIndex, request: AuthorRequest
    ) -> dict[tuple[str, int], _Option | None]:
        """Every slot of the plan gets its own entity: no primary twice, no target set
        more than half covered by an earlier one (the dedup rule), nothing to avoid."""
        cell = f"{request.task_type}/{request.difficulty}"
        plan = dict(request.plan) or {cell: request.count}
        key = (request.source, tuple(plan.items()), tuple(request.avoid_entity_ids))
        if key in self._plans:
            return self._plans[key]
        avoid = set(request.avoid_entity_ids)
        used: set[str] = set()
        taken: list[set[str]] = []
        picks: dict[tuple[str, int], _Option | None] = {}
        options_of = {
            name: _options(index, *name.partition("/")[::2], self.config.seed) for name in plan
        }
        # the scarcest cells choose first, so a plentiful cell never takes their only option
        for name in sorted(plan, key=lambda n: (len(options_of[n]), list(plan).index(n))):
            task, _, difficulty = name.partition("/")
            options, count = options_of[name], plan[name]
            for slot in range(count):
                chosen = None
                for option in options:
                    targets = set(option.targets)
                    if option.primary in used or len(targets & avoid) / len(targets) > 0.5:
                        continue  # what the blessed set covers is not labelled again
                    if any(len(targets & t) / len(targets) > 0.5 for t in taken):
                        continue
                    if _leaks(option, task, difficulty, slot):
                        continue
                    chosen = option
                    break
                if chosen is not None:
                    used.add(chosen.primary)
                    taken.append(set(chosen.targets))
                picks[(name, slot)] = chosen
        self._plans[key] = picks
        return picks

    def author(self, request: AuthorRequest) -> RoleReply:
        index = self._indexes.get(request.source)
        picks = self._assign(index, request)
        cell = f"{request.task_type}/{request.difficulty}"
        option = picks.get((cell, request.slot))
        note = None
        if self.config.faults.get(request.query_id) == "overlap":
            order = [
                (name, slot)
                for name, n in (request.plan or {cell: request.count}).items()
                for slot in range(n)
            ]
            at = order.index((cell, request.slot)) if (cell, request.slot) in picks else 0
            before = next((picks[k] for k in reversed(order[:at]) if picks.get(k)), None)
            if before is not None:
                option = _Option(before.targets, before.unit, before.exception)
                note = "planted fault: overlap (the targets of the query before it)"
        if option is None:  # the tree has no fresh entity left for this cell
            fallback = _options(index, request.task_type, request.difficulty, self.config.seed)
            if not fallback:
                fallback = _options(index, "general", request.difficulty, self.config.seed)
            option = fallback[0] if fallback else None
            note = "no fresh entity left for this cell: repeats the first option"
        if option is None:
            raise ValueError(f"the tree {request.source.root} has no documented function")
        record: dict[str, Any] = {
            "query_id": request.query_id,
            "query_text": _query_text(option, request.task_type, request.difficulty, request.slot),
            "task_type": request.task_type,
            "difficulty": request.difficulty,
            "focus_area": request.focus_area or str(Path(option.unit.file).parent) + "/",
            "target_entity_ids": list(option.targets),
            "authored_by": f"agent:query-author:{self.config.model}",
        }
        if request.difficulty != "easy":
            files = len({split_entity(t)[0] for t in option.targets})
            record["difficulty_rationale"] = (
                f"the answer needs {len(option.targets)} entities across {files} file(s): "
                "the entry point and what it calls"
                + (", two hops deep" if request.difficulty == "hard" else "")
            )
        if request.task_type == "general":
            record["classifier_expectation"] = "explain"
        if note:
            record["author_notes"] = note
        return RoleReply(record=record)


def _leaks(option: _Option, task: str, difficulty: str, slot: int) -> bool:
    probe = {
        "query_id": "probe",
        "query_text": _query_text(option, task, difficulty, slot),
        "task_type": task,
        "difficulty": difficulty,
        "target_entity_ids": list(option.targets),
    }
    return any(f.check == "authoring-leak" for f in authoring_findings(probe))


# -- the oracle -----------------------------------------------------------------------

OracleFault = Literal[
    "wrong_line_range",
    "narrative_entity",
    "nonexistent_entity",
    "unsupported_fact",
    "low_confidence",
]
_NUMBERS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight")
_PAD = (
    "Read these lines in order to answer the question.",
    "Every statement above can be checked against the cited lines.",
    "Nothing outside the listed entities is needed to follow the behaviour.",
    "A developer who opens these spans sees the whole answer without guessing.",
    "The line numbers are those of the definitions, decorators included.",
    "Anything else in the same files is context rather than part of the answer.",
)


def _params(unit: Unit) -> str:
    return ", ".join(unit.params)


def facts_for(index: CodeIndex, units: list[Unit]) -> tuple[list[str], list[str]]:
    """3-8 checkable facts and 1-2 falsehoods about ``units`` (the first is primary)."""
    primary = units[0]
    sym = primary.symbol
    facts = [f"`{sym}` is defined in {primary.file} at lines {primary.start}-{primary.end}."]
    facts.append(
        f"`{sym}` takes the parameters {_params(primary)}."
        if primary.params
        else f"`{sym}` takes no parameters."
    )
    for callee in units[1:]:
        if callee.entity_id in primary.calls:
            facts.append(f"`{sym}` calls `{callee.symbol}`.")
    if primary.raises:
        facts.append(f"`{sym}` raises `{primary.raises[0][0]}`.")
    facts.append(
        f"`{sym}` returns a value."
        if primary.returns_value
        else f"`{sym}` does not return a value."
    )
    for other in units[1:]:
        facts.append(
            f"`{other.symbol}` is defined in {other.file} at lines {other.start}-{other.end}."
        )
    other_file = next((f for f in index.files if f != primary.file), primary.file)
    falsehoods = [f"`{sym}` is defined in {other_file}."]
    falsehoods.append(
        f"`{sym}` does not return a value."
        if primary.returns_value
        else f"`{sym}` returns a value."
    )
    return facts[:8], falsehoods


def narrative_for(units: list[Unit]) -> str:
    """80-250 words naming only the expected entities and their files."""
    primary = units[0]
    files = sorted({u.file for u in units})
    parts = [f"The answer lies in {', '.join(files)}."]
    for i, unit in enumerate(units):
        role = "is where this happens" if i == 0 else "does part of the work for it"
        parts.append(
            f"The {unit.kind} `{unit.symbol}` ({unit.file}, lines {unit.start}-{unit.end}) {role}."
        )
    n = len(primary.params)
    parts.append(
        f"It takes {_NUMBERS[n] if n < len(_NUMBERS) else n} parameter{'s' if n != 1 else ''}."
        if n
        else "It takes no parameters."
    )
    for callee in units[1:]:
        if callee.entity_id in primary.calls:
            parts.append(f"`{primary.symbol}` calls `{callee.symbol}` to do part of the job.")
    if primary.raises:
        parts.append("When its checks fail it raises an exception instead of returning a result.")
    parts.append(
        "It hands its result back to the caller."
        if primary.returns_value
        else "It works by its effects and returns nothing."
    )
    pads = iter(_PAD)
    while len(" ".join(parts).split()) < 80:
        parts.append(next(pads, "The cited lines are the evidence."))
    return " ".join(parts)


class AstOracleConfig(RoleConfig):
    """The ast oracle's settings."""

    model: str = Field("ast-oracle/1", description="recorded as the oracle's model id")
    faults: dict[str, OracleFault] = Field(
        default_factory=dict,
        description="query id -> planted fault: wrong_line_range, narrative_entity, "
        "nonexistent_entity, unsupported_fact or low_confidence",
    )


@oracle("ast", config=AstOracleConfig)
class AstOracle:
    """Answers from the source read with ast: entities, files, line ranges, facts, narrative."""

    def __init__(self, config: AstOracleConfig, context: PluginContext) -> None:
        self.config = config
        self._indexes = _Indexes()

    def cache_identity(self) -> str:
        return code_identity()

    def answer(self, request: OracleRequest) -> RoleReply:
        index = self._indexes.get(request.source)
        candidate = request.candidate
        units = _callables_or_classes(index, candidate.target_entity_ids)
        missing = [t for t in candidate.target_entity_ids if index.get(t) is None]
        entities = [
            {
                "entity_id": u.entity_id,
                "role": "primary" if i == 0 else "supporting",
                "rationale": "the entry point the question is about"
                if i == 0
                else f"called on the way (by `{units[0].symbol}` or a helper)",
            }
            for i, u in enumerate(units)
        ] + [
            {"entity_id": t, "role": "supporting", "rationale": "named by the author"}
            for t in missing
        ]
        record: dict[str, Any] = {
            "query_id": candidate.query_id,
            "task_type": candidate.task_type,
            "difficulty": candidate.difficulty,
            "expected_entities": entities,
            "expected_files": sorted(
                {u.file for u in units} | {split_entity(t)[0] for t in missing}
            ),
            "expected_line_ranges": [
                {"file": u.file, "start": u.start, "end": u.end} for u in units
            ],
            "must_mention_facts": [],
            "must_not_mention_facts": [],
            "canonical_narrative": "",
            "source_evidence": [
                {"file": u.file, "start": u.start, "end": u.end, "read_at_step": i + 1}
                for i, u in enumerate(units)
            ],
            "confidence": "low" if missing else "high",
            "uncertainty_notes": f"could not read {', '.join(missing)}" if missing else None,
            "authored_by": f"agent:oracle:{self.config.model}",
        }
        if units:
            facts, falsehoods = facts_for(index, units)
            record["must_mention_facts"] = facts
            record["must_not_mention_facts"] = falsehoods
            record["canonical_narrative"] = narrative_for(units)
        fault = self.config.faults.get(candidate.query_id)
        if fault and units:
            _plant(record, fault, index, units)
        return RoleReply(record=record)


def _callables_or_classes(index: CodeIndex, ids: Iterable[str]) -> list[Unit]:
    return [u for u in (index.get(i) for i in ids) if u is not None]


def _plant(record: dict[str, Any], fault: str, index: CodeIndex, units: list[Unit]) -> None:
    primary = units[0]
    record["oracle_notes"] = f"planted fault: {fault}"
    if fault == "wrong_line_range":
        first = record["expected_line_ranges"][0]
        first["end"] = index.lines.get(first["file"], first["end"]) + 25
    elif fault == "narrative_entity":
        expected = {u.entity_id for u in units}
        other = next(
            u
            for u in sorted(index.units.values(), key=lambda u: u.entity_id)
            if u.kind == "function" and "_" in u.name.strip("_") and u.entity_id not in expected
        )
        record["canonical_narrative"] += f" It relies on `{other.name}` as well."
    elif fault == "nonexistent_entity":
        ghost = f"{primary.file}::{primary.symbol}_v2"
        record["expected_entities"].append(
            {"entity_id": ghost, "role": "supporting", "rationale": "its newer variant"}
        )
    elif fault == "unsupported_fact":
        raised = {name for u in units for name, _ in u.raises}
        name = "KeyError" if "KeyError" not in raised else "TimeoutError"
        record["must_mention_facts"].append(f"`{primary.symbol}` raises `{name}`.")
    elif fault == "low_confidence":
        record["confidence"] = "low"
        record["uncertainty_notes"] = "planted: the oracle is unsure the helpers are all listed"


# -- the adversary --------------------------------------------------------------------

_DEFINED = re.compile(
    r"^`(?P<sym>[^`]+)` is defined in (?P<file>\S+?)(?: at lines (?P<a>\d+)-(?P<b>\d+))?\.$"
)
_PARAMS = re.compile(r"^`(?P<sym>[^`]+)` takes the parameters (?P<params>.+)\.$")
_NO_PARAMS = re.compile(r"^`(?P<sym>[^`]+)` takes no parameters\.$")
_CALLS = re.compile(r"^`(?P<sym>[^`]+)` calls `(?P<callee>[^`]+)`\.$")
_RAISES = re.compile(r"^`(?P<sym>[^`]+)` raises `(?P<exc>[^`]+)`\.$")
_RETURNS = re.compile(r"^`(?P<sym>[^`]+)` (?P<says>does not return|returns) a value\.$")


def check_fact(
    fact: str, index: CodeIndex, answer: OracleAnswer
) -> tuple[bool | None, LineRange | None]:
    """Whether a fact of the oracle's forms holds in the source (None: not checkable),
    and the lines that decide it."""
    by_symbol: dict[str, Unit] = {}
    for e in answer.expected_entities:
        unit = index.get(e.entity_id)
        if unit is not None:
            by_symbol.setdefault(unit.symbol, unit)

    def cite(unit: Unit) -> LineRange:
        return LineRange(file=unit.file, start=unit.start, end=unit.end)

    for pattern in (_DEFINED, _PARAMS, _NO_PARAMS, _CALLS, _RAISES, _RETURNS):
        match = pattern.match(fact.strip())
        if match is None:
            continue
        unit = by_symbol.get(match.group("sym"))
        if unit is None:
            return False, None
        if pattern is _DEFINED:
            same_file = match.group("file") == unit.file
            if match.group("a") is None:
                return same_file, cite(unit)
            span = (int(match.group("a")), int(match.group("b")))
            return same_file and span == (unit.start, unit.end), cite(unit)
        if pattern is _PARAMS:
            listed = [p.strip() for p in match.group("params").split(",")]
            return listed == list(unit.params), cite(unit)
        if pattern is _NO_PARAMS:
            return not unit.params, cite(unit)
        if pattern is _CALLS:
            callee = by_symbol.get(match.group("callee"))
            return callee is not None and callee.entity_id in unit.calls, cite(unit)
        if pattern is _RAISES:
            return match.group("exc") in {n for n, _ in unit.raises}, cite(unit)
        return (match.group("says") == "returns") == unit.returns_value, cite(unit)
    return None, None


class AstAdversaryConfig(RoleConfig):
    """The ast adversary's settings."""

    model: str = Field("ast-adversary/1", description="recorded as the adversary's model id")


@adversary("ast", config=AstAdversaryConfig)
class AstAdversary:
    """Re-checks every claim of an oracle answer against the source, one at a time (ast)."""

    def __init__(self, config: AstAdversaryConfig, context: PluginContext) -> None:
        self.config = config
        self._indexes = _Indexes()
        self._sources = _SourceIndexes()

    def cache_identity(self) -> str:
        return code_identity()

    def review(self, request: AdversaryRequest) -> RoleReply:
        index = self._indexes.get(request.source)
        answer = request.answer
        claims: list[ClaimVerdict] = []
        for e in answer.expected_entities:
            unit = index.get(e.entity_id)
            claims.append(
                ClaimVerdict(
                    claim_type="entity",
                    claim=e.entity_id,
                    verdict="unsupported",
                    note="no such symbol in that file",
                )
                if unit is None
                else ClaimVerdict(
                    claim_type="entity",
                    claim=e.entity_id,
                    verdict="supported",
                    citation=LineRange(file=unit.file, start=unit.start, end=unit.end),
                )
            )
        for f in answer.expected_files:
            ok = f in index.lines
            claims.append(
                ClaimVerdict(
                    claim_type="file", claim=f, verdict="supported" if ok else "unsupported"
                )
            )
        spans = [index.get(e.entity_id) for e in answer.expected_entities if index.get(e.entity_id)]
        for r in answer.expected_line_ranges:
            claims.append(_range_claim(r, index, [u for u in spans if u is not None]))
        for kind, facts, want in (
            ("must_mention_fact", answer.must_mention_facts, True),
            ("must_not_mention_fact", answer.must_not_mention_facts, False),
        ):
            for fact in facts:
                holds, citation = check_fact(fact, index, answer)
                verdict: Literal["supported", "unsupported", "partial"]
                if holds is None:
                    verdict, note = "partial", "not checkable against the code mechanically"
                elif holds is want:
                    verdict, note = "supported", ""
                else:
                    verdict = "unsupported"
                    note = "the code says otherwise" if want else "the falsehood is true"
                claims.append(
                    ClaimVerdict(
                        claim_type=kind, claim=fact, verdict=verdict, citation=citation, note=note
                    )
                )
        blocking = [
            f.message
            for f in check_record(answer.model_dump(mode="json"), self._sources.get(request.source))
            if f.check == "narrative"
        ]
        structural = {"entity", "file", "line_range"}
        if blocking or any(
            c.verdict == "unsupported" and c.claim_type in structural for c in claims
        ):
            overall: Literal["supported", "unsupported", "partial"] = "unsupported"
        elif any(c.verdict != "supported" for c in claims):
            overall = "partial"
        else:
            overall = "supported"
        report = AdversaryReport(
            query_id=answer.query_id,
            claim_verdicts=claims,
            overall_verdict=overall,
            blocking_issues=blocking,
            reviewed_by=f"agent:adversary:{self.config.model}",
        )
        return RoleReply(record=report.model_dump(mode="json"))


def _range_claim(r: LineRange, index: CodeIndex, units: list[Unit]) -> ClaimVerdict:
    claim = f"{r.file}:{r.start}-{r.end}"
    count = index.lines.get(r.file)
    if count is None or not 1 <= r.start <= r.end <= count:
        return ClaimVerdict(
            claim_type="line_range",
            claim=claim,
            verdict="unsupported",
            note="not a range of the file",
        )
    here = [u for u in units if u.file == r.file]
    for u in here:
        if (u.start, u.end) == (r.start, r.end):
            return ClaimVerdict(
                claim_type="line_range",
                claim=claim,
                verdict="supported",
                citation=LineRange(file=u.file, start=u.start, end=u.end),
            )
    overlap = next((u for u in here if u.start <= r.end and r.start <= u.end), None)
    if overlap is not None:
        return ClaimVerdict(
            claim_type="line_range",
            claim=claim,
            verdict="partial",
            citation=LineRange(file=overlap.file, start=overlap.start, end=overlap.end),
            note="overlaps an expected entity without matching it",
        )
    return ClaimVerdict(
        claim_type="line_range",
        claim=claim,
        verdict="unsupported",
        note="covers no expected entity",
    )


# -- the judge ------------------------------------------------------------------------


class ClaimsJudgeConfig(RoleConfig):
    """The claims judge's settings."""

    model: str = Field("claims-judge/1", description="recorded as the judge's model id")


@judge("claims", config=ClaimsJudgeConfig)
class ClaimsJudge:
    """Rates the narrative from the adversary's verdicts: any refuted fact diverges."""

    def __init__(self, config: ClaimsJudgeConfig, context: PluginContext) -> None:
        self.config = config

    def cache_identity(self) -> str:
        return code_identity()

    def judge(self, request: JudgeRequest) -> RoleReply:
        report = request.adversary
        facts = [c for c in report.claim_verdicts if c.claim_type.endswith("_fact")]
        refuted = [c.claim for c in facts if c.verdict == "unsupported"]
        unsure = [c.claim for c in report.claim_verdicts if c.verdict == "partial"]
        entities = [c.claim for c in report.claim_verdicts if c.claim_type == "entity"]
        primary = split_entity(entities[0])[1].rpartition(".")[2] if entities else ""
        if refuted or report.blocking_issues:
            verdict = "significant_divergence"
            why = "the adversary refuted: " + "; ".join(refuted or report.blocking_issues)
        elif unsure or (primary and primary not in request.canonical_narrative):
            verdict = "minor_divergence"
            why = (
                "partly supported: " + "; ".join(unsure)
                if unsure
                else "the narrative skips the primary entity"
            )
        else:
            verdict, why = "equivalent", "every fact the narrative rests on was supported"
        record = {
            "query_id": report.query_id,
            "verdict": verdict,
            "rationale": why,
            "judged_by": f"agent:judge:{self.config.model}",
        }
        return RoleReply(record=record)
