"""The ADK ``retrieval_dataset.yaml``: queries with Monte-Carlo-verified candidates.

The file mined by ADK's benchmark pipeline looks like::

    pairs:
      - id: "fix_errors:01"
        query: "How do I create a minimal LlmAgent?"
        candidates:
          - fqn: "google.adk.agents.llm_agent.LlmAgent"
            text: "..."
            empirical_relevance: "YES"
            delta_p: 0.85
          - fqn: "google.adk.plugins.RetryPlugin"
            text: "..."
            empirical_relevance: "NO"
            delta_p: 0.02
        metadata:
          trials: 10
          base_success_rate: 0.1

As a **dataset**, each pair is a golden query: ``YES`` candidates are relevant
(label 1), ``NO`` candidates are judged non-relevant (label 0); any other value
is an error. Each candidate's ``delta_p`` is kept in the query's metadata as
``delta_p: {fqn: value}``; the pair's ``metadata`` mapping and any other
pair field (``source``, ...) are query metadata too. With
``benchmark_from_id`` (the ``adk`` experiment sets it) a pair without a
``benchmark`` gets its id's part before its ``:`` (``fix_errors``). A pair
without a ``YES`` candidate is a negative example.

Files written by ``evalframe mine`` give each candidate a ``verdict``
(relevant, not_relevant, inconclusive) beside its YES/NO; an inconclusive one
is written NO. Two dataset settings change the labels without editing the
file: ``inconclusive: unjudged`` leaves inconclusive candidates unjudged
rather than judged non-relevant, and ``relevance_threshold: T`` re-judges
every candidate by ADK's rule, relevant when ``delta_p > T`` (a candidate
without ``delta_p`` is then an error).

As a **corpus**, the documents are the union of every pair's candidates,
keyed by ``fqn``, in first-seen order; the same fqn with two different texts
is an error naming both pairs.

Errors give the file, the line (read from YAML's marks) and the location in
the document (``pairs[3].candidates[1].empirical_relevance``).

The file is read with PyYAML's safe loader, with one change: only
``true``/``false`` are booleans (YAML 1.2), so an unquoted ``YES`` or ``NO``
is the string it looks like rather than YAML 1.1's ``True``/``False``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field

from evalframe.core.errors import DataError
from evalframe.core.reader import read_text, yaml_error
from evalframe.core.records import At, UniqueIds, field_names, is_id, warn_ids_not_in_corpus
from evalframe.core.types import Corpus, Document, GoldenQuery, GoldenSet, normalise_id
from evalframe.plugin.protocols import PluginConfig, PluginContext
from evalframe.plugin.registry import corpus, dataset

__all__ = [
    "LABELS",
    "AdkCorpus",
    "AdkCorpusConfig",
    "AdkDataset",
    "AdkDatasetConfig",
    "AdkPair",
    "read_pairs",
]

#: ``empirical_relevance`` value -> label. Anything else is an error.
LABELS: dict[str, int] = {"YES": 1, "NO": 0}

PAIR_FIELDS = ("id", "query", "candidates", "metadata")
CANDIDATE_FIELDS = ("fqn", "text", "empirical_relevance", "delta_p")


# -- YAML with line numbers -------------------------------------------------


class _MarkedLoader(yaml.SafeLoader):  # type: ignore[misc]  # PyYAML ships no stubs here
    """PyYAML's safe loader that remembers where every mapping and value starts."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.lines: dict[int, int] = {}  # id(dict or list) -> 1-based line
        # (id(dict), key) or (id(list), index) -> line where that value starts
        self.value_lines: dict[tuple[int, Any], int] = {}


def _construct_map(loader: _MarkedLoader, node: yaml.MappingNode) -> Iterator[dict[Any, Any]]:
    data: dict[Any, Any] = {}
    loader.lines[id(data)] = node.start_mark.line + 1
    yield data
    data.update(loader.construct_mapping(node))
    for key_node, value_node in node.value:
        if isinstance(key_node, yaml.ScalarNode):
            loader.value_lines[(id(data), key_node.value)] = value_node.start_mark.line + 1


def _construct_seq(loader: _MarkedLoader, node: yaml.SequenceNode) -> Iterator[list[Any]]:
    data: list[Any] = []
    loader.lines[id(data)] = node.start_mark.line + 1
    yield data
    data.extend(loader.construct_sequence(node))
    for index, item_node in enumerate(node.value):
        loader.value_lines[(id(data), index)] = item_node.start_mark.line + 1


