"""``evalframe baseline promote RUN_DIR --name NAME``: keep a run as a named baseline."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from evalframe.assess.runfolder import RunFolder
from evalframe.core.errors import EvalframeError

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
