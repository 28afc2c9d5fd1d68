"""Sending a :class:`RunRecord` to MLflow, exactly once, with short timeouts.

Exactly once: every record has a ``uid``, logged as the tag
``evalframe.run_uid`` when its run is created, and the last thing an upload
does (before ending the run) is set ``evalframe.upload=complete``. So an
upload first looks the uid up:

* a run with the uid and the ``complete`` tag: already there, nothing is sent;
* a run with the uid but not complete (an upload cut off half-way, or a
  sweep's parent opened at the sweep's start): that run is filled in;
* none: a run is created.

Logging the same param, tag or metric point twice is harmless in MLflow, so
filling in a half-uploaded run cannot duplicate anything.

Timeouts: MLflow's own defaults retry for minutes against a server that is
down. The settings are put in the environment before mlflow is imported and
before every client is made (mlflow reads them per request).
"""

from __future__ import annotations

import logging
import math
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evalframe_mlflow.record import SYNCED_FILE, RunRecord

__all__ = [
    "COMPLETE_TAG",
    "UID_TAG",
    "Uploader",
    "artifact_location_for",
    "resolve_uri",
]

UID_TAG = "evalframe.run_uid"
PARENT_UID_TAG = "evalframe.parent_uid"
COMPLETE_TAG = "evalframe.upload"
_BATCH = {"metrics": 1000, "params": 100, "tags": 100}  # MLflow's per-request limits


def resolve_uri(uri: str | None, cwd: Path | None = None) -> str:
    """The tracking URI with a sqlite file made absolute (null = ``<cwd>/mlflow.db``).

    DVC's queued experiments run in a temporary copy of the repository, where
    a relative database would be created and then thrown away.
    """
    base = (cwd or Path.cwd()).resolve()
    if uri is None or uri == "":
        uri = os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{base / 'mlflow.db'}"
    prefix = "sqlite:///"
    if uri.startswith(prefix) and not uri.startswith(prefix + "/"):
        rest = uri[len(prefix) :]
        if rest and rest != ":memory:" and not Path(rest).is_absolute():
            return f"{prefix}{(base / rest).resolve()}"
    return uri


def artifact_location_for(uri: str) -> str | None:
    """Beside the sqlite file (``<dir>/mlartifacts``) rather than in whatever cwd."""
    if uri.startswith("sqlite:///"):
        db = Path(uri[len("sqlite:///") :])
        if db.is_absolute():
            return (db.parent / "mlartifacts").as_uri()
    return None


def _chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def configure_http(timeout_seconds: float, retries: int) -> None:
    """Short HTTP timeouts and few retries, so a dead server fails in seconds."""
    os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] = str(max(1, math.ceil(timeout_seconds)))
    os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] = str(retries)
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "1")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_BACKOFF_JITTER", "0.5")
    # a progress bar per downloaded file would drown `evalframe compare`'s output
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")


