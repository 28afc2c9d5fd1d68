"""Records: built from run files with no mlflow import; curves, long keys, the jobs table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from evalframe_mlflow.keys import KEY_LIMIT, fit_key
from evalframe_mlflow.record import (
    RunRecord,
    build_sweep_record,
    collect_metrics,
    curve_metrics,
    jobs_table,
    metrics_table,
    short_key,
    single_run_name,
    sweep_run_name,
)

from evalframe.plugin.hooks import SweepContext, SweepJob


def test_curves_group_cutoffs_of_one_family_in_step_order() -> None:
    metrics = {"R@10": 0.9, "R@1": 0.3, "R@5": 0.7, "nDCG@10": 0.5, "RR": 0.4, "P@5": float("nan")}
    curves = curve_metrics(["R@10", "R@1", "R@5", "nDCG@10", "RR", "P@5"], metrics)
    # nDCG has one cutoff, RR none, and P@5 is NaN: only R gets a curve
    assert curves == [("recall_at_k", 0.3, 1), ("recall_at_k", 0.7, 5), ("recall_at_k", 0.9, 10)]
    graded = curve_metrics(["P(rel=2)@5", "P(rel=2)@10"], {"P(rel=2)@5": 0.2, "P(rel=2)@10": 0.1})
    assert graded == [("P_rel_2__at_k", 0.2, 5), ("P_rel_2__at_k", 0.1, 10)]


def test_long_keys_are_cut_to_mlflows_limit_and_kept_apart() -> None:
    a, b = "slice/x/" + "a" * 300, "slice/x/" + "a" * 299 + "b"
    assert len(fit_key(a)) == KEY_LIMIT and fit_key(a) != fit_key(b)
    assert fit_key("RR") == "RR"
    summary = {"by_slice": {"topic": {"t" * 300: {"RR": {"mean": 0.5, "n": 2}}}}}
    out = collect_metrics({}, summary)
    assert all(len(k) <= KEY_LIMIT for k in out)
    assert sorted(out.values()) == [0.5, 2.0]


def test_a_record_survives_the_round_trip_with_relative_artifacts(tmp_path: Path) -> None:
    (tmp_path / "metrics.json").write_text("{}")
    record = RunRecord(
        uid="a" * 32, kind="run", uri="http://h:5000", experiment_name="e", run_name=None,
        params={"a": "1"}, metrics=[("RR", 0.5, 0)], tags={"t": "v"},
        artifacts=[str(tmp_path / "metrics.json")],
    )  # fmt: skip
    path = record.save_pending(tmp_path)
    data = json.loads(path.read_text())
    assert data["artifacts"] == ["metrics.json"]  # the folder can move before it is synced
    moved = tmp_path.parent / "moved"
    tmp_path.rename(moved)
    back = RunRecord.from_json(data, moved)
    assert back.artifacts == [str((moved / "metrics.json").resolve())]
    assert back.metrics == [("RR", 0.5, 0)]


@pytest.mark.parametrize(
    "uri", ["sqlite:///tmp/store/mlflow.db", "sqlite:////abs/mlflow.db", "file:///tmp/mlruns"]
)
def test_a_pending_record_keeps_a_local_store_address_as_it_was(tmp_path: Path, uri: str) -> None:
    """The stored address is redacted, and redaction must not change an address without a
    password: `evalframe sync` uploads to it (sqlite:/// once came back as sqlite:/)."""
    record = RunRecord(
        uid="b" * 32, kind="run", uri=uri, experiment_name="e", run_name=None,
        params={}, metrics=[], tags={}, artifacts=[],
    )  # fmt: skip
    data = json.loads(record.save_pending(tmp_path).read_text())
    assert data["uri"] == uri
    assert RunRecord.from_json(data, tmp_path).uri == uri


def _job(num: int, overrides: tuple[str, ...], code: int | None, rr: float | None) -> SweepJob:
    summary = {"metrics": ["RR"], "overall": {"RR": {"mean": rr}}, "gates_passed": code == 0}
    return SweepJob(num, Path(f"/s/{num}"), overrides, code, summary if rr is not None else {})


def test_the_jobs_table_shows_what_tells_jobs_apart_and_the_best(tmp_path: Path) -> None:
    jobs = [
        _job(0, ("+experiment=q", "retriever.k1=0.9"), 0, 0.5),
        _job(1, ("+experiment=q", "retriever.k1=1.5"), 1, 0.75),
        _job(2, ("+experiment=q", "retriever.k1=3"), 0, 0.75),
    ]
    names, rows = jobs_table(jobs)
    assert names == ["RR"]
    assert [r["overrides"] for r in rows] == [
        "retriever.k1=0.9",
        "retriever.k1=1.5",
        "retriever.k1=3",
    ]
    sweep = SweepContext("q", tmp_path, {})
    record = build_sweep_record(
        sweep, jobs, {"uid": "b" * 32}, uri="u", experiment_name="q", cwd=tmp_path
    )
    metrics = {k: v for k, v, _ in record.metrics}
    assert metrics["best/RR"] == 0.75
    assert record.tags["evalframe.best.RR"] == "job 1: retriever.k1=1.5"  # ties: the first job
    assert metrics["sweep.gate_failures"] == 1 and metrics["sweep.failed_jobs"] == 0
    assert record.status == "FINISHED"  # a gate failure is a result, not a failed job
    crashed = build_sweep_record(
        sweep, [*jobs, _job(3, ("x",), None, None)], {"uid": "b" * 32},
        uri="u", experiment_name="q", cwd=tmp_path,
    )  # fmt: skip
    assert crashed.status == "FAILED"


def test_a_tuning_sweeps_parent_shows_its_held_out_summary_above_the_jobs(tmp_path: Path) -> None:
    """tuning.md (the best trial beside its held-out figure, the one to report) heads the
    parent's description and is attached with tuning.json; a grid sweep has neither."""
    jobs = [_job(0, ("retriever.k1=0.9",), 0, 0.5), _job(1, ("retriever.k1=1.5",), 0, 0.75)]
    sweep = SweepContext("q", tmp_path, {})
    plain = build_sweep_record(sweep, jobs, {"uid": "b" * 32}, uri="u", experiment_name="q",
                               cwd=tmp_path)  # fmt: skip
    assert not any(Path(a).name.startswith("tuning.") for a in plain.artifacts)
    assert plain.tags["mlflow.note.content"].startswith("| job |")
    (tmp_path / "tuning.md").write_text("## Tuning\n\nheld-out RR 0.7\n")
    (tmp_path / "tuning.json").write_text("{}")
    tuned = build_sweep_record(sweep, jobs, {"uid": "b" * 32}, uri="u", experiment_name="q",
                               cwd=tmp_path)  # fmt: skip
    assert {str(tmp_path / "tuning.md"), str(tmp_path / "tuning.json")} <= set(tuned.artifacts)
    note = tuned.tags["mlflow.note.content"]
    assert note.startswith("## Tuning\n\nheld-out RR 0.7\n\n| job |")


def test_a_dvc_tracked_golden_set_is_tagged_with_its_md5(tmp_path: Path) -> None:
    from evalframe_mlflow.record import build_run_record

    from evalframe.plugin.hooks import RunContext, RunOutcome

    summary = {
        "metrics": ["RR"],
        "golden_set": {"name": "g", "content_hash": "abc", "queries": 3, "negatives": 0,
                       "dvc_md5": "0f" * 16, "dvc_file": "golden/g.jsonl.dvc"},
    }  # fmt: skip
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    (tmp_path / "metrics.json").write_text(json.dumps({"RR": 0.5}))
    context = RunContext("e", tmp_path, {"dataset": {"path": "golden/g.jsonl"}}, {"baseline": "b1"})
    outputs = {"summary": tmp_path / "summary.json", "metrics": tmp_path / "metrics.json"}
    record = build_run_record(
        context, RunOutcome(0, outputs), uri="u", experiment_name="e", run_name=None, cwd=tmp_path
    )
    assert record.tags["evalframe.golden_dvc_md5"] == "0f" * 16
    assert record.tags["evalframe.baseline"] == "b1"
    (golden,) = record.datasets  # no corpus in this summary
    assert json.loads(golden["profile"])["dvc_md5"] == "0f" * 16
    assert golden["digest"] == "abc" and golden["context"] == "eval"


@pytest.mark.parametrize(
    ("overrides", "swept", "name"),
    [
        (["+experiment=q", "retriever.k1=0.9", "retriever.b=0.3"],
         ["retriever.k1", "retriever.b"], "k1=0.9,b=0.3"),
        (["retriever=dense"], ["retriever"], "retriever=dense"),
        (["+experiment=a"], ["experiment"], "experiment=a"),
        # two swept keys end alike: the whole key tells them apart
        (["retriever.k=5", "rerank.k=10"], ["retriever.k", "rerank.k"],
         "retriever.k=5,rerank.k=10"),
        (["retriever.k1=0.9"], [], None),  # nothing swept: MLflow names it
        (["retriever@r=bm25"], ["retriever"], "retriever=bm25"),
        # an Optuna trial: the values it sampled, in full
        (["retriever.k1=1.781796460603777", "retriever.b=0.7151893663724195",
          "+experiment=cranfield_bm25_tune"], ["retriever.k1", "retriever.b"],
         "k1=1.781796460603777,b=0.7151893663724195"),
    ],
)  # fmt: skip
def test_a_sweep_job_is_named_after_what_its_sweep_varies(
    overrides: list[str], swept: list[str], name: str | None
) -> None:
    assert sweep_run_name(overrides, swept) == name


@pytest.mark.parametrize(
    ("overrides", "label", "name"),
    [
        (["retriever.k1=2.4", "retriever.b=0.53", "+experiment=t"], "held-out",
         "held-out: k1=2.4,b=0.53"),
        (["retriever.k1=1.2", "retriever.b=0.75", "+experiment=t"], "untuned (tuning part)",
         "untuned (tuning part): k1=1.2,b=0.75"),
        # nothing the sweep varies in its overrides: the label alone
        (["+experiment=t"], "untuned (held-out part)", "untuned (held-out part)"),
    ],
)  # fmt: skip
def test_a_run_a_tuning_sweep_makes_beside_its_trials_is_named_by_its_label_first(
    overrides: list[str], label: str, name: str
) -> None:
    assert sweep_run_name(overrides, ["retriever.k1", "retriever.b"], label=label) == name


def test_the_held_out_run_is_a_child_of_the_sweep_with_a_jobs_tags(tmp_path: Path) -> None:
    from evalframe_mlflow.record import build_run_record
    from evalframe_mlflow.sweeps import write_sweep_marker

    from evalframe.plugin.hooks import RunContext, RunOutcome

    sweep = tmp_path / "sweep"
    (sweep / "heldout").mkdir(parents=True)
    parent_uid, parent_id = "p" * 32, "r" * 32
    write_sweep_marker(
        sweep,
        {"uid": parent_uid, "run_id": parent_id, "uri": "sqlite:///s.db",
         "swept": ["retriever.k1", "retriever.b"]},
    )  # fmt: skip
    overrides = ["retriever.k1=2.4", "retriever.b=0.53", "+experiment=t"]
    meta = {"sweep": {"dir": str(sweep), "num": "heldout", "overrides": overrides,
                      "label": "held-out"}}  # fmt: skip
    context = RunContext("t", sweep / "heldout", {}, meta)

    def build(run_name: str | None) -> RunRecord:
        return build_run_record(
            context, RunOutcome(0, {}), uri="sqlite:///s.db", experiment_name="t",
            run_name=run_name, cwd=tmp_path,
        )  # fmt: skip

    record = build(None)
    assert record.run_name == "held-out: k1=2.4,b=0.53"
    assert (record.parent_uid, record.parent_run_id) == (parent_uid, parent_id)
    assert record.tags["evalframe.sweep_job"] == "heldout"
    assert (
        record.tags["evalframe.sweep_overrides"]
        == "retriever.k1=2.4 retriever.b=0.53 +experiment=t"
    )
    assert build("mine").run_name == "mine"  # tracking.run_name still wins


@pytest.mark.parametrize(
    ("overrides", "name"),
    [
        ([], "rescore of 2026-11-29_01-09-34"),
        (["metrics.measures=[R@5,RR]", "tracking=mlflow"],
         "rescore of 2026-11-29_01-09-34: measures=[R@5,RR]"),
    ],
)  # fmt: skip
def test_a_rescore_is_named_after_the_run_it_re_scored(
    tmp_path: Path, overrides: list[str], name: str
) -> None:
    """`evalframe rescore` gives the folder it re-scored and its own overrides: its run is
    told apart from the run it came from in the UI's list, not named by MLflow at random."""
    from evalframe_mlflow.record import build_run_record

    from evalframe.plugin.hooks import RunContext, RunOutcome

    meta = {"rescore_of": str(tmp_path / "bob" / "2026-11-29_01-09-34"), "overrides": overrides}
    context = RunContext("bob", tmp_path / "out", {}, meta)
    record = build_run_record(
        context, RunOutcome(0, {}), uri="sqlite:///s.db", experiment_name="bob",
        run_name=None, cwd=tmp_path,
    )  # fmt: skip
    assert record.run_name == name


@pytest.mark.parametrize(
    ("meta", "name"),
    [
        ({}, "k1-12"),  # the exp stage: `evalframe run-config params.yaml`, no overrides
        ({"overrides": ["dataset.path=golden/b.jsonl"]}, "k1-12: dataset.path=golden/b.jsonl"),
        ({"rescore_of": "results/exp"}, "k1-12: rescore of exp"),  # the compare stage
    ],
)
def test_a_dvc_experiments_runs_are_named_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, meta: dict[str, Any], name: str
) -> None:
    """`dvc exp run -n k1-12` (DVC_EXP_NAME=k1-12): its stages' runs got MLflow's random
    names. They go by the experiment's name, tagged with it; `dvc repro` sets no name."""
    from evalframe_mlflow.record import build_run_record

    from evalframe.plugin.hooks import RunContext, RunOutcome

    def build() -> Any:
        return build_run_record(
            RunContext("bob", tmp_path / "out", {}, meta), RunOutcome(0, {}),
            uri="sqlite:///s.db", experiment_name="bob", run_name=None, cwd=tmp_path,
        )  # fmt: skip

    monkeypatch.setenv("DVC_EXP_NAME", "k1-12")
    record = build()
    assert record.run_name == name and record.tags["evalframe.dvc_exp"] == "k1-12"
    monkeypatch.delenv("DVC_EXP_NAME")
    record = build()
    assert "evalframe.dvc_exp" not in record.tags
    assert record.run_name == (name.partition(": ")[2] or None)


