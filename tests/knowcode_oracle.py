"""KnowCode's evaluation formulas, re-implemented from its reference (``002_*``), as a test oracle.

Written from the reference's text, not from evalframe: precision@k, recall@k
and MRR on ``expected_entities``, file coverage@k on ``expected_files``
(§10.1 Step I), the JSON its ``scripts/evaluate.py`` prints (§3), and the
six pytest quality assertions (§2). A retrieved list is scored in the order
it is given, as KnowCode scores what its retrieval returns. Two readings
where the reference is silent, both stated in docs/experiments.md:
precision@k divides by k even when fewer than k entities came back, and
file coverage counts each file of the top k once.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from statistics import mean
from typing import Any


def entity_ids(value: Sequence[Any]) -> list[str]:
    return [v["entity_id"] if isinstance(v, dict) else v for v in value]


def precision_at_k(expected: Sequence[str], retrieved: Sequence[str], k: int) -> float:
    return len(set(expected) & set(retrieved[:k])) / k


def recall_at_k(expected: Sequence[str], retrieved: Sequence[str], k: int) -> float:
    return len(set(expected) & set(retrieved[:k])) / len(expected)


def reciprocal_rank(expected: Sequence[str], retrieved: Sequence[str]) -> float:
    for rank, entity in enumerate(retrieved, 1):
        if entity in expected:
            return 1 / rank
    return 0.0


def file_coverage_at_k(files: Sequence[str], retrieved: Sequence[str], k: int) -> float:
    """The fraction of expected files among the files of the top k entities."""
    found = {entity.split("::", 1)[0] for entity in retrieved[:k]}
    return len(set(files) & found) / len(files)


def score_query(record: Mapping[str, Any], retrieved: Sequence[str]) -> dict[str, float]:
    expected = entity_ids(record["expected_entities"])
    return {
        "P@1": precision_at_k(expected, retrieved, 1),
        "P@5": precision_at_k(expected, retrieved, 5),
        "R@10": recall_at_k(expected, retrieved, 10),
        "RR": reciprocal_rank(expected, retrieved),
        "R(view=files)@5": file_coverage_at_k(record["expected_files"], retrieved, 5),
    }


def evaluate(
    golden: Sequence[Mapping[str, Any]], search: Callable[[Mapping[str, Any]], Sequence[str]]
) -> dict[str, Any]:
    """Per-query scores, means overall and per task type and difficulty, and evaluate.py's JSON."""
    per_query: dict[str, dict[str, float]] = {}
    results = []
    for record in golden:
        retrieved = list(search(record))
        scores = score_query(record, retrieved)
        per_query[record["query_id"]] = scores
        results.append(
            {
                "query_id": record["query_id"],
                "mrr": scores["RR"],
                "precision_at_1": scores["P@1"],
                "expected_entities": entity_ids(record["expected_entities"]),
                "top_5": retrieved[:5],
            }
        )
    metrics = list(next(iter(per_query.values())))

    def means(ids: Sequence[str]) -> dict[str, float]:
        return {m: mean(per_query[q][m] for q in ids) for m in metrics}

    slices: dict[str, dict[str, dict[str, float]]] = {}
    for field in ("task_type", "difficulty"):
        groups: dict[str, list[str]] = {}
        for record in golden:
            groups.setdefault(record[field], []).append(record["query_id"])
        slices[field] = {value: means(ids) for value, ids in groups.items()}
    overall = means(list(per_query))
    output = {
        "queries": len(results),
        "precision_at_1": overall["P@1"],
        "precision_at_5": overall["P@5"],
        "recall_at_10": overall["R@10"],
        "mrr": overall["RR"],
        "results": results,
    }
    return {"per_query": per_query, "overall": overall, "slices": slices, "output": output}


def quality_gates(
    golden: Sequence[Mapping[str, Any]], scored: Mapping[str, Any]
) -> dict[str, bool]:
    """KnowCode's pytest assertions (§2), by the names gates=knowcode gives them."""
    overall, per_query = scored["overall"], scored["per_query"]
    by_task = scored["slices"]["task_type"]
    easy = [r["query_id"] for r in golden if r["difficulty"] == "easy"]
    return {
        "mrr": overall["RR"] >= 0.40,
        "recall_at_10": overall["R@10"] >= 0.50,
        "file_coverage_at_5": overall["R(view=files)@5"] >= 0.50,
        "easy_right_at_rank_1": all(per_query[q]["P@1"] == 1.0 for q in easy),
        "locate_mrr": by_task["locate"]["RR"] >= 0.60,
        "no_task_type_blind": all(m["R@10"] > 0 for m in by_task.values()),
    }


def read_golden(path: Path) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    return data


def read_run_in_file_order(path: Path) -> dict[str, list[str]]:
    """``qid Q0 doc rank score tag`` lines, each query's documents in the order written."""
    run: dict[str, list[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        qid, _, doc, *_ = line.split()
        run.setdefault(qid, []).append(doc)
    return run
