"""The command and HTTP roles of `evalframe golden build`: the evalframe.<role>/1 protocol,
every role's contract, and errors that name the role and the query."""

from __future__ import annotations

import json
import sys
import textwrap
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from evalframe_mine.roles import CommandRole, CommandRoleConfig, HttpRole, HttpRoleConfig

from evalframe.core.errors import PluginError
from evalframe.plugin.protocols import PluginContext
from evalframe.plugin.roles import (
    AdversaryReport,
    AdversaryRequest,
    AuthorRequest,
    JudgeRequest,
    OracleAnswer,
    OracleRequest,
    QueryCandidate,
    SourceRef,
)
from evalframe.plugin.testing import (
    AdversaryContract,
    AuthorContract,
    JudgeContract,
    OracleContract,
)

#: A minimal agent for every role, shared by the program and the web service.
AGENT = textwrap.dedent(
    """
    import json, sys

    def reply(req):
        role = req["role"]
        assert req["protocol"] == "evalframe." + role + "/1", req
        if role == "author":
            rec = {"query_id": req["query_id"], "query_text": "question %d" % req["slot"],
                   "task_type": req["task_type"], "difficulty": req["difficulty"],
                   "target_entity_ids": ["a.py::f%d" % req["slot"]]}
        elif role == "oracle":
            c = req["candidate"]
            ents = c["target_entity_ids"]
            rec = {"query_id": c["query_id"], "task_type": c["task_type"],
                   "difficulty": c["difficulty"],
                   "expected_entities": [{"entity_id": e} for e in ents],
                   "expected_files": sorted({e.split("::")[0] for e in ents}),
                   "expected_line_ranges": [{"file": e.split("::")[0], "start": 1, "end": 2}
                                            for e in ents]}
        elif role == "adversary":
            a = req["answer"]
            rec = {"query_id": a["query_id"], "overall_verdict": "supported",
                   "claim_verdicts": [{"claim_type": "entity", "claim": e["entity_id"],
                                       "verdict": "supported"} for e in a["expected_entities"]]}
        else:
            rec = {"query_id": req["query"]["query_id"], "verdict": "equivalent",
                   "rationale": "model " + req["model"]}
        return {"record": rec, "usage": {"input_tokens": 7, "output_tokens": 3}}

    if __name__ == "__main__":
        print(json.dumps(reply(json.load(sys.stdin))))
    """
)

SOURCE = SourceRef(root="src")
CANDIDATES = [
    QueryCandidate(
        query_id=f"q_0000{i}",
        query_text="where?",
        task_type="locate",
        difficulty="easy",
        target_entity_ids=[f"a.py::f{i}"],
    )
    for i in (1, 2)
]
ANSWERS = [
    OracleAnswer(
        query_id=c.query_id,
        task_type="locate",
        difficulty="easy",
        expected_entities=[{"entity_id": c.target_entity_ids[0]}],  # type: ignore[list-item]
        expected_files=["a.py"],
    )
    for c in CANDIDATES
]
REPORTS = [
    AdversaryReport(query_id=a.query_id, claim_verdicts=[], overall_verdict="supported")
    for a in ANSWERS
]
REQUESTS: dict[str, list[Any]] = {
    "author": [
        AuthorRequest(
            query_id=f"q_0000{i}",
            task_type="locate",
            difficulty="easy",
            slot=i,
            count=2,
            seed=i,
            source=SOURCE,
        )
        for i in (1, 2)
    ],
    "oracle": [OracleRequest(candidate=c, source=SOURCE) for c in CANDIDATES],
    "adversary": [AdversaryRequest(answer=a, source=SOURCE) for a in ANSWERS],
    "judge": [
        JudgeRequest(query=c, canonical_narrative="", adversary=r)
        for c, r in zip(CANDIDATES, REPORTS, strict=True)
    ],
}


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    path = tmp_path_factory.mktemp("agent") / "agent.py"
    path.write_text(AGENT)
    # -S -E: no site packages to import, so each call starts in milliseconds
    return [sys.executable, "-S", "-E", str(path)]


