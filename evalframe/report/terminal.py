"""The terminal report, in the spirit of B.O.B's: means ± std, slices, queries, gates.

Rendering is pure (results in, text out) so it can be tested and reused by
``rescore``/``compare`` later without re-running anything.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from evalframe.assess.gates import UNCHECKED, verdict_state, verdict_warnings
from evalframe.assess.runfolder import (
    FAIL,
    NEGATIVE,
    PASS,
    UNSCORED,
    WARN,
    per_query_records,
)
from evalframe.report.model import extra_note, missing_note

if TYPE_CHECKING:
    from evalframe.assess.results import Evaluation, GateResult
    from evalframe.core.types import GoldenSet
    from evalframe.pipeline.config import Experiment
    from evalframe.pipeline.run import PipelineResult

__all__ = ["TerminalReport", "render_report"]


def _fmt(value: float) -> str:
    return "  n/a" if math.isnan(value) else f"{value:.3f}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A slice table (first column text, then numbers), indented two spaces, fitted to WIDTH.

    A table with more metric columns than fit is stacked in parts, each
    starting with the slice value and the query count: squeezed into one part,
    rich would shrink the value column to nothing (12 metrics at 100 columns).
    """
    from evalframe.core.console import WIDTH, Col, render, split_columns, table

    cols = [Col(header[0], "text"), *(Col(h, "number") for h in header[1:])]
    parts = split_columns(cols, rows, keep=2, width=WIDTH - 2)
    drawn = [
        table([cols[i] for i in part], [[row[i] for i in part] for row in rows]) for part in parts
    ]
    text = "\n\n".join(render(t, width=WIDTH - 2) for t in drawn)
    return ["  " + line if line else line for line in text.split("\n")]


#: Lines that name files: never wrapped, so a path is copied whole from the terminal.
PATH_LINES = ("Saved results to: ", "Report: ")


def _fit(lines: list[str], width: int) -> list[str]:
    """Lines longer than ``width`` wrapped at spaces, continuations indented under their text.

    Ids and words are never split (a single id longer than the width stays
    whole); the tables are already drawn to the width; the lines naming the
    run's files (:data:`PATH_LINES`) are left whole.
    """
    import textwrap

    out: list[str] = []
    for line in lines:
        if len(line) <= width or line.startswith(PATH_LINES):
            out.append(line)
            continue
        lead = len(line) - len(line.lstrip(" "))
        out.extend(
            textwrap.wrap(
                line,
                width,
                initial_indent="",
                subsequent_indent=" " * (lead + 4),
                break_long_words=False,
                break_on_hyphens=False,
            )
            or [line]
        )
    return out


def _ids(ids: list[str], limit: int) -> str:
    shown = ", ".join(ids[:limit])
    return f"[{shown}{', …' if len(ids) > limit else ''}]"


