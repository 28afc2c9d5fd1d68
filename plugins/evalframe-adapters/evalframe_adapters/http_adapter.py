"""Evaluate a retrieval service over HTTP: POST a JSON body per query, read the results.

The request body is built from ``body_template``: any string value equal to
``"{query}"``, ``"{query_id}"``, ``"{k}"`` or ``"{metadata}"`` is replaced by
the value itself (``"{k}"`` stays a number); inside a longer string the
placeholders are substituted as text; ``"{metadata.topic}"`` reads one
metadata field. Everything else in the template is sent as written.

The response is read with dotted paths: ``results_path`` (the list of hits),
then ``id_path`` and ``score_path`` inside each hit (``score_path: null``, or
hits that are bare ids, means the order is the ranking).

Credentials come from environment variables only (``headers_from_env``), are
left out of cache keys (only the variable *names* are in the config) and are
never logged: error texts are redacted.

Concurrency: the retriever declares ``max_concurrency`` (from its config),
and the pipeline calls ``retrieve()`` from that many threads at once; they
share one connection pool, one rate limit and one retry policy.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from evalframe.core.errors import PluginError
from evalframe.core.secrets import redact, remember_secrets, url_secrets
from evalframe.core.types import Ranking
from evalframe.plugin.protocols import NOT_IN_CACHE_KEY, PluginContext, Query
from evalframe.plugin.registry import retriever

from ._common import Item, build_ranking, clipped, dotted
from ._http import (
    FailureTally,
    JsonClient,
    RateLimiter,
    RequestError,
    RetryPolicy,
    RetrySettings,
    check_literal_headers,
    check_url,
    env_headers,
)

__all__ = ["HttpConfig", "HttpRetriever", "fill_template"]

#: The default longest document id an answer may hold: ids are names (a path, a URL, a
#: chunk key), and a service that sends a megabyte as one is broken; such an id would
#: be written into every output (run.trec, per_query.jsonl, the page, warnings).
MAX_ID_CHARS = 1024

PLACEHOLDER = re.compile(r"\{(query|query_id|k|metadata(?:\.[\w-]+)?)\}")


def _default_template() -> dict[str, Any]:
    return {"query": "{query}", "query_id": "{query_id}", "k": "{k}"}


def _mentions_query(value: Any) -> bool:
    if isinstance(value, str):
        return "{query}" in value or "{query_id}" in value
    if isinstance(value, Mapping):
        return any(_mentions_query(v) for v in value.values())
    if isinstance(value, list):
        return any(_mentions_query(v) for v in value)
    return False


class HttpConfig(RetrySettings):
    """Where the service is, how to ask it, and where the results are in its answer."""

    url: str = Field(description="endpoint; every query is one POST to it")
    body_template: dict[str, Any] = Field(
        default_factory=_default_template,
        description='JSON body; "{query}", "{query_id}", "{k}", "{metadata}" and '
        '"{metadata.<field>}" are substituted, everything else is sent as written',
    )
    results_path: str = Field(
        "results", description='dotted path of the result list in the response ("" = the body)'
    )
    id_path: str = Field("id", description="dotted path of the document id inside one result")
    score_path: str | None = Field(
        "score", description="dotted path of the score inside one result; null = order only"
    )
    answer_path: str | None = Field(None, description="dotted path of a generated answer")
    confidence_path: str | None = Field(None, description="dotted path of a confidence value")
    tokens_path: str | None = Field(None, description="dotted path of a token count")
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="literal, non-secret headers (credentials belong in headers_from_env)",
    )
    headers_from_env: dict[str, str] = Field(
        default_factory=dict,
        description="header -> environment variable name, e.g. {Authorization: MY_TOKEN}, or "
        'a text with references: {Authorization: "Bearer $MY_TOKEN"}',
    )
    duplicates: Literal["error", "first"] = Field(
        "error", description="a document returned twice: error, or keep its first occurrence"
    )
    max_id_chars: int = Field(
        MAX_ID_CHARS,
        ge=1,
        le=1 << 20,
        description="the longest document id an answer may hold (characters); a longer one "
        "stops the run naming the query",
        json_schema_extra=NOT_IN_CACHE_KEY,
    )

    @field_validator("body_template", "headers", "headers_from_env", mode="before")
    @classmethod
    def _null_is_default(cls, value: Any, info: ValidationInfo) -> Any:
        # The YAML defaults are null so a Hydra override replaces the mapping
        # instead of merging into it (a merge would keep the default's keys).
        if value is None:
            return _default_template() if info.field_name == "body_template" else {}
        return value

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        return check_url(value)  # scheme, host, a port from 1 to 65535

    @field_validator("headers")
    @classmethod
    def _no_literal_secrets(cls, value: dict[str, str]) -> dict[str, str]:
        check_literal_headers(value)
        return value

    @model_validator(mode="after")
    def _template_uses_the_query(self) -> HttpConfig:
        if not _mentions_query(self.body_template):
            raise ValueError('body_template must contain "{query}" or "{query_id}" somewhere')
        return self


def fill_template(template: Any, query: Query, k: int) -> Any:
    """The template with the query's values substituted (see the module docstring)."""

    def value(name: str) -> Any:
        if name == "query":
            return query.text
        if name == "query_id":
            return query.id
        if name == "k":
            return k
        if name == "metadata":
            return query.metadata
        return query.metadata.get(name.split(".", 1)[1])

    def text(match: re.Match[str]) -> str:
        v = value(match.group(1))
        return v if isinstance(v, str) else json.dumps(v)

    if isinstance(template, str):
        whole = PLACEHOLDER.fullmatch(template)
        if whole:
            return value(whole.group(1))
        return PLACEHOLDER.sub(text, template)
    if isinstance(template, Mapping):
        return {key: fill_template(v, query, k) for key, v in template.items()}
    if isinstance(template, list):
        return [fill_template(v, query, k) for v in template]
    return template


