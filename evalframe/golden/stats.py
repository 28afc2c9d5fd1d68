"""What a golden set holds: counts per slice, judgments per query, labels."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from evalframe.core.types import GoldenSet
from evalframe.golden.checks import label_histogram

__all__ = ["KNOWN_SLICES", "compute_stats", "render_stats"]

#: Shown even when :meth:`GoldenSet.slice_fields` would not call them slices
#: (a four-query set with four categories is still worth counting).
KNOWN_SLICES = ("domain", "task_type", "difficulty", "category")


def _spread(values: Iterable[int]) -> dict[str, float]:
    vals = list(values)
    if not vals:
        return {"min": 0, "mean": 0.0, "max": 0}
    return {"min": min(vals), "mean": round(sum(vals) / len(vals), 3), "max": max(vals)}


def compute_stats(golden: GoldenSet) -> dict[str, Any]:
    """A JSON-ready summary of ``golden``.

    ``slices`` maps each slice field (the known ones present, then
    :meth:`GoldenSet.slice_fields`) to ``{value: {"queries": n, "negatives": m}}``,
    most frequent first; queries without the field count under ``"(none)"``.
    """
    fields = [f for f in KNOWN_SLICES if any(f in q.metadata for q in golden.queries)]
    fields += [f for f in golden.slice_fields() if f not in fields]
    slices: dict[str, dict[str, dict[str, int]]] = {}
    for name in fields:
        counts: Counter[str] = Counter()
        negatives: Counter[str] = Counter()
        for q in golden.queries:
            value = str(q.metadata.get(name, "(none)"))
            counts[value] += 1
            negatives[value] += q.is_negative
        order = sorted(counts, key=lambda v: (-counts[v], v))
        slices[name] = {v: {"queries": counts[v], "negatives": negatives[v]} for v in order}
    views = sorted({v for q in golden.queries for v in q.views})
    return {
        "name": golden.name,
        "content_hash": golden.content_hash,
        "queries": len(golden),
        "negatives": sum(q.is_negative for q in golden.queries),
        "slices": slices,
        "judgments_per_query": _spread(len(q.judgments) for q in golden.queries),
        "relevant_per_query": _spread(len(q.relevant) for q in golden.queries),
        "labels": {str(k): v for k, v in label_histogram(golden).items()},
        "views": {v: _spread(len(q.views.get(v, {})) for q in golden.queries) for v in views},
    }


def render_stats(stats: dict[str, Any]) -> str:
    """The summary as aligned plain-text tables."""
    lines = [
        f"golden set {stats['name']} ({stats['content_hash']})",
        f"  queries: {stats['queries']}   negative examples: {stats['negatives']}",
        "",
    ]

    def spread(label: str, s: dict[str, float]) -> str:
        return f"  {label:<24} min {s['min']:<4} mean {s['mean']:<7} max {s['max']}"

    lines.append(spread("judgments per query", stats["judgments_per_query"]))
    lines.append(spread("relevant per query", stats["relevant_per_query"]))
    for view, s in stats["views"].items():
        lines.append(spread(f"{view} (view) per query", s))
    labels = stats["labels"]
    lines.append(
        "  labels: " + (", ".join(f"{k}: {v}" for k, v in labels.items()) or "(no judgments)")
    )
    total = max(stats["queries"], 1)
    for name, counts in stats["slices"].items():
        width = max(len(name), *(len(v) for v in counts))
        lines += ["", f"  {name:<{width}}  queries  share  negatives"]
        for value, c in counts.items():
            n = c["queries"]
            lines.append(f"  {value:<{width}}  {n:>7}  {n / total:5.0%}  {c['negatives']:>9}")
    return "\n".join(lines)
