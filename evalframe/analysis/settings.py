"""The ``analysis:`` section of an experiment, validated once (from ``pipeline/config.py``).

::

    analysis:
      failures:     {enabled: true, ...}      # failure categories of failed queries (default on)
      calibration:  {outcome: answer, ...}    # analysis=calibration; null: off
      benefit:      {a: ..., b: ..., ...}     # a two-arm A/B benefit table; null: off

Every error names its config key (``analysis.calibration.thresholds[1]``).
The judge of answers is a validator plugin chosen by name, validated here as
a retriever is, so ``analysis.calibration.judge.min_share: 2`` fails before
any retrieval.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from evalframe.core.errors import ConfigError
from evalframe.plugin.protocols import PluginContext, Validator
from evalframe.plugin.registry import VALIDATORS, PluginSpec, configure, validation_problems

__all__ = [
    "Analyses",
    "AnalysisSettings",
    "BenefitSettings",
    "CalibrationSettings",
    "FailureSettings",
    "JudgeChoice",
    "validate_analysis",
    "value_names",
]

BENEFIT_METRICS = (
    "success_lift",
    "net_tokens_saved",
    "net_tokens_saved_per_success",
    "tool_calls_saved",
    "turns_saved",
    "latency_ms_saved",
    "usd_saved",
)
CATEGORIES = ("vocabulary_mismatch", "specificity_gap", "distractor_overlap", "other")


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)  # as plugins


class FailureSettings(_Section):
    """``analysis.failures``: the heuristics that name why a failed query failed."""

    enabled: bool = Field(True, description="categorise failed queries when a corpus is loaded")
    vocabulary_max_overlap: float = Field(
        0.2,
        ge=0,
        le=1,
        description="vocabulary mismatch when the best expected document holds at most this "
        "share of the query's content terms",
    )
    short_query_terms: int = Field(
        3, ge=0, description="a query with at most this many content terms is short"
    )
    generic_df_share: float = Field(
        0.05,
        gt=0,
        le=1,
        description="a query is generic when every content term occurs in at least this share "
        "of the corpus's documents",
    )
    flat_margin: float = Field(
        0.2,
        ge=0,
        description="scores within this fraction of the top score count as about equal",
    )
    flat_count: int = Field(
        5, ge=2, description="scores are flat when at least this many are about equal"
    )
    flat_depth: int = Field(10, ge=2, description="how deep the flat-score test looks")
    label_field: str | None = Field(
        None,
        description="query metadata field with the dataset's own label of why a query is hard "
        "(ADK's kind); a failed query whose label label_categories maps takes that category, "
        "and the heuristics' verdict is kept beside it",
    )
    label_categories: dict[
        str, Literal["vocabulary_mismatch", "specificity_gap", "distractor_overlap"]
    ] = Field(
        default_factory=dict,
        description="label value -> category (vocabulary_mismatch, specificity_gap, "
        "distractor_overlap); a label not listed leaves the query to the heuristics; "
        "ignored while label_field is null",
    )

    @model_validator(mode="after")
    def _a_field_needs_its_categories(self) -> FailureSettings:
        # label_field: null is the off switch, whatever the map holds (a stored run's map
        # cannot be emptied by an override: Hydra merges {} into it)
        if self.label_field and not self.label_categories:
            raise ValueError(
                "label_field is set but label_categories is empty: say which of its values "
                "name which category (e.g. label_categories: {vague: specificity_gap}), or "
                "set label_field: null to leave every failed query to the heuristics"
            )
        return self


class CalibrationSettings(_Section):
    """``analysis.calibration``: a confidence against an outcome."""

    outcome: Literal["hit", "recall", "answer"] = Field(
        "answer",
        description="hit: Hit@k = 1; recall: R@k = 1; answer: the judge accepts the answer "
        "(every must-mention fact; and no must-not-mention fact when forbidden_field is set)",
    )
    k: int = Field(10, ge=1, description="cutoff of hit@k and recall@k")
    judge: dict[str, Any] = Field(
        default_factory=lambda: {"name": "facts"},
        description="validator plugin that judges an answer (outcome: answer)",
    )
    facts_field: str = Field(
        "must_mention_facts", description="query metadata field of the must-mention facts"
    )
    # KnowCode's curve is against "local answer contained all must_mention_facts"
    # (reference 002, section 10.1): a stated must-not fact fails an answer only on request
    forbidden_field: str | None = Field(
        None,
        description="query metadata field of the must-not facts: an answer that states one is "
        "not correct (null: only the must-mention facts decide, KnowCode's definition)",
    )
    bins: int = Field(10, ge=1, le=1000, description="number of reliability bins")
    binning: Literal["width", "mass"] = Field(
        "width", description="width: equal-width bins; mass: about equally many queries each"
    )
    thresholds: list[float] = Field(
        default_factory=lambda: [0.8],
        description="answer_correctness@T for each routing threshold T",
    )
    target_precision: float = Field(
        0.9, gt=0, le=1, description="find the lowest threshold whose routed precision is this"
    )
    min_queries: int = Field(
        30, ge=1, description="fewer usable queries than this puts a caveat in the output"
    )
    min_routed: int = Field(
        5,
        ge=1,
        description="the lowest-threshold search only considers thresholds that route at least "
        "this many queries (a precision over fewer is no evidence)",
    )

    @field_validator("thresholds")
    @classmethod
    def _unit(cls, values: list[float]) -> list[float]:
        for v in values:
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"a threshold must lie in [0, 1], and {v} does not")
        return values


class BenefitSettings(_Section):
    """``analysis.benefit``: two arms' per-task records, paired by task and seed."""

    a: str = Field(description="treatment arm: a JSONL file of attempts, or a folder of them")
    b: str = Field(description="control arm, in the same format")
    label_a: str | None = Field(None, description="name of arm A (default: its records' 'arm')")
    label_b: str | None = Field(None, description="name of arm B")
    min_seeds: int = Field(3, ge=1, description="seeds each task needs in each arm")
    score: Literal["records", "answers"] = Field(
        "records",
        description="records: the records' own success; answers: judge each answer against "
        "the golden set's facts, blind to the arm",
    )
    judge: dict[str, Any] = Field(
        default_factory=lambda: {"name": "facts"}, description="validator (score: answers)"
    )
    facts_field: str = "must_mention_facts"
    # KnowCode's A/B success is "scored against must_mention_facts / must_not_mention_facts"
    forbidden_field: str | None = Field(
        "must_not_mention_facts",
        description="query metadata field of the must-not facts (null: none are checked)",
    )
    strata: list[str] = Field(
        default_factory=lambda: ["task_type", "difficulty"],
        description="fields whose values make a stratum",
    )
    split: str | None = Field(
        "baseline_answerable", description="a field reported as a split of its own (null: none)"
    )


