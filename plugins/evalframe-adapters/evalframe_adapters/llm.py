"""An LLM as a recommender: ask an OpenAI-compatible chat endpoint to rank candidates.

For each query the prompt lists the candidate catalogue (ids, with
descriptions when the catalogue has them) and asks for the ``k`` best ids.
The answer is parsed robustly: the first JSON list anywhere in the text (also
inside a ```json fence or an object such as ``{"tools": [...]}``), otherwise
numbered or bulleted lines. An id is matched to the catalogue exactly, then
ignoring case, then as the dataset's id normaliser reads both (Galaxy's
``normalise: [strip_version]``: an answer naming another version of a
catalogue tool is that tool). Ids that still match nothing are dropped,
counted (``dropped_ids``) and said in a warning at the end of retrieval;
repeated ids are kept once, in order; the order is the ranking (synthetic
scores ``n - i``).

The prompt template is filled in one pass: ``{query}``, ``{catalogue}``,
``{k}``, ``{id}`` and any metadata field of the query by name (``{topic}``,
``{tutorial.title}``), as Galaxy's generator enriches its queries with
tutorial metadata; the fields a template reads join the query's cache key.

Galaxy's ``generate_llm_predictions.py`` options map as follows: ``--model``
-> ``model``, ``--api-url`` -> ``api_url``, ``OPENAI_API_KEY`` ->
``api_key_env``, ``--delay`` -> ``delay_seconds``, ``--max-queries`` ->
``max_queries``, ``--skip-existing`` -> the retrieval cache (answers are
stored per query as they arrive, so a re-run asks only the queries not yet
answered).
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any

from pydantic import Field, field_validator

from evalframe.core.errors import ConfigError, DataError, PluginError
from evalframe.core.messages import warn
from evalframe.core.reader import read_json, read_json_array, read_jsonl, read_lines, require_file
from evalframe.core.secrets import names_a_secret_itself
from evalframe.core.types import Ranking, content_hash
from evalframe.plugin.protocols import NOT_IN_CACHE_KEY, PluginContext, Query
from evalframe.plugin.registry import retriever

from ._common import build_ranking, clipped, coerce_id
from ._http import (
    MAX_WAIT_SECONDS,
    VARIABLE_NAME,
    FailureTally,
    JsonClient,
    RateLimiter,
    RequestError,
    RetryPolicy,
    RetrySettings,
    check_url,
    env_headers,
)

__all__ = [
    "LLMRecommender",
    "LLMRecommenderConfig",
    "load_catalogue",
    "parse_answer",
    "placeholders",
]

DEFAULT_PROMPT = """\
You recommend items from a fixed catalogue.

Catalogue (one per line, "id: description"):
{catalogue}

Request: {query}

