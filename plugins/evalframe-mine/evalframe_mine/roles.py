"""The golden-build roles as programs or web services: your LLM agents without writing Python.

``evalframe golden build`` asks four roles (author, oracle, adversary, judge)
for KnowCode's records. ``command`` and ``http`` play any of them, with the
same machinery as the mining solvers (:mod:`._proc` runs a program with a JSON
request on stdin and a timeout; :meth:`HttpSolver.post` POSTs with retries,
backoff and credentials from the environment).

Request (``evalframe.<role>/1``), on a command's stdin or as the POST body:
the role's request object (:mod:`evalframe.plugin.roles`) plus ``protocol``,
``role`` and ``model``::

    {"protocol": "evalframe.oracle/1", "role": "oracle", "model": "gpt-5",
     "candidate": {<QueryCandidate>}, "source": {"root": "src", "rev": null},
     "feedback": []}

Reply, on stdout or as the response body: the record in the reference's
schema and, optionally, the tokens the call used::

    {"record": {<OracleAnswer>}, "usage": {"input_tokens": 5120, "output_tokens": 870}}

A program that exits non-zero, prints something that is not such an object,
or runs past ``timeout_seconds`` stops the build with an error naming the
role and the query; every reply already received is cached, so re-running
resumes. A record that does not fit its schema is not an error: the build
rejects it with the rule ``schema``.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import Field, ValidationError

from evalframe.core.errors import PluginError
from evalframe.plugin.protocols import PluginContext
from evalframe.plugin.registry import adversary, author, judge, oracle
from evalframe.plugin.roles import (
    AdversaryRequest,
    AuthorRequest,
    JudgeRequest,
    OracleRequest,
    RoleConfig,
    RoleReply,
)

from ._proc import run_json, tail
from .http_solver import HttpSolver, HttpSolverConfig

__all__ = [
    "CommandRole",
    "CommandRoleConfig",
    "HttpRole",
    "HttpRoleConfig",
    "parse_reply",
    "role_request",
]


def role_request(role: str, model: str, request: Any) -> dict[str, Any]:
    """The wire form of a role request: ``evalframe.<role>/1``."""
    return {
        "protocol": f"evalframe.{role}/1",
        "role": role,
        "model": model,
        **request.model_dump(mode="json"),
    }


def parse_reply(value: Any, *, who: str, where: str) -> RoleReply:
    """A reply object as a :class:`RoleReply`, or a PluginError saying what is wrong."""
    if not isinstance(value, dict) or not isinstance(value.get("record"), dict):
        raise PluginError(
            f"{who} answered {where} without a 'record' object",
            expected='{"record": {...}, "usage": {"input_tokens": N, "output_tokens": N}}',
            got=repr(value)[:200],
            hint="see the role protocol in docs/golden-pipeline.md",
        )
    try:
        return RoleReply.model_validate(
            {"record": value["record"], "usage": value.get("usage") or {}}
        )
    except ValidationError as exc:
        problem = exc.errors()[0]
        raise PluginError(
            f"{who} answered {where} with a bad 'usage'",
            expected="token counts >= 0: {input_tokens, output_tokens}",
            got=f"{'.'.join(map(str, problem['loc']))}: {problem['msg']}",
        ) from None


def _where(role: str, request: Any) -> str:
    if isinstance(request, AuthorRequest):
        return f"query {request.query_id!r}"
    if isinstance(request, OracleRequest):
        return f"query {request.candidate.query_id!r}"
    if isinstance(request, AdversaryRequest):
        return f"query {request.answer.query_id!r}"
    if isinstance(request, JudgeRequest):
        return f"query {request.query.query_id!r}"
    return role


class _Roles:
    """The four role methods, each one call of ``_call``."""

    def _call(self, role: str, request: Any) -> RoleReply:
        raise NotImplementedError

    def author(self, request: AuthorRequest) -> RoleReply:
        return self._call("author", request)

    def answer(self, request: OracleRequest) -> RoleReply:
        return self._call("oracle", request)

    def review(self, request: AdversaryRequest) -> RoleReply:
        return self._call("adversary", request)

    def judge(self, request: JudgeRequest) -> RoleReply:
        return self._call("judge", request)


class CommandRoleConfig(RoleConfig):
    """A program that reads an evalframe.<role>/1 request and prints {"record": ...}."""

    command: list[str] = Field(min_length=1, description="argv: program and arguments, no shell")
    timeout_seconds: float = Field(900.0, gt=0, description="one call's time limit")
    cwd: str | None = Field(None, description="working folder (default: the current one)")


@author("command", config=CommandRoleConfig)
@oracle("command", config=CommandRoleConfig)
@adversary("command", config=CommandRoleConfig)
@judge("command", config=CommandRoleConfig)
class CommandRole(_Roles):
    """Your agent as a program: a JSON request on stdin, the JSON record on stdout."""

    def __init__(self, config: CommandRoleConfig, context: PluginContext) -> None:
        self.config = config

    def _call(self, role: str, request: Any) -> RoleReply:
        who = f"{role} 'command' ({self.config.command[0]})"
        where = _where(role, request)
        proc = run_json(
            self.config.command,
            role_request(role, self.config.model, request),
            who=who,
            what=where,
            timeout=self.config.timeout_seconds,
            cwd=self.config.cwd,
        )
        if proc.returncode != 0:
            raise PluginError(
                f"{who} exited with code {proc.returncode} on {where}",
                got=tail(proc.stderr or proc.stdout) or "(no output)",
                hint="exit 0 with the reply on stdout; replies already given are cached, "
                "so re-running resumes",
            )
        try:
            value = json.loads(proc.stdout)
        except json.JSONDecodeError:
            raise PluginError(
                f"{who} printed something that is not JSON for {where}",
                expected='one JSON object {"record": {...}} on stdout',
                got=repr(tail(proc.stdout, chars=200)),
                hint="print logs to stderr",
            ) from None
        return parse_reply(value, who=who, where=where)


class HttpRoleConfig(HttpSolverConfig, RoleConfig):
    """An endpoint that answers evalframe.<role>/1 requests with {"record": ...}."""

    timeout_seconds: float = Field(600.0, gt=0, description="one request's time limit")


@author("http", config=HttpRoleConfig)
@oracle("http", config=HttpRoleConfig)
@adversary("http", config=HttpRoleConfig)
@judge("http", config=HttpRoleConfig)
class HttpRole(_Roles, HttpSolver):
    """Your agent as a web service: POST the JSON request, read {"record": ...} back."""

    config: HttpRoleConfig

    def _call(self, role: str, request: Any) -> RoleReply:
        who = f"{role} 'http' ({self.config.url})"
        where = _where(role, request)
        body = role_request(role, self.config.model, request)
        return parse_reply(self.post(body, who=who, where=where), who=who, where=where)
