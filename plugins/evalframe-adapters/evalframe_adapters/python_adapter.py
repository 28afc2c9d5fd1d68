"""Evaluate a Python function or class as a retriever: ``target: "mymodule:search"``.

The smallest possible retriever::

    # my_retriever.py
    def search(query, k):
        return ["doc-3", "doc-1"]          # best first

Accepted return values, per query: a list of ids (the order is the ranking),
a list of ``(id, score)`` pairs or ``{"id", "score"}`` dicts (sorted by score),
a ``{id: score}`` mapping, an :class:`evalframe.Ranking`, or ``None`` (no
answer: the query counts as missing).

The first argument is the query *text*, unless the function annotates it as
:class:`evalframe.Query` (then it gets the query with its id and metadata);
``query_arg`` overrides the guess. A function with a single parameter is
called without ``k`` and its answer is cut at ``k``.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator

from evalframe.core.errors import ConfigError, PluginError
from evalframe.core.types import Ranking
from evalframe.plugin.protocols import NOT_IN_CACHE_KEY, PluginConfig, PluginContext, Query
from evalframe.plugin.registry import retriever
from evalframe.retrieval.answers import call_shape, to_ranking

__all__ = ["PythonConfig", "PythonRetriever", "load_target"]

KEY = "retriever.target"
TARGET = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


class PythonConfig(PluginConfig):
    """Which function or class to call, and how."""

    target: str = Field(
        description='"module:function" or "module:Class" (a class is built once with '
        "init_kwargs and its retrieve() or __call__ is used)"
    )
    init_kwargs: dict[str, Any] = Field(
        default_factory=dict, description="keyword arguments for the class (classes only)"
    )
    query_arg: Literal["auto", "text", "query"] = Field(
        "auto",
        description="what the first argument is: the query text, the evalframe Query, or auto "
        "(Query when the parameter is annotated as Query, else text)",
    )
    batch: bool = Field(
        False,
        description="the callable takes a list of queries (up to 1024 at a time) and returns a "
        "list of results (or {query_id: result})",
    )
    max_concurrency: int = Field(
        1,
        ge=1,
        le=64,
        description="queries asked at once, from this many threads (only for a thread-safe "
        "callable, e.g. one that calls a service; not with batch)",
        json_schema_extra=NOT_IN_CACHE_KEY,
    )
    python_path: list[str] = Field(
        default_factory=lambda: ["."],
        description="folders put on sys.path before importing (relative to the working "
        "directory), so a module next to your config is found",
    )

    @field_validator("init_kwargs", mode="before")
    @classmethod
    def _null_is_empty(cls, value: Any) -> Any:
        return {} if value is None else value  # YAML null: a Hydra override replaces, not merges

    @field_validator("target")
    @classmethod
    def _target_shape(cls, value: str) -> str:
        if not TARGET.match(value):
            raise ValueError(
                f'target must look like "package.module:function" or "module:Class" (got {value!r})'
            )
        return value


def load_target(target: str, python_path: Sequence[str] = (".",)) -> Any:
    """Import ``module:attr`` (attr may be dotted), or raise a ConfigError naming it."""
    module_name, _, attr_path = target.partition(":")
    for folder in reversed(list(python_path)):
        resolved = str(Path(folder).expanduser().resolve())
        if resolved not in sys.path:
            sys.path.insert(0, resolved)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        missing = isinstance(exc, ModuleNotFoundError) and exc.name is not None
        missing = missing and module_name.startswith(str(exc.name))
        raise ConfigError(
            f"cannot import module {module_name!r} for retriever target {target!r}"
            if missing
            else f"importing module {module_name!r} (retriever target {target!r}) failed",
            key=KEY,
            got=f"{type(exc).__name__}: {exc}",
            hint="run evalframe from the folder that holds the module, or list its folder in "
            "retriever.python_path"
            if missing
            else "fix the import inside the module (is a dependency missing?)",
        ) from None
    obj: Any = module
    for part in attr_path.split("."):
        if not hasattr(obj, part):
            public = sorted(n for n in dir(module) if not n.startswith("_"))[:20]
            raise ConfigError(
                f"module {module_name!r} has no attribute {attr_path!r}",
                key=KEY,
                got=f"names in the module: {', '.join(public) or '(none)'}",
                hint="check the spelling after the colon in retriever.target",
            )
        obj = getattr(obj, part)
    return obj


@retriever("python", config=PythonConfig)
class PythonRetriever:
    """Calls your Python function or class: the quickest way to evaluate your own retriever."""

    #: The code behind ``target`` can change without the config changing, so a
    #: cached ranking could be stale: never cache.
    cacheable = False

    def __init__(self, config: PythonConfig, context: PluginContext) -> None:
        self.config = config
        self.context = context
        obj = load_target(config.target, config.python_path)
        self.name = config.target
        if inspect.isclass(obj):
            try:
                instance = obj(**config.init_kwargs)
            except TypeError as exc:
                raise ConfigError(
                    f"class {config.target} could not be built with init_kwargs",
                    key="retriever.init_kwargs",
                    got=f"{exc}",
                ) from None
            self.fn = self._method_of(instance)
        else:
            if config.init_kwargs:
                raise ConfigError(
                    f"{config.target} is not a class, so init_kwargs cannot be used",
                    key="retriever.init_kwargs",
                    hint="remove init_kwargs, or point target at a class",
                )
            method = getattr(obj, "retrieve", None)
            self.fn = method if callable(method) and not inspect.isroutine(obj) else obj
        if not callable(self.fn):
            raise ConfigError(
                f"{config.target} is a {type(obj).__name__}, not a function or class",
                key=KEY,
            )
        shape = call_shape(self.fn, name=self.name, key=KEY, query_arg=config.query_arg)
        self.pass_k, self.wants_query = shape.pass_k, shape.wants_query
        if config.batch:
            if config.max_concurrency > 1:
                raise ConfigError(
                    "a batch callable is called once per chunk of queries, so "
                    "max_concurrency cannot be used with it",
                    key="retriever.max_concurrency",
                    hint="remove max_concurrency, or set batch: false",
                )
            # Only a batch callable makes this a batch retriever for the pipeline.
            self.retrieve_batch = self._retrieve_batch
        #: How many queries the pipeline may ask at once (threads).
        self.max_concurrency = config.max_concurrency

    def _method_of(self, instance: Any) -> Callable[..., Any]:
        method = getattr(instance, "retrieve", None)
        if callable(method):
            return method  # type: ignore[no-any-return]
        if callable(instance):
            return instance  # type: ignore[no-any-return]
        raise ConfigError(
            f"class {self.config.target} has neither a retrieve() method nor __call__",
            key=KEY,
            expected="def retrieve(self, query, k)",
        )

    # -- calling ------------------------------------------------------------
    def _call(self, arg: Any, k: int, query_ids: str) -> Any:
        try:
            return self.fn(arg, k) if self.pass_k else self.fn(arg)
        except Exception as exc:
            # Their bug keeps its traceback; the note says which query hit it.
            if hasattr(exc, "add_note"):
                exc.add_note(f"(evalframe: in retriever {self.name} for query {query_ids})")
            raise

    def _arg(self, query: Query) -> Any:
        return query if self.wants_query else query.text

    def retrieve(self, query: Query, k: int) -> Ranking | None:
        """The ranking for one query (a batch of one with ``batch: true``)."""
        if self.config.batch:
            return self._batch([query], k)[query.id]
        return self.convert(query.id, self._call(self._arg(query), k, repr(query.id)), k)

    def _retrieve_batch(self, queries: Sequence[Query], k: int) -> list[Ranking | None]:
        """With ``batch: true``: one call for all ``queries``."""
        if not queries:
            return []
        answers = self._batch(list(queries), k)
        return [answers[q.id] for q in queries]

    def _batch(self, queries: list[Query], k: int) -> dict[str, Ranking | None]:
        ids = ", ".join(repr(q.id) for q in queries[:3]) + (" ..." if len(queries) > 3 else "")
        out = self._call([self._arg(q) for q in queries], k, ids)
        if isinstance(out, Mapping):
            missing = [q.id for q in queries if q.id not in out]
            if missing:
                raise PluginError(
                    f"{self.name} (batch) returned no entry for queries {missing[:5]}",
                    hint="return one result per query: a list in the same order, or "
                    "{query_id: result}",
                )
            return {q.id: self.convert(q.id, out[q.id], k) for q in queries}
        if not isinstance(out, Sequence) or isinstance(out, (str, bytes)):
            raise ConfigError(
                f"{self.name} (batch) returned {type(out).__name__}",
                key=KEY,
                expected="a list with one result per query, or {query_id: result}",
            )
        if len(out) != len(queries):
            raise PluginError(
                f"{self.name} (batch) returned {len(out)} results for {len(queries)} queries",
                hint="return one result per query, in the order given",
            )
        return {q.id: self.convert(q.id, r, k) for q, r in zip(queries, out, strict=True)}

    # -- results ------------------------------------------------------------
    def convert(self, query_id: str, result: Any, k: int) -> Ranking | None:
        """Validate what the function returned and make it a Ranking."""
        return to_ranking(query_id, result, k, name=self.name, key=KEY)