def test_a_merge_is_named_after_its_shards(tmp_path: Path) -> None:
    """`evalframe merge` of four shards of one sweep folder: "merge of 4 shards of shards"."""
    from evalframe_mlflow.record import build_run_record

    from evalframe.plugin.hooks import RunContext, RunOutcome

    shards = [str(tmp_path / "shards" / str(i)) for i in range(4)]
    context = RunContext("bob", tmp_path / "merged", {}, {"merged": True, "shards": shards})
    record = build_run_record(
        context, RunOutcome(0, {}), uri="sqlite:///s.db", experiment_name="bob",
        run_name=None, cwd=tmp_path,
    )  # fmt: skip
    assert record.run_name == "merge of 4 shards of shards"
    scattered = RunContext(
        "bob", tmp_path / "m", {}, {"merged": True, "shards": [str(tmp_path / "a" / "0"),
                                                            str(tmp_path / "b" / "1")]}
    )  # fmt: skip
    named = build_run_record(
        scattered, RunOutcome(0, {}), uri="sqlite:///s.db", experiment_name="bob",
        run_name=None, cwd=tmp_path,
    )  # fmt: skip
    assert named.run_name == "merge of 2 shards"


def test_a_sweep_jobs_overrides_tag_gives_back_a_value_with_a_space(tmp_path: Path) -> None:
    """The tag joined overrides with spaces: `retriever.query_prefix="a b"` read back as
    two overrides. Shell words (shlex) give each back whole, and paste onto a command line."""
    import shlex

    from evalframe_mlflow.record import build_run_record

    from evalframe.plugin.hooks import RunContext, RunOutcome

    sweep = tmp_path / "sweep"
    (sweep / "0").mkdir(parents=True)
    overrides = ['retriever.query_prefix="find: a b"', "metrics.measures=[R@5,RR]", "depth=10"]
    meta = {"sweep": {"dir": str(sweep), "num": 0, "overrides": overrides}}
    context = RunContext("t", sweep / "0", {}, meta)
    record = build_run_record(
        context,
        RunOutcome(0, {}),
        uri="sqlite:///s.db",
        experiment_name="t",
        run_name=None,
        cwd=tmp_path,
    )
    tag = record.tags["evalframe.sweep_overrides"]
    assert shlex.split(tag) == overrides
    assert tag.endswith(" depth=10")  # a plain override stays as it was typed