_MarkedLoader.add_constructor("tag:yaml.org,2002:map", _construct_map)
_MarkedLoader.add_constructor("tag:yaml.org,2002:seq", _construct_seq)
# YAML 1.2 booleans: only true/false. YAML 1.1 (PyYAML's default) also reads
# yes/no/on/off as booleans, which would turn `empirical_relevance: YES` into True.
_MarkedLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_MarkedLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool",
    re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"),
)


@dataclass
class _Doc:
    """A parsed YAML document and the line lookups for its mappings."""

    path: Path
    data: Any
    lines: dict[int, int]
    value_lines: dict[tuple[int, Any], int]

    def line(self, obj: Any, key: str | int | None = None) -> int | None:
        if key is not None and (id(obj), key) in self.value_lines:
            return self.value_lines[(id(obj), key)]
        return self.lines.get(id(obj))


def _parse(path: Path, key: str | None) -> _Doc:
    text = read_text(path, what="ADK retrieval dataset", key=key)
    loader = _MarkedLoader(text)
    try:
        data = loader.get_single_data()
    except yaml.YAMLError as exc:
        raise yaml_error(
            exc, path, what="the file", hint="check the indentation and quoting around this line"
        ) from None
    finally:
        loader.dispose()
    return _Doc(path, data, loader.lines, loader.value_lines)


# -- pairs ------------------------------------------------------------------


@dataclass(frozen=True)
class AdkCandidate:
    """One judged candidate of a pair."""

    fqn: str
    text: str
    label: int
    delta_p: float | None
    extra: dict[str, Any]
    where: str
    line: int | None


@dataclass(frozen=True)
class AdkPair:
    """One query with its candidates, as read from the file."""

    id: str
    query: str
    candidates: tuple[AdkCandidate, ...]
    metadata: dict[str, Any]
    index: int
    line: int | None
    extra: dict[str, Any] = field(default_factory=dict)


def _error(doc: _Doc, message: str, obj: Any, key: str | int | None = None, **kw: Any) -> DataError:
    return DataError(message, path=doc.path, line=doc.line(obj, key), **kw)


def read_pairs(path: str | Path, *, key: str | None = None) -> list[AdkPair]:
    """Every pair of a ``retrieval_dataset.yaml``, checked; errors name file, line and location."""
    p = Path(path).expanduser()
    doc = _parse(p, key)
    data = doc.data
    if not isinstance(data, dict) or "pairs" not in data:
        got = f"fields {field_names(data)}" if isinstance(data, dict) else type(data).__name__
        raise DataError(
            "the file must be a mapping with a top-level 'pairs' list",
            path=p,
            line=doc.line(data) if isinstance(data, (dict, list)) else 1,
            got=got,
            hint="see the schema: pairs: [{id, query, candidates: [...], metadata}]",
        )
    pairs = data["pairs"]
    if not isinstance(pairs, list):
        raise _error(doc, "'pairs' must be a list", data, "pairs", got=type(pairs).__name__)
    seen = UniqueIds("query id", hint="give every pair its own id")
    out = [_pair(doc, raw, i, seen, pairs) for i, raw in enumerate(pairs)]
    if not out:
        raise _error(doc, "'pairs' is empty", data, "pairs", expected="at least one pair")
    return out


def _pair(doc: _Doc, raw: Any, index: int, seen: UniqueIds, parent: list[Any]) -> AdkPair:
    where = f"pairs[{index}]"
    if not isinstance(raw, dict):
        raise _error(doc, f"{where} must be a mapping", parent, index, got=repr(raw))
    raw_id = raw.get("id")
    label = f"pair {str(raw_id)!r} ({where})" if is_id(raw_id) else where
    missing = [f for f in ("id", "query", "candidates") if f not in raw]
    if missing:
        raise _error(
            doc,
            f"{label} has no {' or '.join(repr(m) for m in missing)} field",
            raw,
            expected="fields id, query, candidates",
            got=f"fields {field_names(raw)}",
        )
    if not is_id(raw_id):
        raise _error(
            doc,
            f"{where}.id must be a non-empty string or an integer",
            raw,
            "id",
            got=repr(raw_id),
        )
    pid = str(raw_id)
    seen.add(pid, At(doc.path, doc.line(raw, "id")), place=f"{where}, {doc.path}:{doc.line(raw)}")
    query = raw["query"]
    if not isinstance(query, str) or not query.strip():
        raise _error(
            doc, f"{label}: {where}.query must be non-empty text", raw, "query", got=repr(query)
        )
    metadata = raw.get("metadata")
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        raise _error(
            doc,
            f"{label}: {where}.metadata must be a mapping",
            raw,
            "metadata",
            got=type(metadata).__name__,
        )
    candidates = raw["candidates"]
    if candidates is None:
        candidates = []
    if not isinstance(candidates, list):
        raise _error(
            doc,
            f"{label}: {where}.candidates must be a list",
            raw,
            "candidates",
            got=type(candidates).__name__,
        )
    parsed: list[AdkCandidate] = []
    first: dict[str, AdkCandidate] = {}
    for j, cand in enumerate(candidates):
        c = _candidate(doc, cand, f"{where}.candidates[{j}]", label, candidates, j)
        if c.fqn in first:
            raise DataError(
                f"{label}: candidate {c.fqn!r} appears twice ({first[c.fqn].where} and {c.where})",
                path=doc.path,
                line=c.line,
                hint="list each candidate once per pair",
            )
        first[c.fqn] = c
        parsed.append(c)
    extra = {k: v for k, v in raw.items() if k not in PAIR_FIELDS}
    return AdkPair(
        id=pid,
        query=query,
        candidates=tuple(parsed),
        metadata=dict(metadata),
        index=index,
        line=doc.line(raw),
        extra=extra,
    )


