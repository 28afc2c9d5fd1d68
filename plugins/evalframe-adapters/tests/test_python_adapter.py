"""python retriever: the contract, signatures, return shapes, batches and clear errors."""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
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
from tests import forkrun

USERLAND = str(Path(__file__).parent / "userland")
QUICKSTART = Path(__file__).parents[3] / "evalframe" / "data" / "quickstart" / "golden.jsonl"


def make(target: str, **settings: Any) -> PythonRetriever:
    settings.setdefault("python_path", [USERLAND])
    return PythonRetriever(PythonConfig(target=target, **settings), PluginContext())


def user_module(folder: Path, name: str, source: str) -> Path:
    """A user's module ``name`` written into ``folder`` (its lines are the test's)."""
    path = folder.resolve() / f"{name}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source)
    importlib.invalidate_caches()
    return path


def golden(*ids: str) -> GoldenSet:
    return GoldenSet.build("g", [GoldenQuery(id=i, text=f"text of {i}") for i in ids])


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
    path = user_module(tmp_path, "efa_broken_import", "import surely_not_installed_pkg\n")
    with pytest.raises(ConfigError, match="importing module 'efa_broken_import'") as err:
        make("efa_broken_import:f", python_path=[str(tmp_path)])
    assert (err.value.key, err.value.path, err.value.line) == ("retriever.target", str(path), 1)
    assert err.value.got == "ModuleNotFoundError: No module named 'surely_not_installed_pkg'"
    assert "install it" in (err.value.hint or "")


def test_a_syntax_error_in_the_module_names_its_file_and_line(tmp_path: Path) -> None:
    path = user_module(tmp_path, "efa_syntax", "x = 1\ndef broken(:\n    pass\n")
    with pytest.raises(ConfigError) as err:
        make("efa_syntax:broken", python_path=[str(tmp_path)])
    assert (err.value.path, err.value.line, err.value.column) == (str(path), 2, 12)
    assert err.value.key == "retriever.target"
    assert err.value.got == "SyntaxError: invalid syntax in 'def broken(:'"
    text = err.value.render()
    assert text.startswith(f"error: {path}:2:12: importing module 'efa_syntax' (retriever.target")
    assert "please report" not in text and err.value.__cause__ is not None


def test_an_exception_at_import_names_the_innermost_line_of_user_code(tmp_path: Path) -> None:
    # the target imports a helper of theirs, which fails in its third line
    user_module(tmp_path, "efa_imports_helper", "import efa_helper_fails\n")
    helper = user_module(tmp_path, "efa_helper_fails", "import os\n\nPATH = os.environ[UNSET]\n")
    with pytest.raises(ConfigError, match="importing module 'efa_imports_helper'") as err:
        make("efa_imports_helper:f", python_path=[str(tmp_path)])
    assert (err.value.path, err.value.line) == (str(helper), 3)
    assert err.value.got == "NameError: name 'UNSET' is not defined"


def test_sys_exit_at_import_is_reported_not_obeyed(tmp_path: Path) -> None:
    # e.g. a script that parses its own command line at its top level
    path = user_module(tmp_path, "efa_exits", "import sys\n\nsys.exit(1)\n")
    with pytest.raises(ConfigError) as err:
        make("efa_exits:f", python_path=[str(tmp_path)])
    assert (err.value.path, err.value.line) == (str(path), 3)
    assert err.value.got == "SystemExit: sys.exit(1) was called"


def test_a_missing_import_inside_a_package_is_not_a_missing_target(tmp_path: Path) -> None:
    # "efa_pkg.mod" starts with "efa_pk", the module its code fails to find
    (tmp_path / "efa_pkg").mkdir()
    user_module(tmp_path / "efa_pkg", "__init__", "")
    path = user_module(tmp_path / "efa_pkg", "mod", "import efa_pk\n")
    with pytest.raises(ConfigError, match=r"importing module 'efa_pkg\.mod'") as err:
        make("efa_pkg.mod:f", python_path=[str(tmp_path)])
    assert (err.value.path, err.value.line) == (str(path), 1)
    with pytest.raises(ConfigError, match=r"cannot import module 'efa_pkg\.nope'") as err:
        make("efa_pkg.nope:f", python_path=[str(tmp_path)])
    assert (err.value.key, err.value.path) == ("retriever.target", None)


