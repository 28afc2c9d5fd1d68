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
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from evalframe.analysis.settings import (
    Analyses,
    AnalysisSettings,
    validate_analysis,
    value_names,
)
from evalframe.assess.gates import GateSpec, parse_gate_specs
from evalframe.core.errors import ConfigError, EvalframeError, PluginError
from evalframe.core.io import in_workspace
from evalframe.core.messages import kept, warn
from evalframe.golden.queries import QueriesConfig
from evalframe.golden.split import Shard, TuningConfig, parse_shard
from evalframe.metrics import Metric, Policies, parse_metric, parse_metrics, refuse_label
from evalframe.pipeline.sections import (
    DEFAULT_HEADLINE,
    HEADLINE_MIN,
    CompareSection,
    MetricsSection,
    OutputSection,
    ReportSection,
    Schema,
    StatsSection,
)
from evalframe.plugin.blame import build
from evalframe.plugin.protocols import PluginContext
from evalframe.plugin.registry import (
    CORPORA,
    DATASETS,
    EXPORTERS,
    GATES,
    RETRIEVERS,
    TRACKERS,
    SelectedPlugin,
    configure,
    select_plugin,
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


#: A plugin chosen by name, with its validated config and the key it came from.
ResolvedPlugin = SelectedPlugin


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
    headline: tuple[Metric, ...]
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
    #: the resolved config, secrets and all: written and shown only as public_config
    raw: Mapping[str, Any] = field(repr=False)
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
    #: this run retrieves one slice of the queries and writes a shard (``shard=i/n``)
    shard: Shard | None = None
    #: the tuning objective and the split of the queries this run evaluates (``tuning:``)
    tuning: TuningConfig = field(default_factory=TuningConfig)
    #: what validating the config warned about (``R@10`` past ``depth: 5``): the run
    #: folder's ``summary.json`` and page say it, however the experiment was run
    warnings: tuple[str, ...] = ()


_resolve = select_plugin


def resolve_trackers(tracking: Mapping[str, Any]) -> tuple[ResolvedPlugin, ...]:
    """The ``tracking`` section as trackers to build: none for ``name: none``."""
    if tracking.get("name") in (None, "none"):
        return ()
    return (_resolve(TRACKERS, tracking, "tracking"),)


def validate_experiment(raw: Mapping[str, Any], *, retrieving: bool = True) -> Experiment:
    """Validate a composed config (a plain, resolved mapping) into an :class:`Experiment`.

    ``retrieving=False``: the config re-scores stored rankings (``evalframe
    rescore``), so advice that only a retrieval can follow is worded for it."""
    with kept() as said:
        start = len(said)
        exp = _validated(raw, retrieving)
    return replace(exp, warnings=tuple(said[start:])) if len(said) > start else exp


def _validated(raw: Mapping[str, Any], retrieving: bool = True) -> Experiment:
    try:
        schema = Schema.model_validate(dict(raw))
    except ValidationError as exc:
        problems = [
            (where.lstrip("."), what) for where, what in validation_problems(exc, "", Schema)
        ]
        hint = (
            "fix the key in your experiment YAML or on the command line; "
            "`python -m evalframe +experiment=NAME --cfg job` prints the composed config"
        )
        if len(problems) == 1:  # the error's key is the one setting at fault
            raise ConfigError(problems[0][1], key=problems[0][0], hint=hint) from None
        raise ConfigError(
            "invalid configuration: " + "; ".join(f"{w}: {m}" for w, m in problems), hint=hint
        ) from None
    if schema.redact:
        # the values under the names a user lists under `redact:` are secrets too: redacted
        # wherever a plugin or a message quotes them, as the built-in names' are
        from evalframe.core.secrets import remember_secrets

        remember_secrets(dict(raw), schema.redact)
    metrics = parse_metrics(schema.metrics.measures, key="metrics.measures")
    _warn_past_depth(metrics, schema.depth, retrieving)
    trackers = resolve_trackers(schema.tracking)
    corpus = None
    if schema.corpus is not None and schema.corpus.get("name") not in (None, "none"):
        corpus = _resolve(CORPORA, schema.corpus, "corpus")
    gates = tuple(parse_gate_specs(schema.gates))
    refuse_label(
        schema.report.criterion,
        schema.metrics.labels,
        key="report.criterion",
        who="report.criterion",
    )
    criterion = parse_metrics([schema.report.criterion], key="report.criterion")[0]
    if criterion not in metrics:
        # what the gates miss too, said in the same error: a rescore with other
        # measures otherwise met them one attempt at a time
        also = _missing_for_gates(gates, metrics)
        more = "".join(
            f"; gate {g!r} needs {', '.join(map(repr, m))}, not computed either"
            for g, m in also.items()
        )
        missing = [str(criterion), *(x for m in also.values() for x in m)]
        raise ConfigError(
            f"the report criterion {str(criterion)!r} is not among the computed metrics{more}",
            key="report.criterion",
            expected=f"one of: {', '.join(str(m) for m in metrics)}",
            hint="add "
            + ("them" if len(set(missing)) > 1 else "it")
            + " to metrics.measures ('metrics.measures=["
            + ", ".join(dict.fromkeys([*(str(m) for m in metrics), *missing]))
            + "]'), or pick another criterion"
            + (" and gates" if also else ""),
        )
    analysis = validate_analysis(schema.analysis, depth=schema.depth)
    if schema.tuning.metric is not None:
        objective = parse_metrics([schema.tuning.metric], key="tuning.metric")[0]
        _require_metrics([str(objective)], metrics, "tuning.metric", "the tuning objective")
        schema = schema.model_copy(
            update={"tuning": schema.tuning.model_copy(update={"metric": str(objective)})}
        )
    gated = _check_gates(gates, metrics, schema.metrics.labels, value_names(analysis))
    headline = _headline(schema.metrics.headline, metrics, gated)
    exports = _resolve_exports(schema.exports, metrics)
    _check_output_dir(Path(schema.output.dir))
    # relative in a queued DVC experiment's temporary copy: the workspace's cache folder
    cache_dir = in_workspace(Path(schema.output.cache_dir).expanduser())
    _check_cache_dir(cache_dir)
    return Experiment(
        name=schema.experiment,
        description=schema.description,
        dataset=_resolve(DATASETS, schema.dataset, "dataset"),
        corpus=corpus,
        retriever=_resolve(RETRIEVERS, schema.retriever, "retriever"),
        trackers=trackers,
        depth=schema.depth,
        metrics=tuple(metrics),
        headline=headline,
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
        cache_dir=cache_dir,
        run_tag=schema.output.run_tag,
        raw=dict(raw),
        queries=schema.queries,
        redact=tuple(schema.redact),
        analysis=analysis,
        shard=parse_shard(schema.shard) if schema.shard is not None else None,
        tuning=schema.tuning,
    )


def _check_cache_dir(path: Path) -> None:
    """A cache folder that holds other things than evalframe's cache (``~/.cache`` for
    ``~/.cache/evalframe``) is refused now, before anything slow, not at its first write
    (:func:`evalframe.core.store.foreign_cache_folder`)."""
    from evalframe.core.store import foreign_cache_folder

    problem = foreign_cache_folder(path)
    if problem is not None:
        problem.key = "output.cache_dir"
        raise problem


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
            instance = build(spec, plugin.config, PluginContext(config_key=key))
            names = plugin_list(instance, "required_metrics", spec, key)
            _require_metrics(names, metrics, key, f"export {name!r}")
        resolved.append(plugin)
    return tuple(resolved)


def _warn_past_depth(metrics: list[Metric], depth: int, retrieving: bool = True) -> None:
    """Say when a metric's cutoff is deeper than the rankings: ``R@10`` of a run that
    retrieves 5 documents a query is scored on those 5, so it equals ``R@5`` under a
    name that promises 10 (trec_eval scores a run file the same way; here the run's
    depth is the config's own choice, so it is said)."""
    deep = [m for m in metrics if isinstance(m.k, int) and m.k > depth and _ranked(m)]
    if not deep:
        return
    names = ", ".join(str(m) for m in deep)
    widest = max(int(m.k) for m in deep if m.k is not None)
    one = len(deep) == 1
    fix = (
        f"set depth={widest}"
        if retrieving  # a rescore scores the rankings it has: only a new run ranks deeper
        else f"run the retriever again with depth={widest} (a rescore cannot rank deeper)"
    )
    warn(
        f"{names} look{'s' if one else ''} past depth {depth}: each query retrieves "
        f"{depth} documents, so {'it is' if one else 'they are'} scored on those {depth} "
        f"as if nothing relevant came after them; {fix} to score {'it' if one else 'them'} "
        "as named"
    )


def _ranked(metric: Metric) -> bool:
    """Whether ``@k`` is a rank cutoff (``P@5``), not a recall level (``IPrec@0.5``)."""
    try:
        return metric.definition.cutoff == "rank"
    except Exception:  # noqa: BLE001  # an unregistered name was refused earlier
        return False


def _require_metrics(names: list[str], metrics: list[Metric], key: str, who: str) -> None:
    """Every metric ``who`` reads must be among the computed ones (said before retrieval),
    all the missing ones at once: fixing them one error at a time took Galaxy's export
    ten rounds."""
    wanted = [parse_metrics([name], key=key)[0] for name in names]
    missing = [str(m) for m in dict.fromkeys(wanted) if m not in metrics]
    if missing:
        listed = ", ".join(map(repr, missing))
        raise ConfigError(
            f"{who} needs metric{'s' if len(missing) > 1 else ''} {listed}, "
            f"which {'are' if len(missing) > 1 else 'is'} not computed",
            key=key,
            expected=f"one of: {', '.join(str(x) for x in metrics)}",
            hint=f"add {'them' if len(missing) > 1 else 'it'} to metrics.measures, e.g. "
            f"'metrics.measures=[{', '.join([*(str(x) for x in metrics), *missing])}]'",
        )


#: What each optional method that returns a list returns (:func:`plugin_list`).
LISTED = {
    "required_metrics": "metric strings",
    "required_analyses": "analysis value names",
    "notes": "sentences",
}


def plugin_list(plugin: Any, method: str, spec: Any, key: str | None = None) -> list[Any]:
    """``plugin.method()`` as a list (``[]`` when the plugin has no such method): a list or
    a tuple, else a PluginError naming the plugin, since a str, iterated, became one item
    per character (a gate's ``"nDCG@10"`` was metric 'n'; a note, one warning a letter)."""
    call = getattr(plugin, method, None)
    if not callable(call):
        return []
    value = call()
    if isinstance(value, list | tuple):
        return list(value)
    got = f"the str {value!r}" if isinstance(value, str) else f"{type(value).__name__} {value!r}"
    got = got if len(got) <= 80 else got[:77] + "..."
    example = f", e.g. [{value!r}]" if isinstance(value, str) else ""
    raise PluginError(
        f"{spec.kind} plugin {spec.name!r} ({spec.module}): {method}() returned {got}; "
        f"it must return a list of {LISTED[method]}{example}",
        key=key,
        hint=f"fix {method}() in {spec.module}",
    )


def _missing_for_gates(gates: tuple[GateSpec, ...], metrics: list[Metric]) -> dict[str, list[str]]:
    """Gate name -> the metrics it needs that are not computed; a gate whose settings do
    not validate is left to :func:`_check_gates` to report."""
    out: dict[str, list[str]] = {}
    for g in gates:
        key = f"gates.{g.name}"
        try:
            spec = GATES.get(g.type, key=f"{key}.type")
            gate = build(spec, configure(spec, g.params, key), PluginContext(config_key=key))
            names = plugin_list(gate, "required_metrics", spec, key)
            wanted = [parse_metrics([n], key=key)[0] for n in names]
        except EvalframeError:
            continue
        missing = [str(m) for m in dict.fromkeys(wanted) if m not in metrics]
        if missing:
            out[g.name] = missing
    return out


def _check_gates(
    gates: tuple[GateSpec, ...],
    metrics: list[Metric],
    labels: Mapping[str, str],
    analysis_values: list[str],
) -> list[Metric]:
    """Validate every gate's settings, metrics and analysis values now, not after retrieval.

    Returns the metrics the gates judge, in gate order: those a gate declares
    through ``required_metrics()``, else its ``metric:`` setting when it names
    a computed metric (a gate without the method may still read one).
    """
    gated: list[Metric] = []
    for g in gates:
        key = f"gates.{g.name}"
        spec = GATES.get(g.type, key=f"{key}.type")
        gate = build(spec, configure(spec, g.params, key), PluginContext(config_key=key))
        names = plugin_list(gate, "required_metrics", spec, key)
        for i, name in enumerate(names):
            # the first metric is the gate's own `metric:` setting; others are named by the gate
            where = f"{key}.metric" if i == 0 else key
            # a label is a display name, never an identity (the rule report.criterion
            # and --metrics follow too)
            refuse_label(name, labels, key=where, who=f"gate {g.name!r}")
            _require_metrics([name], metrics, where, f"gate {g.name!r}")
        for name in plugin_list(gate, "required_analyses", spec, key):
            if name not in analysis_values:
                raise ConfigError(
                    f"gate {g.name!r} reads analysis value {name!r}, which no configured "
                    "analysis produces",
                    key=f"{key}.analysis",
                    expected=f"one of: {', '.join(analysis_values) or '(no analysis configured)'}",
                    hint="configure the analysis (e.g. analysis=calibration, with the threshold "
                    "in analysis.calibration.thresholds); see docs/analyses.md",
                )
        if not names and isinstance(g.params.get("metric"), str):
            names = [g.params["metric"]]
        for name in names:
            try:
                m = parse_metric(name, key=f"{key}.metric")
            except ConfigError:
                continue  # the gate reports its own setting when it runs
            if m in metrics and m not in gated:
                gated.append(m)
    return gated


def _headline(
    configured: list[str] | None, metrics: list[Metric], gated: list[Metric]
) -> tuple[Metric, ...]:
    """``metrics.headline``, checked against the computed metrics, or the default set.

    The default: the gated metrics plus those of :data:`DEFAULT_HEADLINE` that
    are computed, filled up to :data:`HEADLINE_MIN` from ``metrics.measures``;
    listed in the order of ``metrics.measures``, as the report lists them.
    """
    if configured is not None:
        chosen: list[Metric] = []
        for i, name in enumerate(configured):
            key = f"metrics.headline[{i}]"
            m = parse_metric(name, key=key)
            if m not in metrics:
                raise ConfigError(
                    f"the headline metric {str(m)!r} is not computed",
                    key=key,
                    expected=f"one of: {', '.join(str(x) for x in metrics)}",
                    hint="add it to metrics.measures, or set metrics.headline=null for the "
                    "default (the gated metrics plus nDCG@10, R@10 and RR where computed)",
                )
            if m not in chosen:
                chosen.append(m)
        return tuple(chosen)
    picked = set(gated)
    picked.update(m for m in map(parse_metric, DEFAULT_HEADLINE) if m in metrics)
    for m in metrics:
        if len(picked) >= HEADLINE_MIN:
            break
        picked.add(m)
    return tuple(m for m in metrics if m in picked)
