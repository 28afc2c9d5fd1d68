"""Building mining configs in-process: a small corpus, one benchmark, the simulated solver."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalframe.mine.config import MineConfig, validate_mining

#: Ten documents; the first two are planted in the task below.
DOCS = [f"doc{i}" for i in range(10)]
PLANTED = {"doc0": 0.4, "doc1": 0.25}
BASE = 0.2


def write_project(root: Path, *, lift: dict[str, float] | None = None, tasks: int = 1) -> Path:
    """corpus.jsonl and tasks.jsonl under ``root``; every task seeds doc0 and doc1."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "corpus.jsonl").write_text(
        "".join(json.dumps({"id": d, "text": f"text of {d}"}) + "\n" for d in DOCS)
    )
    lines = []
    for t in range(tasks):
        lines.append(
            json.dumps(
                {
                    "id": f"t{t}",
                    "question": f"question {t}?",
                    "seeds": ["doc0", "doc1"],
                    "expected": "solved",
                    "simulation": {"base_rate": BASE, "lift": PLANTED if lift is None else lift},
                }
            )
        )
    (root / "tasks.jsonl").write_text("\n".join(lines) + "\n")
    return root


def raw_mining(root: Path, **overrides: Any) -> dict[str, Any]:
    """A mining config as Hydra would compose it (plain, resolved)."""
    cfg: dict[str, Any] = {
        "experiment": "unit",
        "corpus": {"name": "jsonl", "path": str(root / "corpus.jsonl")},
        "solver": {"name": "simulated"},
        "validator": {"name": "exact"},
        "benchmarks": {
            "b": {
                "tasks": str(root / "tasks.jsonl"),
                "query": "question",
                "solver_fields": ["simulation"],
                "ground_truth": {"answer": "expected"},
            }
        },
        "pool": {"distractors": 8},
        "trials": {"n": 120},
        "seed": 0,
        "max_concurrency": 1,
        "cache": False,
        "progress": False,
        "output": {"dir": str(root / "out"), "cache_dir": str(root / "cache")},
    }
    for key, value in overrides.items():
        node = cfg
        *parents, last = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
    return cfg


def mining_config(root: Path, **overrides: Any) -> MineConfig:
    return validate_mining(raw_mining(root, **overrides))
