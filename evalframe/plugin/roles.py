"""The golden-set construction roles (``evalframe golden build``): record schemas and protocols.

KnowCode's pipeline (reference 002, §3 and §6) builds a golden set with four
agents that each have one job: a **query author** writes a question about
entities it read in the code, an **oracle** answers it from the code alone, an
**adversary** tries to falsify every claim of that answer, and a **narrative
judge** rates whether the oracle's prose and the adversary's findings say the
same thing. Each is a plugin kind here, registered and discovered like a
retriever (``@author``, ``@oracle``, ``@adversary``, ``@judge`` in
:mod:`evalframe.plugin.registry`; entry-point groups ``evalframe.authors``,
``evalframe.oracles``, ``evalframe.adversaries``, ``evalframe.judges``).

The records are the reference's schemas (§4.1): ``QueryCandidate``,
``OracleAnswer``, ``AdversaryReport`` and the final ``GoldenLabel``, plus the
judge's ``NarrativeJudgement``, which the reference describes (§6) but does
not spell out. Every record carries ``schema_version``. Unknown fields are
kept (``difficulty_rationale``, ``classifier_expectation``, an agent's own
notes), so a record passes through the pipeline as the agent wrote it.

A role method returns a :class:`RoleReply`: the record as a plain mapping
(evalframe validates it against the schema, and a record that does not fit is
a reject naming the rule ``schema``, not a crash) and the tokens the call
used, for the build's budget.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from evalframe.plugin.protocols import PluginConfig

__all__ = [
    "CLAIM_VERDICTS",
    "DIFFICULTIES",
    "NARRATIVE_VERDICTS",
    "ROLES",
    "SCHEMA_VERSION",
    "TASK_TYPES",
    "Adversary",
    "AdversaryReport",
    "AdversaryRequest",
    "Author",
    "AuthorRequest",
    "ClaimVerdict",
    "Evidence",
    "ExpectedEntity",
    "GoldenLabel",
    "Judge",
    "JudgeRequest",
    "LineRange",
    "NarrativeJudgement",
    "Oracle",
    "OracleAnswer",
    "OracleRequest",
    "QueryCandidate",
    "RoleConfig",
    "RoleReply",
    "SourceRef",
    "Usage",
]

#: The record schema this evalframe writes. A golden set whose major schema
#: version differs is a new major version of the set (``golden_v2.0``).
SCHEMA_VERSION = "1.0.0"
ROLES = ("author", "oracle", "adversary", "judge")
#: KnowCode's task types and difficulty tiers (§3.1, §7.2): the plan's rows and columns.
TASK_TYPES = ("locate", "explain", "debug", "extend", "review", "general")
DIFFICULTIES = ("easy", "medium", "hard")
CLAIM_VERDICTS = ("supported", "unsupported", "partial")
NARRATIVE_VERDICTS = ("equivalent", "minor_divergence", "significant_divergence")

ClaimVerdictValue = Literal["supported", "unsupported", "partial"]


class _Open(BaseModel):
    """A record part: frozen, and fields the schema does not name are kept."""

    model_config = ConfigDict(frozen=True, extra="allow")


class _Record(_Open):
    schema_version: str = SCHEMA_VERSION


class QueryCandidate(_Record):
    """§4.1 QueryCandidate: a question grounded in named target entities."""

    query_id: str = Field(min_length=1)
    query_text: str = Field(min_length=1)
    task_type: str
    difficulty: str
    focus_area: str | None = None
    target_entity_ids: list[str]
    difficulty_rationale: str | None = None
    authored_by: str = ""
    created_at: str = ""


class ExpectedEntity(_Open):
    entity_id: str
    role: str = "primary"  # primary | supporting | contextual
    rationale: str = ""


class LineRange(_Open):
    """``{file, start, end}``; validity (1 <= start <= end <= lines) is the gate's check,
    so that a bad range is a reject naming ``line-range``, not a schema error."""

    file: str
    start: int
    end: int


class Evidence(LineRange):
    read_at_step: int | None = None


class OracleAnswer(_Record):
    """§4.1 OracleAnswer: the canonical structured answer, narrative as one field."""

    query_id: str = Field(min_length=1)
    task_type: str
    difficulty: str
    expected_entities: list[ExpectedEntity] = Field(min_length=1)
    expected_files: list[str]
    expected_line_ranges: list[LineRange] = []
    must_mention_facts: list[str] = []
    must_not_mention_facts: list[str] = []
    canonical_narrative: str = ""
    source_evidence: list[Evidence] = []
    confidence: Literal["high", "medium", "low"] = "high"
    uncertainty_notes: str | None = None
    authored_by: str = ""
    created_at: str = ""


class ClaimVerdict(_Open):
    """One claim the adversary checked: ``claim_type`` is ``entity``, ``file``,
    ``line_range``, ``must_mention_fact``, ``must_not_mention_fact`` or ``narrative``."""

    claim_type: str
    claim: str
    verdict: ClaimVerdictValue
    citation: LineRange | None = None
    note: str = ""


class AdversaryReport(_Record):
    """§4.1 AdversaryReport: a verdict per claim, with a citation."""

    query_id: str = Field(min_length=1)
    claim_verdicts: list[ClaimVerdict]
    overall_verdict: ClaimVerdictValue
    blocking_issues: list[str] = []
    reviewed_by: str = ""
    reviewed_at: str = ""


class NarrativeJudgement(_Record):
    """§6 condition 2: does the narrative agree with the adversary's findings?"""

    query_id: str = Field(min_length=1)
    verdict: Literal["equivalent", "minor_divergence", "significant_divergence"]
    rationale: str = ""
    judged_by: str = ""
    judged_at: str = ""


