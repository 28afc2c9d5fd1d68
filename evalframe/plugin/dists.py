"""Which installed distribution ships a plugin, and its version (for trackers' tags).

Plugins come through entry points, and an entry point knows its distribution:
that answer is kept as each plugin loads. ``importlib.metadata``'s
``packages_distributions`` (a scan of every installed distribution's files)
answers for the rest, such as a plugin registered by a decorator alone.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path

__all__ = ["distribution_of", "entry_points", "learn_distribution", "version_of"]


def entry_points(group: str) -> tuple[metadata.EntryPoint, ...]:
    """The installed entry points of ``group``, as ``importlib.metadata`` finds them.

    ``importlib.metadata.entry_points`` reads every installed distribution's
    metadata on each call (15-20 ms here); a command asks for five or six
    groups (commands, config folders, metrics, datasets, corpora, retrievers).
    One scan answers them all while nothing it read can have changed: the
    scan is kept with ``sys.path`` and the modification time of each folder
    on it, which a distribution installed or removed (a ``*.dist-info``
    folder made or deleted) or a folder put on the path (tests do) changes.
    """
    return tuple(_all_entry_points(_path_state()).select(group=group))


def _path_state() -> tuple[tuple[str, int], ...]:
    state = []
    for entry in sys.path:
        try:
            state.append((entry, Path(entry or ".").stat().st_mtime_ns))
        except (OSError, ValueError):  # a path hook's name, a missing folder
            state.append((entry, -1))
    return tuple(state)


@functools.lru_cache(maxsize=1)
def _all_entry_points(state: tuple[tuple[str, int], ...]) -> metadata.EntryPoints:
    # every group's (Python 3.11 returns them grouped; 3.12 as one EntryPoints)
    found = metadata.entry_points()
    return metadata.EntryPoints(ep for group in found.groups for ep in found.select(group=group))


@functools.lru_cache(maxsize=4)
def _packages_distributions(path: tuple[str, ...]) -> Mapping[str, list[str]]:
    """Top-level package -> distributions, once per ``sys.path``.

    The scan reads every installed distribution's metadata (0.2 s with torch
    installed); ``plugins list`` asks for it once per plugin. Keying on
    ``sys.path`` still sees a distribution put on the path later (tests do).
    """
    return metadata.packages_distributions()


#: Top-level package -> (distribution, version), learnt from the entry points that
#: loaded plugins: what ``packages_distributions`` says, without its scan of every
#: installed distribution's files (0.2-0.4 s, paid by every run for its MLflow tags).
_FROM_ENTRY_POINTS: dict[str, tuple[str, str | None]] = {}


def learn_distribution(ep: metadata.EntryPoint) -> None:
    dist = getattr(ep, "dist", None)
    top = ep.module.split(".", 1)[0]
    if dist is None or not top or top in _FROM_ENTRY_POINTS:
        return
    with contextlib.suppress(Exception):  # odd metadata: the scan answers instead
        _FROM_ENTRY_POINTS[top] = (str(dist.name), dist.version)


def distribution_of(module: str) -> str | None:
    top = module.split(".", 1)[0]
    if not top:
        return None
    if top in _FROM_ENTRY_POINTS:
        return _FROM_ENTRY_POINTS[top][0]
    try:
        dists = _packages_distributions(tuple(sys.path)).get(top)
    except Exception:  # noqa: BLE001  # metadata of a broken install must not stop registration
        return None
    return dists[0] if dists else None


def version_of(module: str) -> str | None:
    known = _FROM_ENTRY_POINTS.get(module.split(".", 1)[0])
    if known is not None:
        return known[1]
    dist = distribution_of(module)
    if dist is None:
        return None
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None
