"""What every plugin's contract checks: discovery, a description, a strict frozen config."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from pydantic import BaseModel, ValidationError

from evalframe.plugin.dists import entry_points
from evalframe.plugin.registry import (
    Registry,
)

__all__ = ["PluginContract"]


class PluginContract:
    """Rules every plugin obeys: discoverable by entry point, with a strict frozen config."""

    plugin_name: ClassVar[str]
    registry: ClassVar[Registry[Any]]

    def _rule(self, rule: str) -> str:
        return f"{self.registry.kind} plugin {self.plugin_name!r} breaks the rule: {rule}"

    def test_discovered_through_its_entry_point(self) -> None:
        names = {ep.name for ep in entry_points(self.registry.group)}
        assert self.plugin_name in names, self._rule(
            f"it must be declared in the {self.registry.group!r} entry-point group"
        )
        spec = self.registry.get(self.plugin_name)
        assert spec.name == self.plugin_name

    def test_has_a_one_line_description(self) -> None:
        spec = self.registry.get(self.plugin_name)
        assert spec.description, self._rule("its class needs a docstring (shown by plugins list)")

    def test_config_is_frozen_and_forbids_unknown_keys(self) -> None:
        spec = self.registry.get(self.plugin_name)
        if spec.config is None:
            return
        assert issubclass(spec.config, BaseModel)
        cfg = spec.config.model_config
        assert cfg.get("frozen") is True, self._rule("its config model must be frozen")
        assert cfg.get("extra") == "forbid", self._rule("its config must forbid unknown keys")
        with pytest.raises(ValidationError):
            spec.config.model_validate({"surely_not_a_setting": 1})