class Service(BaseHTTPRequestHandler):
    seen: ClassVar[list[dict[str, Any]]] = []
    status: ClassVar[int] = 200

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Service.seen.append(body)
        namespace: dict[str, Any] = {}
        exec(AGENT, namespace)  # the same agent, served
        out = json.dumps(namespace["reply"](body)).encode()
        self.send_response(Service.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Service)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/role"
    server.shutdown()
    server.server_close()


def command(argv: list[str], **kw: Any) -> CommandRole:
    return CommandRole(CommandRoleConfig(command=argv, model="m1", **kw), PluginContext())


def http(url: str, **kw: Any) -> HttpRole:
    return HttpRole(HttpRoleConfig(url=url, model="m2", backoff_seconds=0, **kw), PluginContext())


class _Command:
    plugin_name = "command"

    @pytest.fixture
    def role(self, agent: list[str]) -> CommandRole:
        return command(agent)


class _Http:
    plugin_name = "http"

    @pytest.fixture
    def role(self, url: str) -> HttpRole:
        return http(url)


class TestCommandAuthor(_Command, AuthorContract):
    @pytest.fixture
    def requests(self) -> list[Any]:
        return REQUESTS["author"]


class TestCommandOracle(_Command, OracleContract):
    @pytest.fixture
    def requests(self) -> list[Any]:
        return REQUESTS["oracle"]


class TestCommandAdversary(_Command, AdversaryContract):
    @pytest.fixture
    def requests(self) -> list[Any]:
        return REQUESTS["adversary"]


class TestCommandJudge(_Command, JudgeContract):
    @pytest.fixture
    def requests(self) -> list[Any]:
        return REQUESTS["judge"]


class TestHttpAuthor(_Http, AuthorContract):
    @pytest.fixture
    def requests(self) -> list[Any]:
        return REQUESTS["author"]


class TestHttpOracle(_Http, OracleContract):
    @pytest.fixture
    def requests(self) -> list[Any]:
        return REQUESTS["oracle"]


class TestHttpAdversary(_Http, AdversaryContract):
    @pytest.fixture
    def requests(self) -> list[Any]:
        return REQUESTS["adversary"]


class TestHttpJudge(_Http, JudgeContract):
    @pytest.fixture
    def requests(self) -> list[Any]:
        return REQUESTS["judge"]


def test_the_request_is_the_role_object_with_protocol_role_and_model(url: str) -> None:
    Service.seen.clear()
    reply = http(url).answer(REQUESTS["oracle"][0])
    body = Service.seen[-1]
    assert (body["protocol"], body["role"], body["model"]) == ("evalframe.oracle/1", "oracle", "m2")
    assert body["candidate"]["query_id"] == "q_00001" and body["source"] == {
        "root": "src",
        "rev": None,
    }
    assert reply.usage.input_tokens == 7 and reply.usage.output_tokens == 3


@pytest.mark.parametrize(
    ("code", "fragment"),
    [
        ("import sys; sys.exit(3)", "exited with code 3 on query 'q_00001'"),
        ("print('hello')", "printed something that is not JSON for query 'q_00001'"),
        ("print('{\"answer\": 1}')", "without a 'record' object"),
        (
            'print(\'{"record": {}, "usage": {"input_tokens": -1}}\')',
            "with a bad 'usage'",
        ),
    ],
)
def test_a_broken_program_stops_with_the_role_and_query_named(
    tmp_path: Path, code: str, fragment: str
) -> None:
    script = tmp_path / "bad.py"
    script.write_text(code)
    with pytest.raises(PluginError) as err:
        command([sys.executable, str(script)]).answer(REQUESTS["oracle"][0])
    assert fragment in err.value.message
    assert err.value.message.startswith("oracle 'command'")


def test_a_refusing_service_is_an_error_naming_the_role(url: str) -> None:
    Service.status = 403
    try:
        with pytest.raises(PluginError) as err:
            http(url).judge(REQUESTS["judge"][0])
    finally:
        Service.status = 200
    assert "judge 'http'" in err.value.message and "refused query 'q_00001'" in err.value.message
