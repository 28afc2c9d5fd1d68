"""A solver and a validator that are programs: JSON on stdin, an answer or an exit code back.

See :mod:`evalframe_mine.protocol` for the messages. The program is run
without a shell (``command`` is an argv list), once per call, concurrently up
to the miner's ``max_concurrency``; it inherits the environment, so an API
key stays in the environment and never in the config.
"""

from __future__ import annotations

import json

from pydantic import Field

from evalframe.core.errors import PluginError
from evalframe.plugin.protocols import (
    Answer,
    Attempt,
    Judgement,
    MiningTask,
    PluginConfig,
    PluginContext,
)
from evalframe.plugin.registry import solver, validator

from ._proc import run_json, tail
from .protocol import parse_answer, solve_request, validate_request

__all__ = ["CommandSolver", "CommandSolverConfig", "CommandValidator", "CommandValidatorConfig"]


class CommandSolverConfig(PluginConfig):
    """A program that reads an evalframe.solve/1 request and prints the answer."""

    command: list[str] = Field(min_length=1, description="argv: program and arguments, no shell")
    timeout_seconds: float = Field(600.0, gt=0, description="one call's time limit")
    cwd: str | None = Field(None, description="working folder (default: the current one)")
    output: str = Field(
        "json", pattern="^(json|text)$", description='json: {"answer": ...}; text: stdout is it'
    )


@solver("command", config=CommandSolverConfig)
class CommandSolver:
    """Your agent as a program: a JSON request on stdin, a JSON answer on stdout."""

    def __init__(self, config: CommandSolverConfig, context: PluginContext) -> None:
        self.config = config

    def solve(self, attempt: Attempt) -> Answer:
        who = f"solver 'command' ({self.config.command[0]})"
        proc = run_json(
            self.config.command,
            solve_request(attempt),
            who=who,
            what=f"task {attempt.task_id!r} (trial {attempt.trial})",
            timeout=self.config.timeout_seconds,
            cwd=self.config.cwd,
        )
        if proc.returncode != 0:
            raise PluginError(
                f"{who} exited with code {proc.returncode} on task {attempt.task_id!r} "
                f"(trial {attempt.trial})",
                got=tail(proc.stderr or proc.stdout) or "(no output)",
                hint="exit 0 with the answer on stdout; answers already given are cached, "
                "so re-running resumes",
            )
        if self.config.output == "text":
            return Answer(text=proc.stdout)
        try:
            value = json.loads(proc.stdout)
        except json.JSONDecodeError:
            raise PluginError(
                f"{who} printed something that is not JSON for task {attempt.task_id!r}",
                expected='one JSON object {"answer": "..."} on stdout',
                got=repr(tail(proc.stdout, chars=200)),
                hint="print logs to stderr, or set solver.output=text",
            ) from None
        return parse_answer(value, who=who, attempt=attempt)


class CommandValidatorConfig(PluginConfig):
    """A program that reads an evalframe.validate/1 request and exits 0 (pass) or 1 (fail)."""

    command: list[str] = Field(min_length=1, description="argv: program and arguments, no shell")
    timeout_seconds: float = Field(300.0, gt=0, description="one check's time limit")
    cwd: str | None = Field(None, description="working folder (default: the current one)")


@validator("command", config=CommandValidatorConfig)
class CommandValidator:
    """Your checker as a program: exit 0 when the answer passes, 1 when it fails."""

    def __init__(self, config: CommandValidatorConfig, context: PluginContext) -> None:
        self.config = config

    def validate(self, task: MiningTask, answer: Answer) -> Judgement:
        who = f"validator 'command' ({self.config.command[0]})"
        proc = run_json(
            self.config.command,
            validate_request(task, answer),
            who=who,
            what=f"checking task {task.id!r}",
            timeout=self.config.timeout_seconds,
            cwd=self.config.cwd,
        )
        detail = tail(proc.stdout, 1) or tail(proc.stderr, 1)
        if proc.returncode in (0, 1):
            return Judgement(passed=proc.returncode == 0, detail=detail)
        raise PluginError(
            f"{who} exited with code {proc.returncode} on task {task.id!r}",
            expected="0 (passed) or 1 (failed)",
            got=tail(proc.stderr or proc.stdout) or "(no output)",
        )
