"""``evalframe report``: the page (and the Markdown summary) of a run, a sweep or several runs.

- ``evalframe report RUN [--baseline B]`` writes ``report.html`` and ``summary.md``
  into the run folder (or ``--out``): the same page a run writes when it ends,
  with the drift view against ``B`` (a run or baseline folder, a baseline name,
  or B.O.B's results file) or else against the baseline the run was compared with.
- ``evalframe report RUN --format md`` prints ``summary.md`` instead, writing
  nothing, for a CI job to post on a pull request.
- ``evalframe report SWEEP_DIR`` writes the page comparing a sweep's jobs into
  the sweep folder (a sweep writes it itself when it ends).
- ``evalframe report RUN_A RUN_B ... --out DIR`` writes the page comparing the
  runs (``report.html``, ``report.md``) and the CSV files ``dvc plots`` draws
  (``recall_at_k.csv``, ``ndcg_at_k.csv``, ``slices.csv``); ``--baseline B``
  puts ``B`` first, as the reference of the significance marks.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from evalframe.assess.runfolder import RunFolder, SweepFolder
from evalframe.core.argtypes import folder
from evalframe.core.errors import EXIT_OK, ConfigError, EvalframeError
from evalframe.core.gcpause import long_lived

__all__ = ["main"]


def _is_sweep(path: Path) -> bool:
    if RunFolder.is_run(path) or not path.is_dir():
        return False
    if (path / SweepFolder.MARKER).is_file():
        return True
    return any(c.is_dir() and c.name.isdigit() and RunFolder.is_run(c) for c in path.iterdir())


# the command's scope (core.gcpause): the run folders it reads stay off the collector's passes
@long_lived()
def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="evalframe report",
        description="The self-contained HTML page and Markdown summary of a run (plots, "
        "per-query drill-down, drift against a baseline), of a sweep, or of several runs "
        "side by side.",
    )
    parser.add_argument(
        "runs", nargs="+", type=Path, help="a run folder, a sweep folder, or several run folders"
    )
    parser.add_argument(
        "--baseline",
        help="compare with this run or baseline folder, baseline name or B.O.B results file "
        "(the drift view; with several runs, the reference of the significance marks)",
    )
    parser.add_argument(
        "--baselines",
        type=Path,
        default=Path("baselines"),
        help="where baseline names are looked up (default: baselines)",
    )
    parser.add_argument(
        "--format",
        choices=("html", "md"),
        default="html",
        help="html (default): write the page and summary; md: print the Markdown summary only",
    )
    parser.add_argument(
        "--out",
        type=folder,
        help="folder for the files (default: the run or sweep folder; required for several runs)",
    )
    parser.add_argument(
        "--stable",
        action="store_true",
        help="several runs: only what their tracked files hold, no latency (timings.json) "
        "and no links to run pages, so the page is the same bytes on every machine (a DVC "
        "stage's output)",
    )
    # options may come between the positionals (... --out DIR ...)
    args = parser.parse_intermixed_args(list(argv))
    try:
        return _report(args)
    except EvalframeError as exc:
        if exc.key in ("baseline", "baselines"):  # here they are options, not config keys
            exc.key = f"--{exc.key}"
        raise


def _not_another_run(out: Path, runs: Sequence[Path]) -> None:
    """Refuse an ``--out`` that is the folder of a run other than the one drawn.

    A page written there would replace that run's own ``report.html`` (and
    ``summary.md``, or add ``report.md`` and plot CSVs), which every reader of
    the folder then takes as that run's. A single run's own folder is where its
    page belongs, so ``report RUN --out RUN`` is no mistake.
    """
    if len(runs) == 1 and out.resolve() == runs[0].resolve():
        return
    if RunFolder.holds_run(out):
        drawn = f"the page of {runs[0]}" if len(runs) == 1 else f"the page of {len(runs)} runs"
        raise ConfigError(
            f"{out} is the folder of a run: {drawn} would be taken for that run's own",
            key="--out",
            expected="a folder that holds no run (new, or one for reports)",
            hint=f"give --out a folder of its own, e.g. {out.parent / 'report'}",
        )


def _report(args: argparse.Namespace) -> int:

    from evalframe.report.page import (
        baseline_view,
        multi_run,
        shown_path,
        stored_baseline,
        sweep_run,
        write_multi_report,
        write_run_report,
    )

    runs: list[Path] = args.runs
    if args.out is not None:
        _not_another_run(args.out, runs)
    if len(runs) == 1 and _is_sweep(runs[0]):
        multi = sweep_run(runs[0])
        if args.format == "md":
            from evalframe.report.multipage import multi_markdown

            print(multi_markdown(multi), end="")
            return EXIT_OK
        out = args.out or runs[0]
        files = write_multi_report(multi, out, plot_data=False)
        print(f"report of the sweep's {len(multi.views)} job(s): {shown_path(files['html'])}")
        return EXIT_OK
    if len(runs) == 1:
        from evalframe.report.markdown import render_summary_md
        from evalframe.report.model import RunView

        view = RunView.load(runs[0])
        baseline = (
            baseline_view(view, args.baseline, args.baselines)
            if args.baseline
            else stored_baseline(view)
        )
        if args.format == "md":
            page = (args.out or runs[0]) / RunFolder.REPORT_HTML
            print(render_summary_md(view, baseline, shown_path(page)), end="")
            return EXIT_OK
        files = write_run_report(runs[0], baseline=baseline, out=args.out, view=view)
        print(
            f"report: {shown_path(files['report_html'])} "
            f"(and {RunFolder.SUMMARY_MD}; --format md prints it)"
        )
        return EXIT_OK
    if args.baseline:
        from evalframe.assess.baseline import _resolve

        runs = [_resolve(args.baseline, args.baselines), *runs]
    multi = multi_run(runs, stable=args.stable)
    if args.format == "md":
        from evalframe.report.multipage import multi_markdown

        print(multi_markdown(multi), end="")
        return EXIT_OK
    if args.out is None:
        raise ConfigError(
            f"{len(runs)} runs make one page, and it needs a folder",
            expected="--out DIR",
            hint="e.g. evalframe report results/a results/b --out results/report",
        )
    files = write_multi_report(multi, args.out)
    print(
        f"report of {len(runs)} runs: {shown_path(files['html'])} "
        "(also report.md and the plot CSVs)"
    )
    return EXIT_OK
