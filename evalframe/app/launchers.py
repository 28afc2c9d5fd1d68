"""Hydra launchers and sweepers that cannot run here, said in evalframe's words.

Three ways a ``-m`` sweep's launcher or sweeper fails before evalframe runs a job:

- it is not installed: Hydra cannot find ``hydra/launcher/ray`` and prints its
  config search path. :func:`missing_option_error` names the option, lists the
  installed ones and, for the plugins evalframe documents (:data:`PLUGINS`,
  docs/scaling.md), says what to install;
- it is SLURM's, on a machine without SLURM: :func:`launcher_problem` finds
  out before the sweep starts, so no sweep folder and no tracked parent run
  are made for jobs that can never be submitted;
- it raises once the sweep has started (a Ray cluster that cannot be
  reached): :func:`launch_failure` turns the exception into one paragraph, and
  the sweep is closed with it as its reason (see :mod:`evalframe.app.sweep`).
"""

from __future__ import annotations

import difflib
import re
import shutil
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from evalframe.core.errors import ConfigError

__all__ = [
    "PLUGINS",
    "SCALING_DOC",
    "HydraPlugin",
    "chosen",
    "launch_failure",
    "launcher_problem",
    "missing_option_error",
]

SCALING_DOC = "docs/scaling.md"


@dataclass(frozen=True)
class HydraPlugin:
    """A Hydra plugin evalframe documents: the package that brings it, and how to get it."""

    package: str
    install: str
    what: str


_RAY = HydraPlugin(
    "hydra-ray-launcher",
    'pip install "evalframe[ray]" (from a checkout: pip install -e ".[ray]")',
    "Ray's launcher is an optional extra",
)
_SUBMITIT = HydraPlugin(
    "hydra-submitit-launcher",
    "pip install hydra-submitit-launcher (a dependency of evalframe: reinstall evalframe)",
    "Submitit's launcher comes with evalframe, but is missing from this environment",
)

#: ``(group, option)`` -> the plugin that registers it. The extras are pyproject.toml's
#: (tests/app/test_launchers.py holds the two together).
PLUGINS: dict[tuple[str, str], HydraPlugin] = {
    ("hydra/launcher", "ray"): _RAY,
    ("hydra/launcher", "ray_aws"): _RAY,
    ("hydra/launcher", "joblib"): HydraPlugin(
        "hydra-joblib-launcher",
        "pip install hydra-joblib-launcher",
        "joblib's launcher is a separate package",
    ),
    ("hydra/launcher", "submitit_local"): _SUBMITIT,
    ("hydra/launcher", "submitit_slurm"): _SUBMITIT,
    ("hydra/sweeper", "optuna"): HydraPlugin(
        "hydra-optuna-sweeper",
        'pip install "evalframe[tune]" (from a checkout: pip install -e ".[tune]")',
        "Optuna's sweeper is an optional extra",
    ),
}

#: Hydra's text for a config group option it cannot find, with the options it has.
_NOT_FOUND = re.compile(
    r"Could not find '(?P<group>hydra/[\w/]+)/(?P<name>[^'/]+)'\s*"
    r"(?:Available options in '(?P=group)':\n(?P<options>(?:\t[^\n]*\n?)*))?"
)


