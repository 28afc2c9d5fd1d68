"""``evalframe benefit A B``: the A/B benefit table of two arms' attempts (docs/analyses.md)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from evalframe.core.argtypes import folder, number, whole
from evalframe.core.errors import ConfigError

__all__ = ["main"]

DESCRIPTION = """\
The benefit of arm A (the treatment: an agent with the tool) over arm B (the control:
the same agent without it), per (task_type, difficulty) stratum and overall, paired by
task and seed, net of every token either arm spent. Each arm is a JSONL file of attempts,
or a folder of them (docs/analyses.md, "The attempts format"). Writes benefit.json to --out
and prints the table. Positive values favour A: success lift = A - B, every 'saved' = B - A."""


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="evalframe benefit", description=DESCRIPTION)
    parser.add_argument("a", help="arm A's attempts: a JSONL file or a folder of *.jsonl")
    parser.add_argument("b", help="arm B's attempts, in the same format")
    parser.add_argument(
        "--golden", help="golden set of the tasks: strata from it, and facts for --score answers"
    )
    parser.add_argument("--format", help="its format (default: from the name; see golden --help)")
    parser.add_argument(
        "--score",
        choices=("records", "answers"),
        default="records",
        help="records: each attempt's own success; answers: judge each answer against the "
        "golden set's facts, blind to the arm (needs --golden)",
    )
    parser.add_argument("--judge", default="facts", help="validator that judges an answer")
    parser.add_argument(
        "--judge-param", action="append", metavar="KEY=VALUE", help="a judge setting (repeat)"
    )
    parser.add_argument("--label-a", help="name of arm A (default: its records' 'arm')")
    parser.add_argument("--label-b", help="name of arm B")
    parser.add_argument("--min-seeds", type=whole(1), default=3, help="seeds per task and arm (3)")
    parser.add_argument(
        "--strata", default="task_type,difficulty", help="fields of a stratum, comma-separated"
    )
    parser.add_argument(
        "--split", default="baseline_answerable", help="a field shown as its own split ('' none)"
    )
    parser.add_argument(
        "--bootstrap", type=whole(0), default=1000, help="bootstrap resamples (1000)"
    )
    parser.add_argument(
        "--confidence",
        type=number(0, 1, above=True, below=True),
        default=0.95,
        help="CI level (0.95)",
    )
    parser.add_argument("--seed", type=whole(0), default=0, help="random seed (0)")
    parser.add_argument("--out", type=folder, default="benefit", help="folder for benefit.json")
    args = parser.parse_args(list(argv))
    from evalframe.app.outfolder import refuse_a_run_folder

    # a run made with analysis.benefit keeps its own benefit.json, which its page shows
    refuse_a_run_folder(
        args.out,
        writes="benefit.json",
        why="be taken for that run's own benefit analysis (its page and summary show it)",
        suggest="benefit",
    )

    from pydantic import ValidationError

    from evalframe.analysis.benefit import compute_benefit
    from evalframe.analysis.calibration import BootstrapSettings
    from evalframe.analysis.run import clean_json
    from evalframe.analysis.settings import BenefitSettings, validate_analysis
    from evalframe.assess.runfolder import RunFolder
    from evalframe.golden.load import load_golden, parse_params
    from evalframe.plugin.registry import validation_problems
    from evalframe.report.analyses import render_benefit

    if args.score == "records" and (args.judge != "facts" or args.judge_param):
        # unused with records, a typo in the judge's name went unseen until --score answers
        raise ConfigError(
            "--judge and --judge-param choose how an answer is judged, which only --score "
            "answers does; --score records takes each attempt's own success",
            key="--judge",
            got=" ".join(
                [f"--judge {args.judge}", *(f"--judge-param {p}" for p in args.judge_param or [])]
            ),
            hint="add --score answers (with --golden PATH), or leave --judge out",
        )
    if args.score == "answers" and not args.golden:
        raise ConfigError(
            "--score answers judges each answer against its task's facts, which live in the "
            "golden set",
            key="--golden",
            hint="give --golden PATH (a KnowCode golden_v1.0.json, or any format with "
            "must_mention_facts)",
        )
    raw = {
        "a": args.a,
        "b": args.b,
        "label_a": args.label_a,
        "label_b": args.label_b,
        "min_seeds": args.min_seeds,
        "score": args.score,
        "judge": {"name": args.judge, **parse_params(args.judge_param, "--judge-param")},
        "strata": [s.strip() for s in args.strata.split(",") if s.strip()],
        "split": args.split or None,
    }
    try:
        BenefitSettings.model_validate(raw)
    except ValidationError as exc:
        where, what = validation_problems(exc, "benefit")[0]
        raise ConfigError(what, key=where) from None
    analyses = validate_analysis({"failures": {"enabled": False}, "benefit": raw}, depth=1)
    settings = analyses.settings.benefit
    assert settings is not None
    golden = load_golden(args.golden, args.format).golden if args.golden else None
    boot = BootstrapSettings(resamples=args.bootstrap, seed=args.seed, confidence=args.confidence)
    result = compute_benefit(
        settings, golden=golden, judge=analyses.benefit_judge, boot=boot, key="benefit"
    )
    payload = clean_json(result.as_dict())
    args.out.mkdir(parents=True, exist_ok=True)
    path = RunFolder(args.out).write_json(RunFolder.BENEFIT, payload)
    print("\n".join(render_benefit(payload)))
    print(f"\nSaved to: {path}")
    return 0
