"""Builds in-process with scripted roles over a tiny source tree.

``scripted`` plays all four roles. By default it writes a correct record for
every request (the author targets ``pkg/mN.py::fN`` for query ``q_0000N``, the
oracle answers with exactly those entities, the adversary supports every
claim, the judge says ``equivalent``); a test replaces any of the four
behaviours through :data:`SCRIPT`. It counts calls per role and the most calls
in flight at once.
"""

from __future__ import annotations

import copy
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from evalframe.build.config import BuildConfig, validate_build
from evalframe.build.engine import run_build
from evalframe.plugin.protocols import PluginContext
from evalframe.plugin.registry import ADVERSARIES, AUTHORS, JUDGES, ORACLES
from evalframe.plugin.roles import (
    AdversaryRequest,
    AuthorRequest,
    JudgeRequest,
    OracleRequest,
    RoleConfig,
    RoleReply,
    Usage,
)

#: Python files under the scripted tree: pkg/m1.py ... pkg/m60.py, each ``def fN()``.
FILES = 60


def write_tree(root: Path) -> Path:
    for n in range(1, FILES + 1):
        path = root / "pkg" / f"m{n}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"def f{n}():\n    return {n}\n")
    return root


def entity(n: int) -> str:
    return f"pkg/m{n}.py::f{n}"


def number(query_id: str) -> int:
    return int(query_id.removeprefix("q_"))


def default_author(request: AuthorRequest) -> dict[str, Any]:
    return {
        "query_id": request.query_id,
        "query_text": f"question number {number(request.query_id)}",
        "task_type": request.task_type,
        "difficulty": request.difficulty,
        "target_entity_ids": [entity(number(request.query_id))],
    }


def answer_for(query_id: str, task_type: str, difficulty: str, entities: list[str]) -> dict:
    files = sorted({e.split("::")[0] for e in entities})
    return {
        "query_id": query_id,
        "task_type": task_type,
        "difficulty": difficulty,
        "expected_entities": [
            {"entity_id": e, "role": "primary" if i == 0 else "supporting"}
            for i, e in enumerate(entities)
        ],
        "expected_files": files,
        "expected_line_ranges": [
            {"file": e.split("::")[0], "start": 1, "end": 2} for e in entities
        ],
        "must_mention_facts": [],
        "must_not_mention_facts": [],
        "canonical_narrative": "",
        "confidence": "high",
    }


def default_oracle(request: OracleRequest) -> dict[str, Any]:
    c = request.candidate
    return answer_for(c.query_id, c.task_type, c.difficulty, list(c.target_entity_ids))


def supporting(request: AdversaryRequest, partial: int = 0, partial_files: int = 0) -> dict:
    """Every entity and file claim supported, except the last ``partial`` entities and
    the last ``partial_files`` files, which are ``partial``."""
    a = request.answer
    ents = [e.entity_id for e in a.expected_entities]
    claims = [
        {
            "claim_type": "entity",
            "claim": e,
            "verdict": "partial" if i >= len(ents) - partial else "supported",
        }
        for i, e in enumerate(ents)
    ]
    files = list(a.expected_files)
    claims += [
        {
            "claim_type": "file",
            "claim": f,
            "verdict": "partial" if i >= len(files) - partial_files else "supported",
        }
        for i, f in enumerate(files)
    ]
    overall = "partial" if partial or partial_files else "supported"
    return {"query_id": a.query_id, "claim_verdicts": claims, "overall_verdict": overall}


def default_judge(request: JudgeRequest) -> dict[str, Any]:
    return {"query_id": request.query.query_id, "verdict": "equivalent"}


