"""Secrets a plugin was configured with are redacted wherever they turn up in text
evalframe prints or writes (docs/security.md): a plugin may quote its own key."""

from __future__ import annotations

from typing import Any

import pytest

from evalframe.core import secrets
from evalframe.core.errors import ConfigError
from evalframe.core.secrets import (
    known_secrets,
    redact_text,
    redact_traceback,
    remember_secret,
    remember_secrets,
)

KEY = "sk-live-0123456789abcdef"


@pytest.fixture(autouse=True)
def _nothing_known(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts knowing no secret, and what it learns is forgotten after it."""
    monkeypatch.setattr(secrets, "_KNOWN", ())
    monkeypatch.setattr(secrets, "_FROM_ENVIRONMENT", set())


def test_the_values_of_secret_named_settings_are_remembered_also_when_nested() -> None:
    remember_secrets(
        {
            "api_key": KEY,
            "endpoint": "https://svc.example/search?sig=Zm9vYmFyYmF6cXV4&q=1",
            "headers": {"Authorization": "Bearer tok-9f8e7d6c5b4a3210", "Accept": "text/json"},
            "headers_from_env": {"X-Api-Key": "MY_SERVICE_KEY_VARIABLE"},  # a name, not a key
            "api_key_env": "ANOTHER_VARIABLE",
            "password": "hunter2",  # shorter than 8: a common word more often than a key
            "token": "${oc.env:TOKEN}",  # unresolved: a reference
            "timeout": 30,
            "model": "text-embedding-3-large",  # long, but not secret-named
        }
    )
    assert known_secrets() == {
        KEY,
        "Zm9vYmFyYmF6cXV4",  # the URL's secret-named parameter
        "Bearer tok-9f8e7d6c5b4a3210",
        "Bearer%20tok-9f8e7d6c5b4a3210",  # URL-encoded forms of the header's value
        "Bearer+tok-9f8e7d6c5b4a3210",
        "tok-9f8e7d6c5b4a3210",  # the token without its scheme
    }


def test_a_remembered_secret_is_redacted_anywhere_in_any_text() -> None:
    remember_secret(KEY)
    remember_secret("a+b/c=d-0123456789")
    assert redact_text(f"401 Unauthorized for key={KEY} (retrying)") == (
        "401 Unauthorized for key=sk-l…[redacted] (retrying)"
    )
    assert redact_text("GET /s?k=a%2Bb%2Fc%3Dd-0123456789 refused") == (
        "GET /s?k=a%2B…[redacted] refused"
    )
    assert redact_text("nothing secret here") == "nothing secret here"


LONG = "sk-live-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghijklmnopqrstuvwxyz"


def test_a_secret_quoted_cut_short_loses_each_piece_of_ten_characters_or_more() -> None:
    """pydantic quotes a long value as its first and last 24 characters around '...';
    neither half is the whole secret, and together they are most of it."""
    import pydantic

    class Settings(pydantic.BaseModel):
        retries: int

    remember_secret(LONG)
    with pytest.raises(pydantic.ValidationError) as caught:
        Settings(retries=LONG)  # type: ignore[arg-type]  # the wrong value on purpose
    said = str(caught.value)
    # pydantic 2.14 shows a string this long as its first 24 and last 23 characters
    head, tail = LONG[:24], LONG[-23:]
    assert f"'{head}...{tail}'" in said  # the case this guards against
    shown = redact_text(said)
    assert "input_value='sk-l…[redacted]...…[redacted]'" in shown
    assert head not in shown and tail not in shown


def test_a_piece_shorter_than_ten_characters_or_not_of_the_secret_stays() -> None:
    remember_secret(LONG)
    nine, ten = LONG[30:39], LONG[30:40]  # "WXYZ01234", "WXYZ012345"
    assert redact_text(f"({nine})") == f"({nine})"
    assert redact_text(f"({ten})") == "(…[redacted])"
    # a piece that starts the secret keeps the secret's first four characters
    assert redact_text(f"key {LONG[:12]}") == "key sk-l…[redacted]"
    # the run is taken whole: ten characters match, the next six do too, ')' does not
    assert redact_text(f"({LONG[40:56]})") == "(…[redacted])"
    assert redact_text("ABCDEFGHIJ is the alphabet") == "…[redacted] is the alphabet"


def test_an_error_paragraph_quoting_a_plugins_key_is_redacted() -> None:
    remember_secrets({"api_key": KEY})
    error = ConfigError(f"the service refused api key {KEY}", key="retriever.api_key")
    assert error.render() == (
        "error: config key retriever.api_key: the service refused api key sk-l…[redacted]"
    )


def _fails(key: str) -> None:
    word = "placeholder-123"
    try:
        raise ValueError(f"bad answer from https://svc.example/q?api_key={word}")
    except ValueError as exc:
        raise RuntimeError(f"401 Unauthorized for key={key}") from exc


def test_a_traceback_loses_the_secrets_and_keeps_its_frames() -> None:
    remember_secret(KEY)
    with pytest.raises(RuntimeError) as info:
        _fails(KEY)
    text = redact_traceback(info.value)
    assert KEY not in text and KEY[4:] not in text
    lines = text.splitlines()
    assert lines[-1] == "RuntimeError: 401 Unauthorized for key=sk-l…[redacted]"
    # the chained exception is there, its message redacted as any message is
    assert "ValueError: bad answer from https://svc.example/q?api_key=plac…[redacted]" in lines
    # the frames are as Python prints them: file, line, function and the source line,
    # whose URL is code to read, not a credential
    first = _fails.__code__.co_firstlineno
    assert f'  File "{__file__}", line {first + 3}, in _fails' in lines
    assert '    raise ValueError(f"bad answer from https://svc.example/q?api_key={word}")' in lines
    assert f'  File "{__file__}", line {first + 5}, in _fails' in lines
    assert '    raise RuntimeError(f"401 Unauthorized for key={key}") from exc' in lines
    assert text.count("Traceback (most recent call last):") == 2


def test_a_warning_quoting_a_known_secret_is_redacted_on_stderr_and_where_it_is_kept(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from evalframe.core.messages import kept, warn

    remember_secret(KEY)
    with kept() as said:
        warn(f"the service said: key {KEY} is rate limited; see https://x.example/?token=abcdefgh")
    shown = (
        "the service said: key sk-l…[redacted] is rate limited; "
        "see https://x.example/?token=…[redacted]"  # 8 characters: none shown
    )
    assert capsys.readouterr().err == f"warning: {shown}\n"
    assert said == [shown]  # what summary.json and the page say


def test_the_values_under_a_users_redact_names_are_remembered(project: Any) -> None:
    """A name the user lists under ``redact:`` is as secret as the built-in names: its
    value is redacted wherever a message quotes it, not only in the files written."""
    from evalframe.pipeline.config import validate_experiment
    from tests.conftest import raw_config

    validate_experiment(raw_config(project, description="acme-tenant-7f3a9c21"))
    assert known_secrets() == frozenset()  # not secret-named, not listed: a description
    validate_experiment(
        raw_config(project, description="acme-tenant-7f3a9c21", redact=["description"])
    )
    assert "acme-tenant-7f3a9c21" in known_secrets()
    assert redact_text("tenant acme-tenant-7f3a9c21 unknown") == "tenant acme…[redacted] unknown"


@pytest.mark.parametrize(
    ("value", "is_secret"),
    [
        ("OPENAI_API_KEY", False),
        ("AWS_SECRET_ACCESS_KEY_2", False),  # a variable's name, digits and all
        ("Bearer $SEARCH_TOKEN", False),
        ("${oc.env:KEY}", False),
        ("retrieval-py311", False),  # `conda_env: retrieval-py311` names an environment
        ("sk-live-0123456789abcdef", True),
        ("ghp_abcdefghij1234567890", True),  # a valid identifier, and a token
        ("sk_live_0123456789abcdef", True),
        ("Bearer tok-9f8e7d6c5b4a3210", True),
        ("ab12cd34ef56ab78cd90", True),  # a hex key
    ],
)
def test_a_key_given_where_its_variables_name_belongs_is_told_apart(
    value: str, is_secret: bool
) -> None:
    from evalframe.core.secrets import names_a_secret_itself

    assert names_a_secret_itself(value) is is_secret
    remember_secrets({"api_key_env": value})
    assert (value.split()[-1] in known_secrets()) is is_secret


def test_an_answer_loses_whole_secrets_only_and_a_message_their_pieces_too() -> None:
    """Pieces are for messages that quote a secret cut short; a service's answer is data
    (ids read from it) and long, and scanning it for every piece cost 50-1000 times
    more."""
    from evalframe.core.secrets import redact_known

    remember_secret(LONG)
    text = f"doc-1 doc-2 {LONG[:20]}"
    assert redact_known(text, pieces=False) == text
    assert redact_known(text) == "doc-1 doc-2 sk-l…[redacted]"


def test_a_value_from_the_environment_is_told_also_inside_a_longer_text() -> None:
    """``key: ${oc.env:KEY}`` and ``depth: x${key}``: depth's own setting reads no
    variable, yet its value holds the key; an error about depth must not quote it."""
    raw = {"key": "${oc.env:EF_KEY}", "depth": "x${key}", "n": "${oc.env:EF_N}"}
    resolved = {"key": "sk-live-0123456789", "depth": "xsk-live-0123456789", "n": "5"}
    secrets.remember_environment_values(raw, resolved)
    assert secrets.from_environment("sk-live-0123456789")
    assert secrets.from_environment("xsk-live-0123456789")
    assert not secrets.from_environment("5")  # shorter than 8 characters: not remembered
    assert not secrets.from_environment("x")


def test_a_word_or_path_from_the_environment_hides_only_itself() -> None:
    raw = {"project": "${oc.env:EF_PROJECT}", "cache": "${oc.env:EF_CACHE}", "n": "${N}"}
    resolved = {"project": "evalframe", "cache": "/home/me/.cache/evalframe", "n": 12345678}
    secrets.remember_environment_values({**raw, "n": "${oc.decode:${oc.env:EF_N}}"}, resolved)
    assert secrets.from_environment("evalframe")
    assert secrets.from_environment("/home/me/.cache/evalframe")
    assert secrets.from_environment(12345678)  # decoded to a number, quoted all the same
    # inside a longer value, only what looks like a key is hidden
    assert not secrets.from_environment("evalframe/data/golden.jsonl")
    assert not secrets.from_environment("/home/me/.cache/evalframe/x")
    assert not secrets.from_environment(True)