def _candidate(
    doc: _Doc, raw: Any, where: str, label: str, parent: list[Any], index: int
) -> AdkCandidate:
    if not isinstance(raw, dict):
        raise _error(doc, f"{label}: {where} must be a mapping", parent, index, got=repr(raw))
    missing = [f for f in ("fqn", "text", "empirical_relevance") if f not in raw]
    if missing:
        raise _error(
            doc,
            f"{label}: {where} has no {' or '.join(repr(m) for m in missing)} field",
            raw,
            expected="fields fqn, text, empirical_relevance",
            got=f"fields {field_names(raw)}",
        )
    fqn = raw["fqn"]
    if not isinstance(fqn, str) or not fqn.strip():
        raise _error(
            doc, f"{label}: {where}.fqn must be a non-empty string", raw, "fqn", got=repr(fqn)
        )
    try:
        normalise_id(fqn)
    except ValueError as exc:  # a space inside: located here rather than by the model
        raise _error(doc, f"{label}: {where}.fqn: {exc}", raw, "fqn", got=repr(fqn)) from None
    text = raw["text"]
    if not isinstance(text, str):
        raise _error(doc, f"{label}: {where}.text must be a string", raw, "text", got=repr(text))
    relevance = raw["empirical_relevance"]
    if not isinstance(relevance, str) or relevance not in LABELS:
        raise _error(
            doc,
            f"{label}: {where}.empirical_relevance is not YES or NO",
            raw,
            "empirical_relevance",
            expected='"YES" (relevant) or "NO" (judged not relevant)',
            got=repr(relevance),
            hint=(
                f"write it in capitals, {relevance.strip().upper()!r}, as ADK's files do"
                if isinstance(relevance, str) and relevance.strip().upper() in LABELS
                else "label it YES or NO (the Monte Carlo verification gives one), or drop "
                "the candidate"
            ),
        )
    delta_p = raw.get("delta_p")
    if delta_p is not None and (isinstance(delta_p, bool) or not isinstance(delta_p, (int, float))):
        raise _error(
            doc,
            f"{label}: {where}.delta_p must be a number",
            raw,
            "delta_p",
            got=repr(delta_p),
        )
    return AdkCandidate(
        fqn=fqn,
        text=text,
        label=LABELS[relevance],
        delta_p=None if delta_p is None else float(delta_p),
        extra={k: v for k, v in raw.items() if k not in CANDIDATE_FIELDS},
        where=where,
        line=doc.line(raw),
    )


# -- plugins ----------------------------------------------------------------


class AdkDatasetConfig(PluginConfig):
    """Where the retrieval dataset is."""

    path: str = Field(description="the retrieval_dataset.yaml file")
    set_name: str | None = Field(None, description="golden-set name (default: the file name)")
    relevance_threshold: float | None = Field(
        None,
        ge=0,
        lt=1,
        description="re-judge: relevant when delta_p > this (ADK's rule); null keeps the file's",
    )
    inconclusive: Literal["no", "unjudged"] = Field(
        "no",
        description="candidates with verdict 'inconclusive' (evalframe mine): judged "
        "non-relevant (no), or left unjudged",
    )
    benchmark_from_id: bool = Field(
        False,
        description="a pair without a 'benchmark' in its metadata gets its id's part "
        "before ':' (ADK's ids name their benchmark); part of the set's content hash",
    )


def _read(config: AdkDatasetConfig | AdkCorpusConfig, key: str) -> tuple[Path, list[AdkPair]]:
    path = Path(config.path)
    return path, read_pairs(path, key=key)


