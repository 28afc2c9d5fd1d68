"""What ``--cfg job --resolve`` prints: Hydra's config with its values, redacted.

Hydra prints the composed config itself. Unresolved, it holds references only
(literal secrets are refused before it runs); ``--resolve`` would print what a
reference resolves to, a key taken from the environment among them, so
:func:`evalframe.app.hydra_app.run_hydra` holds that output and prints it through
:func:`redacted_yaml`, the rule every config evalframe writes goes through.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["prints_resolved", "redacted_yaml"]


def prints_resolved(flags: Sequence[str]) -> bool:
    """``--cfg``/``-c`` with ``--resolve``: Hydra prints the config with its values."""
    return "--resolve" in flags and any(f in ("--cfg", "-c") for f in flags)


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
