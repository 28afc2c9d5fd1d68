"""The pipeline: load golden set -> retrieve -> score -> aggregate -> gate -> write -> report.

It wires validated plugins together and emits lifecycle hooks; it knows no
tracker, no file format and no retriever by name. Results are written to the
run directory (atomically) before ``on_run_end`` so a tracker outage never
loses them. It is one module because a run's steps read best in their order,
in one place; what each step calls lives elsewhere (``assess``, ``retrieval``,
``analysis``, ``pipeline/provenance.py``).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from evalframe import __version__
from evalframe.analysis import AnalysisOutput, BootstrapSettings, run_analyses
from evalframe.analysis.failures import DocFrequency
from evalframe.assess.gates import run_gates, verdict, verdict_state, verdict_warnings
from evalframe.assess.results import Evaluation, GateResult
from evalframe.assess.runfolder import (
    LAYOUT,
    FileStamp,
    RunData,
    RunFolder,
    is_export_name,
    per_query_records,
    run_file_facts,
)
from evalframe.core.errors import EXIT_GATE_FAILED, EXIT_OK, ConfigError, DataError, PluginError
from evalframe.core.gcpause import long_lived, settle
from evalframe.core.messages import kept, kept_so_far, shown, warn
from evalframe.core.progress import quiet, step
from evalframe.core.records import warn_if_nothing_matches, warn_query_id_lookalikes
from evalframe.core.store import open_store
from evalframe.core.types import Corpus, GoldenSet, Run
from evalframe.golden.queries import join_queries
from evalframe.golden.split import apply_split
from evalframe.metrics import evaluate
from evalframe.pipeline.config import Experiment, ResolvedPlugin, plugin_list
from evalframe.pipeline.files import flat_metrics, headline_metrics, timings
from evalframe.pipeline.provenance import created, git_state
from evalframe.plugin.blame import blamed, build
from evalframe.plugin.hooks import HookRelay, RunContext, RunOutcome
from evalframe.plugin.loaded import check_loaded
from evalframe.plugin.protocols import (
    CorpusLoader,
    DatasetLoader,
    Exporter,
    ExportInput,
    PluginContext,
    Retriever,
)
from evalframe.retrieval.corpora import checked_load, checked_texts, with_manifest
from evalframe.retrieval.normalise import normalise_run
from evalframe.retrieval.retrieve import answers_in_batches, retrieve_all, run_cache

if TYPE_CHECKING:
    from evalframe.assess.compare import Comparison

__all__ = [
    "Inputs",
    "PipelineResult",
    "Reporter",
    "load_golden",
    "load_inputs",
    "retrieve_run",
    "run_experiment",
    "score_and_report",
    "stored_corpus",
]


@dataclass
class PipelineResult:
    """What a finished run produced, for reporters, the CLI and tests.

    ``report`` is the text a terminal reporter rendered (empty when none ran);
    ``comparison`` is the paired comparison with the baseline, when one was given;
    ``corpus`` the corpus the run searched, when one was loaded (a page shows its text),
    under the ids the run was judged by (:meth:`Corpus.judged_as`).
    A reporter that writes a file adds it to ``outputs``, so trackers upload it.
    """

    exit_code: int
    evaluation: Evaluation
    gates: list[GateResult]
    outputs: dict[str, Path] = field(default_factory=dict)
    report: str = ""
    experiment: Experiment | None = None
    comparison: Comparison | None = None
    records: list[dict[str, Any]] = field(default_factory=list)  # as in per_query.jsonl
    corpus: Corpus | None = None
    #: calibration, benefit and failure categories (plain data; docs/analyses.md)
    analysis: AnalysisOutput = field(default_factory=AnalysisOutput)


class Reporter(Protocol):
    """Turns a finished run into something people read (the terminal report, a page).

    The pipeline calls each reporter after the run's files are written and
    before ``on_run_end``, so a tracker sees whatever a reporter wrote. Reports
    live in a layer above the pipeline; the caller (the command line, the
    Python API) chooses them.
    """

    def __call__(self, result: PipelineResult) -> None: ...


def _build(plugin: ResolvedPlugin, context: PluginContext, protocol: type) -> Any:
    """``Plugin(config, context)``, checked: a constructor that cannot take those two is
    the plugin's mistake, said before the call (not a TypeError blamed on evalframe);
    what the constructor raises is the plugin's (:mod:`evalframe.plugin.blame`)."""
    spec = plugin.spec
    instance = build(spec, plugin.config, context)
    if not isinstance(instance, protocol):
        raise PluginError(
            f"{plugin.spec.kind} plugin {plugin.spec.name!r} ({plugin.spec.module}) does not "
            f"satisfy the {protocol.__name__} protocol",
            hint=f"see evalframe.plugin.protocols.{protocol.__name__} for the methods it must have",
        )
    return instance


