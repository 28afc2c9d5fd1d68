"""Secrets in configs: found before anything is written, and redacted in everything written.

The policy (docs/security.md):

- A credential never sits literally in a config. Configs are copied to many
  places (Hydra's ``.hydra/`` folder, the run's ``config.yaml``, DVC's
  ``params.yaml``, MLflow params, Git), so a literal one is refused before
  any of them is written. A config names the environment variable instead:
  ``${oc.env:MY_TOKEN}``, or a plugin's ``*_env`` / ``*_from_env`` settings.
- What evalframe writes or prints is redacted: values under secret-looking
  keys, credential query parameters in URLs (``?api_key=...``) and any key
  the config lists under ``redact:`` become ``sk-1…[redacted]`` — at most the
  first four characters, enough to tell two keys apart, never enough to use.

Which names look secret is one rule, :func:`is_secret_name`; a key that only
*names* an environment variable (``api_key_env``, ``headers_from_env``) is
not a secret. What a request carries (a URL's query parameters, the headers
and body fields under :data:`REQUEST_FIELDS`) is named for a service, not for
evalframe, and services name their keys ``key``, ``X-Goog-Key`` or
``Ocp-Apim-Subscription-Key``: there :func:`is_secret_param` also counts a
name whose last word is ``key``, and ``session``.

What a plugin says is redacted too. A plugin holds its settings resolved (the
``${oc.env:KEY}`` replaced by the key it sends) and may quote one in an
exception: ``401 Unauthorized for key=sk-live-…``. So the values of the
secret-named settings of every plugin configured in this process are
remembered (:func:`remember_secrets`, called when a plugin's config is
validated) and :func:`redact_text` redacts them wherever they appear, whatever
the text: error paragraphs, crash tracebacks (:func:`redact_traceback`),
tracker warnings, a sweep job's ``job.json``. A value shorter than
:data:`MIN_KNOWN_SECRET` characters is not remembered: ``auth: basic`` or a
four-digit PIN would redact every ``basic`` or ``1234`` in every message, and
is no key worth stealing through a log anyway.

It is one module because refusing, redacting and remembering a secret must
agree on what a secret is: one set of rules, read side by side.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import quote, quote_plus, unquote, urlsplit

__all__ = [
    "MIN_KNOWN_SECRET",
    "MIN_SECRET_FRAGMENT",
    "REQUEST_FIELDS",
    "SECRET_PAIRS",
    "SECRET_WORDS",
    "LiteralSecret",
    "find_literal_secrets",
    "forget_secrets",
    "from_environment",
    "is_secret_name",
    "is_secret_param",
    "known_secrets",
    "names_a_secret_itself",
    "redact",
    "redact_known",
    "redact_mapping_text",
    "redact_override_value",
    "redact_text",
    "redact_traceback",
    "remember_environment_values",
    "remember_secret",
    "remember_secrets",
    "shown_secret",
    "url_secrets",
]

#: Words that make a key, header or query-parameter name a credential's name.
SECRET_WORDS = frozenset(
    {"token", "secret", "password", "passwd", "pwd", "passcode", "authorization", "auth",
     "cookie", "credential", "credentials", "apikey", "signature", "sig", "bearer", "jwt"}
)  # fmt: skip
#: Words that are a credential's name only in what a request carries (a URL's
#: parameters, headers, a body): as config keys they mean other things (``pass_at``).
_REQUEST_WORDS = frozenset({"session", "sessionid", "jsessionid", "sid"})
#: Two-word names: ``api_key``, ``X-Api-Key``, ``privateKey``, ``access_key``.
SECRET_PAIRS = frozenset({("api", "key"), ("private", "key"), ("access", "key"), ("secret", "key")})
#: Config keys whose mappings are sent to a service as they are (an HTTP request's
#: headers and body): their own names are judged by :func:`is_secret_param`.
REQUEST_FIELDS = frozenset({"headers", "body_template"})
#: A key that names where a secret comes from, not the secret itself.
_NAMES_A_VARIABLE = re.compile(r"(_env|_from_env|_env_var|_variable)$", re.IGNORECASE)
#: A value of such a setting: a variable's name (``SEARCH_TOKEN``), or text with ``$NAME``
#: references in it (``Bearer $SEARCH_TOKEN``).
_NAMES_VARIABLES = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$|\$[A-Za-z_][A-Za-z0-9_]*")
_REDACTED = "…[redacted]"


def _words(name: str) -> list[str]:
    """``X-Api-Key`` -> [x, api, key]; ``apiKey`` -> [api, key]; ``max_tokens`` -> [max, tokens]."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]


