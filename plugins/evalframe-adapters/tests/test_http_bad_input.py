"""Bad input to the http and llm_recommender adapters: settings out of range, and a service
that answers with something no one should read (nested too deep, too large, a runaway id).

Each is a user-facing error (exit 2, one paragraph naming the key or the query, the limit
and the fix), never a traceback. Real servers on 127.0.0.1; the command-line checks run
``python -m evalframe`` itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from evalframe_adapters.http_adapter import HttpConfig, HttpRetriever
from evalframe_adapters.llm import LLMRecommender, LLMRecommenderConfig
from evalframe_adapters.testing import FakeServer, Reply, Request

from evalframe.core.errors import ConfigError, PluginError
from evalframe.plugin.protocols import PluginContext, Query
from evalframe.plugin.registry import RETRIEVERS, configure

Serve = Callable[[Callable[[Request], Reply]], FakeServer]
QUERY = Query(id="q01", text="how do I run it?")
#: Deeper than Python's JSON parser goes (its recursion limit is 1,000), 12 KB on the wire.
DEEP = b'{"results":' + b"[" * 6000 + b"]" * 6000 + b"}"


def make(url: str, **settings: Any) -> HttpRetriever:
    settings = {"timeout_seconds": 5, "backoff_seconds": 0.01, "retries": 0, **settings}
    return HttpRetriever(HttpConfig(url=url, **settings), PluginContext())


def answering(body: Any) -> Callable[[Request], Reply]:
    return lambda request: Reply(body=body)


def config_error(plugin: str, **settings: Any) -> ConfigError:
    """The error the config check gives for these settings of ``plugin``."""
    with pytest.raises(ConfigError) as err:
        configure(RETRIEVERS.get(plugin), settings, key="retriever")
    return err.value


# -- settings out of range: refused by the config, before anything runs ---------------------


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("http://127.0.0.1:99999/s", "Port out of range 0-65535"),
        ("http://127.0.0.1:http/s", "a port is a whole number from 1 to 65535"),
        ("http://127.0.0.1:0/s", "the URL's port is 0"),
        ("http:///s", "the URL has no host"),
        ("ftp://127.0.0.1/s", "must start with http:// or https://"),
    ],
)
def test_a_url_that_cannot_be_requested_names_the_key(url: str, said: str) -> None:
    err = config_error("http", url=url)
    assert err.key == "retriever.url"
    assert said in err.message
    err = config_error("llm_recommender", api_url=url, model="m")
    assert err.key == "retriever.api_url"
    assert said in err.message


@pytest.mark.parametrize(
    ("setting", "value", "said"),
    [
        ("timeout_seconds", 1e12, "less than or equal to 3600"),
        ("backoff_seconds", 1e12, "less than or equal to 3600"),
        ("backoff_max_seconds", 1e12, "less than or equal to 3600"),
        ("rate_limit", 1e-300, "greater than or equal to 0.001"),
        ("max_response_bytes", 10, "greater than or equal to 1024"),
    ],
)
def test_waits_and_limits_have_bounds(setting: str, value: float, said: str) -> None:
    for plugin, extra in (("http", {"url": "http://x/"}), ("llm_recommender", {"model": "m"})):
        err = config_error(plugin, **extra, **{setting: value})
        assert err.key == f"retriever.{setting}"
        assert said in err.message


def test_the_llm_delay_has_a_bound() -> None:
    err = config_error("llm_recommender", model="m", delay_seconds=1e12)
    assert err.key == "retriever.delay_seconds"
    assert "less than or equal to 3600" in err.message
    assert LLMRecommenderConfig(model="m", delay_seconds=3600).delay_seconds == 3600


def test_the_bounds_themselves_are_accepted() -> None:
    config = HttpConfig(
        url="https://127.0.0.1:65535/s",
        timeout_seconds=3600,
        backoff_seconds=3600,
        backoff_max_seconds=3600,
        rate_limit=0.001,
        max_response_bytes=1024,
    )
    assert config.timeout_seconds == 3600 and config.max_response_bytes == 1024
    assert HttpConfig(url="http://x/").max_response_bytes == 32 * 1024 * 1024
    assert HttpConfig(url="http://x/").max_id_chars == 1024


# -- answers no one should read ---------------------------------------------------------------


def test_json_nested_too_deep_is_an_unreadable_answer(serve: Serve) -> None:
    server = serve(answering(DEEP))
    with pytest.raises(PluginError) as err:
        make(server.url).retrieve(QUERY, 5)
    assert err.value.message.startswith(
        "http retriever: query 'q01' failed (not retried): the response is not JSON we can read"
    )
    assert len(err.value.render()) < 1000  # the body is quoted by its start only
    assert err.value.hint is not None and "answered, but not with JSON" in err.value.hint


def test_an_integer_too_long_to_read_is_an_unreadable_answer(serve: Serve) -> None:
    """json refuses an integer of more than 4,300 digits with a ValueError, not a
    JSONDecodeError: it was a crash."""
    server = serve(answering(b'{"results": [' + b"7" * 5000 + b"]}"))
    with pytest.raises(PluginError, match="not JSON we can read"):
        make(server.url).retrieve(QUERY, 5)


def test_an_answer_over_max_response_bytes_is_refused_naming_query_and_limit(
    serve: Serve,
) -> None:
    big = {"results": [{"id": "d1", "score": 1.0, "text": "x" * 10_000}]}
    server = serve(answering(big))
    with pytest.raises(PluginError) as err:
        make(server.url, max_response_bytes=4096).retrieve(QUERY, 5)
    size = len(json.dumps(big).encode())
    assert err.value.message == (
        f"http retriever: query 'q01' failed (not retried): the answer is "
        f"{size / 1024:.1f} KiB, over the limit of 4.0 KiB (retriever.max_response_bytes=4096)"
    )
    assert err.value.hint is not None and "raise retriever.max_response_bytes" in err.value.hint
    assert len(server.requests) == 1  # the same answer would come again: not retried
    # under the limit, the same answer is read
    ranking = make(server.url, max_response_bytes=size).retrieve(QUERY, 5)
    assert ranking is not None and ranking.doc_ids == ("d1",)


def test_an_answer_too_large_counts_missing_when_failures_are_allowed(serve: Serve) -> None:
    server = serve(answering({"results": [{"id": "d" * 3000, "score": 1.0}]}))
    r = make(server.url, max_response_bytes=1024, allow_failed_queries=True)
    assert r.retrieve(QUERY, 5) is None
    assert r.failed_queries == 1


def test_a_runaway_id_is_refused_and_quoted_by_its_start(serve: Serve) -> None:
    server = serve(answering({"results": [{"id": "d1", "score": 2}, {"id": "x" * 5000}]}))
    with pytest.raises(PluginError) as err:
        make(server.url, score_path=None).retrieve(QUERY, 5)
    assert err.value.message == (
        "http retriever: the answer for query 'q01' has a document id of 5,000 characters at "
        "result 2, over the limit of 1,024 (retriever.max_id_chars)"
    )
    assert err.value.got == "'" + "x" * 79 + "…"
    assert len(err.value.render()) < 500
    # a bare id, and an integer id, are held to the same limit
    server = serve(answering({"results": ["y" * 30]}))
    with pytest.raises(PluginError, match="id of 30 characters at result 1"):
        make(server.url, max_id_chars=20).retrieve(QUERY, 5)
    server = serve(answering({"results": [10**25]}))
    with pytest.raises(PluginError, match="id of 26 characters at result 1"):
        make(server.url, max_id_chars=20).retrieve(QUERY, 5)
    assert make(server.url, max_id_chars=26).retrieve(QUERY, 5) is not None


def test_the_llm_recommender_reads_answers_the_same_way(
    serve: Serve, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalogue = tmp_path / "tools.txt"
    catalogue.write_text("fastqc\nbwa\n")

    def chat(content: str) -> Callable[[Request], Reply]:
        body = {"choices": [{"message": {"content": content}}]}
        return answering(body)

    def llm(server: FakeServer, **settings: Any) -> LLMRecommender:
        config = LLMRecommenderConfig(
            api_url=server.url,
            model="m",
            api_key_env=None,
            catalogue_path=str(catalogue),
            retries=0,
            **settings,
        )
        return LLMRecommender(config, PluginContext())

    with pytest.raises(PluginError, match=r"query 'q01' failed .*not JSON we can read"):
        llm(serve(answering(DEEP))).retrieve(QUERY, 5)
    with pytest.raises(PluginError, match=r"over the limit of 1\.0 KiB") as err:
        llm(serve(chat("z" * 2000)), max_response_bytes=1024).retrieve(QUERY, 5)
    assert err.value.hint is not None and "retriever.max_response_bytes" in err.value.hint
    # an id the model made up is quoted by its start in the note that counts them
    r = llm(serve(chat(json.dumps(["fastqc", "n" * 5000]))))
    assert r.retrieve(QUERY, 5) is not None
    (note,) = r.notes()
    assert "(first: query 'q01', '" + "n" * 79 + "…)" in note
    assert len(note) < 300


# -- the command line: exit 2, one paragraph, no traceback -----------------------------------


def evalframe(tmp_path: Path, *overrides: str) -> subprocess.CompletedProcess[str]:
    golden = tmp_path / "golden.jsonl"
    golden.write_text(json.dumps({"id": "q01", "question": "how?", "expected_chunks": ["d1"]}))
    env = {**os.environ, "EVALFRAME_CACHE_DIR": str(tmp_path / "cache")}
    env["EVALFRAME_TRACKING"] = "none"
    command = [sys.executable, "-m", "evalframe", f"dataset.path={golden}", "corpus=none"]
    command += ["retriever=http", "stats.bootstrap=0", f"hydra.run.dir={tmp_path / 'run'}"]
    return subprocess.run(
        [*command, *overrides],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_on_the_command_line_each_is_exit_2_without_a_traceback(
    serve: Serve, tmp_path: Path
) -> None:
    deep = serve(answering(DEEP))
    runaway = serve(answering({"results": [{"id": "x" * 100_000, "score": 1}]}))
    cases = [
        (["retriever.url=http://127.0.0.1:99999/s"], "config key retriever.url: "),
        ([f"retriever.url={deep.url}", "retriever.timeout_seconds=1e12"], "3600"),
        ([f"retriever.url={deep.url}"], "query 'q01' failed (not retried): the response is not"),
        ([f"retriever.url={runaway.url}"], "over the limit of 1,024 (retriever.max_id_chars)"),
        (
            [f"retriever.url={runaway.url}", "retriever.max_response_bytes=65536"],
            "(retriever.max_response_bytes=65536)",
        ),
    ]
    for overrides, said in cases:
        done = evalframe(tmp_path, *overrides)
        assert done.returncode == 2, (overrides, done.stderr)
        assert "Traceback" not in done.stderr, overrides
        assert said in done.stderr, (overrides, done.stderr)
        assert max(len(line) for line in done.stderr.splitlines()) < 1000, overrides
