"""Composing a run's config without running Hydra's application: for the Python API.

``python -m evalframe +experiment=x k=v`` composes through ``hydra.main``;
``evalframe.run(experiment="x", overrides=["k=v"])`` composes here, through
Hydra's compose API. Both start from :func:`~evalframe.app.hydra_app.prepare_overrides`
(the same search path, ``EVALFRAME_TRACKING``, group checks and resolvers) and
the same primary ``config.yaml``, and both resolve the result with
:func:`~evalframe.app.hydra_app.plain_config`, so the same overrides give the
same config: there is no second way to a config.

What ``hydra.main`` does besides composing is done here by hand, as it does it:
the run folder is ``hydra.run.dir`` made absolute (``output.dir`` interpolates
``${hydra:runtime.output_dir}``), and the groups' choices are handed to trackers.
A sweep (``-m``) is the command line's; from Python each run is one call.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalframe.app.cfgprint import compose_unresolved
from evalframe.app.hydra_app import hydra_choices, prepare_overrides
from evalframe.app.hydra_errors import composition_error, plain_config
from evalframe.app.prechecks import literal_secrets

__all__ = ["Composed", "compose_config", "quote_value"]

#: The hint of an unresolvable key, as the command line gives it.
RESOLVE_HINT = (
    "set it in overrides (key=value) or in your experiment YAML, or pick an experiment "
    "that sets it, e.g. experiment='quickstart'"
)


@dataclass(frozen=True)
class Composed:
    """A composed, resolved config and what Hydra knew about it besides."""

    raw: dict[str, Any]
    output_dir: Path
    overrides: tuple[str, ...]
    #: the option chosen in each config group, as trackers get it from the command line
    choices: dict[str, str] = field(default_factory=dict)


def quote_value(value: str | os.PathLike[str]) -> str:
    """A value quoted for Hydra's override grammar (a path with spaces, ``=`` or quotes)."""
    text = str(value).replace("\\", "\\\\").replace("'", "\\'")
    return f"'{text}'"


def compose_config(
    overrides: Sequence[str],
    *,
    run_dir: str | os.PathLike[str] | None = None,
    name: str | None = None,
    replace: Mapping[str, Any] | None = None,
) -> Composed:
    """Compose ``config.yaml`` with ``overrides`` as the command line would, and resolve it.

    ``run_dir`` is ``hydra.run.dir`` (default: Hydra's, ``outputs/<experiment>/<time>``);
    ``name`` replaces the ``experiment`` key (the run's name, its tag and folder);
    ``replace`` gives top-level sections the caller provides itself (a golden set
    given as Python objects stands as ``{name: python_object, ...}``): the composed
    section is emptied before resolving, so a default's ``path: ???`` is not an
    error, and the given one takes its place (and its place in the key order).
    """
    wanted = list(overrides)
    if run_dir is not None:
        wanted.append(f"hydra.run.dir={quote_value(run_dir)}")
    prepared = prepare_overrides(wanted)

    from hydra.core.hydra_config import HydraConfig
    from omegaconf import open_dict
    from omegaconf.errors import OmegaConfBaseException

    cfg = compose_unresolved(prepared.primary, [*prepared.overrides, prepared.searchpath_override])
    # a credential written into an override is refused as on the command line, before the
    # config is resolved, run or kept (an ${oc.env:KEY} in its place is what is wanted)
    problem = literal_secrets(cfg)
    if problem is not None:
        raise problem
    try:
        with open_dict(cfg):
            if name is not None:
                cfg.experiment = name
            # hydra.main's runtime.output_dir: made absolute, symlinks kept (not resolve())
            out = Path(os.path.abspath(str(cfg.hydra.run.dir)))  # noqa: PTH100
            cfg.hydra.runtime.output_dir = str(out)
        choices = hydra_choices(cfg.hydra)
    except OmegaConfBaseException as exc:
        raise composition_error(exc) from None
    instance = HydraConfig.instance()
    saved = instance.cfg
    instance.set_config(cfg)  # ${hydra:runtime.output_dir} resolves against it
    try:
        with open_dict(cfg):
            del cfg["hydra"]  # as hydra.main hands a job its config: without Hydra's own node
            for section in replace or {}:
                cfg[section] = {}
        raw = plain_config(cfg, "resolve the config", RESOLVE_HINT)
    finally:
        instance.cfg = saved
    raw.update(replace or {})
    return Composed(raw=raw, output_dir=out, overrides=prepared.overrides, choices=choices)
