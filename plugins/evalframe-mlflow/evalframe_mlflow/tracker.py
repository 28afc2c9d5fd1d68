"""The ``mlflow`` tracker: one MLflow run per evalframe run, logged from the files on disk.

mlflow is imported only inside methods: listing plugins or running without
tracking never pays for it, and the HTTP timeout/retry settings are put in
the environment before it is first used.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evalframe.hooks import RunContext, RunOutcome
from evalframe.protocols import PluginContext
from evalframe.registry import tracker
from evalframe_mlflow.keys import metric_key, safe_segment

__all__ = ["MlflowConfig", "MlflowTracker", "flatten_params"]

TRUNCATED = "...[truncated]"
_PARAM_VALUE_LIMIT = 6000  # MLflow's MAX_PARAM_VAL_LENGTH (read from mlflow when available)
_BATCH = {"metrics": 1000, "params": 100, "tags": 100}  # MLflow's per-request limits


class MlflowConfig(BaseModel):
    """Where and how to log to MLflow."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    uri: str | None = Field(
        None, description="tracking URI; null = sqlite:///<absolute cwd>/mlflow.db"
    )
    experiment_name: str | None = Field(
        None, description="MLflow experiment; null = the evalframe experiment name"
    )
    run_name: str | None = Field(None, description="MLflow run name; null = MLflow picks one")
    timeout_seconds: float = Field(10, gt=0, description="per HTTP request to a server")
    retries: int = Field(2, ge=0, description="HTTP retries before giving up")


def resolve_uri(uri: str | None, cwd: Path | None = None) -> str:
    """The tracking URI with a sqlite file made absolute (null = ``<cwd>/mlflow.db``)."""
    base = (cwd or Path.cwd()).resolve()
    if uri is None:
        return f"sqlite:///{base / 'mlflow.db'}"
    prefix = "sqlite:///"
    if uri.startswith(prefix) and not uri.startswith(prefix + "/"):
        rest = uri[len(prefix) :]
        if rest and rest != ":memory:" and not Path(rest).is_absolute():
            return f"{prefix}{(base / rest).resolve()}"
    return uri


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


def _chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return None if math.isnan(value) else value


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


def _read_json(path: Path | None) -> dict[str, Any]:
    if path is None or not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return data if isinstance(data, dict) else {}


def collect_metrics(metrics: Mapping[str, Any], summary: Mapping[str, Any]) -> dict[str, float]:
    """Safe key -> value from metrics.json, with slices as ``slice/<field>/<value>/<metric>``.

    Slice entries are taken from summary.json's structured ``by_slice`` (a slice
    value may contain dots, so the flat ``slice.*`` keys cannot be split safely).
    NaN values are skipped.
    """
    out: dict[str, float] = {}
    origin: dict[str, str] = {}

    def put(key: str, canonical: str, value: Any) -> None:
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
                        put(f"{key}.{stat}", f"{canonical}.{stat}", agg.get(stat))
    return out