def _write_outputs(
    exp: Experiment,
    evaluation: Evaluation,
    gates: list[GateResult],
    exit_code: int,
    records: list[dict[str, Any]],
    analysis: AnalysisOutput,
    corpus: Corpus | None = None,
    stored_run: Path | None = None,
    stored_manifest: Path | None = None,
    exports: Mapping[str, str | bytes] | None = None,
    earlier: Mapping[str, FileStamp] | None = None,
) -> tuple[dict[str, Path], dict[str, Any]]:
    """Write the run's files into its folder, ``summary.json`` last: it is what marks the
    folder a finished run (:meth:`RunFolder.is_run`), so a run stopped before it leaves a
    folder said to be incomplete, not one read as a run. ``exports`` (checked by
    :func:`_exports`) go in before it, and it records them (``exports``), so that the next
    run written into this folder can remove them (:meth:`RunFolder.remove_stale`).

    ``earlier``: what a previous run left in a re-used folder
    (:meth:`RunFolder.run_files_state`). Its files this run does not write here (its
    ``report.html``, ``comparison.json``) are removed just before ``summary.json`` is
    written, not after the page is drawn: a run stopped while drawing its page (Ctrl-C,
    kill -9) leaves this run's summary without a page, never beside the earlier run's."""
    from omegaconf import OmegaConf

    from evalframe.golden.dvcinfo import DvcRecord
    from evalframe.golden.dvcinfo import lookup as dvc_lookup

    folder = RunFolder(exp.output_dir)
    folder.prepare()  # checked before retrieval too (run_experiment); a rescore's first check
    folder.mark_unfinished()
    # Without `tracking`: where a run is reported is the environment's choice
    # (EVALFRAME_TRACKING, a CI's server) and changes no number; kept, it would make
    # the same run's config.yaml differ between machines. `rescore` tracks as a run would.
    stored = {k: v for k, v in exp.public_config.items() if k != "tracking"}
    files = {
        "config": folder.write_text(folder.CONFIG, OmegaConf.to_yaml(OmegaConf.create(stored))),
        "run": folder.write_run(evaluation.run, tag=exp.run_tag, stored=stored_run),
        "per_query": folder.write_jsonl(folder.PER_QUERY, records),
        "metrics": folder.write_json(folder.METRICS, flat_metrics(evaluation, gates)),
        "headline": folder.write_json(folder.HEADLINE, headline_metrics(exp, evaluation, gates)),
        # when and from which commit: like latency, they differ on every run of the same
        # inputs, so they go with it, not into summary.json (DVC tracks that)
        "timings": folder.write_json(
            folder.TIMINGS,
            {
                "created": created(),
                "git": git_state(),
                # a rescore: when and from which commit its rankings were retrieved
                **{k: v for k, v in evaluation.run.metadata.items() if k == "retrieved"},
                **timings(evaluation),
            },
        ),
        "gates": folder.write_json(
            folder.GATES,
            {
                "passed": verdict(gates),
                "warnings": verdict_warnings(evaluation.golden, gates),
                "gates": [g.as_dict() for g in gates],
            },
        ),
    }
    if corpus is not None:
        files["corpus_manifest"] = folder.write_corpus_manifest(corpus, stored=stored_manifest)
    exported, export_record = folder.write_exports(exports or {})
    files.update({f"export/{name}": path for name, path in exported.items()})
    golden = evaluation.golden
    golden_path = golden.provenance.get("path") or getattr(exp.dataset.config, "path", None)
    dvc = (dvc_lookup(golden_path) if golden_path else DvcRecord()).as_summary()
    retrieval_said = [str(w) for w in evaluation.run.metadata.get("retrieval_warnings") or ()]
    summary = {
        "layout": LAYOUT,
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
        "corpus": None
        if corpus is None
        else {
            "name": corpus.name,
            "content_hash": corpus.content_hash,
            "documents": len(corpus),
            "manifest": RunFolder.CORPUS_MANIFEST,
        },
        "baseline": None
        if evaluation.baseline is None
        else {"name": str(evaluation.baseline.name), "path": str(evaluation.baseline.path)},
        "retriever": exp.retriever.spec.name,
        "depth": exp.depth,
        "metrics": [str(m) for m in evaluation.metrics],
        "headline": [str(m) for m in exp.headline],
        # display names (metrics.labels); every other key of this file is canonical
        "labels": {str(m): exp.labels[str(m)] for m in evaluation.metrics if str(m) in exp.labels},
        "policies": evaluation.policies.model_dump(),
        "counts": {
            "missing_queries": list(evaluation.scores.missing),
            "extra_queries_in_run": len(evaluation.extra_queries),
            # their ids: the page names them, and a rescore (whose run.trec holds only
            # the golden queries' rankings) keeps them
            "extra_queries": list(evaluation.extra_queries),
            "skipped": {str(m): n for m, n in evaluation.scores.skipped.items()},
        },
        "ties": evaluation.scores.ties.as_dict() if evaluation.scores.ties else None,
        "overall": {str(m): a.as_dict() for m, a in evaluation.overall.items()},
        "slices": {"fields": evaluation.slice_fields, "skipped": evaluation.skipped_slices},
        "by_slice": {
            f: {v: {str(m): a.as_dict() for m, a in aggs.items()} for v, aggs in groups.items()}
            for f, groups in evaluation.by_slice.items()
        },
        "gates_passed": verdict(gates),
        "verdict": verdict_state(gates),  # passed, failed, or unchecked: no required gate
        "verdict_warnings": verdict_warnings(golden, gates),
        # what the terminal warned about, for whoever reads only the files or the page:
        # the retriever's (kept by a rescore, which does not retrieve) and the rest
        "retrieval_warnings": list(retrieval_said),
        "warnings": [
            w for w in dict.fromkeys([*exp.warnings, *kept_so_far()]) if w not in retrieval_said
        ],
        "analysis": analysis.summary,
        # the exporters' files with their SHA-256: the next run written into this folder
        # removes them if it does not write them again (and they are still as written)
        "exports": export_record,
        # lets a rescore read the rankings from run.trec without per_query.jsonl
        "run_file": run_file_facts(evaluation.run, files["run"]),
    }
    for name, payload in analysis.files.items():  # calibration.json, benefit.json
        files[Path(name).stem] = folder.write_json(name, payload)
    if earlier:
        folder.remove_stale(earlier, files.values())
    files["summary"] = folder.write_json(folder.SUMMARY, summary)
    # a finished run now (summary.json): no longer one that stopped before its end
    folder.file(folder.UNFINISHED).unlink(missing_ok=True)
    return files, summary


