"""JSON over HTTP with retries, backoff, a shared rate limit and secret headers.

Standard library only (``urllib.request``). Shared by the ``http`` and
``llm_recommender`` retrievers:

* :class:`RetrySettings` — the config fields both expose (timeout, retries,
  backoff, jitter seed, rate limit, concurrency, allow_failed_queries);
* :func:`env_headers` — header values read from environment variables, never
  from the config, and the list of secret values to redact;
* :class:`RateLimiter` — at most ``rate`` request starts per second, across
  threads and calls;
* :class:`JsonClient` — POST JSON, retrying 5xx, 429, timeouts and connection
  errors with exponential backoff and jitter; other 4xx fail at once.

Secret values never appear in logs or errors: every text that may echo a
request (an error body) goes through :meth:`JsonClient.redact`.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import random
import re
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field

from evalframe.core.errors import ConfigError
from evalframe.plugin.protocols import NOT_IN_CACHE_KEY, PluginConfig

#: how a call is made, never what it answers (kept out of the retrieval cache key)
_CALL = NOT_IN_CACHE_KEY

__all__ = [
    "JsonClient",
    "RateLimiter",
    "RequestError",
    "RetryPolicy",
    "RetrySettings",
    "check_literal_headers",
    "env_headers",
]

log = logging.getLogger("evalframe_adapters.http")

#: Statuses that say "this URL or these credentials are wrong": every query
#: would fail the same way, so they stop the run even with allow_failed_queries.
FATAL_STATUSES = frozenset({401, 403, 404, 405, 407})
#: Literal headers with these names must come from headers_from_env instead.
SECRET_HEADER = re.compile(r"(auth|token|key|secret|password|cookie|session)", re.IGNORECASE)
#: ``$VAR`` or ``${VAR}`` inside a header value (Hydra configs must use ``$VAR``:
#: OmegaConf would resolve ``${VAR}`` as one of its own interpolations).
ENV_REF = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
SNIPPET = 200


class RetrySettings(PluginConfig):
    """Config fields for a remote call: timeout, retries, backoff, rate and concurrency.

    None of them changes what the service answers, so none is in the retrieval
    cache key (``NOT_IN_CACHE_KEY``): tuning them re-uses every cached ranking.
    """

    timeout_seconds: float = Field(
        30.0, gt=0, description="timeout of one request (seconds)", json_schema_extra=_CALL
    )
    retries: int = Field(
        3,
        ge=0,
        le=20,
        description="retries after the first attempt (5xx, 429, timeouts, "
        "connection errors; other 4xx are never retried)",
        json_schema_extra=_CALL,
    )
    backoff_seconds: float = Field(
        0.5, ge=0, description="first retry delay; doubles on each retry", json_schema_extra=_CALL
    )
    backoff_max_seconds: float = Field(
        30.0, ge=0, description="cap on one retry delay", json_schema_extra=_CALL
    )
    jitter: float = Field(
        0.1,
        ge=0,
        le=1,
        description="random extra delay, as a fraction of the backoff",
        json_schema_extra=_CALL,
    )
    seed: int | None = Field(
        None, description="seed for the jitter (deterministic delays)", json_schema_extra=_CALL
    )
    rate_limit: float | None = Field(
        None,
        gt=0,
        description="at most this many requests per second (all threads, all calls)",
        json_schema_extra=_CALL,
    )
    max_concurrency: int = Field(
        4,
        ge=1,
        le=64,
        description="queries asked at once: the pipeline calls the service from this many "
        "threads, over as many reused connections",
        json_schema_extra=_CALL,
    )
    allow_failed_queries: bool = Field(
        False,
        description="a query that still fails after the retries counts as missing (and in "
        "failed_queries) instead of stopping the run",
        json_schema_extra=_CALL,
    )


class RequestError(Exception):
    """A request that failed for good: after the retries, or at once for a 4xx."""

    def __init__(self, message: str, *, status: int | None, attempts: int, fatal: bool) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.attempts = attempts
        self.fatal = fatal


def env_headers(mapping: Mapping[str, str], key: str) -> tuple[dict[str, str], list[str]]:
    """Headers whose values come from environment variables, and those secret values.

    A value is the variable's name (``MY_TOKEN``) or a text with ``$VAR``
    references (``Bearer $MY_TOKEN``; ``${VAR}`` also works outside Hydra
    configs). An unset variable is a ConfigError naming the variable.
    """
    headers: dict[str, str] = {}
    secrets: list[str] = []
    for header, spec in mapping.items():
        refs = [a or b for a, b in ENV_REF.findall(spec)] if "$" in spec else [spec]
        for var in refs:
            value = os.environ.get(var)
            if not value:
                raise ConfigError(
                    f"environment variable {var} is not set (needed for header {header!r})",
                    key=f"{key}.{header}",
                    hint=f"export {var}=... before running evalframe",
                )
            secrets.append(value)
        if "$" in spec:
            headers[header] = ENV_REF.sub(lambda m: os.environ[m.group(1) or m.group(2)], spec)
        else:
            headers[header] = os.environ[spec]
    return headers, secrets


def check_literal_headers(headers: Mapping[str, str]) -> Mapping[str, str]:
    """Reject a literal header that looks like a credential (it would land in config files)."""
    for name in headers:
        if SECRET_HEADER.search(name):
            raise ValueError(
                f"header {name!r} looks like a credential; put it in headers_from_env "
                f"({{{name}: ENV_VAR_NAME}}) so its value is read from the environment"
            )
    return headers


class RateLimiter:
    """At most ``rate`` acquisitions per second, spaced evenly, shared by all threads.

    Each caller reserves the next free slot under a lock, then sleeps until it
    (outside the lock), so waiting threads do not serialise on the lock.
    """

    def __init__(
        self,
        rate: float | None,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.interval = 1.0 / rate if rate else 0.0
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._next = -float("inf")

    def acquire(self) -> float:
        """Wait for a slot; returns how long it waited (seconds)."""
        if self.interval <= 0:
            return 0.0
        with self._lock:
            now = self._clock()
            slot = max(now, self._next)
            self._next = slot + self.interval
        wait = slot - now
        if wait > 0:
            self._sleep(wait)
        return wait


@dataclass
class RetryPolicy:
    """Exponential backoff with jitter: ``min(cap, base * 2**n) * (1 + jitter * U[0,1))``."""

    retries: int = 3
    backoff: float = 0.5
    backoff_max: float = 30.0
    jitter: float = 0.1
    seed: int | None = None
    _rng: random.Random = field(init=False, repr=False)
    _lock: threading.Lock = field(init=False, repr=False, default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    @classmethod
    def from_settings(cls, s: RetrySettings) -> RetryPolicy:
        return cls(s.retries, s.backoff_seconds, s.backoff_max_seconds, s.jitter, s.seed)

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (0-based)."""
        base = float(min(self.backoff_max, self.backoff * (2**retry)))
        with self._lock:
            base *= 1.0 + self.jitter * self._rng.random()
        if retry_after is not None:
            base = max(base, min(retry_after, self.backoff_max))
        return base


