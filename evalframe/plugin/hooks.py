"""Lifecycle hooks: how trackers (MLflow, ...) follow a run without the core knowing them.

A tracker is any object with some of these methods; each is optional::

    on_run_start(context: RunContext)
    on_retrieval_done(context: RunContext, run: Run)
    on_scored(context: RunContext, evaluation: Evaluation)
    on_gated(context: RunContext, gates: list[GateResult])
    on_run_end(context: RunContext, outcome: RunOutcome)
    on_error(context: RunContext, error: BaseException)
    on_sweep_start(sweep: SweepContext)                 # a -m sweep, before its jobs
    on_sweep_end(sweep: SweepContext, jobs: list[SweepJob])  # after them, even if one failed

Results are written to the run directory *before* ``on_run_end`` fires, and a
tracker that raises is reported and ignored: a tracking outage must never lose
results or change the run's exit code.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalframe.core.secrets import redact_text

__all__ = ["HOOKS", "HookRelay", "RunContext", "RunOutcome", "SweepContext", "SweepJob"]

HOOKS = (
    "on_run_start",
    "on_retrieval_done",
    "on_scored",
    "on_gated",
    "on_run_end",
    "on_error",
    "on_sweep_start",
    "on_sweep_end",
)


@dataclass
class RunContext:
    """What every hook receives: the run's identity and where its outputs go.

    ``metadata`` carries what the config does not say: ``plugins`` (kind ->
    ``{name, distribution, version}`` of each plugin that ran), ``baseline``,
    ``choices`` (Hydra's config-group choices) and, inside a ``-m`` sweep,
    ``sweep`` (``{dir, num, overrides}``). A run a tuning sweep makes beside its
    jobs (the best trial on the held-out queries, the untuned config) has a
    ``sweep`` too: ``num`` is its folder's name (``heldout``) and ``label`` says
    what it is (``held-out``). A run's ``overrides`` are its command line's;
    ``evalframe rescore`` gives its own, and ``rescore_of``, the folder re-scored.
    """

    experiment: str
    output_dir: Path
    config: dict[str, Any]
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class SweepContext:
    """A ``-m`` sweep: its folder (one sub-folder per job) and the config it started from.

    ``swept`` are the keys the sweep varies, on the command line
    (``retriever.k1=0.9,1.2`` -> ``retriever.k1``) or in ``hydra.sweeper.params``
    (a tuning sweep's search space): what tells the jobs apart.
    ``error`` is set by ``on_sweep_end`` when the sweep's launcher or sweeper
    stopped it (a Ray cluster it could not reach): the one-paragraph error the
    user was shown. The jobs then say how far it got (none, or some).
    """

    experiment: str
    sweep_dir: Path
    config: dict[str, Any]
    swept: tuple[str, ...] = ()
    error: str | None = None


@dataclass(frozen=True)
class SweepJob:
    """One job of a finished sweep, as read back from its folder.

    ``exit_code`` is None when the job left no record (it crashed hard or
    never ran); ``summary`` is its summary.json, empty when it has none.
    """

    num: int
    output_dir: Path
    overrides: tuple[str, ...]
    exit_code: int | None
    summary: dict[str, Any]
    error: str | None = None


@dataclass(frozen=True)
class RunOutcome:
    """How the run ended: its exit code and the files it wrote."""

    exit_code: int
    outputs: dict[str, Path]


class HookRelay:
    """Calls a hook on every tracker that implements it, isolating failures."""

    def __init__(self, trackers: Sequence[Any]) -> None:
        self.trackers = list(trackers)
        self.failures: list[str] = []
        #: how each tracker is named in a warning: the plugin the user configured
        #: (``tracker 'mlflow' (evalframe_mlflow.tracker)``), not its Python class
        self._names: dict[int, str] = {}

    @classmethod
    def build(cls, trackers: Sequence[Any]) -> HookRelay:
        """Construct each configured tracker; one that fails to start is reported and skipped."""
        from evalframe.plugin.protocols import PluginContext

        relay = cls([])
        for t in trackers:
            try:
                tracker = t.spec.obj(t.config, PluginContext(config_key=t.key))
                relay.trackers.append(tracker)
                relay._names[id(tracker)] = f"tracker {t.spec.name!r} ({t.spec.module})"
            except Exception as exc:  # noqa: BLE001  # tracking must never break the run
                relay._warn(f"tracker {t.spec.name!r} could not start: {type(exc).__name__}: {exc}")
        return relay

    def _warn(self, note: str) -> None:
        """Say a tracker's failure, credentials redacted: a failed upload's exception
        often quotes the request, and a tracker its own token (docs/security.md)."""
        note = redact_text(f"warning: {note}")
        self.failures.append(note)
        print(note, file=sys.stderr)

    def emit(self, hook: str, *args: Any) -> None:
        if hook not in HOOKS:
            raise ValueError(f"unknown hook {hook!r}; hooks are {', '.join(HOOKS)}")
        for tracker in self.trackers:
            method = getattr(tracker, hook, None)
            if method is None:
                continue
            try:
                method(*args)
            except Exception as exc:  # noqa: BLE001  # a tracker must never break the run
                name = self._names.get(id(tracker), f"tracker {type(tracker).__name__}")
                self._warn(f"{name} failed in {hook}: {type(exc).__name__}: {exc}")
