"""The mining config (``conf/mining.yaml`` + ``conf/mine/<name>.yaml``), validated once.

Plugins are chosen by registry name as in a run: ``corpus: {name: jsonl,
path: ...}``, ``solver: {name: command, command: [...]}``, ``validator:
{name: exact}``. Every error names its config key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from evalframe.core.errors import ConfigError
from evalframe.mine.tasks import BenchmarkSpec
from evalframe.plugin.registry import (
    CORPORA,
    SOLVERS,
    VALIDATORS,
    SelectedPlugin,
    format_validation_error,
    select_plugin,
)

__all__ = ["MineConfig", "PoolSection", "StatisticsSection", "TrialsSection", "validate_mining"]


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PoolSection(_Section):
    """``pool:`` which candidates each task gets."""

    distractors: int = Field(
        5, ge=0, description="documents drawn at random from the corpus, besides the seeds"
    )
    shuffle_context: bool = Field(
        True, description="present each trial's documents in a random order (no position bias)"
    )


class TrialsSection(_Section):
    """``trials:`` how many, and how each draws its context."""

    n: int | Literal["auto"] = Field(
        "auto", description="trials per task; auto: what the budget needs, up to trials.max"
    )
    max: int = Field(2000, ge=1, description="cap on trials per task when n is auto")
    p_include: float = Field(
        0.5, gt=0, lt=1, description="chance that each candidate enters a trial's context"
    )

    @field_validator("n")
    @classmethod
    def _at_least_one(cls, n: int | str) -> int | str:
        # Field(ge=1) cannot sit on a union with "auto"; 0 or -5 trials would label
        # every candidate NO from no evidence at all
        if isinstance(n, int) and n < 1:
            raise ValueError("Input should be greater than or equal to 1, or 'auto'")
        return n


class StatisticsSection(_Section):
    """``statistics:`` when a candidate is called relevant, and the power to plan for."""

    threshold: float = Field(0.1, ge=0, lt=1, description="Δp a relevant document must exceed")
    confidence: float = Field(0.95, gt=0.5, lt=1, description="1 − α of the test; the CI's level")
    power: float = Field(0.8, gt=0, lt=1, description="wanted chance to find a true effect")
    effect: float | None = Field(
        None,
        gt=0,
        le=1,
        description="the Δp the budget plans to find (default: twice the threshold, or 0.2)",
    )
    base_rate: float | None = Field(
        None,
        ge=0,
        lt=1,
        description="expected success rate without the document, for the "
        "budget (default: the worst case)",
    )
    correction: Literal["holm", "bh", "none"] = Field(
        "holm", description="multiple-testing correction across a pair's candidates"
    )

    @property
    def design_effect(self) -> float:
        if self.effect is not None:
            return self.effect
        return min(1.0, 2 * self.threshold) if self.threshold > 0 else 0.2


class OutputSection(_Section):
    dir: str = Field(description="where the mined dataset is written (Hydra's run dir)")
    cache_dir: str = Field(description="the call cache (shared with the retrieval cache)")


class _Schema(_Section):
    experiment: str = Field(description="the mining experiment's name (+mine=NAME)")
    description: str = ""
    corpus: dict[str, Any]
    solver: dict[str, Any]
    validator: dict[str, Any]
    benchmarks: dict[str, BenchmarkSpec] | list[dict[str, Any]]
    pool: PoolSection = Field(default_factory=PoolSection)
    trials: TrialsSection = Field(default_factory=TrialsSection)
    statistics: StatisticsSection = Field(default_factory=StatisticsSection)
    seed: int = Field(
        0, ge=0, description="the same seed draws the same pools and contexts (NumPy: >= 0)"
    )
    max_concurrency: int = Field(4, ge=1, le=256, description="solver calls in flight at once")
    cache: bool = Field(True, description="reuse cached solver answers and verdicts")
    progress: bool = Field(True, description="a progress bar on a terminal")
    output: OutputSection


#: A plugin chosen by name, with its validated config and the key it came from.
Resolved = SelectedPlugin


@dataclass(frozen=True)
class MineConfig:
    """A validated mining experiment."""

    name: str
    description: str
    corpus: Resolved
    solver: Resolved
    validator: Resolved
    benchmarks: dict[str, BenchmarkSpec]
    pool: PoolSection
    trials: TrialsSection
    statistics: StatisticsSection
    seed: int
    max_concurrency: int
    cache: bool
    progress: bool
    output_dir: Path
    cache_dir: Path
    raw: Mapping[str, Any]


_resolve = select_plugin


def _benchmarks(raw: dict[str, BenchmarkSpec] | list[dict[str, Any]]) -> dict[str, BenchmarkSpec]:
    """The registry as name -> spec; a YAML list names each entry with ``name:``."""
    if isinstance(raw, dict):
        out = dict(raw)
    else:
        out = {}
        for i, item in enumerate(raw):
            entry = dict(item)
            name = entry.pop("name", None)
            if not isinstance(name, str) or not name or name in out:
                raise ConfigError(
                    f"benchmarks[{i}] needs a unique 'name'",
                    key=f"benchmarks[{i}].name",
                    got=repr(name),
                )
            try:
                out[name] = BenchmarkSpec.model_validate(entry)
            except ValidationError as exc:
                raise ConfigError(
                    "invalid benchmark: " + format_validation_error(exc, f"benchmarks[{i}]"),
                    key=f"benchmarks[{i}]",
                ) from None
    if not out:
        raise ConfigError(
            "no benchmark to mine",
            key="benchmarks",
            expected="at least one benchmark with its tasks file",
        )
    return out


def validate_mining(raw: Mapping[str, Any]) -> MineConfig:
    """Validate a composed mining config (a plain, resolved mapping)."""
    try:
        schema = _Schema.model_validate(dict(raw))
    except ValidationError as exc:
        raise ConfigError(
            "invalid mining configuration: "
            + format_validation_error(exc, "").replace(": .", ": ").lstrip("."),
            hint="fix the key in conf/mine/<name>.yaml or on the command line; "
            "`evalframe mine +mine=NAME --cfg job` prints the composed config",
        ) from None
    return MineConfig(
        name=schema.experiment,
        description=schema.description,
        corpus=_resolve(CORPORA, schema.corpus, "corpus"),
        solver=_resolve(SOLVERS, schema.solver, "solver"),
        validator=_resolve(VALIDATORS, schema.validator, "validator"),
        benchmarks=_benchmarks(schema.benchmarks),
        pool=schema.pool,
        trials=schema.trials,
        statistics=schema.statistics,
        seed=schema.seed,
        max_concurrency=schema.max_concurrency,
        cache=schema.cache,
        progress=schema.progress,
        output_dir=Path(schema.output.dir),
        cache_dir=Path(schema.output.cache_dir).expanduser(),
        raw=dict(raw),
    )
