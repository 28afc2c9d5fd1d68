"""``evalframe rescore`` and ``evalframe cache`` as a user runs them."""

from __future__ import annotations

import gc
import hashlib
import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from evalframe.app.cli import main
from evalframe.assess.runfolder import RunFolder
from evalframe.core.types import Ranking, Run
from evalframe.pipeline.config import validate_experiment
from evalframe.pipeline.run import run_experiment
from evalframe.plugin.registry import RETRIEVERS
from evalframe.report.page import RunPage
from evalframe.report.terminal import TerminalReport
from tests.conftest import GOLDEN, Project, raw_config
from tests.test_cache import Counting, CountingConfig


def stored_run(project: Project) -> Path:
    """A run made by a retriever whose calls are counted."""
    exp = validate_experiment(
        raw_config(
            project,
            retriever={"name": "counting"},
            cache={"retrieval": False},
            metrics={"measures": ["R@5", "RR", "nDCG@10", "AP"]},
        )
    )
    run_experiment(exp, reporters=[TerminalReport(io.StringIO())], progress=False)
    return project.root / "out"


def test_rescore_reproduces_every_number_without_retrieving(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    with RETRIEVERS.scoped() as reg:
        reg.add("counting", Counting, CountingConfig)
        run_dir = stored_run(project)
        before = json.loads((run_dir / "metrics.json").read_text())
        Counting.calls = []
        code = main(["rescore", str(run_dir), "--out", str(project.root / "again")])
        assert code == 0
        assert Counting.calls == []  # the retriever was never called
    after = json.loads((project.root / "again" / "metrics.json").read_text())
    assert after == before
    assert "Result: PASSED" in capsys.readouterr().out


def test_a_rescore_of_another_machines_run_uses_this_machines_cache(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run's config.yaml names the cache folder of the machine it ran on: a rescore here
    made /home/alice/.cache/evalframe (or failed to). A folder that is not here gives way
    to this machine's default, EVALFRAME_CACHE_DIR; an override still wins."""
    import yaml

    with RETRIEVERS.scoped() as reg:
        reg.add("counting", Counting, CountingConfig)
        run_dir = stored_run(project)
        config = run_dir / "config.yaml"
        stored = yaml.safe_load(config.read_text())
        alice = project.root / "alice-home" / ".cache" / "evalframe"  # absolute, not here
        stored["output"]["cache_dir"] = str(alice)
        config.write_text(yaml.safe_dump(stored))
        here = project.root / "here"
        monkeypatch.setenv("EVALFRAME_CACHE_DIR", str(here))
        assert main(["rescore", str(run_dir), "--out", str(project.root / "again")]) == 0
        again = yaml.safe_load((project.root / "again" / "config.yaml").read_text())
        assert again["output"]["cache_dir"] == str(here)
        assert here.is_dir() and not (project.root / "alice-home").exists()
        chosen = project.root / "chosen"
        argv = ["rescore", str(run_dir), "--out", str(project.root / "third")]
        assert main([*argv, f"output.cache_dir={chosen}"]) == 0
        assert chosen.is_dir() and not (project.root / "alice-home").exists()
        # a stored folder that is here (this machine's own run) is kept
        stored["output"]["cache_dir"] = str(chosen)
        config.write_text(yaml.safe_dump(stored))
        assert main(["rescore", str(run_dir), "--out", str(project.root / "fourth")]) == 0
        kept = yaml.safe_load((project.root / "fourth" / "config.yaml").read_text())
        assert kept["output"]["cache_dir"] == str(chosen)
    before = json.loads((run_dir / "metrics.json").read_text())
    for out in ("again", "third", "fourth"):
        assert json.loads((project.root / out / "metrics.json").read_text()) == before


def test_a_rescore_in_this_process_freezes_what_it_loads_and_gives_it_all_back(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """rescore's scope (core.gcpause.long_lived): the stored run and the records are
    settled while the command runs, and nothing is left frozen when it returns."""
    freezes: list[int] = []
    real = gc.freeze

    def counted() -> None:
        freezes.append(1)
        real()

    with RETRIEVERS.scoped() as reg:
        reg.add("counting", Counting, CountingConfig)
        run_dir = stored_run(project)
        assert gc.get_freeze_count() == 0
        monkeypatch.setattr(gc, "freeze", counted)
        assert main(["rescore", str(run_dir), "--out", str(project.root / "again")]) == 0
    assert len(freezes) >= 3  # the golden set, the stored run, the records
    assert gc.get_freeze_count() == 0


def test_each_run_gives_back_what_it_froze_before_the_next(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sweep's jobs run one after the other in one process (Hydra's basic launcher):
    each run's scope ends with the run, so what it froze (cycles included) is the
    collector's again before the next job, rather than piling up over the sweep."""
    given_back: list[int] = []
    real = gc.unfreeze

    def counted() -> None:
        given_back.append(1)
        real()

    monkeypatch.setattr(gc, "unfreeze", counted)
    with RETRIEVERS.scoped() as reg:
        reg.add("counting", Counting, CountingConfig)
        for job in (1, 2):
            stored_run(project)
            assert gc.get_freeze_count() == 0
            assert len(given_back) == job


def test_rescore_with_other_metrics_and_a_gate(project: Project) -> None:
    with RETRIEVERS.scoped() as reg:
        reg.add("counting", Counting, CountingConfig)
        run_dir = stored_run(project)
        code = main(
            [
                "rescore",
                str(run_dir),
                "--out",  # between the run and its overrides, as a user may write it
                str(project.root / "again"),
                "metrics.measures=[P@1,R@10,RR]",
                "gates.floor.type=threshold",
                "gates.floor.metric=P@1",
                "gates.floor.value=0.99",
            ]
        )
    assert code == 1  # the new gate fails: P@1 is 1/3 (only q1 has "install" first)
    metrics = json.loads((project.root / "again" / "metrics.json").read_text())
    assert set(metrics) >= {"P@1", "R@10"} and "AP" not in metrics
    assert metrics["P@1"] == pytest.approx((1 + 0 + 0) / 3)


def test_rescore_under_another_metric_pack_and_gate_pack(project: Project) -> None:
    """#13 item 7: `group=option` picks a config group's file, as on a run."""
    with RETRIEVERS.scoped() as reg:
        reg.add("counting", Counting, CountingConfig)
        run_dir = stored_run(project)
        Counting.calls = []
        out = project.root / "bob"
        code = main(["rescore", str(run_dir), "metrics=bob", "gates=bob_bands", "--out", str(out)])
        assert Counting.calls == []
    assert code == 0  # the bands are advisory: they never fail a run
    summary = json.loads((out / "summary.json").read_text())
    assert summary["metrics"] == ["R@5", "P@5", "RR"]
    assert summary["policies"]["no_relevant"] == "bob"
    gates = json.loads((out / "gates.json").read_text())["gates"]
    assert {g["name"] for g in gates} == {"recall_band", "precision_band", "mrr_band"}


def test_rescore_refuses_an_unknown_option_and_another_experiment(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    with RETRIEVERS.scoped() as reg:
        reg.add("counting", Counting, CountingConfig)
        run_dir = stored_run(project)
        assert main(["rescore", str(run_dir), "gates=bob_regresion"]) == 2
        err = capsys.readouterr().err
        assert "no gates config named 'bob_regresion'" in err and "bob_regression" in err
        assert main(["rescore", str(run_dir), "experiment=bob"]) == 2
        assert "config key experiment" in capsys.readouterr().err
        # a value YAML cannot read (an unclosed list or quote) crashed in OmegaConf (exit 3)
        before = (run_dir / "metrics.json").read_bytes()
        for bad, key in (("depth=[1", "depth"), ("metrics.measures='[R@0]", "metrics.measures")):
            assert main(["rescore", str(run_dir), bad]) == 2
            err = capsys.readouterr().err
            assert err.startswith(f"error: config key {key}: the value of override ")
            assert "is not YAML evalframe can read" in err and "Traceback" not in err
        assert (run_dir / "metrics.json").read_bytes() == before


def test_rescore_of_a_folder_that_is_not_a_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["rescore", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path} is not a run folder: it has neither config.yaml nor summary.json" in err
    assert "'Saved results to:'" in err and "Traceback" not in err


def test_rescore_of_a_run_without_its_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "summary.json").write_text("{}")
    assert main(["rescore", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path} is a run folder without its config.yaml" in err
    assert "restore config.yaml from where the folder came" in err


def test_rescore_of_a_run_file_with_a_control_character_in_an_id(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder with only ``run.trec`` (as a baseline may be) is read from it; an id
    evalframe cannot keep is refused with its line and exit 2, not a traceback."""
    with RETRIEVERS.scoped() as reg:
        reg.add("counting", Counting, CountingConfig)
        run_dir = stored_run(project)
        (run_dir / "per_query.jsonl").unlink()
        trec = run_dir / "run.trec"
        first, *rest = trec.read_text().splitlines(keepends=True)
        qid, q0, doc, *tail = first.split(" ")
        trec.write_text(" ".join([qid, q0, doc + "\x01", *tail]) + "".join(rest))
        capsys.readouterr()
        assert main(["rescore", str(run_dir), "report.html=false"]) == 2
    err = capsys.readouterr().err
    assert f"{trec}:1: the doc id" in err and "holds a control character" in err
    assert "Traceback" not in err


def test_cache_info_and_clear(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "CACHEDIR.TAG").write_text("Signature: 8a477f597d28d172789f06886806bc55\n")
    (tmp_path / "runs" / "ab").mkdir(parents=True)
    (tmp_path / "runs" / "ab" / "abc.json").write_text("{}")
    assert main(["cache", "info", "--dir", str(tmp_path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["kinds"]["runs"] == {"files": 1, "bytes": 2}
    (tmp_path / "mlflow-pending").mkdir()
    (tmp_path / "mlflow-pending" / "u.path").write_text("/r/mlflow_pending.json")
    assert main(["cache", "clear", "--dir", str(tmp_path)]) == 0
    assert not (tmp_path / "runs").exists()
    out = capsys.readouterr().out
    assert f"cleared {tmp_path}: runs 2 B (2 B freed)" in out
    assert "kept mlflow-pending: pointers to runs not logged to MLflow yet" in out
    assert main(["cache", "clear", "--dir", str(tmp_path), "--kind", "bm25"]) == 2
    # a mistyped --dir "cleared ...: nothing was cached", exit 0
    for action in ("info", "clear"):
        assert main(["cache", action, "--dir", str(tmp_path / "typo")]) == 2
        assert "there is no cache folder at" in capsys.readouterr().err


class HalfEmpty(Counting):
    """Answers query 2 with nothing (which a TREC file cannot hold), the others as Counting."""

    def retrieve(self, query: Any, k: int) -> Ranking:
        if query.id == "2":
            return Ranking(query_id=query.id)
        return super().retrieve(query, k)


def _half_empty_run(project: Project) -> tuple[Path, Run]:
    with RETRIEVERS.scoped() as reg:
        reg.add("half_empty", HalfEmpty, CountingConfig)
        exp = validate_experiment(
            raw_config(project, retriever={"name": "half_empty"}, cache={"retrieval": False})
        )
        result = run_experiment(exp, reporters=[TerminalReport(io.StringIO())], progress=False)
    return project.root / "out", result.evaluation.run


def test_a_run_says_what_a_rescore_needs_of_its_run_file(project: Project) -> None:
    run_dir, _ = _half_empty_run(project)
    facts = json.loads((run_dir / "summary.json").read_text())["run_file"]
    assert facts == {
        "sha256": hashlib.sha256((run_dir / "run.trec").read_bytes()).hexdigest(),
        "empty": ["2"],
        "extras": False,
    }


def test_the_stored_run_comes_from_the_run_file_alone_when_the_facts_hold(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir, made = _half_empty_run(project)

    def unread(self: RunFolder) -> Any:
        raise AssertionError("per_query.jsonl was read")

    monkeypatch.setattr(RunFolder, "per_query", unread)
    stored = RunFolder(run_dir).run()
    assert stored.rankings.keys() == made.rankings.keys()
    for qid, ranking in made.rankings.items():
        got = stored.rankings[qid]
        assert (got.doc_ids, got.scores, got.latency_ms) == (
            ranking.doc_ids,
            ranking.scores,
            ranking.latency_ms,
        )
    assert stored.rankings["2"].doc_ids == ()  # answered with nothing, not missing


def test_a_hand_edited_run_file_is_read_beside_per_query(project: Project) -> None:
    """The facts describe the file byte for byte: after an edit per_query.jsonl is read
    too, and (as before the facts) its rankings win where the two disagree."""
    run_dir, made = _half_empty_run(project)
    trec = run_dir / "run.trec"
    trec.write_text(trec.read_text().replace(" install ", " cache ", 1))
    stored = RunFolder(run_dir).run()
    assert {q: r.doc_ids for q, r in stored.rankings.items()} == {
        q: r.doc_ids for q, r in made.rankings.items()
    }


def test_rescore_through_the_run_file_alone_reproduces_the_folder(project: Project) -> None:
    run_dir, _ = _half_empty_run(project)
    with RETRIEVERS.scoped() as reg:  # the stored config names it (the rescore never calls it)
        reg.add("half_empty", HalfEmpty, CountingConfig)
        assert main(["rescore", str(run_dir), "--out", str(project.root / "again")]) == 0
        manifest = run_dir / "corpus_manifest.json"
        written = manifest.stat().st_mtime_ns
        assert main(["rescore", str(run_dir)]) == 0  # in place: the corpus manifest is kept
        assert manifest.stat().st_mtime_ns == written
    names = ("per_query.jsonl", "summary.json", "metrics.json", "gates.json", "run.trec")
    for name in (*names, "corpus_manifest.json"):  # the manifest copied, not written again
        assert (project.root / "again" / name).read_bytes() == (run_dir / name).read_bytes()


def test_rescore_out_the_run_folder_itself_says_it_is_in_place(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--out`` promises a copy elsewhere; given the run's own folder (by another spelling)
    the rescore is in place, and says so rather than let the user think it kept the run."""
    run_dir, _ = _half_empty_run(project)
    with RETRIEVERS.scoped() as reg:
        reg.add("half_empty", HalfEmpty, CountingConfig)
        capsys.readouterr()
        same = run_dir.parent / "." / run_dir.name
        assert main(["rescore", str(run_dir), "--out", str(same)]) == 0
    err = capsys.readouterr().err
    assert f"note: --out {same} is the run folder itself: it is re-scored in place" in err
    assert RunFolder.is_run(run_dir)


def test_a_per_query_file_with_more_ids_than_scores_is_a_located_error(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """A hand-edited per_query.jsonl is refused with its line and exit 2, not a traceback."""
    run_dir, _ = _half_empty_run(project)
    path = run_dir / "per_query.jsonl"
    lines = path.read_text().splitlines()
    record = json.loads(lines[0])
    record["scores"] = record["scores"][:-1]
    lines[0] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    assert main(["report", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:1: query '1' lists 2 retrieved ids but 1 scores" in err
    assert "Traceback" not in err


def test_rescore_of_a_folder_of_runs_names_its_newest_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`evalframe rescore outputs/quickstart` (the experiment's folder, not a run): exit 2,
    and the hint gives the run to use, not "check the path"."""
    for stamp in ("2026-11-27_07-00-00", "2026-11-27_08-00-00"):
        run = tmp_path / "quickstart" / stamp
        run.mkdir(parents=True)
        (run / "summary.json").write_text('{"layout": 1}')
    assert main(["rescore", str(tmp_path / "quickstart")]) == 2
    err = capsys.readouterr().err
    assert "a folder of 2 run(s)" in err
    assert f"the newest: {tmp_path / 'quickstart' / '2026-11-27_08-00-00'}" in err
    assert "Traceback" not in err


def test_rescore_of_a_run_whose_config_is_broken_yaml_is_a_data_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It crashed with yaml's ParserError (exit 3, "this is a bug")."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "summary.json").write_text('{"layout": 1}')
    (run / "config.yaml").write_text("experiment: x\nmetrics: [\n")
    assert main(["rescore", str(run)]) == 2
    err = capsys.readouterr().err
    assert f"{run / 'config.yaml'}:3: stored run config" in err and "not valid YAML" in err
    assert "Traceback" not in err


def test_rescore_says_when_run_trec_cannot_be_read(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """A line appended to run.trec was skipped without a word: the rescore still scores
    per_query.jsonl's rankings (the same numbers), and says why run.trec was not used."""
    with RETRIEVERS.scoped() as reg:  # the stored config names it: validated on rescore
        reg.add("counting", Counting, CountingConfig)
        run_dir = stored_run(project)
        before = json.loads((run_dir / "metrics.json").read_text())
        lines = (run_dir / "run.trec").read_text().count("\n")
        with (run_dir / "run.trec").open("a") as fh:
            fh.write("hello world\n")
        capsys.readouterr()
        assert main(["rescore", str(run_dir), "--out", str(project.root / "again")]) == 0
    err = capsys.readouterr().err
    assert f"run.trec:{lines + 1} cannot be read (a run line has 2 columns)" in err
    assert json.loads((project.root / "again" / "metrics.json").read_text()) == before


# -- the parsed run.trec, kept in the cache under its SHA-256 ---------------------------------


def _columns_entry(project: Project, run_dir: Path) -> Path:
    digest = hashlib.sha256((run_dir / "run.trec").read_bytes()).hexdigest()
    return project.root / "cache" / "columns" / f"{digest}.v1.npz"


@pytest.fixture
def every_run_file_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache keeps run files of 4 MB and more; these tests' runs are a few hundred bytes."""
    monkeypatch.setattr("evalframe.assess.runfolder._COLUMNS_MIN_BYTES", 0)


def test_a_rescore_keeps_the_parsed_run_file_and_the_next_reads_it_unparsed(
    project: Project, every_run_file_kept: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir, made = _half_empty_run(project)
    with RETRIEVERS.scoped() as reg:
        reg.add("half_empty", HalfEmpty, CountingConfig)
        assert main(["rescore", str(run_dir), "--out", str(project.root / "first")]) == 0
        entry = _columns_entry(project, run_dir)
        assert entry.is_file()

        def unparsed(*args: Any, **kwargs: Any) -> Any:
            raise AssertionError("run.trec was parsed again")

        monkeypatch.setattr("evalframe.assess.runfolder.read_run_columns", unparsed)
        assert main(["rescore", str(run_dir), "--out", str(project.root / "second")]) == 0
    for name in ("per_query.jsonl", "metrics.json", "summary.json", "run.trec"):
        first, second = (project.root / d / name for d in ("first", "second"))
        assert second.read_bytes() == first.read_bytes() == (run_dir / name).read_bytes(), name
    stored = RunFolder(run_dir).run(project.root / "cache")
    assert {q: (r.doc_ids, r.scores) for q, r in stored.rankings.items()} == {
        q: (r.doc_ids, r.scores) for q, r in made.rankings.items()
    }


def test_a_damaged_cache_entry_is_parsed_again_and_replaced(
    project: Project, every_run_file_kept: None
) -> None:
    run_dir, made = _half_empty_run(project)
    cache = project.root / "cache"
    RunFolder(run_dir).run(cache)
    entry = _columns_entry(project, run_dir)
    good = entry.read_bytes()
    entry.write_bytes(good[: len(good) // 2])  # a disk error, a killed copy
    stored = RunFolder(run_dir).run(cache)
    assert {q: r.doc_ids for q, r in stored.rankings.items()} == {
        q: r.doc_ids for q, r in made.rankings.items()
    }
    assert entry.read_bytes() == good


def test_an_edited_run_file_is_not_read_from_the_cache(
    project: Project, every_run_file_kept: None
) -> None:
    """The entry stands for the bytes it was parsed from: after an edit, the facts in
    summary.json no longer hold, and run.trec is read beside per_query.jsonl."""
    run_dir, made = _half_empty_run(project)
    cache = project.root / "cache"
    RunFolder(run_dir).run(cache)
    trec = run_dir / "run.trec"
    trec.write_text(trec.read_text().replace(" install ", " cache ", 1))
    stored = RunFolder(run_dir).run(cache)
    assert {q: r.doc_ids for q, r in stored.rankings.items()} == {
        q: r.doc_ids for q, r in made.rankings.items()
    }
    assert len(list((cache / "columns").iterdir())) == 1  # only the first file's entry


def test_a_cache_that_cannot_be_written_costs_a_warning_not_the_rescore(
    project: Project, every_run_file_kept: None, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir, made = _half_empty_run(project)
    blocked = project.root / "blocked"
    blocked.write_text("a file where the cache folder would be")
    stored = RunFolder(run_dir).run(blocked)
    assert stored.rankings.keys() == made.rankings.keys()
    err = capsys.readouterr().err
    assert "could not keep the parsed run.trec in the cache" in err
    assert "the next rescore of it parses it again" in err


def test_small_run_files_are_not_kept(project: Project) -> None:
    run_dir, _ = _half_empty_run(project)
    RunFolder(run_dir).run(project.root / "cache")
    assert not (project.root / "cache" / "columns").exists()


def test_cache_info_lists_the_kept_run_files(
    project: Project, every_run_file_kept: None, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir, _ = _half_empty_run(project)
    cache = project.root / "cache"
    RunFolder(run_dir).run(cache)
    capsys.readouterr()
    assert main(["cache", "info", "--dir", str(cache)]) == 0
    assert "columns" in capsys.readouterr().out
    assert main(["cache", "clear", "--dir", str(cache), "--kind", "columns"]) == 0
    assert not any((cache / "columns").glob("*.npz"))


def test_a_file_digest_is_remembered_only_while_the_file_is_unchanged(tmp_path: Path) -> None:
    """file_sha256 answers a rescore's second question about run.trec from memory: never
    after a change, even one that keeps the size and puts the old modification time back."""
    from evalframe.assess.runfolder import file_sha256

    path = tmp_path / "run.trec"
    path.write_bytes(b"q1 Q0 d1 1 1.0 a\n")
    long_ago = 1_000_000_000
    os.utime(path, (long_ago, long_ago))
    assert file_sha256(path) == hashlib.sha256(path.read_bytes()).hexdigest()
    path.write_bytes(b"q1 Q0 d2 1 1.0 a\n")  # same size
    os.utime(path, (long_ago, long_ago))  # same modification time
    assert file_sha256(path) == hashlib.sha256(b"q1 Q0 d2 1 1.0 a\n").hexdigest()
    fresh = tmp_path / "fresh.trec"  # modified just now: hashed each time, as git does
    fresh.write_bytes(b"q1 Q0 d1 1 1.0 a\n")
    assert file_sha256(fresh) == hashlib.sha256(fresh.read_bytes()).hexdigest()
    fresh.write_bytes(b"q1 Q0 d3 1 1.0 a\n")
    assert file_sha256(fresh) == hashlib.sha256(fresh.read_bytes()).hexdigest()


@pytest.mark.parametrize("long_kind", [True, False])
def test_cache_info_keeps_long_kind_names_in_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], long_kind: bool
) -> None:
    (tmp_path / "CACHEDIR.TAG").write_text("Signature: 8a477f597d28d172789f06886806bc55\n")
    (tmp_path / "bm25").mkdir()
    (tmp_path / "bm25" / "index").write_bytes(b"x" * 10)
    if long_kind:
        (tmp_path / "mlflow-pending").mkdir()
    assert main(["cache", "info", "--dir", str(tmp_path)]) == 0
    rows = capsys.readouterr().out.splitlines()[1:]
    sizes = {len(row) for row in rows}  # every size ends in the same column
    assert len(sizes) == 1, rows
    assert {row.index(" files") for row in rows if " files" in row} == {rows[0].index(" files")}


def test_a_cache_folder_that_cannot_be_used_is_named_not_a_crash(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file where the cache folder should be: exit 2 with the folder and the settings
    that move it, no traceback. The stored config names the run's cache folder, and keeps
    it when something is there (EVALFRAME_CACHE_DIR is the default of a config that names
    none, or names a folder not on this machine); an override moves it."""
    run_dir, _ = _half_empty_run(project)
    blocked = project.root / "blocked"
    blocked.write_text("a file where the cache folder would be")
    config = run_dir / "config.yaml"
    config.write_text(config.read_text().replace(str(project.root / "cache"), str(blocked)))
    assert str(blocked) in config.read_text()
    monkeypatch.setenv("EVALFRAME_CACHE_DIR", str(project.root / "elsewhere"))
    with RETRIEVERS.scoped() as reg:
        reg.add("half_empty", HalfEmpty, CountingConfig)
        code = main(["rescore", str(run_dir), "--out", str(project.root / "again")])
        err = capsys.readouterr().err
        assert code == 2, err
        assert "the cache folder is a file, not a folder" in err and str(blocked) in err
        assert "output.cache_dir" in err and "Traceback" not in err
        moved = f"output.cache_dir={project.root / 'cache'}"
        code = main(["rescore", str(run_dir), "--out", str(project.root / "again"), moved])
    assert code == 0, capsys.readouterr().err


def test_a_hand_edited_run_file_is_said_and_does_not_change_the_next_rescore(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """per_query.jsonl's rankings win over an edited run.trec: the rescore says so, and
    writes run.trec again from what it scored, so that the new folder's run_file facts
    describe it and a rescore of that folder gives the same numbers."""
    run_dir, made = _half_empty_run(project)
    trec = run_dir / "run.trec"
    edited = trec.read_text().replace(" install ", " cache ", 1)
    trec.write_text(edited)
    first, second = project.root / "first", project.root / "second"
    with RETRIEVERS.scoped() as reg:
        reg.add("half_empty", HalfEmpty, CountingConfig)
        assert main(["rescore", str(run_dir), "--out", str(first)]) == 0
        err = capsys.readouterr().err
        assert "changed since the run wrote it" in err and "per_query.jsonl" in err
        assert (first / "run.trec").read_text() != edited
        assert main(["rescore", str(first), "--out", str(second)]) == 0
    assert "changed since the run wrote it" not in capsys.readouterr().err
    for name in ("metrics.json", "per_query.jsonl", "run.trec"):
        assert (second / name).read_bytes() == (first / name).read_bytes(), name
    assert json.loads((first / "metrics.json").read_text()) == json.loads(
        (run_dir / "metrics.json").read_text()
    )
    assert made.rankings  # the run the folder was made from


def test_cache_info_and_clear_say_when_the_database_cannot_be_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A damaged database counted no entries and looked empty; clear then said
    'nothing was cached' while it deleted the file."""
    (tmp_path / "entries.sqlite3").write_bytes(b"garbage!")
    assert main(["cache", "info", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "the database (entries.sqlite3) cannot be read (file is not a database)" in out
    assert main(["cache", "info", "--dir", str(tmp_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["unreadable"] == "file is not a database"
    assert main(["cache", "clear", "--dir", str(tmp_path)]) == 0
    assert f"cleared {tmp_path}: the unreadable database (8 B freed)" in capsys.readouterr().out
    assert not (tmp_path / "entries.sqlite3").exists()


def test_cache_commands_refuse_a_file_as_the_folder_and_name_the_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    assert main(["cache", "info", "--dir", str(a_file)]) == 2
    assert f"error: {a_file}: the cache folder is a file, not a folder" in capsys.readouterr().err
    empty = tmp_path / "cache"
    empty.mkdir()
    assert main(["cache", "clear", "--dir", str(empty), "--kind", "plots"]) == 2
    assert "error: option --kind: the cache at" in capsys.readouterr().err


def test_cache_commands_never_touch_a_folder_that_is_not_evalframes_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`cache clear --dir proj` emptied a project folder ("cleared proj: src 4 B"), its
    loose files uncounted; `info` listed src as a kind, `--kind src` deleted it."""
    proj = tmp_path / "proj"
    (proj / "src").mkdir(parents=True)
    (proj / "notes.txt").write_text("hi\n")
    (proj / "src" / "main.py").write_text("x = 1\n")
    for argv in (["clear"], ["clear", "--kind", "src"], ["info"], ["info", "--json"]):
        assert main(["cache", *argv, "--dir", str(proj)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {proj}: this is not an evalframe cache folder")
        assert "got 2 entries: notes.txt, src" in err
    assert (proj / "notes.txt").read_text() == "hi\n"
    assert (proj / "src" / "main.py").read_text() == "x = 1\n"


@pytest.mark.parametrize("spelled", ["relative", "absolute", "dotted"])
def test_a_rescore_in_place_keeps_config_yaml_however_the_folder_is_typed(
    project: Project,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    spelled: str,
) -> None:
    """README: every file but timings.json is the same bytes for the same inputs. A
    relative path on the command line rewrote output.dir, which the run wrote absolute."""
    from tests.report.test_pages import run

    run(project, "alpha")
    folder = project.root / "alpha"
    before = (folder / "config.yaml").read_bytes()
    monkeypatch.chdir(project.root)
    typed = {"relative": "alpha", "absolute": str(folder), "dotted": "./x/../alpha"}[spelled]
    (project.root / "x").mkdir()
    assert main(["rescore", typed]) in (0, 1)
    assert (folder / "config.yaml").read_bytes() == before
    assert main(["rescore", "alpha", "--out", "beside"]) in (0, 1)
    assert "dir: beside" in (project.root / "beside" / "config.yaml").read_text()
    capsys.readouterr()


def test_a_rescore_says_when_and_from_which_commit_its_rankings_were_retrieved(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """timings.json's created and git are the rescore's own; the run's are kept beside
    them as ``retrieved``, through a rescore of a rescore, and the page and summary say so."""
    from tests.report.test_pages import run

    run(project, "alpha")
    first = json.loads((project.root / "alpha" / "timings.json").read_text())
    monkeypatch.chdir(project.root)
    assert main(["rescore", "alpha", "--out", "again"]) in (0, 1)
    assert main(["rescore", "again", "--out", "third"]) in (0, 1)
    for name in ("again", "third"):
        timings = json.loads((project.root / name / "timings.json").read_text())
        assert timings["retrieved"] == {"created": first["created"], "git": first["git"]}
        assert "created" in timings and "git" in timings
    page = (project.root / "third" / "report.html").read_text()
    assert f"<dt>retrieved</dt><dd>{first['created']}" in page
    assert (
        f"re-scored; retrieved {first['created']}"
        in (project.root / "third" / "summary.md").read_text()
    )
    assert "<dt>retrieved</dt>" not in (project.root / "alpha" / "report.html").read_text()
    capsys.readouterr()


def test_the_run_folder_and_page_say_what_the_terminal_warned_about_even_after_a_rescore(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run file with a repeated id and an unasked query, and a golden query it never
    answers: the terminal's notes and warnings reach summary.json, summary.md and the
    page. A rescore does not read the run file again, and still says what it said."""
    run_file = project.root / "run.trec"
    run_file.write_text(
        "1 Q0 install 1 3.0 sys\n1 Q0 install 2 2.0 sys\n1 Q0 gates 3 1.0 sys\n"
        "2 Q0 gates 1 1.0 sys\n99 Q0 cache 1 1.0 sys\n"
    )
    monkeypatch.chdir(project.root)
    cfg = raw_config(
        project,
        retriever={"name": "run_file", "path": "run.trec"},
        report={"html": True},
        metrics={"measures": ["R@5", "RR"], "policies": {"missing_query": "skip"}},
    )
    run_experiment(validate_experiment(cfg), reporters=[RunPage()], progress=False)
    err = capsys.readouterr().err
    repeated = "run file run.trec: 1 repeated document id(s) removed in 1 query"
    assert f"warning: {repeated}" in err
    out = project.root / "out"
    summary = json.loads((out / "summary.json").read_text())
    (said,) = summary["retrieval_warnings"]
    assert said.startswith(repeated)
    missing = [str(q["id"]) for q in GOLDEN[2:]]  # the run ranks golden queries 1 and 2
    notes = [
        f"{len(missing)} golden queries have no ranking in the run (policy missing_query=skip): "
        + ", ".join(missing),
        "the run has 1 query not in the golden set (ignored): 99",
        said,
    ]
    md = (out / "summary.md").read_text()
    assert "**Notes on this run:**\n" + "".join(f"- {n}\n" for n in notes) in md
    page = (out / "report.html").read_text()
    assert "<b>Notes on this run</b><ul>" + "".join(f"<li>{n}</li>" for n in notes) in page
    import evalframe

    assert evalframe.load(out).notes == notes  # the Python API's Result says the same

    assert main(["rescore", "out", "--out", "again"]) in (0, 1)
    assert repeated not in capsys.readouterr().err  # not said again: the file is not read
    again = json.loads((project.root / "again" / "summary.json").read_text())
    assert again["retrieval_warnings"] == [said]
    # the query beyond the golden set too: run.trec holds only the golden queries' rankings
    assert again["counts"]["extra_queries"] == ["99"]
    assert (
        "".join(f"<li>{n}</li>" for n in notes)
        in (project.root / "again" / "report.html").read_text()
    )


def test_a_rescore_deeper_than_the_stored_rankings_says_so(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The run retrieved 5 a query: depth=20 scores R@20 on those 5, and says so (on the
    terminal and in summary.json's warnings); depth=5 says nothing."""
    exp = validate_experiment(raw_config(project, metrics={"measures": ["R@5", "RR"]}))
    run_experiment(exp, progress=False)
    monkeypatch.chdir(project.root)
    capsys.readouterr()
    assert main(["rescore", "out", "--out", "same", "depth=5"]) in (0, 1)
    assert "deeper than the stored rankings" not in capsys.readouterr().err
    code = main(["rescore", "out", "--out", "deep", "depth=20", "metrics.measures=[R@5,R@20,RR]"])
    assert code in (0, 1)
    said = (
        "depth=20 is deeper than the stored rankings: the run retrieved 5 documents a query, "
        "and a rescore retrieves none, so R@20, RR are scored on those 5"
    )
    assert f"warning: {said}" in capsys.readouterr().err
    warnings = json.loads((project.root / "deep" / "summary.json").read_text())["warnings"]
    assert any(w.startswith(said) for w in warnings)
    metrics = json.loads((project.root / "deep" / "metrics.json").read_text())
    assert metrics["R@20"] == metrics["R@5"]  # nothing past rank 5 to find
    # a cutoff past the depth: the advice is one a rescore can follow (it cannot rank deeper)
    assert main(["rescore", "out", "--out", "cut", "metrics.measures=[R@5,R@10,RR]"]) in (0, 1)
    err = capsys.readouterr().err
    assert "R@10 looks past depth 5" in err
    assert "run the retriever again with depth=10 (a rescore cannot rank deeper)" in err
    assert "set depth=10" not in err


def test_a_rescore_shallower_than_the_stored_rankings_cuts_them(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """depth=2 over rankings of 4: each stored ranking is cut to its first 2 documents, in
    the retriever's order, as a run at depth 2 would have retrieved; the config that says
    depth 2 is not written beside the depth-4 numbers."""
    # the relevant document at rank 3 (query 1), 2 (query 2) and 4 (query 3)
    order = {
        "1": ["gates", "cache", "install", "slices"],
        "2": ["install", "gates", "cache", "slices"],
        "3": ["install", "gates", "slices", "cache"],
    }
    lines = [
        f"{q} Q0 {d} {r + 1} {10 - r}.0 mine\n"
        for q, docs in order.items()
        for r, d in enumerate(docs)
    ]
    (project.root / "mine.run").write_text("".join(lines))
    retriever = {"name": "run_file", "path": str(project.root / "mine.run")}
    config = raw_config(project, retriever=retriever, metrics={"measures": ["R@5", "RR"]})
    run_experiment(validate_experiment(config), progress=False)
    monkeypatch.chdir(project.root)
    capsys.readouterr()
    assert main(["rescore", "out", "--out", "cut", "depth=2"]) in (0, 1)
    err = capsys.readouterr().err
    assert "note: depth=2 cuts 3 stored rankings to their first 2 documents" in err
    values = {
        r["query_id"]: r["metrics"]
        for r in map(
            json.loads, (project.root / "cut" / "per_query.jsonl").read_text().splitlines()
        )
    }
    # RR: 1 / the rank of the relevant document when it is within the first 2, else 0
    assert {q: values[q]["RR"] for q in order} == {"1": 0.0, "2": 1 / 2, "3": 0.0}
    assert {q: values[q]["R@5"] for q in order} == {"1": 0.0, "2": 1.0, "3": 0.0}
    rankings = RunFolder(project.root / "cut").run().rankings
    assert {q: list(rankings[q].doc_ids) for q in order} == {q: d[:2] for q, d in order.items()}
    summary = json.loads((project.root / "cut" / "summary.json").read_text())
    assert summary["depth"] == 2

    # in place, run.trec would be written again cut: refused, and the folder left as it was
    stored = (project.root / "out" / "run.trec").read_bytes()
    assert main(["rescore", "out", "depth=2"]) == 2
    err = capsys.readouterr().err
    assert (
        "\nerror: config key depth: depth=2 would cut 3 stored rankings (up to 4 documents) to "
        "2 in out itself: a rescore in place writes run.trec again"
    ) in err, err
    assert "evalframe rescore out depth=2 --out out-depth2" in err
    assert (project.root / "out" / "run.trec").read_bytes() == stored


def test_a_rescore_after_the_golden_set_changed_says_so(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run_experiment(validate_experiment(raw_config(project)), progress=False)
    before = json.loads((project.root / "out" / "summary.json").read_text())["golden_set"]
    edited = [{**GOLDEN[0], "expected_chunks": ["cache"]}, *GOLDEN[1:]]
    project.golden.write_text("".join(json.dumps(r) + "\n" for r in edited))
    monkeypatch.chdir(project.root)
    capsys.readouterr()
    assert main(["rescore", "out", "--out", "again"]) in (0, 1)
    after = json.loads((project.root / "again" / "summary.json").read_text())["golden_set"]
    change = f"({before['content_hash']} -> {after['content_hash']})"
    assert f"note: the golden set changed since this run {change}" in capsys.readouterr().err
    assert main(["rescore", "again", "--out", "third"]) in (0, 1)  # unchanged since: quiet
    assert "the golden set changed" not in capsys.readouterr().err


def test_rescore_out_is_new_empty_or_an_earlier_run_and_never_other_files(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """--out follows merge's rule (app.outfolder): a re-scored run is never written among
    other files, nor over the run it is made from; an earlier run there is replaced whole,
    when the folder holds nothing else."""
    with RETRIEVERS.scoped() as reg:
        reg.add("counting", Counting, CountingConfig)
        run_dir = stored_run(project)
        capsys.readouterr()

        mine = project.root / "mine"
        mine.mkdir()
        (mine / "notes.txt").write_text("my notes\n")
        assert main(["rescore", str(run_dir), "--out", str(mine)]) == 2
        assert capsys.readouterr().err == (
            f"error: option --out: {mine} holds files that are not an evalframe run's: a "
            "rescore does not write its run among other files (expected a new or empty "
            "folder, or an earlier run's folder (with summary.json) to replace; got 1 entry: "
            "notes.txt)\n"
            "  hint: give --out a new folder, or move those files out of this one\n"
        )
        assert [p.name for p in mine.iterdir()] == ["notes.txt"]

        # the folder holding the run being re-scored would be replaced with it
        assert main(["rescore", str(run_dir), "--out", str(project.root)]) == 2
        err = capsys.readouterr().err
        assert (
            f"error: option --out: {project.root} holds {run_dir}, the run being re-scored: " in err
        )
        assert f"hint: give --out a new folder, e.g. {project.root / 'out-rescored'}" in err
        assert run_dir.is_dir()

        # nor inside it, new as the folder may be: the run folder would hold a second run
        before = sorted(p.name for p in run_dir.iterdir())
        assert main(["rescore", str(run_dir), "--out", str(run_dir / "sub")]) == 2
        err = capsys.readouterr().err
        assert err.startswith(
            f"error: option --out: {run_dir / 'sub'} is inside {run_dir}, the run being "
            "re-scored: the re-scored run would be written inside the run folder it is made "
            "from"
        ), err
        assert sorted(p.name for p in run_dir.iterdir()) == before

        again = project.root / "again"
        assert main(["rescore", str(run_dir), "--out", str(again)]) == 0
        assert "note: replacing" not in capsys.readouterr().err
        first = {p.name: p.read_bytes() for p in again.iterdir()}
        # a file that is not the run's: replacing the folder whole would delete it
        (again / "old_export.csv").write_text("stale\n")
        assert main(["rescore", str(run_dir), "--out", str(again)]) == 2
        err = capsys.readouterr().err
        assert f"{again} holds a run and files that are not a run's" in err
        assert "old_export.csv" in err and (again / "old_export.csv").is_file()
        (again / "old_export.csv").unlink()
        assert main(["rescore", str(run_dir), "--out", str(again)]) == 0
        notes = [line for line in capsys.readouterr().err.splitlines() if "note:" in line]
        assert notes == [
            f"note: replacing the run in {again} with the re-scored run: none of its files are "
            "kept unless the rescore fails (--out ANOTHER_DIR keeps it)"
        ]
        second = {p.name: p.read_bytes() for p in again.iterdir()}
        assert second["metrics.json"] == first["metrics.json"]
        assert set(second) == set(first)
        # nothing left aside beside it
        assert not [p for p in project.root.iterdir() if p.name.startswith(".again")]


def test_a_rescore_refuses_another_normalisation_of_the_stored_ids(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """dataset.normalise applied to every id as the run retrieved it: the stored rankings
    hold the normalised ids, and golden ids normalised otherwise would match none of
    them (Galaxy's Hit@1 0.277 re-scored as 0.031, exit 0)."""
    run_experiment(validate_experiment(raw_config(project)), progress=False)
    monkeypatch.chdir(project.root)
    capsys.readouterr()
    assert main(["rescore", "out", "--out", "other", "dataset.normalise=[strip_version]"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: config key dataset.normalise: the rankings beside ")
    assert "were normalised when they were retrieved" in err
    assert not (project.root / "other").exists()
