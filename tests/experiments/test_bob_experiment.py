"""The `bob` experiment end to end, with numbers from B.O.B's own formulas.

Every expected value is computed by tests/bob_oracle.py (a re-implementation
of reference 000's recall_at_k, precision_at_k and mrr) over the rankings the
run wrote to run.trec, in the order the retriever returned them; the headline
figures are also those of the stand-alone script in evalframe/data/bob/README.md.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from evalframe.core.io import read_trec_run
from tests import bob_oracle as bob
from tests import forkrun

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "evalframe" / "data" / "bob"
TIES = ROOT / "tests" / "data" / "bob_ties"


def evalframe(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m evalframe`` in a folder of its own, as a user in a fresh clone runs it."""
    env = {**os.environ, "EVALFRAME_CACHE_DIR": str(cwd / ".cache"), "PYTHONIOENCODING": "utf-8"}
    env.pop("EVALFRAME_TRACKING", None)
    return forkrun.run(args, cwd=cwd, env=env, timeout=300)  # a process of its own


def metrics(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))


def oracle_over(run_dir: Path, golden: list[dict[str, Any]], k: int = 5) -> dict[str, Any]:
    """B.O.B's results for the rankings in run.trec, each in the retriever's order."""
    run = read_trec_run(run_dir / "run.trec")

    def search(example: dict[str, Any]) -> list[object]:
        ranking = run.rankings.get(str(example["id"]))
        ids = list(ranking.doc_ids) if ranking is not None else []
        return [int(d) for d in ids]

    return bob.evaluate_golden_set(golden, search, k)


def test_bob_runs_from_a_fresh_folder_with_bobs_numbers(tmp_path: Path) -> None:
    res = evalframe(tmp_path, "+experiment=bob", "tracking=none", "hydra.run.dir=out")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr
    out = tmp_path / "out"
    golden = bob.read_golden(DATA / "example_gold.jsonl")
    expected = oracle_over(out, golden)
    got = metrics(out)
    assert got["R@5"] == pytest.approx(expected["recall_mean"], abs=1e-9)
    assert got["P@5"] == pytest.approx(expected["precision_mean"], abs=1e-9)
    assert got["RR"] == pytest.approx(expected["mrr_mean"], abs=1e-9)
    assert got["R@5.std"] == pytest.approx(expected["recall_std"], abs=1e-9)
    # the headline, as the data's README reports it from a stand-alone BM25 script
    assert (round(got["R@5"], 3), round(got["P@5"], 3), round(got["RR"], 3)) == (
        0.844,
        0.223,
        0.638,
    )
    # the shipped baseline is B.O.B's results for this very run
    shipped = json.loads((DATA / "baseline.json").read_text(encoding="utf-8"))
    by_id = {r["id"]: r for r in expected["per_query"]}
    assert [r["id"] for r in shipped["per_query"]] == list(by_id)
    for row in shipped["per_query"]:
        assert {k: row[k] for k in ("recall", "precision", "mrr")} == pytest.approx(
            {k: by_id[row["id"]][k] for k in ("recall", "precision", "mrr")}, abs=1e-12
        )
    assert shipped["recall_mean"] == pytest.approx(expected["recall_mean"], abs=1e-12)
    # ... and the run writes its own in that format (exports.bob): the reference's
    # formulas' values per query, which evalframe reads back as a baseline
    written = json.loads((out / "bob_results.json").read_text(encoding="utf-8"))
    assert written["k"] == 5
    assert {r["id"] for r in written["per_query"]} == set(by_id)
    for row in written["per_query"]:
        assert {k: row[k] for k in ("recall", "precision", "mrr")} == pytest.approx(
            {k: by_id[row["id"]][k] for k in ("recall", "precision", "mrr")}, abs=1e-12
        )
    for field in ("recall", "precision", "mrr"):
        assert written[f"{field}_mean"] == pytest.approx(expected[f"{field}_mean"], abs=1e-12)
    from evalframe.assess.bob_results import read_bob_results

    again = read_bob_results(out / "bob_results.json")
    assert again.values["R@5"] == pytest.approx(
        {str(i): by_id[i]["recall"] for i in by_id}, abs=1e-12
    )

    text = res.stdout
    assert "ties: given (equal scores keep the retriever's order)" in text
    assert "Recall@5     0.844 (±0.328)" in text  # B.O.B's names (metrics.labels)
    assert "✓ recall_drop: R@5 0.844 → 0.844 (+0.000, +0.0%): not lower than the baseline" in text
    assert "⚠ precision_band (advisory): P@5 = 0.223 > 0.6 does not hold" in text
    assert "hint: better ranking or filtering is needed" in text
    assert "Failed queries (MRR < 0.5): 18" in text  # as B.O.B prints it
    # bm25 answers in one batch: p50 = p95, said so rather than read as measured spread
    assert "(in batches: each batch's time is\n      shared out evenly among its queries)" in text
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["policies"]["ties"] == "given" and summary["policies"]["no_relevant"] == "bob"
    assert summary["ties"] == {"rule": "given", "k": 5, "queries": 1, "ranked": 103}
    assert summary["slices"] == {"fields": ["domain", "difficulty"], "skipped": {}}
    # a run that passed counts no failed gate (what a dashboard alerts on): its advisory
    # bands that missed are counted apart, as gates.json lists them
    gates = json.loads((out / "gates.json").read_text(encoding="utf-8"))["gates"]
    advisory_missed = [g["name"] for g in gates if not g["required"] and not g["passed"]]
    assert advisory_missed and all(g["passed"] for g in gates if g["required"])
    head = json.loads((out / "headline.json").read_text(encoding="utf-8"))
    assert (head["gates.passed"], head["gates.failed"], head["gates.advisory_missed"]) == (
        len(gates) - len(advisory_missed),
        0,
        len(advisory_missed),
    )
    assert {k: got[k] for k in head if k.startswith("gates.")} == {
        k: v for k, v in head.items() if k.startswith("gates.")
    }


