"""``evalframe baseline promote RUN_DIR --name NAME``: keep a run as a named baseline."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from evalframe.assess.runfolder import RunFolder
from evalframe.core.errors import DataError, EvalframeError

__all__ = ["main"]


def _headline_means(folder: Path) -> dict[str, float] | None:
    """A baseline's headline metrics and their means; None when there is none to read.

    Promoting over a name replaces what every later run is compared with, so the
    command says what the bar was and what it is now (the folder holds no history
    of its own; a baseline versioned with DVC keeps the old one in git).
    """
    if not RunFolder.holds_run(folder):
        return None
    run = RunFolder(folder)
    try:
        names, metrics = run.headline(), run.metrics()
    except EvalframeError:  # a damaged earlier baseline: replaced all the same, unsaid
        return None
    return {m: float(metrics[m]) for m in names if isinstance(metrics.get(m), int | float)}


def _require_finished_run(run_dir: Path) -> None:
    """Refuse a ``run_dir`` that is no finished run, as ``compare`` and ``rescore``
    refuse one: by the ``summary.json`` a run writes last (and a folder of runs,
    ``outputs/<experiment>``, with its newest run named), not by the first file
    of the copy that is missing."""
    if RunFolder.is_run(run_dir):
        return
    if not run_dir.is_dir():
        raise DataError(
            f"run folder not found: {run_dir}",
            expected="a folder a run wrote (config.yaml, per_query.jsonl, summary.json)",
            hint="give the folder the run printed after 'Saved results to:' "
            f"(outputs/<experiment>/<date_time> by default; relative paths are read from "
            f"{Path.cwd()})",
        )
    try:
        RunFolder(run_dir).require(RunFolder.SUMMARY, "run summary")
    except DataError as exc:
        if exc.got is not None:  # a folder of runs: the error names the one to give
            raise
    if RunFolder.is_shard(run_dir):  # one slice of a sharded run: its merge is the run
        raise DataError(
            f"{run_dir} is a shard (it holds {RunFolder.SHARD}), one slice of a sharded run, "
            "not a run",
            path=run_dir,
            expected="a finished run's folder",
            hint="merge the shards first (evalframe merge SHARD... --out RUN_DIR), then promote "
            "RUN_DIR; see docs/scaling.md",
        )
    raise DataError(
        f"{run_dir} is not a finished run: it has no {RunFolder.SUMMARY}, which a run writes "
        "last, so it is no run's folder or the run stopped while writing its outputs",
        path=run_dir / RunFolder.SUMMARY,
        expected="a finished run's folder (it printed 'Saved results to:')",
        hint="give a folder a run finished, or run the experiment again (its retrieval cache "
        f"keeps the rankings it got), or restore {RunFolder.SUMMARY} from where the folder "
        "came (a copy, `dvc pull`, git)",
    )


def main(argv: Sequence[str]) -> int:
    """``evalframe baseline promote``."""
    parser = argparse.ArgumentParser(
        prog="evalframe baseline",
        description="Keep a run as a named baseline (baselines/<name>/), for baseline=<name>.",
    )
    sub = parser.add_subparsers(dest="action", required=True)
    promote_p = sub.add_parser("promote", help="copy a run's results into baselines/<name>/")
    promote_p.add_argument("run_dir", type=Path)
    promote_p.add_argument(
        "--name", required=True, help="the baseline's name, as runs give it (baseline=NAME)"
    )
    promote_p.add_argument(
        "--root",
        type=Path,
        default=Path("baselines"),
        help="the folder of baselines (default: baselines, as the config's baselines_dir)",
    )
    promote_p.add_argument(
        "--commit",
        action="store_true",
        help="also `dvc add` the baseline and `git commit` its .dvc file (only those files)",
    )
    args = parser.parse_args(list(argv))

    import shlex

    from evalframe.assess.baseline import (
        promote,
        require_versioning,
        version_commands,
        version_with_dvc,
    )

    _require_finished_run(args.run_dir)
    if args.commit:  # before the copy: a refusal must not have replaced the baseline
        require_versioning(args.root)
    earlier = _headline_means(args.root / args.name)
    target = promote(args.run_dir, args.name, args.root)
    print(f"promoted {args.run_dir} to {target}")
    if earlier is not None:
        now = _headline_means(target) or {}
        moved = ", ".join(
            f"{m} {earlier[m]:.3f} -> {now[m]:.3f}" if m in now else f"{m} {earlier[m]:.3f} -> -"
            for m in earlier
        )
        print(f"  it replaced the baseline {args.name} held: {moved}")
    print(f"  compare new runs with it: python -m evalframe ... baseline={args.name}")
    if args.commit:
        for ran in version_with_dvc(target, args.name):
            print(f"  ran: {ran}")
        print("  share it: dvc push && git push")
    else:
        print("  version it:")
        for argv_ in version_commands(target, args.name):
            print("    " + " ".join(shlex.quote(part) for part in argv_))
        print("  (or promote with --commit to run these)")
    return 0
