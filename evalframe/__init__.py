"""evalframe: retrieval evaluation that says whether a change is better, worse, or noise.

The public API is small and loaded lazily (PEP 562), so ``import evalframe``
and ``evalframe --help`` stay instant: nothing below is imported until used.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    # running, loading and comparing experiments from Python (docs/python-api.md)
    "run": "evalframe.api.runner",
    "load": "evalframe.api.result",
    "compare": "evalframe.api.comparison",
    "Result": "evalframe.api.result",
    "Comparison": "evalframe.api.comparison",
    "Estimate": "evalframe.api.result",
    # data model
    "Corpus": "evalframe.core.types",
    "Document": "evalframe.core.types",
    "GoldenQuery": "evalframe.core.types",
    "GoldenSet": "evalframe.core.types",
    "Ranking": "evalframe.core.types",
    "Run": "evalframe.core.types",
    # writing plugins
    "PluginConfig": "evalframe.plugin.protocols",
    "PluginContext": "evalframe.plugin.protocols",
    "Query": "evalframe.plugin.protocols",
    "retriever": "evalframe.plugin.registry",
    "dataset": "evalframe.plugin.registry",
    "corpus": "evalframe.plugin.registry",
    "gate": "evalframe.plugin.registry",
    "tracker": "evalframe.plugin.registry",
    "metric": "evalframe.metrics",
    "GateResult": "evalframe.assess.results",
    "GateView": "evalframe.assess.results",
    # metrics
    "Metric": "evalframe.metrics",
    "Policies": "evalframe.metrics",
    "evaluate": "evalframe.metrics",
    "parse_metric": "evalframe.metrics",
    # errors
    "ConfigError": "evalframe.core.errors",
    "DataError": "evalframe.core.errors",
    "EvalframeError": "evalframe.core.errors",
    "PluginError": "evalframe.core.errors",
}

__all__ = [
    "Comparison",
    "ConfigError",
    "Corpus",
    "DataError",
    "Document",
    "Estimate",
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
    "Result",
    "Run",
    "__version__",
    "compare",
    "corpus",
    "dataset",
    "evaluate",
    "gate",
    "load",
    "metric",
    "parse_metric",
    "retriever",
    "run",
    "tracker",
]


#: Modules that moved when the core was split into layered subpackages. The old
#: paths stay importable, as the very same module objects, so that third-party
#: plugins written against them keep working (see docs/architecture.md).
#: (``evalframe.testing`` was one; it is a package again, holding every kind's
#: contract suite and re-exporting the plugin layer's as the same objects.)
_MOVED: dict[str, str] = {
    "evalframe.types": "evalframe.core.types",
    "evalframe.errors": "evalframe.core.errors",
    "evalframe.records": "evalframe.core.records",
    "evalframe.io": "evalframe.core.io",
    "evalframe.protocols": "evalframe.plugin.protocols",
    "evalframe.registry": "evalframe.plugin.registry",
    "evalframe.hooks": "evalframe.plugin.hooks",
    "evalframe.results": "evalframe.assess.results",
    "evalframe.stats": "evalframe.assess.stats",
    "evalframe.gates": "evalframe.assess.gates",
    "evalframe.baseline": "evalframe.assess.baseline",
    "evalframe.compare": "evalframe.assess.compare",
    "evalframe.cache": "evalframe.retrieval.cache",
    "evalframe.config": "evalframe.pipeline.config",
}


class _MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports an old module path as the module that now lives at its new path."""

    def find_spec(
        self, fullname: str, path: Any = None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in _MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return importlib.import_module(_MOVED[spec.name])

    def exec_module(self, module: ModuleType) -> None:
        """The module was executed under its new name already."""


if not any(isinstance(f, _MovedModuleFinder) for f in sys.meta_path):
    sys.meta_path.append(_MovedModuleFinder())


class _Package(ModuleType):
    """The ``evalframe`` package: its API functions survive an old module path's import.

    ``evalframe.compare`` is the function that compares runs, and also the old
    path of the module ``evalframe.assess.compare``. Importing a submodule sets
    it as an attribute of its package, which would replace the function for
    the rest of the process; that one assignment is ignored instead. The old
    path still imports (``from evalframe.compare import compare_runs``,
    ``importlib.import_module``); only ``import evalframe.compare as m`` now
    gives the function, so write ``from evalframe.assess import compare as m``.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _EXPORTS and name in _MOVED_NAMES and isinstance(value, ModuleType):
            return
        super().__setattr__(name, value)


#: Package attributes that are both an API name and an old module path.
_MOVED_NAMES = frozenset(old.rpartition(".")[2] for old in _MOVED)
sys.modules[__name__].__class__ = _Package


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
    from evalframe.api.comparison import Comparison, compare
    from evalframe.api.result import Estimate, Result, load
    from evalframe.api.runner import run
    from evalframe.assess.results import GateResult, GateView
    from evalframe.core.errors import ConfigError, DataError, EvalframeError, PluginError
    from evalframe.core.types import Corpus, Document, GoldenQuery, GoldenSet, Ranking, Run
    from evalframe.metrics import Metric, Policies, evaluate, metric, parse_metric
    from evalframe.plugin.protocols import PluginConfig, PluginContext, Query
    from evalframe.plugin.registry import corpus, dataset, gate, retriever, tracker