Answer with the ids of the {k} most useful catalogue items, best first, as a JSON list
of strings, e.g. ["id-1", "id-2"]. Use only ids from the catalogue."""

DEFAULT_SYSTEM = "You are a precise recommender. Answer only with catalogue ids."


class LLMRecommenderConfig(RetrySettings):
    """The endpoint, the model, the catalogue and the prompt."""

    api_url: str = Field(
        "https://api.openai.com/v1",
        description="base URL of an OpenAI-compatible API; requests go to "
        "{api_url}/chat/completions",
    )
    model: str = Field(description="model name sent with every request")
    api_key_env: str | None = Field(
        "OPENAI_API_KEY",
        description="name of the environment variable holding the API key (null: no key, "
        "e.g. a local server)",
    )
    catalogue_path: str | None = Field(
        None,
        description="candidate ids: JSONL or JSON ({id, description} records, ids, or "
        "{id: description}) or TXT (one id per line, optional TAB description); "
        "default: the configured corpus",
    )
    id_field: str = Field("id", description="id field of a catalogue record")
    description_field: str = Field("description", description="description field of a record")
    max_description_chars: int = Field(
        300, ge=0, description="descriptions are cut to this length in the prompt"
    )
    prompt_template: str | None = Field(
        None,
        description="user prompt (null: the built-in one); {query}, {catalogue}, {k} and {id} "
        "are substituted, and {name} by the query's metadata field name ({a.b} reads a nested "
        "field); {{ and }} are literal braces",
    )
    system_prompt: str | None = Field(DEFAULT_SYSTEM, description="system message (null: none)")
    temperature: float = Field(0.0, ge=0, le=2, description="sampling temperature")
    max_tokens: int | None = Field(None, gt=0, description="cap on the answer's tokens")
    delay_seconds: float = Field(
        0.0,
        ge=0,
        le=MAX_WAIT_SECONDS,
        description="at least this long between the starts of two requests (seconds, at most 3600)",
        json_schema_extra=NOT_IN_CACHE_KEY,
    )
    max_queries: int | None = Field(
        None,
        gt=0,
        description="ask at most this many queries per run; later ones count as missing "
        "(re-run to continue: answered queries come from the retrieval cache)",
        json_schema_extra=NOT_IN_CACHE_KEY,
    )
    timeout_seconds: float = Field(
        60.0,
        gt=0,
        le=MAX_WAIT_SECONDS,
        description="the most one request may take, from connecting to the answer's last byte "
        "(seconds, at most 3600)",
        json_schema_extra=NOT_IN_CACHE_KEY,
    )

    @field_validator("api_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        return check_url(value)  # scheme, host, a port from 1 to 65535

    @field_validator("prompt_template")
    @classmethod
    def _has_query(cls, value: str | None) -> str | None:
        if value is not None and "query" not in placeholders(value):
            raise ValueError("prompt_template must contain {query}")
        return value


#: ``{name}`` (a built-in or a metadata field, dotted for nested ones), or a doubled brace.
PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][\w.-]*)\}")
#: Placeholders every prompt has; a metadata field of the same name is not reachable.
BUILTINS = ("query", "catalogue", "k", "id")
_ABSENT = object()


def placeholders(template: str) -> list[str]:
    """The ``{name}`` placeholders of a template, in order (doubled braces are literal)."""
    return [m.group(1) for m in PLACEHOLDER.finditer(template) if m.group(1)]


def _field(metadata: dict[str, Any], name: str) -> Any:
    """``metadata[name]``, or the nested value a dotted name points at; _ABSENT if none."""
    if name in metadata:
        return metadata[name]
    value: Any = metadata
    for part in name.split("."):
        if not isinstance(value, dict) or part not in value:
            return _ABSENT
        value = value[part]
    return value


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def load_catalogue(
    path: str, id_field: str = "id", text_field: str = "description"
) -> dict[str, str]:
    """Candidate id -> description ("" when none), in file order."""
    p = require_file(path, what="catalogue", key="retriever.catalogue_path")
    out: dict[str, str] = {}

    def add(value: Any, where: int) -> None:
        if isinstance(value, dict):
            ident = coerce_id(value.get(id_field))
            text = value.get(text_field, "")
            text = text if isinstance(text, str) else json.dumps(text)
        else:
            ident, text = coerce_id(value), ""
        if ident is None:
            raise DataError(
                f"catalogue entry has no usable id (field {id_field!r})",
                path=p,
                line=where,
                got=repr(value)[:80],
                hint="each entry is an id or a record with an id field (retriever.id_field)",
            )
        out.setdefault(ident, text)

    key = "retriever.catalogue_path"
    suffix = p.suffix.lower()
    if suffix == ".jsonl":
        for line, value in read_jsonl(p, what="catalogue", key=key):
            add(value, line)
    elif suffix == ".json":
        data = read_json(p, what="catalogue", key=key).data
        if isinstance(data, dict):
            for ident, text in data.items():
                out.setdefault(ident, text if isinstance(text, str) else json.dumps(text))
        else:
            for line, value in read_json_array(p, what="catalogue", key=key):
                add(value, line)
    else:
        for _, raw in read_lines(p, what="catalogue", key=key):
            stripped = raw.strip()
            if stripped and not stripped.startswith("#"):
                ident, _, text = stripped.partition("\t")
                out.setdefault(ident.strip(), text.strip())
    if not out:
        raise DataError("the catalogue is empty", path=p, hint="list the candidate ids")
    return out


LIST_LINE = re.compile(r"^\s*(?:\d+\s*[.):]|[-*•+])\s+(.*\S)\s*$")
ID_KEYS = ("id", "tool_id", "tool", "name")
STRIP = "`*\"'[](),;:<>"


def _ids_of(value: list[Any]) -> list[str]:
    out: list[str] = []
    for v in value:
        if isinstance(v, dict):
            v = next((v[key] for key in ID_KEYS if key in v), None)
        ident = coerce_id(v)
        if ident is not None:
            out.append(ident.strip())
    return out


def _json_list(text: str) -> list[str] | None:
    """The first JSON list of ids in the text; a list of numbers only (``[1]`` may be a
    citation mark) is used only when no list holds a string or an object."""
    decoder = json.JSONDecoder()
    numbers_only: list[Any] | None = None
    start = text.find("[")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            value = None
        if isinstance(value, list) and all(isinstance(v, (str, int, dict)) for v in value):
            if not value or any(isinstance(v, (str, dict)) for v in value):
                return _ids_of(value)
            if numbers_only is None:
                numbers_only = value
        start = text.find("[", start + 1)
    return None if numbers_only is None else _ids_of(numbers_only)


def parse_answer(text: str) -> list[str]:
    """Candidate ids in the order the model gave them (unchecked, may repeat).

    A JSON list anywhere in the text wins; otherwise each numbered or bulleted
    line gives one candidate (the whole line, cleaned of markdown; the
    catalogue match in :class:`LLMRecommender` also tries its first word).
    """
    found = _json_list(text)
    if found is not None:
        return found
    out = []
    for line in text.splitlines():
        m = LIST_LINE.match(line)
        if m:
            out.append(m.group(1).replace("**", "").strip().strip(STRIP))
    return out


@retriever("llm_recommender", config=LLMRecommenderConfig)
class LLMRecommender:
    """Asks an OpenAI-compatible chat model to pick the best candidates from a catalogue."""

    def __init__(self, config: LLMRecommenderConfig, context: PluginContext) -> None:
        self.config = config
        if config.catalogue_path is not None:
            self.catalogue = load_catalogue(
                config.catalogue_path, config.id_field, config.description_field
            )
        elif context.corpus is not None:
            self.catalogue = {d.id: d.text for d in context.corpus.documents}
        else:
            raise ConfigError(
                "llm_recommender needs candidates: set catalogue_path or configure a corpus",
                key="retriever.catalogue_path",
            )
        self._folded = {ident.lower(): ident for ident in reversed(self.catalogue)}
        # the first catalogue id of each normalised form, as the pipeline will read ids
        self._normalise = context.normalise_id
        self._normalised: dict[str, str] = {}
        if self._normalise is not None:
            for ident in self.catalogue:
                self._normalised.setdefault(self._normalise(ident), ident)
        headers: dict[str, str] = {}
        secrets: list[str] = []
        if config.api_key_env and (
            names_a_secret_itself(config.api_key_env)
            or not VARIABLE_NAME.fullmatch(config.api_key_env)
        ):
            # not quoted: the key itself, pasted or from ${oc.env:...}, is the likely value
            raise ConfigError(
                "retriever.api_key_env is not an environment variable's name: it may be the "
                "key itself (a ${oc.env:...} here is replaced by the variable's value)",
                key="retriever.api_key_env",
                hint="give the variable's name: retriever.api_key_env=OPENAI_API_KEY",
            )
        if config.api_key_env:
            headers, secrets = env_headers(
                {"Authorization": f"Bearer ${{{config.api_key_env}}}"},
                "retriever.api_key_env",
                keyed_by_header=False,
            )
        interval = max(1.0 / config.rate_limit if config.rate_limit else 0.0, config.delay_seconds)
        self.client = JsonClient(
            config.api_url.rstrip("/") + "/chat/completions",
            headers=headers,
            secrets=secrets,
            timeout=config.timeout_seconds,
            policy=RetryPolicy.from_settings(config),
            limiter=RateLimiter(1.0 / interval if interval > 0 else None),
            connections=config.max_concurrency,
            max_response_bytes=config.max_response_bytes,
            key_prefix=f"{context.config_key or 'retriever'}.",
            warn_on_giving_up=config.allow_failed_queries,  # the run goes on without it
        )
        self.catalogue_text = "\n".join(self._line(i, t) for i, t in self.catalogue.items())
        #: metadata fields the template reads (everything but the built-ins), each once
        self.template = config.prompt_template or DEFAULT_PROMPT
        self._template_fields = [
            n for n in dict.fromkeys(placeholders(self.template)) if n not in BUILTINS
        ]
        #: Ids the model gave that are not in the catalogue (dropped), in total and per query.
        self.dropped_ids = 0
        self.dropped: dict[str, list[str]] = {}
        #: Queries whose answer held no list at all (prose, a refusal): (query id, text).
        self.unlisted: list[tuple[str, str]] = []
        self.asked = 0
        #: the queries asked, and those that failed under allow_failed_queries (said at the end)
        self.failures = FailureTally()
        self._warned_limit = False
        #: How many queries the pipeline may ask at once (threads sharing the client).
        self.max_concurrency = config.max_concurrency
        self._lock = threading.Lock()  # the counters above, across those threads

    def cache_identity(self) -> str | None:
        """The catalogue's contents when read from a file (a corpus is in the key already),
        and what the id normaliser makes of its ids, which decides what an answer matches."""
        parts: list[Any] = []
        if self.config.catalogue_path is not None:
            parts.append(sorted(self.catalogue.items()))
        if self._normalise is not None:
            parts.append(sorted(self._normalised.items()))
        return content_hash(parts) if parts else None

    @property
    def failed_queries(self) -> int:
        """How many queries failed for good under ``allow_failed_queries`` (the tally's)."""
        return self.failures.failed

    def notes(self) -> list[str]:
        """What the answers did not give, said once at the end: ids not in the catalogue,
        and answers with no list in them (every query of a chatty model scored 0, and
        nothing said why)."""
        out = []
        if self.unlisted:
            qid, text = self.unlisted[0]
            n = len(self.unlisted)
            out.append(
                f"{n} answer{'s' if n != 1 else ''} held no list of ids (no JSON list, no "
                f"numbered or bulleted line), so {'they rank' if n != 1 else 'it ranks'} "
                f"nothing (first: query {qid!r}, {clipped(text)}); ask for a JSON list in "
                "retriever.prompt_template, and read the answers in per_query.jsonl ('answer')"
            )
        if self.dropped_ids:
            qid, ids = next(iter(self.dropped.items()))
            out.append(
                f"{self.dropped_ids} id(s) the model gave in {len(self.dropped)} answer(s) are "
                f"not in the catalogue and were dropped (first: query {qid!r}, "
                f"{clipped(ids[0])}); each answer's text is kept in per_query.jsonl ('answer')"
            )
        return [*out, *self.failures.notes()]

    def _line(self, ident: str, text: str) -> str:
        limit = self.config.max_description_chars
        text = " ".join(text.split())
        if len(text) > limit:
            text = text[: max(limit - 1, 0)] + "…"
        return f"{ident}: {text}" if text else ident

    def _fields(self, query: Query) -> dict[str, str]:
        """The metadata fields the template reads, as text; a missing one is a located error."""
        out: dict[str, str] = {}
        for name in self._template_fields:
            value = _field(query.metadata, name)
            if value is _ABSENT:
                raise ConfigError(
                    f"retriever.prompt_template uses {{{name}}}, but query {query.id!r} has no "
                    f"metadata field {name!r}",
                    key="retriever.prompt_template",
                    expected=f"{name!r} among the query's fields, or a built-in "
                    f"({', '.join('{' + b + '}' for b in BUILTINS)})",
                    got=f"fields {', '.join(sorted(query.metadata)) or '(none)'}",
                    hint="give the field in the golden set or in the queries file "
                    "(queries.path), or take it out of the template; write {{ and }} for "
                    "literal braces",
                )
            out[name] = _text(value)
        return out

    def cache_inputs(self, query: Query) -> dict[str, str] | None:
        """The metadata the prompt reads: it joins the query's retrieval cache key."""
        return self._fields(query) or None

    def prompt(self, query: Query, k: int) -> str:
        values = {
            **self._fields(query),
            "query": query.text,
            "catalogue": self.catalogue_text,
            "k": str(k),
            "id": query.id,
        }

        def fill(m: re.Match[str]) -> str:
            name = m.group(1)
            if name is None:
                return m.group(0)[0]  # {{ -> {, }} -> }
            return values[name]

        # one pass over the template: text put in (the catalogue, the query) is never re-read
        return PLACEHOLDER.sub(fill, self.template)

    def _match(self, candidate: str) -> str | None:
        tries = [candidate]
        words = candidate.split()
        if words:
            tries.append(words[0].strip(STRIP))
        for t in tries:
            if t in self.catalogue:
                return t
            folded = self._folded.get(t.lower())
            if folded is not None:
                return folded
        if self._normalise is not None:
            for t in tries:
                same = self._normalised.get(self._normalise(t))
                if same is not None:
                    return same
        return None

    def retrieve(self, query: Query, k: int) -> Ranking | None:
        """Ask the model; None once max_queries is reached (the query is then missing)."""
        cfg = self.config
        with self._lock:
            if cfg.max_queries is not None and self.asked >= cfg.max_queries:
                if not self._warned_limit:
                    warn(
                        f"llm_recommender: max_queries={cfg.max_queries} reached; later queries "
                        "are missing (re-run to continue from the retrieval cache)"
                    )
                    self._warned_limit = True
                return None
            self.asked += 1
        self.failures.ask()
        messages = [{"role": "user", "content": self.prompt(query, k)}]
        if cfg.system_prompt:
            messages.insert(0, {"role": "system", "content": cfg.system_prompt})
        body: dict[str, Any] = {
            "model": cfg.model,
            "messages": messages,
            "temperature": cfg.temperature,
        }
        if cfg.max_tokens is not None:
            body["max_tokens"] = cfg.max_tokens
        try:
            response = self.client.post(body, what=f"llm_recommender, query {query.id!r}")
        except RequestError as exc:
            if cfg.allow_failed_queries and not exc.fatal:
                self.failures.fail(query.id, exc.message)
                return None
            if exc.hint is not None:
                hint = exc.hint
            elif exc.fatal:
                key = (
                    f"the key in ${cfg.api_key_env}"
                    if cfg.api_key_env
                    else "whether the service needs a key (retriever.api_key_env is unset, so "
                    "none was sent)"
                )
                hint = f"check retriever.api_url, retriever.model and {key}"
            else:
                hint = "set retriever.allow_failed_queries=true to count failed queries as missing"
            raise PluginError(
                f"llm_recommender: query {query.id!r} failed after {exc.attempts} attempt(s): "
                f"{exc.message}",
                hint=hint,
            ) from None
        try:
            content = response["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError):
            raise PluginError(
                f"llm_recommender: the answer for query {query.id!r} has no "
                "choices[0].message.content",
                got=self.client.redact(json.dumps(response)[:200]),
                hint="is retriever.api_url an OpenAI-compatible endpoint?",
            ) from None
        # the model's text is stored (per_query.jsonl, the page): never a key it echoed
        answer = self.client.redact(str(content), answer=True)
        return self.rank(query.id, answer, k, response.get("usage"))

    def rank(self, query_id: str, content: str, k: int, usage: Any = None) -> Ranking:
        """The ranking in one answer text: catalogue ids only, each once, in order."""
        kept: list[str] = []
        candidates = parse_answer(content)
        if not candidates and _json_list(content) is None:  # "[]" is an answer: none fit
            with self._lock:
                self.unlisted.append((query_id, content))
        for candidate in candidates:
            ident = self._match(candidate)
            if ident is None:
                with self._lock:
                    self.dropped_ids += 1
                    self.dropped.setdefault(query_id, []).append(candidate)
            elif ident not in kept:
                kept.append(ident)
        tokens = usage.get("total_tokens") if isinstance(usage, dict) else None
        return build_ranking(
            query_id,
            [(i, None) for i in kept],
            k,
            source="llm_recommender",
            answer=content,
            tokens=tokens if isinstance(tokens, int) else None,
        )
