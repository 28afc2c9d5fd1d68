"""The Galaxy tool-recommendation evaluator's formulas (reference 003), as a test oracle.

Written from the reference's definitions, independently of evalframe's metric
engine, so that evalframe's numbers can be checked against them:

- Hit@k: 1 if any gold tool is among the first k predictions, else 0;
- MRR@k: 1 / the rank of the first gold tool within the first k, else 0;
- nDCG@k: binary gains, DCG = sum of 1/log2(rank + 1) over gold tools in the
  first k, divided by the ideal DCG of min(|gold|, k) gold tools at ranks 1..;
- several gold tools: any of them is relevant (a set, each counted once);
- a query with no gold tools contributes 0 to every metric;
- predictions are de-duplicated in order (the first occurrence stays) before scoring;
- ``--normalize-tools`` drops the version, the last segment, of a Tool Shed id
  ``toolshed.g2.bx.psu.edu/repos/<owner>/<repo>/<tool>/<version>``, on gold and
  predictions alike; an id that has no version segment is not cut further;
- a gold query the predictions file has no line for is not scored: it is left
  out of the means and of ``count.queries`` (an empty list is scored, 0).

The output is the evaluator's JSON: ``{"<k>": {"hit", "mrr", "ndcg"}, ...,
"count": {"queries": N}}``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

TOOLSHED = "toolshed.g2.bx.psu.edu/"


def normalize(tool_id: str) -> str:
    parts = tool_id.split("/")
    if tool_id.startswith(TOOLSHED) and parts[1:2] == ["repos"] and len(parts) >= 6:
        return "/".join(parts[:-1])
    return tool_id


def first_occurrences(ids: Iterable[str]) -> list[str]:
    out: list[str] = []
    for i in ids:
        if i not in out:
            out.append(i)
    return out


def hit(preds: Sequence[str], gold: set[str], k: int) -> float:
    return float(bool(gold) and any(p in gold for p in preds[:k]))


def mrr(preds: Sequence[str], gold: set[str], k: int) -> float:
    for rank, p in enumerate(preds[:k], start=1):
        if p in gold:
            return 1.0 / rank
    return 0.0


def ndcg(preds: Sequence[str], gold: set[str], k: int) -> float:
    if not gold:
        return 0.0
    dcg = sum(1.0 / math.log2(rank + 1) for rank, p in enumerate(preds[:k], 1) if p in gold)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(gold), k) + 1))
    return dcg / ideal


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def evaluate(
    gold_path: Path,
    predictions_path: Path,
    ks: Sequence[int] = (1, 3, 5, 10),
    *,
    normalize_tools: bool = True,
) -> dict[str, Any]:
    """The evaluator's output for a gold file and a predictions file."""
    fix = normalize if normalize_tools else (lambda t: t)
    gold = {str(r["id"]): {fix(t) for t in r["tools"]} for r in read_jsonl(gold_path)}
    preds = {
        str(r["id"]): first_occurrences(fix(t) for t in r["predictions"])
        for r in read_jsonl(predictions_path)
    }
    scored = [qid for qid in gold if qid in preds]
    out: dict[str, Any] = {}
    for k in ks:
        out[str(k)] = {
            name: sum(fn(preds[q], gold[q], k) for q in scored) / len(scored)
            for name, fn in (("hit", hit), ("mrr", mrr), ("ndcg", ndcg))
        }
    out["count"] = {"queries": len(scored)}
    return out
