"""Secrets (#16, docs/security.md): refused before anything is written, redacted everywhere.

Real parts: the command line in a subprocess, Hydra's own output folders, a
real retrieval service on 127.0.0.1 and a real MLflow store. After each run,
every byte evalframe left on disk and printed is searched for the secret.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from evalframe_adapters.testing import FakeServer, Reply, Request

from evalframe.core.secrets import (
    find_literal_secrets,
    is_secret_name,
    is_secret_param,
    redact,
    redact_text,
    url_secrets,
)
from evalframe.plugin.registry import validation_problems
from tests.conftest import Project

SECRET = "sk-live-0123456789abcdef"
DOCS = {"how do i install the tool with pip?": ["install"]}


def answer(request: Request) -> Reply:
    query = str(request.body.get("query", "")).lower() if isinstance(request.body, dict) else ""
    return Reply(body={"results": [{"id": d, "score": 1.0} for d in DOCS.get(query, ["gates"])]})


@pytest.fixture
def server() -> Iterator[FakeServer]:
    srv = FakeServer(answer)
    yield srv
    srv.close()


def everything_written(root: Path) -> bytes:
    """Every file under ``root`` (run folders, .hydra/, multirun.yaml, the MLflow store)."""
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


def assert_nowhere(secret: str, root: Path, *texts: str) -> None:
    blob = everything_written(root)
    assert secret.encode() not in blob
    assert secret[4:].encode() not in blob  # not even the part after the shown prefix
    for text in texts:
        assert secret not in text and secret[4:] not in text


@pytest.mark.parametrize(
    ("override", "sweep"),
    [
        (f"retriever.url='http://127.0.0.1:9/s?q=1&api_key={SECRET}'", False),
        (f"retriever.url='http://127.0.0.1:9/s?q=1&api_key={SECRET}'", True),
        (f"+retriever.headers.Authorization=Bearer {SECRET}", False),
        (f"+retriever.token={SECRET}", False),
        # a service's names for its key (a request's query parameter and header)
        (f"retriever.url='http://127.0.0.1:9/s?key={SECRET}'", False),
        (f"+retriever.headers.X-Goog-Key={SECRET}", False),
        # a swept value: the sweep's config holds none of its jobs' values (each is checked)
        (f"retriever.url='http://u:{SECRET}@127.0.0.1:9/s','http://127.0.0.1:9/s'", True),
        (f"+retriever.headers={{A:b}},{{Authorization:'Bearer {SECRET}'}}", True),
        # a token before the host, and the names services give a password or a session
        (f"retriever.url='https://{SECRET}@127.0.0.1:9/s'", False),
        (f"retriever.url='http://127.0.0.1:9/s?pwd={SECRET}'", False),
        (f"retriever.url='http://127.0.0.1:9/s;jsessionid={SECRET}'", False),
    ],
    ids=[
        *("url-parameter", "url-parameter-sweep", "header", "secret-named-key", "key", "goog"),
        *("swept-url", "swept-headers", "token-user", "pwd", "jsessionid"),
    ],
)
def test_a_literal_secret_is_refused_before_anything_is_written(
    project: Project, override: str, sweep: bool
) -> None:
    args = ["-m"] if sweep else []
    res = project.run(*args, "+experiment=quickstart", "retriever=http", override, "tracking=none")
    assert res.code == 2, res.stderr
    assert "Traceback" not in res.stderr
    assert "a credential is written into the config" in res.stderr
    assert "oc.env" in res.stderr  # the hint says how to do it instead
    assert not (project.root / "outputs").exists() and not (project.root / "multirun").exists()
    assert_nowhere(SECRET, project.root, res.stdout, res.stderr)


@pytest.mark.slow
@pytest.mark.parametrize(
    "command",
    [["mine", "+mine=mine_demo"], ["golden", "build", "+build=knowcode_demo"]],
    ids=["mine", "golden-build"],
)
@pytest.mark.parametrize("sweep", [False, True], ids=["run", "sweep"])
def test_the_commands_beside_a_run_refuse_a_literal_secret_too(
    project: Project, command: list[str], sweep: bool
) -> None:
    """`evalframe mine` and `golden build` compose with Hydra too, which copies the config
    to .hydra/ (or multirun.yaml) before the first job: refused before that copy."""
    args = [*command, *(["-m"] if sweep else []), f"+solver_token={SECRET}"]
    res = project.run(*args, f"hydra.run.dir={project.root / 'o'}",
                      f"hydra.sweep.dir={project.root / 'm'}")  # fmt: skip
    assert res.code == 2, res.stderr
    assert "Traceback" not in res.stderr
    assert "a credential is written into the config" in res.stderr
    assert "solver_token" in res.stderr
    assert not (project.root / "o").exists() and not (project.root / "m").exists()
    assert_nowhere(SECRET, project.root, res.stdout, res.stderr)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("sweep", "param"),
    [(False, "api_key"), (True, "api_key"), (False, "key")],
    ids=["run", "sweep", "named-key"],
)
def test_a_secret_from_the_environment_reaches_the_service_and_nothing_else(
    project: Project,
    server: FakeServer,
    monkeypatch: pytest.MonkeyPatch,
    sweep: bool,
    param: str,
    mlflow_store: Callable[[Path], str],
) -> None:
    """The reference stays a reference everywhere evalframe writes the overrides as typed
    (the MLflow run name and the sweep's tags among them)."""
    monkeypatch.setenv("EF_TEST_SEARCH_KEY", SECRET)
    store = project.root / "mlflow.db"
    mlflow_store(store)
    res = project.run(
        *(["-m", f"hydra.sweep.dir={project.root / 'multirun'}"] if sweep else []),
        "+experiment=quickstart",
        "retriever=http",
        f"retriever.url='{server.url}/search?{param}=${{oc.env:EF_TEST_SEARCH_KEY}}'",
        "tracking=mlflow",
        f"tracking.uri=sqlite:///{store}",
        timeout=240,
    )
    assert res.code in (0, 1), res.stderr  # a gate verdict either way; the point is the secret
    assert server.requests and all(r.path.endswith(f"?{param}={SECRET}") for r in server.requests)
    assert store.is_file()
    with sqlite3.connect(store) as db:  # the store has the run, with the URL's key redacted
        params = dict(db.execute("select key, value from params").fetchall())
    assert "sk-l…[redacted]" in params["retriever.url"]
    assert_nowhere(SECRET, project.root, res.stdout, res.stderr)


@pytest.mark.parametrize(
    ("override", "key"),
    [
        (
            "+retriever.headers_from_env={Authorization: 'Bearer ${oc.env:EF_TEST_SEARCH_KEY}'}",
            "retriever.headers_from_env.Authorization",
        ),
        ("retriever.api_key_env=${oc.env:EF_TEST_SEARCH_KEY}", "retriever.api_key_env"),
    ],
    ids=["headers_from_env", "api_key_env"],
)
def test_the_secret_itself_where_its_variables_name_belongs_is_refused_unsaid(
    project: Project, monkeypatch: pytest.MonkeyPatch, override: str, key: str
) -> None:
    """`${oc.env:KEY}` in a setting that takes a variable's name resolves to the key: the
    http retriever said "environment variable Bearer sk-live-… is not set" (twice, with
    the hint), and llm_recommender sent "Bearer ${sk-live-…}" and quoted it after a 401."""
    monkeypatch.setenv("EF_TEST_SEARCH_KEY", SECRET)
    retriever = "retriever=http" if "headers" in override else "retriever=llm_recommender"
    more = (
        ["retriever.url=http://127.0.0.1:9/s"]
        if "headers" in override
        else ["retriever.api_url=http://127.0.0.1:9/v1", "retriever.model=m"]
    )
    res = project.run(
        *project.data_args(), retriever, *more, override, "tracking=none", "hydra.run.dir=out"
    )
    assert res.code == 2, res.stderr
    assert f"error: config key {key}: " in res.stderr
    assert "may be the" in res.stderr and "Traceback" not in res.stderr
    assert_nowhere(SECRET, project.root, res.stdout, res.stderr)


@pytest.mark.parametrize(
    "override",
    [
        "retriever.timeout_seconds=${oc.env:EF_TEST_SEARCH_KEY}",
        "depth=${oc.env:EF_TEST_SEARCH_KEY}",
    ],
    ids=["plugin setting", "experiment setting"],
)
def test_a_value_from_the_environment_is_not_quoted_where_it_does_not_fit(
    project: Project, monkeypatch: pytest.MonkeyPatch, override: str
) -> None:
    """The wrong variable in a number setting: "Input should be a valid number ... (got
    'sk-live-...')" printed the key in full (the setting's name is no secret's)."""
    monkeypatch.setenv("EF_TEST_SEARCH_KEY", SECRET)
    more = (
        ["retriever=http", "retriever.url=http://127.0.0.1:9/s"] if "retriever" in override else []
    )
    res = project.run(*project.data_args(), *more, override, "tracking=none", "hydra.run.dir=o")
    assert res.code == 2, res.stderr
    key = override.split("=")[0]
    assert f"error: config key {key}: " in res.stderr
    assert "(got the value of an ${oc.env:...}, not shown)" in res.stderr
    assert_nowhere(SECRET, project.root, res.stdout, res.stderr)


@pytest.mark.parametrize(
    "overrides",
    [
        ["+retriever.tok=${oc.env:EF_TEST_SEARCH_KEY}"],
        ["+tag=${oc.env:EF_TEST_SEARCH_KEY}"],
        ["+retriever.k9=${oc.env:EF_TEST_SEARCH_KEY}", "depth=x${retriever.k9}"],
    ],
    ids=["unknown plugin key", "unknown experiment key", "through another setting"],
)
def test_a_value_from_the_environment_is_not_quoted_under_an_unknown_key(
    project: Project, monkeypatch: pytest.MonkeyPatch, overrides: list[str]
) -> None:
    """``+tag=${oc.env:KEY}``: "unknown key (got 'sk-live-...')" printed the key, and so
    did a setting whose value holds it through another (``depth=x${...}``)."""
    monkeypatch.setenv("EF_TEST_SEARCH_KEY", SECRET)
    res = project.run(*project.data_args(), *overrides, "tracking=none", "hydra.run.dir=o")
    assert res.code == 2, res.stderr
    assert "(got the value of an ${oc.env:...}, not shown)" in res.stderr
    assert "Traceback" not in res.stderr
    assert_nowhere(SECRET, project.root, res.stdout, res.stderr)


@pytest.mark.slow
def test_a_password_in_the_tracking_uri_is_used_but_never_written_or_printed(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``https://user:${oc.env:PW}@host``: the upload may use it (here the server is down,
    so the record is kept for `evalframe sync`); the record, config.yaml and the warning
    show the password redacted."""
    monkeypatch.setenv("EF_TEST_MLFLOW_PW", SECRET)
    res = project.run(
        "+experiment=quickstart",
        "tracking=mlflow",
        "tracking.uri='http://user:${oc.env:EF_TEST_MLFLOW_PW}@127.0.0.1:9'",
        "tracking.timeout_seconds=1",
        "tracking.retries=0",
        f"hydra.run.dir={project.root / 'run'}",
    )
    assert res.code in (0, 1), res.stderr
    assert "could not log run to http://user:sk-l…[redacted]@127.0.0.1:9" in res.stderr
    assert (project.root / "run" / "mlflow_pending.json").is_file()
    assert_nowhere(SECRET, project.root, res.stdout, res.stderr)


def test_a_url_password_is_a_credential_like_a_query_parameter() -> None:
    found = find_literal_secrets({"tracking": {"uri": f"https://me:{SECRET}@mlflow.example"}})
    assert [(f.key, f.how) for f in found] == [("tracking.uri", "URL password")]
    assert not find_literal_secrets({"tracking": {"uri": "https://me:${oc.env:PW}@host"}})
    assert not find_literal_secrets({"tracking": {"uri": "https://me@host:5000/x"}})
    text = f"to https://me:{SECRET}@host:5000/p?api_key={SECRET}&q=1."
    assert redact_text(text) == (
        "to https://me:sk-l…[redacted]@host:5000/p?api_key=sk-l…[redacted]&q=1."
    )
    assert redact_text("https://me:${oc.env:PW}@host") == "https://me:${oc.env:PW}@host"


def test_names_that_look_secret_are_whole_words() -> None:
    for name in ("api_key", "apiKey", "X-Api-Key", "Authorization", "db_password", "token"):
        assert is_secret_name(name), name
    for name in ("max_tokens", "author", "tokens_path", "api_key_env", "headers_from_env"):
        assert not is_secret_name(name), name
    assert is_secret_name("dsn", ["dsn"])


def test_redaction_keeps_four_characters_at_most_and_leaves_references_alone() -> None:
    cfg = {
        "a": {"password": "hunter2-hunter2"},
        "url": "https://h/x?k=1&token=abcdefghijklmnop",
        "ref": "https://h/x?token=${oc.env:T}",
        "short": {"secret": "abc"},
    }
    out = redact(cfg)
    assert out["a"]["password"] == "hunt…[redacted]"
    assert out["url"] == "https://h/x?k=1&token=abcd…[redacted]"
    assert out["ref"] == cfg["ref"]
    assert out["short"]["secret"] == "…[redacted]"
    assert redact_text("see https://h/x?api_key=0123456789abcdef now") == (
        "see https://h/x?api_key=0123…[redacted] now"
    )
    assert find_literal_secrets(cfg) and not find_literal_secrets({"ref": cfg["ref"]})


def test_settings_that_name_variables_are_not_secrets() -> None:
    cfg = {
        "retriever": {
            "headers_from_env": {"Authorization": "Bearer $SEARCH_TOKEN"},
            "api_key_env": "OPENAI_API_KEY",
        }
    }
    assert find_literal_secrets(cfg) == []
    # and written as they are: config.yaml showed `Bear…[redacted]`, and `run-config` of
    # that file said "environment variable Bear…[redacted] is not set"
    assert redact(cfg) == cfg
    # a key pasted there by mistake is not a variable's name: redacted all the same
    pasted = {"headers_from_env": {"Authorization": "ghp_abcdEFGH1234ijklMNOP5678"}}
    assert redact(pasted) == {"headers_from_env": {"Authorization": "ghp_…[redacted]"}}


@pytest.mark.parametrize(
    "text",
    [
        "mlflow: logged run 1 to sqlite:///tmp/x/mlflow.db",  # empty host: urlunsplit drops //
        "file:///tmp/mlruns",
        "sqlite:////abs/path.db",
        "http://127.0.0.1:5000/#/experiments/1?workflowType=machine_learning",
        "https://h/p?",
        "https://h/p?a=1&b=&c#frag",
        "postgresql+psycopg2://user@db:5432/mlflow",
    ],
)
def test_a_url_without_credentials_is_left_byte_for_byte(text: str) -> None:
    """Redaction edits a URL where a credential is and nowhere else: an MLflow store's
    address printed or stored after redaction must still open the same store."""
    assert redact_text(text) == text
    assert redact({"tracking": {"uri": text}}) == {"tracking": {"uri": text}}


def test_credentials_before_the_host_and_after_the_path_are_redacted() -> None:
    """A token as the user (``https://TOKEN@host``), a path parameter (``;jsessionid=``)
    and a fragment's (``#access_token=``, OAuth's implicit flow); a short user name and
    an ssh user stay as they are."""
    assert redact_text(f"https://{SECRET}@h/x") == "https://sk-l…[redacted]@h/x"
    assert redact_text(f"http://h/a;jsessionid={SECRET}?q=1") == (
        "http://h/a;jsessionid=sk-l…[redacted]?q=1"
    )
    assert redact_text(f"http://h/cb#access_token={SECRET}") == (
        "http://h/cb#access_token=sk-l…[redacted]"
    )
    for kept in ("https://me@h/x", "ssh://git@github.com/o/r", "https://${oc.env:T}@h"):
        assert redact_text(kept) == kept
    assert url_secrets(f"https://u:{SECRET}@h/s?api_key={SECRET}&q=1") == [SECRET]
    assert url_secrets("https://u:${oc.env:P}@h/s?key=${oc.env:K}") == []


def test_a_redacted_url_keeps_everything_but_the_credentials() -> None:
    text = f"sqlite:///tmp/m.db and postgresql://me:{SECRET}@db:5432/x?token={SECRET}#top"
    assert redact_text(text) == (
        "sqlite:///tmp/m.db and postgresql://me:sk-l…[redacted]@db:5432/x?token=sk-l…[redacted]#top"
    )


def test_what_a_request_carries_is_judged_by_a_services_names() -> None:
    """A query parameter, a header or a body field named ``key`` (or ending in ``key``,
    or with ``session``) carries a credential; a config key of evalframe's own so named
    does not (``sort_key: title`` is a setting)."""
    for name in ("key", "X-Goog-Key", "Ocp-Apim-Subscription-Key", "subscription-key",
                 "X-Session-Id", "api_key", "Authorization", "pwd", "pass", "passcode", "jwt",
                 "sessionid", "JSESSIONID"):  # fmt: skip
        assert is_secret_param(name), name
    for name in ("q", "monkey", "keys", "key_env", "max_tokens", "keyword", "pass_at", "passage"):
        assert not is_secret_param(name), name
    assert not is_secret_name("pass_at")  # report.pass_at is a setting
    assert not is_secret_name("key") and not is_secret_name("sort_key")
    cfg = {
        "sort_key": "title",
        "retriever": {
            "url": f"https://h/s?key={SECRET}",
            "headers": {"X-Goog-Key": SECRET, "Accept": "application/json"},
            "body_template": {"key": SECRET, "query": "{query}"},
        },
    }
    found = {(f.key, f.how) for f in find_literal_secrets(cfg)}
    assert found == {
        ("retriever.url", "URL query parameter 'key'"),
        ("retriever.headers.X-Goog-Key", "a key named like a credential"),
        ("retriever.body_template.key", "a key named like a credential"),
    }
    shown = redact(cfg)
    assert shown["sort_key"] == "title"
    assert shown["retriever"]["url"] == "https://h/s?key=sk-l…[redacted]"
    assert shown["retriever"]["headers"] == {
        "X-Goog-Key": "sk-l…[redacted]",
        "Accept": "application/json",
    }
    assert shown["retriever"]["body_template"] == {"key": "sk-l…[redacted]", "query": "{query}"}


def test_a_refused_setting_is_shown_redacted_in_its_error() -> None:
    """A plugin that refuses its headers says what it was given, redacted (it said
    ``got {'X-Goog-Key': 'sk-live-...'}`` in full)."""
    from pydantic import BaseModel, ValidationError, field_validator

    class Settings(BaseModel):
        headers: dict[str, str]

        @field_validator("headers")
        @classmethod
        def _no(cls, value: dict[str, str]) -> dict[str, str]:
            raise ValueError("header looks like a credential")

    with pytest.raises(ValidationError) as err:
        Settings(headers={"X-Goog-Key": SECRET})
    ((where, what),) = validation_problems(err.value, "retriever")
    assert where == "retriever.headers"
    assert SECRET not in what and SECRET[4:] not in what
    assert "'X-Goog-Key': 'sk-l…[redacted]'" in what


def test_cfg_job_resolve_prints_the_config_redacted(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--cfg job --resolve`` makes Hydra print values, those from the environment too:
    evalframe prints them as it writes every config, redacted."""
    monkeypatch.setenv("EF_TEST_SEARCH_KEY", SECRET)
    url = "retriever.url='http://127.0.0.1:9/s?api_key=${oc.env:EF_TEST_SEARCH_KEY}'"
    res = project.run("--cfg", "job", "--resolve", "+experiment=quickstart", "retriever=http", url)
    assert res.code == 0, res.stderr
    assert "url: http://127.0.0.1:9/s?api_key=sk-l…[redacted]" in res.stdout
    assert "dataset:" in res.stdout and "metrics:" in res.stdout  # the whole config, as YAML
    assert_nowhere(SECRET, project.root, res.stdout, res.stderr)
    package = ["--cfg", "job", "--resolve", "--package", "retriever"]
    res = project.run(*package, "+experiment=quickstart", "retriever=http", url)
    assert res.code == 0, res.stderr
    assert res.stdout.startswith("# @package retriever\nname: http\n")
    assert SECRET not in res.stdout and "api_key=sk-l…[redacted]" in res.stdout


@pytest.mark.parametrize(
    "flags",
    [["--cfg", "job"], ["--cfg", "hydra"], ["--cfg", "all"], ["--info", "config"], ["--info"]],
)
@pytest.mark.parametrize("where", ["override", "experiment file"])
def test_cfg_and_info_refuse_a_literal_secret_as_a_run_does(
    project: Project, flags: list[str], where: str
) -> None:
    """``--cfg``/``--info`` print the config with no job, so none of the checks a run makes
    on it: a header written into an override or an experiment file was printed whole."""
    if where == "override":
        args = [
            "+experiment=quickstart",
            "retriever=http",
            f"retriever.headers={{Authorization: 'Bearer {SECRET}'}}",
        ]
    else:
        experiment = project.root / "conf" / "experiment" / "leaky.yaml"
        experiment.parent.mkdir(parents=True, exist_ok=True)
        experiment.write_text(
            "# @package _global_\ndefaults:\n  - override /retriever: http\n"
            f"retriever:\n  url: http://127.0.0.1:9/\n  headers:\n    X-Api-Key: {SECRET}\n"
        )
        args = ["+experiment=leaky"]
    res = project.run(*flags, *args, "retriever.url=http://127.0.0.1:9/")
    assert res.code == 2, res.stdout[-2000:] + res.stderr
    assert "a credential is written into the config" in res.stderr
    if where != "override":
        experiment.unlink()  # the user's own file: nothing else may hold the secret
    assert_nowhere(SECRET, project.root, res.stdout, res.stderr)


def test_cfg_job_prints_a_config_without_secrets_as_hydra_does(project: Project) -> None:
    res = project.run("--cfg", "job", "+experiment=quickstart", "retriever=http")
    assert res.code == 0, res.stderr
    assert "retriever:\n  name: http" in res.stdout and "dataset:" in res.stdout


def test_a_url_in_a_sentence_keeps_the_punctuation_after_it() -> None:
    """The parenthesis closing a sentence was swallowed with the redacted value."""
    text = f"query 'q1' failed (http://h:1/s?api_key={SECRET}). See (http://h/wiki/A_(b)?token={SECRET})"
    assert redact_text(text) == (
        "query 'q1' failed (http://h:1/s?api_key=sk-l…[redacted]). "
        "See (http://h/wiki/A_(b)?token=sk-l…[redacted])"
    )


@pytest.mark.parametrize(
    "override",
    [
        f"+retriever.api_token={SECRET}",  # a key no plugin takes: pydantic's "unknown key"
        f"retriever.headrs.Authorization=Bearer_{SECRET}",  # a misspelt section: Hydra's
        f"retriever.headrs={{X-Api-Key: {SECRET}}}",  # a mapping under a misspelt key
        f"retriever.headrs={{X-Api-Key:'{SECRET}'}}",  # no space: one key to YAML
        f"retriever.headers={{Authorization: Bearer {SECRET}=}}",  # Hydra cannot read it
        f"retriever.headers={{'X-Api-Key': {SECRET}}}}}",  # nor this
        f"+retriever.headers_from_env={{Authorization: {SECRET}}}",
        f"+my_token={SECRET}",
    ],
)
def test_an_override_refused_for_its_key_is_said_with_its_value_redacted(
    project: Project, override: str
) -> None:
    """The error said the override back whole (got ...=sk-live-…, and a hint repeating it):
    the key was wrong, the secret printed all the same."""
    res = project.run(*project.data_args(), override, "tracking=none")
    assert res.code == 2, res.stderr
    assert res.stderr.startswith("error: config key ")
    assert_nowhere(SECRET, project.root, res.stdout, res.stderr)
    assert "…" in res.stderr  # shown by its first four characters at most ("sk-l…")


def test_a_mapping_no_parser_reads_has_its_secret_values_redacted() -> None:
    from evalframe.core.secrets import redact_mapping_text as shown

    assert shown(f"{{X-Api-Key:'{SECRET}'}}") == "{X-Api-Key:sk-l…[redacted]}"
    assert shown(f"{{Authorization: Bearer {SECRET}=}}") == "{Authorization: Bear…[redacted]}"
    assert shown(f"{{'X-Api-Key': {SECRET}}}}}") == "{'X-Api-Key': sk-l…[redacted]}}"
    assert shown("{Accept: json, k: 3}") == "{Accept: json, k: 3}"  # nothing secret: as typed
    assert shown("{Authorization: ${oc.env:T}}") == "{Authorization: ${oc.env:T}}"


def test_an_unreadable_mapping_override_is_not_told_to_become_a_string(project: Project) -> None:
    """The hint quoted the whole mapping, which would make it a string, not headers."""
    res = project.run(*project.data_args(), "retriever.headers={Accept: text plain=}")
    assert res.code == 2, res.stderr
    assert "quote each value inside the mapping" in res.stderr
    assert """'retriever.headers={Name: "a value with spaces or ="}'""" in res.stderr


def test_an_override_value_is_redacted_by_its_key_and_the_keys_inside_it() -> None:
    from evalframe.core.secrets import redact_override_value as shown

    assert shown("retriever.api_token", SECRET) == "sk-l…[redacted]"
    assert shown("retriever.k1", "1.2") == "1.2"  # not a secret's name: as typed
    assert shown("retriever.headrs", f"{{X-Api-Key: {SECRET}, Accept: json}}") == (
        '{"X-Api-Key": "sk-l…[redacted]", "Accept": "json"}'
    )
    assert shown("retriever.headrs", "{Accept: json}") == "{Accept: json}"  # unchanged: as typed
    assert shown("x.url", f"http://h/s?api_key={SECRET}") == "http://h/s?api_key=sk-l…[redacted]"
    assert shown("x.token", "${oc.env:T}") == "${oc.env:T}"  # a reference, not the secret


def test_a_plugin_configs_repr_and_an_experiments_show_no_secret(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A notebook shows `result.pipeline` by its repr: the experiment's resolved config
    (raw) and each plugin's settings held the key an ${oc.env:...} had resolved to."""
    from evalframe.pipeline.config import validate_experiment
    from evalframe.plugin.protocols import PluginConfig

    class Settings(PluginConfig):
        url: str
        api_key: str
        headers: dict[str, str] = {}
        k: int = 3

    settings = Settings(
        url=f"http://h/s?api_key={SECRET}", api_key=SECRET, headers={"Authorization": SECRET}
    )
    assert SECRET[4:] not in repr(settings) and "k=3" in repr(settings)
    assert settings.api_key == SECRET  # the value itself is the plugin's to use
    from evalframe.app.compose import compose_config

    monkeypatch.setenv("SEARCH_KEY", SECRET)  # the recommended way: resolved when composed
    url = "retriever.url='http://127.0.0.1:9/s?api_key=${oc.env:SEARCH_KEY}'"
    composed = compose_config(["+experiment=quickstart", "retriever=http", url])
    exp = validate_experiment(composed.raw)
    assert SECRET in str(exp.retriever.config.url)  # type: ignore[union-attr]  # http's
    assert SECRET[4:] not in repr(exp)
    assert "api_key=sk-l…[redacted]" in repr(exp.retriever)


def test_the_python_api_refuses_a_literal_secret_as_the_command_line_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """evalframe.run sent the key to the service and kept it in result.pipeline: now the
    same ConfigError as the command line, before anything runs or is written."""
    import evalframe
    from evalframe.core.errors import ConfigError

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EVALFRAME_TRACKING", "none")
    monkeypatch.setenv("EVALFRAME_CACHE_DIR", str(tmp_path / "cache"))
    url = f"retriever.url='http://127.0.0.1:9/s?api_key={SECRET}'"
    with pytest.raises(ConfigError) as err:
        evalframe.run(
            golden=[{"id": "q1", "text": "alpha", "relevant": ["a"]}],
            overrides=["retriever=http", url],
            progress=False,
        )
    assert err.value.key == "retriever.url"
    assert "a credential is written into the config" in err.value.message
    assert SECRET[4:] not in err.value.render()
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]


def test_a_label_beyond_a_c_int_is_refused_by_the_model() -> None:
    """10**30 given in Python overflowed in the metric engine (a raw OverflowError)."""
    from pydantic import ValidationError

    from evalframe.core.records import LABEL_MAX, LABEL_MIN
    from evalframe.core.types import GoldenQuery

    GoldenQuery(id="q", text="t", judgments={"a": LABEL_MAX, "b": LABEL_MIN})
    for label in (LABEL_MAX + 1, LABEL_MIN - 1, 10**30):
        with pytest.raises(ValidationError):
            GoldenQuery(id="q", text="t", judgments={"a": label})
