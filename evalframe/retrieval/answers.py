"""What a retriever written as plain Python returned, made a valid :class:`Ranking`.

Two callers wrap a user's own function or object as a retriever: the ``python``
adapter (by import path, ``retriever.target=mymod:search``) and the Python API
(``evalframe.run(retriever=search)``). Both accept the same answers and apply
the same rules, from here:

- per query, a list of ids (the order is the ranking), a list of ``(id, score)``
  pairs or ``{"id", "score"}`` dicts (sorted by score), an ``{id: score}``
  mapping, a :class:`Ranking`, or ``None`` (no answer: the query is missing);
- ids are non-empty strings (an integer, NumPy's too, becomes its decimal
  string), scores are finite real numbers (NumPy's too) or all absent (then
  synthetic scores ``n - i`` keep the given order), a document appears once,
  and the ranking is cut at ``k``.

:func:`call_shape` decides how the function is called: with the query *text*
unless its first parameter is annotated as :class:`Query`, and with ``k`` only
when it takes a second positional argument.
"""

from __future__ import annotations

import inspect
import math
import numbers
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from evalframe.core.errors import ConfigError, PluginError
from evalframe.core.types import Ranking, normalise_id
from evalframe.plugin.protocols import Query

__all__ = ["CallShape", "Item", "build_ranking", "call_shape", "coerce_id", "to_ranking"]

#: One result before validation: a raw id and a score, or ``None`` for "no score".
Item = tuple[Any, Any]

EXPECTED = (
    "a list of ids, of (id, score) pairs or {'id', 'score'} dicts, "
    "a {id: score} dict, an evalframe Ranking, or None"
)


def _integral(value: Any) -> bool:
    """An int or an integer NumPy scalar (``np.int64``: FAISS's ids), not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def coerce_id(value: Any) -> str | None:
    """The id as a string, or ``None`` when it cannot be an id (``bool``, empty, a list...)."""
    if isinstance(value, bool):
        return None
    if _integral(value):
        return str(int(value))
    if isinstance(value, str) and value.strip():
        return value
    return None


def _score(value: Any) -> float | None:
    """A finite real number as a float: NumPy's too (vector stores give ``np.float32``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    f = float(value)
    return f if math.isfinite(f) else None


def build_ranking(
    query_id: str,
    items: Sequence[Item],
    k: int,
    *,
    source: str,
    duplicates: Literal["error", "first"] = "error",
    duplicates_key: str | None = None,
    **extra: Any,
) -> Ranking:
    """A best-first ranking of at most ``k`` documents from ``(id, score)`` items.

    ``source`` names who produced the items (``function mymod:search``) for
    error messages. Scores must be all numbers or all ``None``; without scores
    the given order is the ranking and the scores are ``n, n-1, ..., 1``. With
    scores, items are sorted by score, highest first (stable, so ties keep the
    given order). ``duplicates="error"`` reports a repeated id as a
    :class:`PluginError` naming the query; ``"first"`` keeps the first one.
    ``duplicates_key``: the caller's setting for that (``retriever.duplicates``),
    named in the error's hint when the caller has one.
    """
    ids: list[str] = []
    raw_scores: list[Any] = []
    seen: set[str] = set()
    for position, (raw_id, raw_score) in enumerate(items, start=1):
        doc = coerce_id(raw_id)
        if doc is None:
            raise PluginError(
                f"{source} returned an invalid document id for query {query_id!r} "
                f"(result {position})",
                expected="a non-empty string or an integer",
                got=repr(raw_id)[:80],
            )
        try:
            doc = normalise_id(doc)
        except ValueError as exc:  # a space inside: a TREC run could not hold it
            cut = "surrogate" in str(exc)  # half a UTF-16 pair: an emoji cut in two
            raise PluginError(
                f"{source} returned a document id evalframe cannot keep for query "
                f"{query_id!r} (result {position}): {exc}",
                got=None if cut else repr(raw_id)[:80],  # the message quotes it already
                hint="the service cut a character of that id in two: fix it there"
                if cut
                else "ids are single words: map the service's ids to ones without spaces",
            ) from None
        if doc in seen:
            if duplicates == "first":
                continue
            raise PluginError(
                f"{source} returned document {doc!r} twice for query {query_id!r}",
                hint="return each document once (deduplicate chunk hits per document "
                "before returning them)"
                + (
                    f", or set {duplicates_key}=first to keep each document's first, "
                    "best-ranked occurrence"
                    if duplicates_key
                    else ""
                ),
            )
        seen.add(doc)
        ids.append(doc)
        raw_scores.append(raw_score)

    given = [s is not None for s in raw_scores]
    if any(given) and not all(given):
        raise PluginError(
            f"{source} gave scores for some documents but not others for query {query_id!r}",
            hint="give every result a score, or none (then the order is the ranking)",
        )
    if ids and all(given):
        scores: list[float] = []
        for doc, raw in zip(ids, raw_scores, strict=True):
            value = _score(raw)
            if value is None:
                raise PluginError(
                    f"{source} gave document {doc!r} a score that is not a finite number "
                    f"for query {query_id!r}",
                    got=repr(raw)[:80],
                )
            scores.append(value)
        order = sorted(range(len(ids)), key=lambda i: -scores[i])  # stable: ties keep order
        pairs = [(ids[i], scores[i]) for i in order]
    else:
        n = len(ids)
        pairs = [(doc, float(n - i)) for i, doc in enumerate(ids)]
    return Ranking.from_pairs(query_id, pairs[: max(k, 0)], **extra)


