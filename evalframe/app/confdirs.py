"""Where evalframe's config groups live: its own ``conf/`` and each plugin's.

Apart from :mod:`evalframe.app.hydra_app` (which builds Hydra's search path from
these) because finding a distribution's folder must survive a broken plugin
package: an ``__init__.py`` that raises is a warning, not a stopped run.
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
    """The folder of an importable package, or None when there is no such package.

    Finding a subpackage imports its parents (``ef_x.conf`` runs ``ef_x/__init__.py``),
    and their code may raise anything: that is raised on, for the caller to say (a
    package that exists but fails to import is not "cannot be found").
    """
    try:
        spec = importlib.util.find_spec(package)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing and (package == missing or package.startswith(missing + ".")):
            return None  # the package itself or one of its parents does not exist
        raise  # an import inside a parent's __init__.py failed
    except ValueError:  # an empty or relative name
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def plugin_conf_dirs() -> list[tuple[str, Path]]:
    """(entry-point name, folder) for every config folder a distribution declares.

    A folder that is missing, or whose package fails to import, is a warning and
    its config groups are skipped: one broken plugin distribution must not stop
    every run, most of which never use it (running it still says what is wrong).
    """
    from evalframe.core.secrets import redact_text
    from evalframe.plugin.registry import distribution_name, raised_at

    found = []
    for ep in sorted(entry_points(CONF_GROUP), key=lambda e: e.name):
        dist = distribution_name(ep)
        where = f"{ep.name!r} ({CONF_GROUP}" + (f", distribution {dist})" if dist else ")")
        try:
            folder = _package_dir(ep.value)
        except Exception as exc:  # noqa: BLE001  # a plugin's __init__.py may raise anything
            at = raised_at(exc)
            print(
                redact_text(
                    f"warning: entry point {where} names package {ep.value!r}, whose import "
                    f"failed: {type(exc).__name__}: {exc}"
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
