"""Hydra launchers and sweepers that cannot run here, said in evalframe's words.

A launcher or sweeper that is not installed: Hydra cannot find
``hydra/launcher/ray`` and prints its config search path.
:func:`missing_option_error` names the option, lists the installed ones and,
for the plugins evalframe documents (:data:`PLUGINS`, docs/scaling.md), says
what to install.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from evalframe.core.errors import ConfigError

__all__ = ["PLUGINS", "SCALING_DOC", "HydraPlugin", "missing_option_error"]

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
