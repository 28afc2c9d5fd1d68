"""Running an experiment through Hydra: search path, group checks, exit codes.

Where Hydra looks for config, in the order it searches:

1. evalframe's own ``conf/``: the primary ``config.yaml`` and the core groups.
   Hydra always searches its primary path first, so a file here wins over a
   file of the same name elsewhere;
2. ``./conf`` of the directory you run from, when it exists: a user's own
   project adds experiments, gate packs and metric packs under new names
   (``conf/experiment/mine.yaml``);
3. the config folders that installed distributions declare through the
   ``evalframe.conf`` entry-point group (plugin groups such as ``retriever/bm25``).

Plugins contribute config through that entry point rather than the
``hydra_plugins`` namespace package, so discovery is the same mechanism as
for the plugins themselves and nothing is scanned at import time.

It is one module because it is the one place that hands a command line to
Hydra: how argv is split into Hydra's flags and overrides, what is checked
and added before Hydra composes (the search path, group choices, the
tracker from the environment) and how ``hydra.main``'s outcome becomes an
exit code are one sequence, each step relying on the one before.
"""

from __future__ import annotations

import contextlib
import difflib
import io
import math
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalframe.app.cfgprint import printed_config_problem, prints_config, shown_config
from evalframe.app.confdirs import PACKAGE_DIR, core_conf_dir, plugin_conf_dirs
from evalframe.app.hydra_errors import hydra_message, plain_config, require_text
from evalframe.app.hydra_folder import drop_stub_folder, say_if_incomplete
from evalframe.app.hydra_mode import one_composition
from evalframe.app.stderr import (
    HeldStderr,
    environment_error,
    release_stderr,
    report_crash,
    say_interrupted,
    start_command,
)
from evalframe.core.errors import EXIT_CRASH, EXIT_ERROR, ConfigError, EvalframeError

__all__ = [
    "EXIT_CRASH",
    "GROUPS",
    "Prepared",
    "config_search_path",
    "core_conf_dir",
    "drop_stub_folder",
    "plugin_conf_dirs",
    "prepare_overrides",
    "register_resolvers",
    "run_hydra",
]

GROUPS = (
    "dataset",
    "corpus",
    "retriever",
    "metrics",
    "gates",
    "tracking",
    "analysis",
    "experiment",
)


def config_search_path(cwd: Path | None = None) -> list[Path]:
    """Folders searched for config groups, in Hydra's search order (see module docstring)."""
    core = core_conf_dir()
    paths: list[Path] = [core]
    user = (cwd or Path.cwd()) / "conf"
    if user.is_dir() and user.resolve() != core.resolve():
        paths.append(user.resolve())
    paths.extend(folder for _, folder in plugin_conf_dirs())
    return paths


def group_options(group: str, search_path: Sequence[Path]) -> list[str]:
    options: set[str] = set()
    for root in search_path:
        folder = root / group
        if folder.is_dir():
            options.update(p.stem for p in folder.glob("*.yaml"))
    return sorted(options)


def check_group_overrides(overrides: Sequence[str], search_path: Sequence[Path]) -> None:
    """Turn ``retriever=nope`` into a clear error that lists and suggests, before Hydra runs."""
    for item in overrides:
        name, sep, value = item.lstrip("+~").partition("=")
        if not sep or name not in GROUPS or item.startswith("~"):
            continue
        if any(tok in value for tok in ("(", "${", "[", "*")):
            continue  # sweep functions and interpolations: leave them to Hydra
        options = group_options(name, search_path)
        for choice in (v.strip() for v in value.split(",")):
            if choice in options:
                for root in search_path:  # Hydra would stop on it with a traceback
                    require_text(root / name / f"{choice}.yaml")
                continue
            if choice in ("null", ""):
                continue
            close = difflib.get_close_matches(choice, options, n=1, cutoff=0.5)
            kind = "experiment" if name == "experiment" else f"{name} config"
            raise ConfigError(
                f"no {kind} named {choice!r}; available: {', '.join(options) or '(none)'}",
                key=name,
                hint=(f"did you mean {close[0]!r}? " if close else "")
                + f"options are the {name}/*.yaml files on the config search path "
                + (
                    "(your ./conf/experiment, then evalframe's)"
                    if name == "experiment"
                    else "(yours, evalframe's and the installed plugins'; `evalframe plugins "
                    "list` shows the plugins)"
                ),
            )


