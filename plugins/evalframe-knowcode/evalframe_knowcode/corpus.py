"""A Python source tree as a corpus of code entities: ``path/mod.py::Class.method`` documents.

KnowCode retrieves code entities, and its golden sets name them as
``file_path::symbol``. This corpus turns a source tree into exactly those
documents, so ``bm25``, ``dense`` or any retriever that indexes a corpus can
run a KnowCode experiment with no external index:

- **ids**: ``<path relative to root>::<qualified symbol>`` for every function,
  class and method (:mod:`evalframe_knowcode.entities`: the definition the
  mechanical gate resolves entity ids with, so every id here resolves there);
- **text**: a header line (``method Class.method in path/mod.py``), the
  entity's source lines (decorators included), and, with ``identifier_words``,
  a line of the words
  inside its identifiers (``read_json_array`` gives ``read json array``) so
  that "where do we read a JSON array" can match code names with a
  word-based retriever. A class's text is by default its *outline*: its lines
  with each method's (and nested class's) body replaced by ``...``, so every
  line of code is indexed once, in the innermost entity that holds it, and a
  class does not outrank its own methods on their words (``class_text: full``
  keeps every line);
- **metadata**: ``file``, ``symbol``, ``kind`` (function, class, method),
  ``start_line`` and ``end_line`` (1-based, inclusive), and ``definitions``
  when a symbol is defined more than once.

Deterministic: files in sorted path order, entities in source order, the same
tree always gives the same documents and so the same content hash. Files are
read with the core reader and parsed with :mod:`ast`, never imported: a file
that is not UTF-8 is an error at ``file:line:column``, a syntax error is an
error at its line (or, with ``on_error: skip``, one warning with the count).

A symbol defined more than once in a module (a property's getter and setter,
``@overload`` stubs, an ``if``/``else`` pair) is one document: its
definitions' texts in source order, its line range from the first to the last.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from evalframe.core.errors import DataError
from evalframe.core.messages import Tally
from evalframe.core.types import Corpus, Document
from evalframe.plugin.protocols import PluginConfig, PluginContext
from evalframe.plugin.registry import corpus
from evalframe_knowcode.entities import KINDS, Entity, Kind, entities
from evalframe_knowcode.source import DEFAULT_INCLUDE, SourceTree, open_tree, select

__all__ = ["CodeEntitiesConfig", "CodeEntitiesCorpus", "entity_documents", "identifier_words"]

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


class CodeEntitiesConfig(PluginConfig):
    """Which source tree, which files and entities, and how each entity's text is made."""

    root: str = Field(description="source tree; document ids are paths relative to it")
    rev: str | None = Field(
        None, description="read the tree at this Git revision (git show REV:path); null = on disk"
    )
    include: list[str] = Field(
        list(DEFAULT_INCLUDE), description="globs of files to read (** = any folders)"
    )
    exclude: list[str] = Field(default_factory=list, description="globs of files to leave out")
    kinds: list[Kind] = Field(list(KINDS), min_length=1, description="entity kinds to index")
    class_text: Literal["outline", "full"] = Field(
        "outline",
        description="a class's text: outline (its lines without its methods' bodies, which "
        "are documents of their own) or full (every line of the class)",
    )
    header: bool = Field(True, description="first line of each text: kind, symbol and file")
    identifier_words: bool = Field(
        True, description="add a line of the words inside identifiers (snake_case, CamelCase)"
    )
    on_error: Literal["error", "skip"] = Field(
        "error", description="a file that is not UTF-8 or does not parse: stop, or skip and warn"
    )


def identifier_words(text: str) -> list[str]:
    """The words inside compound identifiers, in order: ``parse_file`` -> parse, file;
    ``MarkdownParser`` -> markdown, parser. One-word identifiers add nothing."""
    out: list[str] = []
    for token in _IDENT.findall(text):
        parts = [p for piece in token.split("_") for p in _CAMEL.split(piece) if p]
        if len(parts) > 1:
            out.extend(p.lower() for p in parts)
    return out


