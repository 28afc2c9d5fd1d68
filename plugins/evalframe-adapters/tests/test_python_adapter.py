"""python retriever: the contract, signatures, return shapes, batches and clear errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from evalframe_adapters.python_adapter import PythonConfig, PythonRetriever

from evalframe.core.errors import ConfigError, PluginError
from evalframe.core.types import GoldenQuery, GoldenSet
from evalframe.plugin.protocols import PluginContext, Query
from evalframe.plugin.testing import RetrieverContract
from evalframe.retrieval.retrieve import retrieve_all

USERLAND = str(Path(__file__).parent / "userland")


def make(target: str, **settings: Any) -> PythonRetriever:
    settings.setdefault("python_path", [USERLAND])
    return PythonRetriever(PythonConfig(target=target, **settings), PluginContext())


def ask(r: PythonRetriever, text: str = "cats and dogs", k: int = 5, qid: str = "q1") -> Any:
    ranking = r.retrieve(Query(id=qid, text=text), k)
    return ranking if ranking is None else ranking.pairs()


class TestPythonContract(RetrieverContract):
    plugin_name = "python"

    @pytest.fixture
    def retriever(self) -> PythonRetriever:
        return make("efa_sample:search")

    @pytest.fixture
    def queries(self) -> list[Query]:
        return [Query(id="q1", text="cats"), Query(id="q2", text="dogs and fish")]


class TestPythonBatchContract(TestPythonContract):
    """``batch: true``: a batch retriever for the pipeline."""

    @pytest.fixture
    def retriever(self) -> PythonRetriever:
        return make("efa_sample:counted_batch", batch=True)


class TestPythonConcurrentContract(TestPythonContract):
    """``max_concurrency: 4``: called from four threads."""

    @pytest.fixture
    def retriever(self) -> PythonRetriever:
        return make("efa_sample:search", max_concurrency=4)


def test_batch_and_max_concurrency_exclude_each_other() -> None:
    with pytest.raises(ConfigError, match="max_concurrency cannot be used") as err:
        make("efa_sample:counted_batch", batch=True, max_concurrency=2)
    assert err.value.key == "retriever.max_concurrency"


class TestPythonClassContract(TestPythonContract):
    @pytest.fixture
    def retriever(self) -> PythonRetriever:
        return make("efa_sample:Searcher", init_kwargs={"prefix": "x"})


def test_ids_keep_their_order_with_synthetic_scores() -> None:
    assert ask(make("efa_sample:search")) == [("d1", 4.0), ("d4", 3.0), ("d2", 2.0), ("d5", 1.0)]
    assert ask(make("efa_sample:search"), "fish") == [("d3", 1.0)]
    assert ask(make("efa_sample:search"), "cats") == [("d1", 2.0), ("d4", 1.0)]


def test_a_duplicate_is_a_plugin_error_naming_the_query() -> None:
    with pytest.raises(PluginError, match=r"document 'd1' twice for query 'q7'"):
        ask(make("efa_sample:duplicates"), qid="q7")


def test_one_argument_function_is_cut_at_k() -> None:
    r = make("efa_sample:search_one_arg")
    assert not r.pass_k
    assert ask(r, "cats", k=1) == [("d1", 2.0)]


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("efa_sample:scored_pairs", [("d2", 0.9), ("d3", 0.5), ("d1", 0.2)]),
        ("efa_sample:scored_dicts", [("d2", 4.0), ("1", 3.0)]),
        ("efa_sample:mapping", [("b", 0.7), ("a", 0.1)]),
    ],
)
def test_scored_results_are_sorted_best_first(target: str, expected: list[Any]) -> None:
    assert ask(make(target)) == expected


def test_query_annotation_passes_the_query_and_ranking_fields_survive() -> None:
    r = make("efa_sample:with_query")
    assert r.wants_query
    ranking = r.retrieve(Query(id="q9", text="t"), 3)
    assert ranking is not None
    assert ranking.doc_ids == ("q9-hit",) and ranking.answer == "yes"


def test_query_arg_overrides_the_guess() -> None:
    assert make("efa_sample:search", query_arg="query").wants_query
    assert not make("efa_sample:with_query", query_arg="text").wants_query


def test_none_means_missing() -> None:
    assert ask(make("efa_sample:nothing")) is None


def test_class_is_built_once_and_callable_instances_work() -> None:
    from efa_sample import Searcher  # type: ignore[import-not-found]

    before = Searcher.instances
    r = make("efa_sample:Searcher", init_kwargs={"prefix": "p"})
    for _ in range(3):
        assert ask(r, k=2) == [("p0", 2.0), ("p1", 1.0)]
    assert Searcher.instances == before + 1
    assert ask(make("efa_sample:CallableSearcher"), qid="qq") == [("qq", 1.0)]
    assert ask(make("efa_sample:ready_made"), k=1) == [("obj0", 1.0)]


def test_batch_answers_every_query_with_one_call_in_the_pipeline() -> None:
    from efa_sample import BATCH_CALLS  # type: ignore[import-not-found]

    r = make("efa_sample:counted_batch", batch=True)
    golden = GoldenSet.build(
        "g", [GoldenQuery(id=f"q{i}", text=t) for i, t in enumerate(["cats", "fish", "dogs"])]
    )
    BATCH_CALLS.clear()
    run = retrieve_all(r, golden, 5, progress=False)
    assert BATCH_CALLS == [3]
    assert [a.doc_ids for a in run.rankings.values()] == [("d1", "d4"), ("d3",), ("d2", "d5")]
    assert ask(r, "fish") == [("d3", 1.0)]  # retrieve(): a batch of one
    assert BATCH_CALLS == [3, 1]
    assert not callable(getattr(make("efa_sample:search"), "retrieve_batch", None))
    by_id = make("efa_sample:batch_by_id", batch=True)
    assert by_id.wants_query and ask(by_id, "fish") == [("d3", 1.0)]


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("efa_sample_nope:search", "cannot import module 'efa_sample_nope'"),
        ("efa_sample:serach", "has no attribute 'serach'"),
        ("efa_sample:NotARetriever", "neither a retrieve"),
        ("efa_sample:NOT_CALLABLE", "is a int, not a function or class"),
    ],
)
def test_bad_targets_are_config_errors_on_retriever_target(target: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as err:
        make(target)
    assert err.value.key == "retriever.target"


def test_an_import_error_inside_the_module_is_reported_as_such(tmp_path: Path) -> None:
    (tmp_path / "efa_broken_import.py").write_text("import surely_not_installed_pkg\n")
    with pytest.raises(ConfigError, match="importing module 'efa_broken_import'") as err:
        make("efa_broken_import:f", python_path=[str(tmp_path)])
    assert "surely_not_installed_pkg" in err.value.render()


def test_wrong_return_type_names_the_function() -> None:
    with pytest.raises(ConfigError, match="efa_sample:returns_a_string returned a str") as err:
        ask(make("efa_sample:returns_a_string"))
    assert err.value.key == "retriever.target"
    with pytest.raises(PluginError, match="scores for some documents but not others"):
        ask(make("efa_sample:unsorted_mixed"))
    with pytest.raises(PluginError, match="Ranking for query 'other' when asked"):
        ask(make("efa_sample:wrong_query_id"))


def test_their_exception_keeps_its_traceback_with_a_note() -> None:
    with pytest.raises(RuntimeError, match="my index is corrupt") as err:
        ask(make("efa_sample:broken"), qid="q5")
    assert any("query 'q5'" in note for note in getattr(err.value, "__notes__", ["query 'q5'"]))


def test_config_checks_the_target_shape_and_init_kwargs() -> None:
    with pytest.raises(ValueError, match=r"package\.module:function"):
        PythonConfig(target="efa_sample.search")
    with pytest.raises(ConfigError, match="not a class") as err:
        make("efa_sample:search", init_kwargs={"a": 1})
    assert err.value.key == "retriever.init_kwargs"


def test_not_cached_because_the_code_can_change() -> None:
    assert PythonRetriever.cacheable is False


def test_example_config_validates() -> None:
    path = Path(__file__).parents[1] / "evalframe_adapters" / "conf" / "retriever" / "python.yaml"
    node = yaml.safe_load(path.read_text())
    assert node.pop("name") == "python"
    PythonConfig.model_validate({**node, "target": "m:f"})
