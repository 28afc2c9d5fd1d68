"""evalframe: retrieval evaluation that says whether a change is better, worse, or noise.

The public API is small and loaded lazily (PEP 562), so ``import evalframe``
and ``evalframe --help`` stay instant: nothing below is imported until used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    # data model
    "Corpus": "evalframe.types",
    "Document": "evalframe.types",
    "GoldenQuery": "evalframe.types",
    "GoldenSet": "evalframe.types",
    "Ranking": "evalframe.types",
    "Run": "evalframe.types",
    # writing plugins
    "PluginConfig": "evalframe.protocols",
    "PluginContext": "evalframe.protocols",
    "Query": "evalframe.protocols",
    "retriever": "evalframe.registry",
    "dataset": "evalframe.registry",
    "corpus": "evalframe.registry",
    "gate": "evalframe.registry",
    "tracker": "evalframe.registry",
    "metric": "evalframe.metrics",
    "GateResult": "evalframe.results",
    "GateView": "evalframe.results",
    # metrics
    "Metric": "evalframe.metrics",
    "Policies": "evalframe.metrics",
    "evaluate": "evalframe.metrics",
    "parse_metric": "evalframe.metrics",
    # errors
    "ConfigError": "evalframe.errors",
    "DataError": "evalframe.errors",
    "EvalframeError": "evalframe.errors",
    "PluginError": "evalframe.errors",
}

__all__ = [
    "ConfigError",
    "Corpus",
    "DataError",
    "Document",
    "EvalframeError",
    "GateResult",
    "GateView",
    "GoldenQuery",
    "GoldenSet",
    "Metric",
    "PluginConfig",
    "PluginContext",
    "PluginError",
    "Policies",
    "Query",
    "Ranking",
    "Run",
    "__version__",
    "corpus",
    "dataset",
    "evaluate",
    "gate",
    "metric",
    "parse_metric",
    "retriever",
    "tracker",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'evalframe' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # for type checkers and IDEs only; never executed
    from evalframe.errors import ConfigError, DataError, EvalframeError, PluginError
    from evalframe.metrics import Metric, Policies, evaluate, metric, parse_metric
    from evalframe.protocols import PluginConfig, PluginContext, Query
    from evalframe.registry import corpus, dataset, gate, retriever, tracker
    from evalframe.results import GateResult, GateView
    from evalframe.types import Corpus, Document, GoldenQuery, GoldenSet, Ranking, Run
