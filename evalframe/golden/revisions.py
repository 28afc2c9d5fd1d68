"""A golden set as it was at a Git revision, through DVC (``golden diff --rev``).

A DVC-tracked golden set is not in Git: Git holds its ``.dvc`` file, and the
data is in DVC's cache or remote. ``dvc.api.DVCFileSystem`` reads both kinds of
file at any revision, so a reviewer can diff what a commit changed in a golden
set whether Git or DVC versions it. dvc is imported only here, only when
``--rev`` is given.
"""

from __future__ import annotations

from pathlib import Path

from evalframe.core.errors import ConfigError, DataError

__all__ = ["checkout_at"]


def _check_rev(root: Path, rev: str) -> None:
    """A clear error for a revision Git does not know (DVC would only say "not found")."""
    import subprocess

    result = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise ConfigError(
            f"no Git revision {rev!r} in {root}",
            key="--rev",
            expected="a commit, branch or tag, or a relative one such as HEAD~1",
            hint="`git log --oneline` lists the commits",
        )


def checkout_at(path: str | Path, rev: str, dest: Path) -> Path:
    """Copy ``path`` (a file or folder) as it was at ``rev`` into ``dest``; return the copy.

    The copy keeps the file name, so the format is inferred as for the original.
    """
    from evalframe.golden.dvcinfo import dvc_root

    target = Path(path).expanduser().resolve()
    root = dvc_root(target.parent)
    if root is None:
        raise ConfigError(
            f"{path} is not inside a DVC repository, so --rev cannot read it",
            key="--rev",
            expected="a golden set inside a Git repository initialised with `dvc init`",
            hint="diff two files instead: evalframe golden diff OLD NEW",
        )
    rel = target.relative_to(root).as_posix()
    _check_rev(root, rev)

    from dvc.api import DVCFileSystem
    from dvc.exceptions import DvcException

    copy = dest / target.name
    try:
        fs = DVCFileSystem(str(root), rev=rev)
        if not fs.exists(rel):
            raise DataError(
                f"{rel} does not exist at revision {rev!r}",
                path=path,
                hint=f"`git log --oneline -- {rel} {rel}.dvc` lists the revisions that have it",
            )
        fs.get(rel, str(copy), recursive=fs.isdir(rel))
    except DvcException as exc:
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DataError(
            f"cannot read {rel} at revision {rev!r}: {message}",
            path=path,
            hint="the data may be in no cache yet: `dvc fetch --all-commits` (or `dvc pull`) "
            "brings it from the remote",
        ) from None
    except FileNotFoundError as exc:
        raise DataError(
            f"cannot read {rel} at revision {rev!r}: {exc.strerror or exc}",
            path=path,
            hint="if DVC tracks it, its data is in no cache: `dvc fetch --all-commits` "
            "(or `dvc pull`) brings it from the remote",
        ) from None
    return copy