def is_secret_name(name: str, extra: Iterable[str] = ()) -> bool:
    """Whether a value under ``name`` is a credential (``extra``: the config's ``redact:``).

    Whole words count, not substrings: ``max_tokens`` and ``author`` are not
    secrets, ``token``, ``X-Api-Key`` and ``db_password`` are.
    """
    if name in set(extra):
        return True
    if _NAMES_A_VARIABLE.search(name):
        return False
    words = _words(name)
    return any(w in SECRET_WORDS for w in words) or any(
        pair in SECRET_PAIRS for pair in itertools.pairwise(words)
    )


def is_secret_param(name: str, extra: Iterable[str] = ()) -> bool:
    """Whether a URL query parameter, a header or a body field named ``name`` carries a
    credential: :func:`is_secret_name`, or a last word ``key`` (``?key=``,
    ``X-Goog-Key``, ``subscription-key``), or a word only a request's names use that way
    (``?pass=``, ``?sessionid=``, ``;jsessionid=``)."""
    if is_secret_name(name, extra):
        return True
    if _NAMES_A_VARIABLE.search(name):
        return False
    words = _words(name)
    return bool(words) and (words[-1] in ("key", "pass") or any(w in _REQUEST_WORDS for w in words))


def shown_secret(value: str) -> str:
    """A secret as it may be shown: its first four characters at most (``sk-1…[redacted]``)."""
    keep = 4 if len(value) >= 12 else 0  # a short secret would be half given away
    return value[:keep] + _REDACTED


def _is_interpolation(value: str) -> bool:
    return "${" in value


#: A parameter in the part of a URL after its host: ``?name=value``, ``&name=value``,
#: ``;name=value`` (a path parameter, ``;jsessionid=``) and ``#name=value`` (a fragment,
#: ``#access_token=`` of OAuth's implicit flow).
_PARAM = re.compile(r"([?&;#])([^=&;#?/]+)=([^&;#?]*)")
_PARAM_PLACE = {"?": "query parameter", "&": "query parameter", ";": "path parameter",
                "#": "fragment parameter"}  # fmt: skip
#: Schemes where a user name alone before the host may be how a token is passed
#: (``https://ghp_…@github.com``, ``https://APIKEY@api.example``: see
#: :func:`_looks_like_a_token`).
_TOKEN_SCHEMES = frozenset({"http", "https"})


def _looks_like_a_token(user: str) -> bool:
    """Whether a user name alone before a host (``https://NAME@host``) is a token: 16
    characters or more, letters and digits mixed, as API keys and ``ghp_…`` tokens are;
    ``https://me@host`` names a user."""
    return (
        len(user) >= 16
        and any(c.isdigit() for c in user)
        and any(c.isalpha() for c in user)
        and not _is_interpolation(user)
    )


def names_a_secret_itself(value: str) -> bool:
    """Whether ``value``, given where an environment variable's *name* belongs
    (``api_key_env``, ``headers_from_env``), looks like the credential itself: a token
    (16 characters or more, letters and digits mixed: ``sk-live-…``, ``ghp_…``), alone or
    after an auth scheme (``Bearer tok-…``). ``OPENAI_API_KEY`` and ``Bearer $TOKEN``
    name variables; an interpolation names one too."""
    if _is_interpolation(value):
        return False
    words = value.split()
    token = words[-1] if len(words) == 2 and "$" not in value else value
    # an upper-case word with underscores is a variable's name (AWS_SECRET_ACCESS_KEY_2)
    named = token.isupper() and "_" in token
    return " " not in token and _looks_like_a_token(token) and not named


