"""Where evalframe's config groups live: its own ``conf/`` and each plugin's.

Apart from :mod:`evalframe.app.hydra_app` (which builds Hydra's search path from
these) because finding a distribution's folder must survive a broken or slow
plugin package: it runs none of the package's code.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from evalframe.core.errors import ConfigError
from evalframe.plugin.dists import entry_points
from evalframe.plugin.registry import CONF_GROUP

__all__ = ["PACKAGE_DIR", "core_conf_dir", "plugin_conf_dirs"]


#: The ``evalframe`` package folder (this module is ``evalframe/app/hydra_app.py``).
PACKAGE_DIR = Path(__file__).resolve().parents[1]


def core_conf_dir() -> Path:
    """evalframe's ``conf/``: beside the package in a checkout or editable install."""
    here = PACKAGE_DIR
    for candidate in (here.parent / "conf", here / "conf"):
        if (candidate / "config.yaml").is_file():
            return candidate
    raise ConfigError(
        f"evalframe's config folder was not found next to {here}",
        expected="conf/config.yaml in the project checkout",
        hint="install evalframe from its checkout with `make install` (pip install -e .)",
    )


def _package_dir(package: str) -> Path | None:
    """The folder of a package, found without running any of its code; None when there
    is no such package.

    ``importlib.util.find_spec("ef_x.conf")`` would import ``ef_x`` first, running its
    ``__init__.py`` on every command, which a heavy import there (torch) made seconds
    slower, and one that raised stopped. Only the top-level name goes through the
    import system's finders (which find it, an editable install's too, without
    executing it); each part below is looked for in its parent's folders. A package
    already imported is found where it was imported from.
    """
    from importlib.machinery import PathFinder

    parts = package.split(".")
    if not all(parts):  # an empty or relative name
        return None
    try:
        spec = importlib.util.find_spec(parts[0])
    except (ImportError, ValueError):
        return None
    for depth in range(1, len(parts)):
        locations = spec.submodule_search_locations if spec is not None else None
        if not locations:
            return None
        name = ".".join(parts[: depth + 1])
        loaded = sys.modules.get(name)
        spec = getattr(loaded, "__spec__", None) or PathFinder.find_spec(name, list(locations))
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def plugin_conf_dirs() -> list[tuple[str, Path]]:
    """(entry-point name, folder) for every config folder a distribution declares.

    No plugin code runs (:func:`_package_dir`): a plugin package whose
    ``__init__.py`` is slow or raises costs only the runs that use the plugin,
    which then say what is wrong. A folder that cannot be found is a warning and
    its config groups are skipped: one broken distribution must not stop every
    run, most of which never use it.
    """
    from evalframe.core.secrets import redact_text
    from evalframe.plugin.registry import distribution_name, raised_at

    found = []
    for ep in sorted(entry_points(CONF_GROUP), key=lambda e: e.name):
        dist = distribution_name(ep)
        where = f"{ep.name!r} ({CONF_GROUP}" + (f", distribution {dist})" if dist else ")")
        try:
            folder = _package_dir(ep.value)
        except Exception as exc:  # noqa: BLE001  # odd finders: said, and the groups skipped
            at = raised_at(exc)
            print(
                redact_text(
                    f"warning: entry point {where} names package {ep.value!r}, which could "
                    f"not be looked up: {type(exc).__name__}: {exc}"
                    + (f" (at {at})" if at else "")
                    + "; its config groups are skipped"
                ),
                file=sys.stderr,
            )
            continue
        if folder is None:
            print(
                f"warning: entry point {where} names package {ep.value!r}, "
                "which cannot be found; its config groups are skipped",
                file=sys.stderr,
            )
            continue
        found.append((ep.name, folder))
    return found
