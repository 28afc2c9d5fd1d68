"""Whether a plugin's version identifies its code, and a hash of the code when it does not.

Caches keyed on a plugin's name, version and config (the retrieval cache's rankings,
corpus manifests) are right for a release installed from a package index: its files
change only with its version. They are wrong for code being worked on, whose version
stays put while it is edited: an editable install (``pip install -e``, as
docs/plugins.md advises), a folder, VCS checkout or archive installed by URL (PEP 610
``direct_url.json``), or a module found on ``sys.path``/``PYTHONPATH`` (with or without
a hand-written dist-info beside it). For those, :func:`code_identity` hashes the
plugin's source files, and the key holds the hash: an edit re-runs the plugin once
instead of answering from what the old code computed.

The hash covers the whole top-level package of the module that registered the plugin
(a helper module's edit changes results as much as the plugin class's), is computed
once per process (the code as loaded: 0.3 ms for the bm25 plugin's three files, 7 ms
for a package of evalframe's 190 files and 1.7 MB), and reads at most :data:`MAX_BYTES`
of source; files beyond that, and compiled extension modules, count by size and
modification time.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import sys
from importlib import machinery, metadata
from pathlib import Path

from evalframe.plugin.dists import distribution_of

__all__ = ["MAX_BYTES", "code_identity", "code_root", "pinned_by_version"]

#: Source read and hashed per package, at most; past it, files count by size and mtime.
MAX_BYTES = 16 * 1024 * 1024

#: Folder names under which installers put distributions (venv, system, user, Debian).
_SITE_DIRS = frozenset({"site-packages", "dist-packages"})

#: evalframe's own modules register no plugin whose code changes apart from evalframe:
#: the Python API's ``python_object`` plugins carry their objects' identity in their config.
_SELF = "evalframe"


@functools.cache
def code_identity(module: str) -> str | None:
    """A hash of the code of the plugin registered by ``module``, or None when not needed.

    None when the plugin's version identifies its code (:func:`pinned_by_version`), when
    its code is not in files (a notebook's ``__main__``, a zip) or when it is evalframe's
    own. Cached per process: the hash stands for the code this process loaded, so a
    module reloaded after an edit in a notebook is not seen until the kernel restarts.
    """
    if not module or module.split(".", 1)[0] == _SELF:
        return None
    root = code_root(module)
    if root is None or pinned_by_version(module, root):
        return None
    try:
        return _digest(root)
    except OSError:  # unreadable: the version (as before) is all the key can hold
        return None


def code_root(module: str) -> Path | None:
    """The file or folder holding ``module``'s code: its top-level package's folder, or
    the module's own file when it is in no package.

    Namespace packages are looked through (one may be shared by many distributions,
    ``acme.plugins.*``): the root is the outermost regular package or module below them.
    """
    parts = module.split(".")
    for depth in range(1, len(parts) + 1):
        origin, is_package = _located(".".join(parts[:depth]))
        if origin is not None and origin.is_file():
            return origin.parent if is_package else origin
        if not is_package:
            return None  # neither a file nor a namespace to look through: built-in, frozen
    return None


def _located(name: str) -> tuple[Path | None, bool]:
    """``(origin file, is a package)`` of an imported or importable module, without importing it
    (a parent package excepted, as ``find_spec`` does)."""
    mod = sys.modules.get(name)
    if mod is not None:
        spec = getattr(mod, "__spec__", None)
        origin = getattr(spec, "origin", None) or getattr(mod, "__file__", None)
        is_package = hasattr(mod, "__path__")
    else:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            return None, False
        if spec is None:
            return None, False
        origin, is_package = spec.origin, spec.submodule_search_locations is not None
    return (Path(origin) if isinstance(origin, str) else None), is_package


def pinned_by_version(module: str, root: Path) -> bool:
    """True when the plugin's version identifies its code: a release installed from an index.

    That is, its code (``root``) lies in a ``site-packages`` folder and its distribution
    has no PEP 610 ``direct_url.json``, which pip and uv write for every install that
    did not come from an index (``-e`` folders, local folders, VCS and archive URLs),
    whose code can change under one version. A module on ``PYTHONPATH`` is never pinned,
    even with a dist-info beside it: nothing installed it, so nothing versions it.
    """
    if not _SITE_DIRS.intersection(root.parts):
        return False
    dist = distribution_of(module)
    if dist is None:
        return False
    try:
        return metadata.distribution(dist).read_text("direct_url.json") is None
    except metadata.PackageNotFoundError:
        return False


def _digest(root: Path) -> str:
    """SHA-256 (16 hex digits) of the code files under ``root`` by their relative paths:
    the same code hashes the same in another checkout or after ``git checkout`` back."""
    files = [root] if root.is_file() else _code_files(root)
    digest = hashlib.sha256()
    budget = MAX_BYTES
    for path in files:
        relative = path.name if path == root else path.relative_to(root).as_posix()
        st = path.stat()
        if path.name.endswith(tuple(machinery.SOURCE_SUFFIXES)) and st.st_size <= budget:
            data = path.read_bytes()
            budget -= len(data)
            digest.update(f"{relative}\0{len(data)}\0".encode())
            digest.update(data)
        else:  # an extension module, or past the budget: by size and time
            digest.update(f"{relative}\0{st.st_size}\0{st.st_mtime_ns}\0stat\0".encode())
    return digest.hexdigest()[:16]


def _code_files(folder: Path) -> list[Path]:
    """Every source and extension module under ``folder``, in a fixed order; bytecode
    caches and hidden folders left out."""
    suffixes = (*machinery.SOURCE_SUFFIXES, *machinery.EXTENSION_SUFFIXES)
    found: list[Path] = []
    for parent, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        found.extend(Path(parent, n) for n in sorted(names) if n.endswith(suffixes))
    return found
