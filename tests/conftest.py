"""Shared fixtures: a tiny project (corpus + golden set), a CLI runner, and a sharded project."""

from __future__ import annotations

import io
import json
import os
import random
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
def fresh_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Python API test as a notebook user runs: in a folder of its own (``tmp_path``,
    the current directory), with its own retrieval cache and tracking off."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EVALFRAME_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("EVALFRAME_TRACKING", "none")
    return tmp_path


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


# -- a sharded evaluation (tests/test_shard.py, tests/app/test_merge_cmd.py) ------------

SHARD_WORDS = [f"w{i}" for i in range(60)]

#: What loading the sharded project's golden set warns about: q36 also judges d50, one
#: past the corpus's last document (a loader's warning, which a run's summary.json keeps)
SHARD_LOADER_WARNING = (
    "1 expected chunk id(s) are not in corpus 'corpus' and can never be retrieved: d50 (query q36)"
)


def shard_collection(root: Path, n_docs: int = 50, n_queries: int = 37) -> tuple[Path, Path]:
    """A generated collection: graded judgments, negative queries, two slice fields."""
    rng = random.Random(7)
    docs = [
        {"id": f"d{i}", "text": " ".join(rng.choices(SHARD_WORDS, k=rng.randint(4, 15)))}
        for i in range(n_docs)
    ]
    golden: list[dict[str, Any]] = []
    for q in range(n_queries):
        target = rng.randrange(n_docs)
        words = docs[target]["text"].split()
        negative = q % 9 == 4
        other = (target + 1 + rng.randrange(n_docs - 1)) % n_docs
        golden.append(
            {
                "id": f"q{q}",
                # one word of the relevant document among two random ones: BM25 often misses
                "question": " ".join([rng.choice(words), *rng.choices(SHARD_WORDS, k=2)]),
                "expected_chunks": [] if negative else [f"d{target}", f"d{other}"],
                "difficulty": ["easy", "hard"][q % 2],
                "category": ["a", "b", "c"][q % 3],
            }
        )
    golden[-1]["expected_chunks"].append(f"d{n_docs}")  # SHARD_LOADER_WARNING
    return write_jsonl(root / "corpus.jsonl", docs), write_jsonl(root / "golden.jsonl", golden)


SHARD_GATES = """\
floor:
  type: threshold
  metric: R@5
  op: ">="
  value: 0.2
  severity: required
too_high:
  type: threshold
  metric: RR
  op: ">="
  value: 0.99
  severity: required
"""


def make_shard_project(root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The collection and its gates in ``root``, made the working folder, tracking nothing."""
    shard_collection(root)
    (root / "conf" / "gates").mkdir(parents=True)
    (root / "conf" / "gates" / "sharded.yaml").write_text(SHARD_GATES)
    monkeypatch.chdir(root)
    monkeypatch.setenv("EVALFRAME_CACHE_DIR", str(root / ".cache"))
    monkeypatch.setenv("EVALFRAME_TRACKING", "none")
    return root


def shard_args(root: Path, *extra: str) -> list[str]:
    return [
        f"dataset.path={root / 'golden.jsonl'}",
        f"corpus.path={root / 'corpus.jsonl'}",
        "gates=sharded",
        "depth=10",
        "metrics.measures=[R@5,RR,nDCG@10,AP]",
        "stats.bootstrap=300",
        "stats.seed=3",
        "cache.retrieval=false",  # every shard retrieves for real
        *extra,
    ]


def shard_main(root: Path, *extra: str) -> int:
    """``python -m evalframe`` on the sharded project, in this process."""
    from evalframe.app.cli import main

    return main(shard_args(root, *extra))


def make_two_shards(root: Path) -> Path:
    """Shards 0/2 and 1/2 of the project's evaluation, in ``root/sh/0`` and ``root/sh/1``."""
    sweep = ("-m", "shard=0/2,1/2", "stats.bootstrap=0", f"hydra.sweep.dir={root / 'sh'}")
    assert shard_main(root, *sweep) == 0
    return root


@pytest.fixture
def shard_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return make_shard_project(tmp_path, monkeypatch)


@pytest.fixture
def two_shards(shard_project: Path) -> Path:
    return make_two_shards(shard_project)