class AnalysisSettings(_Section):
    failures: FailureSettings = Field(default_factory=FailureSettings)
    calibration: CalibrationSettings | None = None
    benefit: BenefitSettings | None = None


@dataclass(frozen=True)
class JudgeChoice:
    """A judge (validator plugin) chosen by name, with its validated settings."""

    spec: PluginSpec
    config: BaseModel | None
    key: str

    def build(self) -> Validator:
        """The judge, built as a plugin is (``Plugin(config, context)``) and checked."""
        judge = self.spec.obj(self.config, PluginContext(config_key=self.key))
        if not isinstance(judge, Validator):
            raise ConfigError(
                f"judge {self.spec.name!r} ({self.spec.module}) is not a validator",
                key=f"{self.key}.name",
                hint="a judge has validate(task, answer) -> Judgement",
            )
        return judge


@dataclass(frozen=True)
class Analyses:
    """The validated ``analysis:`` section plus its judges."""

    settings: AnalysisSettings
    calibration_judge: JudgeChoice | None = None
    benefit_judge: JudgeChoice | None = None


def _judge(node: Mapping[str, Any], key: str) -> JudgeChoice:
    params = dict(node)
    name = params.pop("name", "facts")  # settings alone tune the built-in judge
    if not isinstance(name, str) or not name:
        raise ConfigError(
            "no judge selected",
            key=f"{key}.name",
            expected=f"a validator name, one of: {', '.join(VALIDATORS.names())}",
            got=repr(name),
        )
    spec = VALIDATORS.get(name, key=f"{key}.name")
    return JudgeChoice(spec=spec, config=configure(spec, params, key), key=key)


def validate_analysis(raw: Mapping[str, Any] | None, *, depth: int) -> Analyses:
    """The ``analysis:`` mapping as :class:`Analyses`; errors name ``analysis.<key>``."""
    try:
        settings = AnalysisSettings.model_validate(dict(raw or {}))
    except ValidationError as exc:
        problems = validation_problems(exc, "analysis")
        where, what = problems[0]
        raise ConfigError(
            what if len(problems) == 1 else "; ".join(f"{w}: {m}" for w, m in problems),
            key=where,
            hint="see docs/analyses.md for the analysis settings",
        ) from None
    cal, ben = settings.calibration, settings.benefit
    if cal is not None and cal.outcome in ("hit", "recall") and cal.k > depth:
        raise ConfigError(
            f"calibration's outcome {cal.outcome}@{cal.k} looks deeper than the run retrieves",
            key="analysis.calibration.k",
            expected=f"at most depth = {depth}",
            got=str(cal.k),
            hint="lower analysis.calibration.k or raise depth",
        )
    return Analyses(
        settings=settings,
        calibration_judge=(
            _judge(cal.judge, "analysis.calibration.judge")
            if cal is not None and cal.outcome == "answer"
            else None
        ),
        benefit_judge=(
            _judge(ben.judge, "analysis.benefit.judge")
            if ben is not None and ben.score == "answers"
            else None
        ),
    )


def value_bounds(name: str) -> tuple[float, float] | None:
    """The range of an analysis value (:func:`value_names`), None when not bounded.

    Calibration's values are shares or confidences, from 0 to 1; failure counts are
    0 or more; the benefit deltas can go either way, and only ``success_lift`` (a
    difference of two rates) is bounded, by -1 and 1. An analysis gate's threshold
    outside its value's range is refused, as a metric gate's is.
    """
    if name.startswith("calibration."):
        return (0.0, 1.0)
    if name.startswith("failures."):
        return (0.0, math.inf)
    if name == "benefit.success_lift":
        return (-1.0, 1.0)
    return None


def value_names(analyses: Analyses) -> list[str]:
    """Every headline value the configured analyses produce (what an analysis gate may read)."""
    s = analyses.settings
    names: list[str] = []
    if s.failures.enabled:
        names += ["failures.failed", *(f"failures.{c}" for c in CATEGORIES)]
    if s.calibration is not None:
        names += ["calibration.ece", "calibration.mce", "calibration.brier"]
        names += [f"calibration.answer_correctness@{t:g}" for t in s.calibration.thresholds]
        names.append("calibration.lowest_threshold")
    if s.benefit is not None:
        names += [f"benefit.{m}" for m in BENEFIT_METRICS]
    return names
