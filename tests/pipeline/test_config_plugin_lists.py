"""A plugin method that returns a list (a gate's ``required_metrics()`` and
``required_analyses()``, a retriever's ``notes()``) is refused when it returns a str:
iterated, the str became one metric or one warning per character (audit 47, 16 and 17)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from evalframe.assess.results import GateResult, GateView
from evalframe.core.errors import ConfigError, PluginError
from evalframe.core.types import Ranking
from evalframe.pipeline.config import validate_experiment
from evalframe.pipeline.run import load_inputs, retrieve_run
from evalframe.plugin.protocols import PluginConfig, Query
from evalframe.plugin.registry import GATES, RETRIEVERS, gate, retriever
from tests.conftest import Project, raw_config


class FloorConfig(PluginConfig):
    metric: str = "RR"


class Floor:
    """A mean above 0.5; what its ``required_*`` methods return is set per test."""

    metrics: Any = ["RR"]
    analyses: Any = []

    def __init__(self, config: FloorConfig, context: Any) -> None:
        self.config = config

    def required_metrics(self) -> Any:
        return type(self).metrics

    def required_analyses(self) -> Any:
        return type(self).analyses

    def evaluate(self, view: GateView) -> GateResult:
        mean = view.aggregate(self.config.metric).mean
        return GateResult(name="", type="", passed=bool(mean >= 0.5), required=True, message="")


@pytest.fixture
def floor() -> Iterator[type[Floor]]:
    with GATES.scoped():
        gate("t_floor", config=FloorConfig)(Floor)
        yield Floor
    Floor.metrics, Floor.analyses = ["RR"], []


def _validate(project: Project) -> Any:
    gates = {"floor": {"type": "t_floor", "metric": "nDCG@10"}}
    return validate_experiment(raw_config(project, gates=gates))


def test_required_metrics_returning_a_str_names_the_gate_plugin_and_method(
    project: Project, floor: type[Floor]
) -> None:
    floor.metrics = "nDCG@10"
    with pytest.raises(PluginError) as info:
        _validate(project)
    err = info.value
    assert err.message == (
        f"gate plugin 't_floor' ({__name__}): required_metrics() returned the str 'nDCG@10'; "
        "it must return a list of metric strings, e.g. ['nDCG@10']"
    )
    assert err.key == "gates.floor"
    assert err.hint == f"fix required_metrics() in {__name__}"


def test_required_metrics_returning_another_type_is_refused_too(
    project: Project, floor: type[Floor]
) -> None:
    floor.metrics = None
    with pytest.raises(PluginError, match=r"required_metrics\(\) returned NoneType None; it must"):
        _validate(project)


def test_required_analyses_returning_a_str_is_refused(project: Project, floor: type[Floor]) -> None:
    floor.metrics, floor.analyses = ["nDCG@10"], "ece"
    with pytest.raises(PluginError) as info:
        _validate(project)
    assert "required_analyses() returned the str 'ece'" in info.value.message
    assert "a list of analysis value names, e.g. ['ece']" in info.value.message


def test_a_tuple_is_a_list_of_metrics(project: Project, floor: type[Floor]) -> None:
    floor.metrics = ("nDCG@10",)
    exp = _validate(project)
    assert [str(m) for m in exp.metrics] == ["R@5", "RR", "nDCG@10"]  # raw_config's measures


class Noted:
    """Answers every query with nothing; ``notes()`` returns what the test sets."""

    notes_value: Any = []

    def __init__(self, config: Any, context: Any) -> None: ...

    def retrieve(self, query: Query, k: int) -> Ranking:
        return Ranking.from_pairs(query.id, [])

    def notes(self) -> Any:
        return type(self).notes_value


@pytest.fixture
def noted() -> Iterator[type[Noted]]:
    with RETRIEVERS.scoped():
        retriever("t_noted")(Noted)
        yield Noted
    Noted.notes_value = []


def _retrieve(project: Project) -> Any:
    exp = validate_experiment(
        raw_config(project, retriever={"name": "t_noted"}, cache={"retrieval": False})
    )
    inputs = load_inputs(exp)
    return retrieve_run(exp, inputs, inputs.golden, progress=False)


def test_notes_returning_a_str_names_the_retriever_and_method(
    project: Project, noted: type[Noted]
) -> None:
    noted.notes_value = "3 ids dropped"
    with pytest.raises(PluginError) as info:
        _retrieve(project)
    err = info.value
    assert err.message == (
        f"retriever plugin 't_noted' ({__name__}): notes() returned the str '3 ids dropped'; "
        "it must return a list of sentences, e.g. ['3 ids dropped']"
    )
    assert err.key == "retriever"


def test_notes_as_a_list_are_one_warning_each(project: Project, noted: type[Noted]) -> None:
    noted.notes_value = ["3 ids dropped"]
    run = _retrieve(project)
    said = run.metadata["retrieval_warnings"]
    assert len(said) == 1 and "t_noted: 3 ids dropped" in said[0]


@pytest.mark.parametrize(
    ("key", "near"), [("depht", "depth"), ("report.critrion", "criterion"), ("zzz", None)]
)
def test_a_misspelt_key_gets_the_field_it_resembles(
    project: Project, key: str, near: str | None
) -> None:
    """`depht=3` was 'unknown key' alone, where an experiment name or a metric got a guess."""
    raw = raw_config(project)
    section, _, leaf = key.rpartition(".")
    (raw[section] if section else raw)[leaf] = 3  # report: {...} is a mapping already
    with pytest.raises(ConfigError) as err:
        validate_experiment(raw)
    assert err.value.key == key
    guess = f"; did you mean {near!r}?"
    assert (guess in err.value.message) if near else ("did you mean" not in err.value.message)
