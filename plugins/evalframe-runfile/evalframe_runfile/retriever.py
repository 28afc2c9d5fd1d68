"""Rankings from a stored run file, so any system's output can be evaluated."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from evalframe.io import read_trec_run
from evalframe.metrics.engine import trec_order
from evalframe.protocols import PluginConfig, PluginContext, Query
from evalframe.registry import retriever
from evalframe.types import Ranking


class RunFileConfig(PluginConfig):
    """Which file holds the run, and in what format."""

    path: str = Field(description="the run file")
    format: Literal["trec"] = Field("trec", description="file format (TREC: 6 columns)")


@retriever("run_file", config=RunFileConfig)
class RunFileRetriever:
    """Reads a TREC run file; a query absent from it is reported missing, not empty."""

    #: Reading the file is the retrieval: nothing to save by caching it.
    cacheable = False

    def __init__(self, config: RunFileConfig, context: PluginContext) -> None:
        self.config = config
        self.run = read_trec_run(config.path, key="retriever.path")

    def retrieve(self, query: Query, k: int) -> Ranking | None:
        ranking = self.run.rankings.get(query.id)
        if ranking is None:
            return None  # the pipeline applies the missing-query policy
        top = trec_order(ranking.pairs())[:k]
        return Ranking.from_pairs(query.id, top)
