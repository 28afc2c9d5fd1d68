"""Baselines and comparison as a user runs them: promote, baseline=, compare, refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalframe.app.cli import main
from evalframe.assess.compare import compare_runs, load_run_data
from tests.conftest import GOLDEN, Project, write_jsonl

pytestmark = pytest.mark.slow


def run(project: Project, out: str, *extra: str) -> Path:
    res = project.run(*project.data_args(), f"hydra.run.dir={project.root / out}", *extra)
    assert res.code in (0, 1), res.stderr
    return project.root / out


def promote(project: Project, run_dir: Path) -> int:
    """`evalframe baseline promote RUN_DIR --name main` into the project's baselines/."""
    root = project.root / "baselines"
    return main(["baseline", "promote", str(run_dir), "--name", "main", "--root", str(root)])


def test_promote_then_run_against_the_baseline(project: Project) -> None:
    first = run(project, "r1")
    assert promote(project, first) == 0
    assert sorted(p.name for p in (project.root / "baselines" / "main").iterdir()) == [
        "config.yaml",
        "corpus_manifest.json",  # for the drift view of later runs
        "metrics.json",
        "per_query.jsonl",
        "summary.json",
    ]
    res = project.run(
        *project.data_args(),
        "baseline=main",
        "gates=bob_regression",
        f"hydra.run.dir={project.root / 'r2'}",
    )
    assert res.code == 0, res.stdout + res.stderr
    assert "Comparison: this run vs baseline main" in res.stdout
    comparison = json.loads((project.root / "r2" / "comparison.json").read_text())
    assert comparison["metrics"]["RR"]["delta"] == 0.0  # the same system: no change
    assert comparison["metrics"]["RR"]["verdict"] == "within noise"
    assert (project.root / "r2" / "comparison.md").read_text().startswith("## Comparison")


def test_a_worse_system_trips_the_regression_gates(project: Project) -> None:
    first = run(project, "r1")
    promote(project, first)
    bad = project.root / "bad.run"
    bad.write_text("1 Q0 gates 1 2.0 s\n2 Q0 install 1 2.0 s\n3 Q0 slices 1 2.0 s\n")
    res = project.run(
        *project.data_args(),
        "baseline=main",
        "gates=bob_regression",
        "retriever=run_file",
        f"retriever.path={bad}",
        f"hydra.run.dir={project.root / 'r3'}",
    )
    assert res.code == 1
    assert "✗ recall_drop" in res.stdout and "✗ pass_to_fail" in res.stdout
    # `compare` runs no gate, and says so with the command that runs r3's against r1
    shown = project.run("compare", "r1", "r3")
    assert shown.code == 0, shown.stderr
    said = " ".join(shown.stdout.split())
    assert "Gates: compare runs none" in said and "with its own baseline, main, not with a" in said
    command = shown.stdout.strip().splitlines()[-1].split()
    assert command == ["evalframe", "rescore", "r3", "baseline=r1", "--out", "DIR"]
    gated = project.run(*command[1:-1], "r3-vs-r1")
    assert gated.code == 1 and "✗ pass_to_fail" in gated.stdout, gated.stdout + gated.stderr


def test_a_baseline_on_another_golden_set_is_refused(project: Project) -> None:
    first = run(project, "r1")
    promote(project, first)
    write_jsonl(project.golden, [*GOLDEN, {"id": 9, "question": "new?", "expected_chunks": []}])
    res = project.run(*project.data_args(), "baseline=main")
    assert res.code == 2 and "was scored on another golden set" in res.stderr
    allowed = project.run(*project.data_args(), "baseline=main", "compare.allow_mismatch=true")
    assert allowed.code == 0, allowed.stderr


