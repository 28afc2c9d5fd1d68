"""The mining contracts: solvers, validators and exporters."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from evalframe.plugin.protocols import (
    Answer,
    Attempt,
    Exporter,
    ExportInput,
    Judgement,
    MiningTask,
    Solver,
    Validator,
)
from evalframe.plugin.registry import (
    EXPORTERS,
    SOLVERS,
    VALIDATORS,
    Registry,
)
from evalframe.plugin.testing.base import PluginContract

__all__ = ["ExporterContract", "SolverContract", "ValidatorContract"]

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
