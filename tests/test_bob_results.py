"""B.O.B's saved results (EvalResults as JSON) as a baseline: reading, checks, gates."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evalframe.assess.baseline import load_baseline
from evalframe.assess.bob_results import read_bob_results
from evalframe.assess.results import Evaluation, GateView
from evalframe.core.errors import ConfigError, DataError
from evalframe.core.types import GoldenQuery, GoldenSet, Ranking, Run
from evalframe.metrics import Policies, evaluate, parse_metrics

RESULTS: dict[str, Any] = {
    "k": 5,
    "date": "2025-12-01",
    "recall_mean": (1.0 + 0.5 + 1.0) / 3,
    "precision_mean": (0.2 + 0.2 + 0.0) / 3,
    "mrr_mean": (1.0 + 0.5 + 0.0) / 3,
    "per_query": [
        {"id": 1, "recall": 1.0, "precision": 0.2, "mrr": 1.0},
        {"id": 2, "recall": 0.5, "precision": 0.2, "mrr": 0.5},
        {"id": 3, "recall": 1.0, "precision": 0.0, "mrr": 0.0},  # a negative example
    ],
}


def write(tmp_path: Path, payload: Any) -> Path:
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path


def test_results_become_per_query_vectors_of_bobs_metrics(tmp_path: Path) -> None:
    data = read_bob_results(write(tmp_path, RESULTS))
    assert data.query_ids == ("1", "2", "3")  # integer ids become strings, as golden ids do
    assert data.metrics == ("R@5", "P@5", "RR")
    assert data.values["RR"] == {"1": 1.0, "2": 0.5, "3": 0.0}
    assert data.name == "baseline.json (2025-12-01)"
    assert data.policies == {"no_relevant": "bob", "ties": "given"}


def test_k_names_the_cutoff(tmp_path: Path) -> None:
    data = read_bob_results(write(tmp_path, {**RESULTS, "k": 10}))
    assert data.metrics == ("R@10", "P@10", "RR")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"per_query": None}, "'per_query' list"),
        ({"k": 0}, "'k' must be a positive integer"),
        ({"recall_mean": 0.2}, "'recall_mean' (0.2) is not the mean of per_query recall"),
        ({"per_query": [{"id": 1, "recall": 1.0, "precision": 0.2}]}, "has no 'mrr'"),
        ({"per_query": [{"id": 1, "recall": "1", "precision": 0.2, "mrr": 1}]}, "a number"),
        ({"per_query": [{"id": 1, "recall": 1.5, "precision": 0.2, "mrr": 1}]}, "between 0 and 1"),
        ({"per_query": []}, "lists no questions"),
    ],
)
def test_a_broken_results_file_is_a_data_error(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    payload = {**RESULTS, **change}
    if change.get("per_query") is not None and "recall_mean" not in change:
        for key in ("recall_mean", "precision_mean", "mrr_mean"):
            payload.pop(key)
    with pytest.raises(DataError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_bob_results(write(tmp_path, payload))


def test_a_figure_twice_in_one_record_is_refused_at_its_line(tmp_path: Path) -> None:
    """JSON keeps the last value: a second "recall" replaced the first without a word."""
    path = tmp_path / "baseline.json"
    text = json.dumps(RESULTS, indent=1)
    first = text.index('"recall": 1.0')
    path.write_text(text[:first] + '"recall": 0.0, ' + text[first:], encoding="utf-8")
    with pytest.raises(DataError) as err:
        read_bob_results(path)
    assert err.value.message.startswith("the key 'recall' appears twice in one object")
    assert err.value.line == text[:first].count("\n") + 1


def test_a_mean_rounded_to_two_decimals_is_accepted(tmp_path: Path) -> None:
    """B.O.B prints two decimals; a saved mean may carry them."""
    read_bob_results(write(tmp_path, {**RESULTS, "recall_mean": 0.83, "mrr_mean": 0.5}))


def test_a_question_listed_twice_is_refused(tmp_path: Path) -> None:
    twice = {"per_query": [*RESULTS["per_query"], RESULTS["per_query"][0]]}
    with pytest.raises(DataError, match="listed twice"):
        read_bob_results(write(tmp_path, twice))


# -- as a run's baseline -------------------------------------------------------------------

GOLDEN = GoldenSet.build(
    "g",
    [
        GoldenQuery(id="1", text="a", judgments={"10": 1}),
        GoldenQuery(id="2", text="b", judgments={"20": 1, "21": 1}),
        GoldenQuery(id="3", text="c", judgments={}),
    ],
)
RUN = Run(
    rankings={
        "1": Ranking.from_pairs("1", [("11", 2.0), ("10", 1.0)]),  # RR 1/2: dropped from 1
        "2": Ranking.from_pairs("2", [("20", 2.0), ("21", 1.0)]),  # RR 1, R 1, P 2/5
        "3": Ranking.from_pairs("3", [("30", 1.0)]),
    }
)
BOB = Policies(no_relevant="bob", ties="given")


def _evaluation(golden: GoldenSet = GOLDEN, policies: Policies = BOB) -> Evaluation:
    metrics = parse_metrics(["R@5", "P@5", "RR"])
    return Evaluation.build(
        golden, RUN, evaluate(metrics, golden, RUN, policies), metrics, policies
    )


def test_a_results_file_is_a_baseline_and_pairs_by_question_id(tmp_path: Path) -> None:
    baseline = load_baseline(str(write(tmp_path, RESULTS)))
    assert baseline.format == "bob" and baseline.golden_hash is None
    ev = _evaluation()
    baseline.check(ev.golden, ev.policies, allow_mismatch=False)
    ev.baseline = baseline
    ids, before, now = GateView(ev).paired("RR")
    assert ids == ("1", "2", "3")
    np.testing.assert_allclose(before, [1.0, 0.5, 0.0])
    np.testing.assert_allclose(now, [0.5, 1.0, 0.0])


def test_a_one_domain_run_compares_on_its_own_questions(tmp_path: Path) -> None:
    baseline = load_baseline(str(write(tmp_path, RESULTS)))
    part = GoldenSet.build("cdc", GOLDEN.queries[:2])
    baseline.check(part, BOB, allow_mismatch=False)  # a subset of the baseline: fine


def test_questions_the_results_do_not_have_are_refused(tmp_path: Path) -> None:
    baseline = load_baseline(str(write(tmp_path, {"per_query": RESULTS["per_query"][:2]})))
    with pytest.raises(ConfigError, match="no results for 1 of this run's 3 questions") as err:
        baseline.check(GOLDEN, BOB, allow_mismatch=False)
    assert err.value.key == "baseline"
    baseline.check(GOLDEN, BOB, allow_mismatch=True)


def test_other_policies_than_bobs_are_refused(tmp_path: Path) -> None:
    baseline = load_baseline(str(write(tmp_path, RESULTS)))
    with pytest.raises(ConfigError, match="ties=trec_eval") as err:
        baseline.check(GOLDEN, Policies(no_relevant="bob"), allow_mismatch=False)
    assert "metrics=bob" in (err.value.hint or "")


def test_compare_takes_a_results_file_as_either_side(tmp_path: Path) -> None:
    """`evalframe compare results.json RUN` (gates.md): B.O.B's file names no golden set,
    so its questions must hold every query of the run; the deltas are per query."""
    import dataclasses

    from evalframe.assess.compare import check_comparable, compare_runs, load_run_data

    bob = load_run_data(write(tmp_path, RESULTS), name="bob")
    run = dataclasses.replace(
        bob,
        name="this run",
        query_ids=("1", "2"),
        values={"RR": {"1": 1.0, "2": 1.0}, "R@5": {"1": 1.0, "2": 1.0}},
        golden_hash="abc",
    )
    check_comparable(bob, run)
    check_comparable(run, bob)
    comp = compare_runs(bob, run, metrics=["RR"], randomization=100, resamples=100)
    overall = comp.metrics[0].overall
    assert comp.n == 2
    assert overall.mean_a == pytest.approx((1.0 + 0.5) / 2)
    assert overall.delta == pytest.approx(1.0 - (1.0 + 0.5) / 2)
    stranger = dataclasses.replace(run, query_ids=("1", "9"))
    with pytest.raises(ConfigError, match=r"bob has no results for 1 of the 2 queries .*\(ids 9\)"):
        check_comparable(bob, stranger)
    check_comparable(bob, stranger, allow_mismatch=True)


def test_compare_reads_metric_names_canonically_and_refuses_ones_a_run_lacks(
    tmp_path: Path,
) -> None:
    """`--metrics MRR` is RR (an alias); R@20, which neither run computed, is a located
    config error listing what they share, not a KeyError (exit 3 at best)."""
    from evalframe.assess.compare import compare_runs, load_run_data

    bob = load_run_data(write(tmp_path, RESULTS), name="bob")
    comp = compare_runs(bob, bob, metrics=["MRR"], randomization=10, resamples=10)
    assert [mc.metric for mc in comp.metrics] == ["RR"]
    with pytest.raises(ConfigError) as err:
        compare_runs(bob, bob, metrics=["RR", "R@20"])
    assert err.value.key == "metrics[1]"
    assert "metric 'R@20' is not in bob and bob" in err.value.message
    assert "R@5, P@5, RR" in str(err.value.expected)


def test_a_policy_mismatch_names_the_policies_that_differ() -> None:
    """The error listed the baseline's whole policy dict; now only what differs, both ways."""
    from evalframe.metrics import Policies, policy_differences

    stored = {"ties": "given", "no_relevant": "skip"}
    assert policy_differences(stored, Policies(ties="trec_eval", no_relevant="skip")) == [
        "ties: given vs trec_eval"
    ]
    assert policy_differences({}, Policies()) == []  # an old run: defaults, equal


