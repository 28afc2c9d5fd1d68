"""A run written into a folder that holds a previous run: the previous run's own files
and the exports its summary.json recorded that the new run does not write are removed
(only those, just before the new run writes its summary.json), so the folder
and ``evalframe.load`` describe the new run alone."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

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


def test_a_reporter_failing_after_the_summary_still_drops_the_previous_runs_page(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The new run's summary.json is written before its reporters run: one that fails
    leaves a folder read as the new run, so the earlier run's page and comparison go."""
    from evalframe.report.terminal import TerminalReport

    base = toy("base", "report.html=false")
    first = toy("same", f"baseline={base.path}")
    assert {"comparison.json", "report.html"} <= {p.name for p in first.path.iterdir()}

    def broken(self: object, result: object) -> None:
        raise RuntimeError("the terminal went away")

    monkeypatch.setattr(TerminalReport, "__call__", broken)
    with pytest.raises(RuntimeError, match="the terminal went away"):
        evalframe.run(
            retriever=lambda q: ["d2", "d1"],
            golden=GOLDEN,
            corpus=DOCS,
            overrides=[*SETTINGS, "report.html=false"],
            output_dir="same",
            progress=False,
            print_report=True,
        )
    names = {p.name for p in first.path.iterdir()}
    assert not names & {"comparison.json", "comparison.md", "report.html", "summary.md"}
    # the folder is the new run's: q1's d1 at rank 2, q2's d2 at rank 1
    assert evalframe.load("same").metric("RR") == pytest.approx((1 / 2 + 1) / 2)


