"""Building many objects at once without the cyclic garbage collector looking on.

CPython runs a collection every 700 new container objects (tuples, dicts,
models), and now and then one over every object alive. Building the 10k
rankings of a stored run (20k tuples over a million ids) or 10k per-query
records triggers such full passes again and again, each over everything
built so far: a third of the time. Those objects form no reference cycles,
so nothing is left for the collector while it is paused; it runs again as
usual afterwards. (Raising its thresholds for a whole run was tried and left:
garbage that does form cycles then lives longer, 16 MB at the cold run's peak.)
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused"]


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause automatic collection inside the block (nested blocks are fine); what
    the block builds must not form reference cycles, or it waits for the next one."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