def missing_option_error(text: str) -> ConfigError | None:
    """Hydra's "Could not find 'hydra/launcher/ray'" (and its search-path dump) as one
    paragraph: the option, the installed ones, and what to install for a known plugin."""
    found = _NOT_FOUND.search(text)
    if found is None:
        return None
    group, name = found["group"], found["name"]
    options = [o.strip() for o in (found["options"] or "").splitlines() if o.strip()]
    kind = group.rpartition("/")[2]  # launcher, sweeper, job_logging
    plugin = PLUGINS.get((group, name))
    if plugin is not None:
        message = f"the {kind} {name!r} is not installed"
        hint = f"{plugin.what}: {plugin.install}"
    else:
        message = f"there is no {kind} named {name!r}"
        known = [o for (g, o) in PLUGINS if g == group and o not in options]
        close = difflib.get_close_matches(name, [*options, *known], n=1, cutoff=0.5)
        hint = ""
        if close:
            hint = f"did you mean {close[0]!r}"
            if close[0] in known:  # a known plugin that is not installed either
                hint += f" (not installed: {PLUGINS[(group, close[0])].install})"
            hint += "? "
        hint += f"the options are Hydra's, its installed plugins' and your conf/{group}/*.yaml"
    if kind in ("launcher", "sweeper"):
        hint += f"; {SCALING_DOC} lists the launchers and sweepers and how to install each"
    return ConfigError(
        f"{message}; available: {', '.join(options) or '(none)'}",
        key=group,
        got=f"{group}={name}",
        hint=hint,
    )


def chosen(config: Any, group: str) -> str:
    """The option chosen in a Hydra group (``hydra/launcher`` -> ``basic``), or ``?``."""
    from omegaconf import OmegaConf

    choices = OmegaConf.select(config, "hydra.runtime.choices", default=None)
    value = choices.get(group) if choices is not None else None
    return str(value) if value is not None else "?"


#: The launcher class of hydra-submitit-launcher that submits to SLURM
#: (``submitit_slurm``, and any config of yours built on it).
_SLURM_TARGET = "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher"


def launcher_problem(config: Any) -> ConfigError | None:
    """Why the sweep's launcher cannot start a job from here, found before the sweep starts.

    Submitit's SLURM launcher needs SLURM's commands (it looks for ``srun``,
    then submits with ``sbatch``); without them it raises only once the sweep
    has begun, after its folder and tracked parent run were made.
    """
    from omegaconf import OmegaConf

    target = OmegaConf.select(config, "hydra.launcher._target_", default=None)
    if target != _SLURM_TARGET:
        return None
    missing = [command for command in ("srun", "sbatch") if shutil.which(command) is None]
    if not missing:
        return None
    name = chosen(config, "hydra/launcher")
    return ConfigError(
        f"the launcher {name} submits jobs to SLURM, whose commands are not on this "
        "machine's PATH: the sweep was not started",
        key="hydra/launcher",
        expected="`srun` and `sbatch` on PATH",
        got="neither" if len(missing) == 2 else f"no `{missing[0]}`",
        hint="run the sweep on a SLURM login node, where `srun` and `sbatch` are on PATH "
        "(`module load slurm` on clusters with modules), or on this machine with "
        f"hydra/launcher=submitit_local or hydra/launcher=joblib; {SCALING_DOC} lists the "
        "launchers",
    )


def _frames(tb: TracebackType | None) -> list[tuple[str, str]]:
    """(module, function) of every frame of a traceback, outermost first."""
    found = []
    while tb is not None:
        found.append((str(tb.tb_frame.f_globals.get("__name__", "")), tb.tb_frame.f_code.co_name))
        tb = tb.tb_next
    return found


def launch_failure(exc: BaseException, config: Any, jobs: int) -> ConfigError | None:
    """An exception out of a started sweep's launcher or sweeper as one paragraph, or None
    when it is evalframe's own (a bug keeps its traceback).

    ``jobs``: how many of the sweep's jobs had started (left a folder) when it was raised.
    """
    frames = _frames(exc.__traceback__)
    if not frames or frames[-1][0].startswith("evalframe"):
        return None  # raised in evalframe's code (a callback, a job): a crash, not the launcher's
    from hydra.errors import ConfigCompositionException  # a sweep has Hydra loaded already

    if isinstance(exc, ConfigCompositionException):  # a subclass too, not only the name
        return _uncomposable_job(exc, config, jobs)
    # the launcher's: raised while it is made or while it launches (a sweeper calls it)
    launcher = any(fn in ("launch", "instantiate_launcher") for _, fn in frames)
    part = "launcher" if launcher else "sweeper"
    name = chosen(config, f"hydra/{part}")
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    said = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    if jobs:
        what = f"the {part} {name} stopped the sweep after {jobs} of its jobs had started"
    else:
        what = f"the {part} {name} could not start the sweep's jobs, so none ran"
    doc = f"{SCALING_DOC}#tuning" if part == "sweeper" else SCALING_DOC
    return ConfigError(
        f"{what}: {said}",
        key=f"hydra/{part}",
        hint=f"check the {part}'s settings (hydra.{part}.*) and that what it needs is "
        "installed and reachable from here; "
        + (
            "hydra/launcher=joblib or submitit_local runs a sweep on this machine; "
            if part == "launcher"
            else ""
        )
        + f"{doc} says what each needs (HYDRA_FULL_ERROR=1 prints the {part}'s traceback)",
    )


