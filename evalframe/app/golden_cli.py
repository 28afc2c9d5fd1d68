"""``evalframe golden ...``: curate golden sets.

Subcommands: validate, stats, diff, create, sample, review-check.

Exit codes: 0 fine · 1 a check failed (an error-level finding, a breached
spot-check ceiling) · 2 unreadable input or a usage error (one paragraph on
stderr, no traceback).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evalframe.core.errors import EXIT_ERROR, EXIT_GATE_FAILED, EXIT_OK, ConfigError, EvalframeError
from evalframe.golden.findings import LEVELS, Finding, count_levels

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

exit codes: 0 fine · 1 a check failed · 2 unreadable input or usage error
"""


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not between 0 and 1")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is negative")
    return value


def _add_format(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--format",
        metavar="F",
        help="dataset plugin that reads the file (jsonl, knowcode, ...); default: inferred "
        "(*.jsonl or a folder of them -> jsonl, *.json -> knowcode)",
    )
    p.add_argument(
        "--param",
        action="append",
        metavar="KEY=VALUE",
        help="extra dataset plugin setting (repeatable), e.g. --param domain_field=area",
    )
    p.add_argument(
        "--queries",
        metavar="FILE",
        help="a separate queries file joined to the golden set by id, for gold without text "
        "(Galaxy): JSONL/JSON records, {id: text} or TSV",
    )
    p.add_argument(
        "--queries-param",
        action="append",
        metavar="KEY=VALUE",
        help="queries file setting (repeatable): id_field, text_field (default id, query)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="evalframe golden",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    v = sub.add_parser(
        "validate",
        help="check a golden set: duplicates, corpus ids, size, domains, plan, KnowCode gate",
        description="Run every check and report findings (error, warning, info). Exit 1 when "
        "any error-level finding, 0 otherwise, 2 when the input cannot be read.",
    )
    v.add_argument("path", help="golden set file or folder")
    _add_format(v)
    v.add_argument("--corpus", help="corpus file: report expected ids missing from it")
    v.add_argument("--corpus-format", default="jsonl", help="corpus plugin (default: jsonl)")
    v.add_argument(
        "--near-duplicate",
        type=float,
        default=0.9,
        metavar="RATIO",
        help="questions at least this similar (difflib ratio) are near-duplicates "
        "(default 0.9; above 1 turns it off)",
    )
    v.add_argument(
        "--min-queries",
        type=_count,
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
        type=_count,
        default=10,
        metavar="N",
        help="B.O.B: at least N questions per domain (default 10)",
    )
    v.add_argument(
        "--min-domain-negatives",
        type=_count,
        default=2,
        metavar="N",
        help="B.O.B: at least N negative examples per domain (default 2)",
    )
    v.add_argument(
        "--max-domain-negatives",
        type=_count,
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
        type=_fraction,
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

    s = sub.add_parser(
        "stats",
        help="counts per slice, judgments per query, negatives, labels",
        description="Summarise a golden set: queries and negatives per slice value "
        "(difficulty, category, domain, task_type, ...), judgments per query, labels.",
    )
    s.add_argument("path", help="golden set file or folder")
    _add_format(s)
    s.add_argument("--json", action="store_true", help="print JSON instead of tables")

    d = sub.add_parser(
        "diff",
        help="queries added/removed/reworded and judgments changed between two versions",
        description="Compare two versions of a golden set, queries matched by id: two files, "
        "or one path at Git/DVC revisions (--rev HEAD~1: that revision against the working "
        "copy; --rev A --rev B: A against B). DVC-tracked sets are read from DVC's cache or "
        "remote. Always exits 0.",
    )
    d.add_argument("old", help="the earlier version (with --rev: the golden set's path)")
    d.add_argument("new", nargs="?", help="the later version (default with --rev: the same path)")
    d.add_argument(
        "--rev",
        action="append",
        metavar="REV",
        help="read OLD at this Git revision (commit, branch, tag, HEAD~1); a second --rev "
        "reads NEW at that one",
    )
    _add_format(d)
    d.add_argument("--json", action="store_true", help="print JSON")

    c = sub.add_parser(
        "create",
        help="author questions interactively with the retriever's top-k passages",
        description="Ask a question, see the top-k passages, pick the expected ones "
        "(numbers like 1,3, ids, id:12 for an id made of digits, or n for a negative "
        "example), give difficulty, category and notes; the record is appended to PATH "
        "(B.O.B JSONL) atomically. An empty question or end of input stops.",
    )
    c.add_argument("path", help="B.O.B JSONL file to append to (created if missing)")
    c.add_argument("--corpus", required=True, help="corpus file the passages come from")
    c.add_argument("--corpus-format", default="jsonl", help="corpus plugin (default: jsonl)")
    c.add_argument("--k", type=int, default=5, help="passages shown per question (default 5)")
    c.add_argument("--retriever", default="bm25", help="retriever plugin (default: bm25)")
    c.add_argument(
        "--cache-dir",
        help="index cache (default: $EVALFRAME_CACHE_DIR or ~/.cache/evalframe)",
    )

    sa = sub.add_parser(
        "sample",
        help="stratified sample for the human spot-check, as a review file",
        description="Draw at least FRACTION of the set, with at least one record from every "
        "stratum cell, add every record whose oracle answer has confidence low or whose "
        "adversary report has a partial verdict (KnowCode §3.2, §3.3), and write them as "
        'REVIEW.jsonl: each record plus verdict: null, reviewer: null, notes: "" for the '
        "reviewer to fill in, and review_reasons.",
    )
    sa.add_argument("path", help="golden set file or folder")
    _add_format(sa)
    sa.add_argument("--out", required=True, help="review file to write (JSONL)")
    sa.add_argument("--fraction", type=_fraction, default=0.15, help="default 0.15 (KnowCode §8)")
    sa.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    sa.add_argument(
        "--strata",
        help="comma-separated fields (default: task_type,difficulty, those present)",
    )
    sa.add_argument("--force", action="store_true", help="overwrite an existing review file")
    sa.add_argument(
        "--oracle-answers",
        metavar="FILE",
        help="KnowCode's 01_oracle_answers.jsonl: answers with confidence low are always "
        "reviewed (also read from the golden records themselves)",
    )
    sa.add_argument(
        "--adversary-reports",
        metavar="FILE",
        help="KnowCode's 02_adversary_reports.jsonl: reports with any partial verdict are "
        "always reviewed (also read from the golden records themselves)",
    )

    r = sub.add_parser(
        "review-check",
        help="apply the spot-check ceilings to a filled-in review file",
        description="Read verdicts (correct | minor_issue | major_issue | wrong) and apply "
        "KnowCode's ceilings: major_issue + wrong < 5%, minor_issue < 15%, no wrong "
        "verdict on an easy query. Exit 1 on a breach.",
    )
    r.add_argument("path", help="review file written by `sample`, verdicts filled in")
    r.add_argument(
        "--max-major-wrong",
        type=_fraction,
        default=0.05,
        metavar="RATE",
        help="major_issue + wrong must stay below this rate (default 0.05; Phase 2: 0.03)",
    )
    r.add_argument(
        "--max-minor",
        type=_fraction,
        default=0.15,
        metavar="RATE",
        help="minor_issue must stay below this rate (default 0.15)",
    )
    r.add_argument(
        "--max-wrong-easy",
        type=_count,
        default=0,
        metavar="N",
        help="wrong verdicts allowed on easy queries (default 0)",
    )
    r.add_argument("--json", action="store_true", help="print JSON")
    return parser


# -- commands -------------------------------------------------------------------------


def _load(path: str, args: argparse.Namespace, label: str | None = None, **kwargs: Any) -> Any:
    from evalframe.golden.load import load_golden, parse_params

    queries = None
    if args.queries is not None:
        from pydantic import ValidationError

        from evalframe.golden.queries import QueriesConfig

        try:
            queries = QueriesConfig(
                path=args.queries, **parse_params(args.queries_param, "--queries-param")
            )
        except ValidationError as exc:
            raise ConfigError(
                f"--queries-param: {exc.errors()[0]['msg']} ({exc.errors()[0]['loc'][0]!r})",
                key="--queries-param",
                expected="id_field=NAME or text_field=NAME",
            ) from None
    loaded = load_golden(
        path, args.format, parse_params(args.param, "--param"), queries=queries, **kwargs
    )
    if loaded.inferred:
        print(f"{label or path}: {loaded.inferred}", file=sys.stderr)
    return loaded


def _validate(args: argparse.Namespace) -> int:
    from evalframe.golden.checks import Thresholds, load_plan, run_checks
    from evalframe.golden.load import load_corpus

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
    corpus = load_corpus(args.corpus, args.corpus_format) if args.corpus else None
    loaded = _load(args.path, args, source_root=args.source_root, source_rev=args.rev)
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
    if args.json:
        print(
            json.dumps(
                {
                    "path": str(loaded.path),
                    "format": loaded.format,
                    "name": golden.name,
                    "content_hash": golden.content_hash,
                    "queries": len(golden),
                    "counts": counts,
                    "passed": passed,
                    "findings": [f.to_dict() for f in findings],
                },
                indent=2,
                ensure_ascii=False,
            )
        )
    else:
        print(_render_findings(loaded, findings, counts, passed))
    return EXIT_OK if passed else EXIT_GATE_FAILED


def _render_findings(
    loaded: Any, findings: list[Finding], counts: dict[str, int], passed: bool
) -> str:
    golden = loaded.golden
    lines = [
        f"golden set {golden.name} ({loaded.format}, {len(golden)} queries, "
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


def _stats(args: argparse.Namespace) -> int:
    from evalframe.golden.stats import compute_stats, render_stats

    loaded = _load(args.path, args)
    stats = compute_stats(loaded.golden)
    print(json.dumps(stats, indent=2, ensure_ascii=False) if args.json else render_stats(stats))
    return EXIT_OK


def _diff(args: argparse.Namespace) -> int:
    from evalframe.golden.diff import diff_sets, render_diff

    revs: list[str] = args.rev or []
    if len(revs) > 2:
        raise ConfigError(
            "--rev is given more than twice",
            key="--rev",
            hint="--rev A compares A with the working copy; --rev A --rev B compares A with B",
        )
    if not revs and args.new is None:
        raise ConfigError(
            "golden diff needs two versions",
            key="new",
            hint="give two files (golden diff OLD NEW) or a revision "
            "(golden diff PATH --rev HEAD~1)",
        )
    new_path = args.new or args.old
    with tempfile.TemporaryDirectory(prefix="evalframe-golden-") as scratch:
        sides = []
        for i, (path, rev) in enumerate(
            [(args.old, revs[0] if revs else None), (new_path, revs[1] if len(revs) > 1 else None)]
        ):
            if rev is None:
                sides.append((_load(path, args), path))
                continue
            from evalframe.golden.revisions import checkout_at

            folder = Path(scratch) / str(i)
            folder.mkdir()
            copy = checkout_at(path, rev, folder)
            sides.append((_load(str(copy), args, label=f"{path}@{rev}"), f"{path}@{rev}"))
        (old, old_name), (new, new_name) = sides
        diff = diff_sets(old.golden, new.golden)
    if args.json:
        print(json.dumps(diff.to_dict(), indent=2, ensure_ascii=False))
    else:
        print(render_diff(diff, old_name, new_name))
    return EXIT_OK


def _create(args: argparse.Namespace) -> int:
    from evalframe.golden.create import CreateSession
    from evalframe.golden.load import load_corpus, load_golden

    if args.k < 1:
        raise ConfigError("--k must be at least 1", key="--k", got=str(args.k))
    target = Path(args.path)
    if target.is_file() and target.read_text(encoding="utf-8").strip():
        load_golden(target, "jsonl")  # refuse to append to a file the loader cannot read
    corpus = load_corpus(args.corpus, args.corpus_format)
    session = CreateSession(
        target,
        corpus,
        retriever=args.retriever,
        k=args.k,
        cache_dir=Path(args.cache_dir).expanduser() if args.cache_dir else None,
        stdin=sys.stdin,
        stdout=sys.stdout,
    )
    session.run()
    return EXIT_OK


def _sample(args: argparse.Namespace) -> int:
    from evalframe.core.io import atomic_write_jsonl
    from evalframe.golden.review import mandatory_reviews, read_stage_records, sample_for_review

    out = Path(args.out)
    if out.exists() and not args.force:
        raise ConfigError(
            f"the review file {out} already exists",
            key="--out",
            hint="it may hold verdicts; choose another --out or pass --force to overwrite it",
        )
    if args.fraction <= 0:
        raise ConfigError("--fraction must be above 0", key="--fraction", got=str(args.fraction))
    loaded = _load(args.path, args)
    golden = loaded.golden
    present = {k for q in golden.queries for k in q.metadata}
    if args.strata:
        strata = [s.strip() for s in args.strata.split(",") if s.strip()]
        absent = [s for s in strata if s not in present]
        if absent:
            raise ConfigError(
                f"no query has the stratum field(s) {', '.join(absent)}",
                key="--strata",
                hint=f"fields in this set: {', '.join(sorted(present)) or '(none)'}",
            )
    else:
        strata = [s for s in ("task_type", "difficulty") if s in present]
    oracle = (
        read_stage_records(args.oracle_answers, "oracle answers file")
        if args.oracle_answers
        else None
    )
    adversary = (
        read_stage_records(args.adversary_reports, "adversary reports file")
        if args.adversary_reports
        else None
    )
    always = mandatory_reviews(loaded.records, oracle, adversary)
    records, cells = sample_for_review(
        golden,
        loaded.records,
        fraction=args.fraction,
        seed=args.seed,
        strata=strata,
        locations=loaded.locations,
        always=always,
    )
    atomic_write_jsonl(out, records)
    where = f"across {len(cells)} {'/'.join(strata)} cell(s)" if strata else "(no strata)"
    drawn = sum(n for n, _ in cells.values())
    print(
        f"sampled {len(records)} of {len(golden)} queries ({len(records) / len(golden):.0%}): "
        f"{drawn} drawn {where}, {len(records) - drawn} more for mandatory review -> {out}"
    )
    for cell, (n, size) in cells.items():
        print(f"  {'/'.join(cell) or '(all)'}: {n} of {size}")
    by_reason: dict[str, list[str]] = {}
    for qid, reasons in always.items():
        for reason in reasons:
            by_reason.setdefault(reason, []).append(qid)
    for reason, ids in by_reason.items():
        print(
            f"  always reviewed, {reason}: {len(ids)} ({', '.join(ids[:10])}"
            f"{' …' if len(ids) > 10 else ''})"
        )
    print(
        "fill in verdict (correct | minor_issue | major_issue | wrong) and reviewer, then run "
        f"`evalframe golden review-check {out}`"
    )
    return EXIT_OK


def _review_check(args: argparse.Namespace) -> int:
    from evalframe.golden.review import Ceilings, check_review

    result = check_review(
        args.path,
        Ceilings(
            major_wrong=args.max_major_wrong,
            minor=args.max_minor,
            wrong_easy=args.max_wrong_easy,
        ),
    )
    print(json.dumps(result.to_dict(), indent=2) if args.json else result.render())
    return EXIT_OK if result.passed else EXIT_GATE_FAILED


COMMANDS = {
    "validate": _validate,
    "stats": _stats,
    "diff": _diff,
    "create": _create,
    "sample": _sample,
    "review-check": _review_check,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``evalframe golden`` with ``argv`` (the words after ``golden``)."""
    parser = build_parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:  # --help (0) or a usage error (2, already printed)
        return exc.code if isinstance(exc.code, int) else EXIT_ERROR
    try:
        return COMMANDS[args.command](args)
    except EvalframeError as exc:
        print(exc.render(), file=sys.stderr)
        return EXIT_ERROR