def template_names(template: Any) -> set[str]:
    """The placeholders ``template`` uses anywhere (``query``, ``metadata.topic``, ...)."""
    if isinstance(template, str):
        return {m.group(1) for m in PLACEHOLDER.finditer(template)}
    if isinstance(template, Mapping):
        return set().union(*(template_names(v) for v in template.values()))
    if isinstance(template, list):
        return set().union(*(template_names(v) for v in template))
    return set()


@retriever("http", config=HttpConfig)
class HttpRetriever:
    """POSTs each query to an HTTP service and reads the ranked results from its JSON answer."""

    def __init__(self, config: HttpConfig, context: PluginContext) -> None:
        self.config = config
        self.context = context
        # the body's secrets (api_key: ${oc.env:TOKEN}), whoever built the config: the
        # client redacts them from every error and every answer text it hands back
        remember_secrets({"body_template": config.body_template})
        self._template_names = template_names(config.body_template)
        secret_headers, secrets = env_headers(config.headers_from_env, "retriever.headers_from_env")
        self.client = JsonClient(
            config.url,
            headers={**config.headers, **secret_headers},
            secrets=secrets,
            timeout=config.timeout_seconds,
            policy=RetryPolicy.from_settings(config),
            limiter=RateLimiter(config.rate_limit),
            connections=config.max_concurrency,
            max_response_bytes=config.max_response_bytes,
            key_prefix=f"{context.config_key or 'retriever'}.",
            warn_on_giving_up=config.allow_failed_queries,  # the run goes on without it
        )
        #: How many queries the pipeline may ask at once (threads sharing the client).
        self.max_concurrency = config.max_concurrency
        #: Queries that failed after the retries and were counted missing.
        self.failures = FailureTally()

    def close(self) -> None:
        """Close the client's pooled connections."""
        self.client.close()

    def cache_inputs(self, query: Query) -> dict[str, Any] | None:
        """What the request sends of the query besides its text (``k`` is in every key):
        its id and the metadata the body template reads. Keyed on the text alone, two
        queries with one text got the first one's cached ranking, and an edited metadata
        field the service reads got the old answer."""
        names = self._template_names
        inputs: dict[str, Any] = {}
        if "query_id" in names:
            inputs["query_id"] = query.id
        if "metadata" in names:
            inputs["metadata"] = query.metadata
        for name in sorted(n for n in names if n.startswith("metadata.")):
            inputs[name] = query.metadata.get(name.split(".", 1)[1])
        return inputs or None

    def retrieve(self, query: Query, k: int) -> Ranking | None:
        """The ranking for one query; None if it failed and allow_failed_queries is set."""
        body = fill_template(self.config.body_template, query, k)
        try:
            response = self.client.post(body, what=f"http retriever, query {query.id!r}")
        except RequestError as exc:
            if self.config.allow_failed_queries and not exc.fatal:
                self.failures.fail(query.id, exc.message)
                return None
            raise self._failure(query, exc) from None
        finally:
            self.failures.ask()
        return self.parse(query.id, response, k)

    @property
    def failed_queries(self) -> int:
        """How many queries failed for good under ``allow_failed_queries``."""
        return self.failures.failed

    def notes(self) -> list[str]:
        """The queries that failed for good under ``allow_failed_queries``, said at the end
        of the run (and in its summary.json and page): see :class:`FailureTally`."""
        return self.failures.notes()

    def _failure(self, query: Query, exc: RequestError) -> PluginError:
        tries = f"after {exc.attempts} attempts" if exc.attempts > 1 else "(not retried)"
        if exc.hint is not None:
            hint = exc.hint
        elif exc.fatal:
            # where this config carries its credential, as far as it says
            cfg = self.config
            where = (
                "retriever.headers_from_env"
                if cfg.headers_from_env
                else "the key in retriever.url"
                if url_secrets(cfg.url)
                else "the key in retriever.body_template"
                if redact(cfg.body_template, _name="body_template") != cfg.body_template
                else "retriever.headers_from_env (none are set: the request carried no key)"
            )
            hint = f"check retriever.url and the credentials: {where}"
        else:
            if exc.status is not None and 200 <= exc.status < 300:  # answered, not JSON
                hint = (
                    "the service answered, but not with JSON: check that retriever.url is its "
                    "search endpoint (not a page), and what it returns for this query"
                )
            elif exc.status is None:  # no answer at all: down, unreachable, or too slow
                hint = (
                    "check that the service is up and reachable at retriever.url (and "
                    "retriever.timeout_seconds); for a service that fails now and then, "
                    "retriever.allow_failed_queries=true counts a query that still fails as "
                    "missing"
                )
            elif exc.status >= 500 or exc.status == 429:
                hint = "set retriever.allow_failed_queries=true to count failed queries as missing"
            else:
                hint = "the service rejected this request; check retriever.body_template"
        return PluginError(
            f"http retriever: query {query.id!r} failed {tries}: {exc.message}",
            hint=hint,
        )

    # -- reading the answer -------------------------------------------------------
    def _shape_error(self, query_id: str, message: str, response: Any) -> PluginError:
        shown = self.client.redact(json.dumps(response)[:200])
        return PluginError(
            f"http retriever: the answer for query {query_id!r} {message}",
            got=shown,
            hint="set retriever.results_path / id_path / score_path to where the service puts "
            "them (dotted paths, e.g. data.hits)",
        )

    def _check_extras(self, query_id: str, extra: dict[str, Any]) -> None:
        """The answer text, confidence and token count a service reports, as the run
        stores them: a value of another type crashed deep in the run (exit 3, a traceback
        quoting the value, a key the service echoed included), and one out of range
        (confidence 1.5) went into the calibration unseen. A located error instead."""
        cfg = self.config

        def number(v: Any) -> bool:
            return isinstance(v, int | float) and not isinstance(v, bool)

        checks: tuple[tuple[str, str | None, Callable[[Any], bool], str], ...] = (
            ("answer", cfg.answer_path, lambda v: isinstance(v, str), "text"),
            (
                "confidence",
                cfg.confidence_path,
                lambda v: number(v) and 0.0 <= float(v) <= 1.0,
                "a number from 0 to 1",
            ),
            (
                "tokens",
                cfg.tokens_path,
                lambda v: number(v) and float(v).is_integer() and v >= 0,
                "a whole number of at least 0",
            ),
        )
        for name, path, ok, expected in checks:
            value = extra.get(name)
            if value is not None and not ok(value):
                shown = self.client.redact(json.dumps(value)[:120])
                raise PluginError(
                    f"http retriever: the answer for query {query_id!r} has {name} "
                    f"{shown} at {path!r}, which is not {expected}",
                    hint=f"set retriever.{name}_path to where the service puts its {name} "
                    f"({expected}), or null to read none",
                )

    def _check_id_length(self, query_id: str, position: int, doc: Any) -> None:
        """A runaway id (megabytes from a broken service) stops the run here, quoted by its
        start: kept, it would be copied into every output file and warning."""
        limit = self.config.max_id_chars
        if isinstance(doc, str) and len(doc) > limit:
            length = len(doc)
        elif isinstance(doc, int) and not isinstance(doc, bool) and len(str(doc)) > limit:
            length = len(str(doc))
        else:
            return
        raise PluginError(
            f"http retriever: the answer for query {query_id!r} has a document id of "
            f"{length:,} characters at result {position}, over the limit of {limit:,} "
            f"(retriever.max_id_chars)",
            got=clipped(doc),
            hint="check retriever.id_path points at the id and not at a text field; raise "
            "retriever.max_id_chars if the service's ids really are that long",
        )

    def parse(self, query_id: str, response: Any, k: int) -> Ranking:
        """The ranking in a decoded JSON response (paths from the config)."""
        cfg = self.config
        try:
            hits = dotted(response, cfg.results_path)
        except KeyError as exc:
            raise self._shape_error(
                query_id, f"has no {cfg.results_path!r} (missing {exc.args[0]!r})", response
            ) from None
        if not isinstance(hits, list):
            raise self._shape_error(
                query_id,
                f"has a {type(hits).__name__} at {cfg.results_path!r}, not a list",
                response,
            )
        items: list[Item] = []
        for i, hit in enumerate(hits, start=1):
            if isinstance(hit, (str, int)) and not isinstance(hit, bool):
                doc, score = hit, None
            else:
                try:
                    doc = dotted(hit, cfg.id_path)
                    score = dotted(hit, cfg.score_path) if cfg.score_path else None
                except KeyError as exc:
                    raise self._shape_error(
                        query_id, f"has result {i} without {exc.args[0]!r}", hit
                    ) from None
            self._check_id_length(query_id, i, doc)
            items.append((doc, score))
        extra: dict[str, Any] = {}
        for name, path in (
            ("answer", cfg.answer_path),
            ("confidence", cfg.confidence_path),
            ("tokens", cfg.tokens_path),
        ):
            if path:
                try:
                    extra[name] = dotted(response, path)
                except KeyError:
                    extra[name] = None
        self._check_extras(query_id, extra)
        if isinstance(extra.get("answer"), str):
            # a service that echoes the request (headers and all) must not put a key into
            # per_query.jsonl, the page or the cache: stored text is redacted as errors are
            extra["answer"] = self.client.redact(extra["answer"], answer=True)
        return build_ranking(
            query_id,
            items,
            k,
            source=f"http retriever ({cfg.url})",
            duplicates=cfg.duplicates,
            duplicates_key=f"{self.client.key_prefix}duplicates",
            **extra,
        )
