"""Keeping the cyclic garbage collector off the large structures a command builds.

CPython runs a collection every 700 new container objects (tuples, dicts,
models), and now and then one over every object alive. A command at 10k
queries holds a few million such objects: the golden set, the run's 10k
rankings (20k tuples over a million ids), 10k per-query records, the run
folder read back for the page. Every collection walks the young ones again,
and every full one walks them all, although none of them is garbage: at 10k
queries that was about 1 s of a 7 s ``rescore``.

Two tools, both about objects that form no reference cycles, or that live
until the command ends:

* :func:`gc_paused` pauses automatic collection while such a structure is
  built, so the collector does not walk it again and again as it grows
  (raising the thresholds for a whole run was tried and left: garbage that
  does form cycles then lives longer, 16 MB at the cold run's peak).
* :func:`settle` marks what is alive now as long-lived (:func:`gc.freeze`):
  later collections skip it. It acts only inside :func:`long_lived`, the
  scope of one run (``run_experiment``) or of one ``rescore``, ``merge`` or
  ``report`` command, which gives everything back to the collector when it
  ends (:func:`gc.unfreeze`). A program that calls evalframe's functions
  keeps its collector as it was, and the jobs of a sweep that run one after
  the other in one process (Hydra's basic launcher) each give theirs back
  before the next, and the scope ends with one full collection: without it
  the given-back cycles (each job's configs) waited in the oldest
  generation, 40 MB more after 16 Cranfield jobs. The console script's
  ``rescore``, ``merge`` and ``report``, whose process ends with their one
  scope, skip that collection (:func:`process_ends_with_command`). Freezing does
  not stop reference counting: a frozen object is freed when its last
  reference goes. Only a frozen object in a reference cycle waits, until the
  scope ends. A scope opened while something else has frozen objects (a
  server that froze before forking) freezes nothing, so as not to unfreeze
  theirs.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused", "long_lived", "process_ends_with_command", "settle"]

#: open :func:`long_lived` scopes, whether the outermost one may freeze, and whether
#: the process ends with it (:func:`process_ends_with_command`)
_scope = {"depth": 0, "freezes": False, "last": False}


def process_ends_with_command() -> None:
    """Say that the process ends when its command does (the ``evalframe`` console
    script): the outermost scope then leaves what it froze frozen rather than give it
    back with a full collection (0.05 s at 10k queries) that nothing would use."""
    _scope["last"] = True


@contextmanager
def long_lived() -> Iterator[None]:
    """The scope of one run or command: :func:`settle` freezes inside it, and everything
    it froze is given back to the collector when the outermost scope ends."""
    outermost = _scope["depth"] == 0
    if outermost:
        _scope["freezes"] = gc.get_freeze_count() == 0
    _scope["depth"] += 1
    try:
        yield
    finally:
        _scope["depth"] -= 1
        if outermost:
            if _scope["freezes"] and gc.get_freeze_count() and not _scope["last"]:
                gc.unfreeze()
                # Given back, the objects sit in the oldest generation, which is collected
                # only after it has grown by a quarter: the cycles a run left (its configs')
                # would pile up over a sweep's jobs. One full pass now, over what is left.
                gc.collect()
            _scope["freezes"] = False


def settle() -> None:
    """What is alive now lives on: later collections skip it (inside :func:`long_lived`
    only; elsewhere nothing happens). Call it after building a large structure that
    the command keeps, such as a loaded golden set or a run."""
    if _scope["depth"] and _scope["freezes"]:
        gc.freeze()


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause automatic collection inside the block (nested blocks are fine); what
    the block builds must not form reference cycles, or it waits for the next one.
    Inside :func:`long_lived`, what the block built is then settled (:func:`settle`)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        settle()
        if was_on:
            gc.enable()