def test_their_exception_is_their_error_at_their_line(tmp_path: Path) -> None:
    path = user_module(
        tmp_path, "efa_raises", "def search(query, k):\n    raise ValueError('boom')\n"
    )
    with pytest.raises(PluginError) as err:
        ask(make("efa_raises:search", python_path=[str(tmp_path)]), qid="q5")
    assert (err.value.key, err.value.path, err.value.line) == ("retriever.target", str(path), 2)
    assert err.value.got == "ValueError: boom"
    assert err.value.render().startswith(
        f"error: {path}:2: your retriever (retriever.target 'efa_raises:search') raised an "
        "exception for query 'q5' (got ValueError: boom)\n  hint: the error is in your "
        "retriever's code, not in evalframe"
    )
    assert isinstance(err.value.__cause__, ValueError)  # kept for whoever debugs from Python


def test_an_exception_from_a_library_points_at_the_user_line_that_called_it(
    tmp_path: Path,
) -> None:
    path = user_module(
        tmp_path,
        "efa_calls_json",
        "import json\n\n\ndef search(query, k):\n    return json.loads(query)\n",
    )
    with pytest.raises(PluginError) as err:
        ask(make("efa_calls_json:search", python_path=[str(tmp_path)]), "{not json")
    assert (err.value.path, err.value.line) == (str(path), 5)
    assert err.value.got == (
        "JSONDecodeError: Expecting property name enclosed in double quotes: line 1 column 2 "
        "(char 1)"
    )


def test_the_sample_broken_function_keeps_its_exception_as_the_cause() -> None:
    with pytest.raises(PluginError, match="for query 'q5'") as err:
        ask(make("efa_sample:broken"), qid="q5")
    assert err.value.path is not None and err.value.path.endswith("efa_sample.py")
    assert err.value.got == "RuntimeError: my index is corrupt"
    assert isinstance(err.value.__cause__, RuntimeError)


FAILS_ON_Q3 = """def search(query, k):
    if query == "text of q3":
        raise KeyError(query)
    return ["d1"]
"""


def test_their_exception_from_a_thread_names_the_query_and_line(tmp_path: Path) -> None:
    path = user_module(tmp_path, "efa_threads_fail", FAILS_ON_Q3)
    r = make("efa_threads_fail:search", python_path=[str(tmp_path)], max_concurrency=4)
    with pytest.raises(PluginError, match="for query 'q3'") as err:
        retrieve_all(r, golden("q1", "q2", "q3", "q4", "q5", "q6"), 5, progress=False)
    assert (err.value.path, err.value.line) == (str(path), 3)
    assert err.value.got == "KeyError: 'text of q3'"


def test_their_exception_in_a_batch_names_the_queries_and_line(tmp_path: Path) -> None:
    path = user_module(
        tmp_path,
        "efa_batch_fails",
        "def search(queries, k):\n    return [q.upper() for q in queries] + None\n",
    )
    r = make("efa_batch_fails:search", python_path=[str(tmp_path)], batch=True)
    with pytest.raises(PluginError, match=r"for queries 'q1', 'q2', 'q3' \.\.\.") as err:
        retrieve_all(r, golden("q1", "q2", "q3", "q4"), 5, progress=False)
    assert (err.value.path, err.value.line) == (str(path), 2)
    assert err.value.got == 'TypeError: can only concatenate list (not "NoneType") to list'


def test_ctrl_c_in_their_function_is_not_turned_into_an_error(tmp_path: Path) -> None:
    user_module(tmp_path, "efa_interrupted", "def search(query, k):\n    raise KeyboardInterrupt\n")
    for settings in ({}, {"max_concurrency": 3}, {"batch": True}):
        r = make("efa_interrupted:search", python_path=[str(tmp_path)], **settings)
        with pytest.raises(KeyboardInterrupt):
            retrieve_all(r, golden("q1", "q2", "q3"), 5, progress=False)


