"""What is refused before a run or a sweep starts, while Hydra has written nothing.

Each check returns the error to say (or None), and :mod:`evalframe.app.sweep`'s
Hydra callbacks stop the run with it, exit code 2: a credential written into
the config, an ``experiment`` that is a mapping, a sweep's first job that
cannot be composed or validated (every job would fail alike). The launcher's
and the sweeper's checks are in :mod:`evalframe.app.launchers`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evalframe.core.errors import ConfigError, EvalframeError

__all__ = ["experiment_not_a_name", "first_job_problem", "literal_secrets"]


def literal_secrets(config: Any) -> EvalframeError | None:
    """Stop before Hydra writes ``.hydra/`` or ``multirun.yaml`` if a credential is in the config.

    Hydra copies the composed config to disk before the first job starts, so a
    check inside the job would come too late: the secret would already be
    saved. Callbacks run before those writes, on the unresolved config, where
    ``${oc.env:TOKEN}`` is still a reference and not the secret.
    """
    from omegaconf import OmegaConf

    from evalframe.core.secrets import find_literal_secrets

    plain = OmegaConf.to_container(config, resolve=False)
    extra = [str(x) for x in OmegaConf.select(config, "redact", default=None) or []]
    tree = {str(k): v for k, v in plain.items()} if isinstance(plain, dict) else {}
    found = find_literal_secrets(tree, extra)
    if not found:
        # a -m sweep's config holds no job's values yet: each swept value is checked
        # as the job that gets it would be, before multirun.yaml is written
        # (read unresolved: selected, ${oc.env:KEY} in an override would be the key)
        hydra = tree.get("hydra")
        overrides = hydra.get("overrides") if isinstance(hydra, dict) else None
        task = overrides.get("task") if isinstance(overrides, dict) else None
        found = [
            secret
            for job in _override_trees(task if isinstance(task, list) else [])
            for secret in find_literal_secrets(job, extra)
        ]
    return _refusal(found)


def _refusal(found: Sequence[Any]) -> EvalframeError | None:
    """The error naming the first literal credential found (and how many more), or None."""
    if not found:
        return None
    first = found[0]
    more = f"; {len(found) - 1} more: {', '.join(map(str, found[1:]))}" if len(found) > 1 else ""
    return ConfigError(
        f"a credential is written into the config ({first.how}); evalframe refuses it before "
        "anything is saved, because configs are copied to .hydra/, the run folder, MLflow "
        "and DVC" + more,
        key=first.key,
        got=f"{first.value[:4]}…" if len(first.value) >= 12 else "(a short literal value)",
        hint="name an environment variable instead, e.g. "
        f"{first.key}='${{oc.env:MY_SECRET}}' (inside a URL too: ?api_key=${{oc.env:KEY}}), "
        "or use the plugin's *_env / headers_from_env settings; see docs/security.md",
    )


def _override_trees(overrides: Sequence[Any]) -> list[dict[str, Any]]:
    """Each value the command line's overrides give a key, as a config tree of its own
    (``a.b="x","y"`` is ``{a: {b: x}}`` and ``{a: {b: y}}``): what each job of a sweep
    would hold. Overrides Hydra cannot parse are Hydra's to report; a sweep that needs
    the config to list its values (``glob``) is skipped."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    try:
        parsed = OverridesParser.create().parse_overrides([str(o) for o in overrides])
    except HydraException:
        return []
    trees = []
    for override in parsed:
        try:
            values = (
                list(override.sweep_iterator())
                if override.is_sweep_override()
                else [override.value()]
            )
        except (HydraException, ValueError, TypeError):
            continue
        for value in values:
            tree: Any = _plain(value)
            for part in reversed(override.key_or_group.split(".")):
                tree = {part: tree}
            trees.append(tree)
    return trees