def test_advisory_bands_alone_are_no_verdict_in_any_report(tmp_path: Path) -> None:
    """The documented first step on a team's own data: B.O.B's bands without its
    baseline. Advisory gates cannot fail a run: exit 0, and the terminal, summary.json,
    summary.md and the page say nothing that could fail it was checked (they said
    "✓ PASSED: every required gate passed (0 required, 3 advisory)")."""
    args = ("+experiment=bob", "baseline=null", "gates=bob_bands", "tracking=none")
    res = evalframe(tmp_path, *args, "hydra.run.dir=out")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr
    out = tmp_path / "out"
    gates = json.loads((out / "gates.json").read_text(encoding="utf-8"))["gates"]
    assert gates and not any(g["required"] for g in gates)
    assert (
        "Result: PASSED (no required gate: nothing that could fail the run was checked; "
        f"{len(gates)} advisory)"
    ) in res.stdout
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert (summary["verdict"], summary["gates_passed"]) == ("unchecked", True)
    head = (out / "summary.md").read_text(encoding="utf-8").splitlines()[0]
    assert head == "## PASSED (no required gate: nothing was checked) · evalframe · bob"
    page = (out / "report.html").read_text(encoding="utf-8")
    assert '<div class="verdict none" id="verdict">PASSED: no required gate' in page
    # and with no gate at all, summary.md is no verdict either (it said "✓ PASSED")
    res = evalframe(tmp_path, *args[:2], "gates=none", "tracking=none", "hydra.run.dir=bare")
    assert res.returncode == 0, res.stderr
    assert "Result: PASSED (no gates configured: nothing was checked)" in res.stdout
    head = (tmp_path / "bare" / "summary.md").read_text(encoding="utf-8").splitlines()[0]
    assert head.startswith("## PASSED (no gates configured: nothing was checked)")


