"""The tracker contract: hooks the relay can call, with the arguments it passes."""

from __future__ import annotations

import inspect
from typing import Any, ClassVar

import pytest

from evalframe.plugin.hooks import HOOKS
from evalframe.plugin.registry import TRACKERS, Registry
from evalframe.plugin.testing.base import PluginContract

__all__ = ["HOOK_ARGUMENTS", "TrackerContract"]

#: What each hook is called with (see :mod:`evalframe.plugin.hooks`), by position
HOOK_ARGUMENTS: dict[str, tuple[str, ...]] = {
    "on_run_start": ("context",),
    "on_retrieval_done": ("context", "run"),
    "on_scored": ("context", "evaluation"),
    "on_gated": ("context", "gates"),
    "on_run_end": ("context", "outcome"),
    "on_error": ("context", "error"),
    "on_sweep_start": ("sweep",),
    "on_sweep_end": ("sweep", "jobs"),
}


class TrackerContract(PluginContract):
    """Rules for trackers. Provide a ``tracker`` fixture (the plugin built with its config).

    A hook that raises is reported and ignored, so that a tracking outage never
    changes a run: a hook whose signature does not take the relay's arguments
    therefore fails on every run as a warning only. The suite checks each hook
    method's signature against what the relay passes, and that the tracker
    defines at least one hook (one that defines none is never called).
    """

    registry: ClassVar[Registry[Any]] = TRACKERS

    @pytest.fixture
    def tracker(self) -> object:
        pytest.fail(f"{type(self).__name__} must define a `tracker` fixture")

    def test_defines_at_least_one_hook(self, tracker: object) -> None:
        hooks = [h for h in HOOKS if callable(getattr(tracker, h, None))]
        assert hooks, self._rule(f"it defines at least one hook among {', '.join(HOOKS)}")

    def test_each_hook_takes_what_the_relay_passes(self, tracker: object) -> None:
        assert set(HOOK_ARGUMENTS) == set(HOOKS)  # the table follows the hooks
        for hook, arguments in HOOK_ARGUMENTS.items():
            method = getattr(tracker, hook, None)
            if not callable(method):
                continue
            try:
                inspect.signature(method).bind(*(object() for _ in arguments))
            except TypeError as exc:
                pytest.fail(
                    self._rule(
                        f"{hook}() is called with ({', '.join(arguments)}); its signature "
                        f"{inspect.signature(method)} does not take them ({exc})"
                    )
                )
