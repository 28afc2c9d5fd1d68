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

An exception from the user's code (importing the module, building the class,
or answering a query) is the user's to fix, not a bug in evalframe: it becomes
a located error (exit 2) naming ``retriever.target`` and the file and line of
their code where it was raised. ``KeyboardInterrupt`` is left alone (Ctrl-C
still stops the run).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import os
import re
import sys
import sysconfig
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator

import evalframe
from evalframe.core.errors import ConfigError, EvalframeError, PluginError
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
    """Import ``module:attr`` (attr may be dotted), or raise a ConfigError naming it.

    A module that is not there is reported on ``retriever.target``; one that is
    there but fails to import (a syntax error, an exception at its top level)
    is reported at the file and line of the user's code that failed.
    """
    module_name, _, attr_path = target.partition(":")
    for folder in reversed(list(python_path)):
        resolved = str(Path(folder).expanduser().resolve())
        if resolved not in sys.path:
            sys.path.insert(0, resolved)
    try:
        module = importlib.import_module(module_name)
    except EvalframeError:
        raise  # already said in evalframe's words
    except (Exception, SystemExit) as exc:  # their module's top level ran and failed
        name = exc.name if isinstance(exc, ModuleNotFoundError) else None
        if name is not None and (module_name == name or module_name.startswith(f"{name}.")):
            raise ConfigError(
                f"cannot import module {module_name!r} for retriever target {target!r}",
                key=KEY,
                got=f"{type(exc).__name__}: {exc}",
                hint="run evalframe from the folder that holds the module, or list its folder "
                "in retriever.python_path",
            ) from None
        raise user_code_failed(
            ConfigError,
            exc,
            f"importing module {module_name!r} (retriever.target {target!r}) failed",
            hint=(
                "a module it imports is missing: install it in this environment, or fix the import"
                if isinstance(exc, ImportError)
                else "the error is in your code, not in evalframe: fix it at that line"
            )
            + f" (`python -c 'import {module_name}'` in the same folder shows the traceback)",
        ) from exc
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


# -- where their code failed ------------------------------------------------


@functools.cache
def _library_dirs() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(evalframe's own folders, the standard library's and site-packages' folders)."""
    ours = {Path(evalframe.__file__).parent, Path(__file__).parent}
    paths = sysconfig.get_paths()
    libs = {Path(paths[k]) for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}

    def prefixes(folders: set[Path]) -> tuple[str, ...]:
        return tuple(os.path.realpath(f) + os.sep for f in folders)

    return prefixes(ours), prefixes(libs)


def user_frame(exc: BaseException) -> tuple[str, int | None] | None:
    """The file and line where ``exc`` was raised in the user's code.

    A ``SyntaxError`` carries its own; otherwise the innermost frame of the
    traceback that is neither evalframe's nor the import machinery's, and not
    in the standard library or site-packages (the user's line that called the
    library which raised), else the innermost one outside evalframe.
    """
    if isinstance(exc, SyntaxError) and exc.filename and not exc.filename.startswith("<"):
        return exc.filename, exc.lineno
    ours, libs = _library_dirs()
    fallback: tuple[str, int | None] | None = None
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if frame.filename.startswith("<"):  # <frozen importlib._bootstrap>, <string>
            continue
        real = os.path.realpath(frame.filename)
        if real.startswith(ours):
            continue
        if not real.startswith(libs):
            return frame.filename, frame.lineno
        if fallback is None:
            fallback = frame.filename, frame.lineno
    return fallback


def _shown(path: str) -> str:
    """``path`` relative to the working directory when it is below it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except (OSError, ValueError):
        return path


def _described(exc: BaseException) -> str:
    """``Type: message`` on one line (the first line of the message, not too long)."""
    if isinstance(exc, SyntaxError):
        text = exc.msg
        if exc.text and exc.text.strip():
            text += f" in {exc.text.strip()[:80]!r}"
    elif isinstance(exc, SystemExit):
        text = f"sys.exit({exc.code!r}) was called"
    else:
        lines = str(exc).strip().splitlines()
        text = lines[0] if lines else ""
    if len(text) > 300:
        text = text[:300] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def user_code_failed(
    kind: type[EvalframeError], exc: BaseException, message: str, *, hint: str
) -> EvalframeError:
    """``exc``, raised by the user's code, as a ``kind`` error at their file and line."""
    where = user_frame(exc)
    column = exc.offset if isinstance(exc, SyntaxError) and where is not None else None
    return kind(
        message,
        key=KEY,
        path=_shown(where[0]) if where is not None else None,
        line=where[1] if where is not None else None,
        column=column or None,
        got=_described(exc),
        hint=hint,
    )


def _raised_by_the_call(exc: BaseException) -> bool:
    """The exception came from the call itself (its arguments did not bind), not from
    inside the function: its traceback ends in the frame that made the call."""
    tb = exc.__traceback__
    return tb is not None and tb.tb_next is None


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
            except EvalframeError:
                raise
            except (Exception, SystemExit) as exc:
                if isinstance(exc, TypeError) and _raised_by_the_call(exc):
                    raise ConfigError(  # the arguments did not fit the constructor
                        f"class {config.target} could not be built with init_kwargs",
                        key="retriever.init_kwargs",
                        got=f"{exc}",
                    ) from None
                raise user_code_failed(
                    PluginError,
                    exc,
                    f"building your retriever class (retriever.target {config.target!r}) failed",
                    hint="the error is in your class's __init__, not in evalframe: fix it there "
                    "(or check retriever.init_kwargs)",
                ) from exc
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
        """Their function's answer; what it raises is their error, said where it happened.

        Not a crash of evalframe (exit 3) but a located error (exit 2): their file
        and line, the query, the exception. The original stays on ``__cause__``
        for whoever debugs from Python; ``KeyboardInterrupt`` passes untouched.
        """
        try:
            return self.fn(arg, k) if self.pass_k else self.fn(arg)
        except EvalframeError:
            raise  # already said in evalframe's words (e.g. they built a bad Ranking)
        except (Exception, SystemExit) as exc:
            plural = "queries" if self.config.batch else "query"
            raise user_code_failed(
                PluginError,
                exc,
                f"your retriever (retriever.target {self.name!r}) raised an exception for "
                f"{plural} {query_ids}",
                hint="the error is in your retriever's code, not in evalframe: fix it at that "
                f"line (calling {self.name} yourself on that {plural} shows the full traceback)",
            ) from exc

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
