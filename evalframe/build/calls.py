"""Role calls: cached and resumable, concurrent under ``max_concurrency``, within a budget.

Every reply goes into the call cache as soon as it arrives (one entry per
call, in the ``author``/``oracle``/``adversary``/``judge`` namespaces of the
cache folder, beside mining's ``solver`` and the retrieval cache's ``runs``).
A key covers the role plugin's name, version, config (secret-looking fields
left out) and ``cache_identity()``, the request, and a fingerprint of the
source tree's content. So after ``kill -9``, running the same command again
asks no role anything it already answered; only calls in flight at the kill,
at most ``max_concurrency``, are asked again. The cache is
:class:`evalframe.mine.cache.CallCache` over an
:class:`~evalframe.core.store.EntryStore`, the same as mining's.

The budget: the build refuses to start when the estimated calls or tokens
exceed ``budget.max_calls`` / ``budget.max_tokens`` (:func:`estimate`), and
stops, resumable, if the tokens actually spent reach ``budget.max_tokens``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, TypeVar

from pydantic import BaseModel

from evalframe.build.config import BuildConfig, Resolved
from evalframe.core.errors import ConfigError, PluginError
from evalframe.core.store import EntryStore, FileEntryStore
from evalframe.mine.cache import CallCache, plugin_fingerprint
from evalframe.plugin.protocols import PluginContext
from evalframe.plugin.roles import ROLES, Adversary, Author, Judge, Oracle, RoleReply

__all__ = ["Estimate", "RoleCaller", "Spend", "estimate", "now", "open_store", "run_concurrently"]

PROTOCOLS: dict[str, tuple[type, str]] = {
    "author": (Author, "author"),
    "oracle": (Oracle, "answer"),
    "adversary": (Adversary, "review"),
    "judge": (Judge, "judge"),
}
#: The field a role's record carries its time in; filled when evalframe receives it.
STAMP = {
    "author": "created_at",
    "oracle": "created_at",
    "adversary": "reviewed_at",
    "judge": "judged_at",
}
#: The provenance field naming who wrote the record.
AUTHORED_BY = {
    "author": ("authored_by", "query-author"),
    "oracle": ("authored_by", "oracle"),
    "adversary": ("reviewed_by", "adversary"),
    "judge": ("judged_by", "judge"),
}

T = TypeVar("T")
R = TypeVar("R")


def now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def open_store(config: BuildConfig, namespace: str) -> EntryStore:
    """Where a role's replies are kept: the one place that picks the store."""
    return FileEntryStore(config.cache_dir, namespace)


@dataclass
class Spend:
    """Calls and tokens, per role: new calls (paid) and replies read from the cache."""

    max_tokens: int | None = None
    calls: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ROLES, 0))
    cached: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ROLES, 0))
    input_tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ROLES, 0))
    output_tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ROLES, 0))
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def tokens(self) -> int:
        return sum(self.input_tokens.values()) + sum(self.output_tokens.values())

    def before_call(self, role: str) -> None:
        if self.max_tokens is not None and self.tokens >= self.max_tokens:
            raise ConfigError(
                f"the build has spent {self.tokens} tokens, its budget.max_tokens "
                f"({self.max_tokens}); stopped before the next {role} call",
                key="budget.max_tokens",
                hint="every reply so far is cached: raise budget.max_tokens and re-run to resume",
            )

    def add(self, role: str, reply: RoleReply, cached: bool) -> None:
        with self._lock:
            if cached:
                self.cached[role] += 1
                return
            self.calls[role] += 1
            self.input_tokens[role] += reply.usage.input_tokens
            self.output_tokens[role] += reply.usage.output_tokens

    def merge(self, other: dict[str, Any]) -> None:
        for name in ("calls", "cached", "input_tokens", "output_tokens"):
            mine = getattr(self, name)
            for role, n in (other.get(name) or {}).items():
                mine[role] = mine.get(role, 0) + int(n)

    def to_dict(self) -> dict[str, Any]:
        return {
            "calls": dict(self.calls),
            "cached": dict(self.cached),
            "input_tokens": dict(self.input_tokens),
            "output_tokens": dict(self.output_tokens),
            "total_calls": sum(self.calls.values()),
            "total_cached": sum(self.cached.values()),
            "total_tokens": self.tokens,
        }