def test_a_baseline_path_that_does_not_exist_is_said_as_a_path(tmp_path: Path) -> None:
    """`baseline=/x/results.json` that is not there was reported as "no baseline named
    '/x/results.json' in baselines": a path is a path, and the error says so."""
    missing = tmp_path / "gone" / "results.json"
    with pytest.raises(ConfigError) as err:
        load_baseline(str(missing), tmp_path / "baselines")
    assert err.value.message == f"baseline not found: {missing} (no such file or folder)"
    assert err.value.key == "baseline"
    with pytest.raises(ConfigError, match="no baseline named 'main'"):
        load_baseline("main", tmp_path / "baselines")  # a name is still looked up by name


def test_a_per_query_file_with_a_query_twice_is_refused_at_its_line(tmp_path: Path) -> None:
    """A duplicated record made `compare` pair 4 queries of a 3-query set, silently."""
    from evalframe.assess.runfolder import RunData

    records = [
        (1, {"query_id": "q1", "metrics": {"RR": 1.0}}),
        (2, {"query_id": "q2", "metrics": {"RR": 0.5}}),
        (3, {"query_id": "q1", "metrics": {"RR": 1.0}}),
    ]
    source = tmp_path / "per_query.jsonl"
    with pytest.raises(DataError) as err:
        RunData.from_records(iter(records), {}, name="r", path=tmp_path, source=source)
    assert err.value.line == 3
    assert "query 'q1' has two records (first at line 1)" in err.value.message
