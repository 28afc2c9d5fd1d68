"""A solver behind an HTTP endpoint: POST an evalframe.solve/1 request, read the answer.

One ``httpx.Client`` is shared by the miner's threads (it is thread-safe and
keeps connections alive). 5xx, 429, timeouts and connection errors are
retried with exponential backoff; other 4xx fail at once. Header values come
from environment variables (``headers_from_env``), never from the config, and
never appear in an error.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from pydantic import Field, field_validator

from evalframe.core.errors import ConfigError, PluginError
from evalframe.plugin.protocols import Answer, Attempt, PluginConfig, PluginContext
from evalframe.plugin.registry import solver

from .protocol import parse_answer, solve_request

__all__ = ["HttpSolver", "HttpSolverConfig"]

#: Literal header names that look like credentials must come from the environment.
_SECRET_WORDS = ("auth", "token", "key", "secret", "password", "cookie")


class HttpSolverConfig(PluginConfig):
    """An endpoint that answers evalframe.solve/1 requests with {"answer": ...}."""

    url: str = Field(description="the endpoint (http:// or https://)")
    headers: dict[str, str] = Field(
        default_factory=dict, description="literal headers (never credentials)"
    )
    headers_from_env: dict[str, str] = Field(
        default_factory=dict, description="header -> environment variable holding its value"
    )
    timeout_seconds: float = Field(120.0, gt=0, description="one request's time limit")
    retries: int = Field(3, ge=0, le=20, description="retries after 5xx, 429, timeouts")
    backoff_seconds: float = Field(1.0, ge=0, description="first retry delay; doubles each time")

    @field_validator("url")
    @classmethod
    def _http(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("url must start with http:// or https://")
        return value

    @field_validator("headers")
    @classmethod
    def _no_secrets(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if any(word in name.lower() for word in _SECRET_WORDS):
                raise ValueError(
                    f"header {name!r} looks like a credential: put it in headers_from_env "
                    f"({{{name}: ENV_VAR}}) so its value stays out of config files"
                )
        return value


@solver("http", config=HttpSolverConfig)
class HttpSolver:
    """Your agent as a web service: POST a JSON request, get {"answer": ...} back."""

    def __init__(self, config: HttpSolverConfig, context: PluginContext) -> None:
        import httpx

        self.config = config
        headers = dict(config.headers)
        self._secrets: list[str] = []
        for header, var in config.headers_from_env.items():
            value = os.environ.get(var)
            if not value:
                raise ConfigError(
                    f"environment variable {var} is not set (needed for header {header!r})",
                    key=f"{context.config_key or 'solver'}.headers_from_env.{header}",
                    hint=f"export {var}=... before running evalframe mine",
                )
            headers[header] = value
            self._secrets.append(value)
        self._client = httpx.Client(timeout=config.timeout_seconds, headers=headers)
        self._lock = threading.Lock()
        self.requests = 0

    def cache_identity(self) -> Any:
        return None  # the url and settings are in the config; credentials must not be

    def _redact(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    def solve(self, attempt: Attempt) -> Answer:
        who = f"solver 'http' ({self.config.url})"
        where = f"task {attempt.task_id!r} (trial {attempt.trial})"
        value = self.post(solve_request(attempt), who=who, where=where)
        return parse_answer(value, who=who, attempt=attempt)

    def post(self, body: Any, *, who: str, where: str) -> Any:
        """POST ``body`` as JSON and return the parsed JSON reply, with the retry policy.

        Shared with the golden-build roles (:mod:`evalframe_mine.roles`): one
        place decides what is retried and what an error shows.
        """
        import httpx

        for attempt_no in range(self.config.retries + 1):
            with self._lock:
                self.requests += 1
            problem: str
            try:
                response = self._client.post(self.config.url, json=body)
            except httpx.TimeoutException:
                problem = f"timed out after {self.config.timeout_seconds:g}s"
            except httpx.TransportError as exc:
                problem = f"connection failed: {type(exc).__name__}: {exc}"
            else:
                if response.status_code < 400:
                    try:
                        return response.json()
                    except ValueError:
                        raise PluginError(
                            f"{who} answered {where} with something that is not JSON",
                            got=repr(self._redact(response.text[:200])),
                        ) from None
                problem = f"HTTP {response.status_code}: {self._redact(response.text[:200])}"
                if response.status_code < 500 and response.status_code != 429:
                    raise PluginError(
                        f"{who} refused {where}",
                        got=problem,
                        hint="check the url and the credentials (headers_from_env)",
                    )
            if attempt_no < self.config.retries:
                time.sleep(self.config.backoff_seconds * (2**attempt_no))
        raise PluginError(
            f"{who} failed on {where} after {self.config.retries + 1} attempts",
            got=self._redact(problem),
            hint="answers already given are cached: re-running resumes where it stopped",
        )
