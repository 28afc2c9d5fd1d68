"""``evalframe.run`` with Python objects: a function as the retriever, lists as data.

Expected values are worked out by hand from the toy data below (formulas in
the asserts); call counts show what the retrieval cache answered.
"""

from __future__ import annotations

import gc
import json
import sys
from pathlib import Path
from typing import Any

import pytest

import evalframe
from evalframe import ConfigError, DataError, Query, Ranking

DOCS = {
    "d1": "cats sit on mats",
    "d2": "dogs bark at night",
    "d3": "a cat and a dog",
    "d4": "birds sing",
}
#: what the toy retriever answers, best first
ANSWERS = {
    "cat on a mat": ["d1", "d3"],
    "barking dogs": ["d4", "d3", "d2"],
    "flying fish": ["d4"],
}
GOLDEN = [
    {"id": "q1", "text": "cat on a mat", "relevant": ["d1"], "difficulty": "easy"},
    {"id": "q2", "text": "barking dogs", "relevant": {"d2": 2}, "difficulty": "hard"},
    {"id": "q3", "text": "flying fish", "relevant": [], "difficulty": "hard"},  # negative
]
#: report.html=false: the page is the report layer's to test (and costs a second a run)
SETTINGS = ["depth=3", "metrics.measures=[RR,P@2,R@3]", "tracking=none", "report.html=false"]


@pytest.fixture(autouse=True)
def _here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test in its own folder, with its own retrieval cache."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EVALFRAME_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("EVALFRAME_TRACKING", "none")


class Counting:
    """A retriever that records every call (the test's view of the cache).

    Its attributes are a list and a set, which are not in the cache key (only
    immutable plain values are), so changing them keeps the key.
    """

    def __init__(self, failing: set[str] | None = None) -> None:
        self.calls: list[str] = []
        self.failing = failing or set()

    def __call__(self, query: str) -> list[str]:
        self.calls.append(query)
        if query in self.failing:
            raise RuntimeError("the service is down")
        return ANSWERS[query]


def run_toy(retriever: Any, out: str, **kwargs: Any) -> evalframe.Result:
    return evalframe.run(
        retriever=retriever,
        golden=GOLDEN,
        corpus=DOCS,
        overrides=SETTINGS,
        output_dir=out,
        **kwargs,
    )


def test_a_function_is_scored_and_a_second_run_is_answered_from_the_cache() -> None:
    search = Counting()
    first = run_toy(search, "run1")
    assert sorted(search.calls) == sorted(ANSWERS)  # each query asked once
    # RR: q1's relevant d1 is at rank 1, q2's d2 at rank 3; q3 (negative) is skipped
    assert first.metric("RR") == pytest.approx((1 / 1 + 1 / 3) / 2)
    assert first.metrics["RR"].n == 2 and first.metrics["RR"].skipped == 1
    # P@2: q1 has 1 relevant in its top 2, q2 none
    assert first.metric("P@2") == pytest.approx((1 / 2 + 0 / 2) / 2)
    assert first.slices["difficulty"]["hard"]["RR"].mean == pytest.approx(1 / 3)

    second = run_toy(search, "run2")
    assert len(search.calls) == 3  # no new call: every ranking came from the cache
    assert second.timings["retrieval_cache"] == {"hits": 3, "misses": 0}
    assert second.metrics == first.metrics