def _plain(value: Any) -> Any:
    """A parsed override value as plain data (Hydra's quoted strings as their text)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    text = getattr(value, "text", None)  # hydra's QuotedString
    return text if isinstance(text, str) else value


def experiment_not_a_name(config: Any) -> EvalframeError | None:
    """Stop before Hydra makes ``outputs/${experiment}/...`` when ``experiment`` is a mapping.

    An experiment file whose ``# @package _global_`` line Hydra did not read (it
    reads the package only from the comment lines at the very top, so a comment
    above it hides it) lands under ``experiment:``. The run folder was then named
    after the mapping's text, a few folders deep, and the job failed on a
    missing ``dataset.path`` that said nothing of the cause.
    """
    from omegaconf import OmegaConf

    node = OmegaConf.select(config, "experiment", default=None, throw_on_missing=False)
    if not OmegaConf.is_config(node):
        return None
    keys = list(node.keys()) if OmegaConf.is_dict(node) else []
    hint = (
        "put `# @package _global_` on the experiment file's very first line (Hydra "
        "reads it only above every other comment), so that its keys are top-level settings"
    )
    marked = _file_with_a_bom(
        OmegaConf.select(config, "hydra.runtime.choices.experiment"),
        OmegaConf.select(config, "hydra.runtime.config_sources", default=None) or [],
    )
    if marked is not None:  # the line is first, but an invisible mark is before it
        hint = (
            f"{marked} starts with a byte-order mark (an invisible character some editors "
            "write first), so Hydra does not see `# @package _global_` on its first line: "
            "save the file as UTF-8 without a BOM"
        )
    return ConfigError(
        "not a name",
        key="experiment",
        expected="a name such as quickstart",
        got=f"a mapping with keys {', '.join(map(str, keys))}" if keys else "a list",
        hint=hint,
    )


def _file_with_a_bom(choice: Any, sources: Any) -> Path | None:
    """The experiment file ``choice`` names in Hydra's config ``sources`` (its search
    path, ``hydra.runtime.config_sources``), if it starts with a UTF-8 byte-order mark;
    None otherwise (or when it cannot be found or read)."""
    if not isinstance(choice, str) or not choice:
        return None
    for source in sources:
        if getattr(source, "schema", None) != "file" or not getattr(source, "path", None):
            continue
        path = Path(str(source.path)) / "experiment" / f"{choice}.yaml"
        try:
            with path.open("rb") as handle:
                if handle.read(3) == b"\xef\xbb\xbf":
                    return path
                return None
        except OSError:
            continue
    return None


def _first_job(config: Any) -> list[str] | None:
    """The overrides of the sweep's first job (each sweep at its first value, as Hydra's
    basic sweeper writes them), or None when the sweep is not a list or a range (an
    Optuna interval, a glob): those are left to the sweeper."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from omegaconf import OmegaConf

    task = OmegaConf.select(config, "hydra.overrides.task", default=[]) or []
    try:
        parsed = OverridesParser.create().parse_overrides([str(o) for o in task])
        first: list[str] = []
        for o in parsed:
            if o.is_sweep_override():
                value = next(iter(o.sweep_string_iterator()), None)
                if value is None:
                    return None  # an empty sweep: the sweeper says so
                first.append(f"{o.get_key_element()}={value}")
            else:
                first.append(str(o.input_line))
    except Exception:  # noqa: BLE001  # a sweep the basic grammar cannot list: not ours
        return None
    return first


def first_job_problem(config: Any, swept: Sequence[str]) -> EvalframeError | None:
    """Compose the sweep's first job before the sweep starts, and stop on its error.

    Hydra composes the sweep's config without the swept keys, and each job's
    only when the job launches: a misspelt swept key (``retriever.k11=0.9,1.2``)
    reached the user as Hydra's raw text, after the sweep's folder and its
    tracked parent run were made. A key every job shares fails in every job
    alike, so the first job's config says it for all of them, in evalframe's
    words and before anything is written.
    """
    from hydra import compose
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    from evalframe.app.hydra_errors import composition_error

    overrides = _first_job(config)
    if overrides is None or not GlobalHydra.instance().is_initialized():
        return None
    hydra_side = OmegaConf.select(config, "hydra.overrides.hydra", default=[]) or []
    hydra_side = [str(o) for o in hydra_side]
    try:
        job = compose(config_name="config", overrides=[*overrides, *hydra_side])
    except Exception as exc:  # noqa: BLE001  # Hydra's and OmegaConf's many error types
        return composition_error(
            exc,
            hint="overrides are written key=value, group=option, or +key=value to add "
            "a key; `python -m evalframe +experiment=NAME --cfg job` shows every key",
        )
    return _shared_value_problem(job, swept)


#: What stands for Hydra's per-job values (``${hydra:runtime.output_dir}``) when the
#: first job's config is validated before the sweep: no job folder exists yet.
_NOT_YET = "${hydra:"


def _shared_value_problem(job: Any, swept: Sequence[str]) -> EvalframeError | None:
    """Validate the first job's config before the sweep; stop on an error in a key that
    no override sweeps (``-m k1=0.9,1.2 report.terminal=short``).

    Such a value is the same in every job, so every job would fail alike, each
    printing the same error after the sweep's folder and tracked parent were
    made. An error in a swept key is one job's (``depth=abc,10``): the sweep
    runs, and that job fails on its own. A sweep over a config group's options
    (``retriever=bm25,dense``, ``+experiment=a,b``) changes what each job sets
    beyond the swept key, so the first job stands for none of the others: it is
    not checked. Warnings are not said here: each job says its own.
    """
    import contextlib
    import io
    import tempfile

    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    from evalframe.app.hydra_errors import plain_config
    from evalframe.pipeline.config import validate_experiment

    try:
        loader = GlobalHydra.instance().config_loader()
        if any(loader.get_group_options(k.lstrip("+~")) for k in swept):
            return None
    except Exception:  # noqa: BLE001  # cannot tell: leave every value to its job
        return None
    stand_in = str(Path(tempfile.gettempdir()) / "evalframe-sweep-check" / "job")

    def without_runtime(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: without_runtime(v) for k, v in value.items() if k != "hydra"}
        if isinstance(value, list):
            return [without_runtime(v) for v in value]
        return stand_in if isinstance(value, str) and _NOT_YET in value else value

    try:
        container = OmegaConf.to_container(job, resolve=False)
        cfg = OmegaConf.create(without_runtime(container))
        with contextlib.redirect_stderr(io.StringIO()):
            validate_experiment(plain_config(cfg, "resolve the config", ""))
    except EvalframeError as exc:
        key = exc.key or ""
        if (
            not key
            or key.startswith("output.")
            or any(key == k or key.startswith(f"{k}.") or k.startswith(f"{key}.") for k in swept)
        ):
            return None  # a job's own value, or one that depends on the job's folder
        return exc
    except Exception:  # noqa: BLE001  # anything else is for the jobs to meet and say
        return None
    return None