def _exports(exp: Experiment, evaluation: Evaluation) -> dict[str, str | bytes]:
    """Run each configured exporter: the files it returned, checked, for the run folder.

    Called before the run writes anything into its folder (:func:`_write_outputs` writes
    them): an exporter that fails (raises, or returns anything but a mapping of plain new
    file names to text or bytes) fails the run with its folder as it was. No part of this
    run is in it, and an earlier run there stays whole, its exports with it, and still
    reads as that run (its ``summary.json`` is untouched).
    """
    if not exp.exports:
        return {}
    view = ExportInput(
        experiment=exp.name,
        golden=evaluation.golden,
        run=evaluation.run,
        depth=exp.depth,
        per_query=evaluation.scores.per_query(),
        means={str(m): a.mean for m, a in evaluation.overall.items()},
    )
    pending: dict[str, str | bytes] = {}
    for plugin in exp.exports:
        exporter = _build(plugin, PluginContext(config_key=plugin.key), Exporter)
        where = f"exporter {plugin.spec.name!r} ({plugin.spec.module})"
        with blamed(plugin.spec, "exporting"):
            files = exporter.export(view)
        if not isinstance(files, Mapping):
            raise PluginError(
                f"{where} returned {type(files).__name__} from export()",
                expected="a mapping of file name to content (str or bytes)",
                hint="return the files, e.g. {'tool_results.json': text}",
            )
        for name, content in files.items():
            if not isinstance(name, str) or not is_export_name(name):
                raise PluginError(
                    f"{where} returned the file name {name!r}, which is not a plain file name",
                    hint="an exporter names files inside the run folder: no folders, no dot files",
                )
            if name in RunFolder.OWN_FILES or name in pending:
                raise PluginError(
                    f"{where} returned {name!r}, a file the run folder already has",
                    hint="give the export a name of its own (e.g. prefixed by the tool's name)",
                )
            if not isinstance(content, str | bytes):
                raise PluginError(
                    f"{where} returned {type(content).__name__} for {name!r}",
                    expected="str or bytes",
                )
            pending[name] = content
    return pending


