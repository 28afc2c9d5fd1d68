"""Warnings on standard error: one line each, and a repeated one said once with its count.

A loader that skips, merges or doubts records says so on standard error, not
through :mod:`warnings`: the test suite turns those into errors, and a user
should see them whatever Python's warning filters say. ``golden validate``
reads the same lines back as findings, so one warning is one line.

A warning that would repeat for every record (``query id '101' is also a
document id``, then '102', ...) is collected in a :class:`Tally` and printed
once, with the count, the first few items and where the first one is::

    warning: 10 query id(s) are also document ids: 101, 102, 103, … (first at gold.jsonl:1)

A run also keeps what it warned about: inside :func:`kept`, every line
:func:`warn` prints is collected too, so ``summary.json`` and the run's page
can say what the terminal said ("10 repeated document ids removed") to
someone who only sees the page.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

__all__ = ["Tally", "kept", "kept_so_far", "shown", "warn"]

# The warnings of the run in progress, when one is collecting (see `kept`).
_KEPT: ContextVar[list[str] | None] = ContextVar("evalframe_warnings_kept", default=None)


def warn(message: str) -> None:
    """One line on stderr: ``warning: <message>``; kept too inside :func:`kept`.

    Credentials are redacted first (:func:`evalframe.core.secrets.redact_text`): a
    warning may quote a plugin's message or a URL, and what is kept goes on to
    ``summary.json`` and the run's page."""
    from evalframe.core.secrets import redact_text

    message = redact_text(message)
    print(f"warning: {message}", file=sys.stderr)
    said = _KEPT.get()
    if said is not None and message not in said:  # a repeat is said once on the page
        said.append(message)


@contextmanager
def kept() -> Iterator[list[str]]:
    """Collect every :func:`warn` message said inside the block, in order, once each.

    Nested blocks share the outermost list: the command opens one before
    validating its config, the pipeline another around the run, and the run
    folder gets both the config's warnings and the run's.
    """
    outer = _KEPT.get()
    if outer is not None:
        yield outer
        return
    said: list[str] = []
    token = _KEPT.set(said)
    try:
        yield said
    finally:
        _KEPT.reset(token)


def kept_so_far() -> list[str]:
    """The messages kept by the enclosing :func:`kept` block (none outside one)."""
    return list(_KEPT.get() or ())


def shown(items: Sequence[str], limit: int = 10) -> str:
    """``a, b, c …``: the first ``limit`` items of a list, for a one-line message."""
    head = ", ".join(items[:limit])
    return head + (" …" if len(items) > limit else "")


@dataclass
class _Kind:
    items: list[str] = field(default_factory=list)
    first: str | None = None
    count: int = 0


class Tally:
    """Warnings gathered while reading, printed once per kind with their count.

    ``add(what, item, where)`` counts one occurrence; :meth:`flush` (or leaving
    the ``with`` block without an error) prints ``<count> <what>: <items>``.
    ``what`` is the phrase that follows the count, written for any count:
    ``"query id(s) are also document ids"``. On an error the tally is dropped:
    the error is what the user needs to read.
    """

    def __init__(self) -> None:
        self._kinds: dict[str, _Kind] = {}

    def add(
        self, what: str, item: str | None = None, where: str | None = None, *, n: int = 1
    ) -> None:
        """Count ``n`` occurrences of ``what``; ``item`` names this one, ``where`` locates it."""
        kind = self._kinds.setdefault(what, _Kind())
        kind.count += n
        if item is not None:
            kind.items.append(item)
        if kind.first is None and where is not None:
            kind.first = where

    def count(self, what: str) -> int:
        kind = self._kinds.get(what)
        return kind.count if kind is not None else 0

    def __len__(self) -> int:
        return sum(k.count for k in self._kinds.values())

    def messages(self) -> list[str]:
        """The lines :meth:`flush` prints (without ``warning:``), in first-seen order."""
        out = []
        for what, kind in self._kinds.items():
            text = f"{kind.count} {what}"
            if kind.items:
                text += f": {shown(kind.items)}"
            if kind.first is not None:
                text += f" (first at {kind.first})"
            out.append(text)
        return out

    def flush(self) -> None:
        for message in self.messages():
            warn(message)
        self._kinds.clear()

    def __enter__(self) -> Tally:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if exc_info[0] is None:
            self.flush()
        else:  # the error is what the user needs to read
            self._kinds.clear()
