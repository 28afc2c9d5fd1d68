"""Sharded evaluation: ``shard=i/n`` retrieves one slice of the queries; merge scores the whole.

A shard job loads the golden set and the corpus, retrieves only its slice
(:func:`evalframe.golden.split.shard_queries`) and writes a *shard folder*
through :class:`~evalframe.assess.runfolder.RunFolder`: the rankings exactly as
retrieved, and ``shard.json``, which says which slice it is and what it was
made from. It scores nothing, runs no gate and tracks nothing: a slice's mean
is not the evaluation's.

:func:`merge_shards` puts the slices back together and hands the whole run
to :func:`~evalframe.pipeline.run.score_and_report`, the function every run
ends in. So aggregation, bootstrap CIs, slices, gates, the baseline
comparison, exports, analyses, the report and tracking run once, on the
whole, and give exactly what an unsharded run gives. The rankings are the
retriever's own (float scores round-trip JSON exactly); only latencies differ,
as they do between any two runs.

Before anything is written or tracked (:func:`check_merge`) the shards are
checked against each other and against the golden set and corpus as they are
now: one config (``shard`` and ``output.dir``/``output.cache_dir`` aside), one
golden set, one corpus, one code version, every slice of ``0..n-1`` exactly
once, each holding exactly its slice. A refused merge is a mistake in what was
given, found without a tracker: it starts none, so it logs no failed run.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalframe import __version__
from evalframe.assess.runfolder import LAYOUT, RunFolder
from evalframe.core.errors import EXIT_OK, ConfigError, DataError
from evalframe.core.messages import kept
from evalframe.core.types import GoldenSet, Ranking, Run, content_hash
from evalframe.golden.split import Shard, shard_queries
from evalframe.pipeline.config import Experiment
from evalframe.pipeline.run import (
    Inputs,
    PipelineResult,
    Reporter,
    _plugin_metadata,
    load_inputs,
    retrieve_run,
    score_and_report,
)
from evalframe.plugin.hooks import HookRelay, RunContext

__all__ = [
    "CheckedMerge",
    "ShardInput",
    "check_merge",
    "check_shards",
    "code_identity",
    "config_identity",
    "merge_shards",
    "read_shards",
    "run_shard",
    "score_merge",
]

#: Settings that say where a shard ran, not what it computed.
_NOT_IDENTITY = (("shard",), ("output", "dir"), ("output", "cache_dir"))


def config_identity(config: Mapping[str, Any]) -> dict[str, Any]:
    """The config minus the settings that may differ between shards of one evaluation
    (where each is tracked changes no number)."""
    out: dict[str, Any] = {k: v for k, v in config.items() if k not in ("shard", "tracking")}
    output = out.get("output")
    if isinstance(output, Mapping):
        out["output"] = {k: v for k, v in output.items() if k not in ("dir", "cache_dir")}
    return out


def _git_state(cwd: Path) -> dict[str, str]:
    """``sha``, ``dirty`` and, for a dirty tree, a hash of its changes (empty: not in git)."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10, check=True
        ).stdout

    try:
        state = {"sha": git("rev-parse", "HEAD").strip()}
        dirty = bool(git("status", "--porcelain", "--untracked-files=no").strip())
        state["dirty"] = "true" if dirty else "false"
        if dirty:  # the same commit with different edits is different code
            diff = git("diff", "HEAD", "--no-ext-diff", "--no-color")
            state["changes"] = hashlib.sha256(diff.encode()).hexdigest()[:16]
    except (OSError, subprocess.SubprocessError):
        return {}
    return state


def code_identity(exp: Experiment, cwd: Path | None = None) -> dict[str, Any]:
    """The code that retrieved: evalframe's and each loading/retrieving plugin's version, and
    the git commit of the folder the run started in (with a hash of uncommitted changes)."""
    plugins = {
        kind: f"{meta['distribution']} {meta['version']}"
        for kind, meta in _plugin_metadata(exp).items()
    }
    return {"evalframe": __version__, "plugins": plugins, "git": _git_state(cwd or Path.cwd())}


@dataclass(frozen=True)
class ShardOutcome:
    """What a shard job wrote."""

    folder: Path
    shard: Shard
    queries: int
    total: int


