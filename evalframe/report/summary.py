"""``evalframe report RUN_DIR... --out DIR``: one overview of several runs, for people and DVC.

Writes to ``DIR``:

- ``report.md`` and ``report.html``: a table of every run (queries, the main
  metrics, gates, the delta against its baseline when the run was compared
  with one), per-slice means, and the metric@k curves. The HTML page is
  self-contained (inline CSS and SVG, no script, nothing fetched), so it opens
  offline, unlike the page ``dvc plots show`` renders, which loads its
  charting library from a CDN;
- ``recall_at_k.csv`` and ``ndcg_at_k.csv``: one row per k, one column per run,
  computed from each run's ``per_query.jsonl`` (queries with no relevant
  document are left out, as the default ``no_relevant: skip`` policy does);
- ``slices.csv``: one row per run and slice value with the chosen metric's
  mean, for a bar chart.

The CSV files are what ``dvc.yaml`` declares under ``plots:``, so
``dvc plots diff`` draws them across commits.
"""

from __future__ import annotations

import argparse
import csv
import html
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalframe.assess.runfolder import RunFolder
from evalframe.core.io import atomic_write

__all__ = ["RunSummary", "curves", "load_run", "main", "write_report"]

#: Columns of the overview table, when the run computed them.
HEADLINE = ("R@5", "P@5", "RR", "nDCG@10", "AP")


@dataclass
class RunSummary:
    """What the report needs of one run folder."""

    name: str
    path: Path
    metrics: dict[str, Any]
    summary: dict[str, Any]
    gates: dict[str, Any]
    per_query: list[dict[str, Any]]
    comparison: dict[str, Any] | None


def load_run(path: Path, name: str | None = None) -> RunSummary:
    """Read a run folder written by evalframe (through :class:`RunFolder`)."""
    folder = RunFolder(path)
    return RunSummary(
        name=name or path.name,
        path=path,
        metrics=folder.metrics(),
        summary=folder.summary(),
        gates=folder.gates(),
        per_query=[r for _, r in folder.per_query()],
        comparison=folder.comparison(),
    )


def _relevant(record: dict[str, Any]) -> dict[str, float]:
    judgments = record.get("judgments") or {}
    return {str(d): float(v) for d, v in judgments.items() if float(v) > 0}


def curves(per_query: list[dict[str, Any]], max_k: int) -> dict[str, list[float | None]]:
    """Mean recall@k and nDCG@k (linear gain, 1/log2(r+1) discount) for k = 1..max_k."""
    recall = [0.0] * max_k
    ndcg = [0.0] * max_k
    n = 0
    for record in per_query:
        rel = _relevant(record)
        if not rel:
            continue
        n += 1
        retrieved = [str(d) for d in (record.get("retrieved") or [])]
        ideal = sorted(rel.values(), reverse=True)
        hits = dcg = idcg = 0.0
        for i in range(max_k):
            discount = 1.0 / math.log2(i + 2)
            if i < len(retrieved) and retrieved[i] in rel:
                hits += 1
                dcg += rel[retrieved[i]] * discount
            if i < len(ideal):
                idcg += ideal[i] * discount
            recall[i] += hits / len(rel)
            ndcg[i] += dcg / idcg
    if n == 0:
        return {"recall": [None] * max_k, "ndcg": [None] * max_k}
    return {"recall": [v / n for v in recall], "ndcg": [v / n for v in ndcg]}


def _fmt(value: Any) -> str:
    return "–" if not isinstance(value, (int, float)) else f"{value:.3f}"


