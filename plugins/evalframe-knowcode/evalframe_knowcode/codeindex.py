"""What the offline roles know of a Python tree: each entity's span, docstring, calls and raises.

Read with :mod:`ast` from a :class:`~evalframe_knowcode.source.SourceTree` (a
folder or a Git revision); nothing is imported. Entities are those of
:mod:`evalframe_knowcode.entities`, so every id here resolves in the gate.
For each function and method the index records:

- ``summary``: the docstring's first line, with reST/Markdown backticks dropped;
- ``params``: parameter names, without ``self``/``cls``;
- ``calls``: the functions and methods of the tree it calls, resolved by name
  (``helper()`` to a function of the same file, else to the one function of
  that name in the tree; ``self.m()``/``cls.m()`` to a method of its class;
  ``Class.m()`` to that method), in first-call order;
- ``raises``: the exception names of its own ``raise`` statements, with the
  constant start of their message;
- ``returns_value``: whether any ``return`` of its own body returns something.

Closures' bodies count for their enclosing function (they run on its behalf),
as the entity model does not make them entities.
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from evalframe_knowcode.entities import Entity, entities
from evalframe_knowcode.source import SourceTree, select

__all__ = ["CodeIndex", "Unit", "stable"]

_TICKS = re.compile(r"`+([^`]*)`+")
_ROLE = re.compile(r":\w+:(?=`)")  # Sphinx roles: :class:`Path` -> `Path`


@dataclass(frozen=True)
class Unit:
    """One function, method or class with what the roles say about it."""

    file: str
    symbol: str
    kind: str
    start: int
    end: int
    summary: str = ""
    params: tuple[str, ...] = ()
    calls: tuple[str, ...] = ()
    raises: tuple[tuple[str, str], ...] = ()
    returns_value: bool = False

    @property
    def entity_id(self) -> str:
        return f"{self.file}::{self.symbol}"

    @property
    def name(self) -> str:
        return self.symbol.rpartition(".")[2]

    @property
    def parent(self) -> str | None:
        return self.symbol.rpartition(".")[0] or None


def _summary(node: ast.AST) -> str:
    doc = ast.get_docstring(node)  # type: ignore[arg-type]
    if not doc:
        return ""
    first = doc.strip().split("\n\n", 1)[0].replace("\n", " ")
    first = _TICKS.sub(r"\1", _ROLE.sub("", first))
    return " ".join(first.split()).rstrip(".:")


def _own_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """Nodes of a definition's body, not those of nested classes (closures count)."""
    stack = list(ast.iter_child_nodes(node))
    while stack:
        child = stack.pop()
        if isinstance(child, ast.ClassDef):
            continue
        yield child
        stack.extend(ast.iter_child_nodes(child))


def _message(call: ast.expr) -> str:
    if not isinstance(call, ast.Call) or not call.args:
        return ""
    arg = call.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    if isinstance(arg, ast.JoinedStr):
        head = []
        for part in arg.values:
            if not (isinstance(part, ast.Constant) and isinstance(part.value, str)):
                break
            head.append(part.value)
        return "".join(head)
    return ""


def _definitions(tree: ast.Module) -> dict[tuple[str, int], ast.AST]:
    """(name, first line) -> node, to pair :func:`entities` with their nodes."""
    out: dict[tuple[str, int], ast.AST] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            out.setdefault((node.name, start), node)
    return out


@dataclass
class CodeIndex:
    """Every entity of a tree's Python files, analysed once."""

    tree: SourceTree
    units: dict[str, Unit] = field(default_factory=dict)  # entity id -> unit
    lines: dict[str, int] = field(default_factory=dict)  # file -> line count
    files: list[str] = field(default_factory=list)

    @classmethod
    def build(cls, tree: SourceTree) -> CodeIndex:
        index = cls(tree)
        raw: list[tuple[str, Entity, ast.AST]] = []
        for rel in select(tree.files()):
            try:
                text = tree.text(rel)
                module = ast.parse(text, filename=rel)
            except Exception:  # noqa: BLE001  # an unreadable file holds no entity to label
                continue
            index.files.append(rel)
            index.lines[rel] = len(text.splitlines())
            nodes = _definitions(module)
            for entity in entities(module):
                node = nodes.get((entity.name, entity.start))
                if node is not None:
                    raw.append((rel, entity, node))
        functions: dict[str, list[str]] = {}
        methods: set[str] = set()
        classes: set[str] = set()
        for rel, entity, _ in raw:
            eid = f"{rel}::{entity.symbol}"
            if entity.kind == "function":
                functions.setdefault(entity.name, []).append(eid)
            elif entity.kind == "method":
                methods.add(eid)
            else:
                classes.add(entity.symbol)
        for rel, entity, node in raw:
            eid = f"{rel}::{entity.symbol}"
            if eid in index.units:
                continue  # a symbol defined twice (property setter): the first definition
            if isinstance(node, ast.ClassDef):
                index.units[eid] = Unit(
                    rel, entity.symbol, "class", entity.start, entity.end, _summary(node)
                )
                continue
            calls: list[str] = []
            raises: list[tuple[str, str]] = []
            returns = False
            for child in _own_nodes(node):
                if isinstance(child, ast.Call):
                    target = index._resolve(child.func, rel, entity, functions, methods, classes)
                    if target and target != eid and target not in calls:
                        calls.append(target)
                elif isinstance(child, ast.Raise) and child.exc is not None:
                    exc = child.exc.func if isinstance(child.exc, ast.Call) else child.exc
                    if isinstance(exc, ast.Name) and exc.id[:1].isupper():
                        raises.append((exc.id, _message(child.exc)))
                elif isinstance(child, ast.Return) and child.value is not None:
                    returns = True
            assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)  # classes: above
            args = node.args
            params = [
                a.arg
                for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)
                if a.arg not in ("self", "cls")
            ]
            index.units[eid] = Unit(
                rel,
                entity.symbol,
                entity.kind,
                entity.start,
                entity.end,
                _summary(node),
                tuple(params),
                tuple(calls),
                tuple(raises),
                returns,
            )
        return index

    def _resolve(
        self,
        func: ast.expr,
        rel: str,
        entity: Entity,
        functions: dict[str, list[str]],
        methods: set[str],
        classes: set[str],
    ) -> str | None:
        if isinstance(func, ast.Name):
            found = functions.get(func.id, [])
            local = [f for f in found if f.startswith(rel + "::")]
            if local:
                return local[0]
            return found[0] if len(found) == 1 else None
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            owner = func.value.id
            if owner in ("self", "cls") and entity.parent:
                candidate = f"{rel}::{entity.parent}.{func.attr}"
                return candidate if candidate in methods else None
            if owner in classes:
                candidate = f"{rel}::{owner}.{func.attr}"
                if candidate in methods:
                    return candidate
                hits = [m for m in methods if m.endswith(f"::{owner}.{func.attr}")]
                return hits[0] if len(hits) == 1 else None
        return None

    def get(self, entity_id: str) -> Unit | None:
        return self.units.get(entity_id)

    def find(self, file: str, symbol: str) -> Unit | None:
        return self.units.get(f"{file}::{symbol}")


def stable(*parts: object) -> int:
    """A process-independent 64-bit number for an ordering (Python's hash() is salted)."""
    text = "\x1f".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")
