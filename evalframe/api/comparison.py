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
import numbers
import os
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


def _path(run: str | Path) -> Path:
    """A path as given, ``~`` expanded (as ``run(golden="~/...")`` expands it)."""
    return Path(run).expanduser()


def _data(run: RunRef, label: str, baselines_dir: Path, key: str = "runs") -> RunData:
    """``run``'s per-query data; ``key`` is the argument that gave it (``runs[1]``,
    ``baseline``), which an error names."""
    if isinstance(run, Result):
        return run.folder.data(label)
    if not isinstance(run, (str, Path)):
        raise ConfigError(
            f"compare() got a {type(run).__name__} as a run",
            key=key,
            expected="an evalframe.Result, a run folder, or a baseline name",
        )
    if RunFolder.is_run(_path(run)):
        return RunFolder(_path(run)).data(label)
    from evalframe.assess.baseline import load_baseline

    given = str(_path(run)) if str(run).startswith("~") else str(run)
    # a baseline's name, or B.O.B's results
    loaded = load_baseline(given, baselines_dir, key=key)
    assert loaded.data is not None  # load_baseline always reads the data
    return loaded.data.renamed(label)


def _same(a: RunRef, b: RunRef) -> bool:
    def where(r: RunRef) -> Path:
        return (r.path if isinstance(r, Result) else _path(r)).resolve()

    try:
        return a is b or where(a) == where(b)
    except (OSError, TypeError):
        return False


def _alpha(alpha: Any) -> float:
    """``alpha`` as ``evalframe compare --alpha`` takes it: a number strictly between 0 and 1."""
    expected = "a number between 0 and 1, exclusive (0.05 is the default)"
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real):
        raise ConfigError(
            f"alpha must be a number, not {type(alpha).__name__}",
            key="alpha",
            expected=expected,
            got=repr(alpha),
            hint="give the significance level as a number, e.g. alpha=0.05",
        )
    value = float(alpha)
    if not (math.isfinite(value) and 0 < value < 1):
        raise ConfigError(
            f"alpha {value:g} is not strictly between 0 and 1",
            key="alpha",
            expected=expected,
            got=repr(alpha),
            hint="at 0 or below no difference is ever significant (a regression would pass "
            "as within noise); give e.g. alpha=0.05",
        )
    return value


def _seed(seed: Any) -> int:
    """``seed`` as ``evalframe compare --seed`` takes it: a whole number, 0 or more."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ConfigError(
            "seed must be a whole number, 0 or more",
            key="seed",
            expected="a whole number >= 0 (0 is the default)",
            got=repr(seed),
            hint="give e.g. seed=0: the same seed gives the same numbers",
        )
    return int(seed)


def _folder_arg(value: Any, key: str) -> Path:
    """A folder argument (``baselines_dir``) as a path, ``~`` expanded."""
    if not isinstance(value, (str, os.PathLike)):
        raise ConfigError(
            f"{key} must be a folder's path, not {type(value).__name__}",
            key=key,
            expected="a str or pathlib.Path",
            got=repr(value),
        )
    return Path(value).expanduser()


def _known_baseline(name: str, keys: list[str], root: Path) -> None:
    """``baseline`` given as a name while ``runs`` is a mapping: a key of it, or else a
    promoted baseline; neither is said with the mapping's keys (a mistyped key)."""
    from evalframe.assess.baseline import load_baseline

    try:
        load_baseline(name, root)
    except ConfigError as exc:
        if exc.key != "baseline":
            raise
        raise ConfigError(
            f"baseline {name!r} is not a key of runs, nor a run folder or a baseline in {root}",
            key="baseline",
            expected=f"one of runs' keys ({', '.join(keys)}), a run folder, or a baseline name",
            got=repr(name),
            hint="check the spelling of the key (baseline= names a key of the runs mapping)",
        ) from None


def _without_reference(
    named: list[tuple[str | None, RunRef, str]], reference: RunRef
) -> list[tuple[str | None, RunRef, str]]:
    """The runs that are not ``reference`` (a run is not compared with itself), refused
    when none is left."""
    candidates = [entry for entry in named if not _same(entry[1], reference)]
    if not candidates:
        raise ConfigError(
            "compare() has no run to compare with the baseline",
            key="runs",
            hint="give at least one run besides the baseline",
        )
    return candidates


def compare(
    runs: Sequence[RunRef] | Mapping[str, RunRef],
    baseline: RunRef | None = None,
    *,
    metrics: Sequence[str] | str | None = None,
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
    ``alpha`` is a number strictly between 0 and 1, ``seed`` a whole number >= 0.
    """
    if correction not in ("holm", "bh"):
        raise ConfigError(
            f"unknown correction {correction!r}", key="correction", expected="holm or bh"
        )
    alpha = _alpha(alpha)
    seed = _seed(seed)
    root = _folder_arg(baselines_dir, "baselines_dir")
    if isinstance(metrics, str):  # one metric: "RR" is ["RR"], not ["R", "R"]
        metrics = [metrics]
    named: list[tuple[str | None, RunRef, str]]  # (row name, run, the argument that gave it)
    if isinstance(runs, Mapping):
        named = [(str(k), v, f"runs[{str(k)!r}]") for k, v in runs.items()]
    elif isinstance(runs, (str, Path, Result)):
        named = [(None, runs, "runs")]
    else:
        named = [(None, r, f"runs[{i}]") for i, r in enumerate(runs)]
    baseline_key = "baseline"
    if isinstance(baseline, str) and isinstance(runs, Mapping):
        if baseline in runs:
            baseline_key = f"runs[{baseline!r}]"
            baseline = runs[baseline]
        elif not _path(baseline).exists():
            _known_baseline(baseline, [str(k) for k in runs], root)
    if baseline is None:
        if len(named) < 2:
            raise ConfigError(
                "compare() needs a reference and at least one run to compare with it",
                key="runs",
                hint="give two runs or more (the first is the reference), or baseline=...",
            )
        reference = named[0]
        candidates = _without_reference(named[1:], reference[1])
    else:
        reference = next(
            ((k, r, a) for k, r, a in named if _same(r, baseline)),
            (None, baseline, baseline_key),
        )
        candidates = _without_reference(named, baseline)
    taken: set[str] = set()
    ref_label = reference[0] or _label(reference[1], taken)
    taken.add(ref_label)
    ref = _data(reference[1], ref_label, root, reference[2])
    others = []
    for name, run, key in candidates:
        label = name or _label(run, taken)
        taken.add(label)
        others.append(_data(run, label, root, key))

    from evalframe.assess.compare import (
        check_comparable,
        compare_many,
        compare_runs,
        headline_of,
    )
    from evalframe.assess.compare_text import render_comparison, render_table

    for other in others:
        check_comparable(
            ref, other, allow_mismatch=allow_mismatch, override="pass allow_mismatch=True"
        )
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
