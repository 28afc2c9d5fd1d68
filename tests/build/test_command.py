"""`evalframe golden build` as a user runs it: the knowcode_demo build from an empty folder
(each planted fault in its reject file, blessed by the shipped review file, then evaluated by
the knowcode experiment), kill -9 during the oracle step and resume, and the clear errors."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import forkrun
from tests.build.build_helpers import jsonl


def run(cwd: Path, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "EVALFRAME_CACHE_DIR": str(cwd / ".cache"),
        "EVALFRAME_TRACKING": "none",
        "PYTHONIOENCODING": "utf-8",
    }
    return forkrun.run(args, cwd=cwd, env=env, timeout=timeout)  # a process of its own


@pytest.mark.slow
def test_the_knowcode_demo_from_an_empty_folder(tmp_path: Path) -> None:
    done = run(tmp_path, "golden", "build", "+build=knowcode_demo")
    assert done.returncode == 0, done.stdout + done.stderr
    out = tmp_path / "golden/knowcode_demo"
    (batch,) = (out / "pipeline").iterdir()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d_\d{6}", batch.name)  # timestamped
    for name in (
        "00_candidates.jsonl",
        "01_oracle_answers.jsonl",
        "02_adversary_reports.jsonl",
        "03_validation_failures.jsonl",
        "04_human_review_queue.jsonl",
        "05_rejected.jsonl",
        "human_reviews.jsonl",
    ):
        assert (batch / name).is_file(), name
    # every planted fault is in its reject file, naming its rule
    rejected = {r["query_id"]: r for r in jsonl(batch / "05_rejected.jsonl")}
    planted = {
        "q_00005": ("C", "dedup"),  # overlap
        "q_00002": ("E", "gate:line-range"),  # wrong line range
        "q_00009": ("E", "gate:narrative"),  # narrative naming an entity the fields lack
        "q_00016": ("E", "gate:entity"),  # nonexistent entity
        "q_00007": ("F", "agreement:narrative"),  # a fact the adversary refutes
    }
    assert {q: (rejected[q]["stage"], rejected[q]["rule"]) for q in planted} == planted
    failures = {f["query_id"]: f["checks"] for f in jsonl(batch / "03_validation_failures.jsonl")}
    assert failures == {"q_00002": ["line-range"], "q_00009": ["narrative"], "q_00016": ["entity"]}
    queue = {q["query_id"]: q for q in jsonl(batch / "04_human_review_queue.jsonl")}
    assert queue["q_00011"]["reasons"] == ["low-confidence oracle answer"]  # planted, kept
    assert queue["q_00011"]["in_pool"] is True and queue["q_00007"]["in_pool"] is False
    # blessed with the shipped review file
    assert "result: BLESSED golden_v1.0 (12 queries" in done.stdout
    golden = json.loads((out / "golden_v1.0.json").read_text())
    meta = json.loads((out / "golden_v1.0.meta.json").read_text())
    assert len(golden) == meta["query_count"] == 12 and meta["dataset_status"] == "blessed"
    assert meta["spot_check"]["reviewers"] == ["demo-reviewer"]
    assert meta["spot_check"]["counts"] == {
        "correct": 8,
        "minor_issue": 1,
        "major_issue": 0,
        "wrong": 0,
    }
    edited = next(r for r in golden if r["query_id"] == "q_00004")
    assert edited["provenance"]["edits"][0]["field"] == "must_mention_facts"
    assert edited["must_mention_facts"][-1] == "`clear_cache` returns the number of bytes it freed."
    # and the knowcode experiment evaluates against it, its drift guard satisfied
    evaluated = run(
        tmp_path,
        "+experiment=knowcode",
        f"dataset.path={out}",
        f"hydra.run.dir={tmp_path / 'run'}",
    )
    assert evaluated.returncode in (0, 1), evaluated.stderr  # 1: a KnowCode gate's verdict
    summary = json.loads((tmp_path / "run/summary.json").read_text())
    assert summary["golden_set"]["queries"] == 12
    assert summary["golden_set"]["provenance"]["blessed"] is True
    assert summary["golden_set"]["provenance"]["drift"] == []


ORACLE = """
import json, os, sys, time
from evalframe.plugin.protocols import PluginContext
from evalframe.plugin.roles import OracleRequest
from evalframe_knowcode.roles import AstOracle, AstOracleConfig

