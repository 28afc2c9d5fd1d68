"""A plugin config's field named like a key its kind's YAML section takes for itself could
never be set: refused at registration, per kind (audit 47, finding 18). Under ``gates:``
those are ``type`` and ``severity``; elsewhere ``name``; a gate may have a ``name``."""

from __future__ import annotations

import pytest

from evalframe.core.errors import PluginError
from evalframe.plugin.protocols import PluginConfig
from evalframe.plugin.registry import Registry


class Severity(PluginConfig):
    severity: str = "all"


class Named(PluginConfig):
    name: str = "all queries"


class Plugin:
    """A plugin."""


def test_a_gate_field_named_severity_is_refused_saying_what_the_key_does() -> None:
    with pytest.raises(PluginError) as info:
        Registry("gate", "evalframe.test_none").add("g06", Plugin, Severity)
    assert info.value.message == (
        f"gate plugin 'g06' ({__name__}): its config has a field 'severity', but that key "
        "sets the gate's severity (required or advisory) under gates: and can never reach it"
    )


def test_a_gate_may_have_a_name_and_a_retriever_may_not() -> None:
    Registry("gate", "evalframe.test_none").add("g08", Plugin, Named)
    with pytest.raises(PluginError) as info:
        Registry("retriever", "evalframe.test_none").add("r", Plugin, Named)
    assert "that key selects the plugin in YAML and can never reach it" in info.value.message


def test_an_exporter_gets_its_settings_whole() -> None:
    Registry("exporter", "evalframe.test_none").add("x", Plugin, Named)
