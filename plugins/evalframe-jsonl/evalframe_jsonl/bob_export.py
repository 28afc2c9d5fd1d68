"""A finished run as B.O.B's own results file, what its ``eval run`` saves (reference 000).

B.O.B's team keeps ``docs/eval/baseline.json`` and its UI's drift page reads
files in that format. evalframe already reads one as a baseline
(``evalframe.assess.bob_results``); this exporter writes one, so the team's
other tools keep working while evalframe runs the evaluation::

    {"k": 5, "golden": "domains@ac56...", "retriever": "bm25",
     "recall_mean": ..., "precision_mean": ..., "mrr_mean": ...,
     "per_query": [{"id": 1001, "recall": 1.0, "precision": 0.2, "mrr": 1.0}, ...]}

``recall``, ``precision`` and ``mrr`` are the run's ``R@k``, ``P@k`` and
``RR`` per query, in the golden set's order; their numbers are B.O.B's when
the run used B.O.B's policies (``metrics=bob``: a negative example's recall is
1.0, the list is scored as returned). An id made of digits is written as a
number, as B.O.B's are. A query a policy left out of a metric (NaN) is left out
of the file, and each mean is the mean of the listed values, summed in order.
No date is written: the same run gives the same bytes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping

from pydantic import Field

from evalframe.plugin.protocols import ExportInput, PluginConfig, PluginContext
from evalframe.plugin.registry import exporter

__all__ = ["BobResultsExport", "BobResultsExportConfig"]


class BobResultsExportConfig(PluginConfig):
    """B.O.B's cutoff and the file name."""

    k: int = Field(5, ge=1, description="the cutoff of recall and precision (B.O.B's k)")
    file: str = Field("bob_results.json", description="file written into the run folder")


#: B.O.B's name for each of its metrics -> evalframe's canonical metric.
METRICS = {"recall": "R@{k}", "precision": "P@{k}", "mrr": "RR"}


@exporter("bob", config=BobResultsExportConfig)
class BobResultsExport:
    """B.O.B's EvalResults JSON: the three means and recall, precision, mrr per query."""

    def __init__(self, config: BobResultsExportConfig, context: PluginContext) -> None:
        self.config = config

    def required_metrics(self) -> list[str]:
        return [m.format(k=self.config.k) for m in METRICS.values()]

    def export(self, run: ExportInput) -> Mapping[str, str]:
        names = {field: m.format(k=self.config.k) for field, m in METRICS.items()}
        rows: list[dict[str, object]] = []
        kept: list[dict[str, float]] = []
        for query in run.golden:
            values = run.per_query.get(query.id)
            if values is None:
                continue
            picked = {field: float(values[name]) for field, name in names.items()}
            if any(math.isnan(v) for v in picked.values()):
                continue
            kept.append(picked)
            rows.append({"id": int(query.id) if query.id.isdigit() else query.id, **picked})
        # what B.O.B's own file says beside its numbers (reference 001's baseline.json):
        # which golden set and which retriever; no date, so the same run gives the same bytes
        retriever = run.run.metadata.get("retriever")
        out: dict[str, object] = {
            "k": self.config.k,
            "golden": f"{run.golden.name}@{run.golden.content_hash}",
            "retriever": str(retriever) if retriever else run.experiment,
        }
        for field in METRICS:
            total = 0.0
            for values in kept:  # summed in order, as B.O.B sums its list
                total += values[field]
            out[f"{field}_mean"] = total / len(kept) if kept else 0.0
        out["per_query"] = rows
        return {self.config.file: json.dumps(out, indent=2) + "\n"}