def test_the_previous_runs_page_is_gone_before_the_new_summary_is_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run killed while drawing its page (kill -9: no ``finally`` runs) leaves the
    folder as it is at that moment. The earlier run's page and comparison must be gone
    by then, or the new summary.json would be shown with the old run's page."""
    import evalframe.report.page as page

    base = toy("base", "report.html=false")
    first = toy("same", f"baseline={base.path}")
    old_summary = (first.path / "summary.json").read_bytes()
    assert {"comparison.json", "report.html"} <= {p.name for p in first.path.iterdir()}
    seen: dict[str, object] = {}
    draw = page.write_run_report

    def watched(run_dir: Path, **kwargs: object) -> dict[str, Path]:
        seen["names"] = {p.name for p in Path(run_dir).iterdir()}
        seen["summary"] = (Path(run_dir) / "summary.json").read_bytes()
        return draw(run_dir, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(page, "write_run_report", watched)
    toy("same", "report.html=true")
    names = seen["names"]
    assert isinstance(names, set) and "summary.json" in names
    assert seen["summary"] != old_summary  # the new run's summary, written before the page
    assert not names & {"comparison.json", "comparison.md", "report.html", "summary.md"}


# -- exports: the exporters' files, recorded in summary.json -------------------------

#: The Galaxy exporters on the toy run: galaxy_eval.json needs Hit, RR and nDCG at each k
GALAXY_EVAL = ["metrics.measures=[RR,Hit@1,RR@1,nDCG@1]", "+exports.galaxy={ks:[1]}"]
PREDICTIONS = "+exports.galaxy_predictions={}"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_run_of_another_experiment_drops_the_earlier_runs_exports() -> None:
    """`+experiment=galaxy`, then `+experiment=bob` into the same folder: Galaxy's
    galaxy_eval.json stayed beside B.O.B's run, to be read as this run's export."""
    galaxy = evalframe.run("galaxy", ["report.html=false"], output_dir="run", progress=False)
    assert {"galaxy_eval.json", "galaxy_predictions.jsonl"} <= {
        p.name for p in galaxy.path.iterdir()
    }
    (galaxy.path / "notes.txt").write_text("mine")

    bob = evalframe.run("bob", ["report.html=false"], output_dir="run", progress=False)
    after = {p.name for p in bob.path.iterdir()}
    assert "galaxy_eval.json" not in after and "galaxy_predictions.jsonl" not in after
    assert "bob_results.json" in after and (bob.path / "notes.txt").read_text() == "mine"
    assert after <= RunFolder.OWN_FILES | {"bob_results.json", "notes.txt"}
    # the record the next run reads: each export with the SHA-256 of its bytes
    record = RunFolder(bob.path).summary()["exports"]
    assert record == {"bob_results.json": sha256(bob.path / "bob_results.json")}


def test_an_export_written_again_is_kept_and_one_not_written_again_is_removed() -> None:
    first = toy("same", *GALAXY_EVAL, PREDICTIONS)
    assert set(RunFolder(first.path).recorded_exports()) == {
        "galaxy_eval.json",
        "galaxy_predictions.jsonl",
    }
    second = toy("same", PREDICTIONS, retriever=lambda q: ["d2", "d1"])
    names = {p.name for p in second.path.iterdir()}
    assert "galaxy_eval.json" not in names
    assert (second.path / "galaxy_predictions.jsonl").read_text().splitlines() == [
        '{"id": "q1", "predictions": ["d2", "d1"]}',
        '{"id": "q2", "predictions": ["d2", "d1"]}',
    ]
    assert set(RunFolder(second.path).recorded_exports()) == {"galaxy_predictions.jsonl"}
    # and a run without exports records none, and removes the last one
    third = toy("same")
    assert not (third.path / "galaxy_predictions.jsonl").exists()
    assert RunFolder(third.path).summary()["exports"] == {}


def test_an_export_changed_since_the_run_wrote_it_stays() -> None:
    """Only the bytes the earlier run recorded are its: an export edited by hand, or a
    user's own file put in its place, is the user's now."""
    first = toy("same", *GALAXY_EVAL, PREDICTIONS)
    (first.path / "galaxy_eval.json").write_text("my own notes on the numbers\n")
    (first.path / "galaxy_predictions.jsonl").unlink()
    (first.path / "galaxy_predictions.jsonl").write_text("mine\n")

    second = toy("same")
    assert (second.path / "galaxy_eval.json").read_text() == "my own notes on the numbers\n"
    assert (second.path / "galaxy_predictions.jsonl").read_text() == "mine\n"


def test_a_folder_from_before_the_record_keeps_its_exports() -> None:
    """An older evalframe's run records no exports: none of its files is known as an
    export, so none is removed (its own files are, as before)."""
    first = toy("same", PREDICTIONS)
    summary = first.path / "summary.json"
    older = json.loads(summary.read_text())
    del older["exports"]
    summary.write_text(json.dumps(older))
    exported = (first.path / "galaxy_predictions.jsonl").read_bytes()

    second = toy("same")
    assert (second.path / "galaxy_predictions.jsonl").read_bytes() == exported
    assert RunFolder(second.path).summary()["exports"] == {}


def test_a_record_edited_to_name_other_files_removes_none_of_them(tmp_path: Path) -> None:
    """A summary.json edited by hand to name a user's file, a file outside the folder or
    a run file's name, each with its true digest, removes none of them: only plain
    names an exporter could have written are read from the record."""
    outside = tmp_path / "outside.txt"
    outside.write_text("not in the run folder")
    first = toy("same")
    (first.path / ".hidden").write_text("a dot file")
    summary = first.path / "summary.json"
    edited = json.loads(summary.read_text())
    edited["exports"] = {
        "../outside.txt": sha256(outside),
        ".hidden": sha256(first.path / ".hidden"),
        ".": "0" * 64,
        "config.yaml": "0" * 64,
    }
    summary.write_text(json.dumps(edited))
    assert RunFolder(first.path).recorded_exports() == {}

    second = toy("same")
    assert outside.read_text() == "not in the run folder"
    assert (second.path / ".hidden").read_text() == "a dot file"
    assert (second.path / "config.yaml").is_file()
