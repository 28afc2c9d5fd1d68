"""``evalframe run-config FILE``: run an experiment from a config that is already composed.

DVC's ``dvc exp run -S '+experiment=X' -S retriever.k1=1.2`` composes the
Hydra config into ``params.yaml``; the ``exp`` stage of ``dvc.yaml`` runs it
with this command, so the run uses exactly the values DVC recorded (and
``dvc params diff`` shows). A run's own ``config.yaml`` works the same way.
No Hydra composition happens here: the file is the whole config.

``EVALFRAME_TRACKING`` still picks the tracker (``none`` turns tracking off), as
it does for ``python -m evalframe``. ``EVALFRAME_CACHE_DIR`` is what it is on a
run, the default of ``output.cache_dir``: a file that names the folder keeps it
(DVC's ``params.yaml`` names ``.evalframe-cache``, so ``dvc.lock`` is the same on
every machine). A literal credential in the file is refused, exit code 2, as on
the command line (docs/security.md).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evalframe.core.errors import ConfigError, EvalframeError
from evalframe.core.io import default_cache_dir
from evalframe.core.reader import read_bytes, yaml_error

__all__ = ["main"]

#: How to mend a run's stored config.yaml that is not YAML (rescore, merge).
_RESTORE = "restore it from the run (or re-run); evalframe writes it whole"
#: ``OmegaConf.select``'s answer for a key the file does not have.
_ABSENT = object()


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


def _elsewhere(folder: object) -> bool:
    """Whether a stored ``output.cache_dir`` is another machine's: absolute, nothing here.

    A relative one (DVC's ``.evalframe-cache``) is the project's, wherever it is."""
    if not isinstance(folder, str) or not folder:
        return False
    path = Path(folder).expanduser()
    try:
        return path.is_absolute() and not path.exists()
    except OSError:  # another user's home folder, not to be looked into
        return True


def load_config(
    path: Path,
    overrides: Sequence[str],
    out: Path | None,
    *,
    what: str = "composed config",
    hint: str = "",
    stored_rankings: bool = False,
    repair: str = _RESTORE,
    refuse_secrets: bool = False,
    fresh_tracking: bool = False,
) -> dict[str, Any]:
    """The composed config in ``path`` with ``overrides`` applied, resolved and checked.

    This is the one way to change a config that is already composed (DVC's
    ``params.yaml``, a run's ``config.yaml`` for ``rescore``). ``group=option``
    for a config group (``gates=bob_regression``, ``metrics=bob``,
    ``tracking=none``) replaces that section by the option's file, as Hydra
    would have composed it; ``key=value`` changes one setting afterwards.
    ``EVALFRAME_TRACKING`` picks the tracker as it does on a run, and
    ``EVALFRAME_CACHE_DIR`` is the cache folder of a file that names none (the
    default of ``output.cache_dir``, as on a run). ``repair``: how to mend the
    file when it is not YAML or holds no settings (the hint of that error).
    ``refuse_secrets``: a credential written into the file or an override is
    refused, as the command line refuses it (``run-config``, which runs the
    config; a stored run's config holds its credentials redacted, and a rescore
    sends nothing). ``fresh_tracking``: a ``tracking`` section in the file is dropped,
    so the environment and the overrides pick it as on a run (``merge``: a shard's
    config, written by shards that were tracked by none, still held ``tracking: none``).
    """
    from omegaconf import DictConfig, OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from evalframe.app.hydra_app import GROUPS, _register_resolvers, config_search_path
    from evalframe.app.hydra_errors import omegaconf_error, plain_config

    # missing, a folder or unreadable: said as such (OmegaConf.load would raise OSError)
    data = read_bytes(path, what=what)
    _register_resolvers()
    search_path = config_search_path()
    groups: dict[str, str] = {}
    settings: list[str] = []
    for item in overrides:
        name, sep, value = item.lstrip("+").partition("=")
        if not sep and not item.startswith("~"):
            # `depth` alone became depth=None: "Input should be a valid integer (got None)"
            raise ConfigError(
                f"override {item!r} has no '=': an override sets a key or picks a group's option",
                key=name,
                expected="KEY=VALUE or GROUP=OPTION",
                got=item,
                hint=f"give it a value, e.g. {name}=VALUE",
            )
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
            # the document's kind first: OmegaConf reads a lone word as a key of no value
            root = yaml.compose(data)
            cfg = OmegaConf.load(path)
        except yaml.YAMLError as exc:  # a hand-edited or truncated file: located, exit 2
            raise yaml_error(exc, path, what=f"{what} {path}", hint=repair) from None
        if not isinstance(root, yaml.MappingNode) or not isinstance(cfg, DictConfig) or not cfg:
            raise ConfigError(
                f"{what} {path} "
                + ("is not a mapping of settings" if root is not None and cfg else "is empty"),
                path=path,
                line=None if root is None else root.start_mark.line + 1,
                expected="a composed evalframe config: a mapping of its sections "
                "(experiment:, dataset:, retriever:, output: ...)",
                got="no settings (only comments or blank lines)" if root is None else _kind(root),
                hint=repair,
            )
        if fresh_tracking and "tracking" in cfg:
            del cfg["tracking"]
        in_file = OmegaConf.to_container(cfg, resolve=False)  # to locate a credential in it
        if "tracking" not in cfg and "tracking" not in groups:
            # a run's config.yaml keeps no tracking section: track as a fresh run would
            default = _default_option("tracking", search_path)
            if default:
                groups["tracking"] = default
        for group, value in groups.items():
            node = _group_node(group, value, search_path, key=group)
            cfg[group] = node
        if OmegaConf.select(cfg, "output.cache_dir", default=_ABSENT) is _ABSENT:
            # EVALFRAME_CACHE_DIR is the default of output.cache_dir, as on a run: for a
            # file that names no cache folder. One that names it keeps it (params.yaml's
            # .evalframe-cache: config.yaml and dvc.lock the same on every machine), and
            # an override changes it (below).
            OmegaConf.update(cfg, "output.cache_dir", str(default_cache_dir()), force_add=True)
        elif stored_rankings and _elsewhere(OmegaConf.select(cfg, "output.cache_dir")):
            # a run made on another machine: its cache folder (/home/alice/.cache/...) is
            # not here, and would be made here; this machine's default instead (a cache
            # saves work and changes no number), and an override changes it (below)
            OmegaConf.update(cfg, "output.cache_dir", str(default_cache_dir()))
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
        problem = _literal_secret(cfg, path, in_file) if refuse_secrets else None
        if problem is not None:  # the file's, an override's, or a config group file's
            raise problem
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
            OmegaConf.update(cfg, "output.dir", str(out), force_add=True)
    except OmegaConfBaseException as exc:
        raise omegaconf_error(exc, f"read {path}", hint) from None
    return plain_config(cfg, f"read {path}", hint)


def _run_config(path: Path) -> bool:
    """Whether ``path`` is a run's ``config.yaml`` (its folder holds a finished run)."""
    from evalframe.assess.runfolder import RunFolder

    return path.name == RunFolder.CONFIG and RunFolder.is_run(path.parent)


def _repair(path: Path) -> str:
    """How to mend ``path`` when it is not YAML or holds nothing: a run's ``config.yaml``
    comes back from where the run is kept; any other file (``params.yaml``, one of
    your own) is mended by hand or composed again."""
    if _run_config(path):
        return (
            "restore it from where the run is kept (a copy, `dvc checkout`, Git) or run the "
            "experiment again; evalframe writes it whole"
        )
    return (
        "mend the YAML by hand (`key: value`, nested keys indented by two spaces, a value "
        "holding `: ` or ` #` quoted), or compose it again: `dvc exp run -S "
        "'+experiment=NAME'` writes params.yaml whole, `git checkout params.yaml` brings "
        "back the committed one"
    )


def _kind(root: Any) -> str:
    """What a YAML document that is not a mapping holds (``a list``, ``the value 'x'``)."""
    import yaml

    if isinstance(root, yaml.SequenceNode):
        return "a list"
    if isinstance(root, yaml.ScalarNode):
        value = str(root.value)
        return f"the single value {value[:40]!r}{'…' if len(value) > 40 else ''}"
    return "an empty mapping, {}"


def _literal_secret(cfg: Any, path: Path, in_file: Any) -> EvalframeError | None:
    """The command line's refusal of a credential written into the config ``cfg``
    (:func:`evalframe.app.prechecks.literal_secrets`); located at its line of ``path``
    when the file holds it (``in_file``: the file as read), else by its key (an
    override's)."""
    from omegaconf import OmegaConf

    from evalframe.app.prechecks import literal_secrets

    problem = literal_secrets(cfg)
    if problem is None or problem.key is None:
        return problem
    value = _value_at(OmegaConf.to_container(cfg, resolve=False), problem.key)
    line = _key_line(path, problem.key) if _value_at(in_file, problem.key) == value else None
    if line is None:
        return problem
    problem.message = f"config key {problem.key}: {problem.message}"
    problem.path, problem.line = str(path), line
    if problem.hint is not None and not _run_config(path):
        problem.hint += (
            "; DVC's composition (`dvc exp run -S`) writes a ${oc.env:...} resolved into "
            "params.yaml, so there only the *_env and headers_from_env settings keep it out"
        )
    if "[redacted]" in value:
        # a run's config.yaml keeps credentials redacted: there is none to run with
        problem.message = (
            f"config key {problem.key} holds a redacted credential: a run's config.yaml "
            "keeps none, so the run cannot be repeated from it as it is"
        )
        problem.hint = (
            "give the reference back in an override: a URL's as "
            f"'{problem.key}=https://...?api_key=${{oc.env:KEY}}', a setting's as "
            f"'{problem.key}=${{oc.env:KEY}}' (a header: the plugin's headers_from_env); see "
            "docs/security.md"
        )
    return problem


def _value_at(tree: Any, key: str) -> str:
    """The text at a dotted ``key`` (``a.b[2]``) of a plain config tree; empty if none."""
    node = tree
    for part in key.replace("]", "").replace("[", ".").split("."):
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return ""
    return node if isinstance(node, str) else ""


def _key_line(path: Path, key: str) -> int | None:
    """The 1-based line of the value at a dotted ``key`` (``a.b[2]``) in the YAML file."""
    import yaml

    try:
        node: Any = yaml.compose(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    for part in key.replace("]", "").replace("[", ".").split("."):
        if isinstance(node, yaml.MappingNode):
            node = next((v for k, v in node.value if getattr(k, "value", None) == part), None)
        elif isinstance(node, yaml.SequenceNode) and part.isdigit() and int(part) < len(node.value):
            node = node.value[int(part)]
        else:
            return None
        if node is None:
            return None
    return int(node.start_mark.line) + 1


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
        "params.yaml is composed by `dvc exp run -S '+experiment=NAME'`, which picks the "
        "experiment that sets the golden set and the corpus"
    )
    config = load_config(
        args.config,
        args.overrides,
        args.out,
        hint=hint,
        repair=_repair(args.config),
        refuse_secrets=True,
    )
    experiment = validate_experiment(config)
    return run_experiment(
        experiment,
        reporters=[RunPage(), TerminalReport()],
        metadata={"config_file": str(args.config)},
    ).exit_code
