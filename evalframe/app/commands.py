"""``evalframe rescore`` and ``evalframe cache``: work on what earlier runs left behind
(``evalframe compare`` is :mod:`evalframe.app.compare_cmd`)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalframe.assess.runfolder import RunFolder
from evalframe.core.errors import ConfigError, DataError
from evalframe.core.gcpause import long_lived
from evalframe.core.io import default_cache_dir
from evalframe.core.messages import kept, warn
from evalframe.core.store import DATABASE
from evalframe.core.types import Corpus, Run
from evalframe.metrics import Metric

if TYPE_CHECKING:
    from evalframe.core.types import GoldenSet
    from evalframe.pipeline.config import Experiment
    from evalframe.pipeline.run import Inputs
    from evalframe.plugin.hooks import HookRelay, RunContext

__all__ = ["cache_main", "default_cache_dir", "load_stored_run", "rescore_main"]


def load_stored_run(run_dir: Path) -> Run:
    """The rankings a run wrote (see :meth:`evalframe.assess.runfolder.RunFolder.run`)."""
    return RunFolder(run_dir).run()


# the command's scope (core.gcpause): what it loads stays off the collector's passes;
# and what it warns about, from the config on, is kept for summary.json and the page
@long_lived()
@kept()
def rescore_main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="evalframe rescore",
        description="Recompute metrics, gates and the report from a stored run, without "
        "calling the retriever. KEY=VALUE overrides change the stored config (for example "
        "'metrics.measures=[R@5,R@10,nDCG@10]'); GROUP=OPTION picks a config group's file as a run "
        "would (gates=bob_regression, metrics=bob).",
    )
    parser.add_argument("run_dir", type=Path, help="a run directory written by evalframe")
    parser.add_argument(
        "overrides", nargs="*", help="KEY=VALUE or GROUP=OPTION changes to the stored config"
    )
    parser.add_argument("--out", type=Path, help="write outputs here (default: RUN_DIR)")
    # options may come between the positionals (RUN --out DIR KEY=VALUE)
    args = parser.parse_intermixed_args(list(argv))

    from evalframe.app.outfolder import out_holds_a_run, replaced
    from evalframe.app.runconfig import load_config
    from evalframe.core.io import replacing_folder
    from evalframe.core.progress import step
    from evalframe.pipeline.config import validate_experiment
    from evalframe.pipeline.run import load_inputs, stored_corpus
    from evalframe.plugin.hooks import HookRelay, RunContext

    run_dir: Path = args.run_dir
    if not run_dir.is_dir():
        raise DataError(
            f"{run_dir} is a file, not a run folder"
            if run_dir.is_file()
            else f"run folder not found: {run_dir}",
            expected="a folder a run wrote (config.yaml, run.trec, summary.json)",
            hint="give the folder the run printed after 'Saved results to:' "
            "(outputs/<experiment>/<date_time> by default)",
        )
    has_config = (run_dir / RunFolder.CONFIG).is_file()
    if not has_config and not RunFolder.is_run(run_dir):
        if RunFolder(run_dir).runs_inside():  # outputs/bob: the hint names its newest run
            RunFolder(run_dir).require(RunFolder.SUMMARY, "run summary")
        raise DataError(
            f"{run_dir} is not a run folder: it has neither {RunFolder.CONFIG} nor "
            f"{RunFolder.SUMMARY}",
            path=run_dir,
            expected="a folder a run wrote (config.yaml, run.trec, summary.json)",
            hint="give the folder the run printed after 'Saved results to:' "
            "(outputs/<experiment>/<date_time> by default)",
        )
    if not has_config:
        raise DataError(
            f"{run_dir} is a run folder without its {RunFolder.CONFIG}: a rescore reads the "
            "run's metrics, dataset and gates from it",
            path=run_dir / RunFolder.CONFIG,
            expected="the config.yaml the run wrote beside its summary.json",
            hint=f"restore {RunFolder.CONFIG} from where the folder came (a copy, `dvc pull`, "
            "git), or run the experiment again (its retrieval cache keeps the rankings it got)",
        )
    config_file = run_dir / RunFolder.CONFIG
    if not RunFolder.is_run(run_dir):
        # a run writes summary.json last: without it the run stopped while writing its
        # outputs, and a rescore in place would make the folder look finished
        raise DataError(
            f"{run_dir} is not a finished run: it has no {RunFolder.SUMMARY}, which a run "
            "writes last, so the run stopped while writing its outputs",
            path=run_dir / RunFolder.SUMMARY,
            expected="a finished run's folder (it printed 'Saved results to:')",
            hint="run the experiment again (its retrieval cache keeps the rankings it got), "
            f"or restore {RunFolder.SUMMARY} from where the folder came (a copy, `dvc pull`, git)",
        )
    # --out elsewhere: new, empty, or an earlier run's folder, replaced whole (app.outfolder)
    replace = args.out is not None and args.out.resolve() != run_dir.resolve()
    if replace:
        replace = out_holds_a_run(
            args.out,
            [(run_dir, "the run being re-scored")],
            command="rescore",
            new="re-scored run",
            made_from="rankings",
            suggest=f"{run_dir.name}-rescored",
        )
    raw = load_config(
        config_file,
        args.overrides,
        args.out or run_dir,
        what="stored run config",
        hint="write overrides as key=value or group=option, e.g. 'metrics.measures=[R@5,R@10,RR]' "
        "or gates=bob_regression",
        stored_rankings=True,
    )
    # With overrides, advice only a retrieval can follow is worded for a rescore; without
    # them the run's own config is scored again, and says what the run said (a rescore of
    # an unchanged run writes its summary.json again byte for byte)
    exp = validate_experiment(raw, retrieving=not args.overrides)
    if replace:
        print(
            f"note: replacing {replaced(args.out)} in {args.out} with the re-scored run: none "
            "of its files are kept unless the rescore fails (--out ANOTHER_DIR keeps it)",
            file=sys.stderr,
        )
    if args.out is not None and args.out.resolve() == run_dir.resolve():
        # --out RUN_DIR itself: not "a copy elsewhere", whatever the docs of --out promise
        print(
            f"note: --out {args.out} is the run folder itself: it is re-scored in place "
            "(--out ANOTHER_DIR keeps it as it is)",
            file=sys.stderr,
        )
    elif args.out is None and args.overrides:
        print(
            f"note: re-scoring {run_dir} in place: its metrics, gates, config and report are "
            "replaced by the re-scored ones (--out DIR writes them there and keeps these)",
            file=sys.stderr,
        )
    # Scoring needs the judgments, not the corpus: the run folder's corpus manifest
    # stands for it, and its documents are read only if a report or an analysis
    # asks for their text.
    deferred = stored_corpus(exp, RunFolder(run_dir))
    inputs = load_inputs(exp, corpus=deferred)
    golden = inputs.golden
    with step("reading the stored run"):  # run.trec, and per_query.jsonl when it adds to it
        run, exact = RunFolder(run_dir).read_run(exp.cache_dir)
    # the stored summary, read once: what the run said, how deep it ranked, on what set
    before = _stored_summary(run_dir)
    _warn_deeper_than_stored(before, exp.depth, exp.metrics)
    deepest = max((len(r.doc_ids) for r in run.rankings.values()), default=0)
    run, cut = cut_to_depth(run, exp.depth)
    if cut and (args.out is None or args.out.resolve() == run_dir.resolve()):
        # in place, run.trec would be written again cut to the new depth: the documents
        # past it gone for good, and a later rescore deeper could not find them
        raise ConfigError(
            f"depth={exp.depth} would cut {cut} stored ranking{'s' if cut != 1 else ''} (up "
            f"to {deepest} documents) to {exp.depth} in {run_dir} itself: a rescore in place "
            "writes run.trec again, so the documents past that depth would be lost for good",
            key="depth",
            hint=f"write the re-scored run elsewhere and keep this one as it is: evalframe "
            f"rescore {run_dir} depth={exp.depth} --out "
            f"{run_dir.parent / f'{run_dir.name}-depth{exp.depth}'}",
        )
    if cut:  # run.trec no longer holds exactly the rankings scored: written again
        exact = False
        print(
            f"note: depth={exp.depth} cuts {cut} stored ranking{'s' if cut != 1 else ''} to "
            f"{'its' if cut == 1 else 'their'} first {exp.depth} documents, in the order the "
            "retriever ranked them: what a run at that depth would have scored",
            file=sys.stderr,
        )
    # when and from which commit the rankings were retrieved: the new timings.json
    # records the rescore's own, and keeps these beside them (a rescore of a rescore
    # keeps the first run's)
    source = RunFolder(run_dir).timings()
    retrieved = source.get("retrieved") or {k: source[k] for k in ("created", "git") if k in source}
    if retrieved:
        run.metadata["retrieved"] = retrieved
    # what the retriever warned about then (it is not asked again): the page still says it
    said = _stored_retrieval_warnings(before)
    if said:
        run.metadata["retrieval_warnings"] = said
    # the queries the run held beyond the golden set: run.trec keeps only the golden ones
    extra = _stored_extra_queries(before, {q.id for q in golden.queries})
    if extra is not None and "extra_queries" not in run.metadata:
        run.metadata["extra_queries"] = extra
    _note_golden_change(before, golden.content_hash)
    context = RunContext(
        experiment=exp.name,
        output_dir=exp.output_dir,
        config=exp.public_config,
        # what a tracker names the run after (MLflow: "rescore of RUN: measures=[...]")
        metadata={"rescore_of": str(run_dir), "overrides": list(args.overrides)},
    )
    relay = HookRelay.build(exp.trackers)
    # an earlier run in --out is put back if the rescore fails before its end
    with replacing_folder(args.out) if replace else nullcontext():
        return _rescore(exp, golden, run, relay, context, inputs, deferred, run_dir, exact)


def _rescore(
    exp: Experiment,
    golden: GoldenSet,
    run: Run,
    relay: HookRelay,
    context: RunContext,
    inputs: Inputs,
    deferred: Corpus | bool,
    run_dir: Path,
    exact: bool,
) -> int:
    """Score the stored run and write the folder (``rescore_main``'s last step)."""
    from evalframe.pipeline.run import Reporter, score_and_report
    from evalframe.report.page import RunPage
    from evalframe.report.terminal import TerminalReport

    relay.emit("on_run_start", context)
    try:
        reporters: list[Reporter] = [RunPage(), TerminalReport()]
        # run.trec is kept as it is only when it holds exactly the rankings scored; else
        # (an older folder, a hand-edited file) it is written again from them, so that the
        # folder's run_file facts describe what was scored
        stored = RunFolder(run_dir).file(RunFolder.RUN)
        # the corpus is the run folder's manifest's: the file stays as it is
        manifest = RunFolder(run_dir).file(RunFolder.CORPUS_MANIFEST)
        return score_and_report(
            exp,
            golden,
            run,
            relay,
            context,
            reporters,
            normalise_id=inputs.normalise_id,
            corpus=inputs.corpus,
            stored_run=stored if exact and stored.is_file() else None,
            stored_manifest=manifest if isinstance(deferred, Corpus) else None,
        ).exit_code
    except BaseException as exc:
        relay.emit("on_error", context, exc)
        raise


def _stored_summary(run_dir: Path) -> dict[str, Any]:
    """The re-scored folder's ``summary.json`` (empty when it has none it can read)."""
    if not RunFolder.is_run(run_dir):
        return {}
    try:
        return RunFolder(run_dir).summary()
    except DataError:
        return {}


def _warn_deeper_than_stored(
    summary: dict[str, Any], depth: int, metrics: Sequence[Metric]
) -> None:
    """A rescore does not retrieve: ``depth=20`` over rankings of 10 scores ``R@20`` on
    those 10, under a summary that says depth 20. Said, as a run says a cutoff past its
    depth (``pipeline.config``), with what would score it as named."""
    stored = summary.get("depth")
    if not isinstance(stored, int) or depth <= stored:
        return
    # what the missing ranks change: a cutoff past them, or none (RR, AP: the whole ranking)
    deep = [str(m) for m in metrics if m.k is None or (isinstance(m.k, int) and m.k > stored)]
    if not deep:
        return
    warn(
        f"depth={depth} is deeper than the stored rankings: the run retrieved {stored} "
        f"documents a query, and a rescore retrieves none, so {', '.join(deep)} "
        f"{'is' if len(deep) == 1 else 'are'} scored on those {stored}; run the retriever "
        f"again (python -m evalframe ... depth={depth}) to rank deeper"
    )


def cut_to_depth(run: Run, depth: int) -> tuple[Run, int]:
    """``run`` with every ranking longer than ``depth`` cut to its first ``depth`` documents
    (the order the retriever gave them, which ``run.trec`` keeps), and how many were cut.

    A run retrieves ``depth`` documents a query; a rescore with a smaller ``depth``
    scores what that run would have scored, rather than the longer stored rankings
    under a config that says otherwise. (Deeper than stored cannot be made up: said by
    :func:`_warn_deeper_than_stored`.)
    """
    long = [qid for qid, r in run.rankings.items() if len(r.doc_ids) > depth]
    if not long:
        return run, 0
    rankings = dict(run.rankings)
    for qid in long:
        r = rankings[qid]
        update = {"doc_ids": r.doc_ids[:depth], "scores": r.scores[:depth]}
        rankings[qid] = r.model_copy(update=update)
    return Run.model_construct(rankings=rankings, metadata=dict(run.metadata)), len(long)


def _stored_retrieval_warnings(summary: dict[str, Any]) -> list[str]:
    said = summary.get("retrieval_warnings")
    return [str(w) for w in said] if isinstance(said, list) else []


def _stored_extra_queries(summary: dict[str, Any], golden: set[str]) -> list[str] | None:
    """The stored run's extra query ids still not in the golden set; None for a folder
    from before they were kept (its count alone cannot be carried)."""
    counts = summary.get("counts")
    ids = counts.get("extra_queries") if isinstance(counts, dict) else None
    return [str(q) for q in ids if str(q) not in golden] if isinstance(ids, list) else None


def _note_golden_change(summary: dict[str, Any], current: str) -> None:
    golden = summary.get("golden_set")
    stored = golden.get("content_hash") if isinstance(golden, dict) else None
    if stored is not None and stored != current:
        print(
            f"note: the golden set changed since this run ({stored} -> {current}); the run is "
            "re-scored against the current judgments, and queries it never saw count as missing",
            file=sys.stderr,
        )


def cache_main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="evalframe cache", description="Where the cache is, how big, and emptying it."
    )
    parser.add_argument("action", choices=("info", "clear"))
    parser.add_argument(
        "--dir",
        type=Path,
        help="cache folder (default: $EVALFRAME_CACHE_DIR or ~/.cache/evalframe)",
    )
    parser.add_argument("--json", action="store_true", help="print info as JSON")
    parser.add_argument(
        "--kind",
        nargs="+",
        metavar="KIND",
        help="clear only these kinds (as `cache info` lists them: runs, bm25, solver...)",
    )
    args = parser.parse_args(list(argv))

    from evalframe.retrieval.cache import cache_info, clear_cache

    root = args.dir or default_cache_dir()
    if args.dir is not None and not root.exists():
        # a mistyped --dir "cleared ... nothing was cached", exit 0
        raise DataError(
            f"there is no cache folder at {root}",
            key="--dir",
            expected="an evalframe cache folder (what `evalframe cache info` shows)",
            hint="check the path; without --dir the command uses $EVALFRAME_CACHE_DIR or "
            "~/.cache/evalframe",
        )
    if args.action == "clear":
        from evalframe.retrieval.cache import KEPT

        before = cache_info(root)
        freed = clear_cache(root, args.kind)
        shown = ", ".join(f"{k} {_size(n)}" for k, n in freed.items())
        if "unreadable" in before and args.kind is None:
            shown = ", ".join(filter(None, [shown, "the unreadable database"]))
        shown = shown or "nothing was cached"
        on_disk = before["bytes"]
        # the whole cache: what left the disk (an unreadable database too); some kinds:
        # the bytes of their entries (the database gives its space back with VACUUM)
        total = on_disk - cache_info(root)["bytes"] if args.kind is None else sum(freed.values())
        print(f"cleared {root}: {shown} ({_size(max(total, 0))} freed)")
        for name, what in KEPT.items():
            if (root / name).is_dir() and any((root / name).iterdir()):
                print(f"kept {name}: {what}")
        return 0
    info = cache_info(root)
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    print(f"cache: {root}{'' if info['exists'] else ' (empty: not created yet)'}")
    if "unreadable" in info:
        print(
            f"  the database ({DATABASE}) cannot be read ({info['unreadable']}): its entries "
            "are not counted; `evalframe cache clear` deletes it, and they are recomputed"
        )
    total = "total on disk"
    width = max([len(total), *map(len, info["kinds"])])  # mlflow-pending stays in line too
    for kind, stats in info["kinds"].items():
        count = (
            f"{stats['entries']:>7} entries"
            if "entries" in stats
            else f"{stats.get('files', 0):>7} files  "
        )
        print(f"  {kind:<{width}} {count}  {_size(stats['bytes']):>10}")
    print(f"  {total:<{width}} {'':>15}  {_size(info['bytes']):>10}")
    return 0


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"
