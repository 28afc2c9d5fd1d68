"""``evalframe golden validate``: every check on a golden set, as findings."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from evalframe.app.golden_cli.common import add_format, count, emit, fraction, load, ratio
from evalframe.core.errors import EXIT_GATE_FAILED, EXIT_OK, ConfigError, EvalframeError
from evalframe.golden.findings import LEVELS, Finding, count_levels

__all__ = ["add_parser", "render_findings", "run"]


def add_parser(sub: Any) -> None:
    v = sub.add_parser(
        "validate",
        help="check a golden set: duplicates, corpus ids, size, domains, plan, KnowCode gate",
        description="Run every check and report findings (error, warning, info). Exit 1 when "
        "any error-level finding, 0 otherwise, 2 when the input cannot be read.",
    )
    v.add_argument("path", help="golden set file or folder")
    add_format(v)
    v.add_argument("--corpus", help="corpus file: report expected ids missing from it")
    v.add_argument("--corpus-format", default="jsonl", help="corpus plugin (default: jsonl)")
    v.add_argument(
        "--corpus-param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a setting of the corpus plugin (id_field=doc_id, text_field=body); repeatable",
    )
    v.add_argument(
        "--near-duplicate",
        type=ratio,
        default=0.9,
        metavar="RATIO",
        help="questions at least this similar (difflib ratio) are near-duplicates "
        "(default 0.9; above 1 turns it off)",
    )
    v.add_argument(
        "--min-queries",
        type=count,
        default=20,
        metavar="N",
        help="B.O.B: at least N queries overall (default 20; 0 turns it off)",
    )
    v.add_argument(
        "--domain-field",
        default="domain",
        help="slice field holding the domain (default: domain, set from a folder's file names)",
    )
    v.add_argument(
        "--min-domain-questions",
        type=count,
        default=10,
        metavar="N",
        help="B.O.B: at least N questions per domain (default 10)",
    )
    v.add_argument(
        "--min-domain-negatives",
        type=count,
        default=2,
        metavar="N",
        help="B.O.B: at least N negative examples per domain (default 2)",
    )
    v.add_argument(
        "--max-domain-negatives",
        type=count,
        default=3,
        metavar="N",
        help="B.O.B: more than N negatives per domain is a warning (default 3)",
    )
    v.add_argument(
        "--plan",
        metavar="FILE",
        help="KnowCode stratification plan (YAML/JSON {task_type: {difficulty: target}})",
    )
    v.add_argument(
        "--plan-fill",
        type=fraction,
        default=0.8,
        metavar="FRACTION",
        help="every plan cell filled to at least this fraction of its target (default 0.8)",
    )
    v.add_argument(
        "--source-root",
        metavar="DIR",
        help="KnowCode: run the mechanical gate (entities, files, line ranges, narrative) "
        "and the drift guard against the source under DIR",
    )
    v.add_argument(
        "--rev",
        metavar="REV",
        help="KnowCode: read the source under --source-root as committed at this Git "
        "revision (git show REV:path), not the working tree: the gate and the drift guard "
        "then check what REV holds. The golden set itself is read from PATH as given",
    )
    v.add_argument(
        "--authoring",
        choices=("warning", "error", "off"),
        default="warning",
        help="KnowCode: level of the authoring rules of §3.1, §7.2 and §9 (query leaks its "
        "entity id, difficulty vs entity count, rationale, facts, narrative length, "
        "classifier expectation); default warning, error fails the check, off skips them",
    )
    v.add_argument("--json", action="store_true", help="print the findings as JSON")

    v.set_defaults(run=run)


#: Errors said on stderr beside ``--json`` when the checks fail (the JSON has them all).
SHOWN_ERRORS = 10


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except EvalframeError as exc:
        if args.json:
            # stdout stays one JSON document whatever happened (a script parses it): the
            # error that stopped the checks, as stderr also says it (exit 2)
            print(json.dumps(_unread(args.path, exc), indent=2, ensure_ascii=False))
        raise


def _unread(path: str, exc: EvalframeError) -> dict[str, Any]:
    """``--json``'s document for a set (or option) that stopped the checks before any ran.

    ``where`` is the error's own place (a line of the set, an option); an error
    placed nowhere more precise (the set is missing, its format unknown) is the set's.
    """
    return {
        "path": str(path),
        "passed": False,
        "counts": {"error": 1, "warning": 0, "info": 0},
        "error": {"where": exc.where or str(path), "message": exc.render()},
        "findings": [],
    }


def _run(args: argparse.Namespace) -> int:
    from evalframe.golden.checks import Thresholds, load_plan, run_checks
    from evalframe.golden.load import load_corpus, parse_params

    if args.source_root is not None and not Path(args.source_root).is_dir():
        raise ConfigError(
            f"--source-root {args.source_root} is not a folder",
            key="--source-root",
            hint="give the root the golden set's file paths are relative to",
        )
    if args.rev is not None and args.source_root is None:
        raise ConfigError(
            "--rev names the revision of the source to check, and no --source-root is given",
            key="--rev",
            hint="add --source-root DIR (a folder inside the Git repository)",
        )
    plan = load_plan(args.plan) if args.plan else None
    corpus = (
        load_corpus(
            args.corpus, args.corpus_format, parse_params(args.corpus_param, "--corpus-param")
        )
        if args.corpus
        else None
    )
    loaded = load(args.path, args, source_root=args.source_root, source_rev=args.rev)
    thresholds = Thresholds(
        near_duplicate=args.near_duplicate,
        min_queries=args.min_queries,
        domain_field=args.domain_field,
        min_domain_questions=args.min_domain_questions,
        min_domain_negatives=args.min_domain_negatives,
        max_domain_negatives=args.max_domain_negatives,
        plan_fill=args.plan_fill,
    )
    findings: list[Finding] = list(loaded.findings)
    findings += run_checks(
        loaded.golden,
        loaded.where,
        thresholds,
        corpus_ids=corpus.ids() if corpus is not None else None,
        plan=plan,
    )
    authoring = getattr(loaded.loader, "authoring_checks", None)
    if authoring is not None:
        findings += authoring(args.authoring)
    mechanical = getattr(loaded.loader, "mechanical_checks", None)
    if args.source_root is not None:
        if mechanical is None:
            raise ConfigError(
                f"dataset format {loaded.format!r} has no source checks for --source-root",
                key="--source-root",
                hint="--source-root applies to --format knowcode",
            )
        findings += (
            mechanical(args.source_root)
            if args.rev is None
            else mechanical(args.source_root, rev=args.rev)
        )
        if "meta_path" not in loaded.golden.provenance:
            findings.append(
                Finding(
                    "info",
                    "drift",
                    "no meta file beside the golden set: the source drift guard was not checked",
                    location=str(loaded.path),
                )
            )
    elif mechanical is not None:
        findings.append(
            Finding(
                "info",
                "source",
                "the mechanical gate and drift guard were skipped; give --source-root DIR "
                "to check entities, files and line ranges against the source",
            )
        )
    counts = count_levels(findings)
    passed = counts["error"] == 0
    golden = loaded.golden
    emit(
        args,
        lambda: {
            "path": str(loaded.path),
            "format": loaded.format,
            "name": golden.name,
            "content_hash": golden.content_hash,
            "queries": len(golden),
            "counts": counts,
            "passed": passed,
            "findings": [f.to_dict() for f in findings],
        },
        lambda: render_findings(loaded, findings, counts, passed),
    )
    if args.json and not passed:
        # stdout is the JSON (a DVC stage writes it to a file): the errors also go to
        # stderr, so whoever ran the stage sees why it failed without opening the file
        errors = [f for f in findings if f.level == "error"]
        lines = [f"{loaded.path}: {len(errors)} error(s); the checks failed:"]
        lines += [f"  {f.location or loaded.path}: {f.message}" for f in errors[:SHOWN_ERRORS]]
        if len(errors) > SHOWN_ERRORS:
            lines.append(f"  ... {len(errors) - SHOWN_ERRORS} more in the JSON")
        print("\n".join(lines), file=sys.stderr)
    return EXIT_OK if passed else EXIT_GATE_FAILED


def render_findings(
    loaded: Any, findings: list[Finding], counts: dict[str, int], passed: bool
) -> str:
    golden = loaded.golden
    lines = [
        f"golden set {golden.name} ({loaded.format}, {len(golden)} "
        f"{'query' if len(golden) == 1 else 'queries'}, "
        f"hash {golden.content_hash}) from {loaded.path}"
    ]
    for level in LEVELS:
        group = [f for f in findings if f.level == level]
        if not group:
            continue
        heading = {"error": "errors", "warning": "warnings", "info": "info"}[level]
        lines += ["", f"{heading} ({len(group)}):"]
        by_check: dict[str, list[Finding]] = {}
        for f in group:
            by_check.setdefault(f.check, []).append(f)
        for check, items in by_check.items():
            lines.append(f"  {check} ({len(items)}):")
            lines += [f"    {f.location + ': ' if f.location else ''}{f.message}" for f in items]
    summary = f"{counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} info"
    lines += ["", f"result: {'PASSED' if passed else 'FAILED'} ({summary})"]
    return "\n".join(lines)