def test_a_run_freezes_what_it_loads_and_gives_it_all_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``evalframe.run`` opens the command's scope (core.gcpause.long_lived) as the CLI
    does: the golden set and the run are settled while it runs, and the caller's
    process has nothing left frozen when it returns."""
    freezes: list[int] = []
    real = gc.freeze

    def counted() -> None:
        freezes.append(1)
        real()

    assert gc.get_freeze_count() == 0
    monkeypatch.setattr(gc, "freeze", counted)
    result = run_toy(Counting(), "run")
    assert result.metric("RR") == pytest.approx((1 / 1 + 1 / 3) / 2)
    assert len(freezes) >= 2  # the golden set, the run (and the records)
    assert gc.get_freeze_count() == 0


def test_an_interrupted_run_resumes_where_it_stopped() -> None:
    flaky = Counting(failing={"barking dogs"})
    with pytest.raises(RuntimeError, match="the service is down") as caught:
        run_toy(flaky, "run1")
    # the user's bug keeps its traceback, with a note naming the query it hit
    assert any("for query 'q2'" in note for note in getattr(caught.value, "__notes__", []))
    asked_before = list(flaky.calls)
    assert asked_before == ["cat on a mat", "barking dogs"]
    flaky.failing.clear()  # the service is back
    result = run_toy(flaky, "run2")
    # q1 was cached before the failure; only q2 (failed) and q3 (never asked) are asked
    assert flaky.calls[len(asked_before) :] == ["barking dogs", "flying fish"]
    assert result.timings["retrieval_cache"] == {"hits": 1, "misses": 2}


def test_an_edited_function_is_not_answered_from_the_old_cache() -> None:
    old: dict[str, Any] = {"ANSWERS": ANSWERS, "CALLS": []}
    exec("def search(q):\n    CALLS.append(q)\n    return ANSWERS[q]\n", old)
    new: dict[str, Any] = {"ANSWERS": ANSWERS, "CALLS": []}
    exec("def search(q):\n    CALLS.append(q)\n    return ANSWERS[q][:1]\n", new)  # edited
    run_toy(old["search"], "run1")
    edited = run_toy(new["search"], "run2")
    assert len(new["CALLS"]) == 3  # another key: asked again, not served the old rankings
    # RR with top-1 answers: q1 finds d1 at rank 1; q2's d2 is no longer retrieved
    assert edited.metric("RR") == pytest.approx((1 + 0) / 2)


def test_a_setting_the_function_reads_is_in_the_key() -> None:
    ns: dict[str, Any] = {"ANSWERS": ANSWERS, "CALLS": [], "TOP": 3}
    exec("def search(q):\n    CALLS.append(q)\n    return ANSWERS[q][:TOP]\n", ns)
    run_toy(ns["search"], "run1")
    ns["TOP"] = 1
    run_toy(ns["search"], "run2")
    assert len(ns["CALLS"]) == 6  # TOP changed: a new key, every query asked again


class Scored:
    """An object with evalframe's own retrieve(query, k) -> Ranking."""

    def __init__(self, boost: float) -> None:
        self.boost = boost
        self.calls = 0

    def retrieve(self, query: Query, k: int) -> Ranking:
        self.calls += 1
        ids = ANSWERS[query.text][:k]
        return Ranking.from_pairs(
            query.id, [(d, self.boost * (len(ids) - i)) for i, d in enumerate(ids)]
        )


def test_an_object_with_a_retrieve_method_and_pairs_with_scores() -> None:
    retriever = Scored(boost=2.0)
    result = run_toy(retriever, "run1")
    assert retriever.calls == 3
    assert result.metric("RR") == pytest.approx((1 + 1 / 3) / 2)
    run_toy(Scored(boost=3.0), "run2")  # another setting of the object: not a cache hit
    assert json.loads(Path("run2/timings.json").read_text())["retrieval_cache"]["misses"] == 3
    config = evalframe.load("run1").config["retriever"]
    assert config["name"] == "python_object" and config["target"].endswith("Scored()")


def test_a_failed_gate_is_an_attribute_not_an_exit() -> None:
    result = evalframe.run(
        retriever=Counting(),
        golden=GOLDEN,
        corpus=DOCS,
        overrides=[
            *SETTINGS,
            "+gates.rr_floor={type: threshold, metric: RR, op: '>=', value: 0.9}",
        ],
        output_dir="run1",
        name="toy",
    )
    assert not result.passed and result.exit_code == 1
    assert [g.name for g in result.failed_gates] == ["rr_floor"]
    assert result.failed_gates[0].value == pytest.approx((1 + 1 / 3) / 2)
    assert result.name == "toy" and result.config["output"]["run_tag"] == "toy"
    assert "FAILED: rr_floor" in str(result)


