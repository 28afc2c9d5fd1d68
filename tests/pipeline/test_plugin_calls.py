"""What the pipeline asks of a plugin's constructor, load() and export(), checked where it
calls them (pipeline.run): a wrong signature or return type is the plugin's mistake, said
naming it (exit 2), and what a plugin raises is blamed on it (exit 3, plugin.blame).
Audit 47, findings 12, 13, 14."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from evalframe.core.errors import PluginError
from evalframe.metrics import MetricParams, Policies, ScoreMatrix, evaluate, metric, parse_metric
from evalframe.pipeline.config import validate_experiment
from evalframe.pipeline.run import load_inputs, run_experiment
from evalframe.plugin.blame import culprit
from evalframe.plugin.registry import CORPORA, DATASETS, EXPORTERS, METRICS, RETRIEVERS
from tests.conftest import Project, raw_config


@pytest.fixture
def scoped() -> Iterator[None]:
    with CORPORA.scoped(), DATASETS.scoped(), EXPORTERS.scoped(), RETRIEVERS.scoped():
        yield


def test_a_constructor_without_the_context_is_refused_before_it_is_called(
    project: Project, scoped: None
) -> None:
    class NoContext:
        """Forgets the context argument."""

        def __init__(self, config: Any) -> None:
            raise AssertionError("never called")

    DATASETS.add("t_nocontext", NoContext)
    exp = validate_experiment(raw_config(project, dataset={"name": "t_nocontext"}))
    with pytest.raises(PluginError) as info:
        load_inputs(exp)
    assert info.value.message.startswith(
        f"dataset plugin 't_nocontext' ({__name__}) cannot be called as NoContext(config, "
        "context): its signature is NoContext(config: 'Any') -> 'None' ("
    )
    assert info.value.hint == f"fix the signature in {__name__}"


def test_a_dataset_returning_a_list_is_named(project: Project, scoped: None) -> None:
    class Listing:
        """Returns the queries, not a GoldenSet."""

        def __init__(self, config: Any, context: Any) -> None: ...

        def load(self) -> list[Any]:
            return []

    DATASETS.add("t_list", Listing)
    exp = validate_experiment(raw_config(project, dataset={"name": "t_list"}))
    with pytest.raises(PluginError) as info:
        load_inputs(exp)
    assert info.value.message == (
        f"dataset plugin 't_list' ({__name__}): load() returned list, not a GoldenSet"
    )


def test_what_a_loader_raises_is_blamed_on_it(project: Project, scoped: None) -> None:
    class Raises:
        """Reads a field that is not there."""

        def __init__(self, config: Any, context: Any) -> None: ...

        def load(self) -> Any:
            return {}["query"]

    CORPORA.add("t_raises", Raises)
    exp = validate_experiment(raw_config(project, corpus={"name": "t_raises"}))
    with pytest.raises(KeyError) as info:
        load_inputs(exp)
    assert culprit(info.value) == (f"corpus plugin 't_raises' ({__name__})", "loading")


def test_an_exporter_returning_nothing_is_named(project: Project, scoped: None) -> None:
    class Forgets:
        """Builds its files and forgets to return them."""

        def __init__(self, config: Any, context: Any) -> None: ...

        def export(self, run: Any) -> None:
            {"x.json": "{}"}  # noqa: B018  # the bug: no return

    EXPORTERS.add("t_forgets", Forgets)
    exp = validate_experiment(raw_config(project, exports={"t_forgets": None}))
    with pytest.raises(PluginError) as info:
        run_experiment(exp, progress=False)
    assert info.value.message == (
        f"exporter 't_forgets' ({__name__}) returned NoneType from export()"
    )
    assert not (project.root / "out" / "x.json").exists()


def test_a_kernel_returning_text_is_named_and_one_that_raises_is_blamed() -> None:
    qrels, run = {"q1": {"a": 1}}, {"q1": [("a", 1.0)]}
    with METRICS.scoped():

        @metric("TestText", params=MetricParams, k="none", bounds=(0.0, 1.0))
        def text(m: ScoreMatrix, k: None, p: MetricParams) -> Any:
            """The label of the first document, as text."""
            return ["n/a"] * len(m.query_ids)

        @metric("TestRaises", params=MetricParams, k="none", bounds=(0.0, 1.0))
        def raises(m: ScoreMatrix, k: None, p: MetricParams) -> np.ndarray:
            """Reads an attribute the matrix does not have."""
            return m.n_skipped  # type: ignore[attr-defined,no-any-return]

        with pytest.raises(PluginError) as info:
            evaluate([parse_metric("TestText")], qrels, run, Policies())
        with pytest.raises(AttributeError) as crash:
            evaluate([parse_metric("TestRaises")], qrels, run, Policies())
    assert info.value.message.startswith(
        f"metric 'TestText' ({__name__}) returned values that are not numbers ("
    )
    assert culprit(crash.value) == (
        f"metric plugin 'TestRaises' ({__name__})",
        "computing 'TestRaises'",
    )