class GoldenLabel(_Record):
    """§4.1 GoldenLabel: the committed record, with its provenance."""

    query_id: str
    query_text: str
    task_type: str
    difficulty: str
    expected_entities: list[ExpectedEntity]
    expected_files: list[str]
    expected_line_ranges: list[LineRange] = []
    must_mention_facts: list[str] = []
    must_not_mention_facts: list[str] = []
    canonical_narrative: str = ""
    provenance: dict[str, Any] = {}


# -- what a role is asked -----------------------------------------------------------


class _Request(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SourceRef(_Request):
    """The code under labelling: a folder, or a Git revision of it."""

    root: str
    rev: str | None = None


class AuthorRequest(_Request):
    """Write the candidate ``query_id``: slot ``slot`` of ``count`` in one plan cell.

    ``plan`` maps every cell of the batch (``task_type/difficulty``) to the
    number of candidates asked of it, so an author can keep its slot apart from
    the others; ``avoid_entity_ids`` are targets the blessed set already covers;
    ``feedback`` lists the failure modes of a requeued batch (§8).
    """

    query_id: str
    task_type: str
    difficulty: str
    slot: int
    count: int
    plan: dict[str, int] = {}
    focus_area: str | None = None
    avoid_entity_ids: list[str] = []
    feedback: list[str] = []
    seed: int
    source: SourceRef


class OracleRequest(_Request):
    candidate: QueryCandidate
    source: SourceRef
    feedback: list[str] = []


class AdversaryRequest(_Request):
    answer: OracleAnswer
    source: SourceRef


class JudgeRequest(_Request):
    """(query, oracle's canonical narrative, adversary's findings), as §6 puts it."""

    query: QueryCandidate
    canonical_narrative: str
    adversary: AdversaryReport


class Usage(BaseModel):
    """Tokens one call used (0 for a role that calls no model)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input_tokens: int = Field(0, ge=0)
    output_tokens: int = Field(0, ge=0)


class RoleReply(BaseModel):
    """What a role returns: the record as a mapping, and the tokens spent on it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    record: dict[str, Any]
    usage: Usage = Usage()


class RoleConfig(PluginConfig):
    """Base of a role plugin's config: the model id recorded in provenance and the meta."""

    model: str = Field(
        "", description="the model (or agent version) playing the role, as provenance records it"
    )


# -- the protocols ------------------------------------------------------------------


@runtime_checkable
class Author(Protocol):
    """Writes one QueryCandidate for a plan cell, by reading the code (§3.1).

    Optional, as for every paid plugin: ``cache_identity() -> JSON-able value``
    for what changes answers but is not in the config, and a class attribute
    ``cacheable = False`` when caching is pointless. The same holds for the
    other three roles.
    """

    def author(self, request: AuthorRequest) -> RoleReply: ...


@runtime_checkable
class Oracle(Protocol):
    """Answers one candidate with an OracleAnswer, from the code alone (§3.2)."""

    def answer(self, request: OracleRequest) -> RoleReply: ...


@runtime_checkable
class Adversary(Protocol):
    """Tries to falsify an OracleAnswer claim by claim: an AdversaryReport (§3.3)."""

    def review(self, request: AdversaryRequest) -> RoleReply: ...


@runtime_checkable
class Judge(Protocol):
    """Rates the narrative against the adversary's findings: a NarrativeJudgement (§6)."""

    def judge(self, request: JudgeRequest) -> RoleReply: ...
