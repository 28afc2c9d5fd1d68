"""A third party's distribution as pip installs one, put on ``sys.path`` by a test.

A temporary folder holds the distribution's files (packages and modules, by
relative path) and a hand-written ``<dist>-0.1.0.dist-info`` with its
``METADATA`` and ``entry_points.txt``: what ``importlib.metadata`` reads for an
installed distribution, so discovery runs exactly as for a real one. Like the
``install`` fixture of tests/test_registry.py, but with packages (a plugin's
``__init__.py``, its ``conf`` package) rather than top-level modules only.

Use it as a fixture in a test module::

    install = pytest.fixture(installer, name="install")
"""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack
from pathlib import Path

import pytest

from evalframe.plugin.registry import REGISTRIES

__all__ = ["installer", "write_dist"]


def write_dist(root: Path, dist: str, entry_points: str, files: Mapping[str, str]) -> None:
    """Write distribution ``dist`` into ``root``: ``files`` (relative path -> source)
    and its dist-info, named as pip names it (``ef-x`` -> ``ef_x-0.1.0.dist-info``)."""
    info = root / f"{dist.replace('-', '_')}-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points).lstrip())
    for relative, source in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))


def installer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[[str, str, Mapping[str, str]], Path]]:
    """``install(dist, entry_points, files) -> folder``; afterwards the folders leave
    ``sys.path``, their modules ``sys.modules`` and their plugins every registry."""
    tops: set[str] = set()

    def install(dist: str, entry_points: str, files: Mapping[str, str]) -> Path:
        root = tmp_path / dist
        write_dist(root, dist, entry_points, files)
        tops.update(Path(relative).parts[0].removesuffix(".py") for relative in files)
        monkeypatch.syspath_prepend(str(root))
        importlib.invalidate_caches()
        return root

    with ExitStack() as scopes:
        for registry in REGISTRIES.values():
            scopes.enter_context(registry.scoped())
        yield install
    for name in list(sys.modules):
        if name.split(".")[0] in tops:
            del sys.modules[name]
