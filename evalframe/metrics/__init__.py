"""Metrics: canonical identities (:mod:`.measures`) apart from the engine that computes them."""

from evalframe.metrics.engine import Policies, ScoreMatrix, Scores, build_matrix, evaluate
from evalframe.metrics.measures import (
    Metric,
    MetricDef,
    MetricParams,
    RelParams,
    metric,
    parse_metric,
    parse_metrics,
)

__all__ = [
    "Metric",
    "MetricDef",
    "MetricParams",
    "Policies",
    "RelParams",
    "ScoreMatrix",
    "Scores",
    "build_matrix",
    "evaluate",
    "metric",
    "parse_metric",
    "parse_metrics",
]