def render_report(
    exp: Experiment,
    evaluation: Evaluation,
    gates: list[GateResult],
    outputs: dict[str, Path],
    records: list[dict[str, Any]] | None = None,
) -> str:
    golden = evaluation.golden
    cfg = exp.report
    negatives = sum(1 for q in golden if q.is_negative)
    out: list[str] = []
    out.append(
        f"evalframe · {exp.name} · {len(golden)} queries ({negatives} negative) · "
        f"golden set {golden.name}@{golden.content_hash} · retriever {exp.retriever.spec.name}"
    )
    missing = evaluation.scores.missing
    if missing:
        out.append(f"  note: {missing_note(list(missing), evaluation.policies.missing_query)}")
    unasked = evaluation.extra_queries
    if unasked:
        out.append(f"  note: {extra_note(unasked)}")

    # metrics.labels: a harness's own name for a metric, for display only
    labels = exp.labels

    def name(m: object) -> str:
        return labels.get(str(m), str(m))

    out.append("")
    has_ci = any(not math.isnan(a.ci_low) for a in evaluation.overall.values())
    level = f"{exp.stats.confidence:.0%} CI" if has_ci else ""
    out.append(f"Results (mean ± std{', ' + level if level else ''} over n queries):")
    width = max(len(name(m)) for m in evaluation.metrics)
    for m, agg in evaluation.overall.items():
        extra = f", {agg.skipped} skipped" if agg.skipped else ""
        ci = f"  [{_fmt(agg.ci_low)}, {_fmt(agg.ci_high)}]" if has_ci else ""
        out.append(
            # "(±n/a)" padded to "(±0.000)": the intervals line up under each other
            f"  {name(m).ljust(width)}  {_fmt(agg.mean)} {f'(±{_fmt(agg.std).strip()})':<8}{ci}"
            f"  n={agg.n}{extra}"
        )
    shown_labels = [(str(m), labels[str(m)]) for m in evaluation.metrics if str(m) in labels]
    if shown_labels:
        pairs = ", ".join(f"{label} is {metric}" for metric, label in shown_labels)
        out.append(f"  labels (metrics.labels): {pairs}; gates and files use the canonical names")
    if (
        any(agg.skipped for agg in evaluation.overall.values())
        and evaluation.policies.no_relevant == "skip"
    ):
        out.append("  (negative examples are skipped by rank metrics: policy no_relevant=skip)")
    if evaluation.scores.ties is not None:
        out.append(f"  {evaluation.scores.ties.describe()}")
    cache = evaluation.run.metadata.get("cache")
    if cache and cache.get("hits"):
        shards = evaluation.run.metadata.get("shards")
        out.append(
            f"  retrieval     {cache['misses']} retrieved, {cache['hits']} from cache "
            + (
                f"(by the {shards} shards; a merge retrieves nothing)"
                if shards
                else "(cache.retrieval=false to re-run all)"
            )
        )
    # a run file's rankings are looked up, not retrieved: no latency to speak of
    if evaluation.latency and exp.retriever.spec.name != "run_file":
        lat = evaluation.latency
        took = evaluation.run.metadata.get("retrieval_seconds")
        wall = f" · retrieval took {took:.2f} s" if isinstance(took, int | float) else ""
        shared = (
            " (in batches: each batch's time is shared out evenly among its queries)"
            if evaluation.run.metadata.get("batched")
            else ""
        )
        out.append(
            f"  latency       p50 {lat['p50_ms']:.1f} ms · p95 {lat['p95_ms']:.1f} ms{wall}{shared}"
        )

    for fname, groups in evaluation.by_slice.items():
        out.append("")
        out.append(f"By {fname}:")
        header = [fname, "queries", *(name(m) for m in evaluation.metrics)]
        rows = []
        idx = evaluation.slice_groups(fname)
        fewer = False
        for value, aggs in groups.items():
            count = len(idx[value])
            cells = []
            for a in aggs.values():
                # a mean over fewer of the row's queries (a policy skipped some): its n shown
                cells.append(_fmt(a.mean) + (f" ({a.n})" if a.n < count else ""))
                fewer = fewer or a.n < count
            rows.append([value, str(count), *cells])
        out.extend(_table(header, rows))
        if fewer:
            out.append(
                "  (k): the mean is over k of the row's queries; the others are skipped "
                "(metrics.policies: no_relevant or missing_query is skip)"
            )

    if evaluation.skipped_slices:
        out.append("")
        out.append("Not sliced by:")
        out.extend(f"  {name}: {why}" for name, why in evaluation.skipped_slices.items())

    if records is None:
        records = per_query_records(evaluation, cfg)
    if cfg.max_queries:
        out.append("")
        out.append(
            f"Per-query breakdown ({name(cfg.criterion)}: {PASS} ≥ {cfg.pass_at:g}, "
            f"{WARN} in between, {FAIL} < {cfg.fail_below:g}, {NEGATIVE} negative example, "
            f"{UNSCORED} not scored):"
        )
        shown_metrics = evaluation.metrics[:4]
        for rec in records[: cfg.max_queries]:
            values = " ".join(
                f"{name(m)}={_fmt(rec['metrics'][str(m)]).strip()}" for m in shown_metrics
            )
            out.append(f"  {rec['status']} {rec['query_id']}: {values}")
        if len(records) > cfg.max_queries:
            out.append(f"  … {len(records) - cfg.max_queries} more in per_query.jsonl")

    failed = [r for r in records if r["status"] == FAIL]
    if failed and cfg.max_failed:
        out.append("")
        out.append(f"Failed queries ({name(cfg.criterion)} < {cfg.fail_below:g}): {len(failed)}")
        for rec in failed[: cfg.max_failed]:
            out.append(f'  {rec["query_id"]}: "{rec["text"]}"')
            out.append(f"      Expected:  {_ids(rec['expected'], cfg.show_k)}")
            out.append(f"      Retrieved: {_ids(rec['retrieved'], cfg.show_k)}")
            failure = rec.get("failure")  # a category (docs/analyses.md)
            if failure:
                fix = f" → fix: {failure['fix']}" if failure["fix"] else ""
                # the heuristics', or the dataset's own label's (analysis.failures.label_field)
                said = failure.get("heuristic_category")
                how = (
                    f"{failure['source']}; heuristics: {str(said).replace('_', ' ')}"
                    if failure.get("source") and said
                    else "heuristic"
                )
                out.append(f"      Category:  {failure['label']} ({how}){fix}")
        if len(failed) > cfg.max_failed:
            out.append(f"  … {len(failed) - cfg.max_failed} more in per_query.jsonl")

    negs = [r for r in records if r["status"] == NEGATIVE]
    if negs and cfg.max_failed:
        out.append("")
        out.append(f"Negative examples (nothing should match): {len(negs)}")
        for rec in negs[: cfg.max_failed]:
            top = _ids(rec["retrieved"], cfg.show_k)
            out.append(f'  {rec["query_id"]}: "{rec["text"]}" → retrieved: {top}')
        if len(negs) > cfg.max_failed:
            out.append(f"  … {len(negs) - cfg.max_failed} more in per_query.jsonl")

    out.append("")
    if gates:
        out.append("Gates:")
        for g in gates:
            mark = PASS if g.passed else (FAIL if g.required else WARN)
            severity = "" if g.required else " (advisory)"
            out.append(f"  {mark} {g.name}{severity}: {g.message}")
            for item in g.failures[:10]:
                out.append(f"      - {item}")
            if len(g.failures) > 10:
                out.append(f"      … {len(g.failures) - 10} more in gates.json")
            for hint in g.hints:
                out.append(f"      hint: {hint}")
    else:
        out.append("Gates: none configured")

    out += _closing(exp, golden, gates, outputs, gap=True)
    from evalframe.core.console import WIDTH

    return "\n".join(_fit("\n".join(out).split("\n"), WIDTH))


