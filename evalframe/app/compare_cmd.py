"""``evalframe compare``: two runs (or more) side by side, with paired tests, by any
reference a user has for them: a run folder, a baseline's name, an MLflow run id."""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import sys
import tempfile
import textwrap
from collections.abc import Sequence
from pathlib import Path

from evalframe.assess.runfolder import RunFolder
from evalframe.core.argtypes import folder, number, whole
from evalframe.core.errors import ConfigError, DataError, EvalframeError

__all__ = ["RUN_SOURCES_GROUP", "compare_main", "fetch_from_sources"]


#: Entry-point group of functions ``(ref, dest) -> Path | None`` that turn a run
#: reference other than a folder (an MLflow run id) into a folder of run files.
RUN_SOURCES_GROUP = "evalframe.run_sources"


def fetch_from_sources(ref: str, dest: Path) -> Path | None:
    """The run files for ``ref`` from the first run source that knows it, else None."""
    from evalframe.plugin.dists import entry_points

    for ep in sorted(entry_points(RUN_SOURCES_GROUP), key=lambda e: e.name):
        folder = ep.load()(ref, dest / ep.name)
        if folder is not None:
            return Path(folder)
    return None


def _criterion(folder: Path) -> str | None:
    """B's status criterion (``report.criterion`` in its config.yaml): the metric the top
    regressed queries are ranked by, as the run's own report ranks them; None when B's
    folder keeps no readable config (a baseline's, an MLflow run's download)."""
    try:
        report = RunFolder(folder).config().get("report")
    except DataError:
        return None
    value = report.get("criterion") if isinstance(report, dict) else None
    return _canonical(str(value)) if value else None  # `MRR` in the file is RR


def _run_folder(ref: str, root: Path, scratch: Path | None = None) -> Path:
    """A run directory, a baseline by name under ``root``, or a run a source fetches (MLflow)."""
    from evalframe.assess.baseline import _resolve

    try:
        return _resolve(ref, root)
    except ConfigError as exc:
        if scratch is None:
            raise
        folder = fetch_from_sources(ref, scratch / f"ref{len(list(scratch.glob('ref*')))}")
        if folder is None:
            raise ConfigError(
                f"{ref!r} is not a run folder, a baseline in {root}, or a run id any installed "
                "run source knows",
                expected="a folder with summary.json, a baseline name, or an MLflow run id "
                "(runs:/ID or the 32-hex id; the store is $MLFLOW_TRACKING_URI or ./mlflow.db)",
                hint=(f"{exc.hint}; " if exc.hint else "")
                + "an MLflow run id, or its first characters as `evalframe runs` shows them, "
                "needs the evalframe-mlflow plugin and the store the run was logged to",
            ) from None
        return folder


def _gates_note(a: str, b: str, folder: Path, baselines: Path, width: int = 100) -> str | None:
    """What B's gates were checked against, when B's run had a baseline of its own.

    ``compare`` runs no gate: a B.O.B user who reads it as ``bob eval compare
    --baseline`` saw "within noise" everywhere while B's regression gates, run
    against A, fail. Said with the command that runs them against A."""
    summary_file = folder / RunFolder.SUMMARY
    try:
        summary = json.loads(summary_file.read_text(encoding="utf-8"))
        gates = json.loads((folder / RunFolder.GATES).read_text(encoding="utf-8"))["gates"]
    except (OSError, ValueError, KeyError, TypeError):
        return None  # an MLflow run's or an older folder: nothing to say
    baseline = summary.get("baseline") if isinstance(summary, dict) else None
    if not isinstance(baseline, dict) or not gates:
        return None
    names = ", ".join(str(g.get("name")) for g in gates if isinstance(g, dict))
    if not (Path(a).is_dir() or (baselines / a).is_dir()):
        a = "A"  # an MLflow run id: rescore's baseline= takes a folder or a baseline name
    said = textwrap.fill(
        f"Gates: compare runs none; it asks whether a change is more than noise. b's run "
        f"checked its gates ({names}) with its own baseline, {baseline.get('name')}, not "
        f"with a. To check them against a (exit 1 when a required gate fails):",
        width=width,
    )
    return f"{said}\n  evalframe rescore {shlex.quote(b)} baseline={shlex.quote(a)} --out DIR"


def _canonical(name: str) -> str:
    """``--metrics`` NAME as the runs key it (``MRR`` is ``RR``); as given when it reads
    as no metric (the comparison says so itself)."""
    from evalframe.metrics import parse_metric

    try:
        return str(parse_metric(name))
    except EvalframeError:
        return name


