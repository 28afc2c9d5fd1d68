"""``evalframe run-config FILE``: run an experiment from a config that is already composed.

DVC's ``dvc exp run -S '+experiment=X' -S retriever.k1=1.2`` composes the
Hydra config into ``params.yaml``; the ``exp`` stage of ``dvc.yaml`` runs it
with this command, so the run uses exactly the values DVC recorded (and
``dvc params diff`` shows). A run's own ``config.yaml`` works the same way.
No Hydra composition happens here: the file is the whole config.

``EVALFRAME_TRACKING`` still picks the tracker (``none`` turns tracking off),
as it does for ``python -m evalframe``.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evalframe.core.errors import ConfigError
from evalframe.core.io import require_file

__all__ = ["main"]


def _tracking_section(choice: str) -> Any:
    """The ``tracking/<choice>.yaml`` that evalframe's config search path holds."""
    from omegaconf import OmegaConf

    from evalframe.app.hydra_app import config_search_path, group_options

    search_path = config_search_path()
    for folder in search_path:
        candidate = folder / "tracking" / f"{choice}.yaml"
        if candidate.is_file():
            return OmegaConf.load(candidate)
    raise ConfigError(
        f"no tracking config named {choice!r}",
        key="EVALFRAME_TRACKING",
        expected=f"one of: {', '.join(group_options('tracking', search_path))}",
        hint="set EVALFRAME_TRACKING to an installed tracker, or unset it",
    )


def load_config(path: Path, overrides: Sequence[str], out: Path | None) -> dict[str, Any]:
    """The composed config in ``path`` with ``overrides`` applied, resolved and checked."""
    from omegaconf import DictConfig, OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from evalframe.app.hydra_app import _register_resolvers, omegaconf_error, plain_config

    require_file(path, what="composed config")
    _register_resolvers()
    hint = (
        "params.yaml is composed by `dvc exp run -S '+experiment=NAME'`; a plain "
        "`dvc exp run` composes the defaults, which name no golden set"
    )
    try:
        cfg = OmegaConf.load(path)
        if not isinstance(cfg, DictConfig):
            raise ConfigError(
                f"{path} is not a mapping of settings",
                expected="a composed evalframe config (params.yaml or a run's config.yaml)",
            )
        cfg = OmegaConf.merge(cfg, OmegaConf.from_dotlist(list(overrides)))
        choice = os.environ.get("EVALFRAME_TRACKING", "").strip()
        if choice:
            cfg.tracking = _tracking_section(choice)
        if out is not None:
            cfg.output.dir = str(out)
    except OmegaConfBaseException as exc:
        raise omegaconf_error(exc, f"read {path}", hint) from None
    return plain_config(cfg, f"read {path}", hint)


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="evalframe run-config",
        description="Run an experiment from a composed config file (params.yaml written by "
        "`dvc exp run -S ...`, or a run's config.yaml), without Hydra composition.",
    )
    parser.add_argument("config", type=Path, help="the composed config (YAML)")
    parser.add_argument("overrides", nargs="*", help="KEY=VALUE changes to it")
    parser.add_argument("--out", type=Path, help="output folder (default: output.dir in FILE)")
    args = parser.parse_args(list(argv))

    from evalframe.pipeline import run_experiment, validate_experiment
    from evalframe.report.terminal import TerminalReport

    experiment = validate_experiment(load_config(args.config, args.overrides, args.out))
    return run_experiment(
        experiment, reporters=[TerminalReport()], metadata={"config_file": str(args.config)}
    ).exit_code
