"""The golden-build config (``conf/building.yaml`` + ``conf/build/<name>.yaml``), validated once.

Roles are chosen by registry name, as retrievers are: ``oracle: {name:
command, command: [...], model: gpt-5}``. Each role has its own model, so
"different models per role" (reference 002 §12) is four config lines. The
format (``format: knowcode``) names the dataset plugin of the set being built;
it supplies the format's rules (the mechanical gate, de-duplication, agreement,
source hashes). Every error names its config key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalframe.core.errors import ConfigError
from evalframe.plugin.registry import (
    ADVERSARIES,
    AUTHORS,
    DATASETS,
    JUDGES,
    ORACLES,
    Registry,
    SelectedPlugin,
    format_validation_error,
    select_plugin,
)
from evalframe.plugin.roles import ROLES

__all__ = ["STEPS", "BuildConfig", "Resolved", "validate_build"]

#: The steps of KnowCode's Phase 1 (§10.1 A-H), by the names ``step=`` takes.
STEPS = ("plan", "author", "dedup", "oracle", "gate", "adversary", "review", "assemble")
LETTERS = dict(zip(STEPS, "ABCDEFGH", strict=True))
REGISTRY: dict[str, Registry[Any]] = {
    "author": AUTHORS,
    "oracle": ORACLES,
    "adversary": ADVERSARIES,
    "judge": JUDGES,
}


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SourceSection(_Section):
    """``source:`` the code under labelling."""

    root: str = Field(description="the source tree the roles read and the gate checks")
    rev: str | None = Field(None, description="a Git revision of it (git show REV:path)")
    focus_area: str | None = Field(None, description="passed to the authors (§3.1)")


class DedupSection(_Section):
    max_overlap: float = Field(
        0.5, ge=0, le=1, description="reject a candidate whose targets overlap more (§10.1 C)"
    )


class AgreementSection(_Section):
    threshold: float = Field(
        0.8, ge=0, le=1, description="structural Jaccard on entities and on files (§6)"
    )


class ReviewSection(_Section):
    """``review:`` the human spot-check (§8)."""

    file: str | None = Field(None, description="the reviewer's verdicts; null: write the sample")
    fraction: float = Field(0.15, gt=0, le=1, description="share of the batch drawn for review")
    seed: int = Field(0, description="the same seed draws the same sample")
    max_major_wrong: float = Field(0.05, ge=0, le=1, description="(major + wrong) rate < this")
    max_minor: float = Field(0.15, ge=0, le=1, description="minor_issue rate < this")
    max_wrong_easy: int = Field(0, ge=0, description="at most this many wrong on easy queries")


DriftTest = Literal["cells", "entities_per_record", "structural_entities", "structural_files"]
DRIFT_TESTS: tuple[DriftTest, ...] = (
    "cells",
    "entities_per_record",
    "structural_entities",
    "structural_files",
)


class DriftSection(_Section):
    """``drift:`` a later batch against the blessed set's distributions (§10.2)."""

    enabled: bool = True
    alpha: float = Field(0.01, gt=0, lt=1, description="family-wise level over the tests")
    min_records: int = Field(5, ge=2, description="fewer records on either side: not tested")
    tests: list[DriftTest] = Field(
        default_factory=lambda: list(DRIFT_TESTS), description="which distributions to compare"
    )


class BudgetSection(_Section):
    """``budget:`` refused up front when the estimate exceeds it."""

    max_calls: int | None = Field(None, ge=0, description="role calls the build may make")
    max_tokens: int | None = Field(None, ge=0, description="tokens the build may spend")
    tokens_per_call: dict[str, int] = Field(
        default_factory=lambda: {"author": 2000, "oracle": 8000, "adversary": 6000, "judge": 2000},
        description="the estimate's tokens per call of each role",
    )


class OutputSection(_Section):
    dir: str = Field(description="where versions are written (golden_vX.Y.json + meta)")
    batch: str = Field(description="this batch's folder (Hydra's run dir)")
    blessed_dir: str | None = Field(
        description="where the blessed versions a batch adds to are read (null: none)"
    )
    cache_dir: str = Field(description="the call cache (shared with the other caches)")


