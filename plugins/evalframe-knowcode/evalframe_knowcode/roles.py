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
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from evalframe.core.errors import PluginError
from evalframe.plugin.protocols import PluginContext
from evalframe.plugin.registry import adversary, author, judge, oracle
from evalframe.plugin.roles import (
    AdversaryReport,
    AdversaryRequest,
    AuthorRequest,
    ClaimVerdict,
    JudgeRequest,
    LineRange,
    OracleRequest,
    RoleConfig,
    RoleReply,
    SourceRef,
)
from evalframe_knowcode.checks import SourceIndex, check_record, split_entity
from evalframe_knowcode.codeindex import CodeIndex, Unit
from evalframe_knowcode.facts import check_fact, facts_for, narrative_for
from evalframe_knowcode.phrasing import Option, leaks, options, query_text
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
_CODE = ("roles.py", "phrasing.py", "facts.py", "codeindex.py", "entities.py")


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
        self._plans: dict[Any, dict[tuple[str, int], Option | None]] = {}

    def cache_identity(self) -> str:
        return code_identity()

    def _assign(
        self, index: CodeIndex, request: AuthorRequest
    ) -> dict[tuple[str, int], Option | None]:
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
        picks: dict[tuple[str, int], Option | None] = {}
        options_of = {
            name: options(index, *name.partition("/")[::2], self.config.seed) for name in plan
        }
        # the scarcest cells choose first, so a plentiful cell never takes their only option
        for name in sorted(plan, key=lambda n: (len(options_of[n]), list(plan).index(n))):
            task, _, difficulty = name.partition("/")
            for slot in range(plan[name]):
                chosen = None
                for option in options_of[name]:
                    targets = set(option.targets)
                    if option.primary in used or len(targets & avoid) / len(targets) > 0.5:
                        continue  # what the blessed set covers is not labelled again
                    if any(len(targets & t) / len(targets) > 0.5 for t in taken):
                        continue
                    if leaks(option, task, difficulty, slot):
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
                option = Option(before.targets, before.unit, before.exception)
                note = "planted fault: overlap (the targets of the query before it)"
        if option is None:  # the tree has no fresh entity left for this cell
            fallback = options(index, request.task_type, request.difficulty, self.config.seed)
            if not fallback:
                fallback = options(index, "general", request.difficulty, self.config.seed)
            option = fallback[0] if fallback else None
            note = "no fresh entity left for this cell: repeats the first option"
        if option is None:
            raise PluginError(
                f"author 'ast': the tree {request.source.root} has no function whose "
                "docstring it can phrase as a question",
                key="source.root",
                hint="point source.root at a Python tree with documented functions, or use "
                "another author",
            )
        record: dict[str, Any] = {
            "query_id": request.query_id,
            "query_text": query_text(option, request.task_type, request.difficulty, request.slot),
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


# -- the oracle -----------------------------------------------------------------------

OracleFault = Literal[
    "wrong_line_range",
    "narrative_entity",
    "nonexistent_entity",
    "unsupported_fact",
    "low_confidence",
]


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
