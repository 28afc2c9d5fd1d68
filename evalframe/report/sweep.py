"""The table printed when a ``-m`` sweep ends: one row per job, the best job per metric marked.

Each row: the job's number, the overrides that tell it from the other jobs
(those every job shares are left out), its headline metrics and its gate
verdict. For each metric the highest mean is marked ``*`` (every metric of
the default headline set is better when higher; ties are all marked). It is
read from the jobs' folders, like the trackers' sweep record, so it is the
same whatever launcher ran the jobs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from evalframe.core.console import WIDTH, Col, render, split_columns, table
from evalframe.plugin.hooks import SweepJob

__all__ = ["BEST", "render_sweep", "shared_labels"]

#: The mark beside the best value of a metric.
BEST = "*"


def _verdict(job: SweepJob) -> str:
    if job.exit_code is None:
        return "no result"
    if job.exit_code >= 2:
        return f"error (exit {job.exit_code})"
    if job.summary.get("verdict") == "unchecked":  # no required gate: nothing could fail it
        return "none required"
    passed = job.summary.get("gates_passed")
    if isinstance(passed, bool):
        return "passed" if passed else "FAILED"
    return "—"


def _headline(jobs: list[SweepJob]) -> list[str]:
    names: list[str] = []
    for job in jobs:
        listed = job.summary.get("headline") or (job.summary.get("metrics") or [])[:3]
        names.extend(str(n) for n in listed if n not in names)
    return names


def shared_labels(summaries: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """The display names (``metrics.labels``) that every job that ran gives a metric alike,
    by canonical name: the sweep's columns are headed as each job's own report names them
    (ADK's Recall@1 for Hit@1), here and on the sweep's page (``report.page.sweep_run``).

    Where the jobs disagree on a metric's label (one job labels it differently from
    another, or not at all: a swept ``metrics.labels``, or jobs of experiments that label
    differently), the metric is left out and keeps its canonical name: no one label is what
    every job's report called that column's numbers. A job without a ``labels`` map (no
    result) has no say."""
    given = [s["labels"] for s in summaries if isinstance(s.get("labels"), dict)]
    found: dict[str, set[str]] = {}
    for labels in given:
        for metric, label in labels.items():
            found.setdefault(str(metric), set()).add(str(label))
    return {
        m: next(iter(v))
        for m, v in found.items()
        if len(v) == 1 and all(m in labels for labels in given)
    }


def _mean(job: SweepJob, name: str) -> float | None:
    agg = (job.summary.get("overall") or {}).get(name)
    value = agg.get("mean") if isinstance(agg, dict) else None
    if isinstance(value, int | float) and not isinstance(value, bool) and not math.isnan(value):
        return float(value)
    return None


def render_sweep(
    sweep_dir: Path, jobs: list[SweepJob], *, width: int = WIDTH, color: bool = False
) -> str:
    """The sweep's summary table (stacked in parts when its metrics do not fit ``width``)."""
    from rich.text import Text

    names = _headline(jobs)
    labels = shared_labels(j.summary for j in jobs)
    shared = set.intersection(*(set(j.overrides) for j in jobs)) if len(jobs) > 1 else set()
    best: dict[str, float] = {}
    for name in names:
        values = [v for v in (_mean(j, name) for j in jobs) if v is not None]
        if values:
            best[name] = max(values)
    rows: list[list[Any]] = []
    for job in jobs:
        cells: list[Any] = [
            str(job.num),
            " ".join(o for o in job.overrides if o not in shared) or "(none)",
        ]
        for name in names:
            value = _mean(job, name)
            if value is None:
                cells.append("—")
            else:
                mark = BEST if name in best and value == best[name] else " "
                cells.append(f"{value:.3f}{mark}")
        cells.append(_verdict(job))
        rows.append(cells)
    cols = [
        Col("job", "number"),
        Col("overrides", "text"),
        *(Col(labels.get(n, n), "number") for n in names),
        Col("gates", "id"),
    ]
    # the verdict goes with the job, not in a part of its own: name columns first
    order = [0, 1, len(cols) - 1, *range(2, len(cols) - 1)]
    cols = [cols[i] for i in order]
    rows = [[r[i] for i in order] for r in rows]
    verdicts = [_verdict(j) for j in jobs]
    passed, unchecked = verdicts.count("passed"), verdicts.count("none required")
    title = (
        f"Sweep {sweep_dir}: {len(jobs)} job{'s' if len(jobs) != 1 else ''}, {passed} passed "
        "their gates"
        + (f", {unchecked} had no required gate (nothing checked)" if unchecked else "")
    )
    parts = split_columns(cols, rows, keep=3, width=width)
    drawn: list[Any] = [Text(title)]
    for part in parts:
        drawn.append(table([cols[i] for i in part], [[r[i] for i in part] for r in rows]))
    if best:  # no job left a result (each one's error above): no best to mark
        drawn.append(Text(f"{BEST} the best job for that metric (the highest mean)"))
    shown = [(n, labels[n]) for n in names if n in labels]
    if shown:  # as each job's own report says it
        pairs = ", ".join(f"{label} is {n}" for n, label in shown)
        drawn.append(Text(f"labels (metrics.labels): {pairs}"))
    return render(*drawn, width=width, color=color)