class Script:
    """What the scripted roles do, and what they were asked."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.author: Callable[[AuthorRequest], dict[str, Any]] = default_author
        self.oracle: Callable[[OracleRequest], dict[str, Any]] = default_oracle
        self.adversary: Callable[[AdversaryRequest], dict[str, Any]] = supporting
        self.judge: Callable[[JudgeRequest], dict[str, Any]] = default_judge
        self.usage: dict[str, Usage] = {}
        self.delay = 0.0
        self.calls: Counter[str] = Counter()
        self.asked: list[tuple[str, str]] = []
        self.active = 0
        self.max_active = 0
        self.lock = threading.Lock()

    def run(self, role: str, qid: str, make: Callable[[], dict[str, Any]]) -> RoleReply:
        with self.lock:
            self.calls[role] += 1
            self.asked.append((role, qid))
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        try:
            if self.delay:
                time.sleep(self.delay)
            return RoleReply(record=make(), usage=self.usage.get(role, Usage()))
        finally:
            with self.lock:
                self.active -= 1


SCRIPT = Script()


class ScriptedConfig(RoleConfig):
    """Settings of the scripted role (only the model id)."""


class Scripted:
    """Plays any role from the test's script."""

    def __init__(self, config: ScriptedConfig, context: PluginContext) -> None:
        self.config = config

    def author(self, request: AuthorRequest) -> RoleReply:
        return SCRIPT.run("author", request.query_id, lambda: SCRIPT.author(request))

    def answer(self, request: OracleRequest) -> RoleReply:
        return SCRIPT.run("oracle", request.candidate.query_id, lambda: SCRIPT.oracle(request))

    def review(self, request: AdversaryRequest) -> RoleReply:
        return SCRIPT.run("adversary", request.answer.query_id, lambda: SCRIPT.adversary(request))

    def judge(self, request: JudgeRequest) -> RoleReply:
        return SCRIPT.run("judge", request.query.query_id, lambda: SCRIPT.judge(request))


@pytest.fixture
def scripted() -> Iterator[Script]:
    """The scripted role registered for the four kinds (for this test only)."""
    SCRIPT.reset()
    with AUTHORS.scoped(), ORACLES.scoped(), ADVERSARIES.scoped(), JUDGES.scoped():
        for registry in (AUTHORS, ORACLES, ADVERSARIES, JUDGES):
            registry.add("scripted", Scripted, ScriptedConfig)
        yield SCRIPT
    SCRIPT.reset()


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def raw_build(tmp: Path, plan: dict[str, Any], batch: str = "b1", **over: Any) -> dict[str, Any]:
    src = tmp / "src"
    if not src.is_dir():
        write_tree(src)
    out = tmp / "out"
    role = {"name": "scripted", "model": "script/1"}
    base = {
        "name": "t",
        "format": "knowcode",
        "source": {"root": str(src)},
        "plan": plan,
        "headroom": 1.5,
        "author": role,
        "oracle": role,
        "adversary": role,
        "judge": role,
        "review": {"file": None, "fraction": 1.0},
        "max_concurrency": 4,
        # a cache entry is an fsync'ed file: only the tests of caching pay for them
        "cache": False,
        "output": {
            "dir": str(out),
            "batch": str(out / "pipeline" / batch),
            "blessed_dir": str(out),
            "cache_dir": str(tmp / "cache"),
        },
    }
    return _merge(base, over)


def build(
    tmp: Path, plan: dict[str, Any], batch: str = "b1", **over: Any
) -> tuple[int, str | None, Path, list[str]]:
    """Run a whole build; (exit code, status, batch folder, printed lines)."""
    config: BuildConfig = validate_build(raw_build(tmp, plan, batch, **over))
    lines: list[str] = []
    code, status = run_build(config, lines.append)
    return code, status, config.batch_dir, lines


def step(tmp: Path, plan: dict[str, Any], name: str, batch: str = "b1", **over: Any) -> Path:
    config = validate_build(raw_build(tmp, plan, batch, step=name, **over))
    run_build(config, lambda line: None)
    return config.batch_dir


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def step_file(batch: Path, name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((batch / f"step_{name}.json").read_text())
    return data


def rules_of(batch: Path) -> dict[str, str]:
    """query id -> the rule that rejected it (05_rejected.jsonl)."""
    return {r["query_id"]: r["rule"] for r in jsonl(batch / "05_rejected.jsonl")}


def fill_review(batch: Path, verdicts: dict[str, str], path: Path, **fields: Any) -> Path:
    """review_sample.jsonl with a verdict for each listed query (others left null)."""
    lines = []
    for record in jsonl(batch / "review_sample.jsonl"):
        if record["query_id"] in verdicts:
            record["verdict"] = verdicts[record["query_id"]]
            record["reviewer"] = "tester"
        for key, value in fields.get(record["query_id"], {}).items():
            record[key] = value
        lines.append(json.dumps(record))
    path.write_text("\n".join(lines) + "\n")
    return path
