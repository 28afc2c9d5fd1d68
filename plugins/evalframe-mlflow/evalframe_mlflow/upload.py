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

A SQLite store that cannot be opened or written (its folder missing and not
creatable, read-only, the path a folder, the file read-only or not a database)
is found out by :func:`check_sqlite_store` before MLflow sees it: MLflow would
retry creating its engine for over a minute and a half, printing each try.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evalframe.core.io import dvc_workspace
from evalframe.core.messages import warn
from evalframe_mlflow.locks import flock_within
from evalframe_mlflow.record import (
    DESCRIPTION_TAG,
    REPORT_FILE,
    TABLE_FILE,
    TAG_VALUE_LIMIT,
    UID,
    RunRecord,
    truncate,
)

__all__ = [
    "COMPLETE_TAG",
    "UID_TAG",
    "StoreUnusableError",
    "Uploader",
    "artifact_location_for",
    "check_sqlite_store",
    "dvc_workspace",
    "resolve_uri",
]

UID_TAG = "evalframe.run_uid"
PARENT_UID_TAG = "evalframe.parent_uid"
COMPLETE_TAG = "evalframe.upload"
#: The experiment tag MLflow 3's UI reads to open an experiment on its classic runs
#: view ("Machine learning") rather than the GenAI overview; UIs that have the
#: workflow switch (3.5 and later) read ``?workflowType=machine_learning`` instead.
KIND_TAG = "mlflow.experimentKind"
KIND = "custom_model_development"
#: The query string that opens the classic view in UIs with the workflow switch.
CLASSIC_VIEW = "workflowType=machine_learning"
_BATCH = {"metrics": 1000, "params": 100, "tags": 100}  # MLflow's per-request limits


class StoreUnusableError(Exception):
    """A SQLite store that cannot be opened or written: what is wrong, and how to fix it."""

    def __init__(self, problem: str, fix: str) -> None:
        super().__init__(f"{problem}; {fix}")
        self.problem = problem
        self.fix = fix


def failure_reason(exc: BaseException) -> str:
    """A short reason: "connection refused", "timed out", or the error's first line."""
    if isinstance(exc, StoreUnusableError):
        return str(exc)  # already says what is wrong and how to fix it
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


def resolve_uri(uri: str | None, cwd: Path | None = None) -> str:
    """The tracking URI with a sqlite file made absolute (null = ``<cwd>/mlflow.db``).

    A relative database would otherwise follow the process's cwd. In DVC's
    temporary copy of the repository (a queued experiment), ``cwd`` stands for the
    workspace's folder (:func:`dvc_workspace`): the copy and a store in it are
    deleted when the experiment ends.
    """
    base = dvc_workspace((cwd or Path.cwd()).resolve())
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


