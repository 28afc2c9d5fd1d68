"""Writing the pages: ``report.html`` and ``summary.md`` of a run, the page of
several runs or of a sweep, and :class:`RunPage`, the reporter that writes a
run's page when the run ends.

Every file goes through :class:`~evalframe.assess.runfolder.RunFolder` (or the
atomic writes it uses), so a page is never half-written.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalframe.assess.runfolder import RunFolder, SweepFolder
from evalframe.core.errors import ConfigError, EvalframeError
from evalframe.core.io import atomic_write
from evalframe.core.messages import warn
from evalframe.core.progress import step
from evalframe.core.secrets import redact_text, redact_traceback
from evalframe.core.types import Corpus
from evalframe.report import plotcache
from evalframe.report.drift import baseline_records
from evalframe.report.markdown import render_summary_md
from evalframe.report.model import BaselineView, DocTexts, RunView, stored_corpus_texts
from evalframe.report.multipage import (
    MultiRun,
    labels_for,
    multi_csv,
    multi_markdown,
    render_multi_page,
)
from evalframe.report.querytable import too_much_text
from evalframe.report.runpage import render_run_page
from evalframe.report.sweep import shared_labels

if TYPE_CHECKING:
    from evalframe.pipeline.run import PipelineResult

__all__ = [
    "RunPage",
    "baseline_view",
    "multi_run",
    "shown_path",
    "stored_baseline",
    "sweep_run",
    "write_multi_report",
    "write_run_report",
    "write_sweep_report",
]


def shown_path(path: Path) -> str:
    """A path as a person would type it here: relative to the working folder when inside it."""
    try:
        return (
            os.path.relpath(path) if Path(path).resolve().is_relative_to(Path.cwd()) else str(path)
        )
    except ValueError:  # another drive on Windows
        return str(path)


def _manifest(path: Path) -> dict[str, Any] | None:
    return RunFolder(path).corpus_manifest() if RunFolder.is_run(path) else None


def stored_baseline(view: RunView) -> BaselineView | None:
    """The baseline a run was compared with when it ran (its ``comparison.json``), with
    the baseline's per-query records when its folder is still there."""
    if view.comparison is None or "metrics" not in view.comparison:
        return None
    stated = view.summary.get("baseline") or {}
    path = Path(str(stated.get("path") or ""))
    name = str(stated.get("name") or view.comparison.get("a", "baseline"))
    found = bool(stated.get("path")) and (RunFolder.is_run(path) or path.is_file())
    return BaselineView(
        name=name,
        path=path,
        records=baseline_records(path) if found else [],
        manifest=_manifest(path) if found else None,
        comparison=view.comparison,
    )


def baseline_view(view: RunView, ref: str, root: Path) -> BaselineView:
    """Compare the run with ``ref`` (a run or baseline folder, a baseline name under
    ``root``, or B.O.B's results file) as the run itself would have: the same
    settings (``compare:`` and ``stats:`` of the run's config), the same function."""
    from evalframe.assess.baseline import load_baseline
    from evalframe.assess.compare import check_comparable, compare_runs

    loaded = load_baseline(ref, root)
    assert loaded.data is not None  # load_baseline always reads the data
    this = RunFolder(view.path).data("this run")
    base = loaded.data.renamed(f"baseline {loaded.name}")
    compare_cfg = view.config.get("compare") or {}
    stats = view.config.get("stats") or {}
    if loaded.format == "evalframe":
        check_comparable(base, this, allow_mismatch=bool(compare_cfg.get("allow_mismatch")))
    comparison = compare_runs(
        base,
        this,
        correction=str(compare_cfg.get("correction", "holm")),
        alpha=float(compare_cfg.get("alpha", 0.05)),
        seed=int(stats.get("seed", 0)),
        resamples=max(int(stats.get("bootstrap", 1000)), 200),
        lead=view.rule.criterion,
    )
    return BaselineView(
        name=loaded.name,
        path=loaded.path,
        records=baseline_records(loaded.path),
        manifest=_manifest(loaded.path),
        comparison=comparison.as_dict(),
    )


