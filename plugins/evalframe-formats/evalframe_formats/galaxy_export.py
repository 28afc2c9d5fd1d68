"""A finished run in the Galaxy tool-recommendation evaluator's own formats (reference 003).

Two exporters, so that a team's old evaluator and evalframe can run side by side:

* ``galaxy`` writes what ``evaluate_recommendations.py`` prints, keyed by k
  with a count::

      {"1": {"hit": 0.52, "mrr": 0.52, "ndcg": 0.52}, ..., "count": {"queries": 1234}}

  from the run's per-query ``Hit@k``, ``RR@k`` and ``nDCG@k`` (checked to be
  computed before anything runs), averaged as the evaluator averages them and
  printed with ``indent=2`` as it prints them.
  The numbers are Galaxy's when the run used Galaxy's policies
  (``metrics=galaxy``: no gold scores 0, a query without predictions is left
  out of the means and the count, duplicates keep the first, the list is
  scored as given).
* ``galaxy_predictions`` writes each ranking as the predictions JSONL that
  ``generate_llm_predictions.py`` writes, ``{"id", "predictions": [...]}``,
  in the order scored, with the ids as scored (after the dataset's
  normalisers, which leave a normalised id alone): Galaxy's evaluator, with
  ``--normalize-tools`` when the run normalised, gives the same numbers on it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping

from pydantic import Field, field_validator

from evalframe.plugin.protocols import ExportInput, PluginConfig, PluginContext
from evalframe.plugin.registry import exporter

__all__ = [
    "GalaxyEvalExport",
    "GalaxyEvalExportConfig",
    "GalaxyPredictionsExport",
    "GalaxyPredictionsExportConfig",
]


class GalaxyEvalExportConfig(PluginConfig):
    """The cut-offs (Galaxy's --k) and the file name."""

    ks: list[int] = Field(
        default_factory=lambda: [1, 3, 5, 10],
        min_length=1,
        description="cut-offs k, in the order Galaxy's --k lists them (--k 1,3,5,10)",
    )
    file: str = Field("galaxy_eval.json", description="file written into the run folder")

    @field_validator("ks")
    @classmethod
    def _positive_and_unique(cls, ks: list[int]) -> list[int]:
        if any(k < 1 for k in ks):
            raise ValueError(f"every k must be at least 1 (got {ks})")
        if len(set(ks)) != len(ks):
            raise ValueError(f"each k once (got {ks}): the output is keyed by k")
        return ks


#: Galaxy's name for each of its metrics -> evalframe's canonical metric at k.
METRICS = {"hit": "Hit@{k}", "mrr": "RR@{k}", "ndcg": "nDCG@{k}"}


@exporter("galaxy", config=GalaxyEvalExportConfig)
class GalaxyEvalExport:
    """Galaxy's evaluator output: {"<k>": {"hit", "mrr", "ndcg"}, ..., "count": {"queries": N}}."""

    def __init__(self, config: GalaxyEvalExportConfig, context: PluginContext) -> None:
        self.config = config

    def required_metrics(self) -> list[str]:
        return [m.format(k=k) for k in self.config.ks for m in METRICS.values()]

    def export(self, run: ExportInput) -> Mapping[str, str]:
        # The queries the means are over: under Galaxy's policies, every golden query with
        # a predictions line (the evaluator skips the others); a policy that leaves more
        # out (no_relevant: skip) gives a smaller count, so the file says what it averages.
        first = METRICS["hit"].format(k=self.config.ks[0])
        rows = [
            run.per_query[q.id]
            for q in run.golden
            if q.id in run.per_query and not math.isnan(run.per_query[q.id][first])
        ]
        out: dict[str, object] = {
            str(k): {name: _mean(rows, m.format(k=k)) for name, m in METRICS.items()}
            for k in self.config.ks
        }
        if rows:  # with nothing to average Galaxy prints zeros and no count
            out["count"] = {"queries": len(rows)}
        return {self.config.file: json.dumps(out, indent=2) + "\n"}


def _mean(rows: list[Mapping[str, float]], metric: str) -> float:
    """The per-query values summed one by one in the gold file's order, then divided, as
    the evaluator does: the same digits to the last bit (a pairwise or numpy sum can end
    one unit in the last place away)."""
    total = 0.0
    for row in rows:
        total += row[metric]
    return total / len(rows) if rows else 0.0


class GalaxyPredictionsExportConfig(PluginConfig):
    """The file name."""

    file: str = Field("galaxy_predictions.jsonl", description="file written into the run folder")


@exporter("galaxy_predictions", config=GalaxyPredictionsExportConfig)
class GalaxyPredictionsExport:
    """Each ranking as Galaxy's predictions JSONL ({"id", "predictions"}), ids as scored."""

    def __init__(self, config: GalaxyPredictionsExportConfig, context: PluginContext) -> None:
        self.config = config

    def export(self, run: ExportInput) -> Mapping[str, str]:
        # golden order first, then any ranking beyond the golden set (a rescored run file);
        # a query the run has no ranking for gets no line, so Galaxy's evaluator skips it too
        golden = [q.id for q in run.golden]
        known = set(golden)
        order = [*golden, *(qid for qid in run.run.rankings if qid not in known)]
        lines = [
            json.dumps(
                {"id": qid, "predictions": list(run.run.rankings[qid].doc_ids)},
                ensure_ascii=False,
            )
            for qid in order
            if qid in run.run.rankings
        ]
        return {self.config.file: "".join(line + "\n" for line in lines)}
