"""Hydra composition for the commands beside a run: ``evalframe mine`` and ``golden build``.

Each composes its own primary config (``conf/mining.yaml``,
``conf/building.yaml``) with a group of experiments (``+mine=NAME``,
``+build=NAME``) on the same search path as a run (evalframe's conf/, ./conf,
installed plugins' conf folders), so overrides, ``hydra.run.dir=...``,
``--cfg job`` and ``-m`` work as they do for runs. ``job(cfg)`` does the work
and returns the exit code; the highest code of all jobs is returned.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from evalframe.app.hydra_app import (
    _quote,
    _register_resolvers,
    config_search_path,
    group_options,
    split_argv,
)
from evalframe.app.hydra_errors import hydra_message
from evalframe.app.stderr import HeldStderr, release_stderr, say_interrupted, start_command
from evalframe.core.errors import EXIT_ERROR, EXIT_OK, ConfigError

__all__ = ["check_groups", "run_composed"]

#: Refuses a literal secret in the composed config before Hydra copies it to .hydra/.
SECRETS_CALLBACK = (
    "++hydra.callbacks.evalframe_secrets._target_=evalframe.app.sweep.SecretsCallback"
)


def check_groups(
    overrides: Sequence[str], search_path: Sequence[Path], groups: Sequence[str]
) -> None:
    """``solver=nope`` is a clear error listing the options, before Hydra runs."""
    for item in overrides:
        name, sep, value = item.lstrip("+~").partition("=")
        if not sep or name not in groups or item.startswith("~"):
            continue
        if any(tok in value for tok in ("(", "${", "[", "*")):
            continue
        options = group_options(name, search_path)
        for choice in (v.strip() for v in value.split(",")):
            if choice in options or choice in ("null", ""):
                continue
            close = difflib.get_close_matches(choice, options, n=1, cutoff=0.5)
            raise ConfigError(
                f"no {name} config named {choice!r}; available: {', '.join(options) or '(none)'}",
                key=name,
                hint=(f"did you mean {close[0]!r}? " if close else "")
                + f"options are the {name}/*.yaml files on the config search path",
            )


def run_composed(
    argv: Sequence[str],
    *,
    prog: str,
    config_name: str,
    groups: Sequence[str],
    job: Callable[[Any], int],
) -> int:
    """Compose ``config_name`` with Hydra and call ``job`` per composed config."""
    flags, overrides = split_argv(argv)
    search_path = config_search_path()
    check_groups(overrides, search_path, groups)

    import hydra
    from omegaconf import DictConfig

    _register_resolvers()
    codes: list[int] = []
    start_command()

    def task(cfg: DictConfig) -> None:
        release_stderr()
        codes.append(job(cfg))

    core, extra = search_path[0], search_path[1:]
    searchpath = "hydra.searchpath=[" + ",".join(_quote(p) for p in extra) + "]"
    entry = hydra.main(version_base="1.3", config_path=str(core), config_name=config_name)(task)
    saved = sys.argv
    sys.argv = [prog, *flags, *overrides, searchpath, SECRETS_CALLBACK]
    failed = False
    try:
        with HeldStderr() as held:
            try:
                entry()
            except KeyboardInterrupt:  # in a job, or in Hydra around it: said once
                say_interrupted(held.real)  # not held: nothing may follow to print it
                codes.append(130)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
                failed = code != 0
                if failed:
                    codes.append(EXIT_ERROR)
    finally:
        sys.argv = saved
    from evalframe.app import sweep

    refused = sweep.refusal()
    if refused is not None:  # a credential in the config: stopped before Hydra wrote it
        print(refused, file=sys.stderr)
    elif not held.passing:
        text = held.text()
        print(hydra_message(text) if failed else text, file=sys.stderr, end="")
    return max(codes, default=EXIT_OK)