@pytest.mark.parametrize(
    ("overrides", "name"),
    [
        (["+experiment=quickstart", "retriever.k1=0.6"], "k1=0.6"),
        (["+experiment=quickstart", "retriever=dense", "depth=20"], "retriever=dense,depth=20"),
        # where results go, how they are shown and tracked: not what was measured
        (["+experiment=q", "tracking=mlflow", "tracking.uri=sqlite:///x.db", "output.dir=o",
          "report.html=false", "hydra.run.dir=o"], None),
        (["dataset.path=a.jsonl", "corpus.path=c.jsonl"],
         "dataset.path=a.jsonl,corpus.path=c.jsonl"),
        # where the inputs are goes last, where the UI cuts a long name, after what was set
        (["dataset.path=/data/sets/golden.jsonl", "retriever.k1=0.6", "golden=/d/v2", "depth=20"],
         "k1=0.6,depth=20,dataset.path=/data/sets/golden.jsonl,golden=/d/v2"),
        # a generic last part names no setting: the part before it says which (was value=0.9)
        (["+experiment=quickstart", "gates.mrr.value=0.9"], "mrr.value=0.9"),
        (["gates.mrr.value=0.9", "gates.recall_at_5.value=0.4", "stats.seed=3", "tuning.seed=1"],
         "mrr.value=0.9,recall_at_5.value=0.4,stats.seed=3,tuning.seed=1"),
        (["retriever.name=bm25", "analysis.failures.enabled=false"],
         "retriever.name=bm25,failures.enabled=false"),
        # ... and shown whole when two keys would still be shown alike
        (["a.gates.mrr.value=1", "b.gates.mrr.value=2"], "a.gates.mrr.value=1,b.gates.mrr.value=2"),
        ([], None),
    ],
)  # fmt: skip
def test_a_single_run_is_named_after_the_overrides_that_change_what_it_measures(
    overrides: list[str], name: str | None
) -> None:
    assert single_run_name(overrides) == name


