"""JSON over HTTP with pooled connections, a whole-request timeout, retries, and a rate limit.

Shared by the ``http`` and ``llm_recommender`` retrievers:

* :class:`RetrySettings` — the config fields both expose (timeout, retries,
  backoff, jitter seed, rate limit, concurrency, allow_failed_queries);
* :func:`env_headers` — header values read from environment variables, never
  from the config, and the list of secret values to redact;
* :class:`RateLimiter` — at most ``rate`` request starts per second, across
  threads and calls;
* :class:`JsonClient` — POST JSON, retrying 5xx, 429 (waiting at least its
  ``Retry-After``), timeouts and connection errors with exponential backoff
  and jitter; other 4xx fail at once.

The client is httpcore, the connection pool under httpx: one pool per
client, as many connections as ``max_concurrency``, each reused (keep-alive)
by the threads the pipeline runs. It is used directly rather than through
httpx for one reason: its public ``network_backend`` hook is what lets
``timeout_seconds`` bound a *whole* request. Every connect, read and write
of an attempt gets only the time left before the attempt's deadline, so a
server that drips a byte a second times out like one that never answers
(a per-read timeout would wait forever). Proxies named by ``HTTP_PROXY`` /
``HTTPS_PROXY`` / ``NO_PROXY`` are used, as urllib used them.

Secret values never appear in logs or errors: every text that may echo a
request (an error body) goes through :meth:`JsonClient.redact`.
"""

from __future__ import annotations

import email.utils
import json
import logging
import math
import os
import random
import re
import ssl
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpcore
from pydantic import Field

from evalframe.core.errors import ConfigError
from evalframe.core.secrets import (
    is_secret_param,
    names_a_secret_itself,
    redact_known,
    remember_secret,
    url_secrets,
)
from evalframe.plugin.protocols import NOT_IN_CACHE_KEY, PluginConfig
from evalframe.retrieval.stopping import Stopped, stop_requested, wait_or_stop

#: how a call is made, never what it answers (kept out of the retrieval cache key)
_CALL = NOT_IN_CACHE_KEY

__all__ = [
    "JsonClient",
    "RateLimiter",
    "RequestError",
    "RetryPolicy",
    "RetrySettings",
    "check_literal_headers",
    "check_url",
    "env_headers",
]

log = logging.getLogger("evalframe_adapters.http")

#: Statuses that say "this URL or these credentials are wrong": every query
#: would fail the same way, so they stop the run even with allow_failed_queries.
FATAL_STATUSES = frozenset({401, 403, 404, 405, 407})
#: Literal headers with these names must come from headers_from_env instead.
#: ``$VAR`` or ``${VAR}`` inside a header value (Hydra configs must use ``$VAR``:
#: OmegaConf would resolve ``${VAR}`` as one of its own interpolations).
ENV_REF = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
SNIPPET = 200
#: The longest a timeout, a backoff or a delay between requests may be (seconds): one
#: hour. Far beyond it the platform's time functions overflow (1e12 s is not a
#: timeout a socket can hold), and a wait that long is a typo, not a setting.
MAX_WAIT_SECONDS = 3600.0
#: The fewest requests per second rate_limit may ask for (one every 1,000 s).
MIN_RATE = 0.001
#: The default cap on one answer's size: a ranking of a thousand hits with their text is
#: a few MB; a service that sends more is broken (a runaway id, an endless body).
DEFAULT_MAX_RESPONSE_BYTES = 32 << 20