class RoleCaller:
    """One role plugin, built once per step, called through the call cache."""

    def __init__(self, config: BuildConfig, role: str, fingerprint: str, spend: Spend) -> None:
        resolved: Resolved = config.roles[role]
        protocol, method = PROTOCOLS[role]
        context = PluginContext(cache_dir=config.cache_dir, config_key=role)
        instance = resolved.spec.obj(resolved.config, context)
        if not isinstance(instance, protocol):
            raise PluginError(
                f"{role} plugin {resolved.spec.name!r} ({resolved.spec.module}) does not "
                f"satisfy the {protocol.__name__} protocol",
                hint=f"give it {method}(request) -> RoleReply; see evalframe.plugin.roles",
            )
        self.role = role
        self.name = resolved.spec.name
        self.model = resolved.model
        self.method: Callable[[Any], Any] = getattr(instance, method)
        use = config.cache and getattr(type(instance), "cacheable", True)
        store = open_store(config, role) if use else None
        fp = plugin_fingerprint(
            role, resolved.spec.name, resolved.spec.version, resolved.config, instance
        )
        self.cache = CallCache(store, {**fp, "source": fingerprint})
        self.spend = spend

    def key(self, request: BaseModel) -> str:
        return self.cache.key(request.model_dump(mode="json"))

    def is_cached(self, request: BaseModel) -> bool:
        store = self.cache.store
        return store is not None and store.get(self.key(request)) is not None

    def __call__(self, request: BaseModel) -> RoleReply:
        key = self.key(request)
        raw = self.cache.get(key)
        if raw is not None:
            try:
                reply = RoleReply.model_validate(raw)
            except ValueError:
                reply = None
            if reply is not None:
                self.spend.add(self.role, reply, cached=True)
                return reply
        self.spend.before_call(self.role)
        reply = self.method(request)
        if not isinstance(reply, RoleReply):
            raise PluginError(
                f"{self.role} {self.name!r} returned {type(reply).__name__}, not a RoleReply",
                hint="return evalframe.plugin.roles.RoleReply(record={...}, usage=...)",
            )
        record = dict(reply.record)
        stamp = STAMP[self.role]
        if not record.get(stamp):
            record[stamp] = now()
        who, label = AUTHORED_BY[self.role]
        if not record.get(who):
            record[who] = f"agent:{label}:{self.model}"
        reply = RoleReply(record=record, usage=reply.usage)
        self.cache.put(key, reply.model_dump(mode="json"))
        self.spend.add(self.role, reply, cached=False)
        return reply


def run_concurrently(items: Sequence[T], fn: Callable[[T], R], max_concurrency: int) -> list[R]:
    """``[fn(item) for item in items]`` on up to ``max_concurrency`` threads, in order.

    On the first error no new call starts; calls in flight finish (their
    replies are paid for, so they are cached) and the error is raised.
    """
    if not items:
        return []
    results: list[Any] = [None] * len(items)
    pool = ThreadPoolExecutor(max_workers=max_concurrency)
    try:
        futures: dict[Future[R], int] = {pool.submit(fn, item): i for i, item in enumerate(items)}
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_EXCEPTION)
            for future in done:
                error = future.exception()
                if error is not None:
                    for other in pending:
                        other.cancel()
                    raise error
                results[futures[future]] = future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return results


@dataclass(frozen=True)
class Estimate:
    """The most calls a build can make, per role, and the tokens they would cost."""

    calls: dict[str, int]
    cached_authors: int
    tokens: int

    @property
    def total(self) -> int:
        return sum(self.calls.values())

    @property
    def new(self) -> int:
        return self.total - self.cached_authors

    def line(self, config: BuildConfig) -> str:
        b = config.budget
        limits = []
        if b.max_calls is not None:
            limits.append(f"max_calls {b.max_calls}")
        if b.max_tokens is not None:
            limits.append(f"max_tokens {b.max_tokens}")
        per = ", ".join(f"{n} {r}" for r, n in self.calls.items())
        cached = f"; {self.cached_authors} author replies cached" if self.cached_authors else ""
        return (
            f"budget: at most {self.total} calls ({per}){cached}, about {self.tokens} tokens; "
            f"limit: {', '.join(limits) or 'none'}"
        )


def estimate(config: BuildConfig, slots: int, cached_authors: int) -> Estimate:
    """Every author slot is a call; each candidate costs at most one oracle, one adversary
    and one judge call (the judge runs only on structural passes: an upper bound)."""
    calls = dict.fromkeys(ROLES, slots)
    per = config.budget.tokens_per_call
    new_calls = {**calls, "author": slots - cached_authors}
    tokens = sum(n * per.get(role, 0) for role, n in new_calls.items())
    result = Estimate(calls=calls, cached_authors=cached_authors, tokens=tokens)
    b = config.budget
    if b.max_calls is not None and result.new > b.max_calls:
        raise ConfigError(
            f"the build may make {result.new} role calls ({slots} author slots, then up to one "
            f"oracle, adversary and judge call per candidate), over budget.max_calls "
            f"({b.max_calls}); nothing was called",
            key="budget.max_calls",
            hint="raise budget.max_calls, lower headroom, or shrink the plan",
        )
    if b.max_tokens is not None and tokens > b.max_tokens:
        raise ConfigError(
            f"the build may spend about {tokens} tokens (budget.tokens_per_call × calls), over "
            f"budget.max_tokens ({b.max_tokens}); nothing was called",
            key="budget.max_tokens",
            hint="raise budget.max_tokens, or shrink the plan",
        )
    return result
