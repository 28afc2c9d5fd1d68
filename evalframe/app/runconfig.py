"""``evalframe run-config FILE``: run an experiment from a config that is already composed.

DVC's ``dvc exp run -S '+experiment=X' -S retriever.k1=1.2`` composes the
Hydra config into ``params.yaml``; the ``exp`` stage of ``dvc.yaml`` runs it
with this command, so the run uses exactly the values DVC recorded (and
``dvc params diff`` shows). A run's own ``config.yaml`` works the same way.
No Hydra composition happens here: the file is the whole config.

``EVALFRAME_TRACKING`` still picks the tracker (``none`` turns tracking off),
and ``EVALFRAME_CACHE_DIR`` the cache folder, as they do for
``python -m evalframe``.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evalframe.core.errors import ConfigError
from evalframe.core.reader import read_bytes, yaml_error

__all__ = ["main"]


def _group_node(group: str, value: str, search_path: Sequence[Path], key: str) -> Any:
    """``group=option`` (or ``group=[a,b]``) as Hydra composes it: the option files merged.

    Group files other than experiments hold one section at the group's own
    package and no defaults list, so loading and merging them is what Hydra
    would do. An unknown option gets the same located error as on a run.
    """
    import yaml
    from omegaconf import OmegaConf

    from evalframe.app.hydra_app import check_group_overrides

    text = value.strip()
    choices = [c.strip() for c in text.strip("[]").split(",") if c.strip()]
    if text == "null" or not choices:  # `none` is an option file of its own (gates/none.yaml)
        return None if text == "null" else {}
    merged: Any = OmegaConf.create({})
    for choice in choices:
        check_group_overrides([f"{group}={choice}"], search_path)
        path = next(
            folder / group / f"{choice}.yaml"
            for folder in search_path
            if (folder / group / f"{choice}.yaml").is_file()
        )
        try:
            merged = OmegaConf.merge(merged, OmegaConf.load(path))
        except (OSError, yaml.YAMLError) as exc:  # a broken YAML file on the search path
            raise ConfigError(f"cannot read {path}: {str(exc).splitlines()[0]}", key=key) from None
    return merged


def _default_option(group: str, search_path: Sequence[Path]) -> str | None:
    """The option the primary config's defaults list picks for ``group`` (``tracking: mlflow``)."""
    from omegaconf import OmegaConf

    primary = OmegaConf.to_container(OmegaConf.load(search_path[0] / "config.yaml"))
    for entry in primary.get("defaults", []) if isinstance(primary, dict) else []:
        if isinstance(entry, dict) and group in entry:
            return str(entry[group])
    return None


def _same_folder(stored: Any, out: Path) -> bool:
    """Whether ``stored`` (a config's ``output.dir``) names the folder ``out`` is."""
    if not isinstance(stored, str) or not stored:
        return False
    try:
        return Path(stored).expanduser().resolve() == Path(out).expanduser().resolve()
    except (OSError, RuntimeError):  # an unresolvable path (a loop): not the same
        return False


