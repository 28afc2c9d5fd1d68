"""The sections of an experiment's config, as pydantic models: the schema's shape.

:mod:`evalframe.pipeline.config` validates a composed config against
:class:`Schema` and resolves what it names (plugins, metrics, gates); the
models here only say what each section may hold, with the error each wrong
value gets.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from evalframe.core.errors import ConfigError
from evalframe.golden.queries import QueriesConfig
from evalframe.golden.split import TuningConfig, parse_shard
from evalframe.metrics import Policies, parse_metric, parse_metrics

__all__ = [
    "DEFAULT_HEADLINE",
    "HEADLINE_MIN",
    "CacheSection",
    "CompareSection",
    "MetricsSection",
    "OutputSection",
    "ReportSection",
    "Schema",
    "StatsSection",
]


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)  # as plugins


class MetricsSection(_Section):
    """``metrics:`` the measures to compute, the headline among them, and the policies."""

    measures: list[str] = Field(min_length=1, description="canonical metric strings")
    headline: list[str] | None = Field(
        None,
        description="the metrics trackers log and `runs`/`compare` show, each with its CI; "
        "null = the gated metrics plus nDCG@10, R@10 and RR where computed",
    )
    policies: Policies = Field(default_factory=Policies)
    labels: dict[str, str] = Field(
        default_factory=dict,
        description="display names for the terminal report and summary.json, "
        "{metric: label}; gates, files and trackers keep the canonical string",
    )

    @field_validator("labels", mode="before")
    @classmethod
    def _null_is_empty(cls, value: Any) -> Any:
        return {} if value is None else value  # `metrics.labels=null` on the command line

    @field_validator("labels")
    @classmethod
    def _labels_name_measures(cls, labels: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        """Each key is a computed measure, each label is unique and names nothing else.

        A label is only a display name (ADK calls our Hit@k "Recall@k"); one
        that spelled another computed metric's canonical string, or two
        metrics shown under one label, would make the report ambiguous.
        """
        if not labels or "measures" not in info.data:
            return labels  # measures itself failed: that error is reported
        try:
            measures = [str(m) for m in parse_metrics(info.data["measures"])]
        except ConfigError:
            return labels  # reported with its own key by validate_experiment
        shown: dict[str, str] = {}  # canonical metric -> label
        for key, label in labels.items():
            try:
                metric = str(parse_metric(key))
            except ConfigError as exc:
                raise ValueError(f"label key {key!r} is not a metric ({exc.message})") from None
            if metric not in measures:
                raise ValueError(
                    f"label key {key!r} is not among metrics.measures "
                    f"({', '.join(measures)}): a label renames a metric the run computes"
                )
            if metric in shown:
                raise ValueError(f"{key!r} and another key both name {metric}")
            text = label.strip() if isinstance(label, str) else ""
            if not text or "\n" in text:
                raise ValueError(f"the label of {key!r} must be one line of text")
            if text in shown.values():
                raise ValueError(f"two metrics are labelled {text!r}: labels must be unique")
            if text in measures and text != metric:
                raise ValueError(
                    f"{key!r} is labelled {text!r}, the name of another metric this run "
                    "computes: choose another label"
                )
            shown[metric] = text
        return shown


#: The short default list the headline adds to the gated metrics (those that are computed).
DEFAULT_HEADLINE = ("nDCG@10", "R@10", "RR")
#: A default headline is filled up to this many metrics from ``metrics.measures``.
HEADLINE_MIN = 3


class ReportSection(_Section):
    """``report:`` how the reports mark and list queries, and whether the page is written."""

    criterion: str = Field("RR", description="per-query metric behind the ✓/⚠/✗ marks")
    pass_at: float = Field(1.0, description="✓ when the criterion is at least this")
    fail_below: float = Field(
        0.5,
        description="✗ (a failed query) when below this (at most pass_at)",
        validate_default=True,  # checked against pass_at when only pass_at is set
    )
    max_queries: int = Field(50, ge=0, description="per-query lines to print (0: none)")
    max_failed: int = Field(10, ge=0, description="failed queries to detail")
    show_k: int = Field(5, ge=1, description="retrieved ids to show for a failed query")
    html: bool = Field(True, description="write report.html and summary.md into the run folder")
    terminal: Literal["auto", "full", "brief"] = Field(
        "auto",
        description="the report printed: full, brief (headline, gates, verdict), "
        "auto (brief for a sweep's jobs, full otherwise)",
    )
    detail_k: int = Field(
        10, ge=1, description="retrieved documents a query's row lists in report.html"
    )

    @field_validator("fail_below")
    @classmethod
    def _below_the_pass(cls, value: float, info: ValidationInfo) -> float:
        passing = info.data.get("pass_at")
        if isinstance(passing, int | float) and value > passing:  # ✓ and ✗ at once
            raise ValueError(
                f"a query below fail_below is marked failed and one at pass_at or above "
                f"passed, so fail_below ({value:g}) must not be above pass_at ({passing:g})"
            )
        return value


#: The most bootstrap resamples a setting may ask for: each metric keeps one mean per
#: resample (8 MB a metric at this bound); 1e11 asked NumPy for terabytes.
MAX_RESAMPLES = 1_000_000


class StatsSection(_Section):
    """``stats:`` how uncertainty in the means is estimated."""

    bootstrap: int = Field(
        1000,
        ge=0,
        le=MAX_RESAMPLES,
        description="bootstrap resamples for CIs (0: none; at most 1,000,000, where an "
        "interval's digits have long stopped moving)",
    )
    confidence: float = Field(0.95, gt=0, lt=1, description="confidence level of the CIs")
    seed: int = Field(0, ge=0, description="random seed (>= 0): the same seed gives the same CIs")


class CacheSection(_Section):
    """``cache:`` what is reused between runs."""

    retrieval: bool = Field(
        True, description="reuse cached rankings (keyed by retriever, config, corpus, query, k)"
    )


class CompareSection(_Section):
    """``compare:`` how a run is compared with its baseline."""

    correction: Literal["holm", "bh"] = Field("holm", description="multiple-comparison correction")
    alpha: float = Field(0.05, gt=0, lt=1, description="significance level of the verdicts")
    allow_mismatch: bool = Field(
        False, description="compare even if the golden set or metric policies differ"
    )


class OutputSection(_Section):
    """``output:`` where results and caches go."""

    dir: str = Field(description="run directory (Hydra's run dir by default)")
    cache_dir: str = Field(description="shared cache for indexes and retrieval results")
    run_tag: str = Field(
        "evalframe", description="tag column of the written TREC run: one word (no spaces)"
    )

    @field_validator("dir", "cache_dir")
    @classmethod
    def _a_path(cls, value: str) -> str:
        if not value.strip():  # Path("") is the current folder: the run's files among yours
            raise ValueError(
                "an empty path would mean the current folder; give a folder (or leave the "
                "key out for the default)"
            )
        return value

    @field_validator("run_tag")
    @classmethod
    def _one_word(cls, value: str) -> str:
        if not value or any(ch.isspace() for ch in value):
            raise ValueError(
                "the run tag must be one word: it is the last column of run.trec, "
                "which every TREC tool splits on whitespace"
            )
        return value


class Schema(_Section):
    """The whole config: every top-level key, each section by its model."""

    experiment: str = Field(description="the experiment's name (set by +experiment=...)")
    description: str = ""
    dataset: dict[str, Any]
    queries: QueriesConfig = Field(default_factory=QueriesConfig)
    corpus: dict[str, Any] | None = None
    retriever: dict[str, Any]
    # strict: `depth=true` must not pass as 1 (bool is an int to Python, not to a user)
    depth: int = Field(100, ge=1, strict=True, description="documents retrieved per query")
    metrics: MetricsSection
    gates: dict[str, Any] = Field(default_factory=dict)
    exports: dict[str, dict[str, Any] | None] = Field(
        default_factory=dict, description="exporter name -> its settings (extra output files)"
    )
    tracking: dict[str, Any] = Field(default_factory=lambda: {"name": "none"})
    slices: list[str] | None = Field(None, description="slice fields; null = every metadata field")
    report: ReportSection = Field(default_factory=ReportSection)
    stats: StatsSection = Field(default_factory=StatsSection)
    cache: CacheSection = Field(default_factory=CacheSection)
    baseline: str | None = Field(None, description="baseline name (or run folder) to compare with")
    baselines_dir: str = Field("baselines", description="where baseline names are looked up")
    compare: CompareSection = Field(default_factory=CompareSection)
    analysis: dict[str, Any] | None = Field(
        None, description="calibration, benefit and failure categories (docs/analyses.md)"
    )
    output: OutputSection
    redact: list[str] = Field(
        default_factory=list,
        description="more key names whose values are secrets, redacted in every output",
    )
    shard: str | None = Field(
        None,
        description="i/n: retrieve only the i-th of n slices of the queries (merge them "
        "with `evalframe merge`); null: the whole evaluation",
    )
    tuning: TuningConfig = Field(default_factory=TuningConfig)

    @field_validator("baseline", "baselines_dir")
    @classmethod
    def _not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():  # "" looked up the current folder
            raise ValueError("empty; give a baseline name or a run folder, or null for none")
        return value

    @field_validator("shard", mode="before")
    @classmethod
    def _shard_form(cls, value: Any) -> Any:
        if value is not None:
            parse_shard(str(value))  # a ValueError names what was expected
        return None if value is None else str(value)
