"""``evalframe golden create``, ``sample`` and ``review-check``: where people author and review."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from evalframe.app.golden_cli.common import add_format, count, emit, fraction, load, share
from evalframe.core.argtypes import whole
from evalframe.core.errors import EXIT_GATE_FAILED, EXIT_OK, ConfigError, DataError

__all__ = ["add_parsers", "create", "review_check", "sample"]


def add_parsers(sub: Any) -> None:
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
    c.add_argument("--k", type=whole(1), default=5, help="passages shown per question (default 5)")
    c.add_argument("--retriever", default="bm25", help="retriever plugin (default: bm25)")
    c.add_argument(
        "--cache-dir",
        help="index cache (default: $EVALFRAME_CACHE_DIR or ~/.cache/evalframe)",
    )

    c.set_defaults(run=create)

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
    add_format(sa)
    sa.add_argument("--out", required=True, help="review file to write (JSONL)")
    sa.add_argument(
        "--fraction",
        type=share,
        default=0.15,
        help="share of the set to draw, above 0 and at most 1 (default 0.15, KnowCode §8)",
    )
    sa.add_argument("--seed", type=whole(0), default=0, help="random seed (default 0)")
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

    sa.set_defaults(run=sample)

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
        type=fraction,
        default=0.05,
        metavar="RATE",
        help="major_issue + wrong must stay below this rate (default 0.05; Phase 2: 0.03)",
    )
    r.add_argument(
        "--max-minor",
        type=fraction,
        default=0.15,
        metavar="RATE",
        help="minor_issue must stay below this rate (default 0.15)",
    )
    r.add_argument(
        "--max-wrong-easy",
        type=count,
        default=0,
        metavar="N",
        help="wrong verdicts allowed on easy queries (default 0)",
    )
    r.add_argument("--json", action="store_true", help="print JSON")
    r.set_defaults(run=review_check)


def create(args: argparse.Namespace) -> int:
    from evalframe.core.io import default_cache_dir
    from evalframe.core.store import cache_folder
    from evalframe.golden.create import CreateSession
    from evalframe.golden.load import load_corpus, load_golden

    if args.k < 1:
        raise ConfigError("--k must be at least 1", key="--k", got=str(args.k))
    target = Path(args.path)
    # checked before the first question is typed: found when it is saved, its answers are lost
    blocked = _file_in_the_way(target.parent)
    if blocked is not None:
        raise ConfigError(
            f"cannot write {target}: {blocked} is a file, not a folder",
            expected="a JSONL file in a folder",
            hint="give a path whose folders are folders (a missing folder is created), or "
            "move the file away",
        )
    if target.is_file() and target.read_text(encoding="utf-8").strip():
        load_golden(target, "jsonl")  # refuse to append to a file the loader cannot read
    _writable(target, None)  # a read-only folder: found before the first question too
    cache_dir = Path(args.cache_dir).expanduser() if args.cache_dir else default_cache_dir()
    try:  # the index is built at the first question: a cache that cannot be made, now
        cache_folder(cache_dir)
    except DataError as exc:
        exc.hint = (
            "give --cache-dir a folder you can write (a missing one is created)"
            if args.cache_dir
            else "point EVALFRAME_CACHE_DIR at a folder you can write, or give --cache-dir"
        )
        raise
    corpus = load_corpus(args.corpus, args.corpus_format)
    session = CreateSession(
        target,
        corpus,
        retriever=args.retriever,
        k=args.k,
        cache_dir=cache_dir,
        stdin=sys.stdin,
        stdout=sys.stdout,
    )
    session.run()
    return EXIT_OK


def sample(args: argparse.Namespace) -> int:
    from evalframe.core.io import atomic_write_jsonl
    from evalframe.golden.review import mandatory_reviews, read_stage_records, sample_for_review

    out = Path(args.out)
    _check_out(out, args)
    _writable(out, "--out")
    if out.exists() and not args.force:
        raise ConfigError(
            f"the review file {out} already exists",
            key="--out",
            hint="it may hold verdicts; choose another --out or pass --force to overwrite it",
        )
    loaded = load(args.path, args)
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


def _writable(target: Path, key: str | None) -> None:
    """A file can be written beside ``target``, or a ConfigError on ``key`` now (not
    after the questions are answered, or the sample drawn)."""
    from evalframe.core.io import UnwritableTargetError, check_writable

    try:
        check_writable(target)
    except UnwritableTargetError as exc:
        raise ConfigError(
            f"cannot write {target}: {exc.strerror}",
            key=key,
            expected="a file in a folder you can write to",
            hint="give a path in a folder you can write to (a missing folder is created)",
        ) from None


def _file_in_the_way(folder: Path) -> Path | None:
    """The nearest existing part of ``folder`` when it is not a folder (a file where a
    folder must be), else None (a missing folder is created when the file is written)."""
    found = next((p for p in (folder, *folder.parents) if p.exists()), None)
    return found if found is not None and not found.is_dir() else None


def _check_out(out: Path, args: argparse.Namespace) -> None:
    """``sample --out``: a file apart from every input, checked before anything is read.

    Why: the review file written over the golden set replaces it, and written
    into a folder of per-domain ``*.jsonl`` files it becomes one more domain
    (every record of it a duplicate), so the set no longer loads.
    """
    from evalframe.app.outfolder import refuse_a_folder

    refuse_a_folder(
        out, expected="the path of a file to write the review records to", name="review.jsonl"
    )
    inputs = [
        (args.path, "the golden set"),
        (args.queries, "the --queries file"),
        (args.oracle_answers, "the --oracle-answers file"),
        (args.adversary_reports, "the --adversary-reports file"),
    ]
    where = out.resolve()
    for given, what in inputs:
        if given is None or not Path(given).exists():
            continue  # a missing input is reported by its reader
        source = Path(given).resolve()
        if where == source:
            said = f"is {what} it reads: the review file would replace it"
        elif what == "the golden set" and source.is_dir() and where.is_relative_to(source):
            said = (
                f"is inside {given}, the golden-set folder it reads, whose files load as the "
                "set: the review file would become part of it"
            )
        else:
            continue
        base = Path(given) if Path(given).name not in ("", "..") else source  # "." or ".."
        beside = base.parent / f"{source.stem}_review.jsonl"
        raise ConfigError(
            f"{out} {said}",
            key="--out",
            expected="a file apart from the command's inputs",
            hint=f"write the review file elsewhere, e.g. --out {beside}",
        )


def review_check(args: argparse.Namespace) -> int:
    from evalframe.golden.review import Ceilings, check_review

    result = check_review(
        args.path,
        Ceilings(
            major_wrong=args.max_major_wrong,
            minor=args.max_minor,
            wrong_easy=args.max_wrong_easy,
        ),
    )
    emit(args, result.to_dict, result.render)
    return EXIT_OK if result.passed else EXIT_GATE_FAILED
