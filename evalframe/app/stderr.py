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

import sys
from types import TracebackType
from typing import Any, ClassVar

__all__ = ["HeldStderr", "release_stderr", "report_crash"]


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
    user mistake (2) or a failed gate (1), and never hidden.
    """
    import traceback

    traceback.print_exc()
    print(
        "error: evalframe or a plugin crashed (above is the traceback); this is a bug, "
        "not a mistake in your config — please report it",
        file=sys.stderr,
    )
