"""B.O.B's metric formulas, re-implemented from its reference (``000_*``), as a test oracle.

These are the reference's ``recall_at_k``, ``precision_at_k`` and ``mrr``
(written here from its formulas, not from evalframe) and the aggregate its
``evaluate_golden_set`` saves. Each scores the retrieved list in the order it
is given: ``for i, chunk_id in enumerate(retrieved, 1)``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from statistics import mean, stdev
from typing import Any


def recall_at_k(expected: Sequence[object], retrieved: Sequence[object], k: int) -> float:
    """|relevant ∩ retrieved@k| / |relevant|; an empty expected set is trivially satisfied."""
    if not expected:
        return 1.0
    return len(set(expected) & set(retrieved[:k])) / len(expected)


def precision_at_k(expected: Sequence[object], retrieved: Sequence[object], k: int) -> float:
    """|relevant ∩ retrieved@k| / k."""
    return len(set(expected) & set(retrieved[:k])) / k


def mrr(expected: Sequence[object], retrieved: Sequence[object]) -> float:
    """1 / rank of the first relevant chunk in the list, 0 if none."""
    wanted = set(expected)
    for i, chunk_id in enumerate(retrieved, 1):
        if chunk_id in wanted:
            return 1.0 / i
    return 0.0


def evaluate_golden_set(
    golden: Sequence[Mapping[str, Any]],
    search_fn: Callable[[Mapping[str, Any]], Sequence[object]],
    k: int = 5,
) -> dict[str, Any]:
    """B.O.B's EvalResults as a dict: the three means and the per-query values."""
    results = []
    for example in golden:
        retrieved = search_fn(example)
        results.append(
            {
                "id": example["id"],
                "recall": recall_at_k(example["expected_chunks"], retrieved, k),
                "precision": precision_at_k(example["expected_chunks"], retrieved, k),
                "mrr": mrr(example["expected_chunks"], retrieved),
            }
        )
    return {
        "recall_mean": mean(r["recall"] for r in results),
        "precision_mean": mean(r["precision"] for r in results),
        "mrr_mean": mean(r["mrr"] for r in results),
        "recall_std": stdev(r["recall"] for r in results),
        "precision_std": stdev(r["precision"] for r in results),
        "mrr_std": stdev(r["mrr"] for r in results),
        "per_query": results,
    }


def read_golden(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
