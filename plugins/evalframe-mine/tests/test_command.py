"""The command solver and validator: JSON on stdin, an answer or an exit code back."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
from evalframe_mine.command import (
    CommandSolver,
    CommandSolverConfig,
    CommandValidator,
    CommandValidatorConfig,
)
from evalframe_mine.protocol import SOLVE, VALIDATE

from evalframe.core.errors import PluginError
from evalframe.plugin.protocols import Answer, Attempt, ContextDoc, MiningTask, PluginContext
from evalframe.plugin.testing import SolverContract, ValidatorContract

AGENT = """
import json, sys
req = json.load(sys.stdin)
assert req["protocol"] == "evalframe.solve/1", req
ids = [d["id"] for d in req["context"]]
print(json.dumps({"answer": "use " + "+".join(ids) if ids else "no idea",
                  "metadata": {"trial": req["trial"], "seed": req["seed"]}}))
"""

CHECKER = """
import json, sys
req = json.load(sys.stdin)
ok = req["answer"]["text"] == req["task"]["ground_truth"]["answer"]
print("checked", req["task"]["id"])
sys.exit(0 if ok else 1)
"""


def script(tmp_path: Path, name: str, code: str) -> list[str]:
    path = tmp_path / name
    path.write_text(textwrap.dedent(code))
    return [sys.executable, str(path)]


def attempt(docs: list[str], trial: int = 0) -> Attempt:
    return Attempt(
        task_id="b:1",
        query="q?",
        context=tuple(ContextDoc(id=d, text=f"text {d}") for d in docs),
        trial=trial,
        seed=100 + trial,
    )


class TestCommandSolverContract(SolverContract):
    plugin_name = "command"

    @pytest.fixture
    def solver(self, tmp_path: Path) -> CommandSolver:
        return CommandSolver(
            CommandSolverConfig(command=script(tmp_path, "agent.py", AGENT)), PluginContext()
        )

    @pytest.fixture
    def attempts(self) -> list[Attempt]:
        return [attempt(["a", "b"], 1), attempt(["c"], 2)]


def test_the_request_follows_the_protocol(tmp_path: Path) -> None:
    echo = script(
        tmp_path, "echo.py", 'import sys, json\nprint(json.dumps({"answer": sys.stdin.read()}))'
    )
    s = CommandSolver(CommandSolverConfig(command=echo), PluginContext())
    sent = json.loads(s.solve(attempt(["a"], 3)).text)
    assert sent == {
        "protocol": SOLVE,
        "task_id": "b:1",
        "query": "q?",
        "metadata": {},
        "context": [{"id": "a", "text": "text a"}],
        "trial": 3,
        "seed": 103,
    }


def test_answer_and_metadata(tmp_path: Path) -> None:
    s = CommandSolver(
        CommandSolverConfig(command=script(tmp_path, "agent.py", AGENT)), PluginContext()
    )
    answer = s.solve(attempt(["a", "b"], 4))
    assert answer == Answer(text="use a+b", metadata={"trial": 4, "seed": 104})


def test_text_output(tmp_path: Path) -> None:
    cmd = script(tmp_path, "t.py", "print('plain answer')")
    s = CommandSolver(CommandSolverConfig(command=cmd, output="text"), PluginContext())
    assert s.solve(attempt([])).text == "plain answer\n"


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("import sys; print('boom', file=sys.stderr); sys.exit(3)", "exited with code 3"),
        ("print('not json')", "not JSON"),
        ("print('{\"answer\": 5}')", "without a text 'answer'"),
        ("import time; time.sleep(5)", "longer than"),
    ],
)
def test_failures_are_plugin_errors(tmp_path: Path, code: str, message: str) -> None:
    cfg = CommandSolverConfig(command=script(tmp_path, "bad.py", code), timeout_seconds=1)
    with pytest.raises(PluginError, match=message):
        CommandSolver(cfg, PluginContext()).solve(attempt(["a"]))


def test_a_missing_program_is_named() -> None:
    cfg = CommandSolverConfig(command=["/no/such/agent"])
    with pytest.raises(PluginError, match="not found"):
        CommandSolver(cfg, PluginContext()).solve(attempt([]))


TASK = MiningTask(id="b:1", query="q", ground_truth={"answer": "42"})


class TestCommandValidatorContract(ValidatorContract):
    plugin_name = "command"

    @pytest.fixture
    def validator(self, tmp_path: Path) -> CommandValidator:
        return CommandValidator(
            CommandValidatorConfig(command=script(tmp_path, "check.py", CHECKER)), PluginContext()
        )

    @pytest.fixture
    def cases(self) -> list[tuple[MiningTask, Answer, bool]]:
        return [(TASK, Answer(text="42"), True), (TASK, Answer(text="41"), False)]


def test_validator_request_and_detail(tmp_path: Path) -> None:
    echo = script(
        tmp_path,
        "v.py",
        "import sys, json\nreq = json.load(sys.stdin)\nprint(req['protocol'])\nsys.exit(0)",
    )
    j = CommandValidator(CommandValidatorConfig(command=echo), PluginContext()).validate(
        TASK, Answer(text="x")
    )
    assert j.passed and j.detail == VALIDATE


def test_validator_exit_2_is_an_error(tmp_path: Path) -> None:
    bad = script(tmp_path, "v.py", "import sys; sys.exit(2)")
    with pytest.raises(PluginError, match="exited with code 2"):
        CommandValidator(CommandValidatorConfig(command=bad), PluginContext()).validate(
            TASK, Answer(text="x")
        )
