"""``evalframe golden stats`` and ``diff``: what a golden set holds, and how two versions differ."""

from __future__ import annotations

import argparse
import shlex
import tempfile
from pathlib import Path
from typing import Any

from evalframe.app.golden_cli.common import add_format, emit, load
from evalframe.core.errors import EXIT_OK, ConfigError

__all__ = ["add_parsers", "diff", "stats"]


def add_parsers(sub: Any) -> None:
    s = sub.add_parser(
        "stats",
        help="counts per slice, judgments per query, negatives, labels",
        description="Summarise a golden set: queries and negatives per slice value "
        "(difficulty, category, domain, task_type, ...), judgments per query, labels.",
    )
    s.add_argument("path", help="golden set file or folder")
    add_format(s)
    s.add_argument("--json", action="store_true", help="print JSON instead of tables")

    s.set_defaults(run=stats)

    d = sub.add_parser(
        "diff",
        help="queries added/removed/reworded and judgments changed between two versions",
        description="Compare two versions of a golden set, queries matched by id: two files, "
        "or one path at Git/DVC revisions (--rev HEAD~1: that revision against the working "
        "copy; --rev A --rev B: A against B). DVC-tracked sets are read from DVC's cache or "
        "remote. Always exits 0.",
    )
    d.add_argument(
        "old", metavar="OLD", help="the earlier version (with --rev: the golden set's path)"
    )
    d.add_argument(
        "new",
        metavar="NEW",
        nargs="?",
        help="the later version (default with --rev: the same path)",
    )
    d.add_argument(
        "--rev",
        action="append",
        metavar="REV",
        help="read OLD at this Git revision (commit, branch, tag, HEAD~1); a second --rev "
        "reads NEW at that one",
    )
    add_format(d)
    d.add_argument("--json", action="store_true", help="print JSON")

    d.set_defaults(run=diff)


def stats(args: argparse.Namespace) -> int:
    from evalframe.golden.stats import compute_stats, render_stats

    loaded = load(args.path, args)
    counts = compute_stats(loaded.golden)
    emit(args, lambda: counts, lambda: render_stats(counts))
    return EXIT_OK


def diff(args: argparse.Namespace) -> int:
    from evalframe.golden.diff import diff_sets, render_diff

    revs: list[str] = args.rev or []
    if len(revs) > 2:
        raise ConfigError(
            "--rev is given more than twice",
            key="--rev",
            hint="--rev A compares A with the working copy; --rev A --rev B compares A with B",
        )
    if not revs and args.new is None:
        # a missing positional argument: no config key and no option to name
        old_path = shlex.quote(args.old)
        raise ConfigError(
            "argument NEW is missing: golden diff compares two versions of a golden set, and "
            f"was given one, OLD {args.old}, with no --rev",
            expected="two files, OLD NEW, or one file and a Git/DVC revision, PATH --rev REV",
            hint=f"give the later version, `evalframe golden diff {old_path} NEW.jsonl`, or "
            f"compare the file with its last commit: `evalframe golden diff {old_path} --rev HEAD`",
        )
    new_path = args.new or args.old
    with tempfile.TemporaryDirectory(prefix="evalframe-golden-") as scratch:
        sides = []
        for i, (path, rev) in enumerate(
            [(args.old, revs[0] if revs else None), (new_path, revs[1] if len(revs) > 1 else None)]
        ):
            if rev is None:
                sides.append((load(path, args), path))
                continue
            from evalframe.golden.revisions import checkout_at

            folder = Path(scratch) / str(i)
            folder.mkdir()
            copy = checkout_at(path, rev, folder)
            sides.append((load(str(copy), args, label=f"{path}@{rev}"), f"{path}@{rev}"))
        (old, old_name), (new, new_name) = sides
        changes = diff_sets(old.golden, new.golden)
    emit(args, changes.to_dict, lambda: render_diff(changes, old_name, new_name))
    return EXIT_OK
