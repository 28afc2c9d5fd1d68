"""evalframe.report.multipage.labels_for: runs are labelled by what sets their numbers apart."""

from __future__ import annotations

from pathlib import Path

from evalframe.report.model import RunView
from evalframe.report.multipage import labels_for


def view(name: str, *overrides: str) -> RunView:
    return RunView(
        path=Path("runs") / name,
        name=name,
        summary={},
        metrics={},
        gates={},
        config={},
        records=[],
        comparison=None,
        manifest=None,
        overrides=overrides,
    )


def test_overrides_that_change_no_number_do_not_label_a_run() -> None:
    """Where and how a run was shown (the tracker, the terminal's form, the page, the
    folders) sets no run apart: a page of several runs labelled them
    `tracking=none retriever.k1=0.5 report.terminal=brief`."""
    views = [
        view("a", "tracking=none", "+experiment=q", "retriever.k1=0.5", "report.terminal=brief"),
        view("b", "+experiment=q", "retriever.k1=0.9", "hydra.run.dir=b", "report.html=false"),
    ]
    assert labels_for(views) == ["retriever.k1=0.5", "retriever.k1=0.9"]


def test_runs_told_apart_by_nothing_else_are_named_by_their_folders() -> None:
    views = [view("a", "tracking=none"), view("b", "tracking=mlflow")]
    assert labels_for(views) == ["a", "b"]
