"""Python objects as a run's retriever, golden set and corpus.

A notebook user has a function, a list of dicts, a list of documents, not a
plugin and a file. ``evalframe.run`` registers each object it is given as a
plugin for the length of the run (``Registry.scoped``), under the name
``python_object``, and puts a config section in its place that says what the
object was. So the object goes through the same validation, pipeline, cache and
run folder as a registered plugin, and ``config.yaml`` records it, e.g.::

    retriever: {name: python_object, target: __main__.search, code: 3f2a…, state: 9c1d…}

The retrieval cache key covers the plugin's config, so it covers what
:func:`callable_identity` puts in it: the retriever's qualified name, the hash
of its bytecode and of the immutable plain values it reads. An edited
function is a new key, never a stale hit. What it cannot see (an index or a
model object the function calls) is the user's to name: ``cache_identity()``
on an object, or ``cache.retrieval=false``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError

from evalframe.api.identity import callable_identity
from evalframe.core.errors import ConfigError, DataError
from evalframe.core.types import Corpus, Document, GoldenQuery, GoldenSet, Ranking
from evalframe.plugin.protocols import PluginConfig, PluginContext, Query
from evalframe.plugin.registry import CORPORA, DATASETS, RETRIEVERS
from evalframe.retrieval.answers import call_shape, to_ranking

__all__ = [
    "NAME",
    "Supplied",
    "callable_identity",
    "check_retriever",
    "corpus_from",
    "golden_from",
    "registered",
]

#: The plugin name under which an object given to ``evalframe.run`` is registered.
NAME = "python_object"

# -- the retriever ----------------------------------------------------------------


class ObjectRetrieverConfig(PluginConfig):
    """Which Python function or object answered (it is in the retrieval cache key)."""

    target: str = Field(description="the qualified name of the function or the object's class")
    code: str = Field(description="hash of its bytecode (what runs when it is called)")
    state: str = Field(description="hash of the plain values it reads (defaults, closure, globals)")


def kind(value: Any) -> str:
    """``value``'s type with its article, for a message: "an int", "a list"."""
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def _function_of(obj: Any) -> Any:
    """What is called for ``obj``: its ``retrieve`` method, or ``obj`` itself."""
    method = getattr(obj, "retrieve", None)
    return method if callable(method) and not inspect.isroutine(obj) else obj


def check_retriever(obj: Any) -> None:
    """Refuse, before anything runs, a retriever evalframe could not call.

    Without this, a number or a list (not callable) or a function that needs a
    third argument fails with a raw ``TypeError`` on the first query, after the
    run folder is made.
    """
    fn = _function_of(obj)
    if not callable(fn):
        raise ConfigError(
            f"retriever= got {kind(obj)}, which cannot be called",
            key="retriever",
            expected="a function search(query) or search(query, k), or an object with "
            "such a retrieve method",
            hint="pass the function itself (retriever=search), not what it returned",
        )
    call_shape(fn, name=callable_identity(obj).target, key="retriever")


class ObjectRetriever:
    """A Python function or object given to ``evalframe.run(retriever=...)``."""

    #: the object itself, set on the class :func:`registered` makes for one run
    target: Any = None

    def __init__(self, config: ObjectRetrieverConfig, context: PluginContext) -> None:
        self.config = config
        self.context = context
        self.fn: Callable[..., Any] = _function_of(self.target)
        self.shape = call_shape(self.fn, name=config.target, key="retriever")

    def retrieve(self, query: Query, k: int) -> Ranking | None:
        try:
            answer = self.shape.call(self.fn, query, k)
        except Exception as exc:
            # the user's bug keeps its traceback; the note says which query hit it
            exc.add_note(f"(evalframe: in retriever {self.config.target} for query {query.id!r})")
            raise
        return to_ranking(query.id, answer, k, name=self.config.target, key="retriever")


# -- the golden set and the corpus ------------------------------------------------


class ObjectSetConfig(PluginConfig):
    """A golden set or corpus given as Python objects: what it was, for config.yaml."""

    set_name: str = Field(description="its name")
    size: int = Field(ge=0, description="queries or documents")
    content_hash: str = Field(description="its content hash (the run folder's identity of it)")


class _Loaded:
    """A loader that hands back what it was given (``loaded``, set per run)."""

    loaded: Any = None

    def __init__(self, config: ObjectSetConfig, context: PluginContext) -> None:
        self.config = config

    def load(self) -> Any:
        return self.loaded


class ObjectDataset(_Loaded):
    """A golden set given to ``evalframe.run(golden=...)``."""


class ObjectCorpus(_Loaded):
    """A corpus given to ``evalframe.run(corpus=...)``."""


TEXT_KEYS = ("text", "query", "question")
RELEVANT_KEYS = ("relevant", "judgments")


