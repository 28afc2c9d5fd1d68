"""Sharded evaluation: shards merged equal the unsharded run; merge refuses what is not one run.

The reference is the unsharded run itself: merging is correct when every
number, verdict and per-query record it gives is the one an unsharded run
gives (latency aside: it is measured, and differs between any two runs).
The runs are real Hydra runs in this process, on a generated collection with
graded judgments, negative queries, two slice fields, a judged document the
corpus lacks (the golden set's loader warns), bootstrap CIs, gates (one of
them fails, so the verdict is exit 1) and a baseline. The collection and the
fixtures that shard it are in ``tests/conftest.py``; ``evalframe merge``'s
own behaviour (``--out``, tracking) is tested in ``tests/app/test_merge_cmd.py``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from evalframe.app.cli import main
from evalframe.core.types import GoldenQuery, GoldenSet
from evalframe.golden.split import Shard, TuningConfig, apply_split, parse_shard, shard_queries
from tests.conftest import SHARD_LOADER_WARNING, shard_main


def _records(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        record.pop("latency_ms", None)  # measured, not a result (and in timings.json)
        out.append(record)
    return out


def _without(data: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in data.items() if not any(k.startswith(p) for p in keys)}


def test_shards_merged_give_exactly_the_unsharded_run(
    shard_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = shard_project
    assert shard_main(root, "retriever.k1=0.4", f"hydra.run.dir={root / 'base'}") == 1
    baseline = f"baseline={root / 'base'}"
    assert shard_main(root, baseline, f"hydra.run.dir={root / 'whole'}") == 1
    assert (
        shard_main(root, "-m", baseline, "shard=0/4,1/4,2/4,3/4", f"hydra.sweep.dir={root / 'sh'}")
        == 0
    )
    shards = [str(root / "sh" / str(i)) for i in (2, 0, 3, 1)]  # any order
    # the same verdict; --out may stand between the shard folders
    assert main(["merge", *shards[:2], "--out", str(root / "merged"), *shards[2:]]) == 1

    whole, merged = root / "whole", root / "merged"
    for name in ("run.trec", "gates.json", "comparison.json", "comparison.md"):
        assert (merged / name).read_text() == (whole / name).read_text(), name
    assert _records(merged / "per_query.jsonl") == _records(whole / "per_query.jsonl")
    metrics = json.loads((merged / "metrics.json").read_text())
    assert _without(metrics, "latency.") == _without(
        json.loads((whole / "metrics.json").read_text()), "latency."
    )
    assert {"R@5.ci_low", "slice.difficulty.hard.RR", "slice.category.b.AP"} <= set(metrics)
    summary = json.loads((merged / "summary.json").read_text())
    assert _without(summary, "latency", "retrieval_cache") == _without(
        json.loads((whole / "summary.json").read_text()), "latency", "retrieval_cache"
    )
    # what loading the golden set warned about: the merge loads it again, and keeps it
    assert summary["warnings"] == [SHARD_LOADER_WARNING]
    gates = json.loads((merged / "gates.json").read_text())
    assert [g["passed"] for g in gates["gates"]] == [True, False]
    # each shard retrieved its round-robin slice of the 37 queries: 10, 9, 9, 9
    sizes = [len(json.loads((root / "sh" / str(i) / "shard.json").read_text())["queries"])
             for i in range(4)]  # fmt: skip
    assert sizes == [10, 9, 9, 9]
    # a run folder like any other: the page and summary.md are there (they were not)
    assert (merged / "report.html").is_file() and (merged / "summary.md").is_file()
    # a shard is no run to promote: said, with the merge to do first (it said "not a
    # finished run: ... the run stopped while writing its outputs")
    capsys.readouterr()
    assert main(["baseline", "promote", shards[0], "--name", "x", "--root", str(root / "b")]) == 2
    err = capsys.readouterr().err
    assert f"{shards[0]} is a shard (it holds shard.json), one slice of a sharded run" in err
    assert "merge the shards first" in err


def test_merge_and_rescore_refuse_a_retriever_setting(
    shard_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The rankings were retrieved with the stored settings: `retriever.k1=3` would be
    written in config.yaml (and logged) beside rankings it never produced."""
    root = shard_project
    assert shard_main(root, "-m", "shard=0/2,1/2", f"hydra.sweep.dir={root / 'sh'}") == 0
    shards = [str(root / "sh" / str(i)) for i in (0, 1)]
    assert main(["merge", *shards, "--out", str(root / "m"), "retriever.k1=3"]) == 2
    assert "error: config key retriever.k1: the rankings beside shard config" in (
        capsys.readouterr().err
    )
    assert not (root / "m").exists()
    assert main(["merge", *shards, "--out", str(root / "m")]) in (0, 1)
    for override in ("retriever.k1=3", "retriever=bm25"):
        assert main(["rescore", str(root / "m"), "--out", str(root / "r"), override]) == 2
        err = capsys.readouterr().err
        assert "the retriever's settings cannot change" in err
        assert f"python -m evalframe +experiment=NAME {override}" in err
    assert not (root / "r").exists()


