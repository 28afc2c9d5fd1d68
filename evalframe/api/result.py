"""A finished run as an object: its numbers, gates, per-query table and run folder.

A :class:`Result` reads everything from the run folder, through
:class:`~evalframe.assess.runfolder.RunFolder` (the one owner of that format):
``evalframe.run`` returns one for the folder it just wrote, ``evalframe.load``
for any folder written before. So a result in a notebook, the files on disk and
the command line's report are the same numbers.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalframe.assess.results import GateResult
from evalframe.assess.runfolder import RunFolder
from evalframe.core.errors import ConfigError, DataError
from evalframe.report.model import run_notes

if TYPE_CHECKING:
    from evalframe.pipeline.run import PipelineResult

__all__ = ["Estimate", "MetricNotComputedError", "Result", "load"]

#: What to do about a run folder's file that is not as evalframe wrote it.
_RESTORE = "restore the file from the run (or re-run it); it was edited by hand"


class MetricNotComputedError(ConfigError, KeyError):
    """``result.metric(name)`` for a metric the run did not compute (still a KeyError)."""


def _damaged(path: Path | None, key: str, expected: str, value: Any) -> DataError:
    """A value in a run folder's file that evalframe would not have written there."""
    got = repr(value) if not isinstance(value, (dict, list)) else type(value).__name__
    return DataError(
        f"{key} is not as evalframe writes it",
        path=path,
        key=key,
        expected=expected,
        got=got,
        hint=_RESTORE,
    )


def _number(value: Any, path: Path | None = None, key: str = "value") -> float:
    """A JSON number as a float; ``null`` (NaN written by evalframe) as NaN; anything
    else a located :class:`DataError` (the file ``path``, the key ``key``)."""
    if value is None:
        return math.nan
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _damaged(path, key, "a number", value)
    return float(value)


def _count(value: Any, path: Path | None, key: str) -> int:
    """A JSON count (``n``, ``skipped``): a whole number, ``null`` or absent as 0."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise _damaged(path, key, "a whole number", value)
    return int(value)


def _mapping(value: Any, path: Path | None, key: str) -> Mapping[str, Any]:
    """A JSON object (``null`` or absent as empty)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _damaged(path, key, "a mapping", value)
    return value


@dataclass(frozen=True)
class Estimate:
    """One metric's mean over the queries it covered, with its bootstrap interval.

    ``ci_low``/``ci_high`` are NaN when the run asked for no bootstrap
    (``stats.bootstrap=0``); ``skipped`` counts queries a policy left out.
    """

    mean: float
    ci_low: float
    ci_high: float
    std: float
    n: int
    skipped: int = 0

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], *, path: Path | None = None, key: str = "estimate"
    ) -> Estimate:
        """From ``summary.json``'s aggregate at ``key``; a value evalframe would not have
        written there is a :class:`DataError` naming ``path`` and the key."""
        data = _mapping(data, path, key)
        return cls(
            mean=_number(data.get("mean"), path, f"{key}.mean"),
            ci_low=_number(data.get("ci_low"), path, f"{key}.ci_low"),
            ci_high=_number(data.get("ci_high"), path, f"{key}.ci_high"),
            std=_number(data.get("std"), path, f"{key}.std"),
            n=_count(data.get("n"), path, f"{key}.n"),
            skipped=_count(data.get("skipped"), path, f"{key}.skipped"),
        )

    def __str__(self) -> str:
        if math.isnan(self.ci_low):
            return f"{self.mean:.3f} (n={self.n})"
        return f"{self.mean:.3f} [{self.ci_low:.3f}, {self.ci_high:.3f}] (n={self.n})"


