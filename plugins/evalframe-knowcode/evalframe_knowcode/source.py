"""Where the code under evaluation is read from: a folder, or a committed Git revision of it.

KnowCode's gate checks a golden set "at the committed commit SHA" (§5): a
working tree with uncommitted edits is not what the labels were written
against. :class:`GitTree` reads every file as ``git show REV:path`` gives it,
so the mechanical checks, the drift guard and the ``code_entities`` corpus
can all work on a revision; :class:`FolderTree` reads the working tree. Both
decode through the core reader, so a file that is not UTF-8 text is a
located error (``file:line:column``), the same wording as every other input.

Which files are Python source: ``*.py`` under the root (``include`` and
``exclude`` globs, ``**`` for any depth), skipping hidden folders (``.git``,
``.venv``, ``.tox``), ``__pycache__``, ``node_modules``, ``site-packages`` and
any folder holding a ``pyvenv.cfg`` (a virtualenv under another name).
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Protocol

from evalframe.core.errors import ConfigError, DataError
from evalframe.core.reader import decode, read_bytes, require_folder

__all__ = [
    "FolderTree",
    "GitTree",
    "SourceDriftError",
    "SourceTree",
    "glob_regex",
    "open_tree",
    "select",
]


class SourceDriftError(DataError):
    """The drift guard stopped a load: source files differ from the meta file's hashes.
    Its own kind, so a caller with another setting for it (the golden build's
    ``allow_drift``) can say so in its own terms."""


SKIP_DIRS = frozenset({"__pycache__", "node_modules", "site-packages"})
DEFAULT_INCLUDE = ("**/*.py",)


class SourceTree(Protocol):
    """Read-only access to a source tree, by paths relative to its root."""

    @property
    def label(self) -> str:
        """How errors and findings name the tree: ``DIR`` or ``DIR@REV``."""

    def exists(self, rel: str) -> bool: ...

    def read_bytes(self, rel: str) -> bytes:
        """The file's bytes; a missing file is a :class:`DataError`."""

    def text(self, rel: str) -> str:
        """The file as text (UTF-8, BOM dropped); bad bytes are a located :class:`DataError`."""

    def files(self) -> list[str]:
        """Every regular file, as sorted POSIX paths relative to the root."""


