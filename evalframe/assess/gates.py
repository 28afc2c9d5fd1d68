"""The gates engine: run every configured gate over the scored results.

A gate plugin returns a :class:`~evalframe.assess.results.GateResult`; the engine
stamps it with the gate's configured name and whether it is ``required``
(fails the run, exit 1) or ``advisory`` (reported only).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from evalframe.assess.results import Evaluation, GateResult, GateView
from evalframe.core.errors import ConfigError, PluginError
from evalframe.core.secrets import redact_text
from evalframe.core.types import GoldenSet
from evalframe.plugin.blame import blamed, build
from evalframe.plugin.protocols import Gate, PluginContext
from evalframe.plugin.registry import GATES, configure

__all__ = ["GateSpec", "run_gates", "verdict_state", "verdict_warnings"]


@dataclasses.dataclass(frozen=True)
class GateSpec:
    """One entry under ``gates:``: its name, plugin type, severity and settings."""

    name: str
    type: str
    required: bool
    params: Mapping[str, Any]


def run_gates(specs: list[GateSpec], evaluation: Evaluation) -> list[GateResult]:
    view = GateView(evaluation)
    results = []
    for spec in specs:
        key = f"gates.{spec.name}"
        plugin = GATES.get(spec.type, key=f"{key}.type")
        config = configure(plugin, spec.params, key)
        context = PluginContext(config_key=key)
        gate = build(plugin, config, context, f"being built for gate {spec.name!r}")
        if not isinstance(gate, Gate):
            raise PluginError(
                f"gate plugin {spec.type!r} ({plugin.module}) has no evaluate(view) method",
                hint="a gate must satisfy evalframe.plugin.protocols.Gate",
            )
        with blamed(plugin, f"evaluating gate {spec.name!r}"):
            result = gate.evaluate(view)
        if not isinstance(result, GateResult):
            raise PluginError(
                f"gate plugin {spec.type!r} ({plugin.module}) returned "
                f"{type(result).__name__}, not GateResult",
            )
        if not isinstance(result.passed, bool | np.bool_):
            # "fail", a truthy string, passed the run with a ✓: a verdict is True or False
            raise PluginError(
                f"gate plugin {spec.type!r} ({plugin.module}) gave gate {spec.name!r} "
                f"passed={result.passed!r}, which is not True or False",
                expected="GateResult(passed=True or False, ...)",
                hint="a verdict must be a bool: passed=bool(...) of the condition",
            )
        # what a gate says goes to the terminal, gates.json and the page: a plugin that
        # quotes its settings (a webhook's token) is redacted like every other message
        result = dataclasses.replace(
            result,
            passed=bool(result.passed),
            message=redact_text(str(result.message)),
            failures=tuple(redact_text(str(f)) for f in result.failures),
            hints=tuple(redact_text(str(h)) for h in result.hints),
        )
        results.append(
            dataclasses.replace(result, name=spec.name, type=spec.type, required=spec.required)
        )
    return results


def verdict(results: list[GateResult]) -> bool:
    """True when every *required* gate passed."""
    return all(r.passed for r in results if r.required)


#: :func:`verdict_state`'s three answers (``summary.json``'s ``verdict``).
PASSED, FAILED, UNCHECKED = "passed", "failed", "unchecked"


def verdict_state(results: Sequence[GateResult | Mapping[str, Any]]) -> str:
    """``failed`` when a required gate failed; ``passed`` when there are required gates
    and all passed; ``unchecked`` when no gate is required (none configured, or advisory
    ones only). An unchecked run exits 0 like a passed one, but nothing that could fail
    it was checked: every report says so rather than show it as passed. ``results``:
    the gates, or their entries as ``gates.json`` holds them."""
    flags = [
        (bool(r.get("required")), bool(r.get("passed")))
        if isinstance(r, Mapping)
        else (r.required, r.passed)
        for r in results
    ]
    required = [passed for req, passed in flags if req]
    if not required:
        return UNCHECKED
    return PASSED if all(required) else FAILED


def verdict_warnings(golden: GoldenSet, results: list[GateResult]) -> list[str]:
    """What the verdict must say beside pass/fail: gating on an unblessed set, or on a
    set whose source has drifted.

    A dataset plugin marks a set that has not passed its curation gate (KnowCode's
    human spot-check, §8) with ``provenance["blessed"] = False`` and its
    ``dataset_status``, and the source files that changed since the set was
    labelled (allowed with ``dataset.allow_drift``) in ``provenance["drift"]``.
    Gates still run and decide the exit code, but a verdict reached on labels no
    human has confirmed, or on ids the code may no longer have, is provisional,
    and says so wherever the verdict is shown (terminal, page, summary.md,
    gates.json).
    """
    if not results:
        return []
    out = []
    if golden.provenance.get("blessed") is False:
        status = golden.provenance.get("dataset_status")
        blessed = golden.provenance.get("blessed_statuses")
        accepted = f" (blessed: {', '.join(map(str, blessed))})" if blessed else ""
        out.append(
            f"gated on golden set {golden.name!r}, which is not blessed: its dataset_status is "
            f"{status!r}{accepted}; its labels have not passed the human spot-check, so this "
            "verdict is provisional"
        )
    drift = golden.provenance.get("drift")
    if isinstance(drift, list) and drift:
        shown = "; ".join(map(str, drift[:3])) + (" …" if len(drift) > 3 else "")
        out.append(
            f"gated on golden set {golden.name!r} while the code under evaluation has drifted "
            f"from it in {len(drift)} source file(s) (dataset.allow_drift=true): {shown}; its "
            "entity ids and line ranges may no longer hold, so this verdict is provisional"
        )
    return out


def parse_gate_specs(node: Mapping[str, Any] | None) -> list[GateSpec]:
    """Read the ``gates:`` mapping (name -> settings) into specs, validating the shape."""
    specs = []
    for name, raw in (node or {}).items():
        key = f"gates.{name}"
        if raw is None:
            continue  # `gates.x=null` switches a gate from a pack off
        if not isinstance(raw, Mapping):
            raise ConfigError(
                "a gate must be a mapping",
                key=key,
                expected="{type: threshold, ...}",
                got=repr(raw),
            )
        params = dict(raw)
        gtype = params.pop("type", None)
        if not isinstance(gtype, str):
            raise ConfigError(
                "the gate has no type",
                key=f"{key}.type",
                expected=f"one of: {', '.join(GATES.names())}",
                got=repr(gtype),
            )
        severity = params.pop("severity", "required")
        if severity not in ("required", "advisory"):
            raise ConfigError(
                "unknown gate severity",
                key=f"{key}.severity",
                expected="'required' or 'advisory'",
                got=repr(severity),
            )
        specs.append(
            GateSpec(name=str(name), type=gtype, required=severity == "required", params=params)
        )
    return specs