def _csv(header: list[str], rows: list[list[Any]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow(
            ["" if v is None else (f"{v:.6f}" if isinstance(v, float) else v) for v in row]
        )
    return buf.getvalue()


def _baseline_delta(run: RunSummary, metric: str) -> str:
    entry = (run.comparison or {}).get("metrics", {}).get(metric)
    if not isinstance(entry, dict) or not isinstance(entry.get("delta"), (int, float)):
        return "–"
    return f"{entry['delta']:+.3f} ({entry.get('verdict', '?')})"


def _gates(run: RunSummary) -> str:
    gates = run.gates.get("gates") or []
    if not gates:
        return "none"
    failed = [g.get("name", "?") for g in gates if not g.get("passed")]
    verdict = "passed" if run.gates.get("passed") else "FAILED"
    return verdict + (f" ({', '.join(failed)} failed)" if failed else "")


def _slice_rows(runs: list[RunSummary], metric: str) -> list[list[Any]]:
    rows: list[list[Any]] = []
    for run in runs:
        for field, groups in (run.summary.get("by_slice") or {}).items():
            for value, aggs in groups.items():
                mean = (aggs.get(metric) or {}).get("mean")
                if isinstance(mean, (int, float)):
                    rows.append([f"{run.name} {field}={value}", run.name, field, value, mean])
    return rows


def _svg_lines(title: str, series: dict[str, list[float | None]]) -> str:
    width, height, pad = 420, 220, 36
    ks = max((len(v) for v in series.values()), default=0)
    palette = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")
    parts = [
        f'<svg role="img" aria-label="{html.escape(title)}" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">',
        f'<text x="{pad}" y="16" font-size="13">{html.escape(title)}</text>',
        f'<line x1="{pad}" y1="{height - pad}" x2="{width - 10}" y2="{height - pad}" '
        'stroke="#999"/>',
        f'<line x1="{pad}" y1="24" x2="{pad}" y2="{height - pad}" stroke="#999"/>',
        '<text x="4" y="30" font-size="10">1.0</text>',
        f'<text x="4" y="{height - pad}" font-size="10">0</text>',
    ]

    def xy(i: int, v: float) -> str:
        x = pad + (width - pad - 10) * (i / max(ks - 1, 1))
        y = (height - pad) - (height - pad - 24) * v
        return f"{x:.1f},{y:.1f}"

    for i in range(ks):
        if ks <= 20 or (i + 1) % 5 == 0:
            parts.append(
                f'<text x="{xy(i, 0).split(",")[0]}" y="{height - pad + 14}" font-size="10" '
                f'text-anchor="middle">{i + 1}</text>'
            )
    for n, (name, values) in enumerate(series.items()):
        color = palette[n % len(palette)]
        points = " ".join(xy(i, v) for i, v in enumerate(values) if v is not None)
        if points:
            parts.append(
                f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{points}"/>'
            )
        parts.append(
            f'<text x="{width - 130}" y="{height - pad - 12 - 14 * n}" font-size="11" '
            f'fill="{color}">{html.escape(name)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _markdown(runs: list[RunSummary], headline: list[str], slice_metric: str) -> str:
    lines = ["# Evaluation report", ""]
    lines += [
        "| run | golden set | DVC md5 | queries | " + " | ".join(headline) + " | gates | "
        f"{slice_metric} vs baseline |",
        "|---" * (len(headline) + 6) + "|",
    ]
    for run in runs:
        golden = run.summary.get("golden_set") or {}
        md5 = golden.get("dvc_md5")
        lines.append(
            f"| {run.name} | {golden.get('name', '?')} ({golden.get('content_hash', '?')}) | "
            f"{md5[:12] if isinstance(md5, str) else '–'} | {run.metrics.get('queries', '?')} | "
            + " | ".join(_fmt(run.metrics.get(m)) for m in headline)
            + f" | {_gates(run)} | {_baseline_delta(run, slice_metric)} |"
        )
    rows = _slice_rows(runs, slice_metric)
    if rows:
        lines += ["", f"## {slice_metric} per slice", "", "| run | slice | value | mean |"]
        lines.append("|---|---|---|---|")
        lines += [f"| {r[1]} | {r[2]} | {r[3]} | {r[4]:.3f} |" for r in rows]
    lines += [
        "",
        "Curves: `recall_at_k.csv`, `ndcg_at_k.csv`; slices: `slices.csv` "
        "(`dvc plots diff` draws them across commits).",
    ]
    return "\n".join(lines) + "\n"


_CSS = (
    "body{font-family:system-ui,sans-serif;margin:2em;max-width:70em}"
    "table{border-collapse:collapse;margin:1em 0}"
    "td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left}"
    "th{background:#f3f3f3}.failed{color:#b00}"
)


def _html(runs: list[RunSummary], headline: list[str], slice_metric: str, charts: str) -> str:
    esc = html.escape
    head = ["run", "golden set", "DVC md5", "queries", *headline, "gates", "vs baseline"]
    body = []
    for run in runs:
        golden = run.summary.get("golden_set") or {}
        md5 = golden.get("dvc_md5")
        cells = [
            run.name,
            f"{golden.get('name', '?')} ({golden.get('content_hash', '?')})",
            md5[:12] if isinstance(md5, str) else "–",
            str(run.metrics.get("queries", "?")),
            *(_fmt(run.metrics.get(m)) for m in headline),
            _gates(run),
            _baseline_delta(run, slice_metric),
        ]
        cls = "" if run.gates.get("passed", True) else ' class="failed"'
        body.append(f"<tr{cls}>" + "".join(f"<td>{esc(c)}</td>" for c in cells) + "</tr>")
    slice_rows = "".join(
        f"<tr><td>{esc(r[1])}</td><td>{esc(r[2])}</td><td>{esc(str(r[3]))}</td>"
        f"<td>{r[4]:.3f}</td></tr>"
        for r in _slice_rows(runs, slice_metric)
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>evalframe report</title><style>{_CSS}</style></head><body>"
        "<h1>Evaluation report</h1><table><tr>"
        + "".join(f"<th>{esc(h)}</th>" for h in head)
        + "</tr>"
        + "".join(body)
        + f"</table><h2>Metric@k</h2>{charts}"
        + (
            f"<h2>{esc(slice_metric)} per slice</h2><table><tr><th>run</th><th>slice</th>"
            f"<th>value</th><th>mean</th></tr>{slice_rows}</table>"
            if slice_rows
            else ""
        )
        + "</body></html>\n"
    )


def write_report(
    runs: list[RunSummary], out: Path, *, slice_metric: str = "R@5", max_k: int | None = None
) -> dict[str, Path]:
    """Write the report files for ``runs`` into ``out``; return them by name."""
    depth = max_k or max((int(r.summary.get("depth") or 10) for r in runs), default=10)
    computed = {run.name: curves(run.per_query, depth) for run in runs}
    headline = [m for m in HEADLINE if any(m in r.metrics for r in runs)]
    files: dict[str, Path] = {}
    for kind, filename in (("recall", "recall_at_k.csv"), ("ndcg", "ndcg_at_k.csv")):
        rows = [[k + 1, *(computed[r.name][kind][k] for r in runs)] for k in range(depth)]
        files[kind] = atomic_write(out / filename, _csv(["k", *(r.name for r in runs)], rows))
    files["slices"] = atomic_write(
        out / "slices.csv",
        _csv(["slice", "run", "field", "value", "mean"], _slice_rows(runs, slice_metric)),
    )
    charts = _svg_lines(
        "recall@k", {r.name: computed[r.name]["recall"] for r in runs}
    ) + _svg_lines("nDCG@k", {r.name: computed[r.name]["ndcg"] for r in runs})
    files["markdown"] = atomic_write(out / "report.md", _markdown(runs, headline, slice_metric))
    files["html"] = atomic_write(out / "report.html", _html(runs, headline, slice_metric, charts))
    return files


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="evalframe report",
        description="One self-contained overview (Markdown, HTML, plot CSVs) of several runs.",
    )
    parser.add_argument("runs", nargs="+", type=Path, help="run folders written by evalframe")
    parser.add_argument("--out", type=Path, required=True, help="folder for the report files")
    parser.add_argument(
        "--metric", default="R@5", help="metric for the per-slice bars and baseline delta"
    )
    parser.add_argument("--max-k", type=int, help="last k of the curves (default: the depth)")
    args = parser.parse_args(list(argv))
    runs = [load_run(path) for path in args.runs]
    names = [r.name for r in runs]
    for run in runs:  # results/compare/x and results/x would both be "x"
        if names.count(run.name) > 1:
            run.name = f"{run.path.parent.name}/{run.path.name}"
    files = write_report(runs, args.out, slice_metric=args.metric, max_k=args.max_k)
    print(f"report of {len(runs)} run(s): {files['html']} (also report.md and the plot CSVs)")
    return 0