def test_a_sweep_jobs_name_shows_a_generic_key_by_its_last_two_parts() -> None:
    swept = ["gates.mrr.value", "retriever.k1"]
    assert sweep_run_name(["gates.mrr.value=0.5", "retriever.k1=0.9"], swept) == (
        "mrr.value=0.5,k1=0.9"
    )
    assert short_key("retriever.k1") == "k1" and short_key("dataset.path") == "dataset.path"
    assert short_key("path") == "path"  # a key of one part stays as it is


def test_the_metrics_table_has_a_row_per_metric_and_slice_value() -> None:
    agg = {"mean": 0.5, "ci_low": 0.25, "ci_high": 0.75, "std": 0.1, "n": 4, "skipped": 0}
    summary = {
        "overall": {"nDCG@10": agg, "RR": {**agg, "ci_low": float("nan")}},
        "by_slice": {"difficulty": {"easy": {"nDCG@10": agg, "RR": agg}}},
    }
    table = metrics_table(summary)
    assert table is not None and table["artifact_file"] == "metrics_table.json"
    rows = [dict(zip(table["columns"], r, strict=True)) for r in table["rows"]]
    assert [(r["key"], r["metric"], r["measure"], r["k"], r["slice"]) for r in rows] == [
        ("nDCG@10", "nDCG@10", "nDCG", 10, "overall"),
        ("RR", "RR", "RR", None, "overall"),
        ("nDCG@10 [difficulty=easy]", "nDCG@10", "nDCG", 10, "difficulty=easy"),
        ("RR [difficulty=easy]", "RR", "RR", None, "difficulty=easy"),
    ]
    assert table["columns"][:2] == ["key", "mean"]  # the UI's evaluation view: group, compare
    assert rows[1]["ci_low"] is None  # NaN is null in JSON
    assert rows[0]["n"] == 4 and rows[0]["ci_high"] == 0.75