def _load_baseline(exp: Experiment, evaluation: Evaluation) -> Any:
    """The configured baseline, refused if it judged other queries or used other policies."""
    from evalframe.assess.baseline import load_baseline

    assert exp.baseline is not None  # checked by the caller
    baseline = load_baseline(exp.baseline, exp.baselines_dir)
    baseline.check(
        evaluation.golden, evaluation.policies, allow_mismatch=exp.compare.allow_mismatch
    )
    return _without_relabelled(baseline, evaluation.golden)


def _without_relabelled(baseline: Any, golden: GoldenSet) -> Any:
    """The baseline less the queries whose judgments the two golden sets disagree on.

    Compared anyway on another golden set (``compare.allow_mismatch``), a relabelled
    query's delta is the labels', not the system's: a regression gate must not read
    it as one. Said on stderr with the queries only one set holds (as the comparison
    says it); the gates then skip those queries (``n=..., k skipped``).
    """
    import dataclasses

    from evalframe.assess.goldenchange import golden_change, judged_alike

    data = baseline.data
    if data is None:
        return baseline
    ours = {q.id: dict(q.judgments) for q in golden.queries}
    mine = {q.id: sorted(q.relevant) for q in golden.queries}
    alike = judged_alike(data.judgments, data.expected, ours, mine)
    ids = [q.id for q in golden.queries]
    change = golden_change(data.golden_hash, data.query_ids, golden.content_hash, ids, alike)
    if change is None:
        return baseline
    print(f"note: {change.note(f'baseline {baseline.name}', 'this run')}", file=sys.stderr)
    left_out = set(change.relabelled)
    kept = {q: v for q, v in baseline.per_query.items() if q not in left_out}
    return dataclasses.replace(baseline, per_query=kept)


def _compare_with_baseline(
    exp: Experiment,
    baseline: Any,
    records: list[dict[str, Any]],
    summary: dict[str, Any],
    outputs: dict[str, Path],
) -> Comparison:
    """Compare this run (from memory) with its baseline; write comparison.json/.md."""
    from evalframe.assess.compare import compare_runs, one_sided
    from evalframe.assess.compare_text import render_comparison

    folder = RunFolder(exp.output_dir)
    this_run = RunData.from_records(
        ((None, r) for r in records), summary, name="this run", path=folder.path
    )
    reference = (baseline.data or RunFolder(baseline.path).data()).renamed(
        f"baseline {baseline.name}"
    )
    for name, alone in one_sided([reference, this_run]).items():  # as `evalframe compare`
        print(
            f"note: not compared: {', '.join(alone)}, which only {name} computed", file=sys.stderr
        )
    comparison = compare_runs(
        reference,
        this_run,
        correction=exp.compare.correction,
        alpha=exp.compare.alpha,
        seed=exp.stats.seed,
        resamples=max(exp.stats.bootstrap, 200),
        lead=exp.report.criterion,
    )
    outputs["comparison"] = folder.write_json(folder.COMPARISON, comparison.as_dict())
    outputs["comparison_md"] = folder.write_text(
        folder.COMPARISON_MD, render_comparison(comparison, markdown=True) + "\n"
    )
    return comparison


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


