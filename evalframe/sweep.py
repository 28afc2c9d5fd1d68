"""Sweeps (``-m``): telling trackers when a sweep starts and ends, whatever the launcher.

Hydra runs each job of a sweep through a *launcher*: in this process (basic),
in worker processes (joblib) or on a cluster (submitit). Only the process that
started the sweep sees it begin and end, so that is where trackers hear of
it: :class:`SweepCallback` is a Hydra callback, added to every run by
:func:`evalframe.hydra_app.run_hydra`, that emits ``on_sweep_start`` before
the first job and ``on_sweep_end`` after the last.

Hydra skips ``on_multirun_end`` when a job raises, so the end is also
emitted by :func:`finish_active`, which ``run_hydra`` calls in a ``finally``
and which is registered with :mod:`atexit` as a last resort. It runs once.

What the jobs did is read back from their folders, not from memory, because
a job may have run in another process: each job writes ``job.json`` (its exit
code and error, see :func:`write_job_record`) next to its ``summary.json``.
"""

from __future__ import annotations

import atexit
import json
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback  # only Hydra runs import this module

from evalframe.hooks import HookRelay, SweepContext, SweepJob
from evalframe.io import atomic_write_json

__all__ = [
    "JOB_FILE",
    "SweepCallback",
    "collect_jobs",
    "finish_active",
    "take_started",
    "write_job_record",
]

#: Written into every sweep job's folder: ``{"exit_code": int, "error": str | null}``.
JOB_FILE = "job.json"

_lock = threading.Lock()
_active: _Sweep | None = None
_started: list[Path] = []  # sweep folders started in this process, for run_hydra's exit code


class _Sweep:
    """A started sweep and the trackers that were told about it."""

    def __init__(self, context: SweepContext, relay: HookRelay) -> None:
        self.context = context
        self.relay = relay
        self.finished = False

    def finish(self) -> None:
        if self.finished:
            return
        self.finished = True
        jobs = collect_jobs(self.context.sweep_dir)
        self.relay.emit("on_sweep_end", self.context, jobs)


#: Written into the sweep folder at its start: ``{"id": hex, "started": unix seconds}``.
#: A folder reused by a second sweep (``hydra.sweep.dir=fixed``) keeps the first
#: sweep's job folders; only jobs that carry the current id are this sweep's.
SWEEP_FILE = ".evalframe-sweep.json"


def write_job_record(output_dir: Path, exit_code: int, error: str | None = None) -> None:
    """Record how one sweep job ended, for :func:`collect_jobs` in the launching process."""
    sweep_id = _read_json(output_dir.parent / SWEEP_FILE).get("id")
    atomic_write_json(
        output_dir / JOB_FILE, {"exit_code": exit_code, "error": error, "sweep_id": sweep_id}
    )


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _overrides(job_dir: Path) -> tuple[str, ...]:
    """The job's own overrides, from the ``.hydra/overrides.yaml`` Hydra writes."""
    path = job_dir / ".hydra" / "overrides.yaml"
    if not path.is_file():
        return ()
    from omegaconf import OmegaConf

    data = OmegaConf.to_container(OmegaConf.load(path))
    return tuple(str(x) for x in data) if isinstance(data, list) else ()


def _this_sweeps(job_dir: Path, record: dict[str, Any], sweep: dict[str, Any]) -> bool:
    """Whether a job folder belongs to the sweep described by ``sweep`` (its SWEEP_FILE)."""
    if not sweep.get("id"):
        return True  # a folder from before sweeps had ids: take every job
    if record:
        return bool(record.get("sweep_id") == sweep["id"])
    # no job.json: a job that crashed hard; it is ours if Hydra set it up after we started
    try:
        return (job_dir / ".hydra").stat().st_mtime >= float(sweep.get("started", 0)) - 1
    except OSError:
        return False


def collect_jobs(sweep_dir: Path) -> list[SweepJob]:
    """This sweep's job folders under ``sweep_dir`` (named by job number), in job order."""
    jobs: list[SweepJob] = []
    if not sweep_dir.is_dir():
        return jobs
    sweep = _read_json(sweep_dir / SWEEP_FILE)
    for child in sweep_dir.iterdir():
        if not (child.is_dir() and child.name.isdigit()):
            continue
        record = _read_json(child / JOB_FILE)
        if not _this_sweeps(child, record, sweep):
            continue
        summary = _read_json(child / "summary.json")
        code = record.get("exit_code", summary.get("exit_code"))
        jobs.append(
            SweepJob(
                num=int(child.name),
                output_dir=child.resolve(),
                overrides=_overrides(child),
                exit_code=code if isinstance(code, int) else None,
                summary=summary,
                error=record.get("error"),
            )
        )
    return sorted(jobs, key=lambda j: j.num)


def take_started() -> list[Path]:
    """The sweep folders started since the last call (and forget them)."""
    taken = list(_started)
    _started.clear()
    return taken


def finish_active() -> None:
    """Emit ``on_sweep_end`` for the running sweep, if it has not been emitted yet."""
    global _active
    with _lock:
        sweep, _active = _active, None
    if sweep is not None:
        sweep.finish()


def _start(config: Any) -> None:
    from omegaconf import OmegaConf

    from evalframe.config import resolve_trackers
    from evalframe.errors import EvalframeError
    from evalframe.hydra_app import release_stderr

    global _active
    release_stderr()  # the sweep has begun: Hydra's output passes through from now on
    finish_active()  # a previous sweep in this process that never ended
    sweep_dir = Path(str(config.hydra.sweep.dir)).resolve()
    sweep_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(sweep_dir / SWEEP_FILE, {"id": uuid.uuid4().hex, "started": time.time()})
    _started.append(sweep_dir)
    experiment = str(OmegaConf.select(config, "experiment", default="default"))
    try:
        tracking = OmegaConf.to_container(
            OmegaConf.select(config, "tracking", default={"name": "none"}), resolve=True
        )
        trackers = resolve_trackers(
            {str(k): v for k, v in tracking.items()} if isinstance(tracking, dict) else {}
        )
    except EvalframeError as exc:
        # The jobs will report the bad config themselves, each with exit code 2.
        print(f"warning: sweep not tracked: {exc.render()}", file=sys.stderr)
        return
    except Exception as exc:  # noqa: BLE001  # e.g. an interpolation only a job can resolve
        print(f"warning: sweep not tracked: {type(exc).__name__}: {exc}", file=sys.stderr)
        return
    relay = HookRelay.build(trackers)
    if not relay.trackers:
        return
    context = SweepContext(
        experiment=experiment, sweep_dir=sweep_dir, config={"tracking": tracking}
    )
    sweep_dir.mkdir(parents=True, exist_ok=True)
    relay.emit("on_sweep_start", context)
    with _lock:
        _active = _Sweep(context, relay)


class SweepCallback(Callback):
    """Hydra callback: ``on_sweep_start`` / ``on_sweep_end`` for evalframe's trackers."""

    def on_multirun_start(self, config: Any, **kwargs: Any) -> None:
        _start(config)

    def on_multirun_end(self, config: Any, **kwargs: Any) -> None:
        finish_active()


atexit.register(finish_active)