def test_compare_two_folders_writes_json_and_markdown(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    a = run(project, "a")
    b = run(project, "b", "retriever.k1=0.5")
    assert main(["compare", str(a), str(b), "--out", str(project.root / "cmp")]) == 0
    out = capsys.readouterr().out
    # the tiny set's negative example is in both runs, and every rank metric skips it: the
    # header counts what the W/T/L columns count
    assert "(3 paired queries; 1 more that one run or both did not score)" in " ".join(out.split())
    data = json.loads((project.root / "cmp" / "comparison.json").read_text())
    assert data["paired_queries"] == 4 and data["correction"] == "holm"
    again = compare_runs(load_run_data(a), load_run_data(b))
    assert (
        again.as_dict()["metrics"]["RR"]["p_randomization"]
        == data["metrics"]["RR"]["p_randomization"]
    )  # the seeded randomization test gives the same p on every call


def test_a_run_compared_with_itself_is_said(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """`compare run1 run1` (a typo of the second name) compared in silence, all deltas 0."""
    a = run(project, "a")
    assert main(["compare", str(a), str(a)]) == 0
    assert (
        f"warning: {a} name one run folder ({a}): it is compared with itself, so every delta "
        "below is 0 by construction"
    ) in capsys.readouterr().err


def test_compare_never_writes_into_a_run_folder_or_over_a_file(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run's comparison.json is its comparison with its baseline, which its page shows
    as what it was held to: `compare A B --out A` would put another one there."""
    a = run(project, "a")
    b = run(project, "b", "retriever.k1=0.5")
    before = {p.name: p.read_bytes() for p in a.iterdir() if p.is_file()}
    capsys.readouterr()
    for out in (a, b):
        assert main(["compare", str(a), str(b), "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: option --out: {out} is the folder of a run: ")
        assert "Traceback" not in err
    assert {p.name: p.read_bytes() for p in a.iterdir() if p.is_file()} == before
    assert not (b / "comparison.json").exists()
    named = project.root / "cmp.json"  # a file where the folder goes: exit 2, not a crash
    named.write_text("kept\n")
    with pytest.raises(SystemExit) as stopped:  # argparse's line (core.argtypes.folder)
        main(["compare", str(a), str(b), "--out", str(named)])
    assert stopped.value.code == 2
    assert f"error: argument --out: {named} is a file, not a folder" in capsys.readouterr().err
    assert named.read_text() == "kept\n"


def test_compare_refuses_different_golden_sets(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    a = run(project, "a")
    write_jsonl(project.golden, GOLDEN[:3])
    b = run(project, "b")
    assert main(["compare", str(a), str(b)]) == 2
    assert "different golden sets" in capsys.readouterr().err
    assert main(["compare", str(a), str(b), "--allow-mismatch"]) == 0


def test_more_than_two_runs_make_one_table_corrected_across_it(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = run(project, "ref")
    b = run(project, "b", "retriever.k1=0.5")
    c = run(project, "c", "retriever.k1=2.0")
    assert (
        main(
            [
                "compare",
                str(ref),
                str(b),
                "--out",  # options may stand between the runs
                str(project.root / "table"),
                str(c),
                "--metrics",
                "RR",
                "R@5",
            ]
        )
        == 0
    )
    assert "(reference)" in capsys.readouterr().out
    table = json.loads((project.root / "table" / "comparison.json").read_text())
    assert set(table["runs"]) == {str(b), str(c)}
    # Holm across the 4 cells: every adjusted p is at least its raw p
    for cells in table["runs"].values():
        for cell in cells.values():
            assert cell["p_adjusted"] >= cell["p_randomization"]


def test_compare_says_which_metrics_only_one_run_computed(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run re-scored with one more metric, compared with the run: the table holds the
    shared metrics only, and the note names the one left out and whose it is."""
    a = run(project, "a")
    b = project.root / "b"
    assert main(["rescore", str(a), "--out", str(b), "metrics.measures=[R@5,RR,nDCG@3]"]) == 0
    before = set(json.loads((a / "metrics.json").read_text()))
    assert "nDCG@3" not in before and "nDCG@3" in json.loads((b / "metrics.json").read_text())
    capsys.readouterr()
    assert main(["compare", str(a), str(b), "--all"]) == 0
    captured = capsys.readouterr()
    assert f"note: not compared: nDCG@3, which only {b} computed" in captured.err
    assert "nDCG@3" not in captured.out
    # without --all only the headline metrics are compared: a metric in no run's headline
    # (P@3 here) was left out of nothing, and the note named it all the same
    c = project.root / "c"
    measures = "metrics.measures=[R@5,RR,nDCG@10,P@3]"
    assert main(["rescore", str(a), "--out", str(c), measures]) == 0
    capsys.readouterr()
    assert main(["compare", str(a), str(c)]) == 0
    assert "not compared" not in capsys.readouterr().err
    assert main(["compare", str(a), str(c), "--all"]) == 0
    assert f"note: not compared: P@3, which only {c} computed" in capsys.readouterr().err
    # with --metrics, only what was named: RR is compared, P@3 was never asked for
    assert main(["compare", str(a), str(c), "--metrics", "MRR"]) == 0
    assert "not compared" not in capsys.readouterr().err


def test_a_run_says_which_metrics_its_baseline_lacks(project: Project) -> None:
    """A run that measures one more metric than its baseline: the comparison holds the
    shared ones, and the note names the other, as `evalframe compare` does."""
    promote(project, run(project, "r1"))
    res = project.run(
        *project.data_args(),
        "baseline=main",
        "metrics.measures=[R@5,RR,nDCG@10,P@3]",
        f"hydra.run.dir={project.root / 'r2'}",
    )
    assert res.code == 0, res.stderr
    assert "note: not compared: P@3, which only this run computed" in res.stderr
    comparison = json.loads((project.root / "r2" / "comparison.json").read_text())
    assert "P@3" not in comparison["metrics"] and "RR" in comparison["metrics"]
