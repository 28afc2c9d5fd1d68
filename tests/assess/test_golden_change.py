"""Runs on different golden sets, compared anyway: a relabelled query is left out, and said.

The case: the same retriever, the same rankings; between the two golden sets one
query's judged document changed (its RR goes 1 -> 1/2 with no change of the system),
one query was dropped and one added. Compared on what both sets judge alike, every
delta is exactly 0 and a regression gate holds; counted, the relabel read as a
regression of the system.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import evalframe
from evalframe.assess.compare import compare_runs
from evalframe.assess.goldenchange import golden_change, judged_alike
from evalframe.assess.runfolder import RunFolder

DOCS = {"d1": "cats sit on mats", "d2": "dogs bark at night", "d3": "a cat and a dog"}
ANSWERS = {
    "cat on a mat": ["d1", "d3"],
    "barking dogs": ["d2", "d3"],
    "a cat and a dog": ["d3", "d1"],
    "night noises": ["d2", "d1"],
}
OLD = [
    {"id": "q1", "text": "cat on a mat", "relevant": ["d1"]},
    {"id": "q2", "text": "barking dogs", "relevant": ["d2"]},
    {"id": "q3", "text": "a cat and a dog", "relevant": ["d3"]},
]
NEW = [
    {"id": "q1", "text": "cat on a mat", "relevant": ["d1"]},
    {"id": "q2", "text": "barking dogs", "relevant": ["d3"]},  # relabelled: d2 -> d3
    {"id": "q4", "text": "night noises", "relevant": ["d2"]},  # added; q3 dropped
]
SETTINGS = ["depth=2", "metrics.measures=[RR,R@1]", "tracking=none", "report.html=false"]

pytestmark = pytest.mark.usefixtures("fresh_folder")


def search(query: str) -> list[str]:
    return ANSWERS[query]


def run(golden: list[dict[str, object]], out: str, *extra: str) -> evalframe.Result:
    return evalframe.run(
        retriever=search,
        golden=golden,
        corpus=DOCS,
        overrides=[*SETTINGS, *extra],
        output_dir=out,
        progress=False,
    )


def test_a_relabelled_query_is_left_out_of_the_comparison_and_named() -> None:
    run(OLD, "old")
    run(NEW, "new")
    a, b = RunFolder(Path("old")).data(), RunFolder(Path("new")).data()
    comp = compare_runs(a, b)
    # by hand: shared q1 and q2; q2's judgments differ, so only q1 is paired
    assert comp.n == 1
    assert comp.golden is not None
    assert (comp.golden.relabelled, comp.golden.only_a, comp.golden.only_b) == (
        ("q2",),
        ("q3",),
        ("q4",),
    )
    for mc in comp.metrics:  # the same system on q1: no change at all
        assert mc.overall.delta == 0.0
    note = comp.golden.note(comp.a, comp.b)
    assert "left out (a change of labels, not of the system): q2" in note
    assert "1 query only in old's set: q3" in note and "1 query only in new's set: q4" in note
    assert comp.as_dict()["golden_sets"]["relabelled"] == ["q2"]


def test_a_regression_gate_does_not_blame_the_system_for_a_relabel(
    capsys: pytest.CaptureFixture[str],
) -> None:
    run(OLD, "old")
    gate = [
        "+gates.mrr_drop.type=regression",
        "+gates.mrr_drop.metric=RR",
        "+gates.mrr_drop.max_drop=0.1",
        "baseline=old",
        "compare.allow_mismatch=true",
    ]
    result = run(NEW, "new", *gate)
    err = capsys.readouterr().err
    # counted, q2's RR 1 -> 1/2 beside q1's 1 -> 1 is a mean drop of 0.25: above max_drop
    assert result.exit_code == 0, err
    assert "note: baseline old and this run were scored on different golden sets" in err
    assert "left out (a change of labels, not of the system): q2" in err
    assert result.comparison is not None and result.comparison["paired_queries"] == 1
    text = (result.path / "comparison.md").read_text(encoding="utf-8")
    assert "were scored on different golden sets" in text


def test_the_same_golden_set_changes_nothing() -> None:
    alike = judged_alike({"q": {"d": 1}}, {}, {"q": {"d": 1}}, {})
    assert golden_change("h", ["q"], "h", ["q"], alike) is None
    assert golden_change(None, ["q"], "h", ["q"], alike) is None  # B.O.B: no hash to compare
    graded = judged_alike({"q": {"d": 1}}, {"q": ["d"]}, {"q": {"d": 2}}, {"q": ["d"]})
    assert not graded("q")  # a grade changed: the relevant ids alone would not tell
    older = judged_alike({}, {"q": ["d"]}, {"q": {"d": 2}}, {"q": ["d"]})
    assert older("q")  # one side recorded no judgments: the relevant ids decide
