"""KnowCode's evaluation-script JSON, written beside a run (``exports: {knowcode: {}}``).

KnowCode's ``scripts/evaluate.py`` prints, per the reference (§3, "JSON Output
Schema"):

- ``queries``: the number of evaluated queries;
- ``precision_at_1``, ``precision_at_5``, ``recall_at_10``, ``mrr``: the means;
- ``results``: per query, its id, MRR, precision@1, the expected entities and
  the top 5 retrieved entities.

The reference names the aggregate keys but describes the per-query ones in
prose; this exporter spells them ``query_id``, ``mrr``, ``precision_at_1``,
``expected_entities`` and ``top_5``, in that order, so a team's scripts that
read KnowCode's output can read this file. The numbers are evalframe's own
(P@1, P@5, R@10 and RR of the run, under the run's policies), never recomputed
here. The top 5 are the first five entities in rank order under the ``given``
tie rule (score descending, equal scores in the order the retriever returned
them), which is KnowCode's order and the order ``metrics=knowcode`` scores.
A value a policy left out (NaN) is written as ``null``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from evalframe.metrics.order import rank_order
from evalframe.plugin.protocols import ExportInput, PluginConfig, PluginContext
from evalframe.plugin.registry import exporter

__all__ = ["KnowCodeExportConfig", "KnowCodeExporter", "knowcode_output"]

#: KnowCode's aggregate keys -> the evalframe metric each one is
AGGREGATES = {"precision_at_1": "P@1", "precision_at_5": "P@5", "recall_at_10": "R@10", "mrr": "RR"}


class KnowCodeExportConfig(PluginConfig):
    """The file name and how many retrieved entities each query lists."""

    file: str = Field(
        "knowcode_evaluation.json", min_length=1, description="file in the run folder"
    )
    top_k: int = Field(5, ge=1, description="retrieved entities listed per query (KnowCode: 5)")


def _number(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def knowcode_output(run: ExportInput, top_k: int = 5) -> dict[str, Any]:
    """The evaluation script's JSON document for a finished run."""
    results = []
    for query in run.golden.queries:
        values: Mapping[str, float] = run.per_query.get(query.id, {})
        ranking = run.run.rankings.get(query.id)
        ordered = rank_order(ranking.pairs(), ties="given") if ranking is not None else []
        results.append(
            {
                "query_id": query.id,
                "mrr": _number(values.get("RR")),
                "precision_at_1": _number(values.get("P@1")),
                "expected_entities": list(query.judgments),
                "top_5" if top_k == 5 else f"top_{top_k}": [doc for doc, _ in ordered[:top_k]],
            }
        )
    out: dict[str, Any] = {"queries": len(results)}
    out.update({key: _number(run.means.get(metric)) for key, metric in AGGREGATES.items()})
    out["results"] = results
    return out


@exporter("knowcode", config=KnowCodeExportConfig)
@dataclass(eq=False)
class KnowCodeExporter:
    """KnowCode's evaluate.py JSON: P@1, P@5, R@10, MRR, and per query the top 5 entities."""

    config: KnowCodeExportConfig
    context: PluginContext

    def required_metrics(self) -> list[str]:
        return list(AGGREGATES.values())

    def export(self, run: ExportInput) -> dict[str, str]:
        body = knowcode_output(run, self.config.top_k)
        return {self.config.file: json.dumps(body, indent=2, ensure_ascii=False) + "\n"}
