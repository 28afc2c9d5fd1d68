"""The ``mlflow`` tracker: one MLflow run per evalframe run, and a parent run per sweep.

Order of work, so that nothing is lost:

1. the pipeline writes the results into the run folder;
2. ``on_run_end`` builds a :class:`~evalframe_mlflow.record.RunRecord` from
   those files (no network);
3. it uploads the record; if that fails for any reason (server down, timeout,
   a rejected batch), the record is saved as ``mlflow_pending.json`` in the run
   folder and indexed under ``<cache_dir>/mlflow-pending/``, and a warning
   says to run ``evalframe sync``. The run's exit code is never changed.

mlflow is imported only inside methods: listing plugins or running without
tracking never pays for it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evalframe.hooks import RunContext, RunOutcome, SweepContext, SweepJob
from evalframe.protocols import PluginContext
from evalframe.registry import tracker
from evalframe_mlflow.pending import index_pending
from evalframe_mlflow.record import (
    RunRecord,
    build_run_record,
    build_sweep_record,
    collect_metrics,
    flatten_params,
    new_uid,
    now_ms,
    truncate,
)
from evalframe_mlflow.sweeps import read_sweep_marker, write_sweep_marker
from evalframe_mlflow.upload import Uploader, resolve_uri

__all__ = ["MlflowConfig", "MlflowTracker", "collect_metrics", "flatten_params", "truncate"]


class MlflowConfig(BaseModel):
    """Where and how to log to MLflow."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    uri: str | None = Field(
        None,
        description="tracking URI; null = $MLFLOW_TRACKING_URI, else "
        "sqlite:///<absolute cwd>/mlflow.db",
    )
    experiment_name: str | None = Field(
        None, description="MLflow experiment; null = the evalframe experiment name"
    )
    run_name: str | None = Field(None, description="MLflow run name; null = MLflow picks one")
    timeout_seconds: float = Field(10, gt=0, description="per HTTP request to a server")
    retries: int = Field(2, ge=0, description="HTTP retries before giving up")


def failure_reason(exc: BaseException) -> str:
    """A short reason: "connection refused", "timed out", or the error's first line."""
    text = str(exc)
    for needle, reason in (
        ("Connection refused", "connection refused"),
        ("Max retries exceeded", "server unreachable"),
        ("timed out", "timed out"),
        ("Read timed out", "timed out"),
    ):
        if needle in text:
            return reason
    first = text.strip().splitlines()[0] if text.strip() else ""
    return f"{type(exc).__name__}: {truncate(first, 200)}"


@tracker("mlflow", config=MlflowConfig)
class MlflowTracker:
    """Log each run to MLflow (params, metrics, tags, dataset, artifacts); sweeps as parent runs."""

    def __init__(self, config: MlflowConfig | None, context: PluginContext) -> None:
        self.config = config or MlflowConfig()
        self.context = context
        self.cwd = Path.cwd().resolve()
        self.uri = resolve_uri(self.config.uri, self.cwd)
        self.run_id: str | None = None
        self.started_ms = now_ms()

    def _uploader(self) -> Uploader:
        return Uploader(self.uri, self.config.timeout_seconds, self.config.retries)

    def _experiment_name(self, experiment: str) -> str:
        return self.config.experiment_name or experiment

    def _send(self, record: RunRecord, folder: Path, what: str) -> None:
        """Upload, or keep the record for ``evalframe sync`` and say so."""
        try:
            run_id, _ = self._uploader().upload(record)
        except Exception as exc:  # noqa: BLE001  # any failure: keep the record, never lose it
            path = record.save_pending(folder)
            index_pending(record.uid, path)
            print(
                f"warning: mlflow: could not log {what} to {self.uri} ({failure_reason(exc)}). "
                f"The results are safe in "
                f"{folder}; the MLflow record is kept in {path}. Upload it later with "
                f"`evalframe sync {folder}` (or `evalframe sync` for every pending record).",
                file=sys.stderr,
            )
            return
        self.run_id = run_id
        print(f"mlflow: logged {what} {run_id} to {self.uri}", file=sys.stderr)

    # -- run hooks -------------------------------------------------------------
    def on_run_start(self, context: RunContext) -> None:
        self.started_ms = now_ms()
        context.metadata.setdefault("start_ms", self.started_ms)

    def _record(
        self, context: RunContext, outcome: RunOutcome | None, error: BaseException | None = None
    ) -> RunRecord:
        return build_run_record(
            context,
            outcome,
            uri=self.uri,
            experiment_name=self._experiment_name(context.experiment),
            run_name=self.config.run_name,
            cwd=self.cwd,
            error=error,
        )

    def on_run_end(self, context: RunContext, outcome: RunOutcome) -> None:
        self._send(self._record(context, outcome), context.output_dir, "run")

    def on_error(self, context: RunContext, error: BaseException) -> None:
        """A run that fails before its results exist is still recorded, as FAILED."""
        from evalframe.errors import EvalframeError

        record = self._record(context, None, error)
        if isinstance(error, EvalframeError):
            record.tags["evalframe.error"] = truncate(error.render(), 8000)
        context.output_dir.mkdir(parents=True, exist_ok=True)
        self._send(record, context.output_dir, "failed run")

    # -- sweep hooks -------------------------------------------------------------
    def on_sweep_start(self, sweep: SweepContext) -> None:
        """Open the parent run now, so every job can name it as its parent."""
        marker: dict[str, Any] = {
            "uid": new_uid(),
            "run_id": None,
            "uri": self.uri,
            "experiment_name": self._experiment_name(sweep.experiment),
            "run_name": self.config.run_name or f"sweep {sweep.experiment} {sweep.sweep_dir.name}",
            "start_time": now_ms(),
        }
        record = RunRecord(
            uid=marker["uid"],
            kind="sweep",
            uri=self.uri,
            experiment_name=marker["experiment_name"],
            run_name=marker["run_name"],
            params={},
            metrics=[],
            tags={},
            artifacts=[],
            start_time=marker["start_time"],
        )
        try:
            marker["run_id"] = self._uploader().open_parent(record)
        except Exception as exc:  # noqa: BLE001  # the jobs still run; the parent is made later
            print(
                f"warning: mlflow: could not open the sweep's parent run at {self.uri} "
                f"({type(exc).__name__}); it is created when the sweep ends or at "
                "`evalframe sync`",
                file=sys.stderr,
            )
        write_sweep_marker(sweep.sweep_dir, marker)

    def on_sweep_end(self, sweep: SweepContext, jobs: list[SweepJob]) -> None:
        """Close the parent: best job per metric, the jobs table, FINISHED or FAILED."""
        marker = read_sweep_marker(sweep.sweep_dir)
        if not marker:
            return
        record = build_sweep_record(
            sweep,
            jobs,
            marker,
            uri=self.uri,
            experiment_name=str(marker.get("experiment_name")),
            cwd=self.cwd,
        )
        self._send(record, sweep.sweep_dir, "sweep")
