"""The HTTP solver against a real local server: protocol, retries, refusals, secrets."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest
from evalframe_mine.http_solver import HttpSolver, HttpSolverConfig
from pydantic import ValidationError

from evalframe.core.errors import ConfigError, PluginError
from evalframe.plugin.protocols import Attempt, ContextDoc, PluginContext
from evalframe.plugin.testing import SolverContract


class Agent(BaseHTTPRequestHandler):
    """Answers with the context ids; fails the first ``fail_first`` requests with ``status``."""

    seen: ClassVar[list[dict[str, Any]]] = []
    headers_seen: ClassVar[list[dict[str, str]]] = []
    fail_first: ClassVar[int] = 0
    status: ClassVar[int] = 503

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Agent.seen.append(body)
        Agent.headers_seen.append(dict(self.headers))
        if len(Agent.seen) <= Agent.fail_first:
            self.send_response(Agent.status)
            self.end_headers()
            self.wfile.write(b"try later, token s3cret-value")
            return
        out = json.dumps({"answer": ",".join(d["id"] for d in body["context"])}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def url() -> Iterator[str]:
    Agent.seen, Agent.headers_seen, Agent.fail_first, Agent.status = [], [], 0, 503
    server = ThreadingHTTPServer(("127.0.0.1", 0), Agent)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/solve"
    server.shutdown()
    server.server_close()


def attempt(docs: list[str], trial: int = 0) -> Attempt:
    return Attempt(
        task_id="b:1",
        query="q?",
        context=tuple(ContextDoc(id=d, text=d) for d in docs),
        trial=trial,
        seed=trial,
    )


def make(url: str, **kw: Any) -> HttpSolver:
    return HttpSolver(HttpSolverConfig(url=url, backoff_seconds=0, **kw), PluginContext())


class TestHttpContract(SolverContract):
    plugin_name = "http"

    @pytest.fixture
    def solver(self, url: str) -> HttpSolver:
        return make(url)

    @pytest.fixture
    def attempts(self) -> list[Attempt]:
        return [attempt(["a", "b"], 1), attempt(["c"], 2)]


def test_posts_the_protocol_request(url: str) -> None:
    assert make(url).solve(attempt(["x", "y"], 7)).text == "x,y"
    (body,) = Agent.seen
    assert body["protocol"] == "evalframe.solve/1" and body["trial"] == 7
    assert body["context"] == [{"id": "x", "text": "x"}, {"id": "y", "text": "y"}]


def test_retries_server_errors_then_answers(url: str) -> None:
    Agent.fail_first = 2
    assert make(url, retries=3).solve(attempt(["a"])).text == "a"
    assert len(Agent.seen) == 3


def test_gives_up_after_the_retries(url: str) -> None:
    Agent.fail_first = 10
    with pytest.raises(PluginError, match="after 3 attempts"):
        make(url, retries=2).solve(attempt(["a"]))


def test_a_client_error_is_not_retried_and_secrets_are_redacted(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_TOKEN", "s3cret-value")
    Agent.fail_first, Agent.status = 10, 401
    solver = make(url, headers_from_env={"Authorization": "AGENT_TOKEN"})
    with pytest.raises(PluginError) as info:
        solver.solve(attempt(["a"]))
    assert len(Agent.seen) == 1
    assert "s3cret-value" not in info.value.render() and "***" in info.value.render()
    assert Agent.headers_seen[0]["Authorization"] == "s3cret-value"


def test_credentials_come_from_the_environment(url: str) -> None:
    with pytest.raises(ValidationError, match="headers_from_env"):
        HttpSolverConfig(url=url, headers={"X-Api-Key": "literal"})
    with pytest.raises(ConfigError, match="NOT_SET_VAR"):
        make(url, headers_from_env={"Authorization": "NOT_SET_VAR"})


def test_connection_refused_is_retried_then_an_error() -> None:
    with pytest.raises(PluginError, match="connection failed"):
        make("http://127.0.0.1:9/solve", retries=1).solve(attempt([]))