def to_ranking(query_id: str, result: Any, k: int, *, name: str, key: str) -> Ranking | None:
    """What a Python retriever ``name`` returned for one query, as a Ranking (see module doc).

    A shape that is none of the accepted ones is a :class:`ConfigError` at
    ``key`` (the setting that chose the function); a bad id or score inside an
    accepted shape is a :class:`PluginError` from :func:`build_ranking`.
    """
    source = f"retriever {name}"

    def wrong(got: str) -> ConfigError:
        return ConfigError(
            f"{name} returned {got} for query {query_id!r}", key=key, expected=EXPECTED
        )

    if result is None:
        return None
    if isinstance(result, Ranking):
        if result.query_id != query_id:
            raise PluginError(
                f"{source} returned a Ranking for query {result.query_id!r} when asked "
                f"for {query_id!r}",
                hint="build it with Ranking.from_pairs(query.id, pairs)",
            )
        items: list[Item] = list(result.pairs())
        extra = result.model_dump(include={"confidence", "answer", "latency_ms", "tokens"})
        return build_ranking(query_id, items, k, source=source, **extra)
    if isinstance(result, Mapping):
        return build_ranking(query_id, list(result.items()), k, source=source)
    if isinstance(result, (str, bytes)) or not isinstance(result, Sequence):
        raise wrong(f"a {type(result).__name__}")
    items = []
    for i, entry in enumerate(result, start=1):
        if isinstance(entry, str) or _integral(entry):
            items.append((entry, None))
        elif isinstance(entry, (tuple, list)) and len(entry) == 2:
            items.append((entry[0], entry[1]))
        elif isinstance(entry, Mapping) and "id" in entry:
            items.append((entry["id"], entry.get("score")))
        else:
            raise wrong(f"result {i} = {entry!r:.60}")
    return build_ranking(query_id, items, k, source=source)


@dataclass(frozen=True)
class CallShape:
    """How a retriever function is called: ``fn(arg, k)`` or ``fn(arg)``, arg = text or Query."""

    pass_k: bool
    wants_query: bool

    def call(self, fn: Callable[..., Any], query: Query, k: int) -> Any:
        arg = query if self.wants_query else query.text
        return fn(arg, k) if self.pass_k else fn(arg)


def _annotated_query(param: inspect.Parameter) -> bool:
    ann = param.annotation
    if ann is inspect.Parameter.empty:
        return False
    if ann is Query:
        return True
    text = ann if isinstance(ann, str) else getattr(ann, "__name__", None) or str(ann)
    return re.search(r"\bQuery\b", text) is not None


def call_shape(
    fn: Callable[..., Any],
    *,
    name: str,
    key: str,
    query_arg: Literal["auto", "text", "query"] = "auto",
) -> CallShape:
    """Whether ``fn`` takes ``k`` and whether it wants the :class:`Query` or the text.

    ``k`` is passed when the function takes two positional arguments (or
    ``*args``); a builtin without a signature is called with ``(query, k)``.
    ``query_arg="auto"`` passes the Query when the first parameter is
    annotated as one, else the text. Something that is not callable, or that
    requires more than the query and ``k``, is refused here (a
    :class:`ConfigError` at ``key``), not left to fail on the first query.
    """
    if not callable(fn):
        raise ConfigError(
            f"{name} is a {type(fn).__name__}, which cannot be called",
            key=key,
            expected="a function search(query) or search(query, k)",
        )
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        sig = None  # a builtin without a signature: call it with (query, k)
    first: inspect.Parameter | None = None
    if sig is None:
        pass_k = True
    else:
        kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        params = [p for p in sig.parameters.values() if p.kind in kinds]
        varargs = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in sig.parameters.values())
        if not params and not varargs:
            raise ConfigError(
                f"{name} takes no positional argument; it must accept the query",
                key=key,
                expected="def search(query, k)",
            )
        pass_k = varargs or len(params) >= 2
        # evalframe passes (query) or (query, k): any other parameter needs a default
        empty = inspect.Parameter.empty
        positional = [p.name for p in params if p.default is empty]
        keyword = [
            p.name
            for p in sig.parameters.values()
            if p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is empty
        ]
        if len(positional) > 2 or keyword:
            needs = ", ".join([*positional, *(f"{k}=" for k in keyword)])
            raise ConfigError(
                f"{name} requires the arguments ({needs}), and evalframe passes only the "
                "query and k",
                key=key,
                expected="def search(query, k) or def search(query), other parameters with "
                "a default",
                hint="give the other parameters a default, or bind them first: "
                "functools.partial(search, index=my_index)",
            )
        first = params[0] if params else None
    if query_arg == "auto":
        wants_query = first is not None and _annotated_query(first)
    else:
        wants_query = query_arg == "query"
    return CallShape(pass_k=pass_k, wants_query=wants_query)