def test_objects_and_overrides_of_the_same_section_are_refused() -> None:
    with pytest.raises(ConfigError) as caught:
        evalframe.run(retriever=Counting(), golden=GOLDEN, overrides=["retriever.k1=1.2"])
    assert caught.value.key == "retriever"
    with pytest.raises(ConfigError) as twice:
        evalframe.run(golden="gold.jsonl", overrides=["dataset.path=other.jsonl"])
    assert twice.value.key == "dataset.path"
    with pytest.raises(ConfigError, match="retriever= takes a Python function"):
        evalframe.run(retriever="bm25", golden=GOLDEN)
    with pytest.raises(DataError) as bad:
        evalframe.run(retriever=Counting(), golden=[{"id": "q1", "text": "x"}])
    assert bad.value.key == "golden[0]"


def test_a_wrong_answer_from_the_function_names_it_and_the_query() -> None:
    def broken(query: str) -> str:
        return "d1"  # a string, not a list of ids

    with pytest.raises(ConfigError) as caught:
        evalframe.run(retriever=broken, golden=GOLDEN, overrides=SETTINGS, output_dir="run1")
    assert "broken returned a str for query 'q1'" in caught.value.message


def test_dataframes_hold_the_summary_and_the_per_query_table() -> None:
    result = run_toy(Counting(), "run1")
    frame = result.to_pandas()
    overall = frame[(frame["slice"] == "all") & (frame["metric"] == "RR")].iloc[0]
    assert overall["mean"] == result.summary["overall"]["RR"]["mean"]
    assert overall["ci_low"] == result.summary["overall"]["RR"]["ci_low"]
    hard = frame[(frame["slice"] == "difficulty") & (frame["value"] == "hard")]
    assert set(hard["metric"]) == {"RR", "P@2", "R@3"}
    rows = result.per_query()
    assert list(rows.index) == ["q1", "q2", "q3"]
    assert rows.loc["q2", "RR"] == pytest.approx(1 / 3)
    assert rows.loc["q2", "retrieved"] == ["d4", "d3", "d2"]
    assert rows.loc["q1", "difficulty"] == "easy" and rows.loc["q3", "status"] == "–"


def test_without_pandas_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    result = run_toy(Counting(), "run1")
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now raises ImportError
    with pytest.raises(ConfigError, match="need pandas") as caught:
        result.to_pandas()
    assert "evalframe[pandas]" in (caught.value.hint or "")
    assert result.metric("RR") == pytest.approx((1 + 1 / 3) / 2)  # plain data still works


def test_load_reads_a_run_folder_back_and_refuses_other_folders(tmp_path: Path) -> None:
    ran = run_toy(Counting(), "run1")
    loaded = evalframe.load("run1")
    assert loaded.pipeline is None and ran.pipeline is not None
    assert loaded.metrics == ran.metrics and loaded.records == ran.records
    assert [g.as_dict() for g in loaded.gates] == [g.as_dict() for g in ran.gates]
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError):
        evalframe.load(tmp_path / "empty")
    with pytest.raises(ConfigError, match="not a folder"):
        evalframe.load(tmp_path / "nowhere")


def test_the_reprs_show_the_verdict_metrics_and_plots() -> None:
    result = run_toy(Counting(), "run1")
    text = str(result)
    assert "✓ PASSED: no gates configured" in text and "RR" in text
    assert repr(result).startswith("<evalframe.Result 'default'")
    html = result._repr_html_()
    assert 'id="headline"' in html and html.count("<svg") == 2  # curves and slice bars
    assert "<script" not in html  # a notebook output runs no script of ours