@functools.lru_cache(maxsize=64)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """A glob over POSIX paths as a regex: ``**/`` any folders (or none), ``*`` and
    ``?`` within one path segment."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def select(
    paths: Sequence[str],
    include: Sequence[str] = DEFAULT_INCLUDE,
    exclude: Sequence[str] = (),
) -> list[str]:
    """The paths matching an ``include`` glob and no ``exclude`` glob, sorted."""
    inc = [glob_regex(p) for p in include]
    exc = [glob_regex(p) for p in exclude]
    return sorted(
        p for p in paths if any(r.match(p) for r in inc) and not any(r.match(p) for r in exc)
    )


def _skipped(parts: Sequence[str]) -> bool:
    return any(part.startswith(".") or part in SKIP_DIRS for part in parts)


@dataclass
class FolderTree:
    """The working tree: files read from disk through the core reader."""

    root: Path

    @property
    def label(self) -> str:
        return str(self.root)

    def exists(self, rel: str) -> bool:
        return (self.root / rel).is_file()

    def read_bytes(self, rel: str) -> bytes:
        return read_bytes(self.root / rel, what="source file")

    def text(self, rel: str) -> str:
        path = self.root / rel
        return decode(self.read_bytes(rel), path=path, what="source file")

    def files(self) -> list[str]:
        out: list[str] = []
        for folder, dirs, names in os.walk(self.root):
            here = Path(folder)
            if (here / "pyvenv.cfg").is_file() and here != self.root:
                dirs[:] = []
                continue
            dirs[:] = sorted(d for d in dirs if not _skipped([d]))
            rel = here.relative_to(self.root)
            out.extend((rel / name).as_posix() for name in names if (here / name).is_file())
        return sorted(out)


def _git(cwd: Path, *args: str, key: str) -> bytes:
    try:
        result = subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)
    except FileNotFoundError:
        raise ConfigError(
            "reading a Git revision needs the `git` command, which is not installed",
            key=key,
            hint="install Git, or drop the revision to read the working tree",
        ) from None
    if result.returncode != 0:
        message = result.stderr.decode("utf-8", "replace").strip().splitlines()
        raise DataError(
            f"git {args[0]} failed in {cwd}: {message[0] if message else result.returncode}",
            key=key,
        )
    return result.stdout


@dataclass
class GitTree:
    """A committed revision: files listed by ``git ls-tree`` and read with ``git show REV:path``.

    ``root`` may be a subfolder of the repository; paths stay relative to it.
    """

    root: Path
    rev: str
    key: str = "--rev"
    _toplevel: Path = field(init=False)
    _prefix: str = field(init=False)
    _files: dict[str, str] = field(init=False)  # rel path -> path from the repository root

    def __post_init__(self) -> None:
        root = self.root
        try:
            probe = subprocess.run(
                ["git", "rev-parse", "--show-toplevel", "--show-prefix"],
                cwd=root,
                capture_output=True,
                text=True,
                check=False,
            )
        except FileNotFoundError:
            probe = None
        if probe is None or probe.returncode != 0:
            raise ConfigError(
                f"{root} is not inside a Git repository, so revision {self.rev!r} cannot be read",
                key=self.key,
                expected="a source root inside a Git work tree",
                hint="drop the revision to check the working tree, or point at the repository",
            )
        lines = probe.stdout.splitlines()
        self._toplevel = Path(lines[0])
        self._prefix = lines[1] if len(lines) > 1 else ""
        verify = subprocess.run(
            ["git", "rev-parse", "--verify", "--quiet", f"{self.rev}^{{commit}}"],
            cwd=root,
            capture_output=True,
            check=False,
        )
        if verify.returncode != 0:
            raise ConfigError(
                f"no Git revision {self.rev!r} in {self._toplevel}",
                key=self.key,
                expected="a commit, branch or tag, or a relative one such as HEAD~1",
                hint="`git log --oneline` lists the commits",
            )
        listing = _git(self._toplevel, "ls-tree", "-r", "-z", "--full-tree", self.rev, key=self.key)
        files: dict[str, str] = {}
        for entry in listing.decode("utf-8", "surrogateescape").split("\0"):
            if not entry:
                continue
            meta, _, path = entry.partition("\t")
            mode, kind = meta.split()[:2]
            # regular files only: a symlink's blob is its target's name, a submodule no file
            if kind != "blob" or mode not in ("100644", "100755"):
                continue
            if path.startswith(self._prefix):
                files[path[len(self._prefix) :]] = path
        self._files = files

    @property
    def label(self) -> str:
        return f"{self.root}@{self.rev}"

    def exists(self, rel: str) -> bool:
        return PurePosixPath(rel).as_posix() in self._files

    def read_bytes(self, rel: str) -> bytes:
        full = self._files.get(PurePosixPath(rel).as_posix())
        if full is None:
            raise DataError(
                f"source file {rel} does not exist at revision {self.rev!r}",
                path=self.root / rel,
                key=self.key,
            )
        # --no-textconv: the committed bytes, never a diff driver's rendering of them
        return _git(self._toplevel, "show", "--no-textconv", f"{self.rev}:{full}", key=self.key)

    def text(self, rel: str) -> str:
        where = f"{self.root / rel}@{self.rev}"
        return decode(self.read_bytes(rel), path=where, what="source file")

    def files(self) -> list[str]:
        return sorted(p for p in self._files if not _skipped(PurePosixPath(p).parts[:-1]))


def open_tree(
    root: str | Path, rev: str | None = None, *, key: str, rev_key: str | None = None
) -> FolderTree | GitTree:
    """The tree at ``root`` (config key ``key``): the working tree, or revision ``rev``
    of it (config key ``rev_key``)."""
    folder = require_folder(root, what="source root", key=key)
    if rev is None:
        return FolderTree(folder)
    return GitTree(folder, rev, key=rev_key or key)
