"""Waiting for an exclusive ``flock``: the one loop the record locks and the store lock share."""

from __future__ import annotations

import fcntl
import time
from typing import IO

__all__ = ["flock_within"]


def flock_within(handle: IO[bytes], wait: float, poll: float = 0.05) -> bool:
    """Take an exclusive lock on ``handle`` within ``wait`` seconds; False if another keeps it.

    Non-blocking tries in a loop rather than one blocking call, so a process
    stuck on a lock still gives up (and says so) instead of hanging a run.
    """
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(poll)
