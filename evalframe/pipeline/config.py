"""The experiment config schema, validated once at the boundary.

Hydra composes YAML into a plain mapping; :func:`validate_experiment` turns it
into a frozen :class:`Experiment` in one go: the top-level shape, every metric
string, and every plugin's own settings (against its pydantic model). All of
that happens before anything slow runs, and every error names its config key.

Plugins are selected by registry name (``retriever: {name: bm25, k1: 1.2}``),
never by ``_target_`` import paths: a name survives refactors and can be
listed, suggested and documented.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from evalframe.analysis.settings import (
    Analyses,
    AnalysisSettings,
    validate_analysis,
    value_names,
)
from evalframe.assess.gates import GateSpec, parse_gate_specs
from evalframe.core.errors import ConfigError
from evalframe.golden.queries import QueriesConfig
from evalframe.metrics import Metric, Policies, parse_metric, parse_metrics
from evalframe.plugin.protocols import PluginContext
from evalframe.plugin.registry import (
    CORPORA,
    DATASETS,
    EXPORTERS,
    GATES,
    RETRIEVERS,
    TRACKERS,
    PluginSpec,
    Registry,
    configure,
    validation_problems,
)

__all__ = [
    "Experiment",
    "MetricsSection",
    "OutputSection",
    "ReportSection",
    "ResolvedPlugin",
    "resolve_trackers",
    "validate_experiment",
]


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class MetricsSection(_Section):
    """``metrics:`` the measures to compute and the policies that shape them."""

    measures: list[str] = Field(min_length=1, description="canonical metric strings")
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


class ReportSection(_Section):
    """``report:`` how the reports mark and list queries, and whether the page is written."""

    criterion: str = Field("RR", description="per-query metric behind the ✓/⚠/✗ marks")
    pass_at: float = Field(1.0, description="✓ when the criterion is at least this")
    fail_below: float = Field(0.5, description="✗ (a failed query) when below this")
    max_queries: int = Field(50, ge=0, description="per-query lines to print (0: none)")
    max_failed: int = Field(10, ge=0, description="failed queries to detail")
    show_k: int = Field(5, ge=1, description="retrieved ids to show for a failed query")
    html: bool = Field(True, description="write report.html and summary.md into the run folder")
    detail_k: int = Field(
        10, ge=1, description="retrieved documents a query's row lists in report.html"
    )


class StatsSection(_Section):
    """``stats:`` how uncertainty in the means is estimated."""

    bootstrap: int = Field(1000, ge=0, description="bootstrap resamples for CIs (0: none)")
    confidence: float = Field(0.95, gt=0, lt=1, description="confidence level of the CIs")
    seed: int = Field(0, description="random seed: the same seed gives the same CIs")


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

    @field_validator("run_tag")
    @classmethod
    def _one_word(cls, value: str) -> str:
        if not value or any(ch.isspace() for ch in value):
            raise ValueError(
                "the run tag must be one word: it is the last column of run.trec, "
                "which every TREC tool splits on whitespace"
            )
        return value


class _Schema(_Section):
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


@dataclass(frozen=True)
class ResolvedPlugin:
    """A plugin chosen by name, with its validated config and the key it came from."""

    spec: PluginSpec
    config: BaseModel | None
    key: str


@dataclass(frozen=True)
class Experiment:
    """A fully validated experiment: what the pipeline runs."""

    name: str
    description: str
    dataset: ResolvedPlugin
    corpus: ResolvedPlugin | None
    retriever: ResolvedPlugin
    trackers: tuple[ResolvedPlugin, ...]
    depth: int
    metrics: tuple[Metric, ...]
    policies: Policies
    #: display names, {canonical metric string: label} (``metrics.labels``)
    labels: Mapping[str, str]
    gates: tuple[GateSpec, ...]
    exports: tuple[ResolvedPlugin, ...]
    slices: tuple[str, ...] | None
    report: ReportSection
    stats: StatsSection
    cache_retrieval: bool
    baseline: str | None
    baselines_dir: Path
    compare: CompareSection
    output_dir: Path
    cache_dir: Path
    run_tag: str
    raw: Mapping[str, Any]
    #: a separate queries file joined to the golden set by id (``queries.path``)
    queries: QueriesConfig = field(default_factory=QueriesConfig)
    #: names whose values are redacted in everything written (besides the built-in rule)
    redact: tuple[str, ...] = ()

    @property
    def public_config(self) -> dict[str, Any]:
        """The resolved config as it may be written or shown: credentials redacted."""
        from evalframe.core.secrets import redact

        return dict(redact(dict(self.raw), self.redact))

    #: the validated ``analysis:`` section and its judges (docs/analyses.md)
    analysis: Analyses = field(default_factory=lambda: Analyses(settings=AnalysisSettings()))


def _resolve(registry: Registry[Any], node: Mapping[str, Any], key: str) -> ResolvedPlugin:
    params = dict(node)
    name = params.pop("name", None)
    if not isinstance(name, str) or not name:
        raise ConfigError(
            f"no {registry.kind} selected",
            key=f"{key}.name",
            expected=f"one of: {', '.join(registry.names())}",
            got=repr(name),
            hint=f"pick one with {key}=<name> on the command line or `name:` in YAML",
        )
    spec = registry.get(name, key=f"{key}.name")
    return ResolvedPlugin(spec=spec, config=configure(spec, params, key), key=key)


def resolve_trackers(tracking: Mapping[str, Any]) -> tuple[ResolvedPlugin, ...]:
    """The ``tracking`` section as trackers to build: none for ``name: none``."""
    if tracking.get("name") in (None, "none"):
        return ()
    return (_resolve(TRACKERS, tracking, "tracking"),)


def validate_experiment(raw: Mapping[str, Any]) -> Experiment:
    """Validate a composed config (a plain, resolved mapping) into an :class:`Experiment`."""
    try:
        schema = _Schema.model_validate(dict(raw))
    except ValidationError as exc:
        problems = [(where.lstrip("."), what) for where, what in validation_problems(exc, "")]
        hint = (
            "fix the key in your experiment YAML or on the command line; "
            "`python -m evalframe +experiment=NAME --cfg job` prints the composed config"
        )
        if len(problems) == 1:  # the error's key is the one setting at fault
            raise ConfigError(problems[0][1], key=problems[0][0], hint=hint) from None
        raise ConfigError(
            "invalid configuration: " + "; ".join(f"{w}: {m}" for w, m in problems), hint=hint
        ) from None
    metrics = parse_metrics(schema.metrics.measures, key="metrics.measures")
    trackers = resolve_trackers(schema.tracking)
    corpus = None
    if schema.corpus is not None and schema.corpus.get("name") not in (None, "none"):
        corpus = _resolve(CORPORA, schema.corpus, "corpus")
    gates = tuple(parse_gate_specs(schema.gates))
    criterion = parse_metrics([schema.report.criterion], key="report.criterion")[0]
    if criterion not in metrics:
        raise ConfigError(
            f"the report criterion {str(criterion)!r} is not among the computed metrics",
            key="report.criterion",
            expected=f"one of: {', '.join(str(m) for m in metrics)}",
            hint="add it to metrics.measures or pick another criterion",
        )
    analysis = validate_analysis(schema.analysis, depth=schema.depth)
    _check_gates(gates, metrics, schema.metrics.labels, value_names(analysis))
    exports = _resolve_exports(schema.exports, metrics)
    _check_output_dir(Path(schema.output.dir))
    return Experiment(
        name=schema.experiment,
        description=schema.description,
        dataset=_resolve(DATASETS, schema.dataset, "dataset"),
        corpus=corpus,
        retriever=_resolve(RETRIEVERS, schema.retriever, "retriever"),
        trackers=trackers,
        depth=schema.depth,
        metrics=tuple(metrics),
        policies=schema.metrics.policies,
        labels=dict(schema.metrics.labels),
        gates=gates,
        exports=exports,
        slices=tuple(schema.slices) if schema.slices is not None else None,
        report=schema.report.model_copy(update={"criterion": str(criterion)}),
        stats=schema.stats,
        cache_retrieval=schema.cache.retrieval,
        baseline=schema.baseline,
        baselines_dir=Path(schema.baselines_dir),
        compare=schema.compare,
        output_dir=Path(schema.output.dir),
        cache_dir=Path(schema.output.cache_dir).expanduser(),
        run_tag=schema.output.run_tag,
        raw=dict(raw),
        queries=schema.queries,
        redact=tuple(schema.redact),
        analysis=analysis,
    )


def _check_output_dir(path: Path) -> None:
    """The run folder must be a folder, or creatable as one: said now, not after retrieval."""
    for parent in (path, *path.parents):
        if parent.exists():
            if not parent.is_dir():
                raise ConfigError(
                    f"the run folder {path} cannot be created: {parent} is a file",
                    key="output.dir",
                    expected="a folder (existing or new)",
                    got=f"{parent} (a file)",
                    hint="point output.dir at a folder, or move the file away",
                )
            if not os.access(parent, os.W_OK | os.X_OK):
                raise ConfigError(
                    f"the run folder {path} cannot be written: {parent} is not writable",
                    key="output.dir",
                    hint="point output.dir at a folder you can write to",
                )
            return


def _resolve_exports(
    exports: Mapping[str, Mapping[str, Any] | None], metrics: list[Metric]
) -> tuple[ResolvedPlugin, ...]:
    """``exports: {galaxy: {...}}`` as exporters to run, their metrics checked now."""
    resolved = []
    for name, params in exports.items():
        key = f"exports.{name}"
        spec = EXPORTERS.get(name, key=key)
        plugin = ResolvedPlugin(spec=spec, config=configure(spec, params or {}, key), key=key)
        needed = getattr(spec.obj, "required_metrics", None)
        if callable(needed):
            instance = spec.obj(plugin.config, PluginContext(config_key=key))
            _require_metrics(instance.required_metrics(), metrics, key, f"export {name!r}")
        resolved.append(plugin)
    return tuple(resolved)


def _require_metrics(names: list[str], metrics: list[Metric], key: str, who: str) -> None:
    """Every metric ``who`` reads must be among the computed ones (said before retrieval)."""
    for name in names:
        m = parse_metrics([name], key=key)[0]
        if m not in metrics:
            raise ConfigError(
                f"{who} needs metric {str(m)!r}, which is not computed",
                key=key,
                expected=f"one of: {', '.join(str(x) for x in metrics)}",
                hint=f"add {str(m)!r} to metrics.measures, e.g. "
                f"'metrics.measures=[{', '.join([*(str(x) for x in metrics), str(m)])}]'",
            )


def _check_gates(
    gates: tuple[GateSpec, ...],
    metrics: list[Metric],
    labels: Mapping[str, str],
    analysis_values: list[str],
) -> None:
    """Validate every gate's settings, metrics and analysis values now, not after retrieval."""
    by_label = {label: metric for metric, label in labels.items()}
    for g in gates:
        key = f"gates.{g.name}"
        spec = GATES.get(g.type, key=f"{key}.type")
        gate = spec.obj(configure(spec, g.params, key), PluginContext(config_key=key))
        needed = getattr(gate, "required_metrics", None)
        for i, name in enumerate(needed() if callable(needed) else []):
            # the first metric is the gate's own `metric:` setting; others are named by the gate
            where = f"{key}.metric" if i == 0 else key
            if name in by_label:  # a label is a display name, never an identity
                raise ConfigError(
                    f"gate {g.name!r} names {name!r}, which is the report label of "
                    f"{by_label[name]} (metrics.labels)",
                    key=where,
                    hint=f"gates name metrics by their canonical string: metric: {by_label[name]}",
                )
            _require_metrics([name], metrics, where, f"gate {g.name!r}")
        wanted = getattr(gate, "required_analyses", None)
        for name in wanted() if callable(wanted) else []:
            if name not in analysis_values:
                raise ConfigError(
                    f"gate {g.name!r} reads analysis value {name!r}, which no configured "
                    "analysis produces",
                    key=f"{key}.analysis",
                    expected=f"one of: {', '.join(analysis_values) or '(no analysis configured)'}",
                    hint="configure the analysis (e.g. analysis=calibration, with the threshold "
                    "in analysis.calibration.thresholds); see docs/analyses.md",
                )