class RetrySettings(PluginConfig):
    """Config fields for a remote call: timeout, retries, backoff, rate and concurrency.

    None of them changes what the service answers, so none is in the retrieval
    cache key (``NOT_IN_CACHE_KEY``): tuning them re-uses every cached ranking.
    """

    timeout_seconds: float = Field(
        30.0,
        gt=0,
        le=MAX_WAIT_SECONDS,
        description="the most one request may take, from connecting to the answer's last byte "
        "(seconds, at most 3600); a retry gets the same again",
        json_schema_extra=_CALL,
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
        0.5,
        ge=0,
        le=MAX_WAIT_SECONDS,
        description="first retry delay (seconds, at most 3600); doubles on each retry",
        json_schema_extra=_CALL,
    )
    backoff_max_seconds: float = Field(
        30.0,
        ge=0,
        le=MAX_WAIT_SECONDS,
        description="cap on one retry delay (seconds, at most 3600); a 429 or 5xx whose "
        "Retry-After asks for longer fails the query rather than retrying early",
        json_schema_extra=_CALL,
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
        ge=MIN_RATE,
        description="at most this many requests per second (all threads, all calls); "
        "at least 0.001 (one request every 1,000 s)",
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
    max_response_bytes: int = Field(
        DEFAULT_MAX_RESPONSE_BYTES,
        ge=1024,
        description="the largest answer read (bytes, default 32 MiB); a larger one fails its "
        "query (counted missing with allow_failed_queries) without being read whole",
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

    def __init__(
        self,
        message: str,
        *,
        status: int | None,
        attempts: int,
        fatal: bool,
        hint: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.attempts = attempts
        self.fatal = fatal
        #: how to fix it, when the client knows better than the adapter (an answer too large)
        self.hint = hint


def check_url(value: str) -> str:
    """An ``http://`` or ``https://`` URL with a host and a port a socket can use (a
    pydantic validator's ``ValueError`` otherwise: the config check names the key)."""
    if not value.startswith(("http://", "https://")):
        raise ValueError("the URL must start with http:// or https://")  # the error adds got
    try:
        parts = urllib.parse.urlsplit(value)
        port = parts.port  # the text after the colon, read: ValueError when it is no port
    except ValueError as exc:
        raise ValueError(
            f"the URL cannot be requested: {exc} (a port is a whole number from 1 to 65535, "
            "e.g. http://localhost:8000/search)"
        ) from None
    if not parts.hostname:
        raise ValueError("the URL has no host (e.g. http://localhost:8000/search)")
    if port == 0:
        raise ValueError("the URL's port is 0; a port is a whole number from 1 to 65535")
    return value


#: an environment variable's name, as ``*_env`` and ``headers_from_env`` settings hold one
VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def env_headers(
    mapping: Mapping[str, str], key: str, *, keyed_by_header: bool = True
) -> tuple[dict[str, str], list[str]]:
    """Headers whose values come from environment variables, and those secret values.

    A value is the variable's name (``MY_TOKEN``) or a text with ``$VAR``
    references (``Bearer $MY_TOKEN``; ``${VAR}`` also works outside Hydra
    configs). An unset variable is a ConfigError naming the variable, under
    ``key.<header>`` (the mapping is the user's setting), or under ``key`` alone
    when ``keyed_by_header`` is false (a plugin built the header from ``key``).
    """
    headers: dict[str, str] = {}
    secrets: list[str] = []
    for header, spec in mapping.items():
        where = f"{key}.{header}" if keyed_by_header else key
        if names_a_secret_itself(spec) or ("$" not in spec and not VARIABLE_NAME.fullmatch(spec)):
            # not quoted: a value where a name belongs is most likely the secret itself
            # (`${oc.env:TOKEN}` resolved, or the key pasted), remembered and redacted
            raise ConfigError(
                f"the value of header {header!r} is neither an environment variable's name "
                "nor a text with $NAME in it: it may be the secret itself (a ${oc.env:...} "
                "here is replaced by the variable's value before evalframe sees it)",
                key=where,
                hint=f"give the variable's name: {key}={{{header}: MY_TOKEN}}, or "
                f"'{key}={{{header}: \"Bearer $MY_TOKEN\"}}'",
            )
        refs = [a or b for a, b in ENV_REF.findall(spec)] if "$" in spec else [spec]
        for var in refs:
            value = os.environ.get(var)
            if not value:
                raise ConfigError(
                    f"environment variable {var} is not set (needed for header {header!r})",
                    key=where,
                    hint=f"export {var}=... before running evalframe",
                )
            secrets.append(value)
        if "$" in spec:
            headers[header] = ENV_REF.sub(lambda m: os.environ[m.group(1) or m.group(2)], spec)
        else:
            headers[header] = os.environ[spec]
    return headers, secrets


def check_literal_headers(headers: Mapping[str, str]) -> Mapping[str, str]:
    """Reject a literal header that looks like a credential (it would land in config files).

    The core's rule for what a request carries (``is_secret_param``), so the header
    this refuses is the one every output redacts, and the one the config check
    refuses before anything is written."""
    for name in headers:
        if is_secret_param(name):
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


class FailureTally:
    """The queries a service adapter let fail under ``allow_failed_queries``: how many of
    those asked, and the first one's error, for the note said at the end of the run
    (counted as missing, they were otherwise scored 0 or skipped without a word, and a
    service that was down read as a run that ran). Shared by the pipeline's threads."""

    def __init__(self) -> None:
        self.failed = 0
        self.asked = 0
        self.first: tuple[str, str] | None = None
        self._lock = threading.Lock()

    def ask(self) -> None:
        with self._lock:
            self.asked += 1

    def fail(self, query_id: str, message: str) -> None:
        with self._lock:
            self.failed += 1
            if self.first is None:
                self.first = (query_id, message)

    def notes(self) -> list[str]:
        if not self.failed or self.first is None:
            return []
        n, asked = self.failed, self.asked
        qid, message = self.first
        every = n == asked
        return [
            f"{'every one' if every else f'{n}'} of the {asked} queries asked failed at the "
            f"service after their retries (first: query {qid!r}, {message}), and "
            f"{'is' if n == 1 else 'are'} scored as missing (retriever.allow_failed_queries="
            "true); a re-run asks them again"
            + (
                ": the service was down or misconfigured, so these numbers measure nothing"
                if every
                else ""
            )
        ]


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
        if retry_after is not None:  # never sooner than the service asked (at most the cap:
            base = max(base, min(retry_after, self.backoff_max))  # longer fails the query)
        return base


@dataclass(frozen=True)
class _Attempt:
    """What one request gave: the decoded JSON, or an error (and whether to retry)."""

    value: Any = None
    status: int | None = None
    error: str | None = None
    retryable: bool = False
    retry_after: float | None = None
    hint: str | None = None


def _size(n: int) -> str:
    """A byte count as people read it: ``512 bytes``, ``48.0 KiB``, ``50.0 MiB``."""
    if n < 1024:
        return f"{n:,} bytes"
    if n < 1 << 20:
        return f"{n / 1024:.1f} KiB"
    if n < 1 << 30:
        return f"{n / (1 << 20):.1f} MiB"
    return f"{n / (1 << 30):.1f} GiB"


def _snippet(raw: bytes) -> str:
    head = raw[: 4 * SNIPPET + 4]  # enough bytes for SNIPPET characters: a 30 MB body is not
    text = head.decode("utf-8", errors="replace").strip().replace("\n", " ")  # decoded whole
    cut = len(text) > SNIPPET or len(head) < len(raw)
    return text[:SNIPPET] + ("…" if cut else "")


def _retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: a number, or an HTTP date."""
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None  # unreadable: the backoff decides
    return max(when.timestamp() - time.time(), 0.0)


class _Deadline(threading.local):
    """When the current thread's request must be over (``None``: no deadline)."""

    at: float | None = None


_DEADLINE = _Deadline()


def _left(timeout: float | None, late: type[Exception]) -> float | None:
    """The time an I/O call may take: its own timeout, cut to what is left before the deadline."""
    at = _DEADLINE.at
    if at is None:
        return timeout
    left = at - time.monotonic()
    if left <= 0:
        raise late("the request's deadline (timeout_seconds) passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """A connection whose every read and write ends by the request's deadline."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        left = _left(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, left))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's own sockets, wrapped in :class:`_DeadlineStream`."""

    def __init__(self) -> None:
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        left = _left(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(
            self._inner.connect_tcp(host, port, left, local_address, socket_options)
        )

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        left = _left(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.connect_unix_socket(path, left, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def _pool(url: str, connections: int) -> httpcore.ConnectionPool:
    """A pool of ``connections`` kept-alive connections, through the environment's proxy."""
    backend = _DeadlineBackend()
    parts = urllib.parse.urlsplit(url)
    proxy = urllib.request.getproxies().get(parts.scheme)
    if proxy and not urllib.request.proxy_bypass(parts.hostname or ""):
        return httpcore.HTTPProxy(
            proxy_url=proxy, max_connections=connections, network_backend=backend
        )
    return httpcore.ConnectionPool(max_connections=connections, network_backend=backend)


class JsonClient:
    """POSTs JSON to one URL with retries over pooled connections; counts requests.

    Thread-safe: the pipeline's threads share one client, its pool of
    ``connections`` connections, its rate limiter and its retry policy.
    """

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str],
        secrets: list[str],
        timeout: float,
        policy: RetryPolicy,
        limiter: RateLimiter,
        connections: int = 4,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        key_prefix: str = "retriever.",
        sleep: Callable[[float], None] = time.sleep,
        warn_on_giving_up: bool = False,
    ) -> None:
        self.url = url
        # A request that fails for good is a warning only when the run goes on without it
        # (allow_failed_queries): one line naming each query lost. Otherwise the run
        # stops with that error, and the queries in flight beside it each logging their
        # own "giving up" (up to twice max_concurrency timestamped lines) said it again.
        self.warn_on_giving_up = warn_on_giving_up
        self.max_response_bytes = max_response_bytes
        self.key_prefix = key_prefix  # where the settings are, for hints
        self.headers = {"Content-Type": "application/json", "Accept": "application/json"}
        self.headers.update(headers)
        # and what the URL carries (a key in its query, a password or token before its
        # host, from the environment): a service's error page may echo the request line
        self._secrets = [s for s in [*secrets, *url_secrets(url)] if s]
        # ... and wherever else the run quotes what the service sent: an id that echoes
        # the request ("returned a document id evalframe cannot keep ... 'Bearer sk-...'")
        # is quoted by the core, which redacts what was remembered
        for secret in self._secrets:
            remember_secret(secret)
        self.timeout = timeout
        self.policy = policy
        self.limiter = limiter
        self._sleep = sleep
        self._lock = threading.Lock()
        self._pool = _pool(url, connections)
        self.requests = 0

    def close(self) -> None:
        """Close the pooled connections."""
        self._pool.close()

    def redact(self, text: str, *, answer: bool = False) -> str:
        """The text with every secret header value, and each credential of the URL,
        replaced by ``***``, and every other secret of the run's settings redacted (a
        body field such as ``api_key: ${oc.env:TOKEN}``, which a service may quote back
        in its answer: :func:`~evalframe.core.secrets.redact_known`). ``answer``: a
        service's answer text, read for data (ids) and long, loses whole secrets only,
        not the pieces of one an error message may quote cut short."""
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return redact_known(text, pieces=not answer)

    def _once(self, data: bytes) -> _Attempt:
        """One attempt, over within ``timeout`` s, its answer read up to ``max_response_bytes``."""
        self.limiter.acquire()
        with self._lock:
            self.requests += 1
        t = self.timeout
        # httpcore's type is a list of (bytes | str) pairs, or a mapping of them: a
        # dict[str, str] is one, but dict's invariance hides that from mypy
        headers = [*self.headers.items(), ("Content-Length", str(len(data)))]
        _DEADLINE.at = time.monotonic() + t
        try:
            with self._pool.stream(
                "POST",
                self.url,
                headers=headers,
                content=data,
                extensions={"timeout": {"connect": t, "read": t, "write": t, "pool": t}},
            ) as response:
                status = response.status
                found = {
                    k.decode("latin-1").lower(): v.decode("latin-1") for k, v in response.headers
                }
                raw, size = self._read(response, found.get("content-length"))
        except httpcore.TimeoutException:
            return _Attempt(error=f"timed out after {t:g}s", retryable=True)
        except (httpcore.NetworkError, httpcore.ProtocolError, httpcore.ProxyError, OSError) as exc:
            reason = str(exc) or type(exc).__name__
            return _Attempt(error=f"connection failed: {reason}", retryable=True)
        except httpcore.UnsupportedProtocol as exc:
            return _Attempt(error=f"the URL cannot be requested: {exc}")
        finally:
            _DEADLINE.at = None
        if status >= 300:  # the body is only quoted: what was read of it is enough
            body = _snippet(raw)
            reason = response.extensions.get("reason_phrase", b"").decode("latin-1")
            message = f"HTTP {status}{' ' + reason if reason else ''}: {body or '(empty body)'}"
            if 300 <= status < 400 and "location" in found:
                message += f" (redirected to {found['location']}; set the URL to that)"
            return _Attempt(
                status=status,
                error=message,
                retryable=status >= 500 or status == 429,
                retry_after=_retry_after(found.get("retry-after")),
            )
        if size is not None:
            return _Attempt(
                status=status,
                error=f"the answer is {size}, over the limit of "
                f"{_size(self.max_response_bytes)} "
                f"({self.key_prefix}max_response_bytes={self.max_response_bytes})",
                hint=f"raise {self.key_prefix}max_response_bytes if the service's answers are "
                "really that large; otherwise the service is sending more than a ranking "
                "(a runaway id or field)",
            )
        try:
            return _Attempt(value=json.loads(raw), status=status)
        except (ValueError, RecursionError):
            # ValueError: not JSON, not text, or an integer of more than 4,300 digits;
            # RecursionError: nested deeper than Python's parser goes ([[[[...)
            return _Attempt(
                status=status, error=f"the response is not JSON we can read: {_snippet(raw)!r}"
            )

    def _read(self, response: httpcore.Response, declared: str | None) -> tuple[bytes, str | None]:
        """The body, and None; or, for a body over ``max_response_bytes``, what was read of
        it (enough to quote) and its size as said (``more than 32.0 MiB`` when unsaid)."""
        limit = self.max_response_bytes
        said = int(declared) if declared is not None and declared.strip().isdigit() else None
        chunks: list[bytes] = []
        read = 0
        for chunk in response.iter_stream():
            chunks.append(chunk)
            read += len(chunk)
            # leaving the stream early closes the connection with the rest unread
            if said is not None and said > limit:
                return b"".join(chunks), _size(said)
            if read > limit:
                return b"".join(chunks), f"more than {_size(limit)}"
        return b"".join(chunks), None

    def post(self, body: Any, *, what: str) -> Any:
        """The decoded JSON response, or :class:`RequestError` after the retries.

        ``what`` names the request in log lines (``query 'q3'``).
        """
        data = json.dumps(body).encode("utf-8")
        attempts = 0
        while True:
            attempts += 1
            attempt = self._once(data)
            if attempt.error is None:
                return attempt.value
            error = self.redact(attempt.error)
            wait = attempt.retry_after
            if attempt.retryable and wait is not None and wait > self.policy.backoff_max:
                # asked again sooner than the service said, a rate-limited key may be banned:
                # the query fails, and the message says how to wait that long
                raise RequestError(
                    f"{error}; the service asked to wait {wait:.0f} s before retrying "
                    f"(Retry-After), longer than backoff_max_seconds "
                    f"({self.policy.backoff_max:g} s), so it was not asked again",
                    status=attempt.status,
                    attempts=attempts,
                    fatal=False,
                    hint=f"set retriever.backoff_max_seconds={math.ceil(wait)} to wait that "
                    "long, or ask less often (rate_limit, max_concurrency)",
                )
            if not attempt.retryable or attempts > self.policy.retries:
                if attempt.retryable and attempts > 1:  # one attempt: the error says it all
                    level = logging.WARNING if self.warn_on_giving_up else logging.INFO
                    log.log(level, "%s: giving up after %d attempts: %s", what, attempts, error)
                raise RequestError(
                    error,
                    status=attempt.status,
                    attempts=attempts,
                    fatal=attempt.status in FATAL_STATUSES,
                    hint=attempt.hint,
                )
            delay = self.policy.delay(attempts - 1, attempt.retry_after)
            log.info("%s: attempt %d failed (%s); retrying in %.2fs", what, attempts, error, delay)
            # the run stopped on an earlier query: this answer would never be read, so
            # the retry (a Retry-After, a backoff of up to backoff_max) is not waited out
            if self._sleep is time.sleep:  # waited in slices, looking whether to stop
                stopped = wait_or_stop(delay)
            else:  # a test's clock: one call, as it counts them
                self._sleep(delay)
                stopped = stop_requested()
            if stopped:
                log.info("%s: not retried: the run stopped on an earlier query", what)
                raise Stopped()
