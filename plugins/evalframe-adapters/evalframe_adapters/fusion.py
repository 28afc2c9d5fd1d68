"""Fuse the rankings of several retrievers configured inline.

::

    retriever:
      name: fusion
      method: rrf
      retrievers:
        sparse: {name: bm25}
        dense:  {name: http, url: "http://localhost:8000/search"}

Each component is validated like a top-level retriever (errors name
``retriever.retrievers.<name>``) and built with the run's corpus and cache
directory. Per query, with ``rank`` starting at 1 and ``w`` the component's
weight (default 1):

* ``rrf``: ``sum(w / (rrf_k + rank))`` (Cormack et al. 2009);
* ``combsum``: ``sum(w * s)`` with ``s`` the score after ``normalise``;
* ``combmnz``: combsum times the number of components that returned the doc;
* ``weighted``: combsum with explicit ``weights`` (required).

``normalise`` (``minmax`` by default; ignored by rrf) rescales each
component's scores per query: ``minmax`` to ``(s - min) / (max - min)`` (all
1.0 when every score is equal), ``zscore`` to ``(s - mean) / std``
(population std; all 0.0 when it is 0). Each component returns ``depth``
documents (default: ``k``); a larger depth lets a document that one component
ranks low still be found. Ties are broken as trec_eval does (doc id descending).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from evalframe.core.errors import PluginError
from evalframe.core.types import Ranking
from evalframe.metrics.engine import trec_order
from evalframe.plugin.protocols import PluginConfig, PluginContext, Query, Retriever
from evalframe.plugin.registry import RETRIEVERS, configure, retriever
from evalframe.retrieval.retrieve import ask_all

__all__ = ["FusionConfig", "FusionRetriever", "fuse", "normalise_scores"]


class FusionConfig(PluginConfig):
    """The component retrievers, how to combine them, and how deep each one goes."""

    retrievers: dict[str, dict[str, Any]] = Field(
        description="component name -> retriever config ({name: bm25, ...}), as under retriever"
    )
    method: Literal["rrf", "combsum", "combmnz", "weighted"] = Field(
        "rrf",
        description="rrf: sum w/(rrf_k+rank); combsum/weighted: sum w*score; "
        "combmnz: combsum times the number of components that found the doc",
    )
    rrf_k: float = Field(60.0, ge=0, description="the constant in 1/(rrf_k + rank)")
    weights: dict[str, float] = Field(
        default_factory=dict, description="component name -> weight (default 1)"
    )
    normalise: Literal["none", "minmax", "zscore"] = Field(
        "minmax", description="per-query score normalisation before combining (not for rrf)"
    )
    depth: int | dict[str, int] | None = Field(
        None,
        description="documents asked of each component: one number, or per component (default: k)",
    )

    @field_validator("weights", mode="before")
    @classmethod
    def _null_is_empty(cls, value: Any) -> Any:
        return {} if value is None else value  # YAML null: a Hydra override replaces, not merges

    @model_validator(mode="after")
    def _consistent(self) -> FusionConfig:
        if not self.retrievers:
            raise ValueError("retrievers must name at least one component")
        for name, node in self.retrievers.items():
            if not isinstance(node.get("name"), str) or not node["name"]:
                raise ValueError(f"component {name!r} needs a name: the retriever plugin to use")
        unknown = sorted(set(self.weights) - set(self.retrievers))
        if unknown:
            raise ValueError(f"weights for unknown components: {', '.join(unknown)}")
        if self.method == "weighted" and not self.weights:
            raise ValueError("method weighted needs weights: {component: weight}")
        if isinstance(self.depth, dict):
            unknown = sorted(set(self.depth) - set(self.retrievers))
            if unknown:
                raise ValueError(f"depth for unknown components: {', '.join(unknown)}")
        depths = self.depth.values() if isinstance(self.depth, dict) else [self.depth]
        if any(d is not None and d < 1 for d in depths):
            raise ValueError("depth must be at least 1")
        return self


def normalise_scores(scores: Sequence[float], how: str) -> list[float]:
    """One component's scores for one query, rescaled (see the module docstring)."""
    if how == "none" or not scores:
        return list(scores)
    if how == "minmax":
        lo, hi = min(scores), max(scores)
        if hi == lo:
            return [1.0] * len(scores)
        return [(s - lo) / (hi - lo) for s in scores]
    mean = sum(scores) / len(scores)
    std = math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores))
    if std == 0:
        return [0.0] * len(scores)
    return [(s - mean) / std for s in scores]