@tracker("mlflow", config=MlflowConfig)
class MlflowTracker:
    """Log each run to MLflow: flattened config, metrics.json, tags and every output file."""

    def __init__(self, config: MlflowConfig | None, context: PluginContext) -> None:
        self.config = config or MlflowConfig()
        self.context = context
        self.cwd = Path.cwd().resolve()
        self.uri = resolve_uri(self.config.uri, self.cwd)
        self.run_id: str | None = None

    # -- mlflow access ------------------------------------------------------
    def _client(self) -> Any:
        os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] = str(
            max(1, math.ceil(self.config.timeout_seconds))
        )
        os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] = str(self.config.retries)
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "1")
        from mlflow.tracking import MlflowClient

        return MlflowClient(tracking_uri=self.uri)

    def _artifact_location(self) -> str | None:
        """Beside the sqlite file (``<dir>/mlartifacts``) rather than in whatever cwd."""
        if self.uri.startswith("sqlite:///"):
            db = Path(self.uri[len("sqlite:///") :])
            if db.is_absolute():
                return (db.parent / "mlartifacts").as_uri()
        return None

    def _experiment_id(self, client: Any, name: str) -> str:
        found = client.get_experiment_by_name(name)
        if found is not None:
            return str(found.experiment_id)
        try:
            return str(client.create_experiment(name, artifact_location=self._artifact_location()))
        except Exception:
            found = client.get_experiment_by_name(name)  # created meanwhile by a parallel run
            if found is None:
                raise
            return str(found.experiment_id)

    def _start(self, client: Any, context: RunContext, tags: dict[str, str]) -> str:
        experiment = self.config.experiment_name or context.experiment
        exp_id = self._experiment_id(client, experiment)
        run = client.create_run(exp_id, run_name=self.config.run_name, tags=tags)
        self.run_id = str(run.info.run_id)
        return self.run_id

    def _log(
        self,
        client: Any,
        run_id: str,
        params: dict[str, str],
        metrics: dict[str, float],
        tags: dict[str, str],
    ) -> None:
        from mlflow.entities import Metric, Param, RunTag

        try:
            from mlflow.utils import validation

            limit = int(getattr(validation, "MAX_PARAM_VAL_LENGTH", _PARAM_VALUE_LIMIT))
        except ImportError:
            limit = _PARAM_VALUE_LIMIT
        now = int(time.time() * 1000)
        param_list = [Param(metric_key(k), truncate(v, limit)) for k, v in sorted(params.items())]
        metric_list = [Metric(k, v, now, 0) for k, v in sorted(metrics.items())]
        tag_list = [RunTag(k, v) for k, v in sorted(tags.items())]
        for chunk in _chunks(param_list, _BATCH["params"]):
            client.log_batch(run_id, params=chunk)
        for chunk in _chunks(metric_list, _BATCH["metrics"]):
            client.log_batch(run_id, metrics=chunk)
        for chunk in _chunks(tag_list, _BATCH["tags"]):
            client.log_batch(run_id, tags=chunk)

    def _base_tags(self, context: RunContext) -> dict[str, str]:
        from evalframe import __version__

        tags = {"evalframe.experiment": context.experiment, "evalframe.version": __version__}
        git = git_state(self.cwd)
        if git:
            tags["evalframe.git_sha"] = git["sha"]
            tags["mlflow.source.git.commit"] = git["sha"]
            tags["evalframe.git_dirty"] = git["dirty"]
        return tags

    # -- hooks ----------------------------------------------------------------
    def on_run_end(self, context: RunContext, outcome: RunOutcome) -> None:
        metrics_json = _read_json(outcome.outputs.get("metrics"))
        summary = _read_json(outcome.outputs.get("summary"))
        tags = self._base_tags(context)
        tags["evalframe.exit_code"] = str(outcome.exit_code)
        if "gates_passed" in summary:
            tags["evalframe.gates_passed"] = str(bool(summary["gates_passed"])).lower()
        golden_hash = (summary.get("golden_set") or {}).get("content_hash")
        if golden_hash:
            tags["evalframe.golden_hash"] = str(golden_hash)
        names = summary.get("metrics") or [
            k for k in metrics_json if "." not in k and k != "queries"
        ]
        for name in names:
            tags[f"evalframe.metric.{metric_key(name)}"] = str(name)

        client = self._client()
        run_id = self._start(client, context, {})
        try:
            self._log(
                client,
                run_id,
                flatten_params(context.config),
                collect_metrics(metrics_json, summary),
                tags,
            )
            for path in outcome.outputs.values():
                if Path(path).is_file():
                    client.log_artifact(run_id, str(path))
        except BaseException:
            client.set_terminated(run_id, status="FAILED")
            raise
        client.set_terminated(run_id, status="FINISHED")
        print(f"mlflow: logged run {run_id} to {self.uri}", file=sys.stderr)

    def on_error(self, context: RunContext, error: BaseException) -> None:
        """A run that fails before its results exist is still recorded, as FAILED."""
        client = self._client()
        run_id = self.run_id
        if run_id is None:
            tags = self._base_tags(context)
            tags["evalframe.error"] = truncate(f"{type(error).__name__}: {error}", 5000)
            run_id = self._start(client, context, {})
            self._log(client, run_id, flatten_params(context.config), {}, tags)
        client.set_terminated(run_id, status="FAILED")
