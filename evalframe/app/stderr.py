"""Holding Hydra's stderr until a job starts, so its errors can be said in evalframe's words.

Hydra reports a config it cannot compose itself, in its own words, and exits.
While it composes, :class:`HeldStderr` stands in for ``sys.stderr`` and keeps
what Hydra writes; :func:`evalframe.app.hydra_app.hydra_message` then turns the
messages we recognise into evalframe's one-paragraph form. Once the first job
(or a ``-m`` sweep) starts, everything passes straight through.

The holder is an object with a lifetime (a context manager) rather than
module state: the job or sweep that starts releases whichever holder is
current, and leaving the ``with`` block restores the real stream.
"""

from __future__ import annotations

import errno
import sys
from types import TracebackType
from typing import Any, ClassVar

__all__ = [
    "HeldStderr",
    "environment_error",
    "release_stderr",
    "report_crash",
    "say_interrupted",
    "start_command",
]

#: whether this command has said "interrupted" (a job that caught Ctrl-C says it, and the
#: sweep it stops must not say it twice; one stopped between jobs must still say it)
_interrupted_said = False


def start_command() -> None:
    """A command starts (tests run many in one process): nothing said yet."""
    global _interrupted_said
    _interrupted_said = False


def say_interrupted(stream: Any = None) -> None:
    """Say ``interrupted`` on ``stream`` (stderr), once per command, wherever Ctrl-C caught
    it: inside a job, or in Hydra's launcher before, between or after the jobs."""
    global _interrupted_said
    if not _interrupted_said:
        _interrupted_said = True
        print("interrupted", file=stream or sys.stderr, flush=True)


class HeldStderr:
    """Stands in for stderr while Hydra composes, holding what it writes."""

    _current: ClassVar[HeldStderr | None] = None

    def __init__(self) -> None:
        self.real: Any = sys.stderr
        self.passing = False
        self._held: list[str] = []

    def __enter__(self) -> HeldStderr:
        self.real = sys.stderr
        sys.stderr = self  # a pass-through proxy once released
        HeldStderr._current = self
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        sys.stderr = self.real
        if HeldStderr._current is self:
            HeldStderr._current = None

    def write(self, text: str) -> int:
        if self.passing:
            return int(self.real.write(text))
        self._held.append(text)
        return len(text)

    def release(self) -> None:
        """Write out what was held and pass everything through from now on."""
        if not self.passing:
            self.passing = True
            self.real.write(self.text())
            self._held.clear()

    def text(self) -> str:
        return "".join(self._held)

    def flush(self) -> None:
        if self.passing:
            self.real.flush()

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding, ...
        return getattr(self.real, name)


def release_stderr() -> None:
    """A job or sweep has started: the current holder, if any, passes everything through."""
    held = HeldStderr._current
    if held is not None:
        held.release()


def report_crash() -> None:
    """Print the exception being handled with its traceback, and say it is our bug.

    Exit code 3 (``EXIT_CRASH``) goes with it: a crash is never dressed up as a
    user mistake (2) or a failed gate (1), and never hidden. The traceback is the
    one Python prints, with credentials redacted from it (a plugin quoting its own
    key in the exception): it goes to CI logs like everything else on stderr.
    A plugin's exception names the plugin (:mod:`evalframe.plugin.blame`): which one,
    what it was asked, and that the report goes to its authors.
    """
    from evalframe.core.secrets import redact_text, redact_traceback
    from evalframe.plugin.blame import culprit

    exc = sys.exc_info()[1]
    if exc is not None:
        print(redact_traceback(exc), end="", file=sys.stderr)
    blamed = culprit(exc)
    if blamed is not None and exc is not None:
        plugin, doing = blamed
        print(
            redact_text(
                f"error: {plugin} raised {type(exc).__name__} while {doing} (above is the "
                "traceback); this is a bug in that plugin, not a mistake in your config — "
                "report it to the plugin's authors"
            ),
            file=sys.stderr,
        )
        return
    print(
        "error: evalframe or a plugin crashed (above is the traceback); this is a bug, "
        "not a mistake in your config — please report it",
        file=sys.stderr,
    )


#: OS errors that are the machine's state, not a bug: a full disk, a quota, a
#: read-only or forbidden folder. They exit 2 with the file named, not 3.
_ENVIRONMENT_ERRNOS = frozenset(
    {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM}
)


def environment_error(exc: BaseException) -> str | None:
    """The one-paragraph message for an OS error the user can fix, or None."""
    if not isinstance(exc, OSError):
        return None
    blocked = _file_in_the_way(exc) or _folder_in_the_way(exc)
    if blocked is not None:
        return blocked
    if exc.errno not in _ENVIRONMENT_ERRNOS:
        from evalframe.core.io import UnwritableTargetError

        if isinstance(exc, UnwritableTargetError):  # no file can be made there (/proc)
            return (
                f"error: cannot write {exc.filename}: {exc.strerror}\n  hint: write it to a "
                "folder you can write to (the option or setting that named it: --out, "
                "output.dir ...)"
            )
        return None
    where = f" {exc.filename}" if exc.filename else ""
    fixes = {
        errno.ENOSPC: "free some space (or point output.dir or EVALFRAME_CACHE_DIR elsewhere)",
        errno.EDQUOT: "free some of your quota (or write elsewhere)",
        errno.EROFS: "write to a folder that is writable (output.dir, EVALFRAME_CACHE_DIR)",
    }
    hint = fixes.get(exc.errno or 0, "check the permissions of that path, or write elsewhere")
    return f"error: cannot use{where}: {exc.strerror}\n  hint: {hint}"


def _file_in_the_way(exc: OSError) -> str | None:
    """The message for a path whose folder is a file (``--out results.json/x.jsonl``,
    ``output.dir`` under a file), or None.

    Creating the folder fails with EEXIST (``mkdir(exist_ok=True)`` over a
    file) and opening under it with ENOTDIR. Either is the path the user gave,
    not a bug: said with the file in the way, exit 2. Callers that catch
    OSError themselves (the caches, which warn and go on) are unchanged.
    """
    from pathlib import Path

    if exc.errno not in (errno.EEXIST, errno.ENOTDIR) or not exc.filename:
        return None
    path = Path(str(exc.filename))
    # the nearest part of the path that exists and is no folder
    in_the_way = next(
        (p for p in (path, *path.parents) if p.exists() or p.is_symlink()),
        None,
    )
    if in_the_way is None or in_the_way.is_dir():
        return None  # EEXIST over a folder, or a path that changed since: not this case
    what = (
        f"cannot use {path} as a folder: it is a file"
        if in_the_way == path
        else f"cannot write {path}: {in_the_way} is a file, not a folder"
    )
    return (
        f"error: {what}\n  hint: give a path whose folders are folders (the option or "
        "setting that named it: --out, --root, output.dir ...), or move the file away"
    )


def _folder_in_the_way(exc: OSError) -> str | None:
    """The message for a file whose path is a folder (``report RUN`` where
    ``RUN/report.html`` is a folder, ``--out DIR`` for a file), or None.

    The atomic write's last step, the rename over the target, fails with EISDIR
    (its temporary file is removed): nothing was written, and the path is the
    user's to change. Exit 2 with the folder named."""
    from pathlib import Path

    if exc.errno != errno.EISDIR:
        return None
    target = getattr(exc, "filename2", None) or exc.filename
    if not target or not Path(str(target)).is_dir():
        return None
    return (
        f"error: cannot write {target}: it is a folder, and evalframe writes a file "
        "there\n  hint: move the folder away, or give another path (--out, output.dir)"
    )