def sqlite_path(uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` URI; None for other URIs and in-memory ones."""
    prefix = "sqlite:///"
    if not uri.startswith(prefix):
        return None
    rest = uri[len(prefix) :].split("?", 1)[0]
    if not rest or rest == ":memory:":
        return None
    return Path(rest)


def check_sqlite_store(uri: str, *, write: bool = True) -> None:
    """Raise :class:`StoreUnusableError` if a ``sqlite:///`` store cannot be used; at once.

    ``write``: the store must take new runs (its folder is created if missing,
    as MLflow would, and must be writable: SQLite writes its journal beside the
    database); else it need only be read, and a missing file is left to the
    caller. Other URIs pass unchecked. No descriptor of the database itself is
    opened outside SQLite, which would drop SQLite's own locks in this process.
    """
    path = sqlite_path(uri)
    if path is None:
        return
    path = Path.cwd() / path  # absolute, symlinks kept: the path the user wrote
    if write:
        elsewhere = "or point tracking.uri (or sync's --uri) at a store in a writable folder"
    else:
        elsewhere = "or pass --uri / set MLFLOW_TRACKING_URI to another store"
    if path.is_dir():
        raise StoreUnusableError(
            f"{path} is a folder, not a database file",
            f"name a file in it, e.g. sqlite:///{path / 'mlflow.db'}",
        )
    folder = path.parent
    if write:
        blocker = next((p for p in (folder, *folder.parents) if p.exists()), None)
        if blocker is not None and not blocker.is_dir():
            raise StoreUnusableError(
                f"its folder {folder} cannot be created: {blocker} is a file",
                f"move that file, {elsewhere}",
            )
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreUnusableError(
                f"its folder {folder} cannot be created: {_os_reason(exc)}",
                f"create it, {elsewhere}",
            ) from None
        try:
            handle, probe = tempfile.mkstemp(prefix=".evalframe-probe-", dir=folder)
        except OSError as exc:
            raise StoreUnusableError(
                f"its folder {folder} is not writable: {_os_reason(exc)} "
                "(SQLite writes its journal beside the database)",
                f"make the folder writable, {elsewhere}",
            ) from None
        os.close(handle)
        with contextlib.suppress(OSError):
            Path(probe).unlink()
    if not path.exists():
        return
    if not path.is_file():
        raise StoreUnusableError(
            f"{path} is not a regular file", f"name a database file, {elsewhere}"
        )
    if not os.access(path, os.R_OK):
        raise StoreUnusableError(
            f"the database file {path} is not readable",
            f"make it readable (chmod u+r {path}), {elsewhere}",
        )
    if write and not os.access(path, os.W_OK):
        raise StoreUnusableError(
            f"the database file {path} is read-only",
            f"make it writable (chmod u+w {path}), {elsewhere}",
        )
    problem = _sqlite_problem(path)
    if problem:
        raise StoreUnusableError(
            f"{path} is not a usable SQLite database: {problem}",
            f"move it aside, {elsewhere}",
        )


def _os_reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def _sqlite_problem(path: Path) -> str | None:
    """Why SQLite cannot read ``path`` (not a database, corrupt), or None."""
    import sqlite3

    try:
        connection = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=2)
    except sqlite3.Error as exc:
        return str(exc)
    try:
        connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            return None  # another process is writing: MLflow waits for it
        return str(exc)
    except sqlite3.Error as exc:
        return str(exc)
    finally:
        connection.close()
    return None


@contextlib.contextmanager
def _quick_sqlite_engine() -> Iterator[None]:
    """MLflow's engine creation without its minute-and-a-half retry, and without its lines.

    MLflow retries ``create_sqlalchemy_engine_with_retry`` ten times with a growing
    sleep (no setting bounds it), which is for a database server still starting,
    not for a local file: one more try is left. Its "Operation will be retried"
    warnings are dropped (our own warning says what failed, once).
    """
    try:
        import mlflow.store.db.utils as db_utils
    except ImportError:  # pragma: no cover  # an MLflow laid out differently
        yield
        return
    saved = getattr(db_utils, "MAX_RETRY_COUNT", None)
    if isinstance(saved, int):
        db_utils.MAX_RETRY_COUNT = min(saved, 2)
    try:
        yield
    finally:
        if isinstance(saved, int):
            db_utils.MAX_RETRY_COUNT = saved


class _NoEngineRetryLines(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("SQLAlchemy engine could not be created")


_ENGINE_FILTER = _NoEngineRetryLines()


@contextlib.contextmanager
def store_lock(uri: str, wait: float = 300.0) -> Iterator[None]:
    """An exclusive ``flock`` for a SQLite tracking store, held by one process at a time.

    The lock file lives in the machine's temporary folder, keyed by the store's
    absolute path, so every process on the machine finds the same one whatever
    its cache folder; never beside the database: opening and closing another
    descriptor of the database file would drop SQLite's own POSIX locks in this
    process.
    """
    import fcntl
    import hashlib

    folder = Path(tempfile.gettempdir()) / "evalframe-mlflow-locks"
    folder.mkdir(parents=True, exist_ok=True)
    where = str(Path(uri[len("sqlite:///") :]).resolve()) if uri.startswith("sqlite:///") else uri
    name = hashlib.sha256(where.encode("utf-8")).hexdigest()[:24] + ".lock"
    with open(folder / name, "a+b") as handle:
        # past the wait, go on unlocked rather than hang: MLflow's own error says the rest
        locked = flock_within(handle, wait)
        try:
            yield
        finally:
            if locked:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


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
    # MLflow prints "View run ... at" on stdout, inside evalframe's report, with a link
    # to the GenAI overview; the tracker prints its own, to the classic runs view
    os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")


class Uploader:
    """One tracking URI; uploads records and opens sweep parents.

    ``write=False`` for a reader (``evalframe runs``, ``compare``): a SQLite
    store then need only be readable.
    """

    def __init__(
        self, uri: str, timeout_seconds: float = 5, retries: int = 1, *, write: bool = True
    ) -> None:
        check_sqlite_store(uri, write=write)  # before MLflow's minutes-long engine retry
        configure_http(timeout_seconds, retries)
        self.retries = retries
        # urllib3 logs every retry as a warning; our own message says it once
        logging.getLogger("urllib3.connectionpool").setLevel(logging.ERROR)
        # MLflow announces making a new SQLite store's tables at INFO, mid-report:
        # the store's creation is not news to the user (the run's line names the store)
        for name in ("mlflow.store.db.utils", "alembic.runtime.migration"):
            logging.getLogger(name).setLevel(logging.WARNING)
        logging.getLogger("mlflow.store.db.utils").addFilter(_ENGINE_FILTER)  # once: a set
        from mlflow.tracking import MlflowClient

        self.uri = uri
        if uri.startswith("sqlite:///"):
            # MLflow creates and migrates a SQLite store's tables the first time a process
            # opens it; three runs doing that at once break each other ("table experiments
            # already exists"). One process at a time, the others then find it made.
            with store_lock(uri), _quick_sqlite_engine():
                self.client = MlflowClient(tracking_uri=uri)
                self.client.search_experiments(max_results=1)
        else:
            self.client = MlflowClient(tracking_uri=uri)

    def run_link(self, run_id: str) -> str | None:
        """The run's page in a server's UI, on the classic runs view; None for a file store."""
        if not self.uri.startswith(("http://", "https://")):
            return None
        try:
            experiment = self.client.get_run(run_id).info.experiment_id
        except Exception:  # noqa: BLE001  # only a convenience: the run is logged
            return None
        base = self.uri.rstrip("/")
        return f"{base}/#/experiments/{experiment}/runs/{run_id}?{CLASSIC_VIEW}"

    # -- lookups -------------------------------------------------------------
    def experiment_id(self, name: str, artifact_location: str | None = None) -> str:
        """The experiment's id, created as a classic (not GenAI) experiment if new.

        An existing experiment without a kind gets the classic one; a kind
        someone chose is left as it is.
        """
        found = self.client.get_experiment_by_name(name)
        if found is not None:
            if found.lifecycle_stage == "deleted":
                # MLflow keeps a deleted experiment's name taken; logging must go somewhere
                warn(f"mlflow: experiment {name!r} was deleted; restoring it to log this run")
                self.client.restore_experiment(found.experiment_id)
            if KIND_TAG not in (found.tags or {}):
                self.client.set_experiment_tag(found.experiment_id, KIND_TAG, KIND)
            return str(found.experiment_id)
        location = artifact_location or artifact_location_for(self.uri)
        try:
            return str(
                self.client.create_experiment(
                    name, artifact_location=location, tags={KIND_TAG: KIND}
                )
            )
        except Exception:
            found = self.client.get_experiment_by_name(name)  # made meanwhile by a parallel job
            if found is None:
                raise
            return str(found.experiment_id)

    def _all_experiments(self) -> list[str]:
        return [str(e.experiment_id) for e in self.client.search_experiments()]

    def runs_by_uid(self, uid: str, experiment_ids: list[str] | None = None) -> list[Any]:
        """Runs tagged with ``uid`` (complete ones first), in any experiment by default."""
        if not UID.fullmatch(uid):  # it goes into a filter string
            raise ValueError(f"not a record uid: {uid!r}")
        ids = experiment_ids or self._all_experiments()
        runs = list(
            self.client.search_runs(
                ids, filter_string=f"tags.`{UID_TAG}` = '{uid}'", max_results=100
            )
        )
        runs.sort(key=lambda r: (r.data.tags.get(COMPLETE_TAG) != "complete", r.info.start_time))
        return runs

    # -- writes ----------------------------------------------------------------
    def open_run(self, record: RunRecord) -> tuple[str, bool, str]:
        """(run id, already complete, status) for the record's run, creating it if needed.

        Two runs with one uid can only come from a create request that MLflow
        retried after the server had already done it; the extra ones are deleted.
        """
        exp_id = self.experiment_id(record.experiment_name, record.artifact_location)
        existing = self.runs_by_uid(record.uid, [exp_id])
        if existing:
            keep, *extra = existing
            for run in extra:
                self.client.delete_run(run.info.run_id)
            done = keep.data.tags.get(COMPLETE_TAG) == "complete"
            return str(keep.info.run_id), done, str(keep.info.status)
        tags = {UID_TAG: record.uid}
        if record.parent_uid:
            tags[PARENT_UID_TAG] = record.parent_uid
            parent = record.parent_run_id or self._parent_id(record.parent_uid)
            if parent:
                tags["mlflow.parentRunId"] = parent
        return self._create_once(exp_id, record, tags), False, "RUNNING"

    def _create_once(self, exp_id: str, record: RunRecord, tags: dict[str, str]) -> str:
        """``create_run`` without MLflow's own retries, which could create it twice.

        After a failed attempt the uid is looked up before trying again: the
        server may have created the run and only the answer was lost.
        """
        for attempt in range(self.retries + 1):
            saved = os.environ.get("MLFLOW_HTTP_REQUEST_MAX_RETRIES")
            os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] = "0"
            try:
                run = self.client.create_run(
                    exp_id, start_time=record.start_time, tags=tags, run_name=record.run_name
                )
                return str(run.info.run_id)
            except Exception:
                if attempt == self.retries:
                    raise
            finally:
                if saved is None:
                    os.environ.pop("MLFLOW_HTTP_REQUEST_MAX_RETRIES", None)
                else:
                    os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] = saved
            found = self.runs_by_uid(record.uid, [exp_id])
            if found:
                return str(found[0].info.run_id)
            time.sleep(min(2.0**attempt, 5.0))
        raise AssertionError("unreachable")  # the loop returns or raises

    def _parent_id(self, parent_uid: str) -> str | None:
        """The sweep parent's run id, in whatever experiment it was logged to."""
        found = self.runs_by_uid(parent_uid)
        return str(found[0].info.run_id) if found else None

    def upload(self, record: RunRecord) -> tuple[str, bool]:
        """Send the whole record; returns (run id, whether it was already there).

        The run is ended before it is marked complete, so a complete run is
        never left RUNNING; a run found complete but still RUNNING (from an
        older evalframe) is ended.
        """
        from mlflow.entities import Metric, Param, RunTag

        run_id, done, status = self.open_run(record)
        client = self.client
        if done:
            if status == "RUNNING":
                client.set_terminated(run_id, status=record.status, end_time=record.end_time)
            return run_id, True
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
        if record.datasets:
            self._log_datasets(run_id, record.datasets)
        elif record.dataset:  # a record saved by an evalframe from before datasets
            self._log_dataset(run_id, record.dataset)
        missing = [p for p in record.artifacts if not Path(p).is_file()]
        for path in record.artifacts:
            if path not in missing:
                client.log_artifact(run_id, path)
        if record.table:
            self._log_table(run_id, record.table)
        if any(Path(p).name == REPORT_FILE for p in record.artifacts if p not in missing):
            self._point_to_report(run_id, record)
        if missing:
            warn(
                f"mlflow: {len(missing)} output file(s) of the run are gone and were not uploaded: "
                + ", ".join(missing[:5])
            )
            client.set_tag(run_id, "evalframe.missing_artifacts", json.dumps(missing)[:8000])
        if record.kind == "sweep":
            self._adopt_orphans(run_id, record)
        client.set_terminated(run_id, status=record.status, end_time=record.end_time)
        client.set_tag(run_id, COMPLETE_TAG, "complete")
        return run_id, False

    def _log_datasets(self, run_id: str, datasets: list[dict[str, str]]) -> None:
        """Each dataset through ``mlflow.data``, as ``mlflow.evaluate`` logs its own."""
        from mlflow.data.dataset_source_registry import resolve_dataset_source
        from mlflow.data.meta_dataset import MetaDataset
        from mlflow.entities import DatasetInput, InputTag

        class _Profiled(MetaDataset):  # type: ignore[misc,unused-ignore]  # keeps no profile
            def __init__(self, profile: str | None, **kwargs: Any) -> None:
                self._evalframe_profile = profile
                super().__init__(**kwargs)

            @property
            def profile(self) -> Any:
                return json.loads(self._evalframe_profile) if self._evalframe_profile else None

            def to_dict(self) -> dict[str, str]:
                config = dict(super().to_dict())
                if self._evalframe_profile:
                    config["profile"] = self._evalframe_profile
                return config

        inputs = []
        for d in datasets:
            try:
                with warnings.catch_warnings():
                    # MLflow registers its local-file source twice, then warns that a
                    # file:// URI "can be interpreted in multiple ways" (both the same)
                    warnings.simplefilter("ignore", UserWarning)
                    source = resolve_dataset_source(d["uri"])
            except Exception:  # noqa: BLE001  # an unknown file: a source that only names it
                from mlflow.data.code_dataset_source import CodeDatasetSource

                source = CodeDatasetSource({"uri": d["uri"]})
            dataset = _Profiled(d.get("profile"), source=source, name=d["name"], digest=d["digest"])
            tags = [InputTag(key="mlflow.data.context", value=d.get("context") or "eval")]
            inputs.append(DatasetInput(dataset._to_mlflow_entity(), tags=tags))
        self.client.log_inputs(run_id, datasets=inputs)

    def _log_table(self, run_id: str, table: dict[str, Any]) -> None:
        """The metrics table through ``log_table``: the UI's table view, once.

        ``log_table`` appends to a table that is already there, so a run whose
        upload was cut off after the table keeps the one it has.
        """
        name = str(table["artifact_file"])
        if any(a.path == name for a in self.client.list_artifacts(run_id)):
            return
        columns = [str(c) for c in table["columns"]]
        rows = table.get("rows") or []
        data = {c: [row[i] for row in rows] for i, c in enumerate(columns)}
        self.client.log_table(run_id, data=data, artifact_file=name)

    def _point_to_report(self, run_id: str, record: RunRecord) -> None:
        """The run's description links its HTML report, which the artifact view shows
        inline, above the record's own description (its summary.md, a sweep's jobs.md)."""
        run = self.client.get_run(run_id)
        link = (
            f"#/experiments/{run.info.experiment_id}/runs/{run_id}/artifacts/{REPORT_FILE}"
            f"?{CLASSIC_VIEW}"
        )
        note = f"**[Open the evalframe report]({link})** ({REPORT_FILE} under Artifacts)."
        if record.table:  # a sweep's parent has no table of its own
            note += f" The full metric table is {TABLE_FILE} there."
        text = record.tags.get(DESCRIPTION_TAG)
        if text:  # kept short enough for the link (record.LINK_ROOM)
            note = f"{note}\n\n{text}"
        self.client.set_tag(run_id, DESCRIPTION_TAG, note[:TAG_VALUE_LIMIT])

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
        children = self.client.search_runs(
            self._all_experiments(),
            filter_string=f"tags.`{PARENT_UID_TAG}` = '{record.uid}'",
            max_results=10000,
        )
        for child in children:
            if child.data.tags.get("mlflow.parentRunId") != parent_id:
                self.client.set_tag(child.info.run_id, "mlflow.parentRunId", parent_id)

    def open_parent(self, record: RunRecord) -> str:
        """Create a sweep's parent run (RUNNING) so children can point to it from the start."""
        run_id, _, _ = self.open_run(record)
        return run_id
