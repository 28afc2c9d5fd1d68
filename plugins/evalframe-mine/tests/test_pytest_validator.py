"""The pytest validator, with real pytest runs in a temporary folder."""

from __future__ import annotations

from pathlib import Path

import pytest
from evalframe_mine.pytest_validator import PytestConfig, PytestValidator, extract_code

from evalframe.core.errors import DataError
from evalframe.plugin.protocols import Answer, MiningTask, PluginContext
from evalframe.plugin.testing import ValidatorContract

TEST = """
from solution import add

def test_add():
    assert add(2, 3) == 5
"""
GOOD = "def add(a, b):\n    return a + b\n"
WRONG = "def add(a, b):\n    return a - b\n"


@pytest.fixture
def task(tmp_path: Path) -> MiningTask:
    test = tmp_path / "test_add.py"
    test.write_text(TEST)
    return MiningTask(id="b:add", query="write add", ground_truth={"test_file": str(test)})


def validator() -> PytestValidator:
    return PytestValidator(PytestConfig(), PluginContext())


class TestPytestContract(ValidatorContract):
    plugin_name = "pytest"

    @pytest.fixture
    def validator(self) -> PytestValidator:
        return validator()

    @pytest.fixture
    def cases(self, task: MiningTask) -> list[tuple[MiningTask, Answer, bool]]:
        return [(task, Answer(text=GOOD), True), (task, Answer(text=WRONG), False)]


def test_a_fenced_answer_and_an_answer_that_does_not_import(task: MiningTask) -> None:
    fenced = f"Here you go:\n```python\n{GOOD}```\nDone."
    assert validator().validate(task, Answer(text=fenced)).passed
    broken = validator().validate(task, Answer(text="def add(a, b) return"))
    assert not broken.passed  # pytest cannot collect: exit 2, the answer fails


def test_inline_test_code() -> None:
    task = MiningTask(id="b:x", query="q", ground_truth={"test_code": TEST})
    assert validator().validate(task, Answer(text=GOOD)).passed


def test_extract_code_without_a_fence_is_the_text() -> None:
    assert extract_code("x = 1") == "x = 1"
    assert extract_code("```\ny = 2\n```") == "y = 2\n"


def test_no_test_in_the_ground_truth_is_a_data_error() -> None:
    with pytest.raises(DataError, match="neither 'test_file' nor 'test_code'"):
        validator().validate(MiningTask(id="t", query="q"), Answer(text=GOOD))


def test_editing_the_test_changes_the_cache_input(task: MiningTask) -> None:
    before = validator().cache_inputs(task)
    Path(task.ground_truth["test_file"]).write_text(TEST + "\n# edited\n")
    assert validator().cache_inputs(task) != before
