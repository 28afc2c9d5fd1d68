"""The run folder: the one module that writes what a run leaves on disk and reads it back.

It is one module because the run folder is one format: each file's name, its writer
and its reader sit together, so no other module knows the layout.

A run's folder is a format that other tools rely on (DVC tracks it, baselines
copy it, ``compare``, ``rescore``, reports, the pytest fixture and trackers read
it), so it has exactly one owner: this is one module because every file name,
reader and writer of the format belongs together (a second module would be a
second owner). Layout version 1::

    config.yaml       the composed config the run used
    run.trec          the rankings, TREC format (qid Q0 docid rank score tag), each
                      in the order the retriever returned it (the rank column)
    per_query.jsonl   one record per golden query: values, status, expected, and the
                      retrieved ids and scores in the rank order the metrics used
                      (under ``ties: given`` that is the retriever's order)
    metrics.json      every aggregate as a flat key (overall and per slice, with CIs),
                      readable by `dvc metrics` and trackers
    headline.json     the headline metrics (``metrics.headline``) with their CI bounds:
                      what `dvc exp show` and trackers show by default
    gates.json        the gate verdicts
    summary.json      identity, counts, aggregates overall and per slice; its
                      ``layout`` key is the version of this format, and ``run_file``
                      says what a rescore needs of ``run.trec`` (its SHA-256, the
                      queries answered with nothing, whether any ranking carried an
                      answer or costs): with it, and ``run.trec`` unchanged, the
                      rankings are read from ``run.trec`` alone; ``exports`` names
                      the exporters' files the run wrote, each with its SHA-256
    timings.json      what the machine measured: latency (summary and per query) and
                      the retrieval cache's hits. Everything else is the same
                      bytes for the same inputs; this file is not (DVC leaves it out)
    comparison.json   against a baseline, when one was given (and comparison.md)
    corpus_manifest.json  when a corpus was loaded: a short hash of each document's text,
                      so a later run can name the documents that changed (the drift view)
    report.html       the page people read (self-contained), and summary.md, its
                      pull-request-sized summary; written by the report layer
    calibration.json  with ``analysis.calibration``: ECE, MCE, Brier, reliability bins,
                      answer_correctness@T, the verdict (docs/analyses.md)
    benefit.json      with ``analysis.benefit``: the A/B benefit table per stratum
    job.json          in a ``-m`` sweep job only: how the job ended
    <export files>    what each configured exporter (``exports:``) returned, e.g.
                      ``galaxy_eval.json``: plain names (no folder, no dot file), none
                      of those above. Being named in ``summary.json`` is what lets the
                      next run written into the folder remove them when it does not
                      write them again

A *shard* folder (``shard=i/n``) holds one slice's rankings, not a scored run:
``config.yaml``, ``run.trec``, ``rankings.jsonl`` (one record per query of the
slice: the ranking exactly as retrieved, with latency, or null when the
retriever had no answer) and ``shard.json`` (which slice, and the identity of
the config, golden set, corpus and code, which ``evalframe merge`` checks).

A sweep folder holds one run folder per job (named by job number) and
``.evalframe-sweep.json``, which tells this sweep's jobs from an earlier
sweep's in a reused folder, and ``report.html``, the page comparing the jobs.
:class:`SweepFolder` reads and writes them.

A folder written by a newer evalframe (a higher ``layout``) is refused with a
message rather than misread; a folder without ``layout`` is version 1.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import math
import operator
import time
import uuid
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, Protocol

import numpy as np

from evalframe.core.errors import DataError
from evalframe.core.gcpause import gc_paused
from evalframe.core.io import (
    atomic_copy,
    atomic_write,
    atomic_write_json,
    atomic_write_jsonl,
    write_trec_run,
)
from evalframe.core.jsoncodec import loads as json_loads
from evalframe.core.messages import warn
from evalframe.core.reader import (
    RunColumns,
    read_jsonl,
    read_run_columns,
    read_trec_run,
    require_file,
)
from evalframe.core.store import cache_folder
from evalframe.core.types import Corpus, Ranking, Run, document_hash
from evalframe.plugin.hooks import SweepJob

if TYPE_CHECKING:
    from evalframe.assess.results import Evaluation

__all__ = [
    "FAIL",
    "LAYOUT",
    "NEGATIVE",
    "PASS",
    "UNSCORED",
    "WARN",
    "FileStamp",
    "RunData",
    "RunFolder",
    "StatusRule",
    "SweepFolder",
    "SweepJob",
    "document_hash",
    "is_export_name",
    "per_query_records",
    "query_status",
    "stated_queries",
    "warn_if_records_lost",
]

#: The version of the run-folder layout this evalframe writes (``summary.json``'s ``layout``).
LAYOUT = 1

PASS, WARN, FAIL, NEGATIVE = "✓", "⚠", "✗", "–"
#: A query the criterion left out (``missing_query: skip``): no value, so not "in between".
UNSCORED = "○"


class StatusRule(Protocol):
    """How a query's status mark is decided (``report:`` in the config satisfies it)."""

    @property
    def criterion(self) -> str: ...
    @property
    def pass_at(self) -> float: ...
    @property
    def fail_below(self) -> float: ...


def query_status(value: float | None, is_negative: bool, rule: StatusRule) -> str:
    """✓ at or above ``pass_at``, ✗ below ``fail_below``, ⚠ between; – for a negative
    example; ○ when the criterion has no value for the query (a policy skipped it)."""
    if is_negative:
        return NEGATIVE
    if value is None or math.isnan(value):
        return UNSCORED
    if value >= rule.pass_at:
        return PASS
    if value < rule.fail_below:
        return FAIL
    return WARN


def _picker(positions: list[int]) -> Callable[[Sequence[Any]], list[Any]]:
    """``lambda xs: [xs[j] for j in positions]``, gathered in C (``itemgetter``)."""
    if len(positions) < 2:  # itemgetter of one position returns the item, of none fails
        return lambda xs: [xs[j] for j in positions]
    get = operator.itemgetter(*positions)
    return lambda xs: list(get(xs))


def _extras(ranking: Any) -> dict[str, Any]:
    """What a RAG or recommender system reported beside its ranking, when it did."""
    if ranking is None:
        return {}
    fields = ("confidence", "answer", "tokens", "tool_calls")
    return {f: getattr(ranking, f) for f in fields if getattr(ranking, f) is not None}


def per_query_records(evaluation: Evaluation, rule: StatusRule) -> list[dict[str, Any]]:
    """One record per golden query: values, status, expected and retrieved ids.

    Retrieved ids and scores are listed in the rank order the metrics used
    (``metrics.policies.ties``), so a reader sees the ranking that was scored.
    """
    from evalframe.metrics.columns import run_rows
    from evalframe.metrics.order import block_rank_order

    by_id = evaluation.golden.by_id()
    crit = next((m for m in evaluation.metrics if str(m) == rule.criterion), None)
    pol = evaluation.policies
    query_ids = evaluation.scores.query_ids
    run = evaluation.run
    # The whole run in rank order in one sort (a run file's rows, or the rankings
    # flattened once for the engine): the rankings it leaves in place, most of them,
    # are listed as given, and only the others are reordered.
    rows = run_rows(run)
    order, moved = block_rank_order(
        rows.counts, rows.scores, rows.doc_ids, pol.ties, pol.score_precision
    )
    reordered = moved.tolist()
    ends = np.cumsum(rows.counts).tolist()
    at = {qid: i for i, qid in enumerate(rows.query_ids)}
    # Python floats once per metric (tolist), not a NumPy scalar converted per query
    columns = [
        (str(m), np.asarray(v, dtype=np.float64).tolist())
        for m, v in evaluation.scores.values.items()
    ]
    slice_fields = evaluation.slice_fields
    records: list[dict[str, Any]] = []
    with gc_paused():  # 10k records of dicts and lists, none in a cycle
        for i, qid in enumerate(query_ids):
            gq = by_id[qid]
            values = {name: v[i] for name, v in columns}
            ranking = run.rankings.get(qid)
            if ranking is None:
                doc_ids, scores = [], []
            elif not reordered[at[qid]]:
                doc_ids, scores = list(ranking.doc_ids), list(ranking.scores)
            else:
                j = at[qid]
                start = ends[j] - len(ranking.doc_ids)
                pick = _picker((order[start : ends[j]] - start).tolist())
                doc_ids, scores = pick(ranking.doc_ids), pick(ranking.scores)
            value = values.get(str(crit)) if crit is not None else None
            relevant = gq.relevant
            records.append(
                {
                    "query_id": qid,
                    "text": gq.text,
                    "slices": {f: gq.metadata.get(f) for f in slice_fields},
                    "metrics": values,
                    "status": query_status(value, not relevant, rule),
                    "expected": sorted(relevant),
                    "judgments": dict(sorted(gq.judgments.items())),
                    "retrieved": doc_ids,
                    "scores": scores,
                    "missing": ranking is None,
                    **_extras(ranking),
                }
            )
    return records


