"""Giving up a query in flight whose answer can no longer matter.

When a query fails for good, the run stops with that error. The queries already in
flight beside it ran on: a service adapter waiting out a retry (a 429's
``Retry-After``, a backoff of up to ``backoff_max_seconds``) for an answer nobody
would read kept the run from ending. The pipeline marks each query it drives from
its threads; :func:`stop_requested` tells the plugin code answering it, between its
own retries, that the run has stopped on an *earlier* query of the golden order. The
error raised is the earliest failure in that order, so giving up a later query
changes no message: the same error whatever the timing. A query earlier than the one
that failed is never told (its own failure could be the earliest).

A plugin that gives up raises :class:`Stopped`; the pipeline counts that query as
never started. Code outside the pipeline's threads (a test, a notebook) is never told
to stop.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from evalframe.core.errors import EvalframeError

__all__ = ["Stopped", "stop_requested", "stoppable", "wait_or_stop"]

_local = threading.local()

#: How often a wait looks whether it may stop (a retry's wait is seconds long).
_POLL_SECONDS = 0.05


class Stopped(EvalframeError):  # noqa: N818  # no error: the query was given up as asked
    """Raised by plugin code that gave up a query because :func:`stop_requested` said so.

    An evalframe error, so that it passes a plugin's blame untouched; the pipeline
    never shows it (the run's own error is the one said)."""

    def __init__(self) -> None:
        super().__init__("given up: the run stopped on an earlier query")


def stop_requested() -> bool:
    """Whether the query this thread answers can no longer change the run's outcome."""
    check: Callable[[], bool] | None = getattr(_local, "check", None)
    return bool(check is not None and check())


def wait_or_stop(seconds: float) -> bool:
    """Wait ``seconds``, looking every 50 ms whether to stop; True when the wait ended
    early because :func:`stop_requested` said so."""
    end = time.monotonic() + seconds
    while True:
        if stop_requested():
            return True
        left = end - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(left, _POLL_SECONDS))


@contextmanager
def stoppable(check: Callable[[], bool]) -> Iterator[None]:
    """Within the block, :func:`stop_requested` (in this thread) answers ``check()``."""
    _local.check = check
    try:
        yield
    finally:
        _local.check = None
