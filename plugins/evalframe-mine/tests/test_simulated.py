"""The simulated solver: its success chance is exactly base + the lifts of planted documents."""

from __future__ import annotations

import pytest
from evalframe_mine.simulated import SimulatedConfig, SimulatedSolver, success_probability
from pydantic import ValidationError

from evalframe.core.errors import DataError
from evalframe.plugin.protocols import Attempt, ContextDoc, PluginContext
from evalframe.plugin.testing import SolverContract


def attempt(docs: list[str], seed: int = 0, metadata: dict | None = None) -> Attempt:
    return Attempt(
        task_id="t",
        query="q?",
        metadata=metadata or {},
        context=tuple(ContextDoc(id=d, text=d) for d in docs),
        trial=seed,
        seed=seed,
    )


def solver(**kw: object) -> SimulatedSolver:
    return SimulatedSolver(SimulatedConfig(**kw), PluginContext())  # type: ignore[arg-type]


class TestSimulatedContract(SolverContract):
    plugin_name = "simulated"

    @pytest.fixture
    def solver(self) -> SimulatedSolver:
        return solver(base_rate=0.3, lift={"a": 0.5})

    @pytest.fixture
    def attempts(self) -> list[Attempt]:
        return [attempt(["a"], 1), attempt(["b"], 2), attempt([], 3)]


def test_success_probability_adds_the_lifts_present() -> None:
    assert success_probability(0.1, {"a": 0.5, "b": 0.2}, {"a", "c"}) == pytest.approx(0.6)


@pytest.mark.parametrize(("docs", "chance"), [([], 0.1), (["a"], 0.6), (["a", "b", "x"], 0.8)])
def test_success_frequency_is_the_chance(docs: list[str], chance: float) -> None:
    s = solver(base_rate=0.1, lift={"a": 0.5, "b": 0.2})
    n = 4000
    wins = sum(s.solve(attempt(docs, seed)).text == "solved" for seed in range(n))
    se = (chance * (1 - chance) / n) ** 0.5
    assert abs(wins / n - chance) <= 4 * se


def test_lifts_beyond_one_are_refused() -> None:
    with pytest.raises(ValidationError, match="within"):
        SimulatedConfig(base_rate=0.5, lift={"a": 0.4, "b": 0.2})


def test_a_task_can_carry_its_own_script() -> None:
    s = solver(base_rate=0.0)
    script = {"simulation": {"base_rate": 1.0, "answer": "forty-two"}}
    assert s.solve(attempt([], 0, script)).text == "forty-two"
    with pytest.raises(DataError, match="within"):
        s.solve(attempt([], 0, {"simulation": {"base_rate": 0.9, "lift": {"a": 0.5}}}))
    with pytest.raises(DataError, match="mapping"):
        s.solve(attempt([], 0, {"simulation": "no"}))
