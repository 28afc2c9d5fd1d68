"""Metrics: canonical identities (:mod:`.measures`) apart from the engine that computes them."""

from evalframe.metrics.engine import Scores, TieSummary, evaluate
from evalframe.metrics.matrix import ScoreMatrix, build_matrix
from evalframe.metrics.measures import (
    Metric,
    MetricDef,
    MetricParams,
    RelParams,
    bounds_problem,
    metric,
    parse_metric,
    parse_metrics,
    refuse_label,
    threshold_problem,
    tolerance_problem,
)
from evalframe.metrics.policies import Policies, policy_differences, same_policies

__all__ = [
    "Metric",
    "MetricDef",
    "MetricParams",
    "Policies",
    "RelParams",
    "ScoreMatrix",
    "Scores",
    "TieSummary",
    "bounds_problem",
    "build_matrix",
    "evaluate",
    "metric",
    "parse_metric",
    "parse_metrics",
    "policy_differences",
    "refuse_label",
    "same_policies",
    "threshold_problem",
    "tolerance_problem",
]