def run_shard(
    exp: Experiment, *, metadata: dict[str, Any] | None = None, progress: bool = True
) -> ShardOutcome:
    """Retrieve shard ``exp.shard``'s slice of the queries and write its shard folder."""
    assert exp.shard is not None  # the caller checked
    folder = RunFolder(exp.output_dir)
    # before retrieval: a folder of a user's files of a shard's names is refused
    folder.prepare(shard=True)
    inputs = load_inputs(exp)
    golden = inputs.golden
    ids = shard_queries(golden, exp.shard)
    keep = set(ids)
    part = golden.model_copy(update={"queries": tuple(q for q in golden if q.id in keep)})
    run = retrieve_run(exp, inputs, part, progress=progress)

    from omegaconf import OmegaConf

    folder.prepare(shard=True)
    folder.mark_unfinished()
    # without `tracking`, as a run's config.yaml: where the merged run is reported is the
    # merge's environment's choice, and changes no number
    stored = {k: v for k, v in exp.public_config.items() if k != "tracking"}
    folder.write_text(folder.CONFIG, OmegaConf.to_yaml(OmegaConf.create(stored)))
    folder.write_run(run, tag=exp.run_tag)
    folder.write_rankings(ids, run)
    folder.write_json(  # last: a folder with shard.json is a finished shard
        folder.SHARD,
        {
            "layout": LAYOUT,
            "experiment": exp.name,
            "shard": {"index": exp.shard.index, "count": exp.shard.count},
            "config_hash": content_hash(config_identity(exp.public_config)),
            "golden_set": {
                "name": golden.name,
                "content_hash": golden.content_hash,
                "queries": len(golden),
            },
            "corpus": inputs.corpus.content_hash if inputs.corpus is not None else None,
            "code": code_identity(exp),
            "queries": ids,
            "retriever": exp.retriever.spec.name,
            "retrieval_cache": run.metadata.get("cache"),
            # what the retriever warned about: the merged run's summary and page say it
            "retrieval_warnings": list(run.metadata.get("retrieval_warnings") or ()),
            # a run file's queries that no golden query asked (None: not a run file)
            "extra_queries": run.metadata.get("extra_queries"),
            "choices": (metadata or {}).get("choices", {}),
        },
    )
    folder.file(folder.UNFINISHED).unlink(missing_ok=True)  # a finished shard now
    return ShardOutcome(folder.path, exp.shard, len(ids), len(golden))


@dataclass(frozen=True)
class ShardInput:
    """One shard folder as merge reads it."""

    path: Path
    info: dict[str, Any]
    rankings: dict[str, Ranking | None]

    @property
    def shard(self) -> Shard:
        return Shard(int(self.info["shard"]["index"]), int(self.info["shard"]["count"]))


def read_shards(paths: Sequence[Path]) -> list[ShardInput]:
    """Every shard folder's ``shard.json`` and rankings; a folder that is not one is refused."""
    shards = []
    for path in paths:
        folder = RunFolder(path)
        if not Path(path).exists():  # a typo, or a shard index the sweep never had
            raise DataError(
                f"{path} does not exist",
                path=path,
                expected="the output folder of a run with shard=i/n",
                hint="give the folders the shard sweep printed after it ran (its merge command "
                "lists them)",
            )
        if not RunFolder.is_shard(folder.path):
            what = "a finished run, not a shard" if RunFolder.is_run(folder.path) else "no shard"
            raise DataError(
                f"{path} is {what}: it has no {RunFolder.SHARD}",
                path=path,
                expected="the output folder of a run with shard=i/n",
                hint="a shard job that was killed leaves no shard.json: run that shard again",
            )
        info = folder.shard()
        try:
            index, count = int(info["shard"]["index"]), int(info["shard"]["count"])
            if not 0 <= index < count:  # -1 was read as a shard of its own, missing the 0th
                raise ValueError(f"shard {index}/{count}")
        except (KeyError, TypeError, ValueError):
            raise DataError(
                "not a shard description written by evalframe",
                path=folder.file(folder.SHARD),
                expected="shard: {index: i, count: n} with 0 <= i < n",
                got=repr(info.get("shard"))[:80],
                hint="restore the file from the shard's run (or run that shard again)",
            ) from None
        shards.append(ShardInput(folder.path, info, folder.rankings()))
    return shards


