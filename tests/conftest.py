"""Shared fixtures: a tiny project (corpus + golden set) and a CLI runner."""

from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests import forkrun

CORPUS = [
    {"id": "install", "text": "Install the tool with pip install and a virtual environment."},
    {"id": "gates", "text": "A failed required gate makes the run exit with code 1."},
    {"id": "cache", "text": "The BM25 index is cached on disk under the corpus hash."},
    {"id": "slices", "text": "Slices group queries by difficulty or category for tables."},
]
GOLDEN = [
    {
        "id": 1,
        "question": "How do I install the tool with pip?",
        "expected_chunks": ["install"],
        "difficulty": "easy",
        "category": "setup",
    },
    {
        "id": 2,
        "question": "Which exit code does a failed gate give?",
        "expected_chunks": ["gates"],
        "difficulty": "easy",
        "category": "gates",
    },
    {
        "id": 3,
        "question": "Where is the BM25 index cached?",
        "expected_chunks": ["cache"],
        "difficulty": "hard",
        "category": "internals",
    },
    {
        "id": 4,
        "question": "Can it sync to my phone in real time?",
        "expected_chunks": [],
        "difficulty": "hard",
        "category": "usage",
    },
]


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str


@dataclass
class Project:
    root: Path
    corpus: Path
    golden: Path

    def run(self, *args: str, timeout: float = 120) -> Result:
        """Run ``python -m evalframe`` in the project folder, as a user would (a process
        of its own, forked from one that imported evalframe already: tests/forkrun.py)."""
        env = {
            **os.environ,
            "EVALFRAME_CACHE_DIR": str(self.root / ".cache"),
            "PYTHONIOENCODING": "utf-8",
        }
        proc = forkrun.run(args, cwd=self.root, env=env, timeout=timeout)
        return Result(proc.returncode, proc.stdout, proc.stderr)

    def data_args(self) -> list[str]:
        """The project's data, and no run page: the page is tested in ``tests/report``
        (and its browser tests), and drawing its plots costs a small CLI run about a
        second of CPU (docs/performance.md, "The test suite's time")."""
        return [f"dataset.path={self.golden}", f"corpus.path={self.corpus}", "report.html=false"]


def write_jsonl(path: Path, records: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def raw_config(project: Project, **overrides: Any) -> dict[str, Any]:
    """An experiment as Hydra would compose it, on the tiny project (for in-process tests)."""
    cfg: dict[str, Any] = {
        "experiment": "unit",
        "dataset": {"name": "jsonl", "path": str(project.golden)},
        "corpus": {"name": "jsonl", "path": str(project.corpus)},
        "retriever": {"name": "bm25"},
        "depth": 5,
        "metrics": {"measures": ["R@5", "RR", "nDCG@10"]},
        "gates": {},
        "tracking": {"name": "none"},
        "output": {"dir": str(project.root / "out"), "cache_dir": str(project.root / "cache")},
        # no run page, as data_args(): tests that read it ask for it (report={"html": True})
        "report": {"html": False},
    }
    cfg.update(overrides)
    return cfg


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return Project(
        root=tmp_path,
        corpus=write_jsonl(tmp_path / "corpus.jsonl", CORPUS),
        golden=write_jsonl(tmp_path / "golden.jsonl", GOLDEN),
    )


class RecordingDisplay:
    """Stands in for rich's live display: records the steps a run opens, in order."""

    def __init__(self) -> None:
        self.steps: list[str] = []

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def add_task(self, description: str, **_: Any) -> int:
        self.steps.append(description)
        return len(self.steps)

    def remove_task(self, task: int) -> None: ...

    def advance(self, task: int, n: float) -> None: ...

    def update(self, task: int, **_: Any) -> None: ...


class TerminalStderr(io.StringIO):
    """A stderr that says it is a terminal, so that progress steps open."""

    def isatty(self) -> bool:
        return True