@dataclass(frozen=True)
class Inputs:
    """What a run is scored against: the golden set, the corpus, and how ids are normalised.

    ``normalise_id`` is the dataset plugin's ``id_normaliser()`` (None when it
    has none): the pipeline applies it to every retrieved id, so that gold and
    predictions are normalised by one setting.
    """

    golden: GoldenSet
    corpus: Corpus | None
    normalise_id: Callable[[str], str] | None = None


def load_inputs(exp: Experiment, *, corpus: Corpus | bool | None = True) -> Inputs:
    """Load the corpus (if configured) and the golden set, join the queries file, check views.

    With the retrieval cache on, a corpus whose loader names its files is
    deferred when its manifest is cached (:mod:`evalframe.retrieval.corpora`):
    its documents are read only if something needs their text. ``corpus``
    may instead give the corpus (``rescore``'s, from the run folder), or
    ``False`` to load none.
    """
    loaded: Corpus | None = None
    if isinstance(corpus, Corpus):
        loaded = corpus
    elif exp.corpus is not None and corpus:
        loader = _build(
            exp.corpus, PluginContext(cache_dir=exp.cache_dir, config_key="corpus"), CorpusLoader
        )
        with step(f"loading the corpus ({exp.corpus.spec.name})"):
            plugin = exp.corpus
            if exp.cache_retrieval:
                loaded = with_manifest(
                    loader,
                    plugin.spec,
                    plugin.config,
                    exp.cache_dir,
                    lambda: _loaded(loader, plugin),
                )
            else:
                loaded = _loaded(loader, plugin)
    dataset = _build(
        exp.dataset,
        PluginContext(corpus=loaded, cache_dir=exp.cache_dir, config_key="dataset"),
        DatasetLoader,
    )
    with step(f"loading the golden set ({exp.dataset.spec.name})"):
        # the tuning split (tuning.part) applies before everything that reads the golden set
        golden = apply_split(join_queries(_loaded(dataset, exp.dataset), exp.queries), exp.tuning)
    _check_views(exp, golden)
    _warn_unreachable_grades(exp, golden)
    normaliser = getattr(dataset, "id_normaliser", None)
    settle()  # the golden set and the corpus live as long as the run
    return Inputs(golden, loaded, normaliser() if callable(normaliser) else None)


def stored_corpus(exp: Experiment, folder: RunFolder) -> Corpus | bool:
    """The corpus a stored run was made with, deferred: from its ``corpus_manifest.json``.

    Its name, hash, ids and documents' hashes come from the manifest; the
    documents themselves are read (with the configured loader, and checked
    against the hash) only if something asks for their text. ``True`` (load it
    as a run does) when the folder has no manifest; ``False`` without a corpus.
    """
    if exp.corpus is None:
        return False
    manifest = folder.corpus_manifest() if RunFolder.is_run(folder.path) else None
    if manifest is None or not isinstance(manifest.get("content_hash"), str):
        return True
    plugin = exp.corpus
    loader = _build(
        plugin, PluginContext(cache_dir=exp.cache_dir, config_key="corpus"), CorpusLoader
    )
    digest = manifest["content_hash"]
    return Corpus.deferred(
        str(manifest.get("corpus", "")),
        digest,
        manifest["documents"],
        checked_load(lambda: _loaded(loader, plugin), digest),
        texts=checked_texts(loader, manifest["documents"]),
    )


def load_golden(exp: Experiment) -> tuple[GoldenSet, Corpus | None]:
    """The golden set (queries file joined) and the corpus: :func:`load_inputs` without ids."""
    inputs = load_inputs(exp)
    return inputs.golden, inputs.corpus