def test_a_class_whose_init_fails_names_its_line(tmp_path: Path) -> None:
    path = user_module(
        tmp_path,
        "efa_bad_class",
        "class Searcher:\n"
        "    def __init__(self, index):\n"
        "        self.docs = open(index).read()\n"
        "\n"
        "    def retrieve(self, query, k):\n"
        "        return []\n",
    )
    missing = str(tmp_path / "no-such-index")
    with pytest.raises(PluginError, match="building your retriever class") as err:
        make("efa_bad_class:Searcher", python_path=[str(tmp_path)], init_kwargs={"index": missing})
    assert (err.value.key, err.value.path, err.value.line) == ("retriever.target", str(path), 3)
    assert err.value.got == f"FileNotFoundError: [Errno 2] No such file or directory: '{missing}'"
    # arguments that do not fit the constructor stay an init_kwargs mistake
    with pytest.raises(ConfigError, match="could not be built with init_kwargs") as bad:
        make("efa_bad_class:Searcher", python_path=[str(tmp_path)], init_kwargs={"idx": "x"})
    assert bad.value.key == "retriever.init_kwargs"


# -- the command line: exit 2, one paragraph, no traceback --------------------


def cli(cwd: Path, target: str, *extra: str) -> subprocess.CompletedProcess[str]:
    shutil.copy(QUICKSTART, cwd / "g.jsonl")
    env = {
        **os.environ,
        "EVALFRAME_TRACKING": "none",
        "EVALFRAME_CACHE_DIR": str(cwd / ".cache"),
    }
    args = [
        "+experiment=quickstart",
        "dataset.path=g.jsonl",
        "corpus=none",
        "retriever=python",
        "retriever.python_path=[.]",
        f"retriever.target={target}",
        f"hydra.run.dir={cwd / 'out'}",
        *extra,
    ]
    return forkrun.run(args, cwd=cwd, env=env, timeout=120)


def assert_user_error(res: subprocess.CompletedProcess[str], *parts: str) -> None:
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr and "please report" not in res.stderr, res.stderr
    for part in parts:
        assert part in res.stderr, res.stderr


def test_cli_syntax_error_in_their_module_exits_2_at_its_line(tmp_path: Path) -> None:
    (tmp_path / "synerr.py").write_text("def broken(:\n")
    res = cli(tmp_path, "synerr:broken")
    assert_user_error(
        res,
        "error: synerr.py:1:12: importing module 'synerr' (retriever.target 'synerr:broken') "
        "failed (got SyntaxError: invalid syntax",
    )


@pytest.mark.parametrize("threads", ["1", "4"])
def test_cli_their_function_raising_exits_2_at_its_line(tmp_path: Path, threads: str) -> None:
    (tmp_path / "myret.py").write_text("def search(q, k):\n    raise ValueError('boom')\n")
    res = cli(tmp_path, "myret:search", f"retriever.max_concurrency={threads}")
    assert_user_error(
        res,
        "error: myret.py:2: your retriever (retriever.target 'myret:search') raised an "
        "exception for query 'q01' (got ValueError: boom)",
        "hint: the error is in your retriever's code, not in evalframe",
    )


def test_cli_missing_module_and_attribute_exit_2_on_the_key(tmp_path: Path) -> None:
    (tmp_path / "myret.py").write_text("def search(q, k):\n    return []\n")
    assert_user_error(
        cli(tmp_path, "nomod:search"),
        "error: config key retriever.target: cannot import module 'nomod'",
    )
    assert_user_error(
        cli(tmp_path, "myret:nope"),
        "error: config key retriever.target: module 'myret' has no attribute 'nope'",
    )


def test_cli_ctrl_c_in_their_function_still_exits_130(tmp_path: Path) -> None:
    (tmp_path / "stops.py").write_text("def search(q, k):\n    raise KeyboardInterrupt\n")
    res = cli(tmp_path, "stops:search")
    assert res.returncode == 130, res.stderr
    assert "interrupted" in res.stderr and "Traceback" not in res.stderr


def test_wrong_return_type_names_the_function() -> None:
    with pytest.raises(ConfigError, match="efa_sample:returns_a_string returned a str") as err:
        ask(make("efa_sample:returns_a_string"))
    assert err.value.key == "retriever.target"
    with pytest.raises(PluginError, match="scores for some documents but not others"):
        ask(make("efa_sample:unsorted_mixed"))
    with pytest.raises(PluginError, match="Ranking for query 'other' when asked"):
        ask(make("efa_sample:wrong_query_id"))


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