def _refuse_null_groups(overrides: Sequence[str], search_path: Sequence[Path]) -> None:
    """``gates=null`` on a run's command line: Hydra stops with a traceback of its own
    internals ("Config group override must be a string or a list"). Said here, with the
    group's ``none`` option or ``~group`` as the way. (A composed config's rescore
    takes ``gates=null`` as "no section": :mod:`evalframe.app.runconfig`.)"""
    for item in overrides:
        name, sep, value = item.lstrip("+").partition("=")
        if not sep or item.startswith("~") or name not in GROUPS or value.strip() != "null":
            continue
        way = (
            f"{name}=none (the option that turns it off) or ~{name}"
            if "none" in group_options(name, search_path)
            else f"~{name} to drop its default, or {name}=OPTION"
        )
        raise ConfigError(
            f"a config group cannot be null on the command line: {name} picks one of its "
            "option files",
            key=name,
            expected=f"an option: {', '.join(group_options(name, search_path)) or '(none)'}",
            got=item,
            hint=f"write {way}",
        )


def register_resolvers() -> None:
    """evalframe's OmegaConf resolvers (``${ef.data:...}``), registered once per process."""
    from omegaconf import OmegaConf

    data_root = PACKAGE_DIR / "data"
    if not OmegaConf.has_resolver("ef.data"):
        # ${ef.data:quickstart/golden.jsonl}: data shipped inside the package,
        # found wherever evalframe is installed and whatever the cwd.
        OmegaConf.register_new_resolver("ef.data", lambda rel: str(data_root / rel))


#: The name other app modules import (runconfig, mine_cmd); one function behind both.
_register_resolvers = register_resolvers


_VALUE_FLAGS = {
    "--cfg",
    "-c",
    "--package",
    "-p",
    "--config-path",
    "-cp",
    "--config-name",
    "-cn",
    "--config-dir",
    "-cd",
    "--experimental-rerun",
    "--shell-completion",
    "-sc",
}
_INFO_VALUES = ("all", "config", "defaults", "defaults-tree", "plugins", "searchpath")