def _closing(
    exp: Experiment,
    golden: GoldenSet,
    gates: list[GateResult],
    outputs: dict[str, Path],
    *,
    gap: bool,
) -> list[str]:
    """Both reports' last lines: the verdict's warnings, where the run was saved, and the
    result (``gap``: a blank line before the folder, as the full report has)."""
    out = []
    failed_required = [g.name for g in gates if g.required and not g.passed]
    warnings = verdict_warnings(golden, gates)
    for warning in warnings:
        out.append(f"  {WARN} warning: {warning}")
    if gap:
        out.append("")
    if outputs:
        out.append(f"Saved results to: {exp.output_dir}")
    if "report_html" in outputs:
        out.append(f"Report: {outputs['report_html']} (summary: {outputs['summary_md'].name})")
    provisional = f" (provisional: {len(warnings)} warning(s) above)" if warnings else ""
    if failed_required:
        out.append(
            f"Result: FAILED — required gate(s) failed: {', '.join(failed_required)}{provisional}"
        )
    elif not gates:  # exit 0 all the same; said, so that it is not read as a verdict
        out.append(f"Result: PASSED (no gates configured: nothing was checked){provisional}")
    elif verdict_state(gates) == UNCHECKED:  # advisory gates only: none of them can fail it
        out.append(
            f"Result: PASSED (no required gate: nothing that could fail the run was checked; "
            f"{len(gates)} advisory){provisional}"
        )
    else:
        out.append(f"Result: PASSED{provisional}")
    return out


def render_brief(
    exp: Experiment, evaluation: Evaluation, gates: list[GateResult], outputs: dict[str, Path]
) -> str:
    """A sweep job's few lines: what ran, the headline set with its intervals, the gates
    (a failed one with its message), the notes, where it was saved and the verdict.

    Twenty jobs of the full report are thousands of lines, with the sweep's own table
    at their end; each job's full report is in its folder (``summary.md``, the page).
    """
    golden = evaluation.golden
    out = [
        f"evalframe · {exp.name} · {len(golden)} queries · golden set "
        f"{golden.name}@{golden.content_hash} · retriever {exp.retriever.spec.name}"
    ]
    missing = evaluation.scores.missing
    if missing:
        out.append(f"  note: {missing_note(list(missing), evaluation.policies.missing_query)}")
    if evaluation.extra_queries:
        out.append(f"  note: {extra_note(evaluation.extra_queries)}")
    cells = []
    for m in exp.headline:
        agg = evaluation.overall.get(m)
        if agg is None:
            continue
        ci = "" if math.isnan(agg.ci_low) else f" [{_fmt(agg.ci_low)}, {_fmt(agg.ci_high)}]"
        cells.append(f"{exp.labels.get(str(m), str(m))} {_fmt(agg.mean).strip()}{ci}")
    out.append("  " + " · ".join(cells))
    if gates:
        marks = [
            f"{PASS if g.passed else (FAIL if g.required else WARN)} {g.name}"
            + ("" if g.required else " (advisory)")
            for g in gates
        ]
        out.append("  gates: " + " · ".join(marks))
        for g in gates:
            if not g.passed:
                out.append(f"    {g.name}: {g.message}")
    out += _closing(exp, golden, gates, outputs, gap=False)
    from evalframe.core.console import WIDTH

    return "\n".join(_fit(out, WIDTH))


class TerminalReport:
    """The reporter the command line uses: render the report and print it to ``stream``.

    With a baseline, the comparison's table goes in just before the gates.
    """

    def __init__(self, stream: TextIO | None = None, *, in_sweep: bool = False) -> None:
        self.stream = stream
        #: a sweep's job: ``report.terminal: auto`` prints the brief report
        self.in_sweep = in_sweep

    def __call__(self, result: PipelineResult) -> None:
        from evalframe.assess.compare_text import render_comparison
        from evalframe.report.analyses import render_analyses

        assert result.experiment is not None  # the pipeline always sets it
        exp = result.experiment
        if exp.report.terminal == "brief" or (exp.report.terminal == "auto" and self.in_sweep):
            text = render_brief(exp, result.evaluation, result.gates, result.outputs)
            result.report = text
            print(text, file=self.stream or sys.stdout)
            return
        text = render_report(
            result.experiment, result.evaluation, result.gates, result.outputs, result.records
        )
        if result.comparison is not None:
            block = render_comparison(result.comparison)
            text = text.replace("\nGates:", f"\n{block}\n\nGates:", 1)
        analyses = render_analyses(result.analysis)
        if analyses:
            text = text.replace("\nGates:", f"\n{analyses}\n\nGates:", 1)
        result.report = text
        print(text, file=self.stream or sys.stdout)