def fuse(
    rankings: Sequence[tuple[Sequence[tuple[str, float]], float]],
    method: str,
    *,
    rrf_k: float = 60.0,
    normalise: str = "minmax",
) -> list[tuple[str, float]]:
    """Fused ``(doc, score)`` pairs, best first, from ``(pairs, weight)`` per component."""
    total: dict[str, float] = {}
    hits: dict[str, int] = {}
    for pairs, weight in rankings:
        if method == "rrf":
            contributions = [weight / (rrf_k + rank) for rank in range(1, len(pairs) + 1)]
        else:
            scaled = normalise_scores([s for _, s in pairs], normalise)
            contributions = [weight * s for s in scaled]
        for (doc, _), value in zip(pairs, contributions, strict=True):
            total[doc] = total.get(doc, 0.0) + value
            hits[doc] = hits.get(doc, 0) + 1
    if method == "combmnz":
        total = {doc: value * hits[doc] for doc, value in total.items()}
    return trec_order(list(total.items()), "float64")


@retriever("fusion", config=FusionConfig)
class FusionRetriever:
    """Combines several retrievers' rankings (RRF, CombSUM, CombMNZ or weighted sum)."""

    #: A component may be uncacheable (a python function that changes while its
    #: config does not), and fusing is cheap: never cache the fused ranking.
    cacheable = False

    def __init__(self, config: FusionConfig, context: PluginContext) -> None:
        self.config = config
        self.components: dict[str, Retriever] = {}
        for name, node in config.retrievers.items():
            key = f"retriever.retrievers.{name}"
            params = dict(node)
            plugin = params.pop("name")
            spec = RETRIEVERS.get(plugin, key=f"{key}.name")
            settings = configure(spec, params, key=key)
            instance = spec.obj(settings, replace(context, config_key=key))
            if not isinstance(instance, Retriever):
                raise PluginError(
                    f"component {name!r} ({plugin}) does not satisfy the Retriever protocol",
                    key=key,
                )
            self.components[name] = instance

    def _depth(self, name: str, k: int) -> int:
        depth = self.config.depth
        if isinstance(depth, dict):
            return depth.get(name) or k
        return depth or k

    def retrieve(self, query: Query, k: int) -> Ranking | None:
        """The fused ranking; None only if every component had no answer."""
        return self.retrieve_batch([query], k)[0]

    def retrieve_batch(self, queries: Sequence[Query], k: int) -> list[Ranking | None]:
        """Each component answers all ``queries`` the way the pipeline would drive it
        (in batches, or from its ``max_concurrency`` threads), then each query is fused."""
        answers: dict[str, list[Ranking | None]] = {}
        for name, component in self.components.items():
            got: list[Ranking | None] = [None] * len(queries)
            label = f"{self.config.retrievers[name]['name']} (fusion component {name})"
            for group in ask_all(component, queries, self._depth(name, k), name=label):
                for i, ranking, _ in group:
                    got[i] = ranking
            answers[name] = got
        return [
            self._fuse(q, {n: a[i] for n, a in answers.items()}, k) for i, q in enumerate(queries)
        ]

    def _fuse(self, query: Query, rankings: dict[str, Ranking | None], k: int) -> Ranking | None:
        parts: list[tuple[list[tuple[str, float]], float]] = []
        for name, ranking in rankings.items():
            if ranking is None:
                continue
            depth = self._depth(name, k)
            pairs = trec_order(ranking.pairs())[:depth]  # rank as the engine would
            parts.append((pairs, self.config.weights.get(name, 1.0)))
        if not parts:
            return None
        fused = fuse(
            parts, self.config.method, rrf_k=self.config.rrf_k, normalise=self.config.normalise
        )
        return Ranking.from_pairs(query.id, fused[:k])
