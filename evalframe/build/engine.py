"""One build: steps A to H in one process, or one step on a batch folder (a DVC stage)."""

from __future__ import annotations

from collections.abc import Callable

from evalframe.build.assemble import step_assemble
from evalframe.build.batch import FILES, Batch
from evalframe.build.config import LETTERS, STEPS, BuildConfig
from evalframe.build.context import Context
from evalframe.build.review import step_review
from evalframe.build.steps import (
    step_adversary,
    step_author,
    step_dedup,
    step_gate,
    step_oracle,
    step_plan,
)
from evalframe.core.errors import EXIT_GATE_FAILED, EXIT_OK, DataError
from evalframe.core.reader import read_jsonl

__all__ = ["STEP_FUNCTIONS", "run_build"]

STEP_FUNCTIONS: dict[str, Callable[[Context], str]] = {
    "plan": step_plan,
    "author": step_author,
    "dedup": step_dedup,
    "oracle": step_oracle,
    "gate": step_gate,
    "adversary": step_adversary,
    "review": step_review,
    "assemble": step_assemble,
}
#: A batch that ends in these states did not produce a release it should have.
FAILED = ("requeued", "empty")


def _check_fresh(batch: Batch) -> None:
    taken = [name for name in FILES.values() if (batch.dir / name).exists()]
    if taken:
        raise DataError(
            f"the batch folder {batch.dir} already holds a batch ({', '.join(taken[:3])}); "
            "batches are append-only",
            key="output.batch",
            hint="leave output.batch at its default (a new timestamped folder per build), or "
            "run one step of an existing batch with step=<name>",
        )


def run_build(config: BuildConfig, echo: Callable[[str], None]) -> tuple[int, str | None]:
    """Run the configured step(s); return the exit code and the batch's final status."""
    steps = STEPS if config.step == "all" else (config.step,)
    if "review" in steps and config.review.file is not None:
        # read now, not at step G after every role call of A-F has been paid for: a missing
        # file, a folder or a line that is not a JSON value is an error before step A
        for _ in read_jsonl(config.review.file, what="review file", key="review.file"):
            pass
    batch = Batch(config.batch_dir)
    if config.step == "all":
        _check_fresh(batch)
    ctx = Context(config=config, batch=batch, echo=echo)
    for step in steps:
        line = STEP_FUNCTIONS[step](ctx)
        echo(f"{LETTERS[step]} {step:<10} {line}")
    if "assemble" not in steps:
        return EXIT_OK, None
    status = str(batch.read_json("batch").get("status"))
    return (EXIT_GATE_FAILED if status in FAILED else EXIT_OK), status