#: The JSON type of each field of ``summary.json`` that readers look into (``compare``,
#: ``report``, ``rescore``), as every version writes it; None where it may be null.
_SUMMARY_SHAPE: dict[str, tuple[type, ...]] = {
    "experiment": (str,),
    "golden_set": (dict,),
    "corpus": (dict, type(None)),
    "baseline": (dict, type(None)),
    "metrics": (list,),
    "headline": (list, type(None)),
    "labels": (dict, type(None)),
    "policies": (dict,),
    "counts": (dict,),
    "overall": (dict,),
    "slices": (dict,),
    "by_slice": (dict,),
    "gates_passed": (bool,),
    "verdict": (str, type(None)),
    "analysis": (dict, type(None)),
    "run_file": (dict, type(None)),
}
_SHARD_SHAPE: dict[str, tuple[type, ...]] = {
    "shard": (dict,),
    "golden_set": (dict,),
    "queries": (list,),
}
_JSON_TYPES = {dict: "an object", list: "an array", str: "a string", bool: "true or false"}


def _check_shape(data: dict[str, Any], shape: dict[str, tuple[type, ...]], path: Path) -> None:
    """A field of the wrong JSON type (a hand edit, a merge conflict resolved badly) is
    a located error naming it, not a crash where a reader looks into it (exit 3)."""
    for name, kinds in shape.items():
        if name not in data:
            continue  # an older folder's: the readers fall back
        value = data[name]
        if not isinstance(value, kinds) or (bool not in kinds and isinstance(value, bool)):
            wanted = " or ".join(
                "null" if k is type(None) else _JSON_TYPES.get(k, k.__name__) for k in kinds
            )
            raise DataError(
                f"{name} is not as evalframe writes it",
                path=path,
                key=name,
                expected=wanted,
                got=repr(value)[:80],
                hint="restore the file from the run (or re-run it); it was edited by hand",
            )


def stated_queries(summary: dict[str, Any]) -> int | None:
    """How many golden queries ``summary.json`` says the run scored: ``per_query.jsonl``
    holds one record for each. None when the summary does not say (an older folder)."""
    golden = summary.get("golden_set")
    stated = golden.get("queries") if isinstance(golden, dict) else None
    return stated if isinstance(stated, int) and not isinstance(stated, bool) else None


def warn_if_records_lost(source: Path, count: int, summary: dict[str, Any], then: str) -> None:
    """Say so when ``per_query.jsonl`` (``source``) holds ``count`` records where the
    run's summary counts another number of queries (records lost, or added by hand);
    ``then``: what the reader does with the records it has. Readers that only show
    the folder (``compare``, ``report``) warn; ``rescore``, which writes it again,
    refuses (:meth:`RunFolder.read_run`)."""
    stated = stated_queries(summary)
    if stated is not None and stated != count:
        how = "the folder lost records" if count < stated else "records were added"
        warn(
            f"{source}: {count} per-query records, but the run's summary counts "
            f"{stated} queries ({how} since the run wrote it); {then}"
        )


@dataclass(frozen=True)
class RunData:
    """A stored run as the comparison and the baseline see it: per-query values and rankings."""

    name: str
    path: Path
    query_ids: tuple[str, ...]
    values: dict[str, dict[str, float]]  # metric -> query id -> value (NaN: skipped)
    slices: dict[str, dict[str, str]]  # query id -> field -> label
    retrieved: dict[str, list[str]]
    expected: dict[str, list[str]]
    golden_hash: str | None
    policies: dict[str, Any]
    metrics: tuple[str, ...] = ()
    #: the run's headline metrics (``metrics.headline``); older runs: their first three
    headline: tuple[str, ...] = ()
    #: the run's display names, {canonical: label} (``metrics.labels``)
    labels: Mapping[str, str] = dataclasses.field(default_factory=dict)
    #: each query's judgments, {doc id: grade}, as the run recorded them (tells a
    #: relabelled query apart when two runs' golden sets differ)
    judgments: dict[str, dict[str, int]] = dataclasses.field(default_factory=dict)

    def renamed(self, name: str) -> RunData:
        """The same data under another display name."""
        return dataclasses.replace(self, name=name)

    @classmethod
    def from_records(
        cls,
        records: Iterator[tuple[int | None, dict[str, Any]]],
        summary: dict[str, Any],
        *,
        name: str,
        path: Path,
        source: Path | None = None,
    ) -> RunData:
        """Build from per-query records (as written to, or read from, ``per_query.jsonl``)."""
        values: dict[str, dict[str, float]] = {}
        slices: dict[str, dict[str, str]] = {}
        retrieved: dict[str, list[str]] = {}
        expected: dict[str, list[str]] = {}
        judgments: dict[str, dict[str, int]] = {}
        ids: list[str] = []
        first_at: dict[str, int | None] = {}
        for line, record in records:
            try:
                qid = str(record["query_id"])
                if qid in first_at:  # a comparison would pair it twice
                    raise DataError(
                        f"query {qid!r} has two records (first at line {first_at[qid]})",
                        path=source,
                        line=line,
                        expected="one record per query, as evalframe writes them",
                        hint="restore the file from the run (or re-run); it was edited by hand",
                    )
                first_at[qid] = line
                for metric, value in record["metrics"].items():
                    values.setdefault(metric, {})[qid] = math.nan if value is None else float(value)
                slices[qid] = {
                    k: "unset" if v is None else str(v) for k, v in record.get("slices", {}).items()
                }
                retrieved[qid] = [str(d) for d in record.get("retrieved", [])]
                expected[qid] = [str(d) for d in record.get("expected", [])]
                judged = record.get("judgments")
                if isinstance(judged, dict):
                    judgments[qid] = judged
            except (KeyError, TypeError, ValueError, AttributeError):
                raise DataError(
                    "not a per-query record written by evalframe", path=source, line=line
                ) from None
            ids.append(qid)
        if source is not None:
            warn_if_records_lost(source, len(ids), summary, "the records are compared as they are")
        return cls(
            name=name,
            path=path,
            query_ids=tuple(ids),
            values=values,
            slices=slices,
            retrieved=retrieved,
            expected=expected,
            golden_hash=summary.get("golden_set", {}).get("content_hash"),
            policies=summary.get("policies", {}),
            metrics=tuple(summary.get("metrics", [])),
            headline=tuple(summary.get("headline") or summary.get("metrics", [])[:3]),
            labels=labels if isinstance(labels := summary.get("labels"), dict) else {},
            judgments=judgments,
        )