def _warn_unreachable_grades(exp: Experiment, golden: GoldenSet) -> None:
    """A measure that counts only labels >= rel (``P(rel=2)@5``) on a set whose labels
    are all below it is n/a on every query: said once, with the labels there are, rather
    than left to a row of n/a."""
    top = max((label for q in golden for label in q.judgments.values()), default=None)
    if top is None:
        return
    policy = exp.policies.no_relevant
    for m in exp.metrics:
        rel = getattr(m, "rel", 1)
        if rel > 1 and top < rel:
            # what a query with nothing relevant at that grade scores is the policy's call
            vacuous = m.definition.vacuous if policy == "bob" else None
            outcome = (
                "n/a on every query"
                if policy == "skip"
                else f"{vacuous:g} on every query (no_relevant: bob)"
                if vacuous is not None
                else f"0 on every query (no_relevant: {policy})"
            )
            warn(
                f"{m} counts documents labelled {rel} or more, and no golden query judges one "
                f"that high (the highest label is {top}), so it is {outcome}; "
                "binary judgments label every relevant document 1"
            )


def _warn_empty_texts(golden: GoldenSet, retriever: Any, name: str) -> None:
    """A retriever that reads the query text is about to be asked empty questions: say so once."""
    if not getattr(retriever, "reads_query_text", True):
        return  # a run file answers by id
    empty = [q.id for q in golden if not q.text.strip()]
    if empty:
        warn(
            f"{len(empty)} of {len(golden)} golden queries have no text, so retriever {name!r} "
            f"is asked an empty question for them: {shown(empty)}. Give the texts in a queries "
            "file joined by id (queries.path=FILE, see docs/golden-sets.md) or in the golden set"
        )


def _loaded(loader: Any, plugin: ResolvedPlugin) -> Any:
    """``loader.load()``; a record the data model refuses is a data error, not a crash.

    Loaders check their records with the core's helpers and name the line;
    this is the backstop for what slips through (a third-party loader, an id
    with a space), so it still ends in one paragraph and exit 2.
    """
    from pydantic import ValidationError

    try:
        with blamed(plugin.spec, "loading"):
            loaded = loader.load()
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise DataError(
            f"the {plugin.spec.kind} plugin {plugin.spec.name!r} read a record the data model "
            f"refuses: {first['msg'].removeprefix('Value error, ')}"
            + (f" (at {where})" if where else ""),
            key=f"{plugin.key}.path" if hasattr(plugin.config, "path") else plugin.key,
            hint="fix the record in the file (ids are one word; labels whole numbers)",
        ) from None
    return check_loaded(loaded, plugin.spec, plugin.key)


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


def retrieve_run(
    exp: Experiment, inputs: Inputs, queries: GoldenSet, *, progress: bool = True
) -> Run:
    """Ask the retriever for every query of ``queries`` (all, or one shard's), via the cache.

    What it warned about on the way (a run file's repeated ids, a service's notes)
    goes with the rankings, as ``metadata["retrieval_warnings"]``: ``summary.json``
    and the page say it, and a rescore of the folder keeps saying it.
    """
    with kept() as said:  # inside a run's block, or one of its own (a shard's)
        before = len(said)
        run = _retrieve(exp, inputs, queries, progress=progress)
        new = said[before:]
    if new:
        run = run.model_copy(update={"metadata": {**run.metadata, "retrieval_warnings": new}})
    settle()  # the rankings live until the run is written
    return run


