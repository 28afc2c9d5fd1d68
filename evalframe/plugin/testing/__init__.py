"""Contract test suites that every plugin's tests subclass.

A contract is written as a spec: each test is one rule, and a failure names
the plugin and the rule it broke. Subclass, set ``plugin_name``, and provide
two fixtures::

    class TestBM25Contract(RetrieverContract):
        plugin_name = "bm25"

        @pytest.fixture
        def retriever(self, tmp_path):
            return BM25Retriever(BM25Config(), PluginContext(corpus=..., cache_dir=tmp_path))

        @pytest.fixture
        def queries(self):
            return [Query(id="q1", text="install"), ...]

This module imports pytest, so import it from tests only.
"""

from evalframe.plugin.testing.base import PluginContract
from evalframe.plugin.testing.corpus import CorpusLoaderContract
from evalframe.plugin.testing.mining import ExporterContract, SolverContract, ValidatorContract
from evalframe.plugin.testing.retrieval import RetrieverContract
from evalframe.plugin.testing.roles import (
    AdversaryContract,
    AuthorContract,
    JudgeContract,
    OracleContract,
)

__all__ = [
    "AdversaryContract",
    "AuthorContract",
    "CorpusLoaderContract",
    "ExporterContract",
    "JudgeContract",
    "OracleContract",
    "PluginContract",
    "RetrieverContract",
    "SolverContract",
    "ValidatorContract",
]
