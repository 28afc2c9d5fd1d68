"""A validator that runs a test file against the answer, in a temporary folder.

The answer is written to ``answer_file`` (``solution.py``) next to a copy of
the task's test file (ground truth ``test_file``, a path; or ``test_code``,
the test's source), and ``python -m pytest`` runs there. Passed when pytest
exits 0; failed when tests fail (1) or cannot even be collected, as when the
answer does not import (2); any other exit (an internal or usage error, no
tests found) is an error that stops the run.

The answer is code from a model: it runs with your user's rights. Run the
miner in a container or a throwaway VM when the solver is not trusted.
"""

from __future__ import annotations

import hashlib
import re
import sys
import tempfile
from pathlib import Path

from pydantic import Field

from evalframe.core.errors import DataError, PluginError
from evalframe.plugin.protocols import Answer, Judgement, MiningTask, PluginConfig, PluginContext
from evalframe.plugin.registry import validator

from ._proc import run_json, tail

__all__ = ["PytestConfig", "PytestValidator", "extract_code"]

_TIMING = re.compile(r" in [0-9.]+s\b")
_FENCE = re.compile(r"```[A-Za-z0-9_+-]*[ \t]*\n(.*?)```", re.DOTALL)


def extract_code(text: str) -> str:
    """The first fenced code block of a Markdown answer, else the whole text."""
    found = _FENCE.search(text)
    return found.group(1) if found else text


class PytestConfig(PluginConfig):
    """Where the answer goes and how pytest runs."""

    answer_file: str = Field("solution.py", description="file name the answer is written to")
    extract_code: bool = Field(
        True, description="use the first ```fenced``` block of the answer when there is one"
    )
    timeout_seconds: float = Field(120.0, gt=0, description="one pytest run's time limit")
    python: str | None = Field(None, description="interpreter (default: evalframe's own)")
    load_plugins: bool = Field(
        False,
        description="let pytest load installed plugins (off: faster, and the tests see "
        "only what they import)",
    )
    pytest_args: list[str] = Field(
        default_factory=lambda: ["-q", "-x", "-p", "no:cacheprovider"],
        description="arguments before the test file",
    )


@validator("pytest", config=PytestConfig)
class PytestValidator:
    """Passes when the task's test file passes against the answer (run in a temp folder)."""

    def __init__(self, config: PytestConfig, context: PluginContext) -> None:
        self.config = config
        if "/" in config.answer_file or "\\" in config.answer_file:
            raise DataError(
                "validator.answer_file must be a plain file name",
                got=repr(config.answer_file),
            )

    def _test(self, task: MiningTask) -> tuple[str, str]:
        """(file name, source) of the task's test."""
        truth = task.ground_truth
        if "test_code" in truth:
            return "test_task.py", str(truth["test_code"])
        if "test_file" not in truth:
            raise DataError(
                f"task {task.id!r} has neither 'test_file' nor 'test_code' in its ground truth",
                got=f"ground truth keys {sorted(truth) or '(none)'}",
                hint="add benchmarks.<name>.ground_truth.test_file (a field or a template)",
            )
        path = Path(str(truth["test_file"]))
        try:
            return path.name, path.read_text(encoding="utf-8")
        except OSError as exc:
            raise DataError(
                f"task {task.id!r}: its test file cannot be read ({exc.strerror})",
                path=path,
                hint="check the benchmark's ground_truth.test_file extractor",
            ) from None

    def cache_inputs(self, task: MiningTask) -> str:
        """The test's content joins the cache key: editing a test re-validates."""
        name, source = self._test(task)
        return hashlib.sha256(f"{name}\0{source}".encode()).hexdigest()

    def validate(self, task: MiningTask, answer: Answer) -> Judgement:
        name, source = self._test(task)
        if name == self.config.answer_file:
            name = f"test_{name}"
        code = extract_code(answer.text) if self.config.extract_code else answer.text
        with tempfile.TemporaryDirectory(prefix="evalframe-pytest-") as tmp:
            Path(tmp, self.config.answer_file).write_text(code, encoding="utf-8")
            Path(tmp, name).write_text(source, encoding="utf-8")
            # an ini file of its own: no pytest settings of a folder above leak in
            Path(tmp, "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
            argv = [
                self.config.python or sys.executable,
                "-m",
                "pytest",
                *self.config.pytest_args,
                name,
            ]
            proc = run_json(
                argv,
                None,
                who="validator 'pytest'",
                what=f"the tests of task {task.id!r}",
                timeout=self.config.timeout_seconds,
                cwd=tmp,
                env={
                    "PYTHONDONTWRITEBYTECODE": "1",
                    "PYTEST_ADDOPTS": "",
                    **({} if self.config.load_plugins else {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}),
                },
            )
        summary = _TIMING.sub("", tail(proc.stdout, 1))  # the same verdict, the same detail
        if proc.returncode == 0:
            return Judgement(passed=True, detail=summary)
        if proc.returncode in (1, 2):
            return Judgement(passed=False, detail=summary)
        raise PluginError(
            f"validator 'pytest' could not run the tests of task {task.id!r} "
            f"(pytest exit code {proc.returncode})",
            got=tail(proc.stdout + proc.stderr),
            hint="exit 5 means no test was collected: check the test file; is pytest "
            "installed for validator.python?",
        )
