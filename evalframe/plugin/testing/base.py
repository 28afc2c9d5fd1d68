"""What every plugin's contract checks: discovery, a description, a strict frozen config."""

from __future__ import annotations

from types import ModuleType
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel, ValidationError

from evalframe.core.errors import PluginError
from evalframe.plugin.dists import entry_points
from evalframe.plugin.registry import Registry, load_entry_point

__all__ = ["PluginContract"]


class PluginContract:
    """Rules every plugin obeys: discoverable by entry point, with a strict frozen config."""

    plugin_name: ClassVar[str]
    registry: ClassVar[Registry[Any]]

    def _rule(self, rule: str) -> str:
        return f"{self.registry.kind} plugin {self.plugin_name!r} breaks the rule: {rule}"

    def test_discovered_through_its_entry_point(self) -> None:
        """The entry point is loaded as a run loads it, and leads to this plugin.

        The test module has imported the plugin's class already, so looking the name
        up would find that registration whatever the entry point says: a typo in
        its module or attribute (what users hit, with exit 2) would pass unseen.
        """
        eps = [ep for ep in entry_points(self.registry.group) if ep.name == self.plugin_name]
        assert eps, self._rule(
            f"it must be declared in the {self.registry.group!r} entry-point group"
        )
        ep = eps[0]
        loaded: Any = None
        problem = None
        try:
            loaded = load_entry_point(ep, f"{self.registry.kind} plugin {self.plugin_name!r}")
        except PluginError as exc:
            problem = exc.render()
        if problem is not None:  # said outside the except: one paragraph, no chained traceback
            pytest.fail(self._rule(f"its entry point {ep.value!r} must load.\n{problem}"))
        spec = self.registry.get(self.plugin_name)
        assert spec.name == self.plugin_name
        leads_here = loaded is spec.obj or (
            isinstance(loaded, ModuleType) and loaded.__name__ == spec.module
        )
        assert leads_here, self._rule(
            f"its entry point {ep.value!r} must name the module that registers it "
            f"({spec.module}) or the plugin itself"
        )

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
