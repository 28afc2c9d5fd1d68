"""The exact validator: equal, contained or matching, case and spacing aside."""

from __future__ import annotations

import pytest
from evalframe_mine.exact import ExactConfig, ExactValidator

from evalframe.core.errors import DataError
from evalframe.plugin.protocols import Answer, MiningTask, PluginContext
from evalframe.plugin.testing import ValidatorContract

TASK = MiningTask(id="t", query="q", ground_truth={"answer": "Agent(name='x')"})


def check(text: str, **kw: object) -> bool:
    v = ExactValidator(ExactConfig(**kw), PluginContext())  # type: ignore[arg-type]
    return v.validate(TASK, Answer(text=text)).passed


class TestExactContract(ValidatorContract):
    plugin_name = "exact"

    @pytest.fixture
    def validator(self) -> ExactValidator:
        return ExactValidator(ExactConfig(), PluginContext())

    @pytest.fixture
    def cases(self) -> list[tuple[MiningTask, Answer, bool]]:
        return [(TASK, Answer(text=" agent(NAME='x') "), True), (TASK, Answer(text="no"), False)]


def test_modes() -> None:
    assert check("agent(name='x')")
    assert not check("agent(name='x')", normalize=False)
    assert check("use Agent(name='x') here", mode="contains")
    assert not check("use Agent(name='x') here")
    v = ExactValidator(ExactConfig(mode="regex", field="pattern"), PluginContext()).validate(
        MiningTask(id="t", query="q", ground_truth={"pattern": r"Retry\(attempts=\d+\)"}),
        Answer(text="plugins=[Retry(attempts=5)]"),
    )
    assert v.passed


def test_missing_ground_truth_is_a_data_error() -> None:
    with pytest.raises(DataError, match="no ground truth 'answer'"):
        ExactValidator(ExactConfig(), PluginContext()).validate(
            MiningTask(id="t", query="q"), Answer(text="x")
        )