def split_argv(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """Hydra's flags (with their values) apart from its overrides.

    Hydra reads overrides as one positional group, so ``x=1 --cfg job y=2``
    would be rejected; putting every flag first lets users write them in any order.
    ``--info``/``-i`` takes a value only when one of its choices follows; alone, it
    is given Hydra's own default, ``all``, so that once the flags are put first it
    takes no override (or a token evalframe adds: ``tracking=``, ``hydra.searchpath=``)
    for its value. A word after it that is neither a choice nor an override is
    refused as a misspelt choice (:func:`_info_choice`).
    """
    flags: list[str] = []
    overrides: list[str] = []
    items = list(argv)
    i = 0
    while i < len(items):
        token = items[i]
        if token.startswith("-"):
            flags.append(token)
            following = items[i + 1] if i + 1 < len(items) else None
            if token in ("--info", "-i"):
                if following is not None and _info_choice(token, following):
                    flags.append(following)
                    i += 1
                else:
                    flags.append("all")  # Hydra's default for a bare --info
            elif token in _VALUE_FLAGS and following is not None:
                flags.append(following)
                i += 1
        else:
            overrides.append(token)
        i += 1
    return flags, overrides


def _info_choice(flag: str, word: str) -> bool:
    """Whether ``word`` after ``--info`` is its value (one of :data:`_INFO_VALUES`),
    not an override or another flag; a :class:`ConfigError` for a word that is
    neither (``--info confg``), which Hydra would refuse without saying more."""
    if word in _INFO_VALUES:
        return True
    if word.startswith(("-", "~", "+")) or "=" in word:
        return False  # a flag or an override: --info alone, then it
    close = difflib.get_close_matches(word, _INFO_VALUES, n=1, cutoff=0.5)
    raise ConfigError(
        f"{word!r} is not one of the choices {flag} takes",
        key=flag,
        expected=f"one of {', '.join(_INFO_VALUES)}, or nothing (all)",
        hint=(f"did you mean {flag} {close[0]}? " if close else "")
        + f"for example `evalframe {flag} config +experiment=quickstart` prints the composed "
        f"config's information; {flag} alone prints all of it",
    )


def tracking_from_env(overrides: Sequence[str]) -> list[str]:
    """Prepend ``tracking=$EVALFRAME_TRACKING`` unless the command line picks a tracker.

    Lets CI or a test suite turn tracking off (``EVALFRAME_TRACKING=none``) or
    point every run at another tracker without editing config; an explicit
    ``tracking=...`` on the command line still wins.
    """
    choice = os.environ.get("EVALFRAME_TRACKING", "").strip()
    keys = [o.lstrip("+~").partition("=")[0] for o in overrides]
    if not choice or any(k == "tracking" or k.startswith("tracking.") for k in keys):
        # `tracking.uri=...` alone means "track, there": the default tracker, not the env's
        return list(overrides)
    return [f"tracking={choice}", *overrides]


def check_tracking_env(search_path: Sequence[Path]) -> None:
    """Refuse an ``EVALFRAME_TRACKING`` that names no tracking config, as the
    variable's value: the user typed no ``tracking`` key, so an error about one
    would send them looking for it on the command line and in their YAML."""
    choice = os.environ.get("EVALFRAME_TRACKING", "").strip()
    options = group_options("tracking", search_path)
    if not choice or choice in options:
        return
    close = difflib.get_close_matches(choice, options, n=1, cutoff=0.5)
    raise ConfigError(
        f"environment variable EVALFRAME_TRACKING: no tracking config named {choice!r}",
        expected=f"one of: {', '.join(options) or '(none)'}",
        got=f"EVALFRAME_TRACKING={choice} in the environment, which picks the tracker when "
        "the command line sets no tracking key",
        hint=(f"did you mean EVALFRAME_TRACKING={close[0]}? " if close else "")
        + "set it to one of the options (none turns tracking off), or unset it to track "
        "as the config says; options are the tracking/*.yaml files on the config search "
        "path (evalframe's, yours and the installed plugins'; `evalframe plugins list` "
        "shows the plugins)",
    )


#: Tells trackers when a ``-m`` sweep starts and ends (see evalframe.app.sweep). Set in
#: code, not in conf/config.yaml, so ``--cfg job`` output and user configs stay clean.
SWEEP_CALLBACK = "++hydra.callbacks.evalframe_sweep._target_=evalframe.app.sweep.SweepCallback"


def _quote(path: Path) -> str:
    return "'file://" + str(path).replace("'", "\\'") + "'"


@dataclass(frozen=True)
class Prepared:
    """What Hydra is asked to compose: the config folders and the overrides, checked."""

    search_path: tuple[Path, ...]
    overrides: tuple[str, ...]

    @property
    def primary(self) -> Path:
        """evalframe's ``conf/``, Hydra's primary config path (``config.yaml``)."""
        return self.search_path[0]

    @property
    def searchpath_override(self) -> str:
        """``hydra.searchpath=[...]``: every folder after the primary one, in search order."""
        return "hydra.searchpath=[" + ",".join(_quote(p) for p in self.search_path[1:]) + "]"


def prepare_overrides(overrides: Sequence[str], cwd: Path | None = None) -> Prepared:
    """The one preparation of a composition, for the command line and the Python API alike.

    ``EVALFRAME_TRACKING`` picks the tracker unless an override does, the
    search path is found (module docstring), every group choice is checked
    against the options on it (a located :class:`ConfigError` that suggests),
    and evalframe's resolvers are registered. ``run_hydra`` then hands the
    result to ``hydra.main`` and ``evalframe.app.compose`` to Hydra's compose
    API, so a run from Python composes exactly what the same overrides
    compose on the command line.
    """
    from evalframe.app.overrides import check_override_syntax

    check_override_syntax(overrides)
    search_path = config_search_path(cwd)
    picked_by_env = tracking_from_env(overrides)
    if len(picked_by_env) > len(overrides):  # the variable's tracker, not the command line's
        check_tracking_env(search_path)
    overrides = picked_by_env
    _refuse_null_groups(overrides, search_path)
    check_group_overrides(overrides, search_path)
    register_resolvers()
    return Prepared(tuple(search_path), tuple(overrides))


def run_hydra(argv: Sequence[str], prog: str = "evalframe") -> int:
    """Compose the config with Hydra and run the experiment(s); return the exit code."""
    flags, overrides = split_argv(argv)
    try:
        prepared = prepare_overrides(overrides)
    except EvalframeError as exc:
        print(exc.render(), file=sys.stderr)
        return EXIT_ERROR

    import hydra
    from omegaconf import DictConfig

    from evalframe.app import sweep

    codes: list[int] = []
    start_command()

    def task(cfg: DictConfig) -> float | None:
        release_stderr()
        code, objective = _run_task(cfg)
        codes.append(code)
        return objective  # what a tuning sweeper (Optuna) optimises; None outside tuning

    main = hydra.main(version_base="1.3", config_path=str(prepared.primary), config_name="config")(
        task
    )
    # `--cfg`/`--info` print the config with no job, so none of the callbacks that refuse
    # a credential written into it: the command line is checked first, and what Hydra
    # prints is held, checked and redacted (`--resolve`: values from the environment)
    shows = prints_config(flags)
    if shows:
        refused_early = printed_config_problem(
            prepared.primary, [*prepared.overrides, prepared.searchpath_override]
        )
        if refused_early is not None:
            print(refused_early.render(), file=sys.stderr)
            return EXIT_ERROR
    saved = sys.argv
    sys.argv = [prog, *flags, *prepared.overrides, prepared.searchpath_override, SWEEP_CALLBACK]
    failed = False
    printed = io.StringIO() if shows else None
    held_out = (
        contextlib.redirect_stdout(printed) if printed is not None else contextlib.nullcontext()
    )
    try:
        with (
            HeldStderr() as held,
            one_composition(prepared.overrides, prepared.search_path),
            sweep.launch_failures_said(),
            held_out,
        ):
            try:
                main()
            except KeyboardInterrupt:  # in a job, or in Hydra between them: said once
                say_interrupted(held.real)  # not held: nothing may follow to print it
                codes.append(130)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
                failed = code != 0
                if code != 0:
                    # before any job ran, Hydra rejected the command line or the config
                    codes.append(EXIT_ERROR)
    finally:
        sys.argv = saved
        # Hydra skips on_multirun_end when a job raised: end the sweep here.
        sweep.finish_active()
        if printed is not None:
            sys.stdout.write(shown_config(printed.getvalue(), flags))
    refused = sweep.refusal()
    if refused is not None:  # evalframe stopped Hydra (before it wrote anything, mostly)
        print(refused, file=sys.stderr)
    elif not held.passing:  # Hydra stopped before any job: say it in evalframe's words
        text = held.text()
        print(hydra_message(text) if failed else text, file=sys.stderr, end="")
    folders = sweep.take_started()
    sweep.say_how_to_merge(folders)
    return max([*codes, *_sweep_codes(folders)], default=0)


def _sweep_codes(folders: Sequence[Path]) -> list[int]:
    """Exit codes of the jobs of sweeps run here, read from their folders; each sweep's table.

    A launcher that runs jobs in other processes (joblib, submitit) returns
    nothing to this one; each job's ``job.json`` says how it ended. A job
    that left none crashed before it could. Once the sweep is over, its
    summary (each job's overrides, headline metrics and verdict, the best
    job per metric marked) is printed last.
    """
    from evalframe.assess.runfolder import RunFolder, SweepFolder
    from evalframe.core.console import color_for, fit_width
    from evalframe.report.sweep import render_sweep

    codes = []
    for folder in folders:
        jobs = SweepFolder(folder).jobs()
        codes += [EXIT_CRASH if j.exit_code is None else j.exit_code for j in jobs]
        if jobs and not any(RunFolder.is_shard(j.output_dir) for j in jobs):
            print()
            print(render_sweep(_shown(folder), jobs, width=fit_width(), color=color_for()))
    return codes


def _shown(folder: Path) -> Path:
    """A folder as the user would type it: relative to the current one when inside it."""
    try:
        return folder.relative_to(Path.cwd())
    except ValueError:
        return folder


def _run_task(cfg: Any) -> tuple[int, float | None]:
    """Run one job; return its exit code and, with ``tuning.metric`` set, the objective
    (the metric's mean, NaN when the job failed: Optuna records a NaN trial as failed)."""
    from evalframe.pipeline import run_experiment, validate_experiment
    from evalframe.report.page import RunPage
    from evalframe.report.terminal import TerminalReport

    error: str | None = None
    objective: float | None = None
    try:
        raw = plain_config(
            cfg,
            "resolve the config",
            "set it on the command line (key=value) or in your experiment YAML, or "
            "pick an experiment that sets it, e.g. +experiment=quickstart",
        )
        experiment = validate_experiment(raw)
        if experiment.tuning.metric is not None:
            objective = math.nan
        if experiment.shard is not None:
            from evalframe.pipeline.shard import print_shard, run_shard

            code = print_shard(run_shard(experiment, metadata=hydra_metadata()))
        else:
            metadata = hydra_metadata()
            terminal = TerminalReport(in_sweep="sweep" in metadata)  # brief, by default
            result = run_experiment(experiment, reporters=[RunPage(), terminal], metadata=metadata)
            code = result.exit_code
            objective = tuning_objective(result)
    except EvalframeError as exc:
        print(exc.render(), file=sys.stderr)
        code, error = EXIT_ERROR, exc.render()
        drop_stub_folder()
    except KeyboardInterrupt:
        say_interrupted()
        drop_stub_folder()  # stopped before it wrote anything: no folder that reads as a run
        say_if_incomplete()
        _record_sweep_job(130, "interrupted")
        if "sweep" in hydra_metadata():
            raise  # Ctrl-C stops the whole sweep, not just this job
        return 130, objective
    except Exception as exc:  # noqa: BLE001  # a crash is reported with its traceback, not hidden
        said = environment_error(exc)  # a full disk is the machine's state, not a bug
        if said is not None:
            print(said, file=sys.stderr)
            code, error = EXIT_ERROR, said
        else:
            report_crash()
            code, error = EXIT_CRASH, f"crash: {type(exc).__name__}: {exc}"
    _record_sweep_job(code, error)
    return code, objective


def tuning_objective(result: Any) -> float | None:
    """The mean of ``tuning.metric`` in a finished run (None when no metric is set)."""
    exp = result.experiment
    if exp is None or exp.tuning.metric is None:
        return None
    for metric, agg in result.evaluation.overall.items():
        if str(metric) == exp.tuning.metric:
            return float(agg.mean)
    return math.nan


def hydra_metadata() -> dict[str, Any]:
    """What Hydra knows about this job that the config does not: choices, and the sweep."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    if not HydraConfig.initialized():
        return {}
    from omegaconf import OmegaConf

    hc = HydraConfig.get()
    # as typed: reading the list's items would resolve ${oc.env:TOKEN} into the secret
    raw = OmegaConf.to_container(hc.overrides.task, resolve=False)
    overrides = [str(o) for o in raw] if isinstance(raw, list) else []
    meta: dict[str, Any] = {"choices": hydra_choices(hc), "overrides": overrides}
    if hc.mode == RunMode.MULTIRUN:
        meta["sweep"] = {
            "dir": str(Path(hc.sweep.dir).resolve()),
            "num": int(hc.job.num),
            "overrides": overrides,
        }
    return meta


def hydra_choices(hydra_node: Any) -> dict[str, str]:
    """The option chosen in every config group (``retriever: bm25``), Hydra's own left out."""
    return {
        str(k): str(v)
        for k, v in hydra_node.runtime.choices.items()
        if not str(k).startswith("hydra")
    }


def _record_sweep_job(code: int, error: str | None) -> None:
    """In a sweep, leave ``job.json`` in the job's folder for the sweep summary.

    The error is stored redacted: a crash's is the exception's own text, which a
    plugin may have written with its key in it, and a sweep folder is kept and shared.
    """
    meta = hydra_metadata()
    if "sweep" not in meta:
        return
    from hydra.core.hydra_config import HydraConfig

    from evalframe.assess.runfolder import SweepFolder
    from evalframe.core.secrets import redact_text

    safe = redact_text(error) if error is not None else None
    try:
        SweepFolder.record_job(Path(HydraConfig.get().runtime.output_dir), code, safe)
    except OSError as exc:
        print(
            redact_text(f"warning: could not record the sweep job's status: {exc}"),
            file=sys.stderr,
        )
