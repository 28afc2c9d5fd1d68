"""Sweeps (``-m``): telling trackers when a sweep starts and ends, whatever the launcher.

Hydra runs each job of a sweep through a *launcher*: in this process (basic),
in worker processes (joblib) or on a cluster (submitit). Only the process that
started the sweep sees it begin and end, so that is where trackers hear of
it: :class:`SweepCallback` is a Hydra callback, added to every run by
:func:`evalframe.app.hydra_app.run_hydra`, that emits ``on_sweep_start`` before
the first job and ``on_sweep_end`` after the last.

Hydra skips ``on_multirun_end`` when a job raises, so the end is also
emitted by :func:`finish_active`, which ``run_hydra`` calls in a ``finally``
and which is registered with :mod:`atexit` as a last resort. It runs once.

A launcher that cannot work here is refused before the sweep starts (SLURM's
without ``srun``: no folder, no tracked parent); one that raises once the
sweep has started is said in one paragraph by :func:`launch_failures_said`,
and the sweep ends with that as its ``error`` (a tracker closes its parent as
failed, with the reason).

When the sweep ends, the page comparing its jobs (``report.html``, labelled by
their overrides) is written into the sweep folder, tracked or not, before
``on_sweep_end``, so a tracker can upload it.

What the jobs did is read back from their folders, not from memory, because
a job may have run in another process: each job writes ``job.json`` (its exit
code and error) next to its ``summary.json``; see
:class:`evalframe.assess.runfolder.SweepFolder`.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback  # only Hydra runs import this module

from evalframe.app import launchers, prechecks
from evalframe.app.stderr import release_stderr
from evalframe.assess.runfolder import SweepFolder
from evalframe.core.errors import EvalframeError
from evalframe.core.secrets import redact_text
from evalframe.plugin.hooks import HookRelay, SweepContext

__all__ = [
    "SecretsCallback",
    "SweepCallback",
    "finish_active",
    "launch_failures_said",
    "refusal",
    "say_how_to_merge",
    "swept_keys",
    "take_started",
]

_lock = threading.Lock()
_active: _Sweep | None = None
_started: list[Path] = []  # sweep folders started in this process, for run_hydra's exit code
_refused: list[str] = []  # why evalframe stopped a run (mostly before Hydra wrote anything)
_launched: list[tuple[Path, Any]] = []  # the sweep started by this run_hydra: (folder, config)


class _Sweep:
    """A started sweep and the trackers that were told about it (maybe none)."""

    def __init__(self, context: SweepContext, relay: HookRelay, page: bool = True) -> None:
        self.context = context
        self.relay = relay
        self.page = page
        self.finished = False

    def finish(self) -> None:
        if self.finished:
            return
        self.finished = True
        if self.page:
            _write_page(self.context.sweep_dir)
        jobs = SweepFolder(self.context.sweep_dir).jobs()
        self.relay.emit("on_sweep_end", self.context, jobs)


def _write_page(sweep_dir: Path) -> None:
    """The page comparing the jobs, before ``on_sweep_end`` so a tracker can upload it.
    A page that cannot be drawn is a warning: every job's results are already written."""
    from evalframe.report.page import write_sweep_report

    if not any(job.summary for job in SweepFolder(sweep_dir).jobs()):
        return  # nothing ran (Hydra refused the sweep), or no job got as far as results
    try:
        page = write_sweep_report(sweep_dir)
    except EvalframeError as exc:
        print(f"warning: no sweep report: {exc.render()}", file=sys.stderr)
        return
    except Exception as exc:  # noqa: BLE001  # the jobs' results stand without the page
        print(
            f"warning: no sweep report: {type(exc).__name__}: {redact_text(str(exc))}",
            file=sys.stderr,
        )
        return
    print(f"Sweep report: {page}")


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