def _cache_dir(view: RunView) -> Path | None:
    """The cache folder the run was made with (``output.cache_dir``), if it still exists:
    a page of an old run does not make a folder its run's cache has long left."""
    output = view.config.get("output")
    where = output.get("cache_dir") if isinstance(output, dict) else None
    if not isinstance(where, str) or not where.strip():
        return None
    path = Path(where).expanduser()
    try:  # another user's (/root/.cache/evalframe): the page is drawn without its plot cache
        usable = path.is_dir() and os.access(path, os.W_OK | os.X_OK)
    except OSError:
        return None
    return path if usable else None


def _multi_cache_dir(multi: MultiRun) -> Path | None:
    """Where a page of several runs keeps its plots: the first run's cache folder (a
    sweep's jobs share one), when it still exists."""
    return _cache_dir(multi.views[0]) if multi.views else None


def write_run_report(
    run_dir: Path,
    *,
    baseline: BaselineView | None = None,
    corpus: Corpus | None = None,
    out: Path | None = None,
    view: RunView | None = None,
    cache_dir: Path | None = None,
) -> dict[str, Path]:
    """Write ``report.html`` and ``summary.md`` for the run in ``run_dir`` (into ``out``
    when given); without ``baseline``, the one the run was compared with, if any.
    ``view`` is the run folder already read (``evalframe report`` reads it first).
    ``cache_dir`` keeps the plots (:func:`plotcache.kept_in`); by default the run's own
    cache folder, when it still exists."""
    with step("writing the run page (report.html)"):  # 2-4 s at 5k-10k queries
        view = view or RunView.load(run_dir)
        if baseline is None:
            baseline = stored_baseline(view)
        folder = RunFolder(out or run_dir)
        # the documents the corpus holds, known without their texts (the corpus in
        # memory, deferred, or the run's manifest)
        present = corpus.ids() if corpus is not None else (view.manifest or {}).get("documents")
        texts = (
            DocTexts(left_out=True)
            if present and too_much_text(view, present)
            else stored_corpus_texts(view, corpus)
        )
        # the plots are kept in the run's cache folder: a page whose numbers did not
        # change (a warm run, a rescore, this command again) is not drawn again
        with plotcache.kept_in(cache_dir or _cache_dir(view)):
            html = render_run_page(view, baseline, texts)
        page = folder.write_text(folder.REPORT_HTML, html)
        markdown = render_summary_md(view, baseline, shown_path(page))
        return {"report_html": page, "summary_md": folder.write_text(folder.SUMMARY_MD, markdown)}


def multi_run(paths: Sequence[Path], *, title: str | None = None, stable: bool = False) -> MultiRun:
    views = [RunView.load(p) for p in paths]
    experiments = sorted({v.experiment for v in views})
    return MultiRun(
        views=views,
        labels=labels_for(views),
        title=title or f"{len(views)} runs of {', '.join(experiments)}",
        stable=stable,
    )


