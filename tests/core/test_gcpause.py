"""``core.gcpause``: what a command builds is kept off the collector's passes, and given back.

The rules under test (the module docstring): :func:`settle` freezes only inside
:func:`long_lived`; the outermost scope unfreezes what was frozen; a scope
opened while something else holds frozen objects freezes nothing; a frozen
object in a cycle is collected once the scope ends.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from evalframe.core.gcpause import gc_paused, long_lived, process_ends_with_command, settle


@pytest.fixture(autouse=True)
def no_frozen_objects() -> Iterator[None]:
    gc.collect()
    assert gc.get_freeze_count() == 0, "a test before this one left objects frozen"
    yield
    gc.unfreeze()


class Node:
    """An object that can be put in a reference cycle and watched through a weak reference."""

    other: object = None


def a_cycle() -> weakref.ref[Node]:
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)


def test_settle_outside_a_command_freezes_nothing() -> None:
    settle()
    assert gc.get_freeze_count() == 0


def test_settle_inside_a_command_freezes_what_is_alive_until_the_command_ends() -> None:
    kept = [[i] for i in range(1000)]
    with long_lived():
        settle()
        frozen = gc.get_freeze_count()
        # at least the 1,001 lists above (and everything else alive in this process)
        assert frozen >= len(kept) + 1
        assert gc.is_tracked(kept) and not any(kept[0] is o for o in gc.get_objects())
    assert gc.get_freeze_count() == 0
    assert any(kept is o for o in gc.get_objects())  # back in the collector's care


def test_only_the_outermost_scope_gives_the_objects_back() -> None:
    with long_lived():
        with long_lived():
            settle()
        assert gc.get_freeze_count() > 0  # the inner scope ended, the command did not
    assert gc.get_freeze_count() == 0


def test_a_scope_opened_over_someone_elses_frozen_objects_freezes_nothing() -> None:
    theirs = [object() for _ in range(10)]
    gc.freeze()  # as a server does before forking
    with long_lived():
        ours = [[i] for i in range(10)]
        settle()
        assert any(ours is o for o in gc.get_objects())  # not frozen
    assert gc.get_freeze_count() > 0  # theirs are still frozen: not ours to give back
    assert not any(theirs is o for o in gc.get_objects())


def test_a_frozen_cycle_is_collected_when_the_scope_ends() -> None:
    """By the scope's own full collection: given back, the objects would otherwise sit
    in the oldest generation (a sweep's jobs would pile up their cycles)."""
    with long_lived():
        ref = a_cycle()
        settle()  # the cycle is garbage already, but frozen with everything else
        gc.collect()
        assert ref() is not None  # the collector does not look at frozen objects
    assert ref() is None


def test_a_frozen_object_without_a_cycle_is_freed_by_its_last_reference() -> None:
    with long_lived():
        node = Node()
        ref = weakref.ref(node)
        settle()
        del node
        assert ref() is None  # reference counting is not the collector


def test_gc_paused_turns_collection_back_on_and_settles_inside_a_command() -> None:
    assert gc.isenabled()
    with long_lived():
        with gc_paused():
            assert not gc.isenabled()
            built = [(i,) for i in range(100)]
        assert gc.isenabled()
        assert gc.get_freeze_count() >= len(built)
    with gc_paused():
        pass
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_a_command_that_ends_the_process_leaves_its_objects_frozen(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The console script's rescore, merge and report: nothing would use what a final
    full collection gives back, so the scope skips it (the process ends next)."""
    from evalframe.core import gcpause

    monkeypatch.setitem(gcpause._scope, "last", False)
    process_ends_with_command()
    with long_lived():
        settle()
        frozen = gc.get_freeze_count()
        assert frozen > 0
    assert gc.get_freeze_count() > frozen // 2  # left frozen (not given back: 0), for the exit