def _userinfo(url: str) -> tuple[int, str, str, str | None] | None:
    """Where a URL's netloc starts, its user, host and password (None: no ``user:``),
    or None when the URL has no ``user@`` part or cannot be read."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if "@" not in parts.netloc or "://" not in url:
        return None
    userinfo, _, host = parts.netloc.rpartition("@")
    if _is_interpolation(userinfo):  # ${oc.env:USER}:${oc.env:PW}@host: names, not secrets
        return None
    user, colon, password = userinfo.partition(":")
    scheme = parts.scheme.lower()
    if not colon and scheme not in _TOKEN_SCHEMES:
        return None  # ssh://git@host: a user name, not a token
    return url.index("://") + 3, user, host, password if colon else None


def _url_secrets(value: str, extra: Iterable[str]) -> list[tuple[str, str]]:
    """Credentials in a URL, as ``(how, value)``: a password before the host, a token
    there alone (``https://TOKEN@host``), and secret-named parameters after it."""
    if "://" not in value:
        return []
    found: list[tuple[str, str]] = []
    info = _userinfo(value)
    rest = value
    if info is not None:
        start, user, host, password = info
        if password:
            found.append(("URL password", password))
        elif password is None and _looks_like_a_token(user):
            found.append(("URL user name that is a token", user))
        rest = value[start:].partition(host)[2] if host else value[start:]
    found.extend(
        (f"URL {_PARAM_PLACE[m.group(1)]} {unquote(m.group(2))!r}", m.group(3))
        for m in _PARAM.finditer(rest)
        if m.group(3) and is_secret_param(unquote(m.group(2)), extra)
    )
    return found


def url_secrets(url: str, extra: Iterable[str] = ()) -> list[str]:
    """The credentials a URL carries, as values (for a client to redact wherever a
    service's answer echoes them): a password or a token before the host, and
    secret-named parameters (``?api_key=``), each once. A value taken from the
    environment is in the resolved URL, so it is found here too."""
    found = (v for _, v in _url_secrets(url, extra) if v and not _is_interpolation(v))
    return list(dict.fromkeys(found))


# -- the secret values this process knows ------------------------------------------------

#: The shortest value remembered as a secret (see the module docstring): shorter
#: ones are common words and numbers more often than keys.
MIN_KNOWN_SECRET = 8
#: ``Authorization: Bearer <token>``: a client quoting the header may leave the scheme
#: out, so the token alone is remembered too.
_AUTH_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*\s+(\S+)$")
#: (form, as shown) of every remembered secret, longest first (a secret inside another
#: is then never half-replaced). Replaced whole under the lock, never changed in place:
#: a thread redacting a message while a plugin is configured sees one or the other.
_KNOWN: tuple[tuple[str, str], ...] = ()
_KNOWN_LOCK = threading.Lock()


def remember_secret(value: str) -> None:
    """Redact ``value`` from all that :func:`redact_text` sees from now on, in this process.

    Its URL-encoded forms are remembered too: a base64 key's ``+``, ``/`` and
    ``=`` travel as ``%2B``, ``%2F`` and ``%3D`` in a query string a plugin may
    quote. A value shorter than :data:`MIN_KNOWN_SECRET` or an interpolation
    (``${oc.env:KEY}``, a name rather than a secret) is not remembered.
    """
    global _KNOWN
    value = value.strip()
    if len(value) < MIN_KNOWN_SECRET or _is_interpolation(value):
        return
    forms = (value, quote(value, safe=""), quote_plus(value, safe=""))
    with _KNOWN_LOCK:
        known = dict(_KNOWN)
        if all(form in known for form in forms):
            return
        for form in forms:
            known.setdefault(form, shown_secret(form))
        _KNOWN = tuple(sorted(known.items(), key=lambda item: (-len(item[0]), item[0])))


def remember_secrets(settings: Any, extra: Iterable[str] = ()) -> None:
    """Remember the credentials in a plugin's settings, as given (before validation).

    The values :func:`redact` would redact: under a secret-looking name, also in
    nested mappings and lists (``headers: {X-Api-Key: ...}``, judged by
    :func:`is_secret_param` inside :data:`REQUEST_FIELDS`), and the credentials
    of a URL in any value. Settings under a key that names a variable
    (``headers_from_env: {Authorization: MY_TOKEN}``) hold names, not secrets; a value
    there that names no variable (``Bearer tok-…``, ``sk-…``: a ``${oc.env:...}``
    resolved, or the key pasted where its variable's name belongs) is remembered.
    """
    for value in _secret_values(settings, list(extra), "", request=False, variable=False):
        remember_secret(value)
        scheme = _AUTH_SCHEME.match(value.strip())
        if scheme is not None:
            remember_secret(scheme.group(1))


def _secret_values(
    node: Any, extra: list[str], name: str, *, request: bool, variable: bool
) -> Iterator[str]:
    if isinstance(node, Mapping):
        inside = request or name in REQUEST_FIELDS
        for key, value in node.items():
            names_a_variable = variable or bool(_NAMES_A_VARIABLE.search(str(key)))
            yield from _secret_values(
                value, extra, str(key), request=inside, variable=names_a_variable
            )
    elif isinstance(node, list | tuple):
        for value in node:
            yield from _secret_values(value, extra, name, request=request, variable=variable)
    elif isinstance(node, str) and variable:
        # a key where the name of its variable belongs (`api_key_env: ${oc.env:KEY}`
        # resolved, or the key pasted): remembered when it looks like one, whether or not
        # it is also a valid name (ghp_…, sk_live_…); `conda_env: retrieval-py311` is not
        if names_a_secret_itself(node):
            yield node
    elif isinstance(node, str):
        secret = is_secret_param if request else is_secret_name
        if name and secret(name, extra):
            yield node
        else:
            yield from url_secrets(node, extra)


#: Values a config took from the environment (``${oc.env:KEY}`` resolved), kept so that
#: an error about such a setting does not quote it: ``timeout_seconds: ${oc.env:KEY}``
#: (the wrong variable) would print the key itself in "Input should be a number (got ...)".
_FROM_ENVIRONMENT: set[str] = set()


def remember_environment_values(raw: Any, resolved: Any) -> None:
    """Remember each value of ``resolved`` whose setting in ``raw`` (the same config, not
    resolved) reads the environment (``${oc.env:...}``): see :func:`from_environment`."""
    if isinstance(raw, Mapping) and isinstance(resolved, Mapping):
        for key, value in raw.items():
            if key in resolved:
                remember_environment_values(value, resolved[key])
    elif isinstance(raw, list | tuple) and isinstance(resolved, list | tuple):
        for a, b in zip(raw, resolved, strict=False):
            remember_environment_values(a, b)
    elif (
        isinstance(raw, str)
        and "oc.env:" in raw
        and str(resolved) != raw
        and len(str(resolved)) >= MIN_KNOWN_SECRET  # '5', 'None', '': no key, and common
    ):
        with _KNOWN_LOCK:
            _FROM_ENVIRONMENT.add(str(resolved))


def from_environment(value: Any) -> bool:
    """Whether ``value`` is one a config took from the environment (not to be quoted), or
    holds one that looks like a key (:func:`names_a_secret_itself`): ``depth: x${key}``
    where ``key: ${oc.env:KEY}``. A plain word or path from the environment (a project's
    name, a cache folder without digits) inside a longer value does not hide it; one that
    looks like a key does, which fails safe (the error says less)."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return False
    text = str(value)  # ${oc.decode:${oc.env:N}} gives a number
    with _KNOWN_LOCK:
        if text in _FROM_ENVIRONMENT:
            return True
        return any(t in text for t in _FROM_ENVIRONMENT if names_a_secret_itself(t))


def known_secrets() -> frozenset[str]:
    """Every remembered secret, in each form it is looked for (for tests and checks)."""
    return frozenset(form for form, _ in _KNOWN)


def forget_secrets() -> None:
    """Forget every remembered secret: for tests, which configure plugins by the hundred."""
    global _KNOWN
    with _KNOWN_LOCK:
        _KNOWN = ()
        _FRAGMENTS.clear()
        _FROM_ENVIRONMENT.clear()


#: The shortest piece of a remembered secret that is redacted on its own: a message may
#: quote a secret cut short (pydantic shows a long value as its first 24 and last 23
#: characters around ``...``; a dict's repr cuts it anywhere), and the pieces together
#: can be most of the key. Shorter pieces are left: they would match ordinary words.
MIN_SECRET_FRAGMENT = 10
#: a remembered secret's pieces of MIN_SECRET_FRAGMENT characters, as one pattern
_FRAGMENTS: dict[str, re.Pattern[str]] = {}


def _fragments(value: str) -> re.Pattern[str]:
    pattern = _FRAGMENTS.get(value)
    if pattern is None:
        size = MIN_SECRET_FRAGMENT
        pieces = dict.fromkeys(value[i : i + size] for i in range(len(value) - size + 1))
        pattern = _FRAGMENTS[value] = re.compile("|".join(map(re.escape, pieces)))
    return pattern


def _fragment_spans(text: str, value: str) -> Iterator[tuple[int, int]]:
    """Where ``text`` holds a run of at least :data:`MIN_SECRET_FRAGMENT` characters that
    is a piece of ``value``, each run taken whole."""
    match = _fragments(value).search(text)
    while match is not None:
        start, end = match.span()
        while end < len(text) and text[start : end + 1] in value:
            end += 1
        yield start, end
        match = _fragments(value).search(text, end)


def redact_known(text: str, *, pieces: bool = True) -> str:
    """``text`` with every remembered secret redacted (``sk-l…[redacted]``), wherever it is,
    and any piece of one of :data:`MIN_SECRET_FRAGMENT` characters or more (a secret
    quoted cut short: ``'sk-live-ABCDEFGH...stuvwxyz'``): a piece that begins a secret
    is shown as the secret is, any other as ``…[redacted]``.

    The whole secrets go first, then the pieces of all of them at once, found in the
    same text: two secrets that share a piece (``-0123456789``) never cut each other
    into pieces too short to be found. ``pieces=False`` looks for whole secrets only:
    for a service's answer text, which is data (ids read from it), and long."""
    known = _KNOWN
    for value, shown in known:
        if value in text:
            text = text.replace(value, shown)
    if not pieces:  # a service's answer: whole secrets only (its text is data, and long)
        return text
    spans = sorted(
        (start, end, value, shown)
        for value, shown in known
        if len(value) > MIN_SECRET_FRAGMENT
        for start, end in _fragment_spans(text, value)
    )
    if not spans:
        return text
    out: list[str] = []
    done = 0
    for start, end, value, shown in spans:
        if end <= done:
            continue  # inside a piece already redacted
        if start < done:  # overlaps it: the rest of this piece goes with it
            out[-1] = _REDACTED
            done = end
            continue
        out.append(text[done:start])
        out.append(shown if value.startswith(text[start:end]) else _REDACTED)
        done = end
    out.append(text[done:])
    return "".join(out)


def redact_traceback(exc: BaseException) -> str:
    """``exc`` with its traceback, as ``traceback.print_exception`` prints it, credentials
    redacted.

    The messages and notes of the exception and of those chained to it go through
    :func:`redact_text` (remembered secrets and URL credentials); the frames only lose
    remembered secrets, so their files, line numbers and source lines stay as
    written: a source line building a URL is code to read, not a credential.
    """
    import traceback

    chunks = traceback.TracebackException(type(exc), exc, exc.__traceback__, compact=True)
    out = []
    for chunk in chunks.format():
        frame = chunk.lstrip(" |").startswith(("File ", "[Previous line repeated"))
        out.append(redact_known(chunk) if frame else redact_text(chunk))
    return "".join(out)


class LiteralSecret:
    """A credential written into a config: where it is, and how it may be shown."""

    def __init__(self, key: str, value: str, how: str) -> None:
        self.key = key
        self.value = value
        self.how = how

    def __str__(self) -> str:
        return f"{self.key} ({self.how}: {shown_secret(self.value)})"


def _walk(
    node: Any, key: str, under_variable: bool = False, in_request: bool = False
) -> Iterator[tuple[str, str, Any, bool]]:
    """``(full key, last name, value, in a request)`` of every leaf of a mapping/list tree.

    Leaves under a key that names variables (``headers_from_env:
    {Authorization: "Bearer $TOKEN"}``) are skipped: they say where a
    secret comes from, they do not hold one. ``in a request``: the leaf is
    under one of :data:`REQUEST_FIELDS`, so its name is a service's.
    """
    if isinstance(node, Mapping):
        for name, value in node.items():
            full = f"{key}.{name}" if key else str(name)
            variable = under_variable or bool(_NAMES_A_VARIABLE.search(str(name)))
            if isinstance(value, Mapping | list):
                yield from _walk(value, full, variable, in_request or name in REQUEST_FIELDS)
            elif not variable:
                yield full, str(name), value, in_request
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _walk(value, f"{key}[{i}]", under_variable, in_request)


def find_literal_secrets(
    config: Mapping[str, Any], extra: Iterable[str] = ()
) -> list[LiteralSecret]:
    """Credentials written literally into an *unresolved* config.

    A value that is an interpolation (``${oc.env:TOKEN}``) is fine: the
    config then only names where the secret comes from. Empty values and
    ``null`` are not secrets. ``extra`` adds names from the config's ``redact:``.
    """
    extra = list(extra)
    found = []
    for key, name, value, in_request in _walk(config, ""):
        if key.startswith("hydra.") or not isinstance(value, str) or not value.strip():
            continue
        if _is_interpolation(value):
            continue
        if (is_secret_param if in_request else is_secret_name)(name, extra):
            found.append(LiteralSecret(key, value, "a key named like a credential"))
            continue
        for how, secret in _url_secrets(value, extra):
            if secret and not _is_interpolation(secret):
                found.append(LiteralSecret(key, secret, how))
    return found


def redact_text(text: str, extra: Iterable[str] = ()) -> str:
    """``text`` with the credentials of any URL in it redacted: secret-named parameters
    (``?api_key=``, ``;jsessionid=``, ``#access_token=``), a password before the host
    (``https://user:pw@host``) and a token there alone (``https://TOKEN@host``); and
    every secret this process remembers (:func:`remember_secrets`), wherever it is."""
    extra = list(extra)

    def one(match: re.Match[str]) -> str:
        url, trail = _url_and_trail(match.group(0))
        return _redact_url(url) + trail

    def _redact_url(url: str) -> str:
        # The URL is edited where a credential is, never rebuilt: urlunsplit(urlsplit(u))
        # is not u for every scheme (sqlite:///tmp/x would come back as sqlite:/tmp/x).
        if "://" not in url:
            return url
        after = url.index("://") + 3
        info = _userinfo(url)
        if info is not None:
            start, user, host, password = info
            netloc_end = start + len(url[start:].split("/", 1)[0].split("?", 1)[0])
            if password and not _is_interpolation(password):  # https://user:PASSWORD@host
                shown = f"{user}:{shown_secret(password)}@{host}"
            elif password is None and _looks_like_a_token(user):  # https://TOKEN@host
                shown = f"{shown_secret(user)}@{host}"
            else:
                shown = url[start:netloc_end]
            url = url[:start] + shown + url[netloc_end:]
            after = start + len(shown)

        def param(m: re.Match[str]) -> str:
            name, value = m.group(2), m.group(3)
            if value and is_secret_param(unquote(name), extra) and not _is_interpolation(value):
                return f"{m.group(1)}{name}={shown_secret(value)}"
            return m.group(0)

        return url[:after] + _PARAM.sub(param, url[after:])

    urls_redacted = re.sub(r"[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>]+", one, text)
    return redact_known(urls_redacted)  # a plugin's key quoted anywhere (remember_secrets)


def _url_and_trail(text: str) -> tuple[str, str]:
    """A URL found in prose, apart from the punctuation after it: ``(see http://h/x?k=v).``
    ends the URL before ``).``, so that the sentence keeps its parenthesis when the value
    before it is redacted. A closing bracket the URL opened stays in it."""
    end = len(text)
    while end and (
        text[end - 1] in ".,;:!?"
        or (text[end - 1] == ")" and text[:end].count(")") > text[:end].count("("))
        or (text[end - 1] == "]" and text[:end].count("]") > text[:end].count("["))
    ):
        end -= 1
    return text[:end], text[end:]


def redact_override_value(key: str, value: str, extra: Iterable[str] = ()) -> str:
    """The value of an override ``key=value``, as typed, safe to print in an error.

    An override refused for its key (``+retriever.api_token=sk-…`` that no plugin
    takes, ``retriever.headrs.Authorization=…`` misspelt) is said with its value;
    the value is judged by the key's last part (``api_token``) and, when it is a
    mapping or list in YAML (``retriever.headrs={X-Api-Key: …}``), by each key
    inside. A changed structure is shown as JSON; anything else keeps its text,
    with URL credentials redacted (:func:`redact_text`).
    """
    extra = list(extra)
    name = key.rsplit(".", 1)[-1].lstrip("+~")
    import yaml  # PyYAML comes with OmegaConf; only an error being said needs it

    try:
        tree = yaml.safe_load(value)
    except yaml.YAMLError:
        tree = value
    if isinstance(tree, dict | list):
        safe = redact(tree, extra, _name=name)
        if safe != tree:
            return json.dumps(safe, ensure_ascii=False, default=str)
        return redact_mapping_text(value, extra)
    if value and is_secret_name(name, extra) and not _is_interpolation(value):
        return shown_secret(value)
    return redact_mapping_text(value, extra)


#: ``Name: value`` (or ``Name:'value'``) inside a flow mapping's text, quoted or not.
_PAIR = re.compile(
    r"""['"]?([A-Za-z_][\w.-]*)['"]?\s*:\s*(\$\{[^}]*\}|'[^']*'?|"[^"]*"?|[^\s,{}\[\]'"][^,{}\[\]]*)"""
)


def redact_mapping_text(text: str, extra: Iterable[str] = ()) -> str:
    """:func:`redact_text`, and the values of secret-named keys in a mapping's text that
    no parser could read (an override Hydra refused: ``{Authorization: Bearer sk-…=}``,
    or ``{X-Api-Key:'sk-…'}``, which YAML takes for one key): judged as request
    headers are (:func:`is_secret_param`), each shown by its first characters."""
    extra = list(extra)

    def one(match: re.Match[str]) -> str:
        key, value = match.group(1), match.group(2)
        bare = value.strip().strip("'\"")
        if not bare or _is_interpolation(bare) or not is_secret_param(key, extra):
            return match.group(0)
        start = match.start(2) - match.start(0)
        return match.group(0)[:start] + shown_secret(bare)

    return _PAIR.sub(one, redact_text(text, extra))


def _names_variables(value: Any) -> bool:
    """Whether a ``*_from_env`` value names variables rather than holds a pasted key: a
    name (``SEARCH_TOKEN``; a 16-character mix of lower case and digits, as a ``ghp_…``
    token is, is not taken for one), or text with ``$NAME`` references in it."""
    if not isinstance(value, str) or not _NAMES_VARIABLES.search(value):
        return False
    if "$" in value:
        return True
    return value.upper() == value or not _looks_like_a_token(value)


def redact(node: Any, extra: Iterable[str] = (), *, _name: str = "", _request: bool = False) -> Any:
    """A copy of a config tree (mappings, lists, scalars) safe to write or print.

    ``_name`` is the key ``node`` sits under (a setting's name, when a single
    value is redacted) and ``_request`` whether it is inside a request's
    headers or body (:data:`REQUEST_FIELDS`, judged by :func:`is_secret_param`).
    """
    extra = list(extra)
    if isinstance(node, Mapping) and _name and _NAMES_A_VARIABLE.search(_name):
        # headers_from_env: {Authorization: "Bearer $SEARCH_TOKEN"} names variables; shown
        # redacted, `run-config` said "environment variable Bear…[redacted] is not set".
        # A value that names no variable (a key pasted there by mistake) is redacted.
        return {
            k: v if _names_variables(v) else redact(v, extra, _name=str(k), _request=True)
            for k, v in node.items()
        }
    if isinstance(node, Mapping):
        inside = _request or _name in REQUEST_FIELDS
        return {k: redact(v, extra, _name=str(k), _request=inside) for k, v in node.items()}
    if isinstance(node, list | tuple):
        return [redact(v, extra, _name=_name, _request=_request) for v in node]
    if isinstance(node, str):
        secret = is_secret_param if _request else is_secret_name
        if _name and secret(_name, extra) and node and not _is_interpolation(node):
            return shown_secret(node)
        return redact_text(node, extra)
    return node