def swept_keys(config: Any) -> tuple[str, ...]:
    """The keys the sweep varies: a sweep in ``hydra.sweeper.params`` (the search space
    of a tuning sweep, ``retriever.k1: interval(0.3, 3.0)``) or on the command line
    (``k1=0.9,1.2``, ``range(...)``), where a plain value overrides the config's sweep.

    Read from Hydra's own parse of the overrides, so quoting and sweep
    functions are understood as Hydra understands them.
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from omegaconf import OmegaConf

    task = OmegaConf.select(config, "hydra.overrides.task", default=[]) or []
    params: Any = OmegaConf.select(config, "hydra.sweeper.params", default=None)
    try:
        params = OmegaConf.to_container(params, resolve=True) if params is not None else {}
    except Exception:  # noqa: BLE001  # the sweeper says what is wrong with its params
        params = {}
    lines = [f"{k!s}={v}" for k, v in params.items()] if isinstance(params, dict) else []
    parser = OverridesParser.create()
    swept: dict[str, bool] = {}  # in the sweeper's order: its params, then the command line
    for line in [*lines, *(str(o) for o in task)]:
        try:
            (o,) = parser.parse_overrides([line])
        except Exception:  # noqa: BLE001  # Hydra has already reported a bad override
            continue
        swept[o.key_or_group] = o.is_sweep_override()
    return tuple(k for k, is_swept in swept.items() if is_swept)


def _start(config: Any) -> None:
    from omegaconf import OmegaConf

    from evalframe.pipeline.config import resolve_trackers

    global _active
    finish_active()  # a previous sweep in this process that never ended
    sweep_dir = Path(str(config.hydra.sweep.dir)).resolve()
    # made while Hydra's output is still held: a folder that cannot be made (a read-only
    # working folder) stops Hydra with a traceback that evalframe then says in one line
    SweepFolder(sweep_dir).start()
    release_stderr()  # the sweep has begun: Hydra's output passes through from now on
    _started.append(sweep_dir)
    _launched[:] = [(sweep_dir, config)]
    experiment = str(OmegaConf.select(config, "experiment", default="default"))
    if _is_shard_sweep(config):
        return  # shards are not runs: `evalframe merge` tracks and reports the whole once
    page = OmegaConf.select(config, "report.html", default=True) is not False
    context = SweepContext(experiment=experiment, sweep_dir=sweep_dir, config={})
    with _lock:  # even untracked, the sweep's end writes its page
        _active = _Sweep(context, HookRelay([]), page)
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
        print(
            f"warning: sweep not tracked: {type(exc).__name__}: {redact_text(str(exc))}",
            file=sys.stderr,
        )
        return
    relay = HookRelay.build(trackers)
    if not relay.trackers:
        return
    context = SweepContext(
        experiment=experiment,
        sweep_dir=sweep_dir,
        config={"tracking": tracking},
        swept=swept_keys(config),
    )
    sweep_dir.mkdir(parents=True, exist_ok=True)
    relay.emit("on_sweep_start", context)
    with _lock:
        _active = _Sweep(context, relay, page)


def _is_shard_sweep(config: Any) -> bool:
    """Whether the sweep's jobs are shards (``shard=...`` among its overrides)."""
    from omegaconf import OmegaConf

    task = OmegaConf.select(config, "hydra.overrides.task", default=None) or []
    sharded = OmegaConf.select(config, "shard", default=None) is not None
    return sharded or any(str(o).lstrip("+").startswith("shard=") for o in task)


def refusal() -> str | None:
    """The error evalframe stopped the last run with (and forget it): mostly before Hydra
    wrote a file; a launcher's failure, once the sweep had started."""
    return _refused.pop() if _refused else None


def _said_launch_failure(exc: Exception) -> bool:
    """Whether an exception out of Hydra's multirun is the started sweep's launcher or
    sweeper failing, now said (:func:`refusal`) and given to the sweep as its error."""
    from evalframe.app.launchers import launch_failure

    if not _launched:
        return False  # before the sweep started: Hydra's own error, said as it says it
    sweep_dir, config = _launched[0]
    error = launch_failure(exc, config, len(SweepFolder(sweep_dir).jobs()))
    if error is None:
        return False
    with _lock:
        if _active is not None:
            _active.context.error = error.render()
    if os.environ.get("HYDRA_FULL_ERROR") == "1":
        return False  # the traceback, as asked
    _refused.append(error.render())
    return True