def _retrieve(exp: Experiment, inputs: Inputs, queries: GoldenSet, *, progress: bool) -> Run:
    retriever = _build(
        exp.retriever,
        PluginContext(
            corpus=inputs.corpus,
            cache_dir=exp.cache_dir,
            config_key="retriever",
            normalise_id=inputs.normalise_id,
        ),
        Retriever,
    )
    _warn_empty_texts(queries, retriever, exp.retriever.spec.name)
    cache = (
        run_cache(exp.retriever.spec, exp.retriever.config, inputs.corpus, retriever, exp.cache_dir)
        if exp.cache_retrieval
        else None
    )
    name = exp.retriever.spec.name
    began = time.perf_counter()
    run = retrieve_all(retriever, queries, exp.depth, name=name, progress=progress, cache=cache)
    # the wall time of the whole retrieval (timings.json, the terminal): what concurrency
    # and batching change, which no query's latency shows
    elapsed = round(time.perf_counter() - began, 3)
    timed = {"retrieval_seconds": elapsed, "batched": answers_in_batches(retriever)}
    run = run.model_copy(update={"metadata": {**run.metadata, **timed}})
    # what it saw that the run must say
    for note in plugin_list(retriever, "notes", exp.retriever.spec, exp.retriever.key):
        warn(f"{name}: {note}")
    held = getattr(retriever, "held_query_ids", None)
    if held is not None:  # a run file: the queries it answers that no golden query asked
        known = {q.id for q in inputs.golden.queries}
        extra = sorted(str(q) for q in held if q not in known)
        if held and len(extra) == len(held):
            # every golden query missing, every score 0, exit 0: the wrong file, or ids
            # written another way, never a result (trec-eval refuses the same)
            raise DataError(
                f"the run answers {len(held)} quer{'y' if len(held) == 1 else 'ies'} and none "
                f"is a golden query (its ids: {shown(extra, 5)}; the golden set's: "
                f"{shown(sorted(known), 5)}), so every golden query would be scored as missing",
                key="retriever.path",
                expected="a run of this golden set's queries",
                hint="check that it is the run for this golden set; ids written another way "
                "(Q01 for q01) need the same form on both sides",
            )
        run = run.model_copy(update={"metadata": {**run.metadata, "extra_queries": extra}})
    if cache is not None:
        stats = {"hits": cache.hits, "misses": cache.misses}
        run = run.model_copy(update={"metadata": {**run.metadata, "cache": stats}})
    return run


def run_experiment(
    exp: Experiment,
    *,
    reporters: Sequence[Reporter] = (),
    progress: bool = True,
    metadata: dict[str, Any] | None = None,
) -> PipelineResult:
    """Run one validated experiment end to end, then hand the result to each reporter.

    ``metadata`` is handed to trackers in :class:`RunContext` (Hydra's choices,
    the sweep this job belongs to); the plugins and baseline are added here.
    """
    if exp.shard is not None:  # a shard scores nothing: `python -m evalframe` runs it
        raise ConfigError(
            f"shard={exp.shard} only retrieves a slice: run it with `python -m evalframe`, "
            "then `evalframe merge`; or set shard=null",
            key="shard",
        )
    context = RunContext(
        experiment=exp.name,
        output_dir=exp.output_dir,
        config=exp.public_config,
        metadata={
            **(metadata or {}),
            "plugins": _plugin_metadata(exp),
            "baseline": exp.baseline,
        },
    )
    # the folder is checked before any retrieval, which may take hours (or cost)
    RunFolder(exp.output_dir).prepare()
    relay = HookRelay.build(exp.trackers)
    relay.emit("on_run_start", context)
    try:
        # one run's scope (core.gcpause): what it loads is kept off the collector's
        # passes until it ends, and given back before a sweep's next job in this process
        with quiet(not progress), long_lived(), kept():
            inputs = load_inputs(exp)
            run = retrieve_run(exp, inputs, inputs.golden, progress=progress)
            relay.emit("on_retrieval_done", context, run)
            return score_and_report(
                exp,
                inputs.golden,
                run,
                relay,
                context,
                reporters,
                normalise_id=inputs.normalise_id,
                corpus=inputs.corpus,
            )
    except BaseException as exc:
        relay.emit("on_error", context, exc)
        raise