def test_a_merge_says_its_shards_took_rankings_from_the_cache(
    shard_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Shards that found their rankings in the cache: the merged run says so, with no hint
    to re-run with ``cache.retrieval=false`` (a merge retrieves nothing)."""
    root = shard_project
    cached = ("cache.retrieval=true", "stats.bootstrap=0")
    assert shard_main(root, *cached, f"hydra.run.dir={root / 'whole'}") == 1  # fills the cache
    sweep = ("-m", "shard=0/2,1/2", f"hydra.sweep.dir={root / 'sh'}")
    assert shard_main(root, *cached, *sweep) == 0
    capsys.readouterr()
    assert main(["merge", str(root / "sh" / "0"), str(root / "sh" / "1"), "--out", "m"]) == 1
    out = capsys.readouterr().out
    assert "0 retrieved, 37 from cache (by the 2 shards; a merge retrieves nothing)" in out
    assert "cache.retrieval=false" not in out


def test_a_merged_run_says_what_its_shards_retrievers_warned_about(shard_project: Path) -> None:
    """A run file read by every shard warns in every shard: the merged summary says it once.
    A warning of one shard only is said with that shard's name. The file's queries that no
    golden query asks are counted as an unsharded run counts them."""
    root = shard_project
    lines = [f"q{q} Q0 d{q % 50} 1 2.0 sys\nq{q} Q0 d{(q + 1) % 50} 2 1.0 sys\n" for q in range(37)]
    lines[0] += "q0 Q0 d0 3 0.5 sys\n"  # d0 again: a repeated id
    lines += ["x2 Q0 d1 1 1.0 sys\n", "x1 Q0 d2 1 1.0 sys\n"]  # asked by no golden query
    (root / "run.trec").write_text("".join(lines))
    args = ("retriever=run_file", "retriever.path=run.trec", "retriever.duplicates=keep_first")
    assert shard_main(root, "-m", *args, "shard=0/2,1/2", f"hydra.sweep.dir={root / 'sh'}") == 0
    said = "run file run.trec: 1 repeated document id(s) removed in 1 query"
    for i in (0, 1):
        info = json.loads((root / "sh" / str(i) / "shard.json").read_text())
        (warning,) = info["retrieval_warnings"]
        assert warning.startswith(said)
    main(["merge", str(root / "sh" / "0"), str(root / "sh" / "1"), "--out", str(root / "m")])
    summary = json.loads((root / "m" / "summary.json").read_text())
    assert summary["retrieval_warnings"] == [warning]  # once, as both shards said it
    # the run file's queries that no golden query asks: as an unsharded run counts them
    assert summary["counts"]["extra_queries"] == ["x1", "x2"]

    # had shard 1 said nothing, the merged run would name shard 0
    info_file = root / "sh" / "1" / "shard.json"
    info = json.loads(info_file.read_text())
    info_file.write_text(json.dumps({**info, "retrieval_warnings": []}))
    main(["merge", str(root / "sh" / "0"), str(root / "sh" / "1"), "--out", str(root / "m2")])
    summary = json.loads((root / "m2" / "summary.json").read_text())
    assert summary["retrieval_warnings"] == [f"shard 0/2: {warning}"]


def _merge_error(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    capsys.readouterr()
    assert main(["merge", *args]) == 2
    return capsys.readouterr().err


def test_merge_refuses_what_is_not_the_n_shards_of_one_run(
    two_shards: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = two_shards
    s0, s1, out = str(root / "sh" / "0"), str(root / "sh" / "1"), "--out=m"
    assert "shard 1/2 is missing: 1 of 2 given" in _merge_error(capsys, s0, out)
    err = _merge_error(capsys, s0, s0, s1, out)
    assert f"shard 0/2 is given twice: {s0} and {s0}" in err

    assert shard_main(root, "shard=1/2", "stats.bootstrap=0", "retriever.k1=0.9",
                      f"hydra.run.dir={root / 'other'}") == 0  # fmt: skip
    err = _merge_error(capsys, s0, str(root / "other"), out)
    assert "come from different configs: retriever.k1 (1.2 vs 0.9)" in err

    assert shard_main(root, "stats.bootstrap=0", f"hydra.run.dir={root / 'whole'}") == 1
    err = _merge_error(capsys, str(root / "whole"), out)
    assert "is a finished run, not a shard: it has no shard.json" in err
    err = _merge_error(capsys, s0, str(root / "sh" / "9"), out)  # a typo: not "killed"
    assert f"{root / 'sh' / '9'} does not exist" in err and "killed" not in err
    capsys.readouterr()
    assert main(["compare", s0, str(root / "whole")]) == 2  # nor is a shard a run

    info_file = root / "sh" / "1" / "shard.json"
    info = json.loads(info_file.read_text())
    info["code"]["evalframe"] = "0.0.9"
    info_file.write_text(json.dumps(info))
    err = _merge_error(capsys, s0, s1, out)
    assert "different code versions: code.evalframe ('0.1.0' vs '0.0.9')" in err
    assert not Path("m").exists()


def test_merge_refuses_shards_of_another_golden_set(
    two_shards: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = two_shards
    golden = root / "golden.jsonl"
    golden.write_text(golden.read_text().replace('"w', '"x', 1))  # one query's text changed
    sh = root / "sh"
    err = _merge_error(capsys, str(sh / "0"), str(sh / "1"), "--out", "m")
    assert "the golden set changed since the shards ran" in err
    assert shard_main(root, "shard=1/2", "stats.bootstrap=0", f"hydra.run.dir={root / 'new'}") == 0
    err = _merge_error(capsys, str(sh / "0"), str(root / "new"), "--out", "m")
    assert "come from different golden sets: golden set golden@" in err


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("4/4", "below the number of shards"),
        ("1-4", "expected i/n"),
        ("0/0", "the number of shards (after the /) is at least 1"),
    ],
)
def test_a_bad_shard_value_names_the_key(
    shard_project: Path, capsys: pytest.CaptureFixture[str], value: str, message: str
) -> None:
    assert shard_main(shard_project, f"shard={value}") == 2
    err = capsys.readouterr().err
    assert "shard" in err and message in err


def test_shards_are_round_robin_in_golden_order() -> None:
    golden = GoldenSet.build(
        "g", [GoldenQuery(id=f"q{i}", text="t", judgments={}) for i in range(7)]
    )
    assert shard_queries(golden, Shard(0, 3)) == ["q0", "q3", "q6"]
    assert shard_queries(golden, Shard(2, 3)) == ["q2", "q5"]
    assert sorted(q for i in range(3) for q in shard_queries(golden, Shard(i, 3))) == sorted(
        q.id for q in golden
    )
    assert parse_shard(" 2 / 5 ") == Shard(2, 5)
    # no shards at all is said as such (it listed "0/1 to 0/1" as the choices)
    for value in ("0/0", "1/0"):
        with pytest.raises(ValueError, match=r"the number of shards .* is at least 1"):
            parse_shard(value)
    with pytest.raises(ValueError, match=r"\(0/2 to 1/2\)"):
        parse_shard("2/2")


def test_the_tuning_split_is_fixed_by_its_seed_and_recorded() -> None:
    golden = GoldenSet.build(
        "g", [GoldenQuery(id=f"q{i}", text="t", judgments={"d": 1}) for i in range(10)]
    )
    tune = apply_split(golden, TuningConfig(part="tune", fraction=0.3, seed=1))
    held = apply_split(golden, TuningConfig(part="heldout", fraction=0.3, seed=1))
    # the definition: order ids by sha256("<seed>:<id>"), the first round(0.3 × 10) = 3 tune
    ranked = sorted(
        (q.id for q in golden), key=lambda q: hashlib.sha256(f"1:{q}".encode()).hexdigest()
    )
    assert {q.id for q in tune} == set(ranked[:3])
    assert {q.id for q in held} == set(ranked[3:])
    assert tune.provenance["split"] == {
        "part": "tune", "seed": 1, "fraction": 0.3, "tune_queries": 3, "heldout_queries": 7,
        "of": {"name": "g", "content_hash": golden.content_hash, "queries": 10},
    }  # fmt: skip
    other = apply_split(golden, TuningConfig(part="tune", fraction=0.3, seed=2))
    assert {q.id for q in other} != {q.id for q in tune}  # another seed, another split
    assert apply_split(golden, TuningConfig()) is golden


def test_a_sweep_over_shards_is_not_tracked_and_ends_with_the_merge_command(
    shard_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from omegaconf import OmegaConf

    from evalframe.app.sweep import _is_shard_sweep

    def sweep(*task: str, shard: str | None = None) -> object:
        return OmegaConf.create({"shard": shard, "hydra": {"overrides": {"task": list(task)}}})

    assert _is_shard_sweep(sweep("retriever.k1=1,2", "shard=0/2,1/2"))
    assert _is_shard_sweep(sweep("retriever.k1=1,2", shard="1/2"))
    assert not _is_shard_sweep(sweep("retriever.k1=1,2", "stats.seed=0,1"))

    root = shard_project
    capsys.readouterr()
    assert shard_main(root, "-m", "shard=0/2,1/2", "stats.bootstrap=0", "hydra.sweep.dir=sh") == 0
    assert "merge them into one run with:\n  evalframe merge sh/0 sh/1 --out sh/merged" in (
        capsys.readouterr().out
    )


def test_a_shard_index_out_of_range_names_its_file(
    two_shards: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``index: -1`` (a hand edit) was read as a shard of its own: "shard 0/2 is missing:
    2 of 2 given", naming no file."""
    root = two_shards
    info_path = root / "sh" / "0" / "shard.json"
    info = json.loads(info_path.read_text())
    info["shard"]["index"] = -1
    info_path.write_text(json.dumps(info))
    err = _merge_error(capsys, str(root / "sh" / "0"), str(root / "sh" / "1"), "--out", "m")
    assert err.startswith(f"error: {info_path}: not a shard description written by evalframe")
    assert "0 <= i < n" in err
