"""Mistakes made with ``evalframe.load`` / ``evalframe.compare`` / ``Result``: each is
evalframe's own error, at the argument (ConfigError) or the file and key (DataError).

Two toy runs on the same golden set (values worked out by hand):
``good`` ranks q1's d1 first and q2's d2 third: RR (1 + 1/3) / 2 = 2/3;
``other`` ranks q1's d1 second and q2's d2 first: RR (1/2 + 1) / 2 = 3/4;
q3 is negative, skipped by RR.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest

import evalframe
from evalframe import ConfigError, DataError

DOCS = {"d1": "cats sit on mats", "d2": "dogs bark at night", "d3": "a cat and a dog"}
GOLDEN = [
    {"id": "q1", "text": "cat on a mat", "relevant": ["d1"], "difficulty": "easy"},
    {"id": "q2", "text": "barking dogs", "relevant": {"d2": 2}, "difficulty": "hard"},
    {"id": "q3", "text": "flying fish", "relevant": [], "difficulty": "hard"},
]
GOOD = {"cat on a mat": ["d1", "d3"], "barking dogs": ["d1", "d3", "d2"], "flying fish": ["d3"]}
OTHER = {"cat on a mat": ["d3", "d1"], "barking dogs": ["d2"], "flying fish": ["d3"]}
SETTINGS = ["depth=3", "metrics.measures=[RR,P@2]", "tracking=none", "report.html=false"]


#: each test in a folder of its own, with its own cache and tracking off
pytestmark = pytest.mark.usefixtures("fresh_folder")


def good_search(query: str) -> list[str]:
    return GOOD[query]


def other_search(query: str) -> list[str]:
    return OTHER[query]


def toy(answers: dict[str, list[str]], out: str, *extra: str) -> evalframe.Result:
    # two functions, not one closure: the retrieval cache knows a function by its code
    return evalframe.run(
        retriever=good_search if answers is GOOD else other_search,
        golden=GOLDEN,
        corpus=DOCS,
        overrides=[*SETTINGS, *extra],
        output_dir=out,
        progress=False,
    )


@pytest.fixture
def pair() -> tuple[evalframe.Result, evalframe.Result]:
    return toy(GOOD, "good"), toy(OTHER, "other")


# -- #7 alpha and seed -------------------------------------------------------------


@pytest.mark.parametrize(
    ("alpha", "words"),
    [
        (0, "strictly between 0 and 1"),
        (-1, "strictly between 0 and 1"),
        (1, "strictly between 0 and 1"),
        (5, "strictly between 0 and 1"),
        (math.nan, "strictly between 0 and 1"),
        ("0.05", "must be a number, not str"),
        (True, "must be a number, not bool"),
    ],
)
def test_alpha_outside_0_1_or_not_a_number_is_refused(pair: Any, alpha: Any, words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        evalframe.compare(list(pair), alpha=alpha)
    assert caught.value.key == "alpha"
    assert words in caught.value.message


@pytest.mark.parametrize("seed", [-1, 1.5, "x", None, True])
def test_a_seed_that_is_not_a_whole_number_from_0_is_refused(pair: Any, seed: Any) -> None:
    with pytest.raises(ConfigError) as caught:
        evalframe.compare(list(pair), seed=seed)
    assert caught.value.key == "seed"
    assert "whole number, 0 or more" in caught.value.message


def test_valid_alpha_and_seed_compare_as_before(pair: Any) -> None:
    table = evalframe.compare(list(pair), alpha=0.1, seed=7, metrics="RR")  # str: one metric
    assert table.metrics == ["RR"]
    assert table.alpha == 0.1
    assert table.rows[0]["RR"] == pytest.approx(2 / 3)
    assert table.rows[1]["RR"] == pytest.approx(3 / 4)
    assert table.rows[1]["RR Δ"] == pytest.approx(3 / 4 - 2 / 3)


# -- #10 a run compared with itself ------------------------------------------------------


def test_a_candidate_that_is_the_reference_is_refused(pair: Any) -> None:
    good, _ = pair
    for runs in ([good, good], [good, evalframe.load(good.path)], [good, "good"]):
        with pytest.raises(ConfigError, match="no run to compare with the baseline") as caught:
            evalframe.compare(runs)
        assert caught.value.key == "runs"


# -- #15 load/compare arguments --------------------------------------------------------


def test_load_of_a_result_reads_its_folder_again(pair: Any) -> None:
    good, _ = pair
    again = evalframe.load(good)
    assert again is not good and again.path == good.path
    assert again.metric("RR") == pytest.approx(2 / 3)


@pytest.mark.parametrize("given", [None, 5, ["good"]])
def test_load_of_something_that_is_not_a_path_is_refused(given: Any) -> None:
    with pytest.raises(ConfigError, match="not a run folder") as caught:
        evalframe.load(given)
    assert caught.value.key == "run_folder"


def test_compare_refuses_a_baselines_dir_that_is_not_a_path(pair: Any) -> None:
    with pytest.raises(ConfigError, match="must be a folder's path, not int") as caught:
        evalframe.compare([pair[0], "mybaseline"], baselines_dir=5)  # type: ignore[arg-type]
    assert caught.value.key == "baselines_dir"


def test_load_and_compare_expand_the_home_folder(
    pair: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert evalframe.load("~/good").metric("RR") == pytest.approx(2 / 3)
    table = evalframe.compare(["~/good", Path("~/other")])
    assert table.rows[1]["RR"] == pytest.approx(3 / 4)


# -- #20 compare's messages -------------------------------------------------------------


def test_a_mistyped_candidate_is_named_as_the_run_it_is(pair: Any) -> None:
    with pytest.raises(ConfigError, match="run not found: runs/othr") as caught:
        evalframe.compare([pair[0], "runs/othr"])
    assert caught.value.key == "runs[1]"
    with pytest.raises(ConfigError, match=r"no baseline named 'othr'.*no run folder") as bare:
        evalframe.compare([pair[0], "othr"])
    assert bare.value.key == "runs[1]"
    with pytest.raises(ConfigError) as mapped:
        evalframe.compare({"bm25": pair[0], "tuned": "tuend"})
    assert mapped.value.key == "runs['tuned']"


def test_a_baseline_that_is_no_key_of_the_mapping_lists_its_keys(pair: Any) -> None:
    with pytest.raises(ConfigError, match="'bm2' is not a key of runs") as caught:
        evalframe.compare({"bm25": pair[0], "tuned": pair[1]}, baseline="bm2")
    assert caught.value.key == "baseline"
    assert caught.value.expected is not None and "bm25, tuned" in caught.value.expected


def test_a_mismatch_hint_names_the_python_argument(pair: Any) -> None:
    zero = toy(OTHER, "zero", "metrics.policies.no_relevant=zero")
    with pytest.raises(ConfigError, match="different metric policies") as caught:
        evalframe.compare([pair[0], zero])
    assert caught.value.hint is not None
    assert "allow_mismatch=True" in caught.value.hint
    assert "--allow-mismatch" not in caught.value.hint


# -- #21 result.metric by any name --------------------------------------------------------


def test_metric_accepts_an_alias_and_lists_the_computed_ones_otherwise(pair: Any) -> None:
    good, _ = pair
    assert good.metric("MRR") == good.metric("RR") == pytest.approx(2 / 3)
    with pytest.raises(KeyError) as caught:  # still a KeyError, as before
        good.metric("nDCG@10")
    assert isinstance(caught.value, ConfigError)
    assert "was not computed; this run has RR, P@2" in caught.value.message


# -- #14 a hand-edited run folder -----------------------------------------------------------


def _edit(folder: Path, name: str, change: Any) -> None:
    data = json.loads((folder / name).read_text())
    change(data)
    (folder / name).write_text(json.dumps(data))


CASES = {
    "mean": (
        lambda p: _edit(p, "summary.json", lambda d: d["overall"]["RR"].update(mean="0.7x")),
        lambda r: r.metrics,
        "summary.json",
        "overall.RR.mean",
    ),
    "by_slice": (
        lambda p: _edit(p, "summary.json", lambda d: d.update(by_slice={"difficulty": []})),
        lambda r: r.slices,
        "summary.json",
        "by_slice.difficulty",
    ),
    "exit_code": (
        lambda p: _edit(p, "summary.json", lambda d: d.update(exit_code="zero")),
        lambda r: r.exit_code,
        "summary.json",
        "exit_code",
    ),
    "gate": (
        lambda p: _edit(
            p, "gates.json", lambda d: d.update(gates=[{"type": "min_metric", "passed": True}])
        ),
        lambda r: r.gates,
        "gates.json",
        "gates[0].name",
    ),
    "golden_set": (
        lambda p: _edit(p, "summary.json", lambda d: d.update(golden_set="golden")),
        str,
        "summary.json",
        "golden_set",
    ),
    "stats": (
        lambda p: (p / "config.yaml").write_text("stats: default\n"),
        str,
        "config.yaml",
        "stats",
    ),
    "per_query_metric": (
        lambda p: (p / "per_query.jsonl").write_text(
            (p / "per_query.jsonl").read_text().replace('"RR":1.0', '"RR":"high"', 1)
        ),
        lambda r: r.per_query(),
        "per_query.jsonl",
        "query 'q1': metrics.RR",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_hand_edited_file_is_a_located_data_error(pair: Any, case: str) -> None:
    damage, use, file, key = CASES[case]
    folder = Path("damaged")
    shutil.copytree(pair[0].path, folder)
    damage(folder)
    with pytest.raises(DataError, match="is not as evalframe writes it") as caught:
        use(evalframe.load(folder))  # the summary's shape is checked as it is read: by load
    assert caught.value.path == str(folder / file)
    assert caught.value.key == key
    assert caught.value.hint is not None and "restore the file" in caught.value.hint


def test_per_query_metrics_that_are_not_a_mapping_name_the_line(pair: Any) -> None:
    folder = Path("damaged")
    shutil.copytree(pair[0].path, folder)
    lines = (folder / "per_query.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first["metrics"] = "n/a"
    (folder / "per_query.jsonl").write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    with pytest.raises(DataError, match="metrics must be a mapping") as caught:
        evalframe.load(folder).per_query()
    assert (caught.value.path, caught.value.line) == (str(folder / "per_query.jsonl"), 1)


def test_a_layout_that_is_not_an_integer_is_said_as_such(pair: Any) -> None:
    folder = Path("damaged")
    shutil.copytree(pair[0].path, folder)
    _edit(folder, "summary.json", lambda d: d.update(layout="1"))
    with pytest.raises(DataError, match="must be an integer") as caught:
        evalframe.load(folder)
    assert caught.value.key == "layout" and caught.value.got == "'1'"
    assert "newer" not in caught.value.message