class Uploader:
    """One tracking URI; uploads records and opens sweep parents."""

    def __init__(self, uri: str, timeout_seconds: float = 10, retries: int = 2) -> None:
        configure_http(timeout_seconds, retries)
        # urllib3 logs every retry as a warning; our own message says it once
        logging.getLogger("urllib3.connectionpool").setLevel(logging.ERROR)
        from mlflow.tracking import MlflowClient

        self.uri = uri
        self.client = MlflowClient(tracking_uri=uri)

    # -- lookups -------------------------------------------------------------
    def experiment_id(self, name: str, artifact_location: str | None = None) -> str:
        found = self.client.get_experiment_by_name(name)
        if found is not None:
            if found.lifecycle_stage == "deleted":
                self.client.restore_experiment(found.experiment_id)
            return str(found.experiment_id)
        location = artifact_location or artifact_location_for(self.uri)
        try:
            return str(self.client.create_experiment(name, artifact_location=location))
        except Exception:
            found = self.client.get_experiment_by_name(name)  # made meanwhile by a parallel job
            if found is None:
                raise
            return str(found.experiment_id)

    def find_by_uid(self, experiment_id: str, uid: str) -> Any | None:
        runs = self.client.search_runs(
            [experiment_id], filter_string=f"tags.`{UID_TAG}` = '{uid}'", max_results=5
        )
        return runs[0] if runs else None

    # -- writes ----------------------------------------------------------------
    def open_run(self, record: RunRecord) -> tuple[str, bool]:
        """(run id, already complete) for the record's run, creating it if needed."""
        exp_id = self.experiment_id(record.experiment_name, record.artifact_location)
        existing = self.find_by_uid(exp_id, record.uid)
        if existing is not None:
            done = existing.data.tags.get(COMPLETE_TAG) == "complete"
            return str(existing.info.run_id), done
        tags = {UID_TAG: record.uid}
        if record.parent_uid:
            tags[PARENT_UID_TAG] = record.parent_uid
            parent = record.parent_run_id or self._parent_id(exp_id, record.parent_uid)
            if parent:
                tags["mlflow.parentRunId"] = parent
        run = self.client.create_run(
            exp_id, start_time=record.start_time, tags=tags, run_name=record.run_name
        )
        return str(run.info.run_id), False

    def _parent_id(self, exp_id: str, parent_uid: str) -> str | None:
        parent = self.find_by_uid(exp_id, parent_uid)
        return str(parent.info.run_id) if parent is not None else None

    def upload(self, record: RunRecord) -> tuple[str, bool]:
        """Send the whole record; returns (run id, whether it was already there)."""
        from mlflow.entities import Metric, Param, RunTag

        run_id, done = self.open_run(record)
        if done:
            return run_id, True
        client = self.client
        params = [Param(k, v) for k, v in sorted(record.params.items())]
        stamp = record.end_time
        metrics = [Metric(k, v, stamp, step) for k, v, step in record.metrics]
        tags = [RunTag(k, v) for k, v in sorted(record.tags.items())]
        for chunk in _chunks(params, _BATCH["params"]):
            client.log_batch(run_id, params=chunk)
        for chunk in _chunks(metrics, _BATCH["metrics"]):
            client.log_batch(run_id, metrics=chunk)
        for chunk in _chunks(tags, _BATCH["tags"]):
            client.log_batch(run_id, tags=chunk)
        if record.dataset:
            self._log_dataset(run_id, record.dataset)
        for path in record.artifacts:
            if Path(path).is_file():
                client.log_artifact(run_id, path)
        if record.kind == "sweep":
            self._adopt_orphans(run_id, record)
        client.set_tag(run_id, COMPLETE_TAG, "complete")
        client.set_terminated(run_id, status=record.status, end_time=record.end_time)
        return run_id, False

    def _log_dataset(self, run_id: str, dataset: dict[str, str]) -> None:
        from mlflow.entities import Dataset, DatasetInput, InputTag

        entity = Dataset(
            name=dataset["name"],
            digest=dataset["digest"],
            source_type=dataset["source_type"],
            source=dataset["source"],
            profile=dataset.get("profile"),
        )
        context = InputTag(key="mlflow.data.context", value="evaluation")
        self.client.log_inputs(run_id, datasets=[DatasetInput(entity, tags=[context])])

    def _adopt_orphans(self, parent_id: str, record: RunRecord) -> None:
        """Children logged while their parent did not exist yet get linked to it now."""
        exp_id = self.experiment_id(record.experiment_name)
        children = self.client.search_runs(
            [exp_id], filter_string=f"tags.`{PARENT_UID_TAG}` = '{record.uid}'", max_results=10000
        )
        for child in children:
            if child.data.tags.get("mlflow.parentRunId") != parent_id:
                self.client.set_tag(child.info.run_id, "mlflow.parentRunId", parent_id)

    def open_parent(self, record: RunRecord) -> str:
        """Create a sweep's parent run (RUNNING) so children can point to it from the start."""
        run_id, _ = self.open_run(record)
        return run_id


# -- pending records ------------------------------------------------------------
def mark_synced(path: Path, run_id: str) -> None:
    """Turn a pending record into a synced one (atomically: rename after writing)."""
    import json

    from evalframe.io import atomic_write_json

    data = json.loads(path.read_text(encoding="utf-8"))
    data["run_id"] = run_id
    atomic_write_json(path.parent / SYNCED_FILE, data)
    path.unlink()


def warn(message: str) -> None:
    print(f"warning: mlflow: {message}", file=sys.stderr)