class Result:
    """One run: overall and per-slice metrics with CIs, gates, per-query table, run folder.

    A failed required gate is ``passed == False`` (``exit_code == 1``), not an
    exception: the run finished and wrote everything. ``pipeline`` is the
    in-memory result of the run when it ran in this process (None after
    :func:`load`).
    """

    def __init__(self, path: str | Path, *, pipeline: PipelineResult | None = None) -> None:
        self.folder = RunFolder(Path(path))
        self.pipeline = pipeline
        self.summary: dict[str, Any] = self.folder.summary()  # refuses a newer layout
        self._html: str | None = None

    # -- identity -----------------------------------------------------------------

    @property
    def path(self) -> Path:
        """The run folder."""
        return self.folder.path

    @property
    def name(self) -> str:
        """The experiment's name (``experiment`` in the config, or ``name=`` given to run)."""
        return str(self.summary.get("experiment") or self.path.name)

    @cached_property
    def config(self) -> dict[str, Any]:
        """The composed config the run used (``config.yaml``, secrets redacted)."""
        return self.folder.config()

    @cached_property
    def timings(self) -> dict[str, Any]:
        """What this machine measured (``timings.json``): latency, the retrieval cache's hits
        and misses, when and from which commit; kept apart so the other files repeat
        byte for byte. Empty when the run kept none."""
        return self.folder.timings()

    # -- numbers ------------------------------------------------------------------

    @cached_property
    def metrics(self) -> dict[str, Estimate]:
        """Every metric overall, by canonical name: ``result.metrics["nDCG@10"].mean``."""
        where = self.folder.file(RunFolder.SUMMARY)
        overall = _mapping(self.summary.get("overall"), where, "overall")
        return {
            str(m): Estimate.from_dict(a, path=where, key=f"overall.{m}")
            for m, a in overall.items()
        }

    @cached_property
    def slices(self) -> dict[str, dict[str, dict[str, Estimate]]]:
        """Per slice field, per value, every metric: ``result.slices["difficulty"]["hard"]``."""
        where = self.folder.file(RunFolder.SUMMARY)
        out: dict[str, dict[str, dict[str, Estimate]]] = {}
        for fname, groups in _mapping(self.summary.get("by_slice"), where, "by_slice").items():
            at = f"by_slice.{fname}"
            out[str(fname)] = {
                str(value): {
                    str(m): Estimate.from_dict(a, path=where, key=f"{at}.{value}.{m}")
                    for m, a in _mapping(aggs, where, f"{at}.{value}").items()
                }
                for value, aggs in _mapping(groups, where, at).items()
            }
        return out

    def metric(self, name: str) -> float:
        """One metric's mean overall, by any name the config accepts for it (``MRR`` is
        ``RR``, ``ndcg@10`` is ``nDCG@10``); one not computed is a
        :class:`MetricNotComputedError` (a ConfigError and a KeyError) listing those computed."""
        if name in self.metrics:
            return self.metrics[name].mean
        canonical = None
        if isinstance(name, str):
            from evalframe.metrics import parse_metric, refuse_label

            # a report label ("Recall@1", ADK's name for Hit@1) is not a name: it parses
            # as another metric, whose mean would be returned, or said to be missing
            refuse_label(name, self.labels, key="name", who="result.metric()")

            try:
                canonical = str(parse_metric(name, key="name"))
            except ConfigError:
                canonical = None
        if canonical is not None and canonical in self.metrics:
            return self.metrics[canonical].mean
        also = f" ({canonical})" if canonical is not None and canonical != name else ""
        raise MetricNotComputedError(
            f"{name!r}{also} was not computed; this run has {', '.join(self.metrics)}",
            key="name",
            expected=f"one of: {', '.join(self.metrics)}",
            got=repr(name),
            hint="result.metrics lists every metric the run computed; add others to "
            "metrics.measures and re-run",
        )

    @property
    def labels(self) -> dict[str, str]:
        """Display names of metrics (``metrics.labels``), {canonical: label}."""
        labels = _mapping(self.summary.get("labels"), self.folder.file(RunFolder.SUMMARY), "labels")
        return {str(k): str(v) for k, v in labels.items()}

    # -- gates --------------------------------------------------------------------

    @cached_property
    def gate_file(self) -> dict[str, Any]:
        return self.folder.gates()

    @cached_property
    def gates(self) -> list[GateResult]:
        """Every gate's verdict, as the run judged it (``gates.json``)."""
        where = self.folder.file(RunFolder.GATES)
        listed = self.gate_file.get("gates") or []
        if not isinstance(listed, list):
            raise _damaged(where, "gates", "a list of gates", listed)
        out = []
        for i, g in enumerate(listed):
            at = f"gates[{i}]"
            g = _mapping(g, where, at)
            if not isinstance(g.get("name"), str):
                raise _damaged(where, f"{at}.name", "the gate's name (a string)", g.get("name"))
            if not isinstance(g.get("passed"), bool):
                raise _damaged(where, f"{at}.passed", "true or false", g.get("passed"))
            for field in ("failures", "hints"):
                if not isinstance(g.get(field) or [], list):
                    raise _damaged(where, f"{at}.{field}", "a list", g.get(field))
            out.append(
                GateResult(
                    name=g["name"],
                    type=str(g.get("type", "")),
                    passed=g["passed"],
                    required=bool(g.get("required", True)),
                    message=str(g.get("message", "")),
                    value=g.get("value"),
                    threshold=g.get("threshold"),
                    failures=tuple(str(f) for f in g.get("failures") or ()),
                    hints=tuple(str(h) for h in g.get("hints") or ()),
                )
            )
        return out

    @property
    def passed(self) -> bool:
        """Whether every required gate passed (the command line's exit code 0)."""
        return bool(self.summary.get("gates_passed", self.gate_file.get("passed", True)))

    @property
    def exit_code(self) -> int:
        """What ``python -m evalframe`` exited with for this run: 0 passed, 1 a gate failed."""
        code = self.summary.get("exit_code", 0 if self.passed else 1)
        if isinstance(code, bool) or not isinstance(code, int):
            raise _damaged(
                self.folder.file(RunFolder.SUMMARY), "exit_code", "a whole number (0 or 1)", code
            )
        return code

    @property
    def failed_gates(self) -> list[GateResult]:
        """The required gates that failed."""
        return [g for g in self.gates if g.required and not g.passed]

    @property
    def warnings(self) -> list[str]:
        """What the verdict says beside pass/fail (an unblessed golden set)."""
        return [str(w) for w in self.summary.get("verdict_warnings") or []]

    @property
    def notes(self) -> list[str]:
        """What the run's terminal said besides its numbers, as its page shows them: the
        golden queries it has no ranking for, its queries no golden query asked, and
        every warning (a run file's repeated ids, a metric cut deeper than ``depth``)."""
        return run_notes(self.summary)

    # -- per query ----------------------------------------------------------------

    @cached_property
    def records(self) -> list[dict[str, Any]]:
        """``per_query.jsonl``: one dict per golden query (values, status, retrieved ids)."""
        return [record for _, record in self.folder.per_query()]

    @property
    def comparison(self) -> dict[str, Any] | None:
        """The comparison with the configured baseline (``comparison.json``), if one ran."""
        return self.folder.comparison()

    @property
    def report_path(self) -> Path | None:
        """``report.html`` in the run folder (None when ``report.html=false``)."""
        page = self.folder.file(RunFolder.REPORT_HTML)
        return page if page.is_file() else None

    # -- DataFrames -----------------------------------------------------------------

    def to_pandas(self) -> Any:
        """Every aggregate as a tidy DataFrame: one row per (slice, value, metric).

        Overall rows have ``slice == "all"`` and ``value == "all"``; columns are
        ``slice, value, metric, mean, ci_low, ci_high, std, n, skipped``. Pivot
        it for a wide table: ``df.pivot_table(index=["slice", "value"],
        columns="metric", values="mean")``.
        """
        from evalframe.api.frames import pandas

        pd = pandas()
        rows = [("all", "all", m, e) for m, e in self.metrics.items()]
        rows += [
            (fname, value, m, e)
            for fname, groups in self.slices.items()
            for value, aggs in groups.items()
            for m, e in aggs.items()
        ]
        columns = ["slice", "value", "metric", "mean", "ci_low", "ci_high", "std", "n", "skipped"]
        return pd.DataFrame(
            [(s, v, m, e.mean, e.ci_low, e.ci_high, e.std, e.n, e.skipped) for s, v, m, e in rows],
            columns=columns,
        )

    def per_query(self) -> Any:
        """One row per golden query, indexed by ``query_id``.

        Columns: ``text``, each slice field, each metric (NaN where a policy
        left the query out), ``status`` (✓ ⚠ ✗ –), ``expected`` and
        ``retrieved`` (lists of ids, in the rank order the metrics used),
        ``latency_ms`` and ``missing`` (the retriever gave no answer).
        """
        from evalframe.api.frames import pandas

        pd = pandas()
        metric_names = list(self.metrics)
        summary_file = self.folder.file(RunFolder.SUMMARY)
        fields = _mapping(self.summary.get("slices"), summary_file, "slices").get("fields") or []
        if not isinstance(fields, list):
            raise _damaged(summary_file, "slices.fields", "a list of slice fields", fields)
        slice_fields = [str(f) for f in fields]
        where = self.folder.file(RunFolder.PER_QUERY)
        rows = []
        for r in self.records:
            qid = r.get("query_id")
            at = f"query {qid!r}: "
            row: dict[str, Any] = {"query_id": qid, "text": r.get("text")}
            slices = _mapping(r.get("slices"), where, f"{at}slices")
            for f in slice_fields:
                row[f] = slices.get(f)
            values = _mapping(r.get("metrics"), where, f"{at}metrics")
            for m in metric_names:
                row[m] = _number(values.get(m), where, f"{at}metrics.{m}")
            for field in ("expected", "retrieved"):
                if not isinstance(r.get(field) or [], list):
                    raise _damaged(where, f"{at}{field}", "a list of ids", r.get(field))
            row.update(
                status=r.get("status"),
                expected=list(r.get("expected") or []),
                retrieved=list(r.get("retrieved") or []),
                latency_ms=_number(r.get("latency_ms"), where, f"{at}latency_ms"),
                missing=bool(r.get("missing")),
            )
            rows.append(row)
        columns = [
            "query_id",
            "text",
            *slice_fields,
            *metric_names,
            "status",
            "expected",
            "retrieved",
            "latency_ms",
            "missing",
        ]
        return pd.DataFrame(rows, columns=columns).set_index("query_id")

    # -- display ----------------------------------------------------------------------

    def verdict_line(self) -> str:
        gates = self.gates
        required = [g for g in gates if g.required]
        missed = [g.name for g in gates if not g.required and not g.passed]
        if self.failed_gates:
            text = "✗ FAILED: " + ", ".join(g.name for g in self.failed_gates)
        elif required:
            text = f"✓ PASSED: {len(required)} required gate(s) passed"
        elif gates:
            text = "PASSED: no required gate, nothing was checked"
        else:
            text = "✓ PASSED: no gates configured"
        if missed:
            text += f"; advisory missed: {', '.join(missed)}"
        return text

    def __repr__(self) -> str:
        return f"<evalframe.Result {self.name!r} {self.verdict_line()} at {self.path}>"

    def __str__(self) -> str:
        """The compact text a terminal shows: verdict, headline metrics, gates."""
        golden = _mapping(
            self.summary.get("golden_set"), self.folder.file(RunFolder.SUMMARY), "golden_set"
        )
        lines = [
            f"evalframe · {self.name}: {self.verdict_line()}",
            f"run folder: {self.path}",
            f"{golden.get('queries', len(self.records))} queries "
            f"({golden.get('negatives', 0)} negative) · retriever "
            f"{self.summary.get('retriever', '?')} · depth {self.summary.get('depth', '?')}",
            "",
        ]
        labels = self.labels
        names = [f"{m} ({labels[m]})" if m in labels else m for m in self.metrics]
        width = max([len(n) for n in names] + [6])
        config_file = self.folder.file(RunFolder.CONFIG)
        stats = _mapping(self.config.get("stats"), config_file, "stats")
        level = _number(stats.get("confidence", 0.95), config_file, "stats.confidence")
        lines.append(f"  {'metric':<{width}}  {'mean':>6}  {f'{level:.0%} CI':<16}  {'n':>5}")
        for label, est in zip(names, self.metrics.values(), strict=True):
            ci = "" if math.isnan(est.ci_low) else f"[{est.ci_low:.3f}, {est.ci_high:.3f}]"
            lines.append(f"  {label:<{width}}  {est.mean:>6.3f}  {ci:<16}  {est.n:>5}")
        if self.slices:
            lines += ["", f"slices: {', '.join(self.slices)} (result.to_pandas() has them all)"]
        if self.gates:
            lines += ["", "gates:"]
            for g in self.gates:
                mark = "✓" if g.passed else ("✗" if g.required else "⚠")
                extra = "" if g.required else " (advisory)"
                lines.append(f"  {mark} {g.name}{extra}: {g.message}")
        for w in self.warnings:
            lines.append(f"note: {w}")
        return "\n".join(lines)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """IPython's plain-text display (a terminal, ``%pprint``): the compact text."""
        printer.text(repr(self) if cycle else str(self))

    def _repr_html_(self) -> str:
        """Jupyter's display: the headline table, the gates, and the report's main plots.

        Drawn once per result (the plots take a moment) and kept: the folder it
        reads does not change under a finished run.
        """
        if self._html is None:
            from evalframe.api.html import result_html

            self._html = result_html(self.path, self.report_path)
        return self._html


def load(run_folder: str | Path | Result) -> Result:
    """Read a run folder that evalframe wrote (by ``python -m evalframe`` or ``evalframe.run``).

    Everything is read through :class:`~evalframe.assess.runfolder.RunFolder`:
    a folder without ``summary.json`` or written by a newer evalframe is a
    located :class:`~evalframe.core.errors.DataError`. A :class:`Result` given
    is read again from its folder (a fresh ``Result``); ``~`` is expanded.
    """
    if isinstance(run_folder, Result):
        return Result(run_folder.path)
    if not isinstance(run_folder, (str, os.PathLike)):
        raise ConfigError(
            f"load() got a {type(run_folder).__name__}, not a run folder",
            key="run_folder",
            expected="a run folder's path (str or pathlib.Path), or an evalframe.Result",
            got=repr(run_folder),
            hint="give the folder a run wrote, e.g. evalframe.load(result.path)",
        )
    path = Path(run_folder).expanduser()
    if not path.is_dir():
        raise ConfigError(
            "not a folder",
            path=path,
            expected="a run folder written by evalframe (with summary.json)",
            hint="a run's folder is printed at the end of its report (outputs/<experiment>/...)",
        )
    return Result(path)