def _first_difference(a: Any, b: Any, prefix: str = "") -> str | None:
    """The first dotted key at which two plain configs differ, with both values."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for key in sorted(set(a) | set(b), key=str):
            where = f"{prefix}.{key}" if prefix else str(key)
            if key not in a or key not in b:
                return f"{where} ({a.get(key, '(unset)')!r} vs {b.get(key, '(unset)')!r})"
            found = _first_difference(a[key], b[key], where)
            if found is not None:
                return found
        return None
    return None if a == b else f"{prefix} ({a!r} vs {b!r})"


def _config_difference(a: ShardInput, b: ShardInput) -> str:
    import yaml

    try:
        configs = [
            config_identity(yaml.safe_load(RunFolder(s.path).file(RunFolder.CONFIG).read_text()))
            for s in (a, b)
        ]
    except (OSError, yaml.YAMLError, AttributeError):
        return "(config.yaml could not be read to say where)"
    return _first_difference(configs[0], configs[1]) or "(the stored configs)"


def _refuse(what: str, a: ShardInput, b: ShardInput, detail: str, hint: str) -> DataError:
    return DataError(
        f"shards {a.shard} ({a.path}) and {b.shard} ({b.path}) come from different {what}: "
        f"{detail}",
        expected="the shards of one evaluation: one config, golden set, corpus and code",
        hint=hint,
    )


def check_shards(shards: Sequence[ShardInput]) -> None:
    """Refuse shards that are not the ``n`` slices of one evaluation, saying what differs."""
    if not shards:
        raise ConfigError("no shard folders given", hint="evalframe merge SHARD_DIR... --out DIR")
    first = shards[0]
    rerun = "run the differing shard again with the others' settings and code, then merge"
    for other in shards[1:]:
        if other.info.get("config_hash") != first.info.get("config_hash"):
            raise _refuse("configs", first, other, _config_difference(first, other), rerun)
        if other.info.get("golden_set") != first.info.get("golden_set"):
            a, b = first.info.get("golden_set", {}), other.info.get("golden_set", {})
            detail = (
                f"golden set {a.get('name')}@{a.get('content_hash')} vs "
                f"{b.get('name')}@{b.get('content_hash')}"
            )
            raise _refuse("golden sets", first, other, detail, rerun)
        if other.info.get("corpus") != first.info.get("corpus"):
            detail = f"corpus {first.info.get('corpus')} vs {other.info.get('corpus')}"
            raise _refuse("corpora", first, other, detail, rerun)
        if other.info.get("code") != first.info.get("code"):
            where = _first_difference(first.info.get("code"), other.info.get("code"), "code")
            raise _refuse("code versions", first, other, where or "code", rerun)
    counts = {s.shard.count for s in shards}
    if len(counts) > 1:
        raise DataError(
            f"the shards split the queries in different numbers of slices: {sorted(counts)}",
            expected="shards 0/n to n-1/n of one n",
        )
    count = counts.pop()
    seen: dict[int, ShardInput] = {}
    for s in shards:
        if s.shard.index in seen:
            raise DataError(
                f"shard {s.shard} is given twice: {seen[s.shard.index].path} and {s.path}",
                expected=f"each of the {count} shards once",
                hint="pass each shard folder once",
            )
        seen[s.shard.index] = s
    missing = [f"{i}/{count}" for i in range(count) if i not in seen]
    if missing:
        raise DataError(
            f"shard{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
            f"{'are' if len(missing) > 1 else 'is'} missing: {len(seen)} of {count} given",
            expected=f"all {count} shard folders",
            hint="run the missing shards (shard=i/n) and pass every folder to merge",
        )


@dataclass(frozen=True)
class CheckedMerge:
    """What :func:`check_merge` found: shards that are one evaluation, and its whole run.

    Nothing has been written or tracked yet: every refusal happens before this exists.
    """

    exp: Experiment
    shards: tuple[ShardInput, ...]
    inputs: Inputs
    run: Run


def check_merge(exp: Experiment, shards: Sequence[ShardInput]) -> CheckedMerge:
    """Every check a merge makes, then its rankings in the golden set's order.

    The golden set and corpus are loaded again and must be those the shards
    retrieved for, and each shard must hold exactly its slice, so nothing is
    scored twice or left out. No tracker is started: a refused merge is a
    mistake in what was given, not a run, and leaves nothing behind. What the
    loaders warn about reaches ``summary.json`` when this is called inside
    :func:`~evalframe.core.messages.kept` (as :func:`merge_shards` and the
    command do).
    """
    check_shards(shards)
    first = shards[0].info
    inputs = load_inputs(exp)
    golden = inputs.golden
    stored = first.get("golden_set", {})
    if stored.get("content_hash") != golden.content_hash:
        raise DataError(
            f"the golden set changed since the shards ran: they retrieved for "
            f"{stored.get('name')}@{stored.get('content_hash')}, it is now "
            f"{golden.name}@{golden.content_hash}",
            hint="run the shards again against the current golden set",
        )
    corpus = inputs.corpus.content_hash if inputs.corpus is not None else None
    if first.get("corpus") != corpus:
        raise DataError(
            f"the corpus changed since the shards ran ({first.get('corpus')} -> {corpus})",
            hint="run the shards again against the current corpus",
        )
    for s in shards:
        expected = shard_queries(golden, s.shard)
        if list(s.rankings) != expected or s.info.get("queries") != expected:
            raise DataError(
                f"shard {s.shard} ({s.path}) does not hold its slice of the golden set",
                expected=f"{len(expected)} queries, from {expected[0] if expected else '-'}",
                got=f"{len(s.rankings)} queries",
                hint="the shard folder was edited or cut short: run that shard again",
            )
    return CheckedMerge(exp, tuple(shards), inputs, _merged_run(exp, shards, golden))


def _merged_run(exp: Experiment, shards: Sequence[ShardInput], golden: GoldenSet) -> Run:
    """The shards' rankings in the golden set's order, with what their retrievers said."""
    by_id = {qid: r for s in shards for qid, r in s.rankings.items()}
    rankings: dict[str, Ranking] = {}
    for q in golden:  # golden order, as an unsharded run fills its rankings
        ranking = by_id[q.id]
        if ranking is not None:
            rankings[q.id] = ranking
    hits = [s.info.get("retrieval_cache") for s in shards]
    # "shards": what was retrieved was retrieved by them (a merge retrieves nothing)
    meta: dict[str, Any] = {"retriever": exp.retriever.spec.name, "shards": len(shards)}
    if all(isinstance(h, dict) for h in hits):
        meta["cache"] = {
            k: sum(int(h.get(k, 0)) for h in hits if isinstance(h, dict))
            for k in ("hits", "misses")
        }
    # each warning once: as it was when every shard said it (a run file read whole by
    # each), else naming the shards that said it
    said: dict[str, list[str]] = {}
    for s in shards:
        for w in s.info.get("retrieval_warnings") or ():
            said.setdefault(str(w), []).append(str(s.shard))
    if said:
        meta["retrieval_warnings"] = [
            w if len(where) == len(shards) else f"shard {', '.join(where)}: {w}"
            for w, where in said.items()
        ]
    # a run file's queries beyond the golden set, as every shard read the whole file
    extra = [s.info.get("extra_queries") for s in shards]
    lists = [e for e in extra if isinstance(e, list)]
    if len(lists) == len(extra):
        meta["extra_queries"] = sorted({str(q) for e in lists for q in e})
    return Run(rankings=rankings, metadata=meta)


def score_merge(
    merge: CheckedMerge,
    reporters: Sequence[Reporter] = (),
    *,
    metadata: dict[str, Any] | None = None,
) -> PipelineResult:
    """Track, score, gate, compare, write and report a checked merge, as one run."""
    exp, shards = merge.exp, merge.shards
    context = RunContext(
        experiment=exp.name,
        output_dir=exp.output_dir,
        config=exp.public_config,
        metadata={
            **(metadata or {}),
            "choices": shards[0].info.get("choices", {}),
            "plugins": _plugin_metadata(exp),
            "baseline": exp.baseline,
            "shards": [str(s.path) for s in sorted(shards, key=lambda s: s.shard.index)],
        },
    )
    relay = HookRelay.build(exp.trackers)
    relay.emit("on_run_start", context)
    try:
        relay.emit("on_retrieval_done", context, merge.run)
        return score_and_report(
            exp,
            merge.inputs.golden,
            merge.run,
            relay,
            context,
            reporters,
            normalise_id=merge.inputs.normalise_id,
            corpus=merge.inputs.corpus,
        )
    except BaseException as exc:
        relay.emit("on_error", context, exc)
        raise


def merge_shards(
    exp: Experiment,
    shards: Sequence[ShardInput],
    reporters: Sequence[Reporter] = (),
    *,
    metadata: dict[str, Any] | None = None,
) -> PipelineResult:
    """Score the shards' rankings as one run (``exp`` is their config, ``shard`` unset):
    :func:`check_merge`, then :func:`score_merge`.

    What loading the golden set and corpus again warns about is kept for the
    merged ``summary.json`` and page, as a run keeps it.
    """
    with kept():
        return score_merge(check_merge(exp, shards), reporters, metadata=metadata)


def shard_message(outcome: ShardOutcome) -> str:
    """The line a shard job prints instead of a report."""
    s = outcome.shard
    return (
        f"evalframe · shard {s} · retrieved {outcome.queries} of {outcome.total} queries → "
        f"{outcome.folder}\n  when all {s.count} shards are done: evalframe merge "
        f"SHARD_DIR... --out DIR (scores, gates and tracks the whole once)"
    )


def print_shard(outcome: ShardOutcome) -> int:
    print(shard_message(outcome), file=sys.stdout)
    return EXIT_OK