def load_config(
    path: Path,
    overrides: Sequence[str],
    out: Path | None,
    *,
    what: str = "composed config",
    hint: str = "",
    stored_rankings: bool = False,
) -> dict[str, Any]:
    """The composed config in ``path`` with ``overrides`` applied, resolved and checked.

    This is the one way to change a config that is already composed (DVC's
    ``params.yaml``, a run's ``config.yaml`` for ``rescore``). ``group=option``
    for a config group (``gates=bob_regression``, ``metrics=bob``,
    ``tracking=none``) replaces that section by the option's file, as Hydra
    would have composed it; ``key=value`` changes one setting afterwards.
    ``EVALFRAME_TRACKING`` picks the tracker and ``EVALFRAME_CACHE_DIR`` the
    cache folder as they do on a run.
    """
    from omegaconf import DictConfig, OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from evalframe.app.hydra_app import GROUPS, _register_resolvers, config_search_path
    from evalframe.app.hydra_errors import omegaconf_error, plain_config

    # missing, a folder or unreadable: said as such (OmegaConf.load would raise OSError)
    read_bytes(path, what=what)
    _register_resolvers()
    search_path = config_search_path()
    groups: dict[str, str] = {}
    settings: list[str] = []
    for item in overrides:
        name, sep, value = item.lstrip("+").partition("=")
        if sep and name == "experiment":
            raise ConfigError(
                f"{what} {path} is already composed: its experiment cannot be changed",
                key="experiment",
                got=item,
                hint="run `python -m evalframe +experiment=NAME` for another experiment",
            )
        if stored_rankings and sep and (name == "retriever" or name.startswith("retriever.")):
            # rescore and merge score rankings retrieved already: the config they write
            # would name settings that never produced them (and MLflow would log those)
            raise ConfigError(
                f"the rankings beside {what} {path} were retrieved already, so the "
                "retriever's settings cannot change (they would be recorded beside rankings "
                "they never produced)",
                key=name,
                got=item,
                hint="run the experiment again with the new setting (python -m evalframe "
                f"+experiment=NAME {item.lstrip('+')}) to retrieve with it",
            )
        if sep and name in GROUPS:
            groups[name] = value
        else:
            settings.append(item)
    choice = os.environ.get("EVALFRAME_TRACKING", "").strip()
    if choice and "tracking" not in groups:
        groups["tracking"] = choice
    import yaml

    try:
        try:
            cfg = OmegaConf.load(path)
        except yaml.YAMLError as exc:  # a hand-edited or truncated file: located, exit 2
            raise yaml_error(
                exc,
                path,
                what=f"{what} {path}",
                hint="restore it from the run (or re-run); evalframe writes it whole",
            ) from None
        if not isinstance(cfg, DictConfig):
            raise ConfigError(
                f"{path} is not a mapping of settings",
                expected="a composed evalframe config (params.yaml or a run's config.yaml)",
            )
        if "tracking" not in cfg and "tracking" not in groups:
            # a run's config.yaml keeps no tracking section: track as a fresh run would
            default = _default_option("tracking", search_path)
            if default:
                groups["tracking"] = default
        for group, value in groups.items():
            node = _group_node(group, value, search_path, key=group)
            cfg[group] = node
        cache = os.environ.get("EVALFRAME_CACHE_DIR", "").strip()
        if (
            cache
            and "output" in cfg
            and not any(s.lstrip("+").startswith("output.cache_dir=") for s in settings)
        ):
            # the file holds the cache folder of the machine that composed it (a run's
            # config.yaml: the folder of the run's own); where the cache is now is the
            # environment's choice, as on a run (an override still wins)
            cfg.output.cache_dir = cache
        for item in settings:  # each override's YAML value, said with the override
            try:
                OmegaConf.from_dotlist([item])
            except yaml.YAMLError as exc:
                name = item.lstrip("+").partition("=")[0]
                raise ConfigError(
                    f"the value of override {item!r} is not YAML evalframe can read: "
                    f"{str(exc).splitlines()[0]}",
                    key=name,
                    expected="key=VALUE with VALUE in YAML (a list closed: [a,b]; a quote closed)",
                    got=item,
                    hint=hint or None,
                ) from None
        normalised = _normalise_setting(cfg)
        cfg = OmegaConf.merge(cfg, OmegaConf.from_dotlist(settings))
        if stored_rankings and _normalise_setting(cfg) != normalised:
            # the stored rankings' ids were normalised as they were retrieved: judged
            # against golden ids normalised another way, no id would match (Galaxy's
            # Hit@1 0.277 became 0.031)
            given = [s for s in settings if s.lstrip("+").startswith("dataset.normalise")]
            raise ConfigError(
                f"the rankings beside {what} {path} were normalised when they were "
                "retrieved (dataset.normalise applies to every retrieved id), so the "
                "normalisation cannot change: the golden ids would be normalised one way "
                "and the stored ones the other",
                key="dataset.normalise",
                got=" ".join(given) or repr(_normalise_setting(cfg)),
                hint="run the experiment again with the new setting (python -m evalframe "
                "+experiment=NAME dataset.normalise=...) to retrieve under it",
            )
        if out is not None and not _same_folder(OmegaConf.select(cfg, "output.dir"), out):
            # (a rescore in place keeps the folder as the file spells it, however the
            # command line spelled it: the same inputs write the same config.yaml)
            cfg.output.dir = str(out)
    except OmegaConfBaseException as exc:
        raise omegaconf_error(exc, f"read {path}", hint) from None
    return plain_config(cfg, f"read {path}", hint)


def _normalise_setting(cfg: Any) -> Any:
    """``dataset.normalise`` as plain data (None when unset)."""
    from omegaconf import OmegaConf

    value = OmegaConf.select(cfg, "dataset.normalise", default=None)
    return OmegaConf.to_container(value) if OmegaConf.is_config(value) else value


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="evalframe run-config",
        description="Run an experiment from a composed config file (params.yaml written by "
        "`dvc exp run -S ...`, or a run's config.yaml), without Hydra composition.",
    )
    parser.add_argument("config", type=Path, help="the composed config (YAML)")
    parser.add_argument("overrides", nargs="*", help="KEY=VALUE changes to it")
    parser.add_argument("--out", type=Path, help="output folder (default: output.dir in FILE)")
    # options may come between the positionals (... --out DIR ...)
    args = parser.parse_intermixed_args(list(argv))

    from evalframe.pipeline import run_experiment, validate_experiment
    from evalframe.report.page import RunPage
    from evalframe.report.terminal import TerminalReport

    hint = (
        "params.yaml is composed by `dvc exp run -S '+experiment=NAME'`; a plain "
        "`dvc exp run` composes the defaults, which name no golden set"
    )
    config = load_config(args.config, args.overrides, args.out, hint=hint)
    experiment = validate_experiment(config)
    return run_experiment(
        experiment,
        reporters=[RunPage(), TerminalReport()],
        metadata={"config_file": str(args.config)},
    ).exit_code