@contextlib.contextmanager
def launch_failures_said() -> Iterator[None]:
    """While ``run_hydra`` runs Hydra: a launcher or sweeper that raises once the sweep has
    started is said in one paragraph (exit code 2), not as Hydra's traceback.

    Hydra prints an exception out of its multirun itself and exits, so the
    exception is taken on its way out of ``Hydra.multirun``, where the sweep's
    folder tells whether any job had started.
    """
    _launched.clear()
    try:
        from hydra._internal.hydra import Hydra
    except ImportError:  # pragma: no cover - another Hydra layout: Hydra says it
        yield
        return
    original = Hydra.multirun

    def multirun(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return original(self, *args, **kwargs)
        except Exception as exc:
            if not _said_launch_failure(exc):
                raise
            raise SystemExit(2) from None

    Hydra.multirun = multirun  # type: ignore[method-assign]  # restored below
    try:
        yield
    finally:
        Hydra.multirun = original  # type: ignore[method-assign]
        _launched.clear()


def _refuse(problem: EvalframeError | None) -> None:
    """Stop the run before Hydra writes anything: ``problem`` is said by ``run_hydra``
    (:func:`refusal`), exit code 2."""
    if problem is not None:
        _refused.append(problem.render())
        raise SystemExit(2)


class SecretsCallback(Callback):
    """Hydra callback of the commands beside a run (``evalframe mine``, ``golden build``):
    refuses literal secrets before Hydra writes ``.hydra/`` or ``multirun.yaml``, and a
    sweep whose launcher cannot start here."""

    def on_run_start(self, config: Any, **kwargs: Any) -> None:
        _refuse(prechecks.literal_secrets(config))

    def on_multirun_start(self, config: Any, **kwargs: Any) -> None:
        _refuse(prechecks.literal_secrets(config))
        _refuse(launchers.launcher_problem(config))  # `mine -m` on SLURM without srun


class SweepCallback(Callback):
    """Hydra callback: refuses what cannot run before Hydra writes a file
    (:mod:`evalframe.app.prechecks`), and tells trackers when a sweep starts and ends
    (``on_sweep_start`` / ``on_sweep_end``)."""

    def on_run_start(self, config: Any, **kwargs: Any) -> None:
        _refuse(prechecks.literal_secrets(config))
        _refuse(prechecks.experiment_not_a_name(config))

    def on_multirun_start(self, config: Any, **kwargs: Any) -> None:
        _refuse(prechecks.literal_secrets(config))
        _refuse(prechecks.experiment_not_a_name(config))
        _refuse(prechecks.first_job_problem(config, swept_keys(config)))
        # the sweeper's search space, which the first job does not show; then the launcher
        # (SLURM's without srun): no sweep folder, no tracked parent run
        _refuse(launchers.sweeper_key_missing(config))
        _refuse(launchers.launcher_problem(config))
        _start(config)

    def on_multirun_end(self, config: Any, **kwargs: Any) -> None:
        from evalframe.app.tune import finish_tuning

        finish_tuning(config, swept_keys(config))  # a tuning sweep: the best trial, held out
        finish_active()


atexit.register(finish_active)


def say_how_to_merge(folders: Sequence[Path]) -> None:
    """After a sweep of shards (``-m shard=0/4,...``), print the merge command for them."""
    import shlex

    from evalframe.assess.runfolder import RunFolder

    for folder in folders:
        shards = [
            j.output_dir for j in SweepFolder(folder).jobs() if RunFolder.is_shard(j.output_dir)
        ]
        if shards:
            cwd = Path.cwd()
            shown = [str(p.relative_to(cwd)) if p.is_relative_to(cwd) else str(p) for p in shards]
            out = folder / "merged"
            merged = str(out.relative_to(cwd)) if out.is_relative_to(cwd) else str(out)
            print(
                f"{len(shards)} shard folders written; merge them into one run with:\n  "
                + shlex.join(["evalframe", "merge", *shown, "--out", merged])
            )
