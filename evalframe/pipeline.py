"""The pipeline: load golden set -> retrieve -> score -> aggregate -> gate -> write -> report.

It wires validated plugins together and emits lifecycle hooks; it knows no
tracker, no file format and no retriever by name. Results are written to the
run directory (atomically) before ``on_run_end`` so a tracker outage never
loses them.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from evalframe import __version__
from evalframe.cache import RunCache, retriever_fingerprint
from evalframe.config import Experiment, ResolvedPlugin
from evalframe.errors import EXIT_GATE_FAILED, EXIT_OK, ConfigError, PluginError
from evalframe.gates import run_gates, verdict
from evalframe.hooks import HookRelay, RunContext, RunOutcome
from evalframe.io import atomic_write, atomic_write_json, atomic_write_jsonl, write_trec_run
from evalframe.metrics import evaluate
from evalframe.protocols import (
    CorpusLoader,
    DatasetLoader,
    PluginContext,
    Query,
    Retriever,
)
from evalframe.report import per_query_records, render_report
from evalframe.results import Evaluation, GateResult
from evalframe.types import Corpus, GoldenSet, Ranking, Run

__all__ = ["PipelineResult", "retrieve_all", "run_experiment"]


@dataclass
class PipelineResult:
    """What a finished run produced, for the CLI and for tests."""

    exit_code: int
    evaluation: Evaluation
    gates: list[GateResult]
    outputs: dict[str, Path] = field(default_factory=dict)
    report: str = ""


def _build(plugin: ResolvedPlugin, context: PluginContext, protocol: type) -> Any:
    instance = plugin.spec.obj(plugin.config, context)
    if not isinstance(instance, protocol):
        raise PluginError(
            f"{plugin.spec.kind} plugin {plugin.spec.name!r} ({plugin.spec.module}) does not "
            f"satisfy the {protocol.__name__} protocol",
            hint=f"see evalframe.protocols.{protocol.__name__} for the methods it must have",
        )
    return instance


def retrieve_all(
    retriever: Retriever,
    golden: GoldenSet,
    depth: int,
    *,
    name: str = "retriever",
    progress: bool = True,
    cache: RunCache | None = None,
) -> Run:
    """Ask the retriever for every golden query, timing each call.

    The latency recorded is wall time around ``retrieve`` unless the
    retriever reports its own ``latency_ms`` (a remote service may know better).
    A retriever returns ``None`` for a query it has no answer for (a run file
    without that query); the query is then *missing*, not empty.

    With a ``cache``, a query whose ranking is cached is not retrieved again,
    and each new ranking is stored as soon as it arrives, so an interrupted
    run resumes where it stopped.
    """
    from tqdm import tqdm

    rankings: dict[str, Ranking] = {}
    bar = tqdm(
        golden.queries,
        desc=f"retrieving ({name})",
        unit="q",
        disable=None if progress else True,  # None: only on a terminal
        file=sys.stderr,
        leave=False,
    )
    for gq in bar:
        if cache is not None:
            cached = cache.get(gq.id, gq.text, depth)
            if cached is not None:
                rankings[gq.id] = cached
                continue
        query = Query(id=gq.id, text=gq.text, metadata=gq.metadata)
        start = time.perf_counter()
        ranking = retriever.retrieve(query, depth)
        elapsed_ms = (time.perf_counter() - start) * 1000.0
        if ranking is None:
            continue  # no answer for this query: metrics.policies.missing_query decides
        if not isinstance(ranking, Ranking):
            raise PluginError(
                f"retriever {name!r} returned {type(ranking).__name__} for query {gq.id!r}, "
                "not a Ranking",
                hint="build the result with evalframe.Ranking.from_pairs(query.id, pairs)",
            )
        if ranking.query_id != gq.id:
            raise PluginError(
                f"retriever {name!r} answered query {gq.id!r} with a ranking for "
                f"{ranking.query_id!r}",
                hint="set Ranking.query_id to the id of the query passed in",
            )
        if len(ranking) > depth:
            raise PluginError(
                f"retriever {name!r} returned {len(ranking)} docs for query {gq.id!r}, "
                f"more than k={depth}",
                hint="a retriever must return at most k documents",
            )
        if ranking.latency_ms is None:
            ranking = ranking.model_copy(update={"latency_ms": elapsed_ms})
        rankings[gq.id] = ranking
        if cache is not None:
            cache.put(gq.text, depth, ranking)
    return Run(rankings=rankings, metadata={"retriever": name})


def _flat_metrics(evaluation: Evaluation, gates: list[GateResult]) -> dict[str, float | int]:
    """Flat numeric keys, so ``dvc metrics diff`` and MLflow can read them as they are."""
    flat: dict[str, float | int] = {"queries": len(evaluation.golden)}
    for m, agg in evaluation.overall.items():
        flat[str(m)] = agg.mean
        flat[f"{m}.std"] = agg.std
        flat[f"{m}.n"] = agg.n
        flat[f"{m}.ci_low"] = agg.ci_low
        flat[f"{m}.ci_high"] = agg.ci_high
    for fname, groups in evaluation.by_slice.items():
        for value, aggs in groups.items():
            for m, agg in aggs.items():
                flat[f"slice.{fname}.{value}.{m}"] = agg.mean
                flat[f"slice.{fname}.{value}.{m}.n"] = agg.n
    for stat, ms in evaluation.latency.items():
        flat[f"latency.{stat}"] = ms
    flat["gates.passed"] = sum(1 for g in gates if g.passed)
    flat["gates.failed"] = sum(1 for g in gates if not g.passed)
    return flat


def _write_outputs(
    exp: Experiment, evaluation: Evaluation, gates: list[GateResult], exit_code: int
) -> dict[str, Path]:
    from omegaconf import OmegaConf

    from evalframe.dvcinfo import DvcRecord
    from evalframe.dvcinfo import lookup as dvc_lookup

    out = exp.output_dir
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "config": atomic_write(
            out / "config.yaml", OmegaConf.to_yaml(OmegaConf.create(dict(exp.raw)))
        ),
        "run": write_trec_run(out / "run.trec", evaluation.run, tag=exp.run_tag),
        "per_query": atomic_write_jsonl(
            out / "per_query.jsonl", per_query_records(evaluation, exp.report)
        ),
        "metrics": atomic_write_json(out / "metrics.json", _flat_metrics(evaluation, gates)),
        "gates": atomic_write_json(
            out / "gates.json",
            {"passed": verdict(gates), "gates": [g.as_dict() for g in gates]},
        ),
    }
    golden = evaluation.golden
    golden_path = golden.provenance.get("path") or getattr(exp.dataset.config, "path", None)
    dvc = (dvc_lookup(golden_path) if golden_path else DvcRecord()).as_summary()
    files["summary"] = atomic_write_json(
        out / "summary.json",
        {
            "experiment": exp.name,
            "evalframe_version": __version__,
            "exit_code": exit_code,
            "golden_set": {
                "name": golden.name,
                "content_hash": golden.content_hash,
                "queries": len(golden),
                "negatives": sum(1 for q in golden if q.is_negative),
                "provenance": golden.provenance,
                **dvc,  # dvc_md5, dvc_file: the DVC-versioned identity of this golden set
            },
            "retriever": exp.retriever.spec.name,
            "depth": exp.depth,
            "metrics": [str(m) for m in evaluation.metrics],
            "policies": evaluation.policies.model_dump(),
            "counts": {
                "missing_queries": list(evaluation.scores.missing),
                "extra_queries_in_run": evaluation.scores.extra_queries,
                "skipped": {str(m): n for m, n in evaluation.scores.skipped.items()},
            },
            "overall": {str(m): a.as_dict() for m, a in evaluation.overall.items()},
            "by_slice": {
                f: {v: {str(m): a.as_dict() for m, a in aggs.items()} for v, aggs in groups.items()}
                for f, groups in evaluation.by_slice.items()
            },
            "latency": evaluation.latency,
            "retrieval_cache": evaluation.run.metadata.get("cache"),
            "gates_passed": verdict(gates),
        },
    )
    return files


def _run_cache(exp: Experiment, corpus: Corpus | None, retriever: Any) -> RunCache | None:
    """The retrieval cache for this experiment, unless disabled or pointless for the plugin."""
    spec = exp.retriever.spec
    if not exp.cache_retrieval or not getattr(spec.obj, "cacheable", True):
        return None
    identity = getattr(retriever, "cache_identity", None)
    fingerprint = retriever_fingerprint(
        spec.name,
        spec.version,
        exp.retriever.config,
        corpus.content_hash if corpus is not None else None,
        identity() if callable(identity) else None,
    )
    return RunCache(exp.cache_dir, fingerprint)


def _load_baseline(exp: Experiment, evaluation: Evaluation) -> Any:
    """The configured baseline, refused if it judged other queries or used other policies."""
    from evalframe.baseline import load_baseline

    assert exp.baseline is not None  # checked by the caller
    baseline = load_baseline(exp.baseline, exp.baselines_dir)
    if not exp.compare.allow_mismatch:
        if baseline.golden_hash != evaluation.golden.content_hash:
            raise ConfigError(
                f"baseline {baseline.name!r} was scored on another golden set "
                f"({baseline.golden_hash}, this run: {evaluation.golden.content_hash})",
                key="baseline",
                hint="promote a new baseline on this golden set, or set "
                "compare.allow_mismatch=true to compare the shared queries",
            )
        if baseline.policies != evaluation.policies.model_dump():
            raise ConfigError(
                f"baseline {baseline.name!r} used other metric policies ({baseline.policies})",
                key="baseline",
                hint="use the same metrics.policies, or set compare.allow_mismatch=true",
            )
    return baseline


def _compare_with_baseline(exp: Experiment, baseline_dir: Path, outputs: dict[str, Path]) -> str:
    """Write comparison.json/.md beside the run's outputs; return the report block."""
    from evalframe.compare import compare_runs, load_run_data, render_comparison

    comparison = compare_runs(
        load_run_data(baseline_dir, name=f"baseline {baseline_dir.name}"),
        load_run_data(exp.output_dir, name="this run"),
        correction=exp.compare.correction,
        alpha=exp.compare.alpha,
        seed=exp.stats.seed,
        resamples=max(exp.stats.bootstrap, 200),
    )
    outputs["comparison"] = atomic_write_json(
        exp.output_dir / "comparison.json", comparison.as_dict()
    )
    outputs["comparison_md"] = atomic_write(
        exp.output_dir / "comparison.md", render_comparison(comparison, markdown=True) + "\n"
    )
    return render_comparison(comparison)