def _text(entity: Entity, rel: str, spans: list[str], config: CodeEntitiesConfig) -> str:
    parts = [f"{entity.kind} {entity.symbol} in {rel}"] if config.header else []
    parts.extend(spans)
    if config.identifier_words:
        words = identifier_words("\n".join(parts))
        if words:
            parts.append(" ".join(words))
    return "\n".join(parts)


def _lines(lines: list[str], entity: Entity, class_text: str) -> str:
    """An entity's source lines; a class's outline replaces each member's body by ``...``."""
    if class_text == "full" or not entity.members:
        return "\n".join(lines[entity.start - 1 : entity.end])
    hidden: dict[int, int] = dict(entity.members)
    out: list[str] = []
    n = entity.start
    while n <= entity.end:
        if n in hidden:
            indent = lines[n - 1][: len(lines[n - 1]) - len(lines[n - 1].lstrip())]
            out.append(f"{indent}...")
            n = hidden[n] + 1
        else:
            out.append(lines[n - 1])
            n += 1
    return "\n".join(out)


def entity_documents(
    rel: str, source: str, config: CodeEntitiesConfig, tree: ast.Module
) -> list[Document]:
    """The documents of one parsed module (``rel`` is its path in the tree)."""
    lines = source.splitlines()
    grouped: dict[str, list[Entity]] = {}
    for entity in entities(tree):
        if entity.kind in config.kinds:
            grouped.setdefault(entity.symbol, []).append(entity)
    docs = []
    for symbol, defs in grouped.items():
        first = defs[0]
        spans = [_lines(lines, e, config.class_text) for e in defs]
        metadata: dict[str, object] = {
            "file": rel,
            "symbol": symbol,
            "kind": first.kind,
            "start_line": min(e.start for e in defs),
            "end_line": max(e.end for e in defs),
        }
        if len(defs) > 1:
            metadata["definitions"] = len(defs)
        text = _text(first, rel, spans, config)
        docs.append(Document(id=f"{rel}::{symbol}", text=text, metadata=metadata))
    return docs


def parse_source(text: str, rel: str, tree: SourceTree) -> ast.Module:
    """``ast.parse``, with a syntax error as a :class:`DataError` at the file's line."""
    try:
        return ast.parse(text, filename=rel)
    except SyntaxError as exc:
        raise DataError(
            f"source file does not parse as Python: {exc.msg}",
            path=f"{tree.label}/{rel}",
            line=exc.lineno,
            column=exc.offset,
            hint=f"fix the file, leave it out (corpus.exclude=['{rel}']) or skip such files "
            "with corpus.on_error=skip",
        ) from None


@corpus("code_entities", config=CodeEntitiesConfig)
@dataclass(eq=False)
class CodeEntitiesCorpus:
    """Functions, classes and methods of a Python source tree, as file::Symbol documents."""

    config: CodeEntitiesConfig
    context: PluginContext

    def load(self) -> Corpus:
        cfg = self.config
        tree = open_tree(cfg.root, cfg.rev, key="corpus.root", rev_key="corpus.rev")
        files = [f for f in select(tree.files(), cfg.include, cfg.exclude) if f.endswith(".py")]
        if not files:
            raise DataError(
                f"no Python files under {tree.label} match corpus.include",
                key="corpus.include",
                expected=f"*.py files matching {cfg.include}",
                hint="check corpus.root and the include/exclude globs",
            )
        skipped = Tally()
        docs: list[Document] = []
        for rel in files:
            try:
                text = tree.text(rel)
                module = parse_source(text, rel, tree)
            except DataError as exc:
                if cfg.on_error == "error":
                    raise
                skipped.add(
                    "source file(s) skipped (corpus.on_error=skip): not UTF-8 or not Python",
                    item=rel,
                    where=exc.render().removeprefix("error: ").splitlines()[0],
                )
                continue
            docs.extend(entity_documents(rel, text, cfg, module))
        skipped.flush()
        if not docs:
            raise DataError(
                f"no {', '.join(cfg.kinds)} found in {len(files)} Python file(s) under "
                f"{tree.label}",
                key="corpus.kinds",
                hint="check corpus.root and corpus.kinds",
            )
        name = tree.label.rstrip("/").rpartition("/")[2] or "code"
        return Corpus.build(name, docs)