def _metadata(fields: dict[Any, Any], key: str) -> dict[Any, Any]:
    """A record's ``metadata`` (taken out of ``fields``): a mapping, or absent (``None``)."""
    given = fields.pop("metadata", None)
    if given is None:
        return {}
    if not isinstance(given, Mapping):
        raise DataError(
            "the record's 'metadata' must be a dict of fields",
            key=f"{key}.metadata",
            expected="a dict such as {'difficulty': 'hard'}",
            got=kind(given),
            hint="or give each field as a key of the record itself: {..., 'difficulty': 'hard'}",
        )
    return dict(given)


def _records(obj: Any) -> Any:
    """A pandas DataFrame as its rows (dicts); anything else as it is.

    Iterating a DataFrame gives its column names. It is recognised by its shape
    (``to_dict`` and ``columns``), so pandas is not imported here.
    """
    if not isinstance(obj, Mapping) and hasattr(obj, "to_dict") and hasattr(obj, "columns"):
        return obj.to_dict("records")
    return obj


def _query(record: Any, i: int) -> GoldenQuery:
    key = f"golden[{i}]"
    if isinstance(record, GoldenQuery):
        return record
    if not isinstance(record, Mapping):
        raise DataError(
            f"golden set entry {i} is a {type(record).__name__}, not a record",
            key=key,
            expected="a dict such as {'id': 'q1', 'text': '...', 'relevant': ['d3']}, "
            "or an evalframe.GoldenQuery",
        )
    fields = dict(record)
    if "id" not in fields:
        raise DataError(
            f"golden set entry {i} has no 'id'",
            key=key,
            got=f"keys {sorted(map(str, fields))}",
            hint="give every query a unique id: {'id': 'q1', ...}",
        )
    # two of them would keep the first and make the other a slice, losing judgments silently
    for keys, what in ((TEXT_KEYS, "text"), (RELEVANT_KEYS, "relevance")):
        given = [k for k in keys if k in fields]
        if len(given) > 1:
            raise DataError(
                f"golden set entry {i} (id {fields['id']!r}) gives its {what} twice: "
                + " and ".join(repr(k) for k in given),
                key=key,
                hint=f"keep one of {' or '.join(repr(k) for k in given)} "
                "(merge them if both hold part of it)",
            )
    text_key = next((k for k in TEXT_KEYS if k in fields), None)
    rel_key = next((k for k in RELEVANT_KEYS if k in fields), None)
    if rel_key is None:
        raise DataError(
            f"golden set entry {i} (id {fields['id']!r}) says nothing about relevance",
            key=key,
            expected="'relevant': a list of document ids, or {doc id: grade}; [] for a "
            "negative example (no document answers it)",
            got=f"keys {sorted(map(str, fields))}",
        )
    relevant = fields.pop(rel_key)
    if isinstance(relevant, Mapping):
        judgments = dict(relevant)
    elif isinstance(relevant, (list, tuple, set, frozenset)):
        judgments = dict.fromkeys(relevant, 1)
        if len(judgments) != len(relevant):
            raise DataError(
                f"golden set entry {i} lists a document twice in {rel_key!r}",
                key=f"{key}.{rel_key}",
                got=repr(relevant)[:120],
            )
    else:
        raise DataError(
            f"golden set entry {i}: {rel_key!r} must be a list of document ids or "
            "{doc id: grade}",
            key=f"{key}.{rel_key}",
            got=repr(relevant)[:120],
        )
    query_id = fields.pop("id")
    text = fields.pop(text_key) if text_key is not None else ""
    metadata = _metadata(fields, key)
    metadata.update(fields)  # every other field is metadata: difficulty, category -> slices
    try:
        return GoldenQuery(id=query_id, text=text, judgments=judgments, metadata=metadata)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise DataError(
            f"golden set entry {i} (id {query_id!r}): {first['msg'].removeprefix('Value error, ')}"
            + (f" (at {where})" if where else ""),
            key=key,
            hint="ids are one word (a string or an integer); grades are whole numbers",
        ) from None


def golden_from(obj: Any, name: str = "golden") -> GoldenSet:
    """A golden set from a :class:`GoldenSet`, or a list of dicts or GoldenQuery objects.

    A dict has ``id``, ``text`` (or ``query``, ``question``), and ``relevant``: a
    list of document ids (grade 1) or ``{doc id: grade}`` (``judgments`` is read
    the same way), ``[]`` for a negative example. Every other key is metadata,
    which gives the slices (``difficulty``, ``category``...). A pandas
    DataFrame is read as its rows (``df.to_dict("records")``).
    """
    if isinstance(obj, GoldenSet):
        return obj
    obj = _records(obj)
    if isinstance(obj, (str, bytes, Mapping)) or not isinstance(obj, Iterable):
        raise ConfigError(
            f"golden= got a {type(obj).__name__}",
            key="golden",
            expected="an evalframe.GoldenSet, a list of dicts (id, text, relevant), or a path "
            "to a golden-set file",
        )
    queries = [_query(record, i) for i, record in enumerate(obj)]
    if not queries:
        raise DataError("the golden set given is empty", key="golden", hint="give it queries")
    seen: dict[str, int] = {}
    for i, q in enumerate(queries):
        if q.id in seen:
            raise DataError(
                f"golden set entries {seen[q.id]} and {i} have the same id {q.id!r}",
                key=f"golden[{i}].id",
                hint="query ids are unique",
            )
        seen[q.id] = i
    return GoldenSet.build(name, queries, provenance={"source": "python objects"})


