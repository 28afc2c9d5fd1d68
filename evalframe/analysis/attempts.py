"""The attempts format of ``evalframe benefit``: one JSON object per attempt of one arm.

Reading, pairing on (task_id, seed), and the checks the reference's controls
require (reference 002, Appendix B §5): enough seeds per task and arm, and
arms that differ in nothing but their tools. The fields are documented in
docs/analyses.md, "The attempts format"; every error names the file and line.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalframe.core.errors import DataError
from evalframe.core.reader import read_jsonl, require_file
from evalframe.core.records import At, UniqueIds

__all__ = ["CONTROLLED", "Attempt", "check_controls", "check_seeds", "pair_attempts", "read_arm"]

#: What may differ between the arms: nothing but the tool surface (reference 002, B §3, §5).
CONTROLLED = ("model", "temperature", "prompt")


@dataclass(frozen=True)
class Attempt:
    """One attempt of one arm at one task with one seed."""

    arm: str
    task_id: str
    seed: int
    at: At
    success: bool | None
    answer: str | None
    total_tokens: int
    tool_calls: int
    turns: int
    latency_ms: float
    usd: float | None
    model: str
    temperature: float | None
    prompt: str | None
    label: str | None
    fields: dict[str, Any]

    def cost(self, name: str) -> float:
        value = getattr(self, name)
        return math.nan if value is None else float(value)


def _count(at: At, record: dict[str, Any], name: str) -> int:
    value = record[name]
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise at.error(f"field {name!r} must be a whole number >= 0", got=repr(value)[:40])
    return value


def _amount(at: At, value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise at.error(f"field {name!r} must be a number >= 0", got=repr(value)[:40])
    if math.isinf(value):
        raise at.error(f"field {name!r} must be finite", got=repr(value))
    return float(value)


def _success(at: At, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise at.error("field 'success' must be true/false (or 1/0)", got=repr(value)[:40])


REQUIRED = ("task_id", "seed", "total_tokens", "tool_calls", "turns", "model")
HINT = (
    "one JSON object per attempt: task_id, seed, success (or answer), total_tokens, tool_calls, "
    "turns, latency_ms, model; see docs/analyses.md, 'The attempts format'"
)


def _attempt(arm: str, at: At, raw: Any, need_answer: bool) -> Attempt:
    record = at.mapping(raw, "attempt record", hint=HINT)
    at.require(record, REQUIRED, hint=HINT)
    seed = record["seed"]
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise at.error("field 'seed' must be an integer", got=repr(seed)[:40])
    if "latency_ms" in record and "wall_clock_s" in record:
        raise at.error(
            "give latency once: 'latency_ms' or 'wall_clock_s', not both", got="both fields"
        )
    if "latency_ms" in record:
        latency = _amount(at, record["latency_ms"], "latency_ms")
    elif "wall_clock_s" in record:
        latency = 1000.0 * _amount(at, record["wall_clock_s"], "wall_clock_s")
    else:
        raise at.error("record has no 'latency_ms' (or 'wall_clock_s') field", hint=HINT)
    answer = record.get("answer")
    if need_answer and not isinstance(answer, str):
        raise at.error(
            "scoring answers needs each attempt's 'answer' text",
            got=repr(answer)[:40],
            hint="or score with the records' own 'success' (score: records)",
        )
    if not need_answer and "success" not in record:
        raise at.error(
            "record has no 'success' field",
            hint="give success per attempt, or score the answers against a golden set "
            "(score: answers / --golden)",
        )
    temperature = record.get("temperature")
    if temperature is not None:
        temperature = _amount(at, temperature, "temperature")
    model = at.text(record["model"], "model")
    prompt = record.get("prompt")
    if prompt is not None and not isinstance(prompt, str):
        raise at.error("field 'prompt' must be text (a name or a hash)", got=repr(prompt)[:40])
    label = record.get("arm")
    return Attempt(
        arm=arm,
        task_id=at.ident(record["task_id"], "task_id"),
        seed=seed,
        at=at,
        success=None if need_answer else _success(at, record["success"]),
        answer=answer if isinstance(answer, str) else None,
        total_tokens=_count(at, record, "total_tokens"),
        tool_calls=_count(at, record, "tool_calls"),
        turns=_count(at, record, "turns"),
        latency_ms=latency,
        usd=_amount(at, record["usd"], "usd") if record.get("usd") is not None else None,
        model=model,
        temperature=temperature,
        prompt=prompt,
        label=str(label) if label is not None else None,
        fields={k: v for k, v in record.items() if isinstance(v, (str, int, float, bool))},
    )


def read_arm(path: str | Path, arm: str, *, need_answer: bool, key: str) -> list[Attempt]:
    """Every attempt in a JSONL file, or in every ``*.jsonl`` of a folder (sorted by name)."""
    p = require_file(path, what=f"arm {arm.upper()}'s attempts", key=key)
    files = sorted(p.glob("*.jsonl")) if p.is_dir() else [p]
    if not files:
        raise DataError(
            f"arm {arm.upper()}'s folder holds no *.jsonl file", path=p, hint=HINT, key=key
        )
    attempts = []
    for f in files:
        for line, raw in read_jsonl(f, what=f"arm {arm.upper()}'s attempts", key=key):
            attempts.append(_attempt(arm, At(f, line), raw, need_answer))
    if not attempts:
        raise DataError(f"arm {arm.upper()} has no attempts", path=p, hint=HINT, key=key)
    return attempts


def pair_attempts(
    a: list[Attempt], b: list[Attempt]
) -> dict[tuple[str, int], tuple[Attempt, Attempt]]:
    by_arm: dict[str, dict[tuple[str, int], Attempt]] = {}
    for arm, attempts in (("a", a), ("b", b)):
        seen = UniqueIds(
            f"arm {arm.upper()}'s attempt", hint="give each (task_id, seed) one attempt per arm"
        )
        table = by_arm.setdefault(arm, {})
        for att in attempts:
            seen.add(f"{att.task_id}/seed={att.seed}", att.at)  # one word: an id
            table[(att.task_id, att.seed)] = att
    lonely = [
        (side, x)
        for side, mine, other in (("A", by_arm["a"], by_arm["b"]), ("B", by_arm["b"], by_arm["a"]))
        for k, x in mine.items()
        if k not in other
    ]
    if lonely:
        first = lonely[0][1]
        listed = ", ".join(f"{x.task_id} seed {x.seed} ({s} only)" for s, x in lonely[:6])
        raise first.at.error(
            f"{len(lonely)} attempt(s) have no partner in the other arm: {listed}"
            + (" …" if len(lonely) > 6 else ""),
            expected="every (task_id, seed) in both arms",
            hint="benefit is paired: run the same tasks with the same seeds in both arms, or "
            "remove the unpaired attempts",
        )
    return {k: (by_arm["a"][k], by_arm["b"][k]) for k in sorted(by_arm["a"])}


def check_seeds(pairs: Mapping[tuple[str, int], Any], min_seeds: int) -> dict[str, list[int]]:
    seeds: dict[str, list[int]] = {}
    for task, seed in pairs:
        seeds.setdefault(task, []).append(seed)
    short = {t: s for t, s in sorted(seeds.items()) if len(s) < min_seeds}
    if short:
        listed = ", ".join(f"{t} ({len(s)})" for t, s in list(short.items())[:8])
        task, task_seeds = next(iter(short.items()))
        first = pairs[(task, task_seeds[0])]
        raise first[0].at.error(
            f"{len(short)} task(s) have fewer than {min_seeds} seeds per arm: {listed}",
            expected=f"at least {min_seeds} seeds (attempts) per task and arm",
            hint="agentic runs are stochastic: one seed measures prompt luck (reference 002, "
            "B §5); run more seeds, or lower min_seeds / --min-seeds knowingly",
        )
    return seeds


def check_controls(pairs: Mapping[tuple[str, int], tuple[Attempt, Attempt]]) -> None:
    for (task, seed), (x, y) in pairs.items():
        for name in CONTROLLED:
            if getattr(x, name) != getattr(y, name):
                raise DataError(
                    f"the arms differ in {name} on task {task!r} seed {seed}: A has "
                    f"{getattr(x, name)!r} ({x.at}), B has {getattr(y, name)!r} ({y.at})",
                    expected=f"the same {', '.join(CONTROLLED)} in both arms: only the tool "
                    "surface may differ",
                    hint="a benefit measured across models, temperatures or prompts measures "
                    "those, not the tool; re-run both arms with one setting",
                )
