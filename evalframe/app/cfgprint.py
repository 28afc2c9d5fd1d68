"""What ``--cfg job --resolve`` prints: Hydra's config with its values, redacted.

Hydra prints the composed config itself. Unresolved, it holds references only
(literal secrets are refused before it runs); ``--resolve`` would print what a
reference resolves to, a key taken from the environment among them, so
:func:`evalframe.app.hydra_app.run_hydra` holds that output and prints it through
:func:`redacted_yaml`, the rule every config evalframe writes goes through.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "compose_unresolved",
    "printed_config_problem",
    "prints_config",
    "prints_resolved",
    "redacted_yaml",
    "shown_config",
]


def prints_config(flags: Sequence[str]) -> bool:
    """``--cfg``/``-c`` or ``--info``/``-i``: Hydra prints (some of) the config, no job runs."""
    return any(f.split("=", 1)[0] in ("--cfg", "-c", "--info", "-i") for f in flags)


def prints_resolved(flags: Sequence[str]) -> bool:
    """``--cfg``/``-c`` with ``--resolve``: Hydra prints the config with its values."""
    return "--resolve" in flags and any(f.split("=", 1)[0] in ("--cfg", "-c") for f in flags)


def compose_unresolved(primary: Path, overrides: Sequence[str]) -> Any:
    """The config (Hydra's node included, nothing resolved) that ``overrides`` compose
    to from ``primary``'s ``config.yaml``, through Hydra's compose API; a located
    :class:`~evalframe.core.errors.EvalframeError` when it does not compose."""
    import yaml
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException
    from hydra.initialize import get_gh_backup, restore_gh_from_backup
    from omegaconf.errors import OmegaConfBaseException

    from evalframe.app.hydra_errors import composition_error

    # A notebook may use Hydra itself (its own initialize()): set its state aside, and
    # give it back afterwards, as initialize_config_dir does with the state it finds.
    users = get_gh_backup()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(
            config_dir=str(primary), version_base="1.3", job_name="evalframe"
        ):
            return compose(
                config_name="config", overrides=list(overrides), return_hydra_config=True
            )
    except (HydraException, OmegaConfBaseException, yaml.YAMLError, ValueError) as exc:
        raise composition_error(exc) from None
    finally:
        restore_gh_from_backup(users)


def printed_config_problem(primary: Path, overrides: Sequence[str]) -> Any:
    """A credential written into the config ``--cfg``/``--info`` would print, refused as a
    run refuses it (with its Hydra callbacks, which those flags never reach).

    None when there is none, and when the config does not compose: Hydra then says why
    in its own words, as it does for a run.
    """
    from evalframe.app.prechecks import literal_secrets
    from evalframe.core.errors import EvalframeError

    try:
        cfg = compose_unresolved(primary, overrides)
    except EvalframeError:
        return None
    return literal_secrets(cfg)


def shown_config(text: str, flags: Sequence[str]) -> str:
    """What to print of Hydra's held ``--cfg``/``--info`` output (checked for literal
    secrets before Hydra ran: :func:`printed_config_problem`): with ``--resolve``, the
    values from the environment redacted; otherwise URL credentials and the secrets
    this process knows (the text redaction, as every message gets)."""
    from evalframe.core.secrets import redact_text

    return redacted_yaml(text) if prints_resolved(flags) else redact_text(text)


def redacted_yaml(text: str) -> str:
    """Hydra's printed config (``# @package`` lines, then YAML) with its credentials
    redacted (:func:`evalframe.core.secrets.redact`, the config's own ``redact:`` too);
    nothing of it when it cannot be read back, rather than a secret."""
    import yaml
    from omegaconf import OmegaConf

    from evalframe.core.secrets import redact, redact_text

    head = [line for line in text.splitlines(keepends=True) if line.startswith("# @package")]
    body = "".join(line for line in text.splitlines(keepends=True) if line not in head)
    try:
        data = yaml.safe_load(body) if body.strip() else None
    except yaml.YAMLError:
        return "".join(head) + "# (the resolved config could not be redacted, so it is not shown)\n"
    if not isinstance(data, dict):  # a --package that names a value, or nothing
        return redact_text(text)
    listed = data.get("redact")
    extra = [str(x) for x in listed] if isinstance(listed, list) else []
    return "".join(head) + OmegaConf.to_yaml(redact(data, extra))