def compare_main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="evalframe compare",
        description="Paired comparison of two runs (run directories, baseline names, or "
        "MLflow run ids with the evalframe-mlflow plugin): "
        "means, delta, bootstrap CI, t-test, randomization test, effect size, win/tie/loss, "
        "per-slice deltas and the queries that moved most. A is the reference.",
    )
    parser.add_argument(
        "a", help="the reference: a run directory, a baseline name or an MLflow run id"
    )
    parser.add_argument(
        "b", nargs="+", help="the candidate(s); with more than one, a table of each against A"
    )
    parser.add_argument(
        "--metrics",
        nargs="*",
        help="canonical metric names (default: the runs' headline metrics, see --all)",
    )
    parser.add_argument(
        "--all",
        action="store_true",
        help="every metric both runs computed, not just the headline set (the correction then "
        "covers them all)",
    )
    parser.add_argument(
        "--wide", action="store_true", help="lay tables out in full instead of fitting 100 columns"
    )
    parser.add_argument(
        "--correction",
        choices=("holm", "bh"),
        default="holm",
        help="how p-values are adjusted across every metric and slice tested: Holm "
        "(family-wise error) or Benjamini-Hochberg (false discovery rate); default holm",
    )
    parser.add_argument(
        "--alpha",
        type=number(0, 1, above=True, below=True),
        default=0.05,
        help="the level a verdict (improved, regressed) needs; default 0.05",
    )
    parser.add_argument(
        "--seed",
        type=whole(0),
        default=0,
        help="seed of the bootstrap and randomization resamples (same seed, same numbers)",
    )
    parser.add_argument(
        "--allow-mismatch",
        action="store_true",
        help="compare even if the golden sets or metric policies differ",
    )
    parser.add_argument(
        "--baselines",
        type=Path,
        default=Path("baselines"),
        help="where baseline names are looked up",
    )
    parser.add_argument("--out", type=folder, help="write comparison.json and comparison.md here")
    # options may come between the positionals (A --out DIR B)
    args = parser.parse_intermixed_args(list(argv))
    from evalframe.app.outfolder import refuse_a_run_folder

    # a run's comparison.json is its comparison with its baseline: the page and the API
    # read it as such (report.page.stored_baseline)
    refuse_a_run_folder(
        args.out,
        writes="comparison.json",
        why="replace that run's own comparison with its baseline, and its page would show "
        "this one as that",
        suggest="comparison",
    )

    from evalframe.assess.compare import (
        check_comparable,
        compare_many,
        compare_runs,
        headline_of,
        load_run_data,
        one_sided,
    )
    from evalframe.assess.compare_text import render_comparison, render_table
    from evalframe.core.io import atomic_write, atomic_write_json

    scratch = Path(tempfile.mkdtemp(prefix="evalframe-compare-"))
    try:
        a = load_run_data(_run_folder(args.a, args.baselines, scratch), name=args.a)
        others = [
            load_run_data(_run_folder(ref, args.baselines, scratch), name=ref) for ref in args.b
        ]
        # B's status criterion, read while a downloaded run's files are still here
        lead = _criterion(others[0].path) if others else None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for other in others:
        check_comparable(a, other, allow_mismatch=args.allow_mismatch)
        if other.path.resolve() == a.path.resolve():  # a typo of the second name, mostly
            same = a.name if a.name == other.name else f"{a.name} and {other.name}"
            print(
                f"warning: {same} name one run folder ({a.path}): it is compared with itself, "
                "so every delta below is 0 by construction",
                file=sys.stderr,
            )
    metrics = args.metrics or (None if args.all else headline_of(a, others))
    # what would have been compared but cannot be: by default the runs' headline metrics
    # (a one-sided AP beside a headline of R@5 and RR was "not compared" to no purpose)
    headlines = {m for run in (a, *others) for m in run.headline}
    asked = {_canonical(m) for m in args.metrics or ()}
    for name, alone in one_sided([a, *others]).items():
        if args.metrics:  # what was named: the others were never to be compared
            alone = [m for m in alone if m in asked]
        elif metrics is not None:
            alone = [m for m in alone if m in headlines]
        if not alone:
            continue
        said = f"only {name} computed" if not others[1:] else f"{name} computed, not every run"
        print(
            f"note: not compared: {', '.join(alone)}, which {said} "
            f"(`evalframe rescore RUN 'metrics.measures=[...]'` adds a metric to a run)",
            file=sys.stderr,
        )
    from evalframe.core.console import color_for, fit_width

    width, color = fit_width(args.wide), color_for()
    if len(others) > 1:
        table = compare_many(
            a,
            others,
            metrics=metrics,
            correction=args.correction,
            alpha=args.alpha,
            seed=args.seed,
        )
        print(render_table(table, width=width, color=color))
        if args.out:
            atomic_write_json(args.out / "comparison.json", table)
            atomic_write(args.out / "comparison.md", render_table(table, markdown=True) + "\n")
            print(f"\nSaved comparison to: {args.out}")
        return 0
    comparison = compare_runs(
        a,
        others[0],
        metrics=metrics,
        correction=args.correction,
        alpha=args.alpha,
        seed=args.seed,
        lead=lead,
    )
    print(render_comparison(comparison, width=width, color=color))
    note = _gates_note(args.a, args.b[0], others[0].path, args.baselines, width or 100)
    if note:
        print(f"\n{note}")
    if args.out:
        atomic_write_json(args.out / "comparison.json", comparison.as_dict())
        atomic_write(
            args.out / "comparison.md", render_comparison(comparison, markdown=True) + "\n"
        )
        print(f"\nSaved comparison to: {args.out}")
    return 0
