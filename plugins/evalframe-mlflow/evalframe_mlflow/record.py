"""What one MLflow run will hold, as plain data written to disk before anything is sent.

A :class:`RunRecord` is built from the files a run left in its folder (or,
for a sweep's parent, from its jobs' folders). The same record is uploaded
at once or, when the tracking server cannot be reached, saved as
``mlflow_pending.json`` beside the run's outputs and uploaded later by
``evalframe sync``. Every record carries a random ``uid`` that is logged as
the tag ``evalframe.run_uid``; uploading looks for it first, which is what
makes a retried upload land exactly once.

No mlflow import here: building and saving a record must work when mlflow
itself is what fails.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import shlex
import subprocess
import sys
import time
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from evalframe.assess.runfolder import RunFolder, SweepFolder
from evalframe.core.io import atomic_write, atomic_write_json
from evalframe.core.secrets import redact_text
from evalframe.plugin.hooks import RunContext, RunOutcome, SweepContext, SweepJob
from evalframe_mlflow.keys import curve_key, metric_key, safe_key, safe_segment

__all__ = [
    "PENDING_FILE",
    "REPORT_FILE",
    "SYNCED_FILE",
    "TABLE_FILE",
    "RunRecord",
    "build_run_record",
    "build_sweep_record",
    "collect_metrics",
    "curve_metrics",
    "flatten_params",
    "git_state",
    "headline_metrics",
    "metrics_table",
    "short_key",
    "single_run_name",
    "sweep_run_name",
]

UID = re.compile(r"[0-9a-f]{32}")
#: the core keeps a folder holding it from being replaced (RunFolder.UNDELIVERED_SUFFIX)
PENDING_FILE = "mlflow" + RunFolder.UNDELIVERED_SUFFIX
SYNCED_FILE = "mlflow_synced.json"
FORMAT = "evalframe.mlflow-record/1"
TRUNCATED = "...[truncated]"
PARAM_VALUE_LIMIT = 6000  # MLflow's MAX_PARAM_VAL_LENGTH
TAG_VALUE_LIMIT = 8000  # MLflow's MAX_TAG_VAL_LENGTH is 8000 characters
#: The full table (every metric x slice, with CIs), logged with MLflow's table logging.
TABLE_FILE = "metrics_table.json"
#: ``key`` first: the UI's evaluation view groups a table's rows by its first column and
#: compares runs on ``mean``, the next; ``key`` is the metric, with its slice when it has one.
TABLE_COLUMNS = (
    "key",
    "mean",
    "ci_low",
    "ci_high",
    "n",
    "std",
    "metric",
    "measure",
    "k",
    "slice",
)
#: The run's HTML report, when a reporter left one in the run folder: its main artifact.
REPORT_FILE = RunFolder.REPORT_HTML


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclasses.dataclass
class RunRecord:
    """Everything one MLflow run will hold; JSON-serialisable as it is."""

    uid: str
    kind: str  # "run" or "sweep"
    uri: str
    experiment_name: str
    run_name: str | None
    params: dict[str, str]
    metrics: list[tuple[str, float, int]]  # (key, value, step)
    tags: dict[str, str]
    artifacts: list[str]  # absolute paths of files to upload
    status: str = "FINISHED"
    start_time: int = dataclasses.field(default_factory=now_ms)
    end_time: int = dataclasses.field(default_factory=now_ms)
    parent_uid: str | None = None
    parent_run_id: str | None = None  # a hint; the parent is found by its uid otherwise
    dataset: dict[str, str] | None = None  # records before datasets: the golden set only
    artifact_location: str | None = None  # for a new experiment
    open: bool = False  # a sweep parent whose sweep has not ended (yet)
    #: each a dataset input: name, digest, uri, profile (JSON), context (``eval``, ``corpus``)
    datasets: list[dict[str, str]] = dataclasses.field(default_factory=list)
    #: ``{"artifact_file", "columns", "rows"}``: logged with ``MlflowClient.log_table``
    table: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        """Every key and value within what MLflow accepts, whoever built the record.

        One bad key fails a whole batch, on every retry, so a record that
        MLflow would refuse could never be synced: keys go through
        :func:`safe_key`, values are cut to MLflow's limits.
        """
        if not UID.fullmatch(self.uid):
            raise ValueError(f"record uid {self.uid!r} is not 32 hex digits")
        self.params = _safe_mapping(self.params, PARAM_VALUE_LIMIT)
        self.tags = _safe_mapping(self.tags, TAG_VALUE_LIMIT)
        self.metrics = [(safe_key(k), v, s) for k, v, s in self.metrics]
        if self.dataset is not None:
            self.dataset = {**self.dataset, "name": truncate(self.dataset["name"], 500)}
        self.datasets = [{**d, "name": truncate(d["name"], 500)} for d in self.datasets]

    def to_json(self, base: Path) -> dict[str, Any]:
        """The record as JSON, with artifact paths relative to ``base`` (its folder)."""
        data = dataclasses.asdict(self)
        data["format"] = FORMAT
        # a password in the URI (from ${oc.env:...}) served this process's upload; it is
        # never written down: a later `evalframe sync` takes --uri, or MLflow's
        # MLFLOW_TRACKING_USERNAME / MLFLOW_TRACKING_PASSWORD
        if isinstance(data.get("uri"), str):
            data["uri"] = redact_text(data["uri"])
        data["artifacts"] = [os.path.relpath(p, base) for p in self.artifacts]
        data["metrics"] = [list(m) for m in self.metrics]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any], base: Path) -> RunRecord:
        """The record a file holds; a ValueError naming the field when it is not one
        evalframe wrote (a hand edit, a damaged file), never a crash of the reader."""
        if data.get("format") != FORMAT:
            raise ValueError(f"not an evalframe MLflow record (format {data.get('format')!r})")
        _check_shapes(data)
        fields = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in data.items() if k in fields}
        values["artifacts"] = [str((base / p).resolve()) for p in data.get("artifacts", [])]
        values["metrics"] = [(str(k), float(v), int(s)) for k, v, s in data.get("metrics", [])]
        return cls(**values)

    def save_pending(self, folder: Path) -> Path:
        """Write ``mlflow_pending.json`` into ``folder`` (atomically)."""
        return atomic_write_json(folder / PENDING_FILE, self.to_json(folder))


#: a record's fields and the JSON each must be: what from_json checks before it builds
_SHAPES: dict[str, tuple[type, ...]] = {
    "uid": (str,),
    "kind": (str,),
    "uri": (str,),
    "experiment_name": (str,),
    "params": (dict,),
    "metrics": (list,),
    "tags": (dict,),
    "artifacts": (list,),
}
_JSON_NAMES: dict[type, str] = {str: "a string", dict: "an object", list: "a list"}


def _check_shapes(data: Mapping[str, Any]) -> None:
    for name, kinds in _SHAPES.items():
        if name not in data:
            raise ValueError(f"field {name!r} is missing")
        if not isinstance(data[name], kinds):
            raise ValueError(
                f"field {name!r} should be {_JSON_NAMES[kinds[0]]}, found "
                f"{type(data[name]).__name__} {str(data[name])[:40]!r}"
            )
    for name in ("params", "tags"):
        for key, value in data[name].items():
            if not isinstance(value, str):
                raise ValueError(f"field {name!r}: {key!r} should be a string, found {value!r}")
    for i, metric in enumerate(data["metrics"]):
        ok = isinstance(metric, list) and len(metric) == 3
        if not ok or isinstance(metric[1], bool) or not isinstance(metric[1], int | float):
            raise ValueError(f"field 'metrics'[{i}] should be [key, value, step], found {metric!r}")
    for i, name in enumerate(data["artifacts"]):
        if not isinstance(name, str):
            raise ValueError(f"field 'artifacts'[{i}] should be a path, found {name!r}")


def _safe_mapping(items: Mapping[str, str], limit: int) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in items.items():
        safe = safe_key(key)
        if safe in out and safe != key:
            print(
                f"warning: mlflow: {key!r} maps to the key {safe!r} already used; keeping the "
                "first",
                file=sys.stderr,
            )
            continue
        out[safe] = truncate(str(value), limit)
    return out


def new_uid() -> str:
    return uuid.uuid4().hex


# -- params ----------------------------------------------------------------
#: Config sections that are not params: where the run was written (``output.dir``,
#: a new folder every run) and where it is reported. They change no number, and as
#: params every two runs would differ in them in MLflow's compare view. The folder
#: is the tag ``evalframe.run_folder``; ``evalframe runs`` leaves them out the same way.
NOT_PARAMS = ("output", "tracking")


def _param_value(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, default=str)


def flatten_params(config: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """A nested config as dotted keys; lists (and empty maps) become JSON strings."""
    flat: dict[str, str] = {}
    for key, value in config.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(flatten_params(value, dotted + "."))
        elif isinstance(value, Mapping):
            flat[dotted] = "{}"
        else:
            flat[dotted] = _param_value(value)
    return flat


def truncate(value: str, limit: int) -> str:
    """``value`` cut to ``limit`` characters, ending with a marker when cut."""
    if len(value) <= limit:
        return value
    return value[: limit - len(TRUNCATED)] + TRUNCATED


#: The tag MLflow's UI shows as a run's description, on its overview page.
DESCRIPTION_TAG = "mlflow.note.content"


#: Room the uploader keeps in the description for the link to the report, which it
#: writes above the text once it knows the run's id (upload.py, ``_point_to_report``).
LINK_ROOM = 400


def description(markdown: str, artifact: str, limit: int = TAG_VALUE_LIMIT - LINK_ROOM) -> str:
    """A run's description for MLflow's UI: its ``summary.md`` (or a sweep's ``jobs.md``),
    the verdict, notes and metrics a reader opens the run for. Past ``limit`` (the tag's
    limit, less room for the report's link) it is cut at a line, and the cut says which
    artifact holds the rest."""
    if len(markdown) <= limit:
        return markdown
    footer = f"\n\n… (cut here: the artifact {artifact} has the rest)"
    head = markdown[: limit - len(footer)]
    if "\n" in head:
        head = head[: head.rindex("\n")]
    return head + footer


def safe_params(config: Mapping[str, Any]) -> dict[str, str]:
    """Flattened params under MLflow-safe keys, values cut to MLflow's limit."""
    return {safe_key(k): truncate(v, PARAM_VALUE_LIMIT) for k, v in flatten_params(config).items()}


# -- metrics ---------------------------------------------------------------
def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return None if math.isnan(value) else value


def collect_metrics(metrics: Mapping[str, Any], summary: Mapping[str, Any]) -> dict[str, float]:
    """Safe key -> value from metrics.json, with slices as ``slice/<field>/<value>/<metric>``.

    Slice entries are taken from summary.json's structured ``by_slice`` (a slice
    value may contain dots, so the flat ``slice.*`` keys cannot be split safely).
    NaN values are skipped.
    """
    out: dict[str, float] = {}
    origin: dict[str, str] = {}

    def put(key: str, canonical: str, value: Any) -> None:
        key = safe_key(key)
        number = _number(value)
        if number is None:
            return
        if key in out and origin[key] != canonical:
            print(
                f"warning: mlflow: {canonical!r} and {origin[key]!r} map to the same key "
                f"{key!r}; keeping the first",
                file=sys.stderr,
            )
            return
        out[key] = number
        origin[key] = canonical

    by_slice = summary.get("by_slice")
    for name, value in metrics.items():
        if isinstance(by_slice, Mapping) and name.startswith("slice."):
            continue
        put(metric_key(name), name, value)
    if isinstance(by_slice, Mapping):
        for field, groups in by_slice.items():
            for group, aggs in groups.items():
                base = f"slice/{safe_segment(field)}/{safe_segment(group)}"
                for m, agg in aggs.items():
                    if not isinstance(agg, Mapping):
                        continue
                    key = f"{base}/{metric_key(m)}"
                    canonical = f"slice.{field}.{group}.{m}"
                    put(key, canonical, agg.get("mean"))
                    for stat in ("n", "ci_low", "ci_high"):
                        put(f"{key}/{stat}", f"{canonical}.{stat}", agg.get(stat))
    return out


def headline_metrics(
    headline: Mapping[str, Any], summary: Mapping[str, Any], names: list[str]
) -> dict[str, float]:
    """Key -> value of the headline set: ``headline.json`` as it is, under MLflow keys.

    A run folder from before ``headline.json`` gives its headline metrics'
    means and CI bounds from ``summary.json`` instead.
    """
    if not headline:
        overall = summary.get("overall") or {}
        headline = {"queries": (summary.get("golden_set") or {}).get("queries")}
        for name in names:
            agg = overall.get(name) or {}
            headline.update({name: agg.get("mean")})
            headline.update({f"{name}.{s}": agg.get(s) for s in ("ci_low", "ci_high")})
    out: dict[str, float] = {}
    for name, value in headline.items():
        number = _number(value)
        if number is not None:
            out[safe_key(metric_key(name))] = number
    return out


def _latency(timings: Mapping[str, Any], stats: tuple[str, ...]) -> dict[str, float]:
    found = timings.get("latency")
    latency: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    return {
        f"latency.{k}": float(v)
        for k, v in latency.items()
        if k in stats and _number(v) is not None
    }


def metrics_table(summary: Mapping[str, Any]) -> dict[str, Any] | None:
    """Every metric overall and per slice value, with its CI, as one table for ``log_table``.

    Rows: ``key`` (``nDCG@10``, or ``nDCG@10 [difficulty=easy]`` for a slice
    value), the mean, its CI bounds, n and std, then ``metric`` (the canonical
    string), ``measure`` and ``k`` (its name and cutoff, to group by either)
    and ``slice`` (``overall`` or ``field=value``). NaN is written as null.
    """
    from evalframe.metrics import parse_metric

    overall = summary.get("overall")
    if not isinstance(overall, Mapping) or not overall:
        return None
    groups: list[tuple[str, Mapping[str, Any]]] = [("overall", overall)]
    by_slice = summary.get("by_slice") or {}
    for field, values in by_slice.items() if isinstance(by_slice, Mapping) else ():
        for value, aggs in values.items():
            if isinstance(aggs, Mapping):
                groups.append((f"{field}={value}", aggs))
    rows: list[list[Any]] = []
    for label, aggs in groups:
        for name, agg in aggs.items():
            if not isinstance(agg, Mapping):
                continue
            try:
                m = parse_metric(name)
                measure = str(dataclasses.replace(m, k=None))
                k: Any = m.k
            except Exception:  # noqa: BLE001  # a metric from a plugin no longer installed
                measure, k = name, None
            key = name if label == "overall" else f"{name} [{label}]"
            rows.append(
                [key]
                + [_number(agg.get(c)) for c in ("mean", "ci_low", "ci_high", "n", "std")]
                + [name, measure, k, label]
            )
    return {"artifact_file": TABLE_FILE, "columns": list(TABLE_COLUMNS), "rows": rows}


def curve_metrics(names: Iterable[str], metrics: Mapping[str, Any]) -> list[tuple[str, float, int]]:
    """Metric@k curves: ``R@1, R@5, R@10`` are also logged as ``R_at_k`` at steps 1, 5, 10.

    MLflow draws a metric's history against its step, so one key per family
    gives the recall-at-k chart in the UI. Only families with two or more
    integer cutoffs get a curve.
    """
    from evalframe.metrics import parse_metric

    families: dict[str, list[tuple[int, float]]] = {}
    for name in names:
        value = _number(metrics.get(name))
        try:
            m = parse_metric(name)
        except Exception:  # noqa: BLE001  # a metric from a plugin no longer installed
            continue
        if value is None or not isinstance(m.k, int):
            continue
        family = str(dataclasses.replace(m, k=None))
        families.setdefault(family, []).append((m.k, value))
    out: list[tuple[str, float, int]] = []
    for family, points in sorted(families.items()):
        if len(points) < 2:
            continue
        key = curve_key(family)
        out.extend((key, value, k) for k, value in sorted(points))
    return out


# -- tags ------------------------------------------------------------------
def git_state(cwd: Path, timeout: float = 2.0) -> dict[str, str]:
    """``{sha, dirty}`` of the git repository at ``cwd``; empty when there is none."""

    def git(*args: str) -> str:
        proc = subprocess.run(
            ["git", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=True,
        )
        return proc.stdout.strip()

    try:
        sha = git("rev-parse", "HEAD")
        dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError):
        return {}
    return {"sha": sha, "dirty": "true" if dirty else "false"}


def base_tags(experiment: str, cwd: Path) -> dict[str, str]:
    from evalframe import __version__

    tags = {"evalframe.experiment": experiment, "evalframe.version": __version__}
    git = git_state(cwd)
    if git:
        tags["evalframe.git_sha"] = git["sha"]
        tags["mlflow.source.git.commit"] = git["sha"]
        tags["evalframe.git_dirty"] = git["dirty"]
    return tags


def _read_json(path: Path | None) -> dict[str, Any]:
    if path is None or not Path(path).is_file():
        return {}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _file_uri(path: Any) -> str:
    return Path(str(path)).resolve().as_uri() if path else "unknown"


def _datasets(summary: Mapping[str, Any], config: Mapping[str, Any]) -> list[dict[str, str]]:
    """The golden set and the corpus as MLflow dataset inputs (``mlflow.data`` lineage).

    Each is named, digested by its content hash (two runs on the same data
    show the same digest), sourced from its file and profiled with its counts.
    """
    found: list[dict[str, str]] = []
    golden = summary.get("golden_set") or {}
    if golden.get("content_hash"):
        profile = {
            "queries": golden.get("queries"),
            "negatives": golden.get("negatives"),
            "content_hash": golden["content_hash"],
        }
        if golden.get("dvc_md5"):
            profile["dvc_md5"] = golden["dvc_md5"]
        found.append(
            {
                "name": str(golden.get("name") or "golden"),
                "digest": str(golden["content_hash"])[:36],
                "uri": _file_uri((config.get("dataset") or {}).get("path")),
                "profile": json.dumps(profile),
                "context": "eval",
            }
        )
    corpus = summary.get("corpus") or {}
    if corpus.get("content_hash"):
        found.append(
            {
                "name": str(corpus.get("name") or "corpus"),
                "digest": str(corpus["content_hash"])[:36],
                "uri": _file_uri(corpus.get("path") or (config.get("corpus") or {}).get("path")),
                "profile": json.dumps(
                    {"documents": corpus.get("documents"), "content_hash": corpus["content_hash"]}
                ),
                "context": "corpus",
            }
        )
    return found


#: Last parts of config keys that many sections share, so that alone they say
#: nothing of which setting changed (``gates.mrr.value=0.9`` as ``value=0.9``; the
#: inputs' ``dataset.path``, ``corpus.path`` and ``queries.path``): a run name shows
#: such a key by its last two parts (:func:`short_key`).
GENERIC_KEY_PARTS = frozenset(
    {
        "enabled",
        "id_field",
        "k",
        "metric",
        "name",
        "op",
        "path",
        "seed",
        "severity",
        "text_field",
        "type",
        "value",
    }
)


def short_key(key: str) -> str:
    """A key as a run name shows it: its last part (``retriever.k1`` as ``k1``), or its
    last two where the last is one of :data:`GENERIC_KEY_PARTS` (``gates.mrr.value``
    as ``mrr.value``, ``dataset.path`` as itself)."""
    parts = key.split(".")
    return ".".join(parts[-2:] if parts[-1] in GENERIC_KEY_PARTS else parts[-1:])


def _swept_part(override: str, swept: list[str]) -> str | None:
    """``retriever.k1=0.9`` as ``k1=0.9`` when its key is one the sweep varies."""
    key, eq, value = override.lstrip("+~").partition("=")
    key = key.split("@", 1)[0]  # group@package=option
    if not eq or key not in swept:
        return None
    short = short_key(key)
    clash = sum(1 for k in swept if short_key(k) == short) > 1
    return f"{key if clash else short}={value}"


def sweep_run_name(overrides: list[str], swept: list[str], label: str | None = None) -> str | None:
    """A sweep job's run name: the overrides that tell it apart (``k1=0.9,b=0.3``).

    ``swept`` are the keys the sweep varies; a key is shown by its last part
    (its last two for a generic one, :func:`short_key`) unless two swept keys
    share it. A run the sweep made beside its jobs (a
    tuning sweep's held-out run) has a ``label`` that goes first
    (``held-out: k1=0.9,b=0.3``). None when nothing is swept and there is no
    label (MLflow then picks a name).
    """
    parts = ",".join(p for p in (_swept_part(o, swept) for o in overrides) if p)
    if label:
        parts = f"{label}: {parts}" if parts else str(label)
    return truncate(parts, 250) if parts else None


#: Overrides that say where a run goes or how it is shown, not what it measures.
_NOT_IN_NAME = ("experiment", "hydra", "tracking", "output", "report", "redact")


def single_run_name(overrides: list[str]) -> str | None:
    """A run's name from the overrides that changed what it measured (``k1=0.6,depth=20``).

    ``+experiment=`` is left out (the MLflow experiment already carries it), and
    so are the settings of where results go. None when nothing is left: MLflow
    then picks a name.
    """
    keys = []
    for override in overrides:
        key, eq, _ = override.lstrip("+~").partition("=")
        key = key.split("@", 1)[0]
        if eq and key.split(".", 1)[0] not in _NOT_IN_NAME:
            keys.append(key)
    # where the inputs are (dataset.path=/a/long/golden.jsonl) goes after what was set:
    # the MLflow UI cuts a long name, and k1=0.6 is what tells two runs on one set apart
    ordered = sorted(overrides, key=_names_a_path)
    return sweep_run_name(ordered, keys)


def _names_a_path(override: str) -> bool:
    key, _, value = override.lstrip("+~").partition("=")
    return key.split("@", 1)[0].endswith("path") or "/" in value


def build_run_record(
    context: RunContext,
    outcome: RunOutcome | None,
    *,
    uri: str,
    experiment_name: str,
    run_name: str | None,
    cwd: Path,
    error: BaseException | None = None,
    log_all: bool = False,
) -> RunRecord:
    """The record of one finished (or failed) evalframe run, from its output files.

    By default the logged metrics are the headline set (``headline.json``):
    each headline metric with its CI bounds, the query and gate counts and
    p50/p95 latency; every metric x slice goes in as one table
    (``metrics_table.json``). ``log_all`` logs every flat key as metrics too.
    """
    outputs = outcome.outputs if outcome is not None else {}
    metrics_json = _read_json(outputs.get("metrics"))
    summary = _read_json(outputs.get("summary"))
    folder = RunFolder(context.output_dir)
    # outputs name what the pipeline wrote; a caller that lists fewer still has the folder
    headline_json = _read_json(outputs.get("headline") or folder.file(folder.HEADLINE))
    timings = _read_json(outputs.get("timings") or folder.file(folder.TIMINGS))
    tags = base_tags(context.experiment, cwd)
    tags["evalframe.run_folder"] = truncate(str(context.output_dir), TAG_VALUE_LIMIT)
    meta = context.metadata
    for kind, plugin in (meta.get("plugins") or {}).items():
        label = f"{plugin.get('name')}"
        if plugin.get("distribution"):
            label += f" ({plugin['distribution']} {plugin.get('version') or ''})".rstrip()
        tags[f"evalframe.plugin.{kind}"] = label.replace(" )", ")")
    for group, choice in (meta.get("choices") or {}).items():
        tags[f"evalframe.choice.{safe_segment(group)}"] = choice
    if meta.get("baseline"):
        tags["evalframe.baseline"] = str(meta["baseline"])
    # DVC names each experiment (`dvc exp run -n NAME`, or one it makes up) and gives the
    # name to the stages it runs; `dvc repro` gives none
    dvc_exp = os.environ.get("DVC_EXP_NAME", "").strip()
    if dvc_exp:
        tags["evalframe.dvc_exp"] = truncate(dvc_exp, TAG_VALUE_LIMIT)
    retrieved = timings.get("retrieved")
    if isinstance(retrieved, dict):  # `evalframe rescore`: scored again, not retrieved again
        tags["evalframe.rescore"] = "true"
        if retrieved.get("created"):
            tags["evalframe.retrieved_at"] = str(retrieved["created"])
    if outcome is not None:
        tags["evalframe.exit_code"] = str(outcome.exit_code)
    if "gates_passed" in summary:
        tags["evalframe.gates_passed"] = str(bool(summary["gates_passed"])).lower()
    if isinstance(summary.get("verdict"), str):  # passed, failed, or unchecked (none required)
        tags["evalframe.verdict"] = summary["verdict"]
    said = summary.get("verdict_warnings")
    if isinstance(said, list) and said:  # an unblessed or drifted golden set (KnowCode)
        tags["evalframe.provisional"] = "true"
        tags["evalframe.verdict_warnings"] = truncate("; ".join(map(str, said)), TAG_VALUE_LIMIT)
    golden = summary.get("golden_set") or {}
    if golden.get("content_hash"):
        tags["evalframe.golden_hash"] = str(golden["content_hash"])
    if golden.get("dvc_md5"):
        tags["evalframe.golden_dvc_md5"] = str(golden["dvc_md5"])
    names = [str(n) for n in summary.get("metrics") or []] or [
        k for k in metrics_json if "." not in k and k != "queries"
    ]
    headline = [str(n) for n in summary.get("headline") or []] or names[:3]
    logged = names if log_all else [n for n in headline if n in names or not names]
    for name in logged:
        tags[f"evalframe.metric.{metric_key(name)}"] = name
    if names:
        tags["evalframe.metrics"] = truncate(json.dumps(names), TAG_VALUE_LIMIT)
    if headline:
        tags["evalframe.headline"] = truncate(json.dumps(headline), TAG_VALUE_LIMIT)
    if error is not None:
        tags["evalframe.error"] = truncate(f"{type(error).__name__}: {error}", TAG_VALUE_LIMIT)

    stamp = now_ms()
    if log_all:
        values = collect_metrics(metrics_json, summary)
        values.update(_latency(timings, ("p50_ms", "p95_ms", "mean_ms", "max_ms")))
    else:
        values = headline_metrics(headline_json, summary, headline) if summary else {}
        # a folder from before headline.json
        for count in ("gates.passed", "gates.failed", "gates.advisory_missed"):
            number = _number(metrics_json.get(count))
            if number is not None and count not in values:
                values[count] = number
        values.update(_latency(timings, ("p50_ms", "p95_ms")))
    metric_list = [(k, v, 0) for k, v in sorted(values.items())]
    flat = metrics_json or {n: (summary.get("overall") or {}).get(n, {}).get("mean") for n in names}
    metric_list.extend(curve_metrics(logged, flat))
    sweep = meta.get("sweep") or {}
    parent_uid = parent_hint = None
    if sweep.get("dir"):
        from evalframe_mlflow.sweeps import read_sweep_marker

        marker = read_sweep_marker(Path(sweep["dir"]))
        if marker:
            parent_uid = marker.get("uid")
            # the run id is only a hint in the store the parent was opened in
            same = marker.get("uri") == redact_text(uri)  # the marker keeps it redacted
            parent_hint = marker.get("run_id") if same else None
        tags["evalframe.sweep_job"] = str(sweep.get("num"))
        # as shell words: an override whose value holds a space (query_prefix="a b")
        # comes back whole from shlex.split, and the tag pastes onto a command line
        tags["evalframe.sweep_overrides"] = truncate(
            shlex.join(str(o) for o in sweep.get("overrides") or []), TAG_VALUE_LIMIT
        )
        if run_name is None:
            run_name = sweep_run_name(
                [str(o) for o in sweep.get("overrides") or []],
                [str(k) for k in marker.get("swept") or []],
                label=sweep.get("label"),
            )
    if run_name is None and not sweep.get("dir"):
        run_name = single_run_name([str(o) for o in meta.get("overrides") or []])
        if meta.get("rescore_of"):  # beside the run it re-scored, told apart from it
            source = f"rescore of {Path(str(meta['rescore_of'])).name}"
            run_name = f"{source}: {run_name}" if run_name else source
        elif meta.get("merged") and isinstance(meta.get("shards"), list):
            # `evalframe merge`: named after its shards' folder, not by MLflow at random
            shards = [Path(str(s)) for s in meta["shards"]]
            parents = {s.parent.name for s in shards}
            where = f" of {parents.pop()}" if len(parents) == 1 and "" not in parents else ""
            run_name = f"merge of {len(shards)} shard{'s' * (len(shards) != 1)}{where}"
        if dvc_exp:  # `dvc exp run -n k1-12`: its stages' runs go by the experiment's name
            run_name = f"{dvc_exp}: {run_name}" if run_name else dvc_exp
    summary_md = Path(outputs.get("summary_md") or folder.file(folder.SUMMARY_MD))
    if summary_md.is_file():  # the run's overview page in MLflow's UI shows it
        tags[DESCRIPTION_TAG] = description(summary_md.read_text(encoding="utf-8"), "summary.md")
    report = folder.file(folder.REPORT_HTML)
    # the run's page goes first, whether a reporter listed it with the outputs or not
    files = [report] if report.is_file() else []
    files += [Path(p) for p in outputs.values() if Path(p).resolve() != report.resolve()]
    return RunRecord(
        uid=new_uid(),
        kind="run",
        uri=uri,
        experiment_name=experiment_name,
        run_name=run_name,
        params=safe_params({k: v for k, v in context.config.items() if k not in NOT_PARAMS}),
        metrics=metric_list,
        tags=tags,
        artifacts=[str(p.resolve()) for p in files if p.is_file()],
        status="FAILED" if error is not None else "FINISHED",
        start_time=int(meta.get("start_ms") or stamp),
        end_time=stamp,
        parent_uid=parent_uid,
        parent_run_id=parent_hint,
        datasets=_datasets(summary, context.config),
        table=metrics_table(summary),
    )


def _job_row(job: SweepJob, names: list[str], shared: set[str]) -> dict[str, Any]:
    overall = job.summary.get("overall") or {}
    row: dict[str, Any] = {
        "job": job.num,
        "overrides": " ".join(o for o in job.overrides if o not in shared),
        "exit_code": job.exit_code,
        "gates_passed": job.summary.get("gates_passed"),
    }
    for name in names:
        agg = overall.get(name) or {}
        row[name] = agg.get("mean") if isinstance(agg, Mapping) else None
    row["folder"] = str(job.output_dir)
    return row


def jobs_table(jobs: list[SweepJob]) -> tuple[list[str], list[dict[str, Any]]]:
    """Metric names (in first-seen order) and one row per job.

    A row's ``overrides`` are the ones that tell its job apart: overrides that
    every job shares (``+experiment=x``) are left out when there are two jobs or more.
    """
    names: list[str] = []
    for job in jobs:
        for name in job.summary.get("metrics") or []:
            if name not in names:
                names.append(str(name))
    shared = set.intersection(*(set(j.overrides) for j in jobs)) if len(jobs) > 1 else set()
    return names, [_job_row(job, names, shared) for job in jobs]


def _markdown(names: list[str], rows: list[dict[str, Any]]) -> str:
    head = ["job", "overrides", "exit", "gates", *names]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [
            str(r["job"]),
            r["overrides"] or "(none)",
            "—" if r["exit_code"] is None else str(r["exit_code"]),
            {True: "passed", False: "failed"}.get(r["gates_passed"], "—"),
        ]
        cells += ["—" if r[n] is None else f"{r[n]:.4f}" for n in names]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def _csv(names: list[str], rows: list[dict[str, Any]]) -> str:
    import csv
    import io

    buf = io.StringIO()
    cols = ["job", "overrides", "exit_code", "gates_passed", *names, "folder"]
    writer = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({c: r.get(c) for c in cols})
    return buf.getvalue()


def build_sweep_record(
    sweep: SweepContext,
    jobs: list[SweepJob],
    marker: Mapping[str, Any],
    *,
    uri: str,
    experiment_name: str,
    cwd: Path,
    log_all: bool = False,
) -> RunRecord:
    """The parent run's record: best job per headline metric, and the table of every job.

    ``best/<key>`` is logged for the jobs' headline metrics (every metric with
    ``log_all``); ``jobs.md`` and ``jobs.csv`` have them all. The parent is
    FAILED when any job left no result or ended with exit code 2 or more (a
    config error or a crash), or when the launcher or sweeper stopped the sweep
    (``sweep.error``: then the tag ``evalframe.error`` and the description say
    why); gate failures (exit 1) are results.
    """
    names, rows = jobs_table(jobs)
    headline: list[str] = []
    for job in jobs:
        listed = job.summary.get("headline") or (job.summary.get("metrics") or [])[:3]
        headline.extend(str(n) for n in listed if n not in headline)
    files = {
        "jobs.md": _markdown(names, rows),
        "jobs.csv": _csv(names, rows),
    }
    artifacts = [str(atomic_write(sweep.sweep_dir / f, text)) for f, text in files.items()]
    page = sweep.sweep_dir / SweepFolder.REPORT_HTML  # the page comparing the jobs
    if page.is_file():
        artifacts.append(str(page))
    # a tuning sweep's summary: the best trial beside its held-out figure, the one to
    # report, above the trials' table (evalframe.app.tune writes it before the sweep ends)
    tuning_md = sweep.sweep_dir / SweepFolder.TUNING_MD
    tuning = tuning_md.read_text(encoding="utf-8") if tuning_md.is_file() else ""
    if tuning:
        artifacts.extend(
            str(sweep.sweep_dir / f)
            for f in (SweepFolder.TUNING_MD, SweepFolder.TUNING_JSON)
            if (sweep.sweep_dir / f).is_file()
        )
    summary = f"{tuning.rstrip()}\n\n{files['jobs.md']}" if tuning else files["jobs.md"]
    tags = base_tags(sweep.experiment, cwd)
    tags[DESCRIPTION_TAG] = description(summary, "jobs.md")
    if sweep.error:
        stopped = f"**The sweep was stopped:**\n\n```text\n{sweep.error}\n```\n\n"
        tags[DESCRIPTION_TAG] = description(stopped + summary, "jobs.md")
        tags["evalframe.error"] = truncate(sweep.error, TAG_VALUE_LIMIT)
    tags["evalframe.sweep"] = "true"
    tags["evalframe.sweep_dir"] = str(sweep.sweep_dir)
    metric_list: list[tuple[str, float, int]] = [
        ("sweep.jobs", float(len(jobs)), 0),
        ("sweep.failed_jobs", float(sum(1 for j in jobs if j.exit_code not in (0, 1))), 0),
        ("sweep.gate_failures", float(sum(1 for j in jobs if j.exit_code == 1)), 0),
    ]
    for name in names if log_all else [n for n in names if n in headline]:
        scored = [(r[name], r["job"]) for r in rows if _number(r[name]) is not None]
        if not scored:
            continue
        best, num = max(scored, key=lambda x: (x[0], -x[1]))
        key = metric_key(name)
        metric_list.append((f"best/{key}", float(best), 0))
        overrides = next(r["overrides"] for r in rows if r["job"] == num)
        tags[f"evalframe.best.{key}"] = truncate(
            f"job {num}: {overrides or '(no overrides)'}", TAG_VALUE_LIMIT
        )
        tags[f"evalframe.metric.{key}"] = name
    if names:
        tags["evalframe.metrics"] = truncate(json.dumps(names), TAG_VALUE_LIMIT)
    if headline:
        tags["evalframe.headline"] = truncate(json.dumps(headline), TAG_VALUE_LIMIT)
    failed = (
        bool(sweep.error) or not jobs or any(j.exit_code is None or j.exit_code >= 2 for j in jobs)
    )
    return RunRecord(
        uid=str(marker.get("uid") or new_uid()),
        kind="sweep",
        uri=uri,
        experiment_name=experiment_name,
        run_name=marker.get("run_name"),
        params={"sweep.dir": str(sweep.sweep_dir), "sweep.jobs": str(len(jobs))},
        metrics=metric_list,
        tags=tags,
        artifacts=artifacts,
        status="FAILED" if failed else "FINISHED",
        start_time=int(marker.get("start_time") or now_ms()),
        parent_run_id=None,
    )
