"""A run written into a folder that holds a previous run: the previous run's own files
that the new run does not write are removed (only those, and only once the new run
succeeded), so the folder and ``evalframe.load`` describe the new run alone."""

from __future__ import annotations

import pytest

import evalframe
from evalframe.assess.runfolder import RunFolder

DOCS = {"d1": "cats sit on mats", "d2": "dogs bark at night", "d3": "a cat and a dog"}
GOLDEN = [
    {"id": "q1", "text": "cat on a mat", "relevant": ["d1"]},
    {"id": "q2", "text": "barking dogs", "relevant": ["d2"]},
]
ANSWERS = {"cat on a mat": ["d1", "d3"], "barking dogs": ["d3", "d2"]}
SETTINGS = ["depth=3", "metrics.measures=[RR]", "tracking=none"]


#: each test in a folder of its own, with its own cache and tracking off
pytestmark = pytest.mark.usefixtures("fresh_folder")


def search(query: str) -> list[str]:
    return ANSWERS[query]


def toy(out: str, *extra: str, retriever: object = search) -> evalframe.Result:
    return evalframe.run(
        retriever=retriever,
        golden=GOLDEN,
        corpus=DOCS,
        overrides=[*SETTINGS, *extra],
        output_dir=out,
        progress=False,
    )


def test_a_rerun_without_baseline_or_page_drops_the_previous_runs_files() -> None:
    base = toy("base", "report.html=false")
    first = toy("same", f"baseline={base.path}")
    assert first.comparison is not None and first.report_path is not None
    (first.path / "notes.txt").write_text("mine")  # not the run's: always kept
    before = {p.name for p in first.path.iterdir()}
    assert {"comparison.json", "comparison.md", "report.html", "summary.md"} <= before

    second = toy("same", "report.html=false")
    after = {p.name for p in second.path.iterdir()}
    assert second.comparison is None and second.report_path is None
    assert after == before - {"comparison.json", "comparison.md", "report.html", "summary.md"}
    assert (second.path / "notes.txt").read_text() == "mine"
    # RR: q1's d1 at rank 1, q2's d2 at rank 2
    assert evalframe.load("same").metric("RR") == pytest.approx((1 + 1 / 2) / 2)
    assert after <= RunFolder.OWN_FILES | {"notes.txt"}


def test_a_failing_run_leaves_the_previous_run_as_it_was() -> None:
    base = toy("base", "report.html=false")
    first = toy("same", f"baseline={base.path}", "report.html=false")
    before = {p.name: p.read_bytes() for p in first.path.iterdir()}
    assert "comparison.json" in before

    def broken(query: str) -> list[str]:
        raise RuntimeError("the service is down")

    with pytest.raises(RuntimeError, match="the service is down"):
        toy("same", "report.html=false", retriever=broken)
    assert {p.name: p.read_bytes() for p in first.path.iterdir()} == before