def _uncomposable_job(exc: BaseException, config: Any, jobs: int) -> ConfigError:
    """A job's overrides that Hydra could not apply, as the launcher composed it: a swept
    key the config lacks, most often one the sweeper's search space
    (``hydra.sweeper.params``) names, which the pre-sweep check of the first job does
    not see. Said as the key's mistake, not the launcher's."""
    from omegaconf import OmegaConf

    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    found = re.search(r"override '([^']+)'", first)
    key = found.group(1) if found else None
    params = OmegaConf.select(config, "hydra.sweeper.params", default=None) or {}
    where = f"hydra.sweeper.params.{key}" if key is not None and key in params else key
    cause = str(exc.__cause__).strip().splitlines()[0] if exc.__cause__ is not None else None
    ran = f"after {jobs} of its jobs had started" if jobs else "before any job ran"
    if key is None:
        return ConfigError(
            f"the sweep stopped {ran}: a job's config could not be composed: {first}",
            got=cause,
            hint="check the sweep's overrides",
        )
    if cause is not None and "not in struct" in cause:
        return no_setting_to_sweep(key, where or key, f"the sweep stopped {ran}", cause)
    return ConfigError(
        f"a job's value for {key} could not be set: the sweep stopped {ran}",
        key=where,
        got=cause,
        hint=f"check the values swept for {key} (`--cfg job` prints the setting's type)",
    )


#: What a key path that leads nowhere in the config finds (:func:`sweeper_key_missing`).
_ABSENT = object()


def no_setting_to_sweep(key: str, where: str, what: str, got: str) -> ConfigError:
    """A swept key the config does not have (``what``: how far the sweep got)."""
    return ConfigError(
        f"there is no setting {key} to sweep: {what}",
        key=where,
        expected="a key of the composed config",
        got=got,
        hint=f"check its spelling (`--cfg job` prints every key), or write +{key} to add a new key",
    )


def sweeper_key_missing(config: Any) -> ConfigError | None:
    """The first key of the sweeper's search space (``hydra.sweeper.params``, Optuna's)
    that the sweep's config does not have, said before the sweep starts; None if all are
    there. Keys that add (``+key``) or pick a config group's option (``group/x``) are
    the sweeper's to apply, not checked."""
    from omegaconf import DictConfig, OmegaConf

    params = OmegaConf.select(config, "hydra.sweeper.params", default=None)
    if not isinstance(params, DictConfig):
        return None
    # the keys as written, nothing resolved: a ``${hydra:...}`` value or a ``???`` is there
    tree = OmegaConf.to_container(config, resolve=False)
    for name in params:
        key = str(name)
        if key.startswith(("+", "~")) or "/" in key:
            continue
        node: Any = tree
        for part in key.split("."):
            node = node.get(part, _ABSENT) if isinstance(node, dict) else _ABSENT
        if node is _ABSENT:
            return no_setting_to_sweep(
                key,
                f"hydra.sweeper.params.{key}",
                "the sweep was not started",
                f"{key}: {params[name]}",
            )
    return None
