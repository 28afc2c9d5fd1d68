"""``evalframe golden ...``: curate golden sets.

Subcommands: validate, stats, diff, create, sample, review-check, and build
(KnowCode's construction pipeline, composed with Hydra: :mod:`evalframe.app.build_cmd`,
dispatched before argparse since its arguments are Hydra overrides). Each lives
in its own module with its arguments beside its code (``validate``;
``versions``: stats and diff; ``review``: create, sample and review-check);
``common`` holds what they share.

Exit codes: 0 fine · 1 a check failed (an error-level finding, a breached
spot-check ceiling) · 2 unreadable input or a usage error (one paragraph on
stderr, no traceback).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from evalframe.app.golden_cli import review, validate, versions
from evalframe.core.errors import EXIT_ERROR, EvalframeError

__all__ = ["build_parser", "main"]

DESCRIPTION = """\
Curate golden sets: check them against the B.O.B and KnowCode rules, count
what they hold, compare versions, author new questions, and run the human
spot-check.
"""

EPILOG = """\
examples:
  evalframe golden validate golden.jsonl --corpus corpus.jsonl
  evalframe golden validate domains/ --min-domain-questions 10
  evalframe golden validate golden_v1.0.json --plan phase1_plan.yaml --source-root .
  evalframe golden validate golden_v1.0.json --source-root . --rev HEAD
  evalframe golden stats golden.jsonl
  evalframe golden diff old.jsonl new.jsonl
  evalframe golden diff golden/docs_keywords.jsonl --rev HEAD~1
  evalframe golden create golden.jsonl --corpus corpus.jsonl --k 5
  evalframe golden sample golden_v1.0.json --out review.jsonl --fraction 0.15
  evalframe golden review-check review.jsonl
  evalframe golden build +build=knowcode_demo   (evalframe golden build --help)

exit codes: 0 fine · 1 a check failed · 2 unreadable input or usage error
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="evalframe golden",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    validate.add_parser(sub)
    versions.add_parsers(sub)
    review.add_parsers(sub)
    sub.add_parser(
        "build",
        help="build a golden set with KnowCode's pipeline: +build=NAME (Hydra overrides; "
        "see `evalframe golden build --help`)",
        add_help=False,
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``evalframe golden`` with ``argv`` (the words after ``golden``)."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list and args_list[0] == "build":
        from evalframe.app.build_cmd import main as build_main

        return build_main(args_list[1:])
    parser = build_parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:  # --help (0) or a usage error (2, already printed)
        return exc.code if isinstance(exc.code, int) else EXIT_ERROR
    try:
        code: int = args.run(args)
        return code
    except EvalframeError as exc:
        print(exc.render(), file=sys.stderr)
        return EXIT_ERROR
