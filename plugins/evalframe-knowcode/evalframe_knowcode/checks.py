"""KnowCode's mechanical validation gate (§5), candidate de-duplication and label agreement.

All pure code, no LLM, and no import of the code under evaluation: Python
source is read with :mod:`ast` only. Each check returns
:class:`~evalframe.golden.findings.Finding` objects so ``evalframe golden
validate --format knowcode --source-root DIR`` reports them beside the generic
checks; the functions also work on their own (in a pipeline step that writes
``03_validation_failures.jsonl``, for instance).

Gate checks on one record (``check_record``):

1. ``entity``: every ``path::Symbol.member`` resolves in the parsed source
   (top-level functions, classes and assignments; class members, nested at
   any depth: methods, nested classes, class attributes).
2. ``file``: every ``expected_files`` entry exists under the source root.
3. ``line-range``: every ``expected_line_ranges`` item ``{file, start, end}``
   has 1 <= start <= end <= the file's line count (``source_evidence`` too).
4. ``entity-file``: each entity's file is among ``expected_files``.
5. ``narrative``: ``canonical_narrative`` names no ``*.py`` path, no
   ``Name.member`` (capitalised first part, backticked or not) and no other
   entity of the code that the structured fields do not contain. "Other
   entity" is any identifier the narrative uses as code (backticked, called,
   ``self.x``, snake_case, CamelCase: :func:`code_mentions`) that names a
   function, class or method defined anywhere in the source tree, so
   ``_format_local_answer`` and ``self.answer(query)`` are caught while
   ``self.config.threshold`` (an attribute) and ``avg_score`` (a variable)
   are not.

The source is a folder or, for KnowCode's "at the committed commit SHA", a
Git revision (:class:`~evalframe_knowcode.source.GitTree`, ``git show
REV:path``).

Plus the pipeline's two set-level rules: :func:`deduplicate_candidates`
(Step C: reject a candidate whose targets overlap an accepted one by more
than 50%) and :func:`labels_agree` (§6: structural Jaccard >= 0.8 on both
entities and files).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalframe.core.errors import DataError
from evalframe.golden.findings import Finding
from evalframe_knowcode.entities import entities, symbols
from evalframe_knowcode.source import FolderTree, SourceTree, select

__all__ = [
    "Agreement",
    "Dedup",
    "SourceIndex",
    "check_record",
    "check_records",
    "code_mentions",
    "deduplicate_candidates",
    "entity_ids",
    "jaccard",
    "labels_agree",
    "narrative_mentions",
    "split_entity",
]


def split_entity(entity: str) -> tuple[str, str]:
    """``"src/a.py::Cls.meth"`` -> ``("src/a.py", "Cls.meth")``."""
    file, _, symbol = entity.partition("::")
    return file, symbol


def entity_ids(value: Any) -> list[str]:
    """Entity ids from ``expected_entities`` / ``target_entity_ids`` (strings or
    ``{"entity_id": ...}`` objects); anything else is skipped."""
    out: list[str] = []
    for item in value if isinstance(value, list) else []:
        entity = item.get("entity_id") if isinstance(item, dict) else item
        if isinstance(entity, str):
            out.append(entity)
    return out


@dataclass
class SourceIndex:
    """The source under check (a folder, or a Git revision: :mod:`.source`), each file
    read and parsed once.

    ``SourceIndex(Path("src"))`` reads the working tree; ``SourceIndex(GitTree(root,
    "HEAD"))`` reads what is committed.
    """

    root: Path | str | SourceTree
    tree: SourceTree = field(init=False)
    _symbols: dict[str, set[str] | str] = field(default_factory=dict)
    _lines: dict[str, int | None] = field(default_factory=dict)
    _defined: dict[str, list[str]] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.root, (str, Path)):
            self.tree = FolderTree(Path(self.root))
        else:
            self.tree = self.root

    def exists(self, rel: str) -> bool:
        return self.tree.exists(rel)

    def _text(self, rel: str) -> str | DataError:
        try:
            return self.tree.text(rel)
        except DataError as exc:
            return exc

    def line_count(self, rel: str) -> int | None:
        """Lines in the file, or None when it does not exist or cannot be read."""
        if rel not in self._lines:
            text = self._text(rel)
            self._lines[rel] = None if isinstance(text, DataError) else len(text.splitlines())
        return self._lines[rel]

    def _parse(self, rel: str) -> ast.Module | str:
        if not self.tree.exists(rel):
            return "the file does not exist"
        text = self._text(rel)
        if isinstance(text, DataError):
            return f"the file cannot be read ({text.message})"
        try:
            return ast.parse(text, filename=rel)
        except (SyntaxError, ValueError) as exc:
            return f"the file does not parse ({exc})"

    def symbols(self, rel: str) -> set[str] | str:
        """Qualified names defined in a Python file, or a reason why there are none."""
        if rel not in self._symbols:
            module = self._parse(rel)
            self._symbols[rel] = module if isinstance(module, str) else symbols(module)
        return self._symbols[rel]

    def defined(self) -> dict[str, list[str]]:
        """Every function, class and method of the tree's Python files, by its last
        name: ``{"answer": ["src/agent.py::Agent.answer"], ...}``.

        Built once, on first use (the narrative check needs it). A file that
        cannot be read or parsed adds nothing here; the record checks report
        it when a record cites it.
        """
        if self._defined is None:
            out: dict[str, list[str]] = {}
            for rel in select(self.tree.files()):
                module = self._parse(rel)
                if isinstance(module, str):
                    continue
                for entity in entities(module):
                    out.setdefault(entity.name, []).append(f"{rel}::{entity.symbol}")
            self._defined = out
        return self._defined


_PATH = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.py)\b")
_BACKTICK = re.compile(r"`([^`\n]+)`")
_DOTTED = re.compile(r"(?<![\w.])([A-Z]\w*(?:\.[A-Za-z_]\w*)+)")
_CHAIN = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)")
#: outside backticks: a call ``name(``, ``self.x``/``cls.x``, a snake_case or
#: dunder name, a CamelCase name with two capitals; plain words are prose
_SELF = re.compile(r"(?<![\w.])((?:self|cls)(?:\.[A-Za-z_]\w*)+)")
_CALL = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\(")
_SNAKE = re.compile(r"(?<![\w.])(\w*[A-Za-z0-9]_\w*|_\w+)(?![\w(])")
_CAMEL = re.compile(r"(?<![\w.])([A-Z][A-Za-z0-9]*)(?![\w(]|\.\w)")


def narrative_mentions(text: str) -> tuple[set[str], set[str]]:
    """``(paths, names)`` a narrative mentions: ``*.py`` paths (a ``:160-221``
    line suffix is ignored) and ``Name.member`` references (capitalised first
    part, so ``self.x`` and ``os.path`` are not taken for entities). A call's
    ``()`` is dropped. :func:`code_mentions` finds the other identifiers."""
    paths = set(_PATH.findall(text))
    names: set[str] = set()
    candidates = [m.group(1) for m in _BACKTICK.finditer(text)]
    candidates += _DOTTED.findall(_BACKTICK.sub(" ", _PATH.sub(" ", text)))
    for raw in candidates:
        token = raw.strip().removesuffix("()")
        match = _DOTTED.fullmatch(token)
        if match and not _PATH.fullmatch(token):
            names.add(token)
    return paths, names


def code_mentions(text: str) -> set[str]:
    """Identifier chains a narrative uses as code, which may name entities.

    Inside backticks: a span that is one chain (``_format_local_answer``,
    ``self.config.threshold``, ``answer()``) and every chain that is called
    (``self.answer`` in ``self.answer(query)``); arguments, keywords and
    literals are not. Outside backticks: calls (``check_text(...)``),
    ``self.``/``cls.`` chains, snake_case and dunder names, CamelCase names
    with two capitals. Plain words are prose, never entities. ``*.py`` paths
    are left to :func:`narrative_mentions`.
    """
    found: set[str] = set()
    text = _PATH.sub(" ", text)
    for span in _BACKTICK.findall(text):
        stripped = re.sub(r"\(.*\)$", "", span.strip())
        if _CHAIN.fullmatch(stripped):
            found.add(stripped)
        found.update(_CALL.findall(span))
    prose = _BACKTICK.sub(" ", text)
    for pattern in (_CALL, _SELF, _SNAKE):
        found.update(pattern.findall(prose))
    # CamelCase: two capitals and a lower-case letter (MarkdownParser, BM25Retriever),
    # not a capitalised word of prose (Agent) nor an acronym (JSON)
    found.update(
        w
        for w in _CAMEL.findall(prose)
        if sum(c.isupper() for c in w) >= 2 and any(c.islower() for c in w)
    )
    return {f for f in found if f not in ("self", "cls")}


def _range_findings(value: Any, name: str, index: SourceIndex, loc: str, qid: str) -> list[Finding]:
    out: list[Finding] = []
    if value is None:
        return out
    if not isinstance(value, list):
        return [Finding("error", "line-range", f"{name} must be a list", loc, qid)]
    for i, item in enumerate(value):
        label = f"{name}[{i}]"
        if not isinstance(item, dict) or not {"file", "start", "end"} <= set(item):
            out.append(
                Finding("error", "line-range", f"{label} needs file, start and end", loc, qid)
            )
            continue
        file, start, end = item["file"], item["start"], item["end"]
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end)):
            out.append(
                Finding("error", "line-range", f"{label}: start and end must be integers", loc, qid)
            )
            continue
        count = index.line_count(str(file))
        if count is None:
            out.append(Finding("error", "line-range", f"{label}: {file} does not exist", loc, qid))
        elif not 1 <= start <= end <= count:
            out.append(
                Finding(
                    "error",
                    "line-range",
                    f"{label}: lines {start}-{end} of {file} are not a range within its "
                    f"{count} lines (need 1 <= start <= end <= {count})",
                    loc,
                    qid,
                )
            )
    return out


def _narrative_findings(
    narrative: str,
    files: list[str],
    entities: list[str],
    index: SourceIndex,
    loc: str,
    qid: str,
) -> list[Finding]:
    """§5.6: every file path and entity name the narrative mentions is in the structured
    fields. A capitalised ``Name.member`` must be an expected entity (or part of one)
    whether or not it resolves; any other identifier the narrative uses as code is an
    entity mention when the source tree defines a function, class or method of that
    name, and must then be (part of) an expected entity."""
    out: list[Finding] = []
    paths, names = narrative_mentions(narrative)
    known_files = set(files) | {split_entity(e)[0] for e in entities}
    known_names: set[str] = set()
    for e in entities:
        parts = split_entity(e)[1].split(".")
        known_names.update(
            ".".join(parts[i:j]) for i in range(len(parts)) for j in range(i + 1, len(parts) + 1)
        )
    for p in sorted(paths):
        if p not in known_files and not any(k.endswith("/" + p) for k in known_files):
            out.append(
                Finding(
                    "error",
                    "narrative",
                    f"canonical_narrative names {p}, which is not in expected_files "
                    "or expected_entities",
                    loc,
                    qid,
                )
            )
    for n in sorted(names):
        if n not in known_names:
            out.append(
                Finding(
                    "error",
                    "narrative",
                    f"canonical_narrative names {n}, which is not among expected_entities",
                    loc,
                    qid,
                )
            )
    for chain in sorted(code_mentions(narrative) - names):
        parts = chain.split(".")
        name = parts[-1]
        if name in known_names or chain in known_names:
            continue
        defined = index.defined().get(name)
        if not defined:
            continue  # a variable, an argument, a library's name: not an entity of this code
        shown = ", ".join(defined[:3]) + (" …" if len(defined) > 3 else "")
        out.append(
            Finding(
                "error",
                "narrative",
                f"canonical_narrative names `{chain}`, an entity of the code ({shown}) "
                "that is not among expected_entities",
                loc,
                qid,
            )
        )
    return out


def check_record(
    record: Mapping[str, Any], index: SourceIndex, location: str | None = None
) -> list[Finding]:
    """The mechanical gate on one golden record (or OracleAnswer); errors only."""
    qid = str(record.get("query_id", "?"))
    loc = location or f"query {qid}"
    out: list[Finding] = []
    entities = entity_ids(record.get("expected_entities"))
    files_value = record.get("expected_files")
    files = [f for f in files_value if isinstance(f, str)] if isinstance(files_value, list) else []
    for f in files:
        if not index.exists(f):
            out.append(
                Finding(
                    "error",
                    "file",
                    f"expected file {f} does not exist under the source root",
                    loc,
                    qid,
                )
            )
    for entity in entities:
        file, symbol = split_entity(entity)
        if not symbol:
            out.append(Finding("error", "entity", f"{entity}: no symbol after '::'", loc, qid))
            continue
        symbols = index.symbols(file)
        if isinstance(symbols, str):
            out.append(
                Finding("error", "entity", f"{entity} does not resolve: {symbols}", loc, qid)
            )
        elif symbol not in symbols:
            close = sorted(s for s in symbols if s.split(".")[-1] == symbol.split(".")[-1])
            hint = f" (defined there: {', '.join(close)})" if close else ""
            out.append(
                Finding("error", "entity", f"{entity} does not resolve in {file}{hint}", loc, qid)
            )
        if file not in files:
            out.append(
                Finding(
                    "error",
                    "entity-file",
                    f"{entity}: its file {file} is not in expected_files",
                    loc,
                    qid,
                )
            )
    out += _range_findings(
        record.get("expected_line_ranges"), "expected_line_ranges", index, loc, qid
    )
    out += _range_findings(record.get("source_evidence"), "source_evidence", index, loc, qid)
    narrative = record.get("canonical_narrative")
    if isinstance(narrative, str) and narrative.strip():
        out += _narrative_findings(narrative, files, entities, index, loc, qid)
    return out


def check_records(
    records: Iterable[tuple[int | None, Mapping[str, Any]]],
    source_root: str | Path | SourceTree,
    path: str | Path | None = None,
) -> list[Finding]:
    """:func:`check_record` over ``(line, record)`` pairs, one source index for all."""
    index = SourceIndex(source_root)
    out: list[Finding] = []
    for line, record in records:
        loc = f"{path}:{line}" if path is not None and line is not None else None
        out += check_record(record, index, loc)
    return out


# -- candidate de-duplication (pipeline Step C) -------------------------------------


@dataclass
class Dedup:
    """Accepted candidates, and rejected ones with the reason."""

    accepted: list[Mapping[str, Any]] = field(default_factory=list)
    rejected: list[tuple[Mapping[str, Any], str]] = field(default_factory=list)


def _targets(candidate: Mapping[str, Any]) -> set[str]:
    for key in ("target_entity_ids", "expected_entities"):
        if key in candidate:
            return set(entity_ids(candidate[key]))
    return set()


def deduplicate_candidates(
    candidates: Iterable[Mapping[str, Any]],
    *,
    max_overlap: float = 0.5,
    targets: Callable[[Mapping[str, Any]], set[str]] = _targets,
) -> Dedup:
    """Accept candidates in order; reject one whose target entities overlap an
    already-accepted candidate's by more than ``max_overlap``.

    Overlap is the fraction of the *candidate's* targets that the accepted one
    already has (``|C ∩ A| / |C|``): a candidate adding nothing new is rejected
    however many targets the accepted one has. A candidate without targets is
    rejected too (every query must name a target entity). ``max_overlap`` is at
    least 0 (a ValueError otherwise): a candidate sharing no target with an accepted
    one is then never rejected because of it, so only those sharing one are compared.
    """
    if not max_overlap >= 0:
        raise ValueError(f"max_overlap must be at least 0, not {max_overlap!r}")
    result = Dedup()
    kept: list[tuple[str, set[str]]] = []
    # target -> positions in ``kept`` of the accepted candidates that have it: a
    # candidate is compared only with those sharing a target, not with every one kept
    holders: dict[str, list[int]] = {}
    for cand in candidates:
        mine = targets(cand)
        cid = str(
            cand.get(
                "query_id", cand.get("id", f"#{len(result.accepted) + len(result.rejected) + 1}")
            )
        )
        if not mine:
            result.rejected.append((cand, "no target entities"))
            continue
        shared: dict[int, int] = {}
        for target in mine:
            for k in holders.get(target, ()):
                shared[k] = shared.get(k, 0) + 1
        # the first accepted candidate, in acceptance order, that overlaps too much
        over = [k for k, n in shared.items() if n / len(mine) > max_overlap]
        if over:
            k = min(over)
            overlap = shared[k] / len(mine)
            reason = f"{overlap:.0%} of its targets overlap accepted candidate {kept[k][0]}"
            result.rejected.append((cand, reason))
        else:
            result.accepted.append(cand)
            for target in mine:
                holders.setdefault(target, []).append(len(kept))
            kept.append((cid, mine))
    return result


# -- structural agreement (§6) ---------------------------------------------------------


def jaccard(a: Iterable[str], b: Iterable[str]) -> float:
    """|A ∩ B| / |A ∪ B|; two empty sets agree (1.0)."""
    sa, sb = set(a), set(b)
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)


@dataclass(frozen=True)
class Agreement:
    entities: float
    files: float
    threshold: float

    @property
    def passed(self) -> bool:
        return self.entities >= self.threshold and self.files >= self.threshold


def labels_agree(
    first: Mapping[str, Any], second: Mapping[str, Any], *, threshold: float = 0.8
) -> Agreement:
    """Structural agreement of two labels of one query (e.g. Oracle vs the entities
    and files the Adversary supported): Jaccard of ``expected_entities`` and of
    ``expected_files``, each >= ``threshold`` to pass."""

    def files(label: Mapping[str, Any]) -> Sequence[str]:
        value = label.get("expected_files")
        return [f for f in value if isinstance(f, str)] if isinstance(value, list) else []

    return Agreement(
        entities=jaccard(
            entity_ids(first.get("expected_entities")), entity_ids(second.get("expected_entities"))
        ),
        files=jaccard(files(first), files(second)),
        threshold=threshold,
    )
