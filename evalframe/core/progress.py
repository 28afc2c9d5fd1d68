"""Progress on standard error for the slow steps of a run: loading, indexing, encoding, retrieving.

One shared live display (rich) holds every open step, so a plugin's step
(bm25 indexing) and the core's (retrieval) draw in one place and never
fight over the terminal. A step is shown only once it has run for
:data:`SHOW_AFTER` seconds, so the many quick steps of a small run draw
nothing. Nothing is drawn when standard error is not a terminal (a log
file, CI, a test), or inside :func:`quiet`. Bars vanish when their step
ends: the report on standard output stays clean.

Usage, from the core or a plugin::

    from evalframe.core.progress import step

    with step("bm25: indexing corpus", total=len(docs), unit="doc") as bar:
        for chunk in chunks:
            ...
            bar.advance(len(chunk))

``total=None`` draws a running timer instead of a bar, for a library call
that reports nothing while it works.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["SHOW_AFTER", "Step", "enabled", "quiet", "step"]

#: Seconds a step must run before it is drawn.
SHOW_AFTER = 1.0

_lock = threading.Lock()
_live: Any = None  # the shared rich Progress while any step is open
_open = 0
_quiet = 0


def enabled() -> bool:
    """Whether a step opened now would be drawn: stderr is a terminal and no :func:`quiet`."""
    return _quiet == 0 and sys.stderr.isatty()


@contextmanager
def quiet(on: bool = True) -> Iterator[None]:
    """Draw nothing inside this block (when ``on``): for runs driven by tests or other tools."""
    global _quiet
    if not on:
        yield
        return
    with _lock:
        _quiet += 1
    try:
        yield
    finally:
        with _lock:
            _quiet -= 1


class Step:
    """An open step: advance it as work is done. Does nothing when progress is off."""

    def __init__(self, task: Any = None) -> None:
        self._task = task

    def advance(self, n: float = 1) -> None:
        if self._task is not None and _live is not None:
            _live.advance(self._task, n)

    def update(self, *, completed: float | None = None, total: float | None = None) -> None:
        if self._task is not None and _live is not None:
            _live.update(self._task, completed=completed, total=total)


def _make_progress() -> Any:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        SpinnerColumn,
        Task,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.text import Text

    class _Counted(ProgressColumn):
        """A column for steps that count (a total); blank for a timer step, which
        would otherwise show an empty bar, ``0/?`` and an ``eta`` with no time."""

        def __init__(self, inner: ProgressColumn) -> None:
            super().__init__()
            self._inner = inner

        def render(self, task: Task) -> Any:
            return self._inner.render(task) if task.total is not None else Text("")

    class _Delayed(Progress):
        """Shows a task only after SHOW_AFTER seconds."""

        def get_renderables(self) -> Any:
            shown = [t for t in self.tasks if t.visible and (t.elapsed or 0.0) >= SHOW_AFTER]
            yield self.make_tasks_table(shown)

    return _Delayed(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        _Counted(BarColumn()),
        _Counted(MofNCompleteColumn()),
        _Counted(TextColumn("{task.fields[unit]}")),
        TimeElapsedColumn(),
        _Counted(TextColumn("eta")),
        _Counted(TimeRemainingColumn()),
        console=Console(file=sys.stderr),
        transient=True,
        refresh_per_second=8,
        redirect_stdout=False,  # stdout is the report's: never move it to stderr
        redirect_stderr=True,  # a warning while a bar is up prints above the bar
    )


@contextmanager
def step(description: str, total: float | None = None, unit: str = "") -> Iterator[Step]:
    """A step of work, drawn on stderr after a second when it is a terminal."""
    global _live, _open
    if not enabled():
        yield Step()
        return
    with _lock:
        if _live is None:
            _live = _make_progress()
            _live.start()
        _open += 1
        task = _live.add_task(description, total=total, unit=unit)
    try:
        yield Step(task)
    finally:
        with _lock:
            _live.remove_task(task)
            _open -= 1
            if _open == 0:
                _live.stop()
                _live = None