def test_the_description_is_summary_md_and_the_params_leave_out_where_it_was_written(
    tmp_path: Path,
) -> None:
    """MLflow's UI shows ``mlflow.note.content`` as the run's description: the run's
    summary.md, cut at a line past the tag's limit. output.* and tracking.* are not
    params (the folder is a tag)."""
    from evalframe_mlflow.record import DESCRIPTION_TAG, TAG_VALUE_LIMIT, build_run_record

    from evalframe.plugin.hooks import RunContext, RunOutcome

    (tmp_path / "summary.json").write_text(json.dumps({"metrics": ["RR"]}))
    (tmp_path / "metrics.json").write_text(json.dumps({"RR": 0.5}))
    (tmp_path / "summary.md").write_text("## ✓ PASSED · evalframe · e\n\n| RR | 0.5 |\n")
    config = {
        "depth": 10,
        "retriever": {"name": "bm25", "k1": 0.9},
        "output": {"dir": str(tmp_path), "cache_dir": "/c"},
        "tracking": {"name": "mlflow", "uri": "sqlite:///x.db"},
    }
    outputs = {"summary": tmp_path / "summary.json", "metrics": tmp_path / "metrics.json"}

    def record() -> RunRecord:
        return build_run_record(
            RunContext("e", tmp_path, config, {}),
            RunOutcome(0, outputs),
            uri="u",
            experiment_name="e",
            run_name=None,
            cwd=tmp_path,
        )

    got = record()
    assert got.tags[DESCRIPTION_TAG] == (tmp_path / "summary.md").read_text()
    assert got.params == {"depth": "10", "retriever.name": "bm25", "retriever.k1": "0.9"}
    assert got.tags["evalframe.run_folder"] == str(tmp_path)

    lines = [f"| q{i:05d} | 0.000 | a question that failed |" for i in range(600)]
    (tmp_path / "summary.md").write_text("\n".join(lines) + "\n")
    cut = record().tags[DESCRIPTION_TAG]
    assert len(cut) <= TAG_VALUE_LIMIT
    kept, footer = cut.split("\n\n… ")
    assert footer == "(cut here: the artifact summary.md has the rest)"
    assert kept.splitlines() == lines[: len(kept.splitlines())]  # whole lines only