def _check_views(exp: Experiment, golden: GoldenSet) -> None:
    """A metric on a view the golden set lacks fails now, not after a long retrieval."""
    for i, m in enumerate(exp.metrics):
        if m.view is not None and m.view not in golden.projections:
            raise ConfigError(
                f"metric {str(m)!r} is scored on view {m.view!r}, which golden set "
                f"{golden.name!r} does not declare",
                key=f"metrics.measures[{i}]",
                expected=f"one of: {', '.join(sorted(golden.projections)) or '(no views)'}",
            )


def load_golden(exp: Experiment) -> tuple[GoldenSet, Corpus | None]:
    """Load the corpus (if configured) and the golden set, and check metric views."""
    corpus: Corpus | None = None
    if exp.corpus is not None:
        loader = _build(
            exp.corpus, PluginContext(cache_dir=exp.cache_dir, config_key="corpus"), CorpusLoader
        )
        corpus = loader.load()
    dataset = _build(
        exp.dataset,
        PluginContext(corpus=corpus, cache_dir=exp.cache_dir, config_key="dataset"),
        DatasetLoader,
    )
    golden = dataset.load()
    _check_views(exp, golden)
    return golden, corpus


def _plugin_metadata(exp: Experiment) -> dict[str, Any]:
    """Who ran: each plugin's name, distribution and version (for trackers' tags)."""
    chosen = {"dataset": exp.dataset, "retriever": exp.retriever, "corpus": exp.corpus}
    return {
        kind: {
            "name": p.spec.name,
            "distribution": p.spec.distribution,
            "version": p.spec.version,
        }
        for kind, p in chosen.items()
        if p is not None
    }