class _Schema(_Section):
    name: str = Field(description="the build's name (+build=NAME)")
    description: str = ""
    format: str = Field("knowcode", description="dataset plugin of the set; supplies its rules")
    source: SourceSection
    plan: str | dict[str, Any] = Field(description="the sampling plan: a file or a mapping")
    headroom: float = Field(1.5, ge=1, le=10, description="candidates per target (§10.1 B)")
    seed: int = 0
    author: dict[str, Any]
    oracle: dict[str, Any]
    adversary: dict[str, Any]
    judge: dict[str, Any]
    dedup: DedupSection = Field(default_factory=DedupSection)
    agreement: AgreementSection = Field(default_factory=AgreementSection)
    authoring: Literal["warning", "error", "off"] = "warning"
    review: ReviewSection = Field(default_factory=ReviewSection)
    drift: DriftSection = Field(default_factory=DriftSection)
    allow_drift: bool = False
    budget: BudgetSection = Field(default_factory=BudgetSection)
    max_concurrency: int = Field(4, ge=1, le=256)
    cache: bool = True
    step: Literal[
        "all", "plan", "author", "dedup", "oracle", "gate", "adversary", "review", "assemble"
    ] = "all"
    output: OutputSection


@dataclass(frozen=True)
class Resolved(SelectedPlugin):
    """A role chosen by name, with its validated config and the key it came from."""

    @property
    def model(self) -> str:
        return str(getattr(self.config, "model", "") or self.spec.name)


@dataclass(frozen=True)
class BuildConfig:
    name: str
    description: str
    format: str
    rules_factory: Any
    source: SourceSection
    plan: str | dict[str, Any]
    headroom: float
    seed: int
    roles: dict[str, Resolved]
    dedup: DedupSection
    agreement: AgreementSection
    authoring: str
    review: ReviewSection
    drift: DriftSection
    allow_drift: bool
    budget: BudgetSection
    max_concurrency: int
    cache: bool
    step: str
    output_dir: Path
    batch_dir: Path
    blessed_dir: Path | None
    cache_dir: Path
    raw: Mapping[str, Any]


def _resolve(registry: Registry[Any], node: Mapping[str, Any], key: str) -> Resolved:
    chosen = select_plugin(registry, node, key)
    return Resolved(spec=chosen.spec, config=chosen.config, key=chosen.key)


def _rules_factory(fmt: str) -> Any:
    spec = DATASETS.get(fmt, key="format")
    factory = getattr(spec.obj, "build_rules", None)
    if not callable(factory):
        raise ConfigError(
            f"dataset format {fmt!r} has no golden-build rules",
            key="format",
            expected="a dataset plugin with a build_rules(root, rev) method (knowcode has one)",
            hint="build KnowCode-shaped golden sets with format: knowcode",
        )
    return factory


def validate_build(raw: Mapping[str, Any]) -> BuildConfig:
    """Validate a composed build config (a plain, resolved mapping)."""
    try:
        schema = _Schema.model_validate(dict(raw))
    except ValidationError as exc:
        raise ConfigError(
            "invalid golden-build configuration: "
            + format_validation_error(exc, "").replace(": .", ": ").lstrip("."),
            hint="fix the key in conf/build/<name>.yaml or on the command line; "
            "`evalframe golden build +build=NAME --cfg job` prints the composed config",
        ) from None
    unknown = set(schema.budget.tokens_per_call) - set(ROLES)
    if unknown:
        raise ConfigError(
            f"budget.tokens_per_call names no role: {', '.join(sorted(unknown))}",
            key="budget.tokens_per_call",
            expected=", ".join(ROLES),
        )
    roles = {role: _resolve(REGISTRY[role], getattr(schema, role), role) for role in ROLES}
    blessed = schema.output.blessed_dir
    return BuildConfig(
        name=schema.name,
        description=schema.description,
        format=schema.format,
        rules_factory=_rules_factory(schema.format),
        source=schema.source,
        plan=schema.plan,
        headroom=schema.headroom,
        seed=schema.seed,
        roles=roles,
        dedup=schema.dedup,
        agreement=schema.agreement,
        authoring=schema.authoring,
        review=schema.review,
        drift=schema.drift,
        allow_drift=schema.allow_drift,
        budget=schema.budget,
        max_concurrency=schema.max_concurrency,
        cache=schema.cache,
        step=schema.step,
        output_dir=Path(schema.output.dir),
        batch_dir=Path(schema.output.batch),
        blessed_dir=Path(blessed) if blessed else None,
        cache_dir=Path(schema.output.cache_dir).expanduser(),
        raw=dict(raw),
    )