class FileStamp(NamedTuple):
    """A file of an earlier run as a new run found it in the folder, before writing there
    (:meth:`RunFolder.run_files_state`): the file is still the earlier run's while its inode
    and modification time are these. ``sha256`` is set for an exporter's file: the digest
    the earlier run recorded for it, which its bytes must still have to be removed."""

    inode: int
    mtime_ns: int
    sha256: str | None = None


@dataclass(frozen=True)
class RunFolder:
    """A run's folder on disk: the names of its files, and reading and writing them."""

    path: Path

    CONFIG: ClassVar[str] = "config.yaml"
    RUN: ClassVar[str] = "run.trec"
    PER_QUERY: ClassVar[str] = "per_query.jsonl"
    METRICS: ClassVar[str] = "metrics.json"
    HEADLINE: ClassVar[str] = "headline.json"
    TIMINGS: ClassVar[str] = "timings.json"
    GATES: ClassVar[str] = "gates.json"
    SUMMARY: ClassVar[str] = "summary.json"
    COMPARISON: ClassVar[str] = "comparison.json"
    COMPARISON_MD: ClassVar[str] = "comparison.md"
    JOB: ClassVar[str] = "job.json"
    CORPUS_MANIFEST: ClassVar[str] = "corpus_manifest.json"
    REPORT_HTML: ClassVar[str] = "report.html"
    SUMMARY_MD: ClassVar[str] = "summary.md"
    CALIBRATION: ClassVar[str] = "calibration.json"
    BENEFIT: ClassVar[str] = "benefit.json"
    SHARD: ClassVar[str] = "shard.json"
    RANKINGS: ClassVar[str] = "rankings.jsonl"
    #: Marks a folder a run is writing, or one that stopped before it finished: made just
    #: before the run's first file, in a folder holding no finished run
    #: (:meth:`mark_unfinished`), removed once ``summary.json`` is written (which marks a
    #: finished run). It tells an interrupted
    #: run's files, which the next run written there may replace, from a user's files
    #: of the same names, which it may not.
    UNFINISHED: ClassVar[str] = ".evalframe-unfinished"
    #: A tracker's record of the run that it could not deliver yet is kept in the run's
    #: folder as ``<tracker>`` + this (the MLflow plugin's ``mlflow_pending.json``): a
    #: folder that holds one is never replaced whole (:meth:`undelivered`), or the record
    #: would go with it.
    UNDELIVERED_SUFFIX: ClassVar[str] = "_pending.json"
    #: The same record once delivered (``mlflow_synced.json``). A folder that holds
    #: nothing but records is what a tracked run that failed left: a rescore or merge
    #: given it as ``--out`` replaces it as it would an earlier run (:meth:`only_records`).
    DELIVERED_SUFFIX: ClassVar[str] = "_synced.json"
    #: Every name the run folder's own files use (an export may not take one).
    OWN_FILES: ClassVar[frozenset[str]] = frozenset(
        {
            CONFIG,
            RUN,
            PER_QUERY,
            METRICS,
            HEADLINE,
            GATES,
            SUMMARY,
            TIMINGS,
            COMPARISON,
            COMPARISON_MD,
            JOB,
            CORPUS_MANIFEST,
            REPORT_HTML,
            SUMMARY_MD,
            CALIBRATION,
            BENEFIT,
            SHARD,
            RANKINGS,
        }
    )
    #: What a baseline keeps of a run.
    BASELINE_FILES: ClassVar[tuple[str, ...]] = (PER_QUERY, METRICS, SUMMARY, CONFIG)
    #: What a baseline keeps of a run when the run has it (a run without a corpus has
    #: no manifest; runs before the manifest existed have none either).
    BASELINE_OPTIONAL: ClassVar[tuple[str, ...]] = (CORPUS_MANIFEST,)

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", Path(self.path))

    @classmethod
    def is_run(cls, path: Path) -> bool:
        """Whether ``path`` looks like a finished run's folder (it has a summary)."""
        return (Path(path) / cls.SUMMARY).is_file()

    def file(self, name: str) -> Path:
        return self.path / name

    def require(self, name: str, what: str) -> Path:
        """``name`` in the folder, or a located error; a folder of runs (``outputs/bob``,
        one run per timestamp) gets a hint naming its newest run."""
        try:
            return require_file(self.path / name, what=what)
        except DataError as exc:
            runs = self.runs_inside()
            if not runs:
                if self.path.is_file():  # a file where the run folder belongs
                    raise DataError(
                        "a file, not a run folder",
                        path=self.path,
                        expected="a run folder (config.yaml, run.trec, summary.json)",
                        hint="give the folder the run printed after 'Saved results to:'",
                    ) from None
                if self.path.is_dir() and any(self.path.iterdir()) and name != self.SUMMARY:
                    # the right folder, one of its files gone: "check the path" misled
                    raise DataError(
                        exc.message,
                        path=exc.path,
                        expected=f"the {name} the run wrote into {self.path}",
                        hint=f"restore {name} from where the folder came (a copy, `dvc "
                        "pull`, git), or run the experiment again",
                    ) from None
                raise
            newest = max(runs, key=lambda r: r.name)
            raise DataError(
                exc.message,
                path=exc.path,
                expected="a run folder (one with summary.json)",
                got=f"{self.path}, a folder of {len(runs)} run(s)",
                hint=f"give one of its runs, e.g. the newest: {newest}",
            ) from None

    def runs_inside(self) -> list[Path]:
        """The run folders directly inside this one (a Hydra ``outputs/<experiment>``)."""
        if not self.path.is_dir():
            return []
        return [p for p in self.path.iterdir() if p.is_dir() and self.is_run(p)]

    # -- reading ---------------------------------------------------------------

    def _json(self, name: str, what: str) -> dict[str, Any]:
        path = self.require(name, what)
        try:
            # orjson by json's rules (core.jsoncodec): timings.json and the corpus
            # manifest of a 10k run are megabytes
            data = json_loads(path.read_bytes())
        except ValueError as exc:
            raise DataError(f"the {what} is not valid JSON ({exc})", path=path) from None
        if not isinstance(data, dict):
            raise DataError(f"the {what} must be a JSON object", path=path)
        return data

    def summary(self) -> dict[str, Any]:
        """``summary.json``, refused when a newer evalframe wrote it in a layout we cannot read."""
        data = self._json(self.SUMMARY, "run summary")
        layout = data.get("layout", 1)
        if isinstance(layout, bool) or not isinstance(layout, int):
            raise DataError(
                "layout (the version of the run folder's format) must be an integer",
                path=self.file(self.SUMMARY),
                key="layout",
                expected=f"a whole number (this evalframe writes layout {LAYOUT})",
                got=repr(layout),
                hint="restore the file from the run (or re-run it); it was edited by hand",
            )
        if layout > LAYOUT:
            raise DataError(
                f"this run folder has layout {layout!r}, newer than this evalframe reads "
                f"(layout {LAYOUT})",
                path=self.file(self.SUMMARY),
                hint="upgrade evalframe to read it",
            )
        _check_shape(data, _SUMMARY_SHAPE, self.file(self.SUMMARY))
        return data

    def metrics(self) -> dict[str, Any]:
        return self._json(self.METRICS, "run metrics")

    def headline(self) -> list[str]:
        """The run's headline metrics (canonical strings), oldest runs: its first three metrics."""
        summary = self.summary()
        names = summary.get("headline")
        if isinstance(names, list) and names:
            return [str(n) for n in names]
        return [str(n) for n in summary.get("metrics", [])[:3]]

    def timings(self) -> dict[str, Any]:
        """``timings.json`` (latency, cache hits); empty when the run kept none."""
        return _read_json(self.file(self.TIMINGS))

    def gates(self) -> dict[str, Any]:
        """``gates.json``, or an empty verdict list when the run wrote none."""
        if not self.file(self.GATES).is_file():
            return {}
        return self._json(self.GATES, "run gates")

    def comparison(self) -> dict[str, Any] | None:
        if not self.file(self.COMPARISON).is_file():
            return None
        return self._json(self.COMPARISON, "comparison")

    def corpus_manifest(self) -> dict[str, Any] | None:
        """``corpus_manifest.json`` (None when the run had no corpus or predates it)."""
        if not self.file(self.CORPUS_MANIFEST).is_file():
            return None
        data = self._json(self.CORPUS_MANIFEST, "corpus manifest")
        if not isinstance(data.get("documents"), dict):
            raise DataError(
                "the corpus manifest has no 'documents' mapping of id to hash",
                path=self.file(self.CORPUS_MANIFEST),
            )
        return data

    def config(self) -> dict[str, Any]:
        """``config.yaml`` as plain data (empty when absent or not a mapping)."""
        path = self.file(self.CONFIG)
        if not path.is_file():
            return {}
        import yaml

        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            raise DataError(f"the run config is not valid YAML ({exc})", path=path) from None
        return data if isinstance(data, dict) else {}

    def overrides(self) -> tuple[str, ...]:
        """The Hydra overrides the run was started with (empty outside Hydra)."""
        return _overrides(self.path)

    def calibration(self) -> dict[str, Any] | None:
        """``calibration.json`` (the reliability diagram's data), or None when not computed."""
        if not self.file(self.CALIBRATION).is_file():
            return None
        return self._json(self.CALIBRATION, "calibration results")

    def benefit(self) -> dict[str, Any] | None:
        """``benefit.json`` (the A/B benefit table), or None when not computed."""
        if not self.file(self.BENEFIT).is_file():
            return None
        return self._json(self.BENEFIT, "benefit results")

    def per_query(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """``(line, record)`` for each record of ``per_query.jsonl``."""
        path = self.require(self.PER_QUERY, "per-query results")
        for line, record in read_jsonl(path, what="per-query results", unique_keys=False):
            if not isinstance(record, dict):
                raise DataError("not a per-query record written by evalframe", path=path, line=line)
            for field in ("metrics", "slices"):
                if not isinstance(record.get(field) or {}, dict):
                    raise DataError(
                        f"query {record.get('query_id')!r}: {field} must be a mapping",
                        path=path,
                        line=line,
                        key=field,
                        got=repr(record.get(field)),
                        expected="a JSON object of name to value, as evalframe writes it",
                        hint="restore the file from the run (or re-run it); it was edited by hand",
                    )
            ids, scores = record.get("retrieved"), record.get("scores")
            if isinstance(ids, list) and isinstance(scores, list) and len(ids) != len(scores):
                raise DataError(
                    f"query {record.get('query_id')!r} lists {len(ids)} retrieved ids but "
                    f"{len(scores)} scores",
                    path=path,
                    line=line,
                    expected="one score per retrieved id, as evalframe writes them",
                    hint="restore the file from the run (or re-run it); it was edited by hand",
                )
            yield line, record

    def data(self, name: str | None = None) -> RunData:
        """Per-query values and rankings, for a comparison or a baseline."""
        summary = self.summary()
        return RunData.from_records(
            self.per_query(),
            summary,
            name=name or self.path.name,
            path=self.path,
            source=self.file(self.PER_QUERY),
        )

    def run(self, cache_dir: Path | None = None) -> Run:
        """The rankings as the retriever returned them (:meth:`read_run`)."""
        return self.read_run(cache_dir)[0]

    def read_run(self, cache_dir: Path | None = None) -> tuple[Run, bool]:
        """The rankings as the retriever returned them, with latencies, empty rankings
        and missing queries restored; and whether ``run.trec`` holds exactly them (it
        may then be kept as it is, rather than written again from them).

        ``cache_dir``: where a large ``run.trec`` keeps its parsed columns, under its
        SHA-256 (:func:`run_columns`), so that the next rescore of it reads them
        instead of parsing the file again.

        ``per_query.jsonl`` keeps what ``run.trec`` cannot say (a query that was
        answered with nothing) and ``timings.json`` the latency (older folders
        kept it in ``per_query.jsonl``); ``run.trec`` alone is the fallback.
        ``per_query.jsonl`` lists each ranking in the order it was scored,
        which under ``ties: trec_eval`` is not the retriever's order among
        equal scores; ``run.trec`` keeps the retriever's order, so it is
        restored from there. Re-scoring then gives what a fresh run gives
        under either tie rule.
        """
        if not self.file(self.PER_QUERY).is_file():
            return read_trec_run(self.require(self.RUN, "stored run")), True
        alone = self._run_file_alone(cache_dir)
        if alone is not None:
            return alone, True
        given = self._given_order()
        latency = self.timings().get("per_query_ms")
        latency = latency if isinstance(latency, dict) else {}
        rankings: dict[str, Ranking] = {}
        first_at: dict[str, int] = {}
        for line, record in self.per_query():
            try:
                qid = str(record["query_id"])
                if qid in first_at:  # the second would replace the first without a word
                    raise DataError(
                        f"query {qid!r} has two records (first at line {first_at[qid]})",
                        path=self.file(self.PER_QUERY),
                        line=line,
                        expected="one record per query, as evalframe writes them",
                        hint="restore the file from the run (or re-run); it was edited by hand",
                    )
                first_at[qid] = line
                if record.get("missing"):
                    continue
                doc_ids = tuple(str(d) for d in record["retrieved"])
                stored = given.get(qid)
                extras = {f: record.get(f) for f in _EXTRAS}
                if qid in latency:  # timings.json keeps it; older folders kept it here
                    extras["latency_ms"] = latency[qid]
                if stored is not None and (
                    stored.doc_ids == doc_ids or sorted(stored.doc_ids) == sorted(doc_ids)
                ):
                    if _plain(extras):  # run.trec's ranking, already validated: no second look
                        rankings[qid] = stored.model_copy(update=extras)
                        continue
                    doc_ids = stored.doc_ids
                    scores = stored.scores
                else:
                    scores = tuple(float(s) for s in record["scores"])
                rankings[qid] = Ranking(
                    query_id=qid,
                    doc_ids=doc_ids,
                    scores=scores,
                    latency_ms=extras["latency_ms"],
                    confidence=record.get("confidence"),
                    answer=record.get("answer"),
                    tokens=record.get("tokens"),
                    tool_calls=record.get("tool_calls"),
                )
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise DataError(
                    "this is not a per-query record written by evalframe",
                    path=self.file(self.PER_QUERY),
                    line=line,
                    got=f"{type(exc).__name__}: {exc}",
                ) from None
        self.check_all_records(len(first_at))
        run = Run(rankings=rankings, metadata={"source": str(self.path), "rescored": True})
        return run, False

    def check_all_records(self, count: int) -> None:
        """Refuse ``per_query.jsonl``'s ``count`` records when they are not the run's:
        fewer (or more) than ``summary.json`` counts queries, or none at all. A rescore
        reads the rankings from them; a query without its record would be scored as
        missing, and the folder written again without it. An older summary that does
        not count its queries is trusted, unless the file holds no record at all."""
        summary = self.summary() if self.is_run(self.path) else {}
        stated = stated_queries(summary)
        if count == stated or (stated is None and count > 0):
            return
        source = self.file(self.PER_QUERY)
        facts = summary.get("run_file")
        gone = (
            f"; and {self.RUN}, which the run wrote ({self.SUMMARY} records its SHA-256), is "
            "gone, so their rankings cannot be read from it either"
            if isinstance(facts, dict) and facts.get("sha256") and not self.file(self.RUN).is_file()
            else ""
        )
        if stated is None:
            said = f"{self.PER_QUERY} holds no records: the folder lost them{gone}"
        elif count < stated:
            said = (
                f"{self.PER_QUERY} holds {count} records where the run's {self.SUMMARY} counts "
                f"{stated} queries: the folder lost records{gone}"
            )
        else:
            said = (
                f"{self.PER_QUERY} holds {count} records where the run's {self.SUMMARY} counts "
                f"{stated} queries: records were added to it since the run wrote it"
            )
        raise DataError(
            said,
            path=source,
            expected="one record per golden query the run scored, as evalframe wrote them",
            hint=f"restore {self.path} from where it came (a copy, `dvc pull`, git), or run "
            "the experiment again (a rescore or a baseline takes only the records a run kept)",
        )

    def _run_file_alone(self, cache_dir: Path | None = None) -> Run | None:
        """The run from ``run.trec`` and ``summary.json``'s ``run_file`` facts alone,
        without reading ``per_query.jsonl`` (34 MB at 10k queries of 100: half a second).

        Only when the facts say ``per_query.jsonl`` adds nothing to ``run.trec``
        (no ranking carried an answer, a confidence or a cost) and the file is
        byte for byte the one they describe; the rankings answered with nothing,
        which a TREC file cannot hold, are listed there. None otherwise (an
        older folder, a hand-edited ``run.trec``): the caller reads both.
        """
        if not self.is_run(self.path):
            return None
        facts = self.summary().get("run_file")
        if not isinstance(facts, dict) or facts.get("extras") is not False:
            return None
        empty, digest = facts.get("empty"), facts.get("sha256")
        path = self.file(self.RUN)
        if not isinstance(empty, list) or not isinstance(digest, str) or not path.is_file():
            return None
        if file_sha256(path) != digest:
            warn(
                f"{path} changed since the run wrote it (its SHA-256 is not the one "
                f"{self.SUMMARY} records): its rankings are read beside {self.PER_QUERY}'s, "
                "which win where the two disagree"
            )
            return None
        latency = self.timings().get("per_query_ms")
        latency = latency if isinstance(latency, dict) else {}
        try:
            read = run_columns(path, digest, cache_dir).to_run(latency)
            rankings = dict(read.rankings)
            for qid in map(str, empty):
                ms = latency.get(qid)
                rankings.setdefault(qid, Ranking(query_id=qid, latency_ms=ms))
        except (DataError, ValueError, TypeError):
            return None  # per_query.jsonl says more, or says what is wrong
        run = Run.model_construct(
            rankings=rankings, metadata={"source": str(self.path), "rescored": True}
        )
        rows = read.rows()
        if rows is not None:  # the file's rows, and no row for each ranking added empty
            added = len(rankings) - len(rows.query_ids)
            run.keep_rows(
                dataclasses.replace(
                    rows,
                    query_ids=tuple(rankings),
                    counts=np.concatenate([rows.counts, np.zeros(added, dtype=np.int64)]),
                )
            )
        return run

    def _given_order(self) -> dict[str, Ranking]:
        """``run.trec``'s rankings (the retriever's order) when they may differ from
        ``per_query.jsonl``'s; empty when the run was scored under ``ties: given``
        (the two agree) or has no readable ``run.trec`` (a baseline keeps none)."""
        policies = self.summary().get("policies", {}) if self.is_run(self.path) else {}
        if policies.get("ties") == "given" or not self.file(self.RUN).is_file():
            return {}
        try:
            return dict(read_trec_run(self.file(self.RUN)).rankings)
        except DataError as exc:  # a hand-edited run.trec: per_query.jsonl's order still scores
            warn(
                f"{self.file(self.RUN)}{f':{exc.line}' if exc.line else ''} cannot be read "
                f"({exc.message}); the rankings are read from {self.PER_QUERY} alone"
            )
            return {}

    def job(self) -> dict[str, Any]:
        """``job.json`` of a sweep job (empty when absent or unreadable)."""
        return _read_json(self.file(self.JOB))

    @classmethod
    def holds_run(cls, folder: Path) -> bool:
        """Whether ``folder`` is a folder an evalframe run wrote (of any layout): its
        summary.json is a run's, not any file of that name. One written before the
        ``layout`` key existed has the keys every run's summary has had."""
        try:
            summary = json.loads(cls(folder).file(cls.SUMMARY).read_bytes())
        except (OSError, ValueError):
            return False
        if not isinstance(summary, dict) or "experiment" not in summary:
            return False
        return "layout" in summary or {"golden_set", "overall"} <= summary.keys()

    def undelivered(self) -> list[str]:
        """The names of the trackers' records in this folder not delivered yet
        (:attr:`UNDELIVERED_SUFFIX`), sorted; none for a folder that is not there."""
        try:
            names = [p.name for p in self.path.iterdir() if p.is_file()]
        except OSError:
            return []
        return sorted(n for n in names if n.endswith(self.UNDELIVERED_SUFFIX))

    def only_records(self) -> bool:
        """Whether the folder holds trackers' records and nothing else (a tracked rescore
        or merge that failed leaves its record of the failed run, and no run)."""
        try:
            names = [p.name for p in self.path.iterdir()]
        except OSError:
            return False
        ends = (self.UNDELIVERED_SUFFIX, self.DELIVERED_SUFFIX)
        return bool(names) and all(n.endswith(ends) and n != self.SUMMARY for n in names)

    @classmethod
    def is_shard(cls, path: Path) -> bool:
        """Whether ``path`` holds a finished shard (``shard.json`` is written last; a shard
        run again into it and stopped part way leaves the marker beside the old one)."""
        return (Path(path) / cls.SHARD).is_file() and not (Path(path) / cls.UNFINISHED).exists()

    def shard(self) -> dict[str, Any]:
        """``shard.json``: which slice, and what it was retrieved with."""
        data = self._json(self.SHARD, "shard description")
        _check_shape(data, _SHARD_SHAPE, self.file(self.SHARD))
        layout = data.get("layout", 1)
        if not isinstance(layout, int) or layout > LAYOUT:
            raise DataError(
                f"this shard has layout {layout!r}, newer than this evalframe reads "
                f"(layout {LAYOUT})",
                path=self.file(self.SHARD),
                hint="merge it with the evalframe version that wrote it",
            )
        return data

    def rankings(self) -> dict[str, Ranking | None]:
        """``rankings.jsonl``: query id -> its ranking as retrieved (None: no answer)."""
        path = self.require(self.RANKINGS, "shard rankings")
        found: dict[str, Ranking | None] = {}
        for line, record in read_jsonl(path, what="shard rankings", unique_keys=False):
            try:
                qid = str(record["query_id"])
                raw = record["ranking"]
                ranking = None if raw is None else Ranking.model_validate(raw)
            except (KeyError, TypeError, ValueError) as exc:
                raise DataError(
                    "not a shard ranking written by evalframe",
                    path=path,
                    line=line,
                    got=f"{type(exc).__name__}: {str(exc).splitlines()[0]}",
                ) from None
            if qid in found:
                raise DataError(f"query {qid!r} appears twice", path=path, line=line)
            found[qid] = ranking
        return found

    # -- writing (each file atomically: temp file, then rename) ---------------

    def write_json(self, name: str, payload: Any) -> Path:
        return atomic_write_json(self.file(name), payload)

    def prepare(self, key: str = "output.dir", *, shard: bool = False) -> None:
        """Make the folder, and check that the run can write every file of its own there.

        Called before a run retrieves anything and again before it writes: a folder
        named like one of the run's files (``summary.json/``) failed the rename of
        that file, after the files before it were written (exit 3, a run folder
        without its summary); a folder that cannot be made (``/proc/x``) failed the
        same way. Both are the user's to fix: a located error, exit 2, nothing written.
        So is a folder holding a user's files under the run's own names
        (:meth:`_refuse_others_files`; ``shard``: a shard's folder, which may hold a
        finished shard to write over).
        """
        import errno

        from evalframe.core.errors import ConfigError

        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            if exc.errno in (errno.EEXIST, errno.ENOTDIR):
                raise  # a file in the way: said as such by the CLI (app.stderr)
            raise ConfigError(
                f"the run's folder {self.path} cannot be made: {exc.strerror or exc}",
                key=key,
                hint=f"set {key} to a folder you can write",
            ) from None
        blocked = sorted(n for n in self.OWN_FILES if (self.path / n).is_dir())
        if blocked:
            raise DataError(
                "this is a folder, where the run writes its file of that name"
                + (
                    f" ({len(blocked) - 1} more such: {', '.join(blocked[1:])})"
                    if blocked[1:]
                    else ""
                ),
                path=self.path / blocked[0],
                hint=f"move that folder away, or set {key} to another folder",
            )
        self._refuse_others_files(key, shard=shard)

    def mark_unfinished(self) -> None:
        """Mark the folder as a run's that has begun writing (:attr:`UNFINISHED`), just
        before its first file: what a run stopped part way leaves is then the next run's
        to write over. A finished run's folder keeps its ``summary.json`` until the new
        run's replaces it (written last), so it needs no marker."""
        marker = self.file(self.UNFINISHED)
        if not marker.is_file() and not self.holds_run(self.path):
            atomic_write(
                marker,
                "An evalframe run is writing this folder, or stopped before it finished "
                "(it has no summary.json). The next run written here replaces its files.\n",
            )

    def _refuse_others_files(self, key: str, *, shard: bool = False) -> None:
        """Refuse a folder holding files named like the run's own that no evalframe run
        wrote: ``hydra.run.dir=.`` in a project whose ``config.yaml`` or ``metrics.json``
        the run would write over, without a word. Accepted: a finished run's folder (its
        ``summary.json``, of any layout), a finished shard's for a shard (``shard``), an
        unfinished run's (:attr:`UNFINISHED`), and what ``dvc repro`` leaves of an
        earlier run (:meth:`_left_by_a_run`). A user's other files (notes, a README) are
        left where they are."""
        from evalframe.core.errors import ConfigError
        from evalframe.core.messages import shown

        taken = sorted(n for n in self.OWN_FILES if self.file(n).is_file())
        if not taken or self.file(self.UNFINISHED).is_file():
            return
        if shard:
            # a shard writes over a finished shard only: over a run, it would leave a
            # folder that is both (its run.trec cut to the shard's queries)
            if self.is_shard(self.path) and not self.holds_run(self.path):
                return
            unknown = taken
        elif self.holds_run(self.path):
            return
        else:
            unknown = self._not_left_by_a_run(taken)
            if not unknown:
                return  # `dvc repro` removed the earlier run's outputs, and left these
        # a job's folder is under its sweep's, at any depth (hydra.sweep.subdir=${a}/${b})
        in_sweep = any((up / SweepFolder.MARKER).is_file() for up in self.path.parents)
        where = "hydra.sweep.dir=multirun/NAME" if in_sweep else "hydra.run.dir=outputs/NAME"
        if shard and self.holds_run(self.path):
            said = "a finished run, which a shard would write over (a shard replaces a shard)"
        elif self.is_shard(self.path) and not shard:
            said = "a shard's files, which the run would write over"
        else:
            said = (
                "files under the names of the run's own files that are not an earlier "
                "evalframe run's: the run would write over them"
            )
        raise ConfigError(
            f"the run's folder {self.path} holds {said}",
            key=key,
            expected="a new folder, or an earlier shard's folder (with its shard.json) to "
            "write the shard over"
            if shard
            else "a new folder, or the folder of an earlier evalframe run (with its "
            "summary.json) to write the new run over",
            got=f"{len(unknown)} such file{'s' if len(unknown) > 1 else ''}: {shown(unknown, 4)}",
            hint=f"set {key} to a new folder (for `python -m evalframe`: {where}), or move "
            "those files away; if they are an evalframe run's that stopped before it "
            "finished, delete them",
        )

    def _not_left_by_a_run(self, taken: list[str]) -> list[str]:
        """Those of ``taken`` that are not what an earlier run left (:meth:`_left_by_a_run`).
        Every run writes ``timings.json``, which no DVC stage lists as an output: without
        one that reads as a run's, the rest is not a run's leftovers (``compare --out``
        writes a comparison of its own), unless it is a failed sweep job's ``job.json``."""
        if taken == [self.JOB] and self._left_by_a_run(self.JOB):
            return []
        if self.TIMINGS not in taken or not self._left_by_a_run(self.TIMINGS):
            return taken
        return [n for n in taken if not self._left_by_a_run(n)]

    #: The keys that tell an earlier run's JSON files from a user's of the same name.
    _SIGNATURES: ClassVar[dict[str, frozenset[str]]] = {
        TIMINGS: frozenset({"created", "git"}),
        COMPARISON: frozenset({"a", "b", "paired_queries", "metrics"}),
        CALIBRATION: frozenset({"n", "ece", "mce", "brier", "verdict"}),
        BENEFIT: frozenset({"arms", "tasks", "pairs", "rows"}),
        JOB: frozenset({"exit_code", "error", "sweep_id"}),
    }

    def _left_by_a_run(self, name: str) -> bool:
        """Whether ``name`` reads as a file of an earlier run that is no DVC output, as
        ``dvc repro`` leaves it: it removes a stage's outputs (``summary.json`` among them)
        before it runs the stage again, and leaves what differs on every run
        (``timings.json``, the page and its summary), what an experiment may not write
        (a comparison, the analyses' files, the ``exp`` stage's corpus manifest), and a
        failed sweep job's ``job.json``."""
        path = self.file(name)
        try:
            if name in self._SIGNATURES:
                data = json.loads(path.read_bytes())
                return isinstance(data, dict) and self._SIGNATURES[name] <= data.keys()
            with path.open("rb") as handle:
                head = handle.read(2048).decode("utf-8", "replace")
        except (OSError, ValueError):
            return False
        first = head.partition("\n")[0]
        if name == self.REPORT_HTML:
            return "<title>evalframe" in head
        if name == self.SUMMARY_MD:
            return " · evalframe · " in first
        if name == self.COMPARISON_MD:
            return first.startswith("## Comparison: ")
        if name == self.CORPUS_MANIFEST:
            return '"hash": "sha256 of the document text' in head
        return False

    def others_files(self) -> list[str]:
        """What in the folder is not a run's, sorted: a run's are its own files, Hydra's,
        trackers' records, the marker and the exports its summary recorded. A folder
        holding anything else (a run written into a user's project folder) is not a
        run's to replace whole (``rescore``/``merge --out``)."""
        try:
            entries = list(self.path.iterdir())
        except OSError:
            return []
        records = (self.UNDELIVERED_SUFFIX, self.DELIVERED_SUFFIX)
        exports = self.recorded_exports()
        return sorted(
            e.name
            for e in entries
            if not (
                e.name in self.OWN_FILES
                or e.name in exports
                or e.name in (".hydra", self.UNFINISHED)
                or e.name.endswith(records)
                or (e.suffix == ".log" and e.is_file())
            )
        )

    def recorded_exports(self) -> dict[str, str]:
        """The exporters' files the run in this folder wrote, as its ``summary.json`` records
        them (``exports``): name -> SHA-256 of the bytes written.

        Empty for a folder without a run, and for a run from before the record (an old
        folder's exports are not known as its own, so nothing of them is ever removed).
        A name an exporter could not have written (a folder, a dot file, a run file's
        name: a summary edited by hand) is left out, as is a digest that is not a string.
        """
        summary = _read_json(self.file(self.SUMMARY))
        record = summary.get("exports")
        if not ("layout" in summary and "experiment" in summary and isinstance(record, dict)):
            return {}
        return {
            name: digest
            for name, digest in record.items()
            if isinstance(digest, str) and is_export_name(name) and name not in self.OWN_FILES
        }

    def run_files_state(self) -> dict[str, FileStamp]:
        """What of a run is already in the folder: the run's own files (:attr:`OWN_FILES`)
        and the exports the earlier run recorded (:meth:`recorded_exports`), each stamped
        (:class:`FileStamp`). Taken before a run writes, so that :meth:`remove_stale` can
        tell a previous run's files from this run's."""
        exports = self.recorded_exports()
        state: dict[str, FileStamp] = {}
        for name in sorted(self.OWN_FILES | exports.keys()):
            try:
                stat = (self.path / name).stat()
            except OSError:
                continue
            state[name] = FileStamp(stat.st_ino, stat.st_mtime_ns, exports.get(name))
        return state

    def remove_stale(self, before: Mapping[str, FileStamp], written: Iterable[Path]) -> list[str]:
        """Remove what a previous run left in this folder that this run did not write.

        ``before`` is :meth:`run_files_state` taken before this run wrote anything,
        ``written`` the files this run wrote (or kept, as a rescore keeps its
        ``run.trec``). Removed are only the files that were there before, are
        untouched since and that the previous run wrote: its own files
        (:attr:`OWN_FILES`), and the exports its ``summary.json`` recorded whose bytes
        still have the digest it recorded (a user's file of that name, or the export
        edited since, stays). Nothing else in the folder is removed: a folder re-used
        by a run without a baseline loses the previous run's ``comparison.json``, and
        ``load`` no longer reads it as this run's; one re-used by another experiment
        loses the previous one's ``galaxy_eval.json``, and a user's notes stay. A
        folder of a run from before the record keeps its exports (they are not known).
        Called just before the run's ``summary.json`` is written (the previous
        run's page and comparison are gone before the folder reads as the new run),
        and again once its reporters are done; a run that fails before it leaves
        the previous run's files where they were.
        """
        kept = {Path(p).resolve() for p in written}
        removed = []
        for name, stamp in sorted(before.items()):
            if name not in self.OWN_FILES and stamp.sha256 is None:
                continue  # not a file of a run's: never removed
            path = self.path / name
            if path.resolve() in kept:
                continue
            try:
                stat = path.stat()
                if (stat.st_ino, stat.st_mtime_ns) != (stamp.inode, stamp.mtime_ns):
                    continue  # written since (by this run, or by hand)
                if not path.is_file():
                    continue
                if stamp.sha256 is not None:
                    with path.open("rb") as handle:
                        if hashlib.file_digest(handle, "sha256").hexdigest() != stamp.sha256:
                            continue
                path.unlink()
            except OSError:
                continue
            removed.append(name)
        return removed

    def write_jsonl(self, name: str, records: Any) -> Path:
        return atomic_write_jsonl(self.file(name), records)

    def write_text(self, name: str, text: str | bytes) -> Path:
        return atomic_write(self.file(name), text)

    def write_exports(
        self, files: Mapping[str, str | bytes]
    ) -> tuple[dict[str, Path], dict[str, str]]:
        """The exporters' files (checked plain new names, :func:`is_export_name`), each
        written atomically; before ``summary.json``, which holds the second value returned,
        the record of them (name -> SHA-256 of the bytes written, :meth:`recorded_exports`):
        by it the next run written into this folder knows them as this run's."""
        paths: dict[str, Path] = {}
        record: dict[str, str] = {}
        for name, content in files.items():
            data = content.encode("utf-8") if isinstance(content, str) else content
            paths[name] = self.write_text(name, data)
            record[name] = hashlib.sha256(data).hexdigest()
        return paths, record

    def write_run(self, run: Run, tag: str, *, stored: Path | None = None) -> Path:
        """``run.trec``. ``stored``: the run file the run was read from (``rescore``),
        kept as it is, or copied, instead of being written again line by line."""
        target = self.file(self.RUN)
        if stored is not None and _tag_of(stored) == tag:
            if target.resolve() != stored.resolve():
                atomic_copy(stored, target)
            return target
        return write_trec_run(target, run, tag=tag)

    def write_corpus_manifest(self, corpus: Corpus, *, stored: Path | None = None) -> Path:
        """Each document's :func:`document_hash`, one per line (so it diffs well).

        ``stored``: the manifest ``corpus`` was made from (``rescore``'s deferred
        corpus), kept as it is, or copied, rather than written again (100k
        documents: 50 ms)."""
        target = self.file(self.CORPUS_MANIFEST)
        if stored is not None:
            if target.resolve() != stored.resolve():
                atomic_copy(stored, target)
            return target
        payload = {
            "corpus": corpus.name,
            "content_hash": corpus.content_hash,
            "hash": "sha256 of the document text, first 12 hex digits",
            "documents": _document_hashes(corpus),
        }
        return self.write_text(
            self.CORPUS_MANIFEST, json.dumps(payload, indent=0, ensure_ascii=False) + "\n"
        )

    def write_rankings(self, query_ids: list[str], run: Run) -> Path:
        """``rankings.jsonl`` for ``query_ids``, in that order: each ranking exactly as
        retrieved (the retriever's order, float scores, latency and extras), or null."""
        records = [
            {
                "query_id": qid,
                "ranking": (
                    run.rankings[qid].model_dump(mode="json") if qid in run.rankings else None
                ),
            }
            for qid in query_ids
        ]
        return self.write_jsonl(self.RANKINGS, records)


def is_export_name(name: str) -> bool:
    """Whether an exporter may name a file so: a plain file name inside the run folder, not
    a dot file (a temp file's, Hydra's ``.hydra``). A run file's own name is refused apart
    (:attr:`RunFolder.OWN_FILES`)."""
    return Path(name).name == name and name not in ("", ".", "..") and not name.startswith(".")


#: What a per-query record keeps beside a ranking's ids and scores.
def run_file_facts(run: Run, path: Path) -> dict[str, Any]:
    """What ``summary.json`` says of ``run.trec`` (``run_file``), so a rescore can read the
    rankings from it alone: the file's SHA-256, the queries answered with nothing (no
    line in a TREC file), and whether any ranking carried what only ``per_query.jsonl``
    keeps (an answer, a confidence, tokens, tool calls)."""
    return {
        "sha256": file_sha256(path),
        "empty": [qid for qid, r in run.rankings.items() if not r.doc_ids],
        "extras": any(
            getattr(r, f) is not None for r in run.rankings.values() for f in _EXTRAS[1:]
        ),
    }


def file_sha256(path: Path) -> str:
    """SHA-256 of a file (a 45 MB run file: 25 ms), through one small reused buffer:
    large reads, freed at the end of a run, left 70 MB of the heap in the process.

    A rescore asks twice about its ``run.trec`` (to trust ``summary.json``'s facts,
    then to write them again): the digest is remembered for the process while
    the file's size, times and inode stay the same, as git's index trusts them,
    and, as git does, not for a file modified in the last second, whose next
    change could keep its modification time.
    """
    stat = Path(path).stat()
    seen = (
        str(Path(path).resolve()),
        stat.st_size,
        stat.st_mtime_ns,
        stat.st_ctime_ns,
        stat.st_ino,
    )
    digest = _DIGESTS.get(seen)
    if digest is None:
        with Path(path).open("rb") as handle:
            digest = hashlib.file_digest(handle, "sha256").hexdigest()
        if stat.st_mtime_ns < time.time_ns() - 1_000_000_000:
            _DIGESTS.clear()  # one file at a time is all a command asks twice about
            _DIGESTS[seen] = digest
    return digest


_DIGESTS: dict[tuple[str, int, int, int, int], str] = {}

#: The cache's folder of parsed run files (``evalframe cache info`` lists it as a kind).
COLUMNS_KIND = "columns"
#: Version of its entries' format, in their names: a new format never reads an old one.
_COLUMNS_FORMAT = 1
#: Only run files at least this large are kept: a smaller one parses in a few
#: milliseconds, and every entry costs about a third of its run file's size on disk.
_COLUMNS_MIN_BYTES = 4 << 20


def run_columns(path: Path, digest: str, cache_dir: Path | None) -> RunColumns:
    """``run.trec``'s columns, from the cache when a rescore has parsed this file before.

    The entry is named by the file's SHA-256 (``digest``, which the caller has
    checked), so it stands for these bytes only, whoever wrote them; it holds
    NumPy arrays and no pickle (:meth:`RunColumns.save`). A damaged or
    unreadable entry is parsed again and rewritten; a cache that cannot be
    written (read-only, full) costs the next rescore the parse, with a warning.
    Runs with non-ASCII ids are parsed every time (rare, and their reading may
    warn about what they hold, which a cached copy would keep quiet).
    """
    if cache_dir is None or path.stat().st_size < _COLUMNS_MIN_BYTES:
        return read_run_columns(path)
    entry = cache_dir / COLUMNS_KIND / f"{digest}.v{_COLUMNS_FORMAT}.npz"
    try:
        return RunColumns.load(entry, str(path))
    except FileNotFoundError:
        pass
    except (OSError, ValueError, EOFError, zipfile.BadZipFile):
        pass  # damaged (a disk error, an edit): parsed again below, and replaced
    columns = read_run_columns(path)
    if columns.ascii_only:
        buffer = io.BytesIO()
        columns.save(buffer)
        try:
            cache_folder(entry.parent, cache_dir)  # the cache folder tagged first
            atomic_write(entry, buffer.getvalue())
        except DataError as exc:  # a folder the cache cannot use: said, and parsed next time
            warn(
                f"could not keep the parsed {path.name} in the cache ({exc.message}); the "
                "next rescore of it parses it again"
            )
        except OSError as exc:
            warn(
                f"could not keep the parsed {path.name} in the cache {entry.parent} "
                f"({exc.strerror or exc}); the next rescore of it parses it again"
            )
    return columns


_EXTRAS = ("latency_ms", "confidence", "answer", "tokens", "tool_calls")
_EXTRA_TYPES = {
    "latency_ms": (int, float),
    "confidence": (int, float),
    "answer": (str,),
    "tokens": (int,),
    "tool_calls": (int,),
}


def _plain(extras: dict[str, Any]) -> bool:
    """Whether the extras can go into a Ranking unchecked (None, or the field's own type)."""
    return all(
        v is None or (isinstance(v, _EXTRA_TYPES[f]) and not isinstance(v, bool))
        for f, v in extras.items()
    )


def _tag_of(run_file: Path) -> str | None:
    """The run tag on a TREC run file's first line (None: empty or unreadable)."""
    try:
        with open(run_file, encoding="utf-8") as fh:
            fields = fh.readline().split()
    except (OSError, UnicodeDecodeError):
        return None
    return fields[5] if len(fields) == 6 else None


def _document_hashes(corpus: Corpus) -> dict[str, str]:
    """Each document's :func:`document_hash`; a deferred corpus knows them unread."""
    known = getattr(corpus.documents, "known_hashes", None)
    if known is not None:
        return dict(known)
    return {d.id: document_hash(d.text) for d in corpus.documents}


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json_loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


@dataclass(frozen=True)
class SweepFolder:
    """A ``-m`` sweep's folder: one run folder per job, plus the sweep's own marker."""

    path: Path
    #: ``{"id": hex, "started": unix seconds}``, written when the sweep starts. A
    #: folder reused by a second sweep (``hydra.sweep.dir=fixed``) keeps the first
    #: sweep's job folders; only jobs that carry the current id are this sweep's.
    MARKER: ClassVar[str] = ".evalframe-sweep.json"
    #: The page comparing the sweep's jobs (written when the sweep ends).
    REPORT_HTML: ClassVar[str] = "report.html"
    #: A tuning sweep's summary (:mod:`evalframe.app.tune`): the best trial beside its
    #: held-out figure, written before the sweep ends, so trackers can attach them.
    TUNING_JSON: ClassVar[str] = "tuning.json"
    TUNING_MD: ClassVar[str] = "tuning.md"

    def start(self) -> None:
        """Mark a new sweep in this folder."""
        self.path.mkdir(parents=True, exist_ok=True)
        atomic_write_json(self.path / self.MARKER, {"id": uuid.uuid4().hex, "started": time.time()})

    def marker(self) -> dict[str, Any]:
        return _read_json(self.path / self.MARKER)

    @staticmethod
    def record_job(job_dir: Path, exit_code: int, error: str | None = None) -> None:
        """Record how one sweep job ended, for :meth:`jobs` in the launching process.

        A ``job.json`` there that is not a sweep job's record (a user's own file in a
        folder the job was refused for) is not written over: OSError, which the caller
        says as a warning."""
        target = job_dir / RunFolder.JOB
        if target.exists() and "exit_code" not in _read_json(target):  # any version's has it
            raise OSError(f"{target} is not a sweep job's record; it is left as it is")
        sweep_id = _read_json(job_dir.parent / SweepFolder.MARKER).get("id")
        atomic_write_json(
            job_dir / RunFolder.JOB, {"exit_code": exit_code, "error": error, "sweep_id": sweep_id}
        )

    def _belongs(self, job_dir: Path, record: dict[str, Any], sweep: dict[str, Any]) -> bool:
        if not sweep.get("id"):
            return True  # a folder from before sweeps had ids: take every job
        if record:
            return bool(record.get("sweep_id") == sweep["id"])
        # no job.json: a job that crashed hard; it is ours if Hydra set it up after we started
        try:
            return (job_dir / ".hydra").stat().st_mtime >= float(sweep.get("started", 0)) - 1
        except OSError:
            return False

    def jobs(self) -> list[SweepJob]:
        """This sweep's job folders (named by job number), in job order."""
        found: list[SweepJob] = []
        if not self.path.is_dir():
            return found
        sweep = self.marker()
        for child in self.path.iterdir():
            if not (child.is_dir() and child.name.isdigit()):
                continue
            record = _read_json(child / RunFolder.JOB)
            if not self._belongs(child, record, sweep):
                continue
            summary = _read_json(child / RunFolder.SUMMARY)
            code = record.get("exit_code", summary.get("exit_code"))
            found.append(
                SweepJob(
                    num=int(child.name),
                    output_dir=child.resolve(),
                    overrides=_overrides(child),
                    exit_code=code if isinstance(code, int) else None,
                    summary=summary,
                    error=record.get("error"),
                )
            )
        return sorted(found, key=lambda j: j.num)


def _overrides(job_dir: Path) -> tuple[str, ...]:
    """The job's own overrides, from the ``.hydra/overrides.yaml`` Hydra writes."""
    path = job_dir / ".hydra" / "overrides.yaml"
    if not path.is_file():
        return ()
    from omegaconf import OmegaConf

    data = OmegaConf.to_container(OmegaConf.load(path))
    return tuple(str(x) for x in data) if isinstance(data, list) else ()
