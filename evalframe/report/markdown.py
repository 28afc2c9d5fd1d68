"""``summary.md``: a run in a pull-request comment's space.

The verdict, a metric table (with deltas and verdicts against the baseline
when there is one), the queries that regressed most (or, without a baseline,
the failed ones), and where the full page is. It stays a few kilobytes
whatever the golden set's size (GitHub caps a comment at 65,536 characters).
"""

from __future__ import annotations

import math
from pathlib import Path

from evalframe.assess.gates import FAILED, PASSED, UNCHECKED, verdict_state
from evalframe.assess.runfolder import FAIL
from evalframe.report import plots
from evalframe.report.analyses import render_stored
from evalframe.report.drift import corpus_diff, delta_rows, query_drifts, status_changes
from evalframe.report.html import fmt
from evalframe.report.model import BaselineView, RunView

__all__ = ["render_summary_md"]

#: Queries listed under "top regressions" (or "failed queries").
TOP = 5


#: Failures listed under a failed gate (the rest are counted; gates.json has them all).
GATE_FAILURES = 5


def _cell(text: str, limit: int = 80) -> str:
    text = " ".join(str(text).split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def render_summary_md(
    view: RunView, baseline: BaselineView | None = None, html_path: Path | str | None = None
) -> str:
    s = view.summary
    gates = view.gates.get("gates") or []
    failed = [g for g in gates if g.get("required") and not g.get("passed")]
    head = {
        FAILED: "✗ FAILED",
        PASSED: "✓ PASSED",
        # exit 0, but no gate could fail it: not shown as a verdict (as the terminal says)
        UNCHECKED: "PASSED (no required gate: nothing was checked)"
        if gates
        else "PASSED (no gates configured: nothing was checked)",
    }[verdict_state(gates)]
    warnings = [str(w) for w in view.gates.get("warnings") or []]
    if warnings:
        head += " (provisional)"
    lines = [f"## {head} · evalframe · {view.experiment}", ""]
    lines += [f"> ⚠ {_cell(w, 400)}" for w in warnings] + ([""] if warnings else [])
    golden = s.get("golden_set") or {}
    facts = [
        f"retriever `{s.get('retriever', '?')}`",
        f"golden set `{golden.get('name', '?')}@{golden.get('content_hash', '?')}` "
        f"({golden.get('queries', len(view.records))} queries)",
    ]
    corpus = s.get("corpus")
    if isinstance(corpus, dict):
        facts.append(f"corpus `{corpus.get('name')}@{corpus.get('content_hash')}`")
    git = s.get("git")
    if isinstance(git, dict) and git.get("sha"):
        facts.append(f"git `{str(git['sha'])[:10]}`" + (" (dirty)" if git.get("dirty") else ""))
    retrieved = s.get("retrieved")
    if isinstance(retrieved, dict):  # a rescore: say when its rankings were retrieved
        old = retrieved.get("git")
        sha = f" at `{str(old['sha'])[:10]}`" if isinstance(old, dict) and old.get("sha") else ""
        when = retrieved.get("created") or "(date not recorded)"
        facts.append(f"re-scored; retrieved {when}{sha}")
    if baseline is not None:
        facts.append(f"baseline `{baseline.name}`")
    lines += [" · ".join(facts), ""]
    notes = view.notes
    if notes:  # what the terminal warned about, for a reader of this file alone
        lines += ["**Notes on this run:**", *(f"- {_cell(n, 400)}" for n in notes), ""]
    if gates:
        marks = []
        for g in gates:
            mark = "✓" if g.get("passed") else ("✗" if g.get("required") else "⚠")
            extra = "" if g.get("required") else " (advisory)"
            marks.append(f"{mark} `{g.get('name')}`{extra}")
        lines.append("**Gates:** " + " · ".join(marks))
        for g in [*failed, *(g for g in gates if not g.get("required") and not g.get("passed"))]:
            lines.append(f"- `{g.get('name')}`: {_cell(g.get('message', ''), 160)}")
            # the queries a gate failed on ("7 of 13 do" names none), as the terminal lists them
            failed_on = [str(f) for f in g.get("failures") or []]
            lines += [f"  - {_cell(f, 160)}" for f in failed_on[:GATE_FAILURES]]
            if len(failed_on) > GATE_FAILURES:
                lines.append(f"  - … {len(failed_on) - GATE_FAILURES} more in gates.json")
        lines.append("")
    comparison = baseline.comparison if baseline is not None else None
    rows = {r.value: r for r in delta_rows(comparison)} if comparison else {}
    overall = s.get("overall") or {}
    if comparison:
        lines += ["| metric | value | 95% CI | Δ vs baseline | verdict |", "|---|---|---|---|---|"]
    else:
        lines += ["| metric | value | 95% CI | n |", "|---|---|---|---|"]
    for name in view.metric_names:
        agg = overall.get(name) or {}
        ci = f"[{fmt(agg.get('ci_low'))}, {fmt(agg.get('ci_high'))}]"
        row = f"| {view.labelled(name)} | {fmt(agg.get('mean'))} | {ci} |"
        if comparison:
            delta = rows.get(name)
            if delta is None:
                row += " – | – |"
            else:
                shapes = plots.VERDICT_MARKS
                symbol = shapes.get(delta.verdict, shapes["within noise"])[2]
                row += f" {fmt(delta.delta, signed=True)} | {symbol} {delta.verdict} |"
        else:
            skipped = agg.get("skipped") or 0
            row += f" {agg.get('n', '–')}{f' ({skipped} skipped)' if skipped else ''} |"
        lines.append(row)
    lines.append("")
    policies = s.get("policies") or {}
    if policies.get("no_relevant") == "skip" and any(
        (overall.get(name) or {}).get("skipped") for name in view.metric_names
    ):  # the header counts every query; say which ones the n of a metric leaves out
        lines += ["Negative examples are skipped by rank metrics (policy `no_relevant=skip`).", ""]
    rule = view.rule
    if baseline is not None:
        failing, passing = status_changes(baseline.records, view.records, rule)
        diff = corpus_diff(baseline.manifest, view.manifest)
        drift = f"**Drift:** {len(failing)} pass→fail, {len(passing)} fail→pass"
        if diff is not None:
            drift += (
                f"; corpus: {len(diff.changed)} document(s) changed, {len(diff.added)} added, "
                f"{len(diff.removed)} removed"
            )
        lines += [drift, ""]
        drifts = [
            d
            for d in query_drifts(baseline.records, view.records, rule, view.detail_k, diff)
            if not math.isnan(d.delta) and d.delta < 0
        ][:TOP]
        if drifts:
            lines += [
                f"### Top regressions ({view.label(rule.criterion)})",
                "",
                "| query | before → after | mark | question |",
                "|---|---|---|---|",
            ]
            for d in drifts:
                lines.append(
                    f"| {_cell(d.query_id, 40)} | {fmt(d.before)} → {fmt(d.after)} "
                    f"({fmt(d.delta, signed=True)}) | {d.status_before}→{d.status_after} | "
                    f"{_cell(d.text)} |"
                )
            lines.append("")
    else:
        bad = [r for r in view.records if r.get("status") == FAIL]
        if bad:
            bad.sort(key=lambda r: (r.get("metrics") or {}).get(rule.criterion) or 0.0)
            crit = view.label(rule.criterion)
            lines += [
                f"### Failed queries ({len(bad)}; {crit} < {rule.fail_below:g})",
                "",
                f"| query | {crit} | question |",
                "|---|---|---|",
            ]
            for r in bad[:TOP]:
                lines.append(
                    f"| {_cell(r.get('query_id', ''), 40)} | "
                    f"{fmt((r.get('metrics') or {}).get(rule.criterion))} | "
                    f"{_cell(r.get('text', ''))} |"
                )
            if len(bad) > TOP:
                lines.append(f"| … | | {len(bad) - TOP} more in the report |")
            lines.append("")
    where = html_path if html_path is not None else view.path / "report.html"
    failures = (view.summary.get("analysis") or {}).get("failures")
    analyses = render_stored(view.calibration, view.benefit, failures)
    if analyses:  # as the terminal and the page give them
        lines += ["### Analyses", "", "```text", analyses, "```", ""]
    drift = ", drift view" if baseline is not None else ""
    lines.append(f"Full report: `{where}` (plots, every query's rankings{drift}).")
    return "\n".join(lines) + "\n"
