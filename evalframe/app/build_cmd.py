"""``evalframe golden build +build=NAME``: KnowCode's golden-set pipeline, composed with Hydra.

Composes ``conf/building.yaml`` with ``conf/build/<name>.yaml`` on the same
search path as a run, so overrides (``oracle=command 'oracle.command=[...]'``),
``--cfg job`` and ``hydra.run.dir=...`` work as they do for runs, then runs
steps A to H of the reference (docs/golden-pipeline.md) into a new,
timestamped batch folder, or one step (``step=oracle``) of a given batch.

Everything of the command lives in this module; ``golden_cli`` only
dispatches to :func:`main`.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evalframe.app.composed import run_composed
from evalframe.app.hydra_app import (
    EXIT_CRASH,
    config_search_path,
    drop_stub_folder,
    group_options,
)
from evalframe.app.hydra_errors import plain_config
from evalframe.app.stderr import report_crash
from evalframe.core.errors import EXIT_ERROR, EXIT_OK, ConfigError, EvalframeError

__all__ = ["main"]

CONFIG_NAME = "building"
GROUPS = ("build", "author", "oracle", "adversary", "judge")

HELP = """\
usage:
  evalframe golden build +build=NAME [KEY=VALUE ...]   build a golden set (Hydra overrides)
  evalframe golden build +build=NAME --cfg job         print the composed config, run nothing
  evalframe golden build +build=NAME step=STEP hydra.run.dir=BATCH
                                                       one step of a batch (a DVC stage)

Steps (KnowCode §10.1): plan, author, dedup, oracle, gate, adversary, review, assemble.

examples:
  evalframe golden build +build=knowcode_demo
  evalframe golden build +build=knowcode_demo review.file=reviews.jsonl max_concurrency=8
  evalframe golden build +build=mine oracle=command 'oracle.command=[python,oracle.py]' \\
      oracle.model=gpt-5 budget.max_calls=300

config groups: build, author, oracle, adversary, judge (conf/<group>/*.yaml on the search path)
docs: docs/golden-pipeline.md · exit codes: 0 blessed, awaiting review or a step done ·
1 requeued (a spot-check ceiling or batch drift) · 2 usage, config, data or budget · 3 crash
"""


def main(argv: Sequence[str]) -> int:
    args = list(argv)
    if args and args[0] in ("-h", "--help", "help"):
        print(HELP, end="")
        return EXIT_OK
    try:
        return run_composed(
            args, prog="evalframe golden build", config_name=CONFIG_NAME, groups=GROUPS, job=_job
        )
    except EvalframeError as exc:
        print(exc.render(), file=sys.stderr)
        return EXIT_ERROR


def _echo(line: str) -> None:
    print(line, flush=True)


def _roles_line(config: Any) -> str:
    return "roles: " + ", ".join(
        f"{role} {r.spec.name} ({r.model})" for role, r in config.roles.items()
    )


def _calls_line(calls: dict[str, Any]) -> str:
    per = ", ".join(
        f"{role} {calls['calls'].get(role, 0)}+{calls['cached'].get(role, 0)}"
        for role in ("author", "oracle", "adversary", "judge")
    )
    tokens_in = sum(calls["input_tokens"].values())
    tokens_out = sum(calls["output_tokens"].values())
    return (
        f"calls: {calls['total_calls']} made, {calls['total_cached']} from cache ({per}, "
        f"made+cached); tokens: {tokens_in} in, {tokens_out} out"
    )


def _result(batch: dict[str, Any]) -> str:
    status = batch.get("status")
    release = batch.get("release")
    if status == "blessed" and release:
        return (
            f"result: BLESSED golden_v{release['version']} ({release['query_count']} queries, "
            f"{release['added']} added) -> {release['path']}"
        )
    if status == "awaiting_review":
        missing = (batch.get("review") or {}).get("missing") or []
        return f"result: AWAITING REVIEW ({len(missing)} sampled record(s) without a verdict)"
    if status == "requeued":
        return "result: REQUEUED: " + "; ".join(batch.get("feedback") or [])[:400]
    return f"result: NOT BLESSED ({status})"


def _drop_if_empty(folder: Path) -> None:
    with contextlib.suppress(OSError):  # only an empty folder: the build wrote nothing
        folder.rmdir()


def _job(cfg: Any) -> int:
    from evalframe.build.batch import Batch
    from evalframe.build.config import validate_build
    from evalframe.build.engine import run_build

    try:
        if cfg.get("source") is None or cfg.get("plan") is None:
            options = group_options("build", config_search_path())
            raise ConfigError(
                "no build selected",
                key="build",
                expected="a build config that names the source, the plan and the roles",
                hint=f"pick one with +build=NAME (available: {', '.join(options) or 'none'}), "
                "e.g. evalframe golden build +build=knowcode_demo; or write conf/build/<name>.yaml",
            )
        raw = plain_config(
            cfg,
            "resolve the build config",
            "set it on the command line (key=value) or in conf/build/<name>.yaml, "
            "e.g. +build=knowcode_demo",
        )
        config = validate_build(raw)
        where = config.source.root + (f"@{config.source.rev}" if config.source.rev else "")
        step = "" if config.step == "all" else f", step {config.step}"
        _echo(f"golden build {config.name}: source {where}{step}")
        _echo(_roles_line(config) + f"; max_concurrency {config.max_concurrency}")
        _echo(f"batch: {config.batch_dir}")
        try:
            code, status = run_build(config, _echo)
        except EvalframeError:
            _drop_if_empty(config.batch_dir)  # refused before step A wrote anything
            raise
        batch = Batch(config.batch_dir)
        if status is not None:
            summary = batch.read_json("batch")
            _echo(_calls_line(summary["calls"]))
            _echo(_result(summary))
        return code
    except EvalframeError as exc:
        # a config refused before the batch began leaves no empty batch folder behind
        drop_stub_folder()
        print(exc.render(), file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("interrupted: replies already given are cached; re-run to resume", file=sys.stderr)
        return 130
    except Exception:  # noqa: BLE001  # a crash is reported with its traceback, not hidden
        report_crash()
        return EXIT_CRASH
