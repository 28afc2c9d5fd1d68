"""Contract test suites for every kind of plugin: a plugin's tests subclass one.

A contract is written as a spec: each test is one rule, and a failure names
the plugin and the rule it broke. Subclass the suite for your plugin's kind,
set ``plugin_name`` (the registered name) and provide the fixture it asks for:

=========================  =====================  ==================================
suite                      kind                   fixtures
=========================  =====================  ==================================
``RetrieverContract``      retriever              ``retriever``, ``queries``
``DatasetLoaderContract``  dataset (golden set)   ``loader``
``CorpusLoaderContract``   corpus                 ``loader``
``GateContract``           gate                   ``gate`` (``view`` optional)
``MetricContract``         metric                 none (``measures`` optional)
``TrackerContract``        tracker                ``tracker``
``ExporterContract`` ...   mining and build roles see :mod:`evalframe.plugin.testing`
=========================  =====================  ==================================

The suites for retrievers, corpora and the mining and build roles live in
:mod:`evalframe.plugin.testing` (they need only the plugin layer) and are
re-exported here; the gate and metric suites score a small run, so they sit
above the metrics and the aggregates. This package imports pytest: import it
from tests only.
"""

from evalframe.plugin.testing import (
    AdversaryContract,
    AuthorContract,
    CorpusLoaderContract,
    ExporterContract,
    JudgeContract,
    OracleContract,
    PluginContract,
    RetrieverContract,
    SolverContract,
    ValidatorContract,
)
from evalframe.testing.dataset import DatasetLoaderContract
from evalframe.testing.gate import GateContract
from evalframe.testing.metric import MetricContract
from evalframe.testing.tracker import TrackerContract

__all__ = [
    "AdversaryContract",
    "AuthorContract",
    "CorpusLoaderContract",
    "DatasetLoaderContract",
    "ExporterContract",
    "GateContract",
    "JudgeContract",
    "MetricContract",
    "OracleContract",
    "PluginContract",
    "RetrieverContract",
    "SolverContract",
    "TrackerContract",
    "ValidatorContract",
]
