"""The wire protocol of the command and HTTP solvers and the command validator.

A team plugs its own agent in without writing Python: the miner sends one
JSON object per call and reads one back.

Solver request (``evalframe.solve/1``), on a command's standard input or as an
HTTP POST body::

    {"protocol": "evalframe.solve/1", "task_id": "demo:01",
     "query": "How do I ...?", "metadata": {...},
     "context": [{"id": "doc-3", "text": "..."}, ...],
     "trial": 17, "seed": 1234567}

Solver response, on standard output or as the HTTP response body::

    {"answer": "the answer text", "metadata": {...optional...}}

Validator request (``evalframe.validate/1``), on a command's standard input::

    {"protocol": "evalframe.validate/1",
     "task": {"id": ..., "query": ..., "metadata": {...}, "ground_truth": {...}},
     "answer": {"text": ..., "metadata": {...}}}

The validator command answers with its exit code: 0 passed, 1 failed,
anything else is an error that stops the run. The last line it prints (on
standard output, else standard error) is kept as the verdict's detail.
"""

from __future__ import annotations

from typing import Any

from evalframe.core.errors import PluginError
from evalframe.plugin.protocols import Answer, Attempt, MiningTask

__all__ = ["SOLVE", "VALIDATE", "parse_answer", "solve_request", "validate_request"]

SOLVE = "evalframe.solve/1"
VALIDATE = "evalframe.validate/1"


def solve_request(attempt: Attempt) -> dict[str, Any]:
    return {
        "protocol": SOLVE,
        "task_id": attempt.task_id,
        "query": attempt.query,
        "metadata": attempt.metadata,
        "context": [{"id": d.id, "text": d.text} for d in attempt.context],
        "trial": attempt.trial,
        "seed": attempt.seed,
    }


def validate_request(task: MiningTask, answer: Answer) -> dict[str, Any]:
    return {
        "protocol": VALIDATE,
        "task": task.model_dump(mode="json"),
        "answer": answer.model_dump(mode="json"),
    }


def parse_answer(value: Any, *, who: str, attempt: Attempt) -> Answer:
    """The response object as an :class:`Answer`, or a PluginError saying what is wrong."""
    where = f"task {attempt.task_id!r}, trial {attempt.trial}"
    if not isinstance(value, dict) or not isinstance(value.get("answer"), str):
        shown = repr(value)[:200]
        raise PluginError(
            f"{who} answered {where} without a text 'answer'",
            expected='a JSON object {"answer": "...", "metadata": {...}}',
            got=shown,
            hint="see the protocol in docs/mining.md (evalframe.solve/1)",
        )
    metadata = value.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise PluginError(
            f"{who} answered {where} with a 'metadata' that is not an object",
            got=repr(metadata)[:200],
        )
    return Answer(text=value["answer"], metadata=metadata)
