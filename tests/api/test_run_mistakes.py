"""``evalframe.run`` given a likely mistake: refused up front, at the argument given.

Each case is one a notebook user makes (a class for an instance, a dict of
overrides, a path as a run's name...). Each must be an evalframe error naming
the argument, raised before a run folder is made, not a raw ``TypeError`` on
the first query or a silently different run. NumPy scalars and DataFrames are
not mistakes: they are accepted, and the metrics are worked out by hand.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import evalframe
from evalframe import ConfigError, DataError, PluginError

DOCS = {"d1": "cats sit on mats", "d2": "dogs bark at night", "d3": "a cat and a dog"}
GOLDEN = [
    {"id": "q1", "text": "cat on a mat", "relevant": ["d1"], "difficulty": "easy"},
    {"id": "q2", "text": "barking dogs", "relevant": {"d2": 2}, "difficulty": "hard"},
    {"id": "q3", "text": "flying fish", "relevant": [], "difficulty": "hard"},  # negative
]
ANSWERS = {"cat on a mat": ["d1", "d3"], "barking dogs": ["d3", "d1", "d2"], "flying fish": []}
SETTINGS = ["depth=3", "metrics.measures=[RR]", "tracking=none", "report.html=false"]


#: each test in a folder of its own, with its own cache and tracking off
pytestmark = pytest.mark.usefixtures("fresh_folder")


def search(query: str) -> list[str]:
    return ANSWERS[query]


def run_toy(**kwargs: Any) -> evalframe.Result:
    arguments: dict[str, Any] = {
        "retriever": search,
        "golden": GOLDEN,
        "corpus": DOCS,
        "overrides": SETTINGS,
        "output_dir": "run",
        "progress": False,
    }
    arguments.update(kwargs)
    return evalframe.run(**arguments)


def nothing_ran() -> bool:
    return not Path("run").exists() and not Path("outputs").exists()


# -- the golden set and the corpus (#4, #12, #13, #19) ----------------------------


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        ({"judgments": {"d2": 2}}, "gives its relevance twice: 'relevant' and 'judgments'"),
        ({"question": "a mat for a cat"}, "gives its text twice: 'text' and 'question'"),
    ],
)
def test_a_golden_record_giving_a_field_twice_is_refused(extra: dict[str, Any], words: str) -> None:
    golden = [{**GOLDEN[0], **extra}, *GOLDEN[1:]]
    with pytest.raises(DataError) as caught:
        run_toy(golden=golden)
    assert caught.value.key == "golden[0]"
    assert words in caught.value.message
    assert nothing_ran()


@pytest.mark.parametrize("argument", ["golden", "corpus"])
def test_metadata_that_is_not_a_dict_is_refused_at_the_record(argument: str) -> None:
    golden = [{**GOLDEN[0], "metadata": "easy"}, *GOLDEN[1:]]
    corpus = [{"id": "d1", "text": DOCS["d1"], "metadata": "x"}]
    given = {"golden": golden} if argument == "golden" else {"corpus": corpus}
    with pytest.raises(DataError) as caught:
        run_toy(**given)
    assert caught.value.key == f"{argument}[0].metadata"
    assert "must be a dict" in caught.value.message and caught.value.got == "a str"


@pytest.mark.parametrize("corpus", [{}, []])
def test_an_empty_corpus_is_refused(corpus: Any) -> None:
    with pytest.raises(DataError) as caught:
        run_toy(corpus=corpus)
    assert caught.value.key == "corpus"
    assert "the corpus given is empty" in caught.value.message
    assert nothing_ran()


def test_dataframes_are_read_as_their_rows() -> None:
    pd = pytest.importorskip("pandas")
    golden = pd.DataFrame(GOLDEN)
    corpus = pd.DataFrame([{"id": d, "text": t} for d, t in DOCS.items()])
    result = run_toy(golden=golden, corpus=corpus)
    # RR: q1's d1 at rank 1, q2's d2 at rank 3; q3 is negative (skipped)
    assert result.metric("RR") == pytest.approx((1 / 1 + 1 / 3) / 2)
    assert result.metrics["RR"].n == 2
    assert result.slices["difficulty"]["hard"]["RR"].mean == pytest.approx(1 / 3)


# -- the retriever (#5, #11, #18) ---------------------------------------------------


def test_a_class_given_for_an_instance_is_refused_before_it_is_called() -> None:
    called: list[Any] = []

    class Search:
        def retrieve(self, query: str) -> list[str]:
            called.append((self, query))
            return ["d1"]

    with pytest.raises(ConfigError) as caught:
        run_toy(retriever=Search)
    assert caught.value.key == "retriever"
    assert "got the class Search" in caught.value.message
    assert caught.value.hint == "pass an instance: retriever=Search()"
    assert called == [] and nothing_ran()


def _three(query: str, k: int, index: Any) -> list[str]:
    return ["d1"]


def _keyword(query: str, *, index: Any) -> list[str]:
    return ["d1"]


@pytest.mark.parametrize(
    ("retriever", "words"),
    [
        (5, "retriever= got an int, which cannot be called"),
        (["d1", "d2"], "retriever= got a list, which cannot be called"),
        (_three, "requires the arguments (query, k, index)"),
        (_keyword, "requires the arguments (query, index=)"),
    ],
)
def test_a_retriever_evalframe_cannot_call_is_refused_before_the_run(
    retriever: Any, words: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        run_toy(retriever=retriever)
    assert caught.value.key == "retriever"
    assert words in caught.value.message
    assert nothing_ran()  # refused up front, not on the first query


def test_numpy_scores_and_ids_are_numbers_and_ids() -> None:
    scored = {  # float32 scores, deliberately not in order: the ranking sorts them
        "cat on a mat": [("d3", np.float32(0.25)), ("d1", np.float32(0.75))],
        "barking dogs": [("d1", np.float32(0.5)), ("d2", np.float32(0.25)), ("d3", 0.125)],
        "flying fish": [],
    }

    def vectors(query: str, k: int, unused: Any = None) -> list[tuple[str, Any]]:
        return scored[query]

    result = run_toy(retriever=vectors)
    # q1: d1 (0.75) ranks first -> 1; q2: d1 (0.5), d2 (0.25) -> d2 at rank 2 -> 1/2
    assert result.metric("RR") == pytest.approx((1 + 1 / 2) / 2)

    numbered = [
        {"id": "q1", "text": "one", "relevant": ["2"]},
        {"id": "q2", "text": "two", "relevant": ["7"]},
    ]
    by_index = evalframe.run(
        retriever=lambda query: list(np.array([1, 2, 3], dtype=np.int64)),
        golden=numbered,
        overrides=SETTINGS,
        output_dir="by_index",
        progress=False,
    )
    # ids 1, 2, 3 as "1", "2", "3": q1's "2" at rank 2 -> 1/2; q2's "7" not found -> 0
    assert by_index.metric("RR") == pytest.approx((1 / 2 + 0) / 2)
    assert by_index.records[0]["retrieved"] == ["1", "2", "3"]


def test_a_numpy_nan_score_is_still_refused() -> None:
    def nan_scores(query: str) -> list[tuple[str, Any]]:
        return [("d1", np.float32("nan"))]

    with pytest.raises(PluginError, match="not a finite number"):
        run_toy(retriever=nan_scores)


# -- the arguments: experiment, name, overrides (#6, #9, #16, #21) -----------------


@pytest.mark.parametrize(
    ("experiment", "words", "hint"),
    [
        (["bob", "quickstart"], "must be one experiment's name, not a list", "one at a time"),
        ("", "experiment= is empty", "leave it out"),
        (
            "quickstart depth=5",
            "holds settings as well as the name",
            "evalframe.run('quickstart', overrides=['depth=5'])",
        ),
    ],
)
def test_an_experiment_that_is_not_one_name_is_refused(
    experiment: Any, words: str, hint: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        evalframe.run(experiment, progress=False)
    assert caught.value.key == "experiment"
    assert words in caught.value.message
    assert hint in (caught.value.hint or "")
    assert nothing_ran()


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("../escaped", "has a path separator"),
        ("a/b", "has a path separator"),
        ("..", "has '..'"),
        ("${oc.env:HOME}", "has '${'"),
        ("my run", "has a space"),
        ("", "is empty"),
    ],
)
def test_a_name_that_is_not_one_word_is_refused_at_name(name: str, words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        run_toy(name=name, output_dir=None)
    assert caught.value.key == "name"  # not output.run_tag: the user gave name=
    assert words in caught.value.message
    assert nothing_ran()
    assert not Path("../escaped").exists()


@pytest.mark.parametrize(
    ("overrides", "words"),
    [
        (None, "overrides must be a list of strings"),
        (5, "overrides must be a list of strings"),
        ([("depth", 5)], "overrides[0] is a tuple"),
        (["depth=3", 5], "overrides[1] is an int"),
    ],
)
def test_overrides_that_are_not_a_list_of_strings_are_refused(overrides: Any, words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        run_toy(overrides=overrides)
    assert caught.value.key == "overrides"
    assert words in caught.value.message
    assert "['depth=5']" in (caught.value.hint or "")


def test_a_dict_of_overrides_is_refused_with_the_list_to_write() -> None:
    with pytest.raises(ConfigError) as caught:
        run_toy(overrides={"depth": 3, "metrics.measures": "[RR]"})
    assert caught.value.key == "overrides" and "not a dict" in caught.value.message
    assert caught.value.hint == "write each as 'key=value': overrides=['depth=3', " + (
        "'metrics.measures=[RR]']"
    )
    secret = "sk-live-ABCDEF1234567890XYZ"
    with pytest.raises(ConfigError) as leaked:
        run_toy(overrides={"+retriever.api_token": secret})
    assert secret not in str(leaked.value)  # the hint shows it redacted