def test_one_domain_is_compared_with_its_own_part_of_the_baseline(tmp_path: Path) -> None:
    res = evalframe(
        tmp_path,
        "+experiment=bob",
        "tracking=none",
        "hydra.run.dir=out",
        "dataset.path=${ef.data:bob/domains/cdc.jsonl}",
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr
    golden = bob.read_golden(DATA / "domains" / "cdc.jsonl")
    expected = oracle_over(tmp_path / "out", golden)
    assert metrics(tmp_path / "out")["RR"] == pytest.approx(expected["mrr_mean"], abs=1e-9)
    assert "(20 paired queries)" in res.stdout
    assert "Not sliced by:\n  domain: no query has this field" in res.stdout
    assert "By domain:" not in res.stdout


@pytest.mark.extended  # six processes (17 s of one worker); the suite scores the same case
# under both tie rules in-process (tests/metrics/test_ties.py)
def test_the_tie_case_gives_bobs_numbers_and_survives_rescore(tmp_path: Path) -> None:
    """Issue #25 §1: a service with two-decimal scores and ties, 24 questions, 4 negative."""
    golden = bob.read_golden(TIES / "golden.jsonl")
    service = json.loads((TIES / "service.json").read_text(encoding="utf-8"))
    common = [
        "+experiment=bob",
        "tracking=none",
        f"dataset.path={TIES / 'golden.jsonl'}",
        "corpus=none",
        "retriever=python",
        "retriever.target=service:search",
        f"retriever.python_path=[{TIES}]",
        "baseline=null",
        "gates=none",
    ]

    def as_returned(example: dict[str, Any]) -> list[object]:
        return [d for d, _ in service[str(example["id"])][:5]]  # the service asked for 5

    def by_trec_rule(example: dict[str, Any]) -> list[object]:
        pairs = [(str(d), float(s)) for d, s in service[str(example["id"])][:5]]
        return [int(d) for d, _ in sorted(pairs, key=lambda p: (p[1], p[0]), reverse=True)]

    def check(run_dir: Path, expected: dict[str, Any]) -> None:
        got = metrics(run_dir)
        for ours, theirs in (("R@5", "recall_mean"), ("P@5", "precision_mean"), ("RR", "mrr_mean")):
            assert got[ours] == pytest.approx(expected[theirs], abs=1e-9), ours

    given = bob.evaluate_golden_set(golden, as_returned)
    trec = bob.evaluate_golden_set(golden, by_trec_rule)
    assert given["mrr_mean"] != pytest.approx(trec["mrr_mean"], abs=1e-6)

    res = evalframe(tmp_path, *common, "hydra.run.dir=given")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr
    check(tmp_path / "given", given)
    ties = sum(
        1
        for pairs in service.values()
        if any(pairs[i][1] == pairs[i + 1][1] for i in range(min(5, len(pairs) - 1)))
    )
    # the report wraps lines at 100 columns: compare the words
    words = " ".join(res.stdout.split())
    assert f"{ties} of 24 queries have equal scores within the top 5" in words

    res = evalframe(tmp_path, *common, "metrics.policies.ties=trec_eval", "hydra.run.dir=trec")
    assert res.returncode == 0, res.stderr
    check(tmp_path / "trec", trec)
    assert "ties: trec_eval (equal scores rank by doc id, descending)" in res.stdout

    # rescore reproduces each run under its own rule ...
    for name, expected in (("given", given), ("trec", trec)):
        again = evalframe(
            tmp_path, "rescore", str(tmp_path / name), "--out", str(tmp_path / f"{name}-re")
        )
        assert again.returncode == 0, again.stderr
        check(tmp_path / f"{name}-re", expected)
    # ... and a trec_eval run re-scored under `given` gets the retriever's order back
    switched = evalframe(
        tmp_path,
        "rescore",
        str(tmp_path / "trec"),
        "metrics.policies.ties=given",
        "--out",
        str(tmp_path / "switched"),
    )
    assert switched.returncode == 0, switched.stderr
    check(tmp_path / "switched", given)


@pytest.mark.extended  # two B.O.B runs and a rescore (14 s of one worker); the suite runs
# the same note and command on the small project (tests/test_compare.py)
def test_compare_points_at_the_gates_it_does_not_run(tmp_path: Path) -> None:
    """`evalframe compare` is where a B.O.B user looks for `bob eval compare --baseline`'s
    flags: it said "within noise" on every line (exit 0) while the candidate's pass→fail
    gate, run against the reference, fails. It now names the gates it does not run and
    the command that runs them, which fails as B.O.B's flags would."""
    common = ("+experiment=bob", "tracking=none", "report.html=false")
    assert evalframe(tmp_path, *common, "hydra.run.dir=a").returncode == 0
    made = evalframe(tmp_path, *common, "retriever.stemmer=null", "hydra.run.dir=b")
    assert made.returncode == 1, made.stdout[-3000:] + made.stderr
    res = evalframe(tmp_path, "compare", "a", "b")
    assert res.returncode == 0, res.stderr
    assert "Gates: compare runs none" in res.stdout
    # B.O.B's names, as its report shows them, with what they stand for
    assert "labels (metrics.labels): Recall@5 is R@5, Precision@5 is P@5, MRR is RR" in res.stdout
    assert any(line.startswith("~  MRR ") for line in res.stdout.splitlines())
    assert "(recall_drop, mrr_drop, pass_to_fail, recall_band, precision_band, mrr_band)" in (
        " ".join(res.stdout.split())
    )
    command = res.stdout.strip().splitlines()[-1].split()
    assert command == ["evalframe", "rescore", "b", "baseline=a", "--out", "DIR"]
    gated = evalframe(tmp_path, *command[1:-1], "c")
    assert gated.returncode == 1, gated.stdout[-3000:] + gated.stderr
    # B.O.B's own MRR per query, before and after: pass is MRR >= 0.5
    golden = bob.read_golden(DATA / "example_gold.jsonl")
    before = {r["id"]: r["mrr"] for r in oracle_over(tmp_path / "a", golden)["per_query"]}
    after = {r["id"]: r["mrr"] for r in oracle_over(tmp_path / "b", golden)["per_query"]}
    broken = sum(1 for q in before if before[q] >= 0.5 > after[q])
    assert broken > 0
    assert f"✗ pass_to_fail: {broken} of 103 queries went from pass to fail (RR ≥ 0.5)" in (
        gated.stdout
    )