def run_experiment(
    exp: Experiment,
    *,
    stream: TextIO | None = None,
    progress: bool = True,
    metadata: dict[str, Any] | None = None,
) -> PipelineResult:
    """Run one validated experiment end to end and print its report to ``stream``.

    ``metadata`` is handed to trackers in :class:`RunContext` (Hydra's choices,
    the sweep this job belongs to); the plugins and baseline are added here.
    """
    context = RunContext(
        experiment=exp.name,
        output_dir=exp.output_dir,
        config=dict(exp.raw),
        metadata={
            **(metadata or {}),
            "plugins": _plugin_metadata(exp),
            "baseline": exp.baseline,
        },
    )
    relay = HookRelay.build(exp.trackers)
    relay.emit("on_run_start", context)
    try:
        golden, corpus = load_golden(exp)
        retriever = _build(
            exp.retriever,
            PluginContext(corpus=corpus, cache_dir=exp.cache_dir, config_key="retriever"),
            Retriever,
        )
        cache = _run_cache(exp, corpus, retriever)
        run = retrieve_all(
            retriever,
            golden,
            exp.depth,
            name=exp.retriever.spec.name,
            progress=progress,
            cache=cache,
        )
        if cache is not None:
            stats = {"hits": cache.hits, "misses": cache.misses}
            run = run.model_copy(update={"metadata": {**run.metadata, "cache": stats}})
        relay.emit("on_retrieval_done", context, run)
        return score_and_report(exp, golden, run, relay, context, stream)
    except BaseException as exc:
        relay.emit("on_error", context, exc)
        raise