def test_a_sweep_parents_description_is_its_jobs_table(tmp_path: Path) -> None:
    from evalframe_mlflow.record import DESCRIPTION_TAG

    jobs = [_job(0, ("retriever.k1=0.9",), 0, 0.5), _job(1, ("retriever.k1=1.5",), 0, 0.75)]
    sweep = SweepContext("q", tmp_path, {})
    record = build_sweep_record(
        sweep, jobs, {"uid": "b" * 32}, uri="u", experiment_name="q", cwd=tmp_path
    )
    table = (tmp_path / "jobs.md").read_text()
    assert record.tags[DESCRIPTION_TAG] == table and "retriever.k1=1.5" in table


def test_a_rescored_run_is_tagged_as_one(tmp_path: Path) -> None:
    """A rescore logs an MLflow run like any other; its tags say it scored rankings
    retrieved earlier (timings.json's `retrieved`), so `evalframe runs` and the UI can
    tell it from a run that retrieved."""
    from evalframe_mlflow.record import build_run_record

    from evalframe.plugin.hooks import RunContext, RunOutcome

    def tags() -> dict[str, str]:
        return build_run_record(
            RunContext("e", tmp_path, {"depth": 10}, {}),
            RunOutcome(0, {}),
            uri="u",
            experiment_name="e",
            run_name=None,
            cwd=tmp_path,
        ).tags

    (tmp_path / "timings.json").write_text(json.dumps({"created": "2026-11-27T10:00:00Z"}))
    assert "evalframe.rescore" not in tags()
    (tmp_path / "timings.json").write_text(
        json.dumps(
            {"created": "2026-11-27T11:00:00Z", "retrieved": {"created": "2026-11-27T10:00:00Z"}}
        )
    )
    assert tags()["evalframe.rescore"] == "true"
    assert tags()["evalframe.retrieved_at"] == "2026-11-27T10:00:00Z"


def test_a_provisional_verdict_is_tagged(tmp_path: Path) -> None:
    """KnowCode's unblessed set makes a verdict provisional: the terminal, the page and
    gates.json said so, MLflow did not."""
    from evalframe_mlflow.record import build_run_record

    from evalframe.plugin.hooks import RunContext, RunOutcome

    said = "gated on golden set 'g', which is not blessed: ... so this verdict is provisional"
    summary = tmp_path / "summary.json"

    def tags(warnings: list[str]) -> dict[str, str]:
        summary.write_text(json.dumps({"gates_passed": False, "verdict_warnings": warnings}))
        record = build_run_record(
            RunContext("knowcode", tmp_path, {}, {}), RunOutcome(1, {"summary": summary}),
            uri="sqlite:///s.db", experiment_name="knowcode", run_name=None, cwd=tmp_path,
        )  # fmt: skip
        return record.tags

    marked = tags([said])
    assert marked["evalframe.provisional"] == "true"
    assert marked["evalframe.verdict_warnings"] == said
    assert "evalframe.provisional" not in tags([])
