"""A Python retriever's identity: what its retrieval cache key is made of.

:func:`callable_identity` puts the retriever's qualified name, the hash of its
bytecode (and of the functions and classes of its own module it names) and of
the immutable plain values it reads into the config section ``evalframe.run``
records, so an edited function is a new cache key, never a stale hit. What it
cannot see (an index or a model object the function calls) is the user's to
name: ``cache_identity()`` on an object, or ``cache.retrieval=false``.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import types
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["Identity", "callable_identity"]

#: A plain value larger than this (as JSON) is left out of the identity: it is data
#: the function reads (a table, a vocabulary), too big to hash on every run.
PLAIN_LIMIT = 10_000


# -- identity ---------------------------------------------------------------------


def _digest(text: str | bytes) -> str:
    data = text.encode("utf-8") if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()[:16]


def _bytecode(code: types.CodeType) -> bytes:
    """A code object's instructions, names and constants, nested functions included."""
    parts = [code.co_code, repr(code.co_names).encode(), repr(code.co_varnames).encode()]
    for const in code.co_consts:
        nested = isinstance(const, types.CodeType)
        parts.append(_bytecode(const) if nested else repr(const).encode())
    return b"\x00".join(parts)


def _plain(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` is an immutable plain value: a number, text, None, or a tuple of them.

    Mutable containers are left out on purpose: a list or dict a function reads
    is usually its data or its own record of calls (appended to as it runs),
    and keying on it would make every call a miss. Settings are scalars.
    """
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, tuple) and depth < 4:
        return all(_plain(v, depth + 1) for v in value)
    return False


def _plain_values(named: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in named:
        if not _plain(value):
            continue
        text = json.dumps(value, sort_keys=True, default=str)
        if len(text) <= PLAIN_LIMIT:
            out[name] = value
    return out


def _names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names


def _cells(fn: types.FunctionType) -> list[tuple[str, Any]]:
    out = []
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=False):
        try:
            out.append((name, cell.cell_contents))
        except ValueError:  # an empty cell (a name assigned after the function was made)
            continue
    return out


def _function_state(fn: types.FunctionType) -> dict[str, Any]:
    """The plain values a function reads besides its arguments: defaults, closure, globals."""
    return {
        "defaults": _plain_values((str(i), d) for i, d in enumerate(fn.__defaults__ or ())),
        "kwdefaults": _plain_values((fn.__kwdefaults__ or {}).items()),
        "closure": _plain_values(_cells(fn)),
        "globals": _plain_values(
            (n, fn.__globals__[n]) for n in sorted(_names(fn.__code__)) if n in fn.__globals__
        ),
    }


class _Walk:
    """The code a retriever runs and the plain values it reads, found by following names.

    From the function (or the class) given, every function and class it names
    that is defined in the same module is followed too (a notebook's helper
    ``tokenize`` that ``search`` calls), so editing a helper changes the key.
    Code from other modules (libraries, your own package) is not followed: its
    version is not seen.

    Bytecode, not source text: it is what actually runs (a module edited on disk
    but not re-imported still runs its old code, and must keep its old key), it
    exists for a function typed at a bare interpreter, and comments or moved
    lines do not change it.
    """

    def __init__(self) -> None:
        self.code: list[bytes] = []
        self.reads: dict[str, Any] = {}
        self._seen: set[int] = set()

    def function(self, fn: types.FunctionType) -> None:
        if id(fn) in self._seen:
            return
        self._seen.add(id(fn))
        name = _qualified(fn)
        self.code.append(name.encode() + b"=" + _bytecode(fn.__code__))
        self.reads[name] = _function_state(fn)
        named = [fn.__globals__.get(n) for n in sorted(_names(fn.__code__))]
        for value in [*named, *(v for _, v in _cells(fn))]:
            self.follow(value, fn.__module__)

    def cls(self, klass: type) -> None:
        if id(klass) in self._seen:
            return
        self._seen.add(id(klass))
        for base in klass.__mro__:
            if base.__module__ == "builtins":
                continue
            for _, member in sorted(vars(base).items()):
                if isinstance(member, (staticmethod, classmethod)):
                    member = member.__func__
                elif isinstance(member, property):
                    member = member.fget
                if isinstance(member, types.FunctionType):
                    self.function(member)

    def follow(self, value: Any, module: str) -> None:
        if getattr(value, "__module__", None) != module:
            return
        if isinstance(value, types.FunctionType):
            self.function(value)
        elif inspect.isclass(value):
            self.cls(value)

    def identity(self, target: str, state: Any = None) -> Identity:
        reads = {"reads": self.reads, "state": state}
        return Identity(
            target,
            _digest(b"\x01".join(self.code) or target.encode()),  # a builtin: its name only
            _digest(json.dumps(reads, sort_keys=True, default=str)),
        )


@dataclass(frozen=True)
class Identity:
    """What identifies a Python retriever: the three settings of its config section."""

    target: str
    code: str
    state: str


def _qualified(obj: Any) -> str:
    module = getattr(obj, "__module__", None) or "?"
    return f"{module}.{getattr(obj, '__qualname__', type(obj).__qualname__)}"


def callable_identity(obj: Any) -> Identity:
    """The qualified name, bytecode hash and plain-state hash of a retriever.

    - a function (or lambda): its name; the bytecode of it and of the functions
      and classes of its module that it names, followed on (nested functions
      included); and the immutable plain values among their defaults, closure
      variables and the module globals they name;
    - a bound method: the same for the function and its object's class, plus
      the object's state;
    - ``functools.partial``: the wrapped callable, plus the plain arguments;
    - any other object (a class instance with ``retrieve`` or ``__call__``):
      its class's name and the same for its methods (base classes included),
      and ``cache_identity()`` if it defines one, else its plain-valued attributes.
    """
    walk = _Walk()
    if isinstance(obj, functools.partial):
        inner = callable_identity(obj.func)
        args = {
            "args": _plain_values((str(i), a) for i, a in enumerate(obj.args)),
            "keywords": _plain_values(obj.keywords.items()),
        }
        state = _digest(json.dumps([inner.state, args], sort_keys=True, default=str))
        return Identity(f"partial({inner.target})", inner.code, state)
    if isinstance(obj, types.MethodType):
        if isinstance(obj.__func__, types.FunctionType):
            walk.function(obj.__func__)
        walk.cls(type(obj.__self__))
        return walk.identity(_qualified(obj.__func__), _object_state(obj.__self__))
    if isinstance(obj, types.FunctionType):
        walk.function(obj)
        return walk.identity(_qualified(obj))
    walk.cls(type(obj))
    return walk.identity(f"{_qualified(type(obj))}()", _object_state(obj))


def _object_state(obj: Any) -> Any:
    own = getattr(obj, "cache_identity", None)
    if callable(own):
        return {"cache_identity": own()}
    try:
        attributes = vars(obj)
    except TypeError:  # __slots__ or a builtin: nothing plain to read
        return {}
    return _plain_values((k, v) for k, v in sorted(attributes.items()) if not k.startswith("__"))
