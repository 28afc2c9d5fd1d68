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


def _with(summary: dict[str, object], records: list[dict[str, object]] | None = None) -> RunView:
    return RunView(
        path=Path("run"),
        name="run",
        summary=summary,
        metrics={},
        gates={},
        config={},
        records=records or [],
        comparison=None,
        manifest=None,
    )


def test_the_curves_are_the_runs_measures_titled_by_its_labels() -> None:
    """ADK: Hit@1 and Hit@5 are "Recall@1", "Recall@5"; RR is "MRR"; nDCG has none."""
    from evalframe.report.runpage import curve_titles

    adk = _with(
        {
            "metrics": ["Hit@1", "Hit@5", "P@5", "RR", "nDCG@5"],
            "headline": ["Hit@1", "RR", "P@5"],
            "labels": {"Hit@1": "Recall@1", "Hit@5": "Recall@5", "RR": "MRR"},
        }
    )
    families = adk.curve_families
    assert families == {"Hit": "Hit", "RR": "RR", "Precision": "P"}
    assert curve_titles(adk, families) == {
        "Hit": "Recall@k (Hit@k)",
        "RR": "MRR@k (RR@k)",
        "Precision": "P@k",
    }
    # two labels for one family say nothing of it as a whole: the canonical name
    mixed = _with({"metrics": ["Hit@1", "Hit@5"], "labels": {"Hit@1": "Top1@1", "Hit@5": "Any@5"}})
    assert curve_titles(mixed, mixed.curve_families) == {"Hit": "Hit@k"}


def test_the_notes_name_the_queries_and_say_each_warning_once() -> None:
    notes = _with(
        {
            "counts": {
                "missing_queries": ["q7", "q9"],
                "extra_queries_in_run": 1,
                "extra_queries": ["x1"],
            },
            "policies": {"missing_query": "zero"},
            "retrieval_warnings": ["run file r.trec: 1 repeated document id(s) removed"],
            "warnings": ["run file r.trec: 1 repeated document id(s) removed", "R@10 deep"],
        }
    ).notes
    assert notes == [
        "2 golden queries have no ranking in the run (policy missing_query=zero): q7, q9",
        "the run has 1 query not in the golden set (ignored): x1",
        "run file r.trec: 1 repeated document id(s) removed",
        "R@10 deep",
    ]
    # a folder from before the ids were kept: the count alone
    old = _with({"counts": {"extra_queries_in_run": 3}}).notes
    assert old == ["the run has 3 queries not in the golden set (ignored)"]
    assert _with({}).notes == []
