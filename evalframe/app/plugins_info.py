"""``evalframe plugins list|show``: rendered from the registry so docs cannot drift."""

from __future__ import annotations

from typing import Any

from evalframe.core.errors import PluginError
from evalframe.plugin.registry import REGISTRIES, PluginSpec

__all__ = ["describe_config", "list_plugins", "show_plugin"]


def _specs() -> tuple[list[PluginSpec], list[str]]:
    specs: list[PluginSpec] = []
    broken: list[str] = []
    for registry in REGISTRIES.values():
        found, problems = registry.load_all()
        specs.extend(found)
        broken.extend(problems)
    return specs, broken


def list_plugins() -> str:
    specs, broken = _specs()
    rows = [["KIND", "NAME", "DISTRIBUTION", "DESCRIPTION"]]
    for s in sorted(specs, key=lambda s: (s.kind, s.name)):
        dist = f"{s.distribution} {s.version}" if s.distribution else s.module
        rows.append([s.kind, s.name, dist, s.description])
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(r[:3], widths, strict=True)) + "  " + r[3]
        for r in rows
    ]
    lines.extend(f"broken: {b}" for b in broken)
    return "\n".join(lines)


def describe_config(model: Any) -> list[str]:
    if model is None:
        return ["  (no settings)"]
    lines = []
    for name, field in model.model_fields.items():
        default = (
            "required"
            if field.is_required()
            else f"default {field.get_default(call_default_factory=True)!r}"
        )
        ann = getattr(field.annotation, "__name__", str(field.annotation))
        desc = f": {field.description}" if field.description else ""
        lines.append(f"  {name} ({ann}, {default}){desc}")
    return lines or ["  (no settings)"]


def show_plugin(kind: str, name: str) -> str:
    registry = REGISTRIES.get(kind)
    if registry is None:
        raise PluginError(f"no plugin kind {kind!r}", expected=f"one of: {', '.join(REGISTRIES)}")
    spec = registry.get(name)
    head = f"{spec.kind} {spec.name} — {spec.description}"
    where = f"provided by {spec.distribution} {spec.version}" if spec.distribution else ""
    return "\n".join(
        [
            head,
            f"  module {spec.module} {where}".rstrip(),
            *([_metric_facts(spec.obj)] if spec.kind == "metric" else []),
            "settings:",
            *describe_config(spec.config),
        ]
    )


def _metric_facts(definition: Any) -> str:
    """A metric's cutoff and range, as a gate's threshold is checked against it."""
    k = {"required": "needs @k", "optional": "@k optional", "none": "takes no @k"}
    bounds = getattr(definition, "bounds", None)
    if bounds is None:
        span = "range not declared (gate thresholds on it are not checked)"
    else:
        low, high = bounds
        span = f"values from {low:g} to {high:g}" if high != float("inf") else f"values >= {low:g}"
    return f"  {k.get(getattr(definition, 'k', ''), '')}; {span}".replace("  ; ", "  ")