def _snippet(raw: bytes) -> str:
    text = raw.decode("utf-8", errors="replace").strip().replace("\n", " ")
    return text[:SNIPPET] + ("…" if len(text) > SNIPPET else "")


def _retry_after(headers: Any) -> float | None:
    value = headers.get("Retry-After") if headers is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None  # an HTTP date: ignore, use the backoff


class JsonClient:
    """POSTs JSON to one URL with retries; counts requests (for tests and reports)."""

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str],
        secrets: list[str],
        timeout: float,
        policy: RetryPolicy,
        limiter: RateLimiter,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.url = url
        self.headers = {"Content-Type": "application/json", "Accept": "application/json"}
        self.headers.update(headers)
        self._secrets = [s for s in secrets if s]
        self.timeout = timeout
        self.policy = policy
        self.limiter = limiter
        self._sleep = sleep
        self._lock = threading.Lock()
        self.requests = 0

    def redact(self, text: str) -> str:
        """The text with every secret header value replaced by ``***``."""
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    def _once(self, data: bytes) -> tuple[Any, int | None, str | None, bool, float | None]:
        """One attempt: (json, status, error, retryable, retry_after)."""
        self.limiter.acquire()
        with self._lock:
            self.requests += 1
        request = urllib.request.Request(self.url, data=data, headers=self.headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read()
                status = response.status
        except urllib.error.HTTPError as exc:
            try:
                body = _snippet(exc.read() or b"")
                after = _retry_after(exc.headers)
            finally:
                exc.close()
            retryable = exc.code >= 500 or exc.code == 429
            message = f"HTTP {exc.code} {exc.reason}: {body or '(empty body)'}"
            return None, exc.code, message, retryable, after
        except TimeoutError:
            return None, None, f"timed out after {self.timeout:g}s", True, None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, TimeoutError):
                return None, None, f"timed out after {self.timeout:g}s", True, None
            return None, None, f"connection failed: {reason}", True, None
        except (OSError, http.client.HTTPException) as exc:
            return None, None, f"connection failed: {type(exc).__name__}: {exc}", True, None
        try:
            return json.loads(raw), status, None, False, None
        except (json.JSONDecodeError, UnicodeDecodeError):
            return None, status, f"the response is not JSON: {_snippet(raw)!r}", False, None

    def post(self, body: Any, *, what: str) -> Any:
        """The decoded JSON response, or :class:`RequestError` after the retries.

        ``what`` names the request in log lines (``query 'q3'``).
        """
        data = json.dumps(body).encode("utf-8")
        attempts = 0
        while True:
            attempts += 1
            value, status, error, retryable, after = self._once(data)
            if error is None:
                return value
            error = self.redact(error)
            if not retryable or attempts > self.policy.retries:
                if retryable:
                    log.warning("%s: giving up after %d attempts: %s", what, attempts, error)
                raise RequestError(
                    error,
                    status=status,
                    attempts=attempts,
                    fatal=status in FATAL_STATUSES,
                )
            delay = self.policy.delay(attempts - 1, after)
            log.info("%s: attempt %d failed (%s); retrying in %.2fs", what, attempts, error, delay)
            self._sleep(delay)
