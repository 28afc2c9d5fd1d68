"""Code entities of a Python module, read with :mod:`ast` (the module is never imported).

One definition serves the ``code_entities`` corpus (what can be retrieved) and
the mechanical gate (what an expected entity id may resolve to), so every
document id the corpus makes resolves in the gate, and the other way round
for functions, classes and methods.

An entity is a function, a class or a method, named by its qualified symbol:

- top-level functions and classes: ``parse_module``, ``PythonParser``;
- class members at any depth: methods ``PythonParser.entities``, nested
  classes ``Outer.Inner`` and their methods ``Outer.Inner.run``;
- definitions under a module-level or class-level ``if``/``try`` (``if
  TYPE_CHECKING:``, ``try: ... except ImportError:``) count too: they exist.

Functions defined inside a function body (closures) are not entities: no one
can reach them by name. The gate's symbols add module-level and class-level
assigned names (``LIMIT``, ``AppConfig.sufficiency_threshold``), which an
expected entity may name but which the corpus does not turn into documents.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal

__all__ = ["KINDS", "Entity", "Kind", "assigned_names", "entities", "symbols"]

Kind = Literal["function", "class", "method"]
KINDS: tuple[Kind, ...] = ("function", "class", "method")


@dataclass(frozen=True)
class Entity:
    """One function, class or method of a module."""

    symbol: str  #: qualified name inside the module: ``Class.method``
    kind: Kind
    start: int  #: first line, decorators included (1-based)
    end: int  #: last line (inclusive)
    #: for a class: the line spans of its members' bodies (methods, nested
    #: classes), which are entities of their own; the class's outline is its
    #: lines without them
    members: tuple[tuple[int, int], ...] = ()

    @property
    def name(self) -> str:
        """The last part of the symbol: ``method`` for ``Class.method``."""
        return self.symbol.rpartition(".")[2]

    @property
    def parent(self) -> str | None:
        """The enclosing class's symbol, or None at module level."""
        return self.symbol.rpartition(".")[0] or None


def _blocks(node: ast.stmt) -> Iterator[list[ast.stmt]]:
    """The statement lists inside an ``if``/``try`` whose definitions still exist."""
    if isinstance(node, ast.If):
        yield node.body
        yield node.orelse
    elif isinstance(node, ast.Try) or (
        sys.version_info >= (3, 11) and isinstance(node, ast.TryStar)
    ):
        yield node.body
        yield node.orelse
        for handler in node.handlers:
            yield handler.body
        yield node.finalbody


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _defs(
    body: Iterable[ast.stmt],
) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef]:
    """The definitions in a body, looking inside ``if``/``try`` blocks."""
    for node in body:
        if isinstance(node, _DEFS):
            yield node
        else:
            for block in _blocks(node):
                yield from _defs(block)


def _body_span(
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef,
) -> tuple[int, int] | None:
    """The lines of a definition's body below its signature (None for a one-liner)."""
    first = node.body[0].lineno
    end = node.end_lineno or node.lineno
    return (first, end) if first > node.lineno else None


def _walk(body: Iterable[ast.stmt], prefix: str, in_class: bool) -> Iterator[Entity]:
    for node in _defs(body):
        start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        end = node.end_lineno or node.lineno
        symbol = prefix + node.name
        if isinstance(node, ast.ClassDef):
            spans = tuple(s for s in map(_body_span, _defs(node.body)) if s is not None)
            yield Entity(symbol, "class", start, end, spans)
            yield from _walk(node.body, symbol + ".", in_class=True)
        else:
            yield Entity(symbol, "method" if in_class else "function", start, end)


def entities(tree: ast.Module) -> list[Entity]:
    """Every function, class and method of a parsed module, in source order.

    A symbol defined twice (a property's getter and setter, ``@overload``
    stubs, an ``if``/``else`` pair) appears once per definition; callers
    decide how to merge them.
    """
    return list(_walk(tree.body, "", in_class=False))


def _assigned(body: Iterable[ast.stmt], prefix: str, out: set[str]) -> None:
    for node in body:
        if isinstance(node, ast.ClassDef):
            _assigned(node.body, f"{prefix}{node.name}.", out)
        elif isinstance(node, ast.Assign):
            out.update(prefix + t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.add(prefix + node.target.id)
        else:
            for block in _blocks(node):
                _assigned(block, prefix, out)


def assigned_names(tree: ast.Module) -> set[str]:
    """Module-level and class-level assigned names (``LIMIT``, ``Config.size``)."""
    out: set[str] = set()
    _assigned(tree.body, "", out)
    return out


def symbols(tree: ast.Module) -> set[str]:
    """What an entity id's symbol may resolve to: every entity and assigned name."""
    return {e.symbol for e in entities(tree)} | assigned_names(tree)
