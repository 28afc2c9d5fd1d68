"""Hydra composes a run's config once, not twice (see :func:`one_composition`)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

__all__ = ["mode_may_be_set", "one_composition"]

#: A word ``mode`` as YAML writes a key: ``mode:``, or ``hydra.mode`` in a flow mapping.
_MODE_KEY = re.compile(rb"\bmode\s*:")


def mode_may_be_set(overrides: Sequence[str], search_path: Sequence[Path]) -> bool:
    """Whether the composed config could set ``hydra.mode``: an override names a ``mode``,
    or a config file on the search path has a ``mode:`` key and mentions ``hydra``.

    Conservative on purpose (see :func:`one_composition`): a false "yes" costs one
    composition, a false "no" would run a sweep as a single run.
    """
    if any("mode" in o.split("=", 1)[0] for o in overrides):
        return True
    for folder in search_path:
        for path in folder.rglob("*.yaml"):
            try:
                text = path.read_bytes()
            except OSError:
                return True  # unreadable here, so Hydra will say what is wrong: let it look
            if b"hydra" in text and _MODE_KEY.search(text):
                return True
    return False


@contextlib.contextmanager
def one_composition(overrides: Sequence[str], search_path: Sequence[Path]) -> Iterator[None]:
    """Let Hydra compose the config once per run instead of twice.

    Before every run Hydra 1.3 composes the whole config once just to read
    ``hydra.mode`` (``Hydra.get_mode``), then composes it again to run: about
    0.15 s of a 1.2-1.4 s quickstart run on a 2-core machine (docs/performance.md).
    ``hydra.mode`` is unset unless an override or a config file sets it, and
    unset is what ``get_mode`` then returns (None: ``-m`` picks MULTIRUN, its
    absence RUN). So when :func:`mode_may_be_set` finds neither, the first
    composition is skipped; otherwise Hydra's own ``get_mode`` runs.
    """
    try:
        from hydra._internal.hydra import Hydra
    except ImportError:  # pragma: no cover - another Hydra layout: compose as it does
        yield
        return
    original = getattr(Hydra, "get_mode", None)
    if original is None or mode_may_be_set(overrides, search_path):
        yield
        return

    def get_mode(self: Any, config_name: str | None, overrides: list[str]) -> None:
        return None

    Hydra.get_mode = get_mode  # type: ignore[method-assign]  # restored below
    try:
        yield
    finally:
        Hydra.get_mode = original  # type: ignore[method-assign]