def _document(record: Any, i: int) -> Document:
    if isinstance(record, Document):
        return record
    key = f"corpus[{i}]"
    if not isinstance(record, Mapping) or "id" not in record or "text" not in record:
        raise DataError(
            f"corpus entry {i} is not a document",
            key=key,
            expected="{'id': ..., 'text': ...} (other keys become metadata), "
            "or an evalframe.Document",
            got=repr(record)[:120],
        )
    fields = dict(record)
    doc_id, text = fields.pop("id"), fields.pop("text")
    metadata = _metadata(fields, key)
    metadata.update(fields)
    try:
        return Document(id=doc_id, text=text, metadata=metadata)
    except ValidationError as exc:
        raise DataError(
            f"corpus entry {i}: {exc.errors()[0]['msg'].removeprefix('Value error, ')}",
            key=key,
            hint="ids are one word (a string or an integer); text is a string",
        ) from None


def corpus_from(obj: Any, name: str = "corpus") -> Corpus:
    """A corpus from a :class:`Corpus`, a list of documents (or dicts), or ``{id: text}``.

    A pandas DataFrame (``id``, ``text`` columns) is read as its rows.
    """
    if isinstance(obj, Corpus):
        return obj
    obj = _records(obj)
    if isinstance(obj, Mapping):
        items: Iterable[Any] = ({"id": k, "text": v} for k, v in obj.items())
    elif isinstance(obj, (str, bytes)) or not isinstance(obj, Iterable):
        raise ConfigError(
            f"corpus= got a {type(obj).__name__}",
            key="corpus",
            expected="an evalframe.Corpus, a list of Documents or {'id', 'text'} dicts, "
            "{id: text}, or a path to a corpus file",
        )
    else:
        items = obj
    documents = [_document(record, i) for i, record in enumerate(items)]
    if not documents:  # no index can be built on it (bm25s fails on an empty sequence)
        raise DataError(
            "the corpus given is empty",
            key="corpus",
            hint="give it documents, or leave corpus= out for a retriever that needs none",
        )
    seen: set[str] = set()
    for i, d in enumerate(documents):
        if d.id in seen:
            raise DataError(f"corpus entry {i} repeats document id {d.id!r}", key=f"corpus[{i}]")
        seen.add(d.id)
    return Corpus.build(name, documents)


# -- registering them for one run -------------------------------------------------


@dataclass(frozen=True)
class Supplied:
    """The objects given to one run, each as the config section that stands for it."""

    retriever: Any = None
    golden: GoldenSet | None = None
    corpus: Corpus | None = None

    def sections(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        if self.retriever is not None:
            ident = callable_identity(self.retriever)
            out["retriever"] = {
                "name": NAME,
                "target": ident.target,
                "code": ident.code,
                "state": ident.state,
            }
        for section, data in (("dataset", self.golden), ("corpus", self.corpus)):
            if data is not None:
                out[section] = {
                    "name": NAME,
                    "set_name": data.name,
                    "size": len(data),
                    "content_hash": data.content_hash,
                }
        return out


def _bound(base: type, attribute: str, value: Any) -> type:
    """A subclass of ``base`` carrying one run's object (the registry builds classes).

    ``staticmethod``: a function stored on a class would come back bound to the instance.
    """
    return type(
        base.__name__, (base,), {attribute: staticmethod(value), "__module__": base.__module__}
    )


@contextmanager
def registered(supplied: Supplied) -> Iterator[None]:
    """Register the objects as ``python_object`` plugins for the length of the block."""
    with ExitStack() as stack:
        if supplied.retriever is not None:
            reg = stack.enter_context(RETRIEVERS.scoped())
            reg.add(
                NAME, _bound(ObjectRetriever, "target", supplied.retriever), ObjectRetrieverConfig
            )
        if supplied.golden is not None:
            reg = stack.enter_context(DATASETS.scoped())
            reg.add(NAME, _bound(ObjectDataset, "loaded", supplied.golden), ObjectSetConfig)
        if supplied.corpus is not None:
            reg = stack.enter_context(CORPORA.scoped())
            reg.add(NAME, _bound(ObjectCorpus, "loaded", supplied.corpus), ObjectSetConfig)
        yield


def is_path(value: Any) -> bool:
    """A golden set or corpus named by its file (a str or a Path), not given as objects."""
    return isinstance(value, (str, Path))
