"""The golden-build role contracts: authors, oracles, adversaries and judges."""

from __future__ import annotations

import json
from typing import Any, ClassVar

import pytest
from pydantic import ValidationError

from evalframe.plugin.registry import (
    ADVERSARIES,
    AUTHORS,
    JUDGES,
    ORACLES,
    Registry,
)
from evalframe.plugin.roles import (
    Adversary,
    AdversaryReport,
    AdversaryRequest,
    Author,
    AuthorRequest,
    Judge,
    JudgeRequest,
    NarrativeJudgement,
    Oracle,
    OracleAnswer,
    OracleRequest,
    QueryCandidate,
    RoleReply,
)
from evalframe.plugin.testing.base import PluginContract

__all__ = ["AdversaryContract", "AuthorContract", "JudgeContract", "OracleContract"]

# -- golden-set construction: the four roles (evalframe golden build) ---------------


class _RoleContract(PluginContract):
    """Rules every role obeys. Provide ``role`` and ``requests`` (2+ requests) fixtures.

    Set ``deterministic = False`` for a role whose replies vary between calls
    with the same request (the build caches each call, so it never relies on it).
    """

    deterministic: ClassVar[bool] = True
    protocol: ClassVar[type]
    method: ClassVar[str]
    record_model: ClassVar[type[Any]]

    @pytest.fixture
    def role(self) -> Any:
        pytest.fail(f"{type(self).__name__} must define a `role` fixture")

    @pytest.fixture
    def requests(self) -> list[Any]:
        pytest.fail(f"{type(self).__name__} must define a `requests` fixture (2+ requests)")

    def _call(self, role: Any, request: Any) -> RoleReply:
        reply = getattr(role, self.method)(request)
        assert isinstance(reply, RoleReply), self._rule(
            f"{self.method}() returns a RoleReply (got {type(reply).__name__})"
        )
        return reply

    def _records(self, role: Any, requests: list[Any]) -> list[tuple[Any, Any]]:
        assert len(requests) >= 2, "give the contract at least two requests"
        out = []
        for request in requests:
            reply = self._call(role, request)
            try:
                record = self.record_model.model_validate(reply.record)
            except ValidationError as exc:
                raise AssertionError(
                    self._rule(
                        f"the reply's record is a {self.record_model.__name__} "
                        f"({exc.errors()[0]['loc']}: {exc.errors()[0]['msg']})"
                    )
                ) from None
            out.append((request, record))
        return out

    def test_satisfies_the_protocol(self, role: Any) -> None:
        assert isinstance(role, self.protocol), self._rule(f"it must have {self.method}(request)")
        spec = self.registry.get(self.plugin_name)
        assert isinstance(role, spec.obj), self._rule("the fixture must build the registered class")

    def test_replies_with_a_record_of_the_schema(self, role: Any, requests: list[Any]) -> None:
        for request, record in self._records(role, requests):
            assert record.schema_version, self._rule("every record carries schema_version")
            assert record.query_id == self._query_id(request), self._rule(
                "the record is for the query asked (same query_id)"
            )

    def test_reply_is_plain_json(self, role: Any, requests: list[Any]) -> None:
        reply = self._call(role, requests[0])
        text = json.dumps(reply.model_dump(mode="json"))
        assert RoleReply.model_validate(json.loads(text)) == reply, self._rule(
            "the reply survives a JSON round trip (it is cached as JSON)"
        )

    def test_deterministic_for_the_same_request(self, role: Any, requests: list[Any]) -> None:
        if not self.deterministic:
            pytest.skip("declared non-deterministic")
        first = [self._call(role, r).record for r in requests]
        assert first == [self._call(role, r).record for r in requests], self._rule(
            "the same request gives the same record"
        )

    def _query_id(self, request: Any) -> str:
        raise NotImplementedError


class AuthorContract(_RoleContract):
    """Rules for query authors; ``requests`` are :class:`AuthorRequest` objects."""

    registry: ClassVar[Registry[Any]] = AUTHORS
    protocol: ClassVar[type] = Author
    method: ClassVar[str] = "author"
    record_model: ClassVar[type[Any]] = QueryCandidate

    def _query_id(self, request: AuthorRequest) -> str:
        return request.query_id

    def test_writes_into_the_cell_asked(self, role: Any, requests: list[Any]) -> None:
        for request, record in self._records(role, requests):
            cell = (record.task_type, record.difficulty)
            assert cell == (request.task_type, request.difficulty), self._rule(
                f"a candidate stays in its plan cell {request.task_type}/{request.difficulty} "
                f"(got {cell[0]}/{cell[1]}); the build rejects it as plan-overflow"
            )
            assert record.target_entity_ids, self._rule("every query names a target entity (§3.1)")


class OracleContract(_RoleContract):
    """Rules for oracles; ``requests`` are :class:`OracleRequest` objects."""

    registry: ClassVar[Registry[Any]] = ORACLES
    protocol: ClassVar[type] = Oracle
    method: ClassVar[str] = "answer"
    record_model: ClassVar[type[Any]] = OracleAnswer

    def _query_id(self, request: OracleRequest) -> str:
        return request.candidate.query_id

    def test_line_ranges_cite_expected_files(self, role: Any, requests: list[Any]) -> None:
        for _, record in self._records(role, requests):
            files = set(record.expected_files)
            for r in record.expected_line_ranges:
                assert r.file in files, self._rule(
                    f"every line range's file is in expected_files (§9.2 step 10; {r.file})"
                )


class AdversaryContract(_RoleContract):
    """Rules for adversaries; ``requests`` are :class:`AdversaryRequest` objects."""

    registry: ClassVar[Registry[Any]] = ADVERSARIES
    protocol: ClassVar[type] = Adversary
    method: ClassVar[str] = "review"
    record_model: ClassVar[type[Any]] = AdversaryReport

    def _query_id(self, request: AdversaryRequest) -> str:
        return request.answer.query_id

    def test_checks_every_expected_entity(self, role: Any, requests: list[Any]) -> None:
        for request, record in self._records(role, requests):
            checked = {c.claim for c in record.claim_verdicts if c.claim_type == "entity"}
            for entity in request.answer.expected_entities:
                assert entity.entity_id in checked, self._rule(
                    f"every structural claim gets a verdict (§3.3): {entity.entity_id}"
                )


class JudgeContract(_RoleContract):
    """Rules for narrative judges; ``requests`` are :class:`JudgeRequest` objects."""

    registry: ClassVar[Registry[Any]] = JUDGES
    protocol: ClassVar[type] = Judge
    method: ClassVar[str] = "judge"
    record_model: ClassVar[type[Any]] = NarrativeJudgement

    def _query_id(self, request: JudgeRequest) -> str:
        return request.query.query_id
