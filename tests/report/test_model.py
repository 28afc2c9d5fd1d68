"""What the pages read of a run folder (report.model.RunView)."""

from __future__ import annotations

from pathlib import Path

from evalframe.report.model import RunView


def view(depth: int, detail_k: int | None) -> RunView:
    report = {} if detail_k is None else {"detail_k": detail_k}
    return RunView(
        path=Path("run"),
        name="run",
        summary={"depth": depth},
        metrics={},
        gates={},
        config={"report": report},
        records=[],
        comparison=None,
        manifest=None,
    )


def test_the_drill_down_lists_no_more_than_the_run_retrieved() -> None:
    """B.O.B's depth-5 page said "both top-10 rankings" (detail_k's default)."""
    assert view(5, None).detail_k == 5
    assert view(5, 10).detail_k == 5
    assert view(100, None).detail_k == 10
    assert view(100, 3).detail_k == 3


def test_a_gates_failing_queries_are_listed_one_a_line() -> None:
    from evalframe.report.runpage import gates_list

    failures = [f"q{i}: RR 1.000 → 0.250" for i in range(12)]
    html = gates_list(
        {"gates": [{"name": "pass_to_fail", "passed": False, "required": True,
                    "message": "12 of 40 queries went from pass to fail", "failures": failures}]}
    )  # fmt: skip
    assert html.count("<li>q") == 10  # the first ten, each its own item
    assert "<li>… 2 more in gates.json</li>" in html
    assert html.count('<ul class="failing muted">') == 1