req = json.load(sys.stdin)
ledger, started, marker = sys.argv[1:4]
request = OracleRequest.model_validate(
    {k: v for k, v in req.items() if k in ("candidate", "source", "feedback")}
)
qid = request.candidate.query_id
with open(started, "a") as f:
    f.write(qid + "\\n")
if len(open(started).read().split()) == 3 and not os.path.exists(marker):
    open(marker, "w").write(qid)
    time.sleep(120)  # the third call hangs: the test kills the build here
reply = AstOracle(AstOracleConfig(), PluginContext()).answer(request)
with open(ledger, "a") as f:
    f.write(qid + "\\n")
print(json.dumps({"record": reply.record}))
"""


@pytest.mark.slow
def test_kill_9_during_the_oracle_step_then_resume_repeats_no_call(tmp_path: Path) -> None:
    script = tmp_path / "oracle.py"
    script.write_text(ORACLE)
    ledger, started, marker = tmp_path / "answered", tmp_path / "started", tmp_path / "blocked"
    argv = [
        sys.executable,
        "-m",
        "evalframe",
        "golden",
        "build",
        "+build=knowcode_demo",
        "plan={locate: {easy: 2}, explain: {medium: 1}}",  # 3 + 2 = 5 author slots
        "author.faults={}",
        "oracle=command",
        "~oracle.faults",  # the demo's planted faults are settings of its ast oracle
        f"oracle.command=[{sys.executable},{script},{ledger},{started},{marker}]",
        "max_concurrency=1",
        "review.file=null",
    ]
    env = {**os.environ, "EVALFRAME_CACHE_DIR": str(tmp_path / ".cache")}
    proc = subprocess.Popen(
        argv,
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # the build and the oracle it runs: one process group
    )
    deadline = time.monotonic() + 120
    while not marker.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert marker.exists(), "the oracle step never reached its third call"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = ledger.read_text().split()
    assert len(before) == 2  # two answers paid for, the third in flight at the kill
    done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    answered = ledger.read_text().split()
    assert len(answered) == len(set(answered))  # no oracle call answered twice
    assert answered[:2] == before
    # the resumed run read the authors and the first two answers from the cache
    assert "B author     5 candidates (0 calls, 5 cached)" in done.stdout
    assert re.search(r"D oracle     \d+ answers \(\d+ calls, 2 cached\)", done.stdout), done.stdout
    batches = sorted((tmp_path / "golden/knowcode_demo/pipeline").iterdir())
    assert len(batches) == 2 and not (batches[0] / "batch.json").exists()  # the killed one


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        ([], ["no build selected", "+build=NAME (available: knowcode_demo"]),
        (["+build=knowcode_dem"], ["no build config named 'knowcode_dem'", "knowcode_demo"]),
        (["+build=knowcode_demo", "oracle=oracel"], ["no oracle config named 'oracel'", "ast"]),
        (["+build=knowcode_demo", "budget.max_calls=10"], ["budget.max_calls", "may make 84"]),
        (["+build=knowcode_demo", "plan={lookup: {easy: 1}}"], ["config key plan", "lookup"]),
        # refused by the schema, after Hydra made the batch folder: it is removed again
        (["+build=knowcode_demo", "headroom=0"], ["headroom", "greater than or equal to 1"]),
    ],
)
def test_usage_errors_exit_2_with_a_clear_message(
    tmp_path: Path, args: list[str], fragments: list[str]
) -> None:
    done = run(tmp_path, "golden", "build", *args)
    assert done.returncode == 2, done.stdout + done.stderr
    for fragment in fragments:
        assert fragment in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    pipeline = tmp_path / "golden/knowcode_demo/pipeline"
    assert not pipeline.exists() or not any(pipeline.iterdir())  # nothing half-written


def test_help_lists_the_steps_and_golden_lists_build(tmp_path: Path) -> None:
    done = run(tmp_path, "golden", "build", "--help")
    assert done.returncode == 0 and "plan, author, dedup, oracle" in done.stdout
    listed = run(tmp_path, "golden", "--help")
    assert "build" in listed.stdout
