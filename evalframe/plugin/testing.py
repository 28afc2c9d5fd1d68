"""Contract test suites that every plugin's tests subclass.

A contract is written as a spec: each test is one rule, and a failure names
the plugin and the rule it broke. Subclass, set ``plugin_name``, and provide
two fixtures::

    class TestBM25Contract(RetrieverContract):
        plugin_name = "bm25"

        @pytest.fixture
        def retriever(self, tmp_path):
            return BM25Retriever(BM25Config(), PluginContext(corpus=..., cache_dir=tmp_path))

        @pytest.fixture
        def queries(self):
            return [Query(id="q1", text="install"), ...]

This module imports pytest, so import it from tests only.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel, ValidationError

from evalframe.core.types import Ranking
from evalframe.plugin.protocols import (
    Answer,
    Attempt,
    Exporter,
    ExportInput,
    Judgement,
    MiningTask,
    Query,
    Retriever,
    Solver,
    Validator,
)
from evalframe.plugin.registry import (
    ADVERSARIES,
    AUTHORS,
    EXPORTERS,
    JUDGES,
    ORACLES,
    RETRIEVERS,
    SOLVERS,
    VALIDATORS,
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

__all__ = [
    "AdversaryContract",
    "AuthorContract",
    "ExporterContract",
    "JudgeContract",
    "OracleContract",
    "PluginContract",
    "RetrieverContract",
    "SolverContract",
    "ValidatorContract",
]


class PluginContract:
    """Rules every plugin obeys: discoverable by entry point, with a strict frozen config."""

    plugin_name: ClassVar[str]
    registry: ClassVar[Registry[Any]]

    def _rule(self, rule: str) -> str:
        return f"{self.registry.kind} plugin {self.plugin_name!r} breaks the rule: {rule}"

    def test_discovered_through_its_entry_point(self) -> None:
        names = {ep.name for ep in metadata.entry_points(group=self.registry.group)}
        assert self.plugin_name in names, self._rule(
            f"it must be declared in the {self.registry.group!r} entry-point group"
        )
        spec = self.registry.get(self.plugin_name)
        assert spec.name == self.plugin_name

    def test_has_a_one_line_description(self) -> None:
        spec = self.registry.get(self.plugin_name)
        assert spec.description, self._rule("its class needs a docstring (shown by plugins list)")

    def test_config_is_frozen_and_forbids_unknown_keys(self) -> None:
        spec = self.registry.get(self.plugin_name)
        if spec.config is None:
            return
        assert issubclass(spec.config, BaseModel)
        cfg = spec.config.model_config
        assert cfg.get("frozen") is True, self._rule("its config model must be frozen")
        assert cfg.get("extra") == "forbid", self._rule("its config must forbid unknown keys")
        with pytest.raises(ValidationError):
            spec.config.model_validate({"surely_not_a_setting": 1})


class RetrieverContract(PluginContract):
    """Rules for retrievers. Provide ``retriever`` and ``queries`` fixtures.

    Both ways the pipeline drives a retriever are covered: a batch retriever's
    ``retrieve_batch`` must answer every query as ``retrieve`` does, and one
    that declares ``max_concurrency`` must give the same answers when called
    from that many threads at once. Set ``score_tolerance`` for a retriever
    whose scores differ in the last float bits between a batch and one query
    (a neural encoder pads a batch); doc ids must still be equal.
    """

    registry: ClassVar[Registry[Any]] = RETRIEVERS
    k: ClassVar[int] = 5
    score_tolerance: ClassVar[float] = 0.0

    @pytest.fixture
    def retriever(self) -> Retriever:
        pytest.fail(f"{type(self).__name__} must define a `retriever` fixture")

    @pytest.fixture
    def queries(self) -> list[Query]:
        pytest.fail(f"{type(self).__name__} must define a `queries` fixture (2+ queries)")

    def _answers(self, retriever: Retriever, queries: list[Query], k: int) -> list[Ranking]:
        out = []
        for q in queries:
            r = retriever.retrieve(q, k)
            if r is not None:
                assert isinstance(r, Ranking), self._rule(
                    f"retrieve() returns a Ranking or None (got {type(r).__name__})"
                )
                out.append(r)
        return out

    def test_satisfies_the_protocol(self, retriever: Retriever) -> None:
        assert isinstance(retriever, Retriever), self._rule("it must have retrieve(query, k)")
        spec = self.registry.get(self.plugin_name)
        assert isinstance(retriever, spec.obj), self._rule(
            "the fixture must build the registered class"
        )

    def test_answers_at_least_one_query(self, retriever: Retriever, queries: list[Query]) -> None:
        assert len(queries) >= 2, "give the contract at least two queries"
        answers = self._answers(retriever, queries, self.k)
        assert any(len(a) for a in answers), self._rule("it must find something for some query")

    def test_ranking_is_for_the_query_asked(
        self, retriever: Retriever, queries: list[Query]
    ) -> None:
        for q in queries:
            r = retriever.retrieve(q, self.k)
            if r is not None:
                assert r.query_id == q.id, self._rule("Ranking.query_id is the query's id")

    @pytest.mark.parametrize("k", [1, 3])
    def test_returns_at_most_k(self, retriever: Retriever, queries: list[Query], k: int) -> None:
        for r in self._answers(retriever, queries, k):
            assert len(r) <= k, self._rule(f"at most k={k} documents (got {len(r)})")

    def test_no_duplicate_documents(self, retriever: Retriever, queries: list[Query]) -> None:
        for r in self._answers(retriever, queries, self.k):
            assert len(set(r.doc_ids)) == len(r.doc_ids), self._rule("no doc id twice in a ranking")

    def test_best_first(self, retriever: Retriever, queries: list[Query]) -> None:
        for r in self._answers(retriever, queries, self.k):
            assert list(r.scores) == sorted(r.scores, reverse=True), self._rule(
                "documents come best first (scores non-increasing)"
            )

    def test_ids_are_strings(self, retriever: Retriever, queries: list[Query]) -> None:
        for r in self._answers(retriever, queries, self.k):
            assert all(isinstance(d, str) and d for d in r.doc_ids), self._rule(
                "doc ids are non-empty strings"
            )

    def test_deterministic(self, retriever: Retriever, queries: list[Query]) -> None:
        first = self._answers(retriever, queries, self.k)
        second = self._answers(retriever, queries, self.k)
        assert first == second, self._rule("the same query gives the same ranking every time")

    # -- how the pipeline drives it: in batches, or from several threads ---------------
    def _same(self, got: Ranking | None, want: Ranking | None, how: str, query: Query) -> None:
        rule = f"{how} answers query {query.id!r} as retrieve() does"
        if got is None or want is None:
            assert got is want, self._rule(rule)
            return
        assert isinstance(got, Ranking), self._rule(f"{how} returns Rankings or None")
        assert got.query_id == query.id, self._rule(f"{how}: Ranking.query_id is the query's id")
        assert got.doc_ids == want.doc_ids, self._rule(rule + " (the same documents, in order)")
        assert got.scores == pytest.approx(want.scores, rel=0, abs=self.score_tolerance), (
            self._rule(rule + f" (scores within {self.score_tolerance:g})")
        )
        plain = {"doc_ids", "scores", "latency_ms"}
        assert got.model_dump(exclude=plain) == want.model_dump(exclude=plain), self._rule(rule)

    def test_batch_answers_equal_one_by_one(
        self, retriever: Retriever, queries: list[Query]
    ) -> None:
        batch = getattr(retriever, "retrieve_batch", None)
        if not callable(batch):
            pytest.skip("not a batch retriever")
        one_by_one = [retriever.retrieve(q, self.k) for q in queries]
        answers = list(batch(queries, self.k))
        assert len(answers) == len(queries), self._rule(
            "retrieve_batch returns one answer per query, in order"
        )
        for q, got, want in zip(queries, answers, one_by_one, strict=True):
            self._same(got, want, "retrieve_batch", q)
        assert list(batch([], self.k)) == [], self._rule("an empty batch has no answers")

    def test_max_concurrency_is_a_positive_integer(self, retriever: Retriever) -> None:
        value = getattr(retriever, "max_concurrency", 1)
        rule = self._rule("max_concurrency, when set, is an integer >= 1")
        assert isinstance(value, int), rule
        assert not isinstance(value, bool), rule
        assert value >= 1, rule

    def test_concurrent_calls_answer_as_one_by_one(
        self, retriever: Retriever, queries: list[Query]
    ) -> None:
        workers = getattr(retriever, "max_concurrency", 1)
        if callable(getattr(retriever, "retrieve_batch", None)) or workers == 1:
            pytest.skip("not called from several threads")
        one_by_one = [retriever.retrieve(q, self.k) for q in queries]
        asked = queries * 3  # the same query in flight more than once, too
        with ThreadPoolExecutor(max_workers=workers) as pool:
            answers = list(pool.map(lambda q: retriever.retrieve(q, self.k), asked))
        for q, got, want in zip(asked, answers, one_by_one * 3, strict=True):
            self._same(got, want, f"retrieve() from {workers} threads", q)


# -- mining: solvers and validators -------------------------------------------


class SolverContract(PluginContract):
    """Rules for solvers. Provide ``solver`` and ``attempts`` (2+ attempts) fixtures.

    Set ``deterministic = False`` for a solver whose answers vary between calls
    with the same attempt (the miner caches each trial, so it never relies on it).
    """

    registry: ClassVar[Registry[Any]] = SOLVERS
    deterministic: ClassVar[bool] = True

    @pytest.fixture
    def solver(self) -> Solver:
        pytest.fail(f"{type(self).__name__} must define a `solver` fixture")

    @pytest.fixture
    def attempts(self) -> list[Attempt]:
        pytest.fail(f"{type(self).__name__} must define an `attempts` fixture (2+ attempts)")

    def test_satisfies_the_protocol(self, solver: Solver) -> None:
        assert isinstance(solver, Solver), self._rule("it must have solve(attempt)")
        spec = self.registry.get(self.plugin_name)
        assert isinstance(solver, spec.obj), self._rule(
            "the fixture must build the registered class"
        )

    def test_answers_every_attempt_with_an_answer(
        self, solver: Solver, attempts: list[Attempt]
    ) -> None:
        assert len(attempts) >= 2, "give the contract at least two attempts"
        for attempt in attempts:
            answer = solver.solve(attempt)
            assert isinstance(answer, Answer), self._rule(
                f"solve() returns an Answer (got {type(answer).__name__})"
            )
            assert isinstance(answer.text, str), self._rule("Answer.text is a string")

    def test_an_empty_context_is_a_valid_attempt(
        self, solver: Solver, attempts: list[Attempt]
    ) -> None:
        empty = attempts[0].model_copy(update={"context": ()})
        assert isinstance(solver.solve(empty), Answer), self._rule(
            "a trial may draw no document at all: solve() still answers"
        )

    def test_deterministic_for_the_same_attempt(
        self, solver: Solver, attempts: list[Attempt]
    ) -> None:
        if not self.deterministic:
            pytest.skip("declared non-deterministic")
        first = [solver.solve(a) for a in attempts]
        assert first == [solver.solve(a) for a in attempts], self._rule(
            "the same attempt (same seed) gives the same answer"
        )


class ValidatorContract(PluginContract):
    """Rules for validators. Provide ``validator`` and ``cases`` fixtures.

    ``cases`` is a list of ``(task, answer, expected_passed)`` with at least
    one answer that passes and one that fails.
    """

    registry: ClassVar[Registry[Any]] = VALIDATORS

    @pytest.fixture
    def validator(self) -> Validator:
        pytest.fail(f"{type(self).__name__} must define a `validator` fixture")

    @pytest.fixture
    def cases(self) -> list[tuple[MiningTask, Answer, bool]]:
        pytest.fail(f"{type(self).__name__} must define a `cases` fixture")

    def test_satisfies_the_protocol(self, validator: Validator) -> None:
        assert isinstance(validator, Validator), self._rule("it must have validate(task, answer)")
        spec = self.registry.get(self.plugin_name)
        assert isinstance(validator, spec.obj), self._rule(
            "the fixture must build the registered class"
        )

    def test_cases_cover_a_pass_and_a_fail(
        self, cases: list[tuple[MiningTask, Answer, bool]]
    ) -> None:
        assert {expected for _, _, expected in cases} == {True, False}, (
            "give the contract at least one passing and one failing answer"
        )

    def test_judges_each_case_as_expected(
        self, validator: Validator, cases: list[tuple[MiningTask, Answer, bool]]
    ) -> None:
        for task, answer, expected in cases:
            judgement = validator.validate(task, answer)
            assert isinstance(judgement, Judgement), self._rule(
                f"validate() returns a Judgement (got {type(judgement).__name__})"
            )
            assert judgement.passed is expected, self._rule(
                f"task {task.id!r}: answer {answer.text[:40]!r} should "
                f"{'pass' if expected else 'fail'} ({judgement.detail})"
            )

    def test_deterministic(
        self, validator: Validator, cases: list[tuple[MiningTask, Answer, bool]]
    ) -> None:
        for task, answer, _ in cases:
            assert validator.validate(task, answer) == validator.validate(task, answer), self._rule(
                "the same answer to the same task gets the same verdict"
            )


class ExporterContract(PluginContract):
    """Rules for exporters. Provide ``exporter`` and ``export_input`` fixtures.

    ``export_input`` is an :class:`ExportInput` holding every metric the
    exporter's ``required_metrics()`` names.
    """

    registry: ClassVar[Registry[Any]] = EXPORTERS

    @pytest.fixture
    def exporter(self) -> Exporter:
        pytest.fail(f"{type(self).__name__} must define an `exporter` fixture")

    @pytest.fixture
    def export_input(self) -> ExportInput:
        pytest.fail(f"{type(self).__name__} must define an `export_input` fixture")

    def test_satisfies_the_protocol(self, exporter: Exporter) -> None:
        assert isinstance(exporter, Exporter), self._rule("it must have export(run)")
        spec = self.registry.get(self.plugin_name)
        assert isinstance(exporter, spec.obj), self._rule(
            "the fixture must build the registered class"
        )

    def test_returns_plain_file_names_and_text_or_bytes(
        self, exporter: Exporter, export_input: ExportInput
    ) -> None:
        files = exporter.export(export_input)
        assert files, self._rule("export() returns at least one file")
        for name, content in files.items():
            plain = bool(name) and not name.startswith(".") and not set(name) & {"/", "\\"}
            assert plain, self._rule(
                f"file names are plain names inside the run folder (got {name!r})"
            )
            assert isinstance(content, str | bytes), self._rule(
                f"{name!r}: content is str or bytes (got {type(content).__name__})"
            )

    def test_deterministic(self, exporter: Exporter, export_input: ExportInput) -> None:
        assert exporter.export(export_input) == exporter.export(export_input), self._rule(
            "the same run exports the same bytes (runs are compared by their files)"
        )


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
