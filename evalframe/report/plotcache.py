"""The run page's plots, kept in the cache folder so that unchanged numbers are not drawn again.

Within :func:`kept_in`, each plot's SVG is kept in the cache folder's store
(kind ``plots``) under a SHA-256 of what it draws: the drawing function's name
and arguments written out in full (:func:`_spell`), the source of the module
that draws it, and matplotlib's version. A warm run, a rescore or ``evalframe
report`` whose numbers did not change then finds every plot there and never
imports matplotlib: that import and the drawing were most of a small run's
page (about a second of CPU). A user's own ``matplotlibrc`` is not in the key
(reading it means importing matplotlib); docs/reports.md says to clear the
kind after changing it.
"""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import hashlib
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

if TYPE_CHECKING:
    from evalframe.core.store import EntryStore

__all__ = ["NAMESPACE", "kept", "kept_in"]

#: The cache kind (``evalframe cache info``) the drawn plots are kept under.
NAMESPACE = "plots"
_STORE: contextvars.ContextVar[EntryStore | None] = contextvars.ContextVar(
    "evalframe_plots_store", default=None
)
_Draw = TypeVar("_Draw", bound=Callable[..., str])


@contextmanager
def kept_in(cache_dir: Path | None) -> Iterator[None]:
    """Keep the plots drawn inside the block in ``cache_dir``'s store, and reuse them.

    A cache folder that cannot be opened or written only means drawing again:
    a page never fails for its cache. ``None``: draw every plot.
    """
    from evalframe.core.errors import EvalframeError
    from evalframe.core.store import open_store

    store = None
    if cache_dir is not None:
        try:
            store = open_store(Path(cache_dir), NAMESPACE)
        except (EvalframeError, OSError):
            store = None
    token = _STORE.set(store)
    try:
        yield
    finally:
        _STORE.reset(token)
        if store is not None:
            store.close()


class _NoKeyError(Exception):
    """The arguments hold a value the key cannot spell exactly: draw, keep nothing."""


def _spell(value: Any, out: list[str]) -> None:
    """``value`` written out exactly and completely (floats by ``repr``, which round-trips;
    containers in their order, which is the drawing order), for the cache key. Unlike
    ``repr``, never abbreviates (NumPy does past 1,000 items) and refuses what it does
    not know."""
    if value is None or isinstance(value, (bool, int, str)):
        out.append(repr(value))
    elif isinstance(value, float):  # np.float64 too
        out.append(repr(float(value)))
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        out.append(type(value).__qualname__ + "(")
        for f in dataclasses.fields(value):
            out.append(f.name + "=")
            _spell(getattr(value, f.name), out)
            out.append(",")
        out.append(")")
    elif isinstance(value, Mapping):
        out.append("{")
        for k, v in value.items():
            _spell(k, out)
            out.append(":")
            _spell(v, out)
            out.append(",")
        out.append("}")
    elif isinstance(value, (list, tuple)):
        opening, closing = ("[", "]") if isinstance(value, list) else ("(", ")")
        out.append(opening)
        for v in value:
            _spell(v, out)
            out.append(",")
        out.append(closing)
    elif isinstance(value, np.generic):  # a NumPy integer or bool
        _spell(value.item(), out)
    else:
        raise _NoKeyError(type(value).__name__)


@functools.cache
def _version(module: str) -> str:
    """What else decides a plot's SVG: the drawing module's code and matplotlib's
    version (read from its metadata, without importing it)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        mpl = version("matplotlib")
    except PackageNotFoundError:
        mpl = "?"
    source = getattr(sys.modules.get(module), "__file__", None)
    code = Path(source).read_bytes() if source else module.encode()
    return hashlib.sha256(code + b"\x00" + mpl.encode()).hexdigest()


def kept(draw: _Draw) -> _Draw:
    """``draw``, looked up in the store of :func:`kept_in` first and kept there after."""

    @functools.wraps(draw)
    def kept(*args: Any, **kwargs: Any) -> str:
        store = _STORE.get()
        if store is None:
            return draw(*args, **kwargs)
        spelled = [_version(draw.__module__), draw.__name__]
        try:
            _spell(args, spelled)
            _spell(sorted(kwargs.items()), spelled)
        except _NoKeyError:
            return draw(*args, **kwargs)
        key = hashlib.sha256("\x00".join(spelled).encode("utf-8")).hexdigest()
        svg = _held(store, key)
        if svg is None:
            svg = draw(*args, **kwargs)
            _keep(store, key, svg)
        return svg

    return kept  # type: ignore[return-value]  # same signature, wrapped


def _held(store: EntryStore, key: str) -> str | None:
    """The kept plot, or None (absent, or a store that cannot be read: draw it)."""
    import sqlite3

    from evalframe.core.errors import EvalframeError

    try:
        return store.get(key)
    except (EvalframeError, OSError, sqlite3.Error):
        return None


def _keep(store: EntryStore, key: str, svg: str) -> None:
    """Store a drawn plot; a store that cannot be written costs the next page a redraw."""
    import sqlite3

    from evalframe.core.errors import EvalframeError

    with suppress(EvalframeError, OSError, sqlite3.Error):
        store.put(key, svg)
