"""Judgment views (KnowCode's file coverage), Abstained on negatives, and self-matches."""

from __future__ import annotations

import math

import pytest

from evalframe.core.errors import ConfigError
from evalframe.core.types import GoldenQuery, GoldenSet, Ranking, Run
from evalframe.metrics import Policies, evaluate, parse_metric, parse_metrics
from evalframe.metrics.engine import project_ids

ENTITY_TO_FILE = r"^(.*?)::"


def knowcode_like() -> GoldenSet:
    return GoldenSet.build(
        "kc",
        [
            GoldenQuery(
                id="q1",
                text="where is retry handled?",
                judgments={"net/http.py::Client.retry": 1, "net/backoff.py::delay": 1},
                views={"files": {"net/http.py": 1, "net/backoff.py": 1, "net/errors.py": 1}},
            ),
        ],
        projections={"files": ENTITY_TO_FILE},
    )


def test_projection_takes_the_regex_group_or_keeps_the_id() -> None:
    assert project_ids(["a/b.py::C.m", "README.md"], ENTITY_TO_FILE) == ["a/b.py", "README.md"]


def test_file_coverage_counts_each_expected_file_once_among_the_top_k_results() -> None:
    """Top 4 entities live in http.py, http.py, utils.py, backoff.py.

    The files of the top 4 results are {http.py, utils.py, backoff.py}: 2 of the
    3 expected files, so coverage@4 = 2/3. At k = 2 only http.py: 1/3. The
    second http.py entity must not count twice.
    """
    run = Run(
        rankings={
            "q1": Ranking.from_pairs(
                "q1",
                [
                    ("net/http.py::Client.retry", 4.0),
                    ("net/http.py::Client.send", 3.0),
                    ("net/utils.py::helper", 2.0),
                    ("net/backoff.py::delay", 1.0),
                ],
            )
        }
    )
    metrics = parse_metrics(["R(view=files)@2", "R(view=files)@4", "R@4", "P(view=files)@2"])
    scores = evaluate(metrics, knowcode_like(), run, Policies())
    got = {str(m): float(v[0]) for m, v in scores.values.items()}
    assert got == {
        "R(view=files)@2": 1 / 3,
        "R(view=files)@4": 2 / 3,
        "R@4": 2 / 2,  # the entity view: both expected entities are in the top 4
        "P(view=files)@2": 1 / 2,  # rank 2 repeats http.py: not a second hit
    }


def test_view_is_part_of_the_canonical_name() -> None:
    m = parse_metric("R(view=files)@5")
    assert str(m) == "R(view=files)@5" and m.view == "files"
    assert str(parse_metric("P(view=files,rel=2)@5")) == "P(rel=2,view=files)@5"


def test_unknown_view_lists_the_declared_ones() -> None:
    run = Run(rankings={"q1": Ranking.from_pairs("q1", [("x", 1.0)])})
    with pytest.raises(ConfigError, match="view 'dirs' is not declared") as err:
        evaluate(parse_metrics(["R(view=dirs)@5"]), knowcode_like(), run, Policies())
    assert "files" in (err.value.expected or "")


def test_abstained_scores_negative_examples_only() -> None:
    golden = {"neg1": {}, "neg2": {"d": 0}, "pos": {"a": 1}}
    run = {
        "neg1": [("x", 0.0), ("y", -1.0)],  # nothing above 0: abstained
        "neg2": [("x", 0.2)],  # returned something: did not abstain
        "pos": [("a", 0.9)],
    }
    m = parse_metric("Abstained@3")
    values = evaluate([m], golden, run, Policies(no_relevant="skip")).values[m]
    assert values[0] == 1.0 and values[1] == 0.0
    assert math.isnan(values[2])  # a query with relevant docs is not scored
    strict = parse_metric("Abstained(threshold=0.5)@3")
    assert evaluate([strict], golden, run, Policies()).values[strict][1] == 1.0


def test_self_matches_are_kept_unless_the_policy_drops_them() -> None:
    """BEIR drops a doc whose id is the query id; evalframe only does so when asked."""
    qrels = {"q1": {"q1": 1, "d2": 1}}
    run = {"q1": [("q1", 2.0), ("d2", 1.0)]}
    m = parse_metric("P@1")
    assert evaluate([m], qrels, run, Policies()).values[m][0] == 1.0
    dropped = evaluate([m], qrels, run, Policies(drop_self_matches=True)).values[m][0]
    assert dropped == 1.0  # d2 moves up to rank 1
    rr = parse_metric("RR")
    only_self = {"q1": [("q1", 2.0), ("x", 1.0)]}
    assert (
        evaluate([rr], {"q1": {"q1": 1}}, only_self, Policies(drop_self_matches=True)).values[rr][0]
        == 0.0
    )