def sweep_run(sweep_dir: Path) -> MultiRun:
    """A sweep's jobs as one :class:`MultiRun`; jobs without results are listed apart.

    Its metrics are named as the sweep's terminal table names them: by the labels
    (``metrics.labels``) every job gives alike, a metric the jobs label differently
    by its canonical name (:func:`~evalframe.report.sweep.shared_labels`)."""
    jobs = SweepFolder(sweep_dir).jobs()
    done = [j for j in jobs if RunFolder.is_run(j.output_dir)]
    if not done:
        raise ConfigError(
            f"the sweep in {sweep_dir} has no finished job to report",
            hint="each job's folder needs its summary.json; see the jobs' errors in job.json",
        )
    views = [RunView.load(j.output_dir, name=str(j.num)) for j in done]
    for view, job in zip(views, done, strict=True):
        view.overrides = job.overrides
    shared = set.intersection(*(set(j.overrides) for j in jobs)) if len(jobs) > 1 else set()
    # told apart by what differs among all the jobs, the failed ones too
    labels = labels_for(views, shared if len(jobs) > 1 else None)
    failed = [
        (
            " ".join(o for o in j.overrides if o not in shared) or f"job {j.num}",
            f"job {j.num}: exit {j.exit_code}"
            + (f" ({j.error.splitlines()[0]})" if j.error else ""),
        )
        for j in jobs
        if j not in done
    ]
    experiment = views[0].experiment
    return MultiRun(
        views=views,
        labels=labels,
        title=f"sweep of {experiment} ({len(jobs)} jobs, {Path(sweep_dir).name})",
        failed=failed,
        metric_labels=shared_labels(j.summary for j in jobs),
    )


def write_multi_report(multi: MultiRun, out: Path, *, plot_data: bool = True) -> dict[str, Path]:
    """``report.html`` and ``report.md`` of several runs in ``out``, and with
    ``plot_data`` the CSV files ``dvc plots`` draws."""
    with plotcache.kept_in(_multi_cache_dir(multi)):
        html = render_multi_page(multi, out)
    files = {
        "html": atomic_write(out / "report.html", html),
        "markdown": atomic_write(out / "report.md", multi_markdown(multi)),
    }
    if plot_data:
        for name, text in multi_csv(multi).items():
            files[name] = atomic_write(out / name, text)
    return files


def write_sweep_report(sweep_dir: Path) -> Path:
    """The sweep's page, ``report.html`` in its folder."""
    multi = sweep_run(sweep_dir)
    with plotcache.kept_in(_multi_cache_dir(multi)):
        html = render_multi_page(multi, Path(sweep_dir))
    return atomic_write(Path(sweep_dir) / SweepFolder.REPORT_HTML, html)


class RunPage:
    """The reporter that writes ``report.html`` and ``summary.md`` into the run folder
    and lists them with the outputs, so trackers upload them.

    ``report.html: false`` in the config turns it off. A page that cannot be
    drawn is a warning, never a lost run: the results are already written.
    """

    def __call__(self, result: PipelineResult) -> None:
        exp = result.experiment
        if exp is None or not exp.report.html:
            return
        try:
            baseline = None
            stored = result.evaluation.baseline
            if result.comparison is not None and stored is not None:
                path = Path(stored.path)
                baseline = BaselineView(
                    name=str(stored.name),
                    path=path,
                    records=baseline_records(path),
                    manifest=_manifest(path),
                    comparison=result.comparison.as_dict(),
                )
            result.outputs.update(
                write_run_report(
                    exp.output_dir,
                    baseline=baseline,
                    corpus=result.corpus,
                    cache_dir=exp.cache_dir,
                )
            )
        except EvalframeError as exc:  # the data, not the report: said without a traceback
            # a corpus edited since the run (its manifest's hashes): the page can wait
            changed = "the corpus was read with" in exc.message or "this run started from" in (
                exc.message
            )
            if changed:  # its hint (a writer at work) is a run's; here the files changed
                exc.hint = None
            said = exc.render().removeprefix("error: ").replace("\n  hint: ", "; ")
            warn(
                f"report.html was not written: {said}. The run's other files are complete"
                + (
                    f"; `evalframe report {exp.output_dir}` draws the page once the corpus is "
                    "the one the run read"
                    if changed
                    else ""
                )
            )
        except Exception as exc:  # noqa: BLE001  # the run's results stand without their page
            # credentials a plugin's text may carry are redacted (core.secrets)
            print(redact_traceback(exc), end="", file=sys.stderr)
            detail = redact_text("".join(traceback.format_exception_only(type(exc), exc)).strip())
            warn(
                f"report.html was not written ({detail}): a bug in evalframe's report, please "
                "report it; the run's other files are complete"
            )