def score_and_report(
    exp: Experiment,
    golden: GoldenSet,
    run: Run,
    relay: HookRelay,
    context: RunContext,
    stream: TextIO | None = None,
) -> PipelineResult:
    """Score a run, gate it, write the outputs, print the report: everything after retrieval.

    ``rescore`` calls this directly on a stored run, so a re-scored run and a
    fresh one go through exactly the same steps.
    """
    scores = evaluate(list(exp.metrics), golden, run, exp.policies)
    evaluation = Evaluation.build(
        golden,
        run,
        scores,
        list(exp.metrics),
        exp.policies,
        list(exp.slices) if exp.slices is not None else None,
        bootstrap=exp.stats.bootstrap,
        seed=exp.stats.seed,
        confidence=exp.stats.confidence,
    )
    relay.emit("on_scored", context, evaluation)
    if exp.baseline is not None:
        evaluation.baseline = _load_baseline(exp, evaluation)

    gates = run_gates(list(exp.gates), evaluation)
    relay.emit("on_gated", context, gates)
    exit_code = EXIT_OK if verdict(gates) else EXIT_GATE_FAILED

    outputs = _write_outputs(exp, evaluation, gates, exit_code)
    report = render_report(exp, evaluation, gates, outputs)
    if evaluation.baseline is not None:
        block = _compare_with_baseline(exp, evaluation.baseline.path, outputs)
        report = report.replace("\nGates:", f"\n{block}\n\nGates:", 1)
    print(report, file=stream or sys.stdout)
    relay.emit("on_run_end", context, RunOutcome(exit_code=exit_code, outputs=outputs))
    return PipelineResult(exit_code, evaluation, gates, outputs, report)
