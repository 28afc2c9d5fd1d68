"""``evalframe.compare``: runs side by side with paired significance tests, as a table.

The numbers and verdicts are ``evalframe compare``'s: the same functions
(``compare_runs`` for one candidate, ``compare_many`` for several, each against
the reference), the same defaults (Holm, alpha 0.05, seed 0), the same checks
that the runs judged the same golden set under the same policies. Only the
shape is new: one row per system, as PyTerrier's ``pt.Experiment`` gives it,
with each metric's mean, and for every candidate its delta, p-value, corrected
p-value (the correction in the column's name) and verdict.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from evalframe.api.result import Result
from evalframe.assess.runfolder import RunData, RunFolder
from evalframe.core.errors import ConfigError

__all__ = ["Comparison", "compare"]

RunRef = Result | str | Path


@dataclass
class Comparison:
    """Runs against a reference: one row per system (the reference first).

    ``rows`` hold, per metric ``m``: ``m`` (the mean) and, for a candidate,
    ``m Δ``, ``m p-value`` (paired randomization test), ``m p-value (<correction>)``
    and ``m verdict`` (improved, regressed or within noise). ``text`` is what
    ``evalframe compare`` prints for the same runs; ``detail`` its data
    (``comparison.json``'s content).
    """

    reference: str
    systems: list[str]
    metrics: list[str]
    correction: str
    alpha: float
    family: int
    rows: list[dict[str, Any]]
    text: str
    detail: dict[str, Any]
    #: per candidate and metric, the cells the page draws (delta, interval, n, verdict)
    cells: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)

    @property
    def decided_by(self) -> str:
        """How the verdicts were decided, in words (the test, the correction, alpha)."""
        line = self.text.split("Verdicts: ", 1)[-1].splitlines()[0]
        return line.rstrip(".")

    def verdicts(self) -> dict[str, dict[str, str]]:
        """{candidate: {metric: verdict}}."""
        return {
            row["name"]: {m: row[f"{m} verdict"] for m in self.metrics} for row in self.rows[1:]
        }

    def columns(self) -> list[str]:
        names = ["name", *self.metrics]
        for m in self.metrics:
            names += [f"{m} Δ", f"{m} p-value", f"{m} p-value ({self.correction})", f"{m} verdict"]
        return names

    def to_pandas(self) -> Any:
        """The table as a DataFrame (``attrs`` holds the correction, alpha and family size)."""
        from evalframe.api.frames import pandas

        pd = pandas()
        frame = pd.DataFrame(
            [[row.get(c) for c in self.columns()] for row in self.rows], columns=self.columns()
        )
        frame.attrs.update(
            reference=self.reference,
            correction=self.correction,
            alpha=self.alpha,
            family=self.family,
            test="paired randomization (sign-flip) test",
            decided_by=self.decided_by,
        )
        return frame

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return (
            f"<evalframe.Comparison of {len(self.systems)} run(s) against {self.reference!r}, "
            f"{len(self.metrics)} metrics, {self.correction}>"
        )

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self) if cycle else self.text)

    def _repr_html_(self) -> str:
        from evalframe.api.html import comparison_html

        return comparison_html(self)


def _label(run: RunRef, taken: set[str]) -> str:
    """A name for a system: the run's name (its folder's name when two runs share it)."""
    if isinstance(run, Result):
        label = run.name if run.name not in taken else f"{run.name} ({run.path.name})"
    else:
        label = str(run)
    base, i = label, 2
    while label in taken:
        label, i = f"{base} #{i}", i + 1
    taken.add(label)
    return label


def _data(run: RunRef, label: str, baselines_dir: Path) -> RunData:
    if isinstance(run, Result):
        return run.folder.data(label)
    if not isinstance(run, (str, Path)):
        raise ConfigError(
            f"compare() got a {type(run).__name__} as a run",
            key="runs",
            expected="an evalframe.Result, a run folder, or a baseline name",
        )
    if RunFolder.is_run(Path(run)):
        return RunFolder(Path(run)).data(label)
    from evalframe.assess.baseline import load_baseline

    loaded = load_baseline(str(run), baselines_dir)  # a baseline's name, or B.O.B's results
    assert loaded.data is not None  # load_baseline always reads the data
    return loaded.data.renamed(label)


def _same(a: RunRef, b: RunRef) -> bool:
    def where(r: RunRef) -> Path:
        return (r.path if isinstance(r, Result) else Path(r)).resolve()

    try:
        return a is b or where(a) == where(b)
    except (OSError, TypeError):
        return False


def compare(
    runs: Sequence[RunRef] | Mapping[str, RunRef],
    baseline: RunRef | None = None,
    *,
    metrics: Sequence[str] | None = None,
    all_metrics: bool = False,
    correction: Literal["holm", "bh"] = "holm",
    alpha: float = 0.05,
    seed: int = 0,
    allow_mismatch: bool = False,
    baselines_dir: str | Path = "baselines",
) -> Comparison:
    """Compare runs with a reference run, as ``evalframe compare REFERENCE RUN...`` does.

    ``runs`` are :class:`Result` objects, run folders or baseline names, or a
    mapping ``{name: run}`` that names the rows. ``baseline`` is the reference
    (a run, or a key of the mapping); without it the first run is. The
    verdicts come from a paired randomization test, corrected (``holm`` or
    ``bh``) over every metric and slice for one candidate, over every
    (candidate, metric) cell for several: exactly the command line's.
    Without ``metrics`` the runs' headline metrics are tested, as
    ``evalframe compare`` does; ``all_metrics=True`` tests every metric both
    runs computed (its ``--all``; the correction then covers them all).
    """
    if correction not in ("holm", "bh"):
        raise ConfigError(
            f"unknown correction {correction!r}", key="correction", expected="holm or bh"
        )
    named: list[tuple[str | None, RunRef]]
    if isinstance(runs, Mapping):
        named = [(str(k), v) for k, v in runs.items()]
    elif isinstance(runs, (str, Path, Result)):
        named = [(None, runs)]
    else:
        named = [(None, r) for r in runs]
    if isinstance(baseline, str) and isinstance(runs, Mapping) and baseline in runs:
        baseline = runs[baseline]
    if baseline is None:
        if len(named) < 2:
            raise ConfigError(
                "compare() needs a reference and at least one run to compare with it",
                key="runs",
                hint="give two runs or more (the first is the reference), or baseline=...",
            )
        reference, candidates = named[0], named[1:]
    else:
        reference = next(((k, r) for k, r in named if _same(r, baseline)), (None, baseline))
        candidates = [(k, r) for k, r in named if not _same(r, baseline)]
        if not candidates:
            raise ConfigError(
                "compare() has no run to compare with the baseline",
                key="runs",
                hint="give at least one run besides the baseline",
            )
    taken: set[str] = set()
    root = Path(baselines_dir)
    ref_label = reference[0] or _label(reference[1], taken)
    taken.add(ref_label)
    ref = _data(reference[1], ref_label, root)
    others = []
    for key, run in candidates:
        label = key or _label(run, taken)
        taken.add(label)
        others.append(_data(run, label, root))

    from evalframe.assess.compare import (
        check_comparable,
        compare_many,
        compare_runs,
        headline_of,
    )
    from evalframe.assess.compare_text import render_comparison, render_table

    for other in others:
        check_comparable(ref, other, allow_mismatch=allow_mismatch)
    chosen = list(metrics) if metrics else (None if all_metrics else headline_of(ref, others))
    if len(others) == 1:
        pair = compare_runs(
            ref, others[0], metrics=chosen, correction=correction, alpha=alpha, seed=seed
        )
        names = [mc.metric for mc in pair.metrics]
        cells = {
            pair.b: {
                mc.metric: {
                    "reference_mean": mc.overall.mean_a,
                    "mean": mc.overall.mean_b,
                    "delta": mc.overall.delta,
                    "p_randomization": mc.overall.p_randomization,
                    "p_adjusted": mc.p_adjusted,
                    "verdict": pair.verdict(mc),
                    "n": mc.overall.n,
                    **mc.interval.as_dict(),
                }
                for mc in pair.metrics
            }
        }
        detail = pair.as_dict()
        text = render_comparison(pair)
        family = pair.family
    else:
        table = compare_many(
            ref, others, metrics=chosen, correction=correction, alpha=alpha, seed=seed
        )
        cells = table["runs"]
        names = list(next(iter(cells.values())))
        detail, text, family = table, render_table(table), int(table["family"])
    first = next(iter(cells.values()))
    rows: list[dict[str, Any]] = [
        {"name": ref.name, **{m: first[m]["reference_mean"] for m in names}}
    ]
    for system, by_metric in cells.items():
        row: dict[str, Any] = {"name": system}
        for m in names:
            c = by_metric[m]
            row[m] = c["mean"]
            row[f"{m} Δ"] = c["delta"]
            row[f"{m} p-value"] = c["p_randomization"]
            row[f"{m} p-value ({correction})"] = c["p_adjusted"]
            row[f"{m} verdict"] = c["verdict"]
        rows.append(row)
    for row in rows:  # NaN for "not computed" reads better in a table than None
        for key, value in row.items():
            if value is None and not key.endswith("verdict") and key != "name":
                row[key] = math.nan
    return Comparison(
        reference=ref.name,
        systems=[r["name"] for r in rows[1:]],
        metrics=names,
        correction=correction,
        alpha=alpha,
        family=family,
        rows=rows,
        text=text,
        detail=detail,
        cells=cells,
    )