def score_and_report(
    exp: Experiment,
    golden: GoldenSet,
    run: Run,
    relay: HookRelay,
    context: RunContext,
    reporters: Sequence[Reporter] = (),
    *,
    normalise_id: Callable[[str], str] | None = None,
    corpus: Corpus | None = None,
    stored_run: Path | None = None,
    stored_manifest: Path | None = None,
) -> PipelineResult:
    """Score a run, gate it, compare it, write the outputs, report: everything after retrieval.

    ``rescore`` calls this directly on a stored run, so a re-scored run and a
    fresh one go through exactly the same steps. ``normalise_id`` (the
    dataset's, see :class:`Inputs`) is applied to every retrieved id first;
    the run written to the run folder is the normalised one, the run scored.
    ``corpus`` (when one was loaded) is recorded in the corpus manifest, handed
    to the reporters, and gives the failure categories document text to compare
    (none are given without it). ``stored_run`` is the run file ``rescore``
    read, kept (or copied) as ``run.trec`` rather than written again;
    ``stored_manifest`` likewise the ``corpus_manifest.json`` that ``corpus``
    was made from.
    """
    # what a previous run left in this folder (before this run writes anything there):
    # its files (its exports too) this run does not write again are removed once this run
    # has succeeded
    earlier = RunFolder(exp.output_dir).run_files_state()
    run = normalise_run(run, normalise_id, exp.policies.duplicates)
    warn_if_nothing_matches(golden, run)  # all zeros: ids, not the system, are the likely cause
    with step(f"scoring {len(golden)} queries"):  # a second at 10k, with the intervals
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
            beside=True,  # the intervals on a thread while the records are built here
        )
        records = per_query_records(evaluation, exp.report)
    # Q01 for q01: scored as missing with only a note; said on stderr, with the pairs
    warn_query_id_lookalikes(golden, run, evaluation.extra_queries)
    # before the gates, which may read calibration.ece & co. (GateView.analysis)
    st = exp.stats
    boot = BootstrapSettings(resamples=st.bootstrap, seed=st.seed, confidence=st.confidence)
    # The analyses and the page look documents up by the ids the run was judged by:
    # the corpus under the dataset's normalisation (Galaxy's catalogue lists tool/1.2,
    # the gold and the rankings say tool). The manifest records the corpus as loaded.
    judged = corpus.judged_as(normalise_id) if corpus is not None else None
    # what the analyses derive from the corpus alone is kept for the next run on it
    store = open_store(exp.cache_dir, DocFrequency.NAMESPACE) if judged is not None else None
    try:
        analysis = run_analyses(exp.analysis, evaluation, records, judged, boot, store)
    finally:
        if store is not None:
            store.close()
    settle()  # the records and the analyses' findings are kept for the reports
    # the run's flat rows served the engine, the records and the analyses (30 MB at
    # 10k rankings of 100); the gates, reports and hooks read the rankings
    run.release_rows()
    relay.emit("on_scored", context, evaluation)
    if exp.baseline is not None:
        evaluation.baseline = _load_baseline(exp, evaluation)

    gates = run_gates(list(exp.gates), evaluation)
    relay.emit("on_gated", context, gates)
    exit_code = EXIT_OK if verdict(gates) else EXIT_GATE_FAILED

    with step("writing the run folder"):
        # produced before any file is written: an exporter that fails leaves the folder as it was
        exports = _exports(exp, evaluation)
        outputs, summary = _write_outputs(
            exp,
            evaluation,
            gates,
            exit_code,
            records,
            analysis,
            corpus,
            stored_run,
            stored_manifest,
            exports,
            earlier,
        )
    result = PipelineResult(
        exit_code,
        evaluation,
        gates,
        outputs,
        experiment=exp,
        records=records,
        analysis=analysis,
        corpus=judged,
    )
    try:
        if evaluation.baseline is not None:
            result.comparison = _compare_with_baseline(
                exp, evaluation.baseline, records, summary, outputs
            )
        for reporter in reporters:
            reporter(result)
    finally:
        # a folder re-used (the same output.dir twice): the previous run's comparison.json,
        # report.html, ... that this run did not write would be read as this run's. They
        # went before summary.json was written (_write_outputs); this removes what is
        # left of them once the page is drawn (nothing, unless written since by hand).
        RunFolder(exp.output_dir).remove_stale(earlier, outputs.values())
    relay.emit("on_run_end", context, RunOutcome(exit_code=exit_code, outputs=outputs))
    return result
