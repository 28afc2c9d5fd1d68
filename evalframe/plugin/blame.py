"""Which plugin an unexpected exception came from, said where a crash is reported.

A plugin's bug (a ``KeyError`` in its ``retrieve``, an attribute it misspelt in a
gate) is a crash, exit 3, with its traceback: that is right. But the sentence
written for the user said "evalframe or a plugin crashed ... please report it",
naming neither the plugin nor what it was asked, and sending the report to the
wrong people. evalframe knows both at every place it calls a plugin, so each such
call runs inside :func:`blamed`: an exception that is not one of evalframe's own
(those are already one located paragraph) leaves with

* a note on the exception (``exc.add_note``), which the traceback prints right
  below its last line: ``while retriever plugin 'r12' (ef_r12.retriever,
  ef-r12 0.1.0) was retrieving query 'q03'``;
* the plugin and the call kept on it (:func:`culprit`), from which the crash
  report's closing sentence names the plugin and sends the report to its authors.

The innermost call wins: a fusion retriever calling another plugin blames the
plugin that raised, not the fusion around it.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from evalframe.core.errors import EvalframeError

if TYPE_CHECKING:
    from evalframe.plugin.registry import PluginSpec

__all__ = ["blamed", "build", "check_signature", "culprit", "who", "who_made"]

_ATTRIBUTE = "__evalframe_culprit__"


def who(spec: PluginSpec) -> str:
    """``retriever plugin 'r12' (ef_r12.retriever, ef-r12 0.1.0)``: kind, name, module
    and, when known, the distribution and version that ship it."""
    try:
        shipped = " ".join(p for p in (spec.distribution, spec.version) if p)
    except Exception:  # noqa: BLE001  # a broken metadata scan must not hide the crash
        shipped = ""
    where = spec.module + (f", {shipped}" if shipped else "")
    return f"{spec.kind} plugin {spec.name!r} ({where})"


def who_made(kind: str, name: str, obj: object) -> str:
    """``retriever plugin 'r12' (ef_r12.retriever)`` from the plugin's name and the
    object it made (the module of its class), for a caller without its spec."""
    return _who_made(kind, name, type(obj).__module__)


@functools.lru_cache(maxsize=256)
def _who_made(kind: str, name: str, module: str) -> str:
    """(Once per plugin and process: a module no distribution ships costs a metadata scan.)"""
    from evalframe.plugin.dists import distribution_of, version_of

    try:
        shipped = " ".join(p for p in (distribution_of(module), version_of(module)) if p)
    except Exception:  # noqa: BLE001  # a broken metadata scan must not hide the error
        shipped = ""
    return f"{kind} plugin {name!r} ({module}{f', {shipped}' if shipped else ''})"


@contextmanager
def blamed(spec: PluginSpec | str, doing: str) -> Iterator[None]:
    """Run a call into the plugin ``spec``; an unexpected exception from it is marked
    as the plugin's (``doing``: what it was asked, ``retrieving query 'q03'``).

    ``spec`` may be the words for the plugin already (:func:`who`, or what a caller
    holding only the plugin's name and object can say: :func:`who_made`).

    evalframe's own errors pass unmarked (they already say what is wrong and where),
    and so do Ctrl-C and exits.
    """
    try:
        yield
    except EvalframeError:
        raise
    except Exception as exc:
        if getattr(exc, _ATTRIBUTE, None) is None:  # the innermost plugin raised it
            plugin = spec if isinstance(spec, str) else who(spec)
            try:
                setattr(exc, _ATTRIBUTE, (plugin, doing))
                exc.add_note(f"while {plugin} was {doing}")
            except (AttributeError, TypeError):  # an exception that takes no attributes
                pass
        raise


def culprit(exc: BaseException | None) -> tuple[str, str] | None:
    """``(plugin, doing)`` as :func:`blamed` kept them on ``exc``, or on an exception
    it was raised from or while handling; None when no plugin call raised it."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        said = getattr(exc, _ATTRIBUTE, None)
        if isinstance(said, tuple):
            return said
        exc = exc.__cause__ or exc.__context__
    return None


def check_signature(
    call: Any, args: tuple[Any, ...], plugin: PluginSpec | str, shown: str, module: str = ""
) -> None:
    """Refuse ``call`` (a plugin's class or method) when it cannot take ``args``: the
    plugin's mistake, said naming it before the call, not a TypeError from inside
    evalframe (``shown``: the call as documented, ``config, context``; ``plugin``: its
    spec, or the words for it (:func:`who_made`) with the ``module`` to fix)."""
    import inspect

    from evalframe.core.errors import PluginError

    try:
        signature = inspect.signature(call)
    except (TypeError, ValueError):  # a builtin or C callable: no signature to check
        return
    try:
        signature.bind(*args)
    except TypeError as exc:
        said = plugin if isinstance(plugin, str) else who(plugin)
        where = module if isinstance(plugin, str) else plugin.module
        name = getattr(call, "__name__", type(call).__name__)
        raise PluginError(
            f"{said} cannot be called as {name}({shown}): its signature is "
            f"{name}{signature} ({exc})",
            expected=f"{name}({shown}), as docs/plugins.md gives it",
            hint=f"fix the signature in {where}",
        ) from None


def build(spec: PluginSpec, config: Any, context: Any, doing: str = "being built") -> Any:
    """``spec.obj(config, context)``, its signature checked first and what it raises
    blamed on it: how evalframe makes every plugin instance."""
    check_signature(spec.obj, (config, context), spec, "config, context")
    with blamed(spec, doing):
        return spec.obj(config, context)
