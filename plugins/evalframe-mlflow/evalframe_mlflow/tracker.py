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

import contextlib
import sys
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evalframe.core.secrets import redact_text
from evalframe.plugin.hooks import RunContext, RunOutcome, SweepContext, SweepJob
from evalframe.plugin.protocols import PluginContext
from evalframe.plugin.registry import tracker
from evalframe_mlflow.pending import (
    index_pending,
    keep_beyond_dvc_copy,
    lock_record,
    mark_synced,
)
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
from evalframe_mlflow.upload import Uploader, failure_reason, resolve_uri

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
    run_name: str | None = Field(
        None,
        description="MLflow run name; null = a sweep job's swept overrides (k1=0.9,b=0.3), "
        "a single run's overrides of what it measures (k1=0.6), else MLflow picks one",
    )
    log_all: bool = Field(
        False,
        description="log every metric x slice as MLflow metrics too (default: the headline "
        "set with CIs as metrics, the full table as one table artifact)",
    )
    timeout_seconds: float = Field(
        5, gt=0, description="per HTTP request to a server (rounded up to whole seconds)"
    )
    retries: int = Field(1, ge=0, description="HTTP retries before giving up")


def _launch_dir() -> Path:
    """Where the command was started: Hydra's original cwd even with ``hydra.job.chdir``."""
    if "hydra" in sys.modules:
        from hydra.core.hydra_config import HydraConfig

        if HydraConfig.initialized():
            return Path(HydraConfig.get().runtime.cwd).resolve()
    return Path.cwd().resolve()


#: In a sweep, a job that found the server unreachable leaves this file in the sweep
#: folder; later jobs keep their records for `evalframe sync` at once instead of each
#: waiting out the timeouts again.
UNREACHABLE = "mlflow_unreachable"
UNREACHABLE_FOR_SECONDS = 600
_NETWORK = ("connection refused", "server unreachable", "timed out")