@dataset("adk", config=AdkDatasetConfig)
@dataclass(eq=False)
class AdkDataset:
    """ADK retrieval_dataset.yaml: pairs whose candidates are judged YES (1) or NO (0)."""

    config: AdkDatasetConfig
    context: PluginContext

    def load(self) -> GoldenSet:
        path, pairs = _read(self.config, "dataset.path")
        queries = [self._query(p, path, self.config) for p in pairs]
        warn_ids_not_in_corpus(
            queries, self.context.corpus, "relevant candidate", relevant_only=True
        )
        return GoldenSet.build(
            self.config.set_name or path.stem,
            queries,
            provenance={"format": "adk", "path": str(path)},
        )

    @staticmethod
    def _judgments(pair: AdkPair, path: Path, config: AdkDatasetConfig) -> dict[str, int]:
        threshold = config.relevance_threshold
        if threshold is None:
            return {
                c.fqn: c.label
                for c in pair.candidates
                if not (
                    config.inconclusive == "unjudged" and c.extra.get("verdict") == "inconclusive"
                )
            }
        for c in pair.candidates:
            if c.delta_p is None:
                raise DataError(
                    f"pair {pair.id!r}: {c.where} has no delta_p to re-judge at "
                    f"dataset.relevance_threshold={threshold:g}",
                    path=path,
                    line=c.line,
                    hint="give every candidate a delta_p, or drop dataset.relevance_threshold",
                )
        return {
            c.fqn: int(c.delta_p is not None and c.delta_p > threshold) for c in pair.candidates
        }

    @staticmethod
    def _query(pair: AdkPair, path: Path, config: AdkDatasetConfig | None = None) -> GoldenQuery:
        metadata: dict[str, Any] = dict(pair.metadata)
        delta_p = {c.fqn: c.delta_p for c in pair.candidates if c.delta_p is not None}
        extra: dict[str, Any] = {**pair.extra, **({"delta_p": delta_p} if delta_p else {})}
        clash = sorted(set(metadata) & set(extra))
        if clash:
            raise DataError(
                f"pair {pair.id!r} (pairs[{pair.index}]): metadata key(s) "
                f"{', '.join(repr(c) for c in clash)} clash with the pair's own fields",
                path=path,
                line=pair.line,
                hint="rename the key inside the pair's metadata",
            )
        metadata.update(extra)
        # ADK's ids name their benchmark (`fix_errors:01`), its files no field: the
        # per-benchmark breakdown (ADK's `slices: [benchmark]`) from the id's prefix.
        # Asked for (the adk experiment does): it is metadata, so the set's hash moves
        prefix, colon, _ = pair.id.partition(":")
        if config is not None and config.benchmark_from_id and colon and prefix:
            metadata.setdefault("benchmark", prefix)
        return GoldenQuery(
            id=pair.id,
            text=pair.query,
            judgments=AdkDataset._judgments(pair, path, config or AdkDatasetConfig(path=str(path))),
            metadata=metadata,
        )


class AdkCorpusConfig(PluginConfig):
    """Where the retrieval dataset is."""

    path: str = Field(description="the retrieval_dataset.yaml file (candidates become documents)")
    corpus_name: str | None = Field(None, description="corpus name (default: the file name)")


@corpus("adk", config=AdkCorpusConfig)
@dataclass(eq=False)
class AdkCorpus:
    """Documents from an ADK retrieval_dataset.yaml: every pair's candidates, keyed by fqn."""

    config: AdkCorpusConfig
    context: PluginContext

    def load(self) -> Corpus:
        path, pairs = _read(self.config, "corpus.path")
        docs: dict[str, Document] = {}
        owner: dict[str, tuple[AdkPair, AdkCandidate]] = {}
        for pair in pairs:
            for cand in pair.candidates:
                if cand.fqn not in docs:
                    docs[cand.fqn] = Document(id=cand.fqn, text=cand.text, metadata=cand.extra)
                    owner[cand.fqn] = (pair, cand)
                    continue
                if docs[cand.fqn].text != cand.text:
                    first_pair, first_cand = owner[cand.fqn]
                    raise DataError(
                        f"candidate {cand.fqn!r} has a different text in pair {pair.id!r} "
                        f"({cand.where}) than in pair {first_pair.id!r} "
                        f"({first_cand.where}, line {first_cand.line})",
                        path=path,
                        line=cand.line,
                        hint="a corpus document has one text: make both candidates' text equal",
                    )
        if not docs:
            raise DataError(
                "the retrieval dataset has no candidates, so the corpus is empty",
                path=path,
                expected="at least one candidate",
            )
        return Corpus.build(self.config.corpus_name or path.stem, docs.values())