@tracker("mlflow", config=MlflowConfig)
class MlflowTracker:
    """Log each run to MLflow (params, metrics, tags, dataset, artifacts); sweeps as parent runs."""

    def __init__(self, config: MlflowConfig | None, context: PluginContext) -> None:
        self.config = config or MlflowConfig()
        self.context = context
        self.cwd = _launch_dir()
        self.uri = resolve_uri(self.config.uri, self.cwd)
        self.run_id: str | None = None
        self.started_ms = now_ms()
        self._ended = False
        self._sweep_lock: Any = None

    def _uploader(self) -> Uploader:
        return Uploader(self.uri, self.config.timeout_seconds, self.config.retries)

    def _experiment_name(self, experiment: str, marker: dict[str, Any] | None = None) -> str:
        """The config's name, else the sweep parent's (so the UI nests jobs), else the run's."""
        if self.config.experiment_name:
            return self.config.experiment_name
        if marker and marker.get("experiment_name"):
            return str(marker["experiment_name"])
        return experiment

    def _send(self, record: RunRecord, folder: Path, what: str, sweep_dir: Path | None) -> None:
        """Save the record, then upload it; on any failure the saved record stays for sync."""
        path = record.save_pending(folder)
        index_pending(record.uid, path)
        flag = sweep_dir / UNREACHABLE if sweep_dir is not None else None
        if flag is not None and what == "run" and _recent(flag):
            self._kept(record, path, folder, what, "unreachable for an earlier job of this sweep")
            return
        with lock_record(path) as handle:
            if handle is None:
                return  # an `evalframe sync` started meanwhile is uploading it
            uploader = None
            try:
                uploader = self._uploader()
                run_id, _ = uploader.upload(record)
            except BaseException as exc:
                reason = failure_reason(exc)
                self._kept(record, path, folder, what, reason)
                if flag is not None and reason in _NETWORK:
                    with contextlib.suppress(OSError):
                        flag.touch()
                if not isinstance(exc, Exception):
                    raise  # Ctrl-C: the record is safe, stop as asked
                return
        mark_synced(path, run_id)
        self.run_id = run_id
        link = uploader.run_link(run_id) if uploader is not None else None
        print(redact_text(f"mlflow: logged {what} {run_id} to {link or self.uri}"), file=sys.stderr)

    def _kept(self, record: RunRecord, path: Path, folder: Path, what: str, reason: str) -> None:
        kept = keep_beyond_dvc_copy(record, folder) if what == "run" else None
        where = (
            f"is kept in {kept} with the files it uploads (the run's folder is in DVC's "
            "temporary copy, deleted when the experiment ends). Upload it later with "
            "`evalframe sync`."
            if kept is not None
            else f"is kept in {path}. Upload it later with `evalframe sync {folder}` (or "
            "`evalframe sync` for every pending record)."
        )
        print(
            redact_text(
                f"warning: mlflow: could not log {what} to {self.uri} ({reason}). The results "
                f"are safe in {folder}; the MLflow record {where}"
            ),
            file=sys.stderr,
        )

    def _record(
        self, context: RunContext, outcome: RunOutcome | None, error: BaseException | None = None
    ) -> RunRecord:
        sweep = context.metadata.get("sweep") or {}
        marker = read_sweep_marker(Path(sweep["dir"])) if sweep.get("dir") else None
        return build_run_record(
            context,
            outcome,
            uri=self.uri,
            experiment_name=self._experiment_name(context.experiment, marker),
            run_name=self.config.run_name,
            cwd=self.cwd,
            error=error,
            log_all=self.config.log_all,
        )

    @staticmethod
    def _sweep_dir(context: RunContext) -> Path | None:
        sweep = context.metadata.get("sweep") or {}
        return Path(sweep["dir"]) if sweep.get("dir") else None

    # -- run hooks -------------------------------------------------------------
    def on_run_start(self, context: RunContext) -> None:
        self.started_ms = now_ms()
        context.metadata.setdefault("start_ms", self.started_ms)

    def on_run_end(self, context: RunContext, outcome: RunOutcome) -> None:
        self._ended = True  # an interrupt from here on must not log a second, FAILED run
        self._send(
            self._record(context, outcome), context.output_dir, "run", self._sweep_dir(context)
        )

    def on_error(self, context: RunContext, error: BaseException) -> None:
        """A run that fails before its results exist is still recorded, as FAILED."""
        from evalframe.core.errors import EvalframeError

        if self._ended:
            return
        record = self._record(context, None, error)
        if isinstance(error, EvalframeError):
            record.tags["evalframe.error"] = truncate(error.render(), 8000)
        context.output_dir.mkdir(parents=True, exist_ok=True)
        self._send(record, context.output_dir, "failed run", self._sweep_dir(context))

    # -- sweep hooks -------------------------------------------------------------
    def on_sweep_start(self, sweep: SweepContext) -> None:
        """Open the parent run now, so every job can name it as its parent.

        Its record is saved at once, marked open and locked for as long as
        this process runs the sweep: if the process dies, `evalframe sync`
        closes the parent from the sweep folder instead of leaving it RUNNING.
        """
        marker: dict[str, Any] = {
            "uid": new_uid(),
            "run_id": None,
            "uri": redact_text(self.uri),  # a password in the URI is never written down
            "experiment_name": self._experiment_name(sweep.experiment),
            "run_name": self.config.run_name or f"sweep {sweep.experiment} {sweep.sweep_dir.name}",
            "start_time": now_ms(),
            "swept": list(sweep.swept),  # the keys the jobs' run names are made of
        }
        tags = {"evalframe.experiment": sweep.experiment, "evalframe.sweep": "true"}
        record = RunRecord(
            uid=marker["uid"],
            kind="sweep",
            uri=self.uri,
            experiment_name=marker["experiment_name"],
            run_name=marker["run_name"],
            params={},
            metrics=[],
            tags=tags,
            artifacts=[],
            start_time=marker["start_time"],
            open=True,
        )
        path = record.save_pending(sweep.sweep_dir)
        index_pending(record.uid, path)
        self._sweep_lock = _hold_lock(path)
        try:
            marker["run_id"] = self._uploader().open_parent(record)
        except Exception as exc:  # noqa: BLE001  # the jobs still run; the parent is made later
            print(
                f"warning: mlflow: could not open the sweep's parent run at {self.uri} "
                f"({failure_reason(exc)}); it is created when the sweep ends or at "
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
            log_all=self.config.log_all,
        )
        if self._sweep_lock is not None:
            self._sweep_lock.close()  # the open record is replaced by the full one now
            self._sweep_lock = None
        self._send(record, sweep.sweep_dir, "sweep", None)


def _recent(flag: Path) -> bool:
    try:
        return time.time() - flag.stat().st_mtime < UNREACHABLE_FOR_SECONDS
    except OSError:
        return False


def _hold_lock(path: Path) -> Any:
    """An open file holding an exclusive lock on ``path`` (None if it cannot be had)."""
    import fcntl

    try:
        handle = open(path, "rb")  # noqa: SIM115  # held open on purpose until the sweep ends
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return None
    return handle
