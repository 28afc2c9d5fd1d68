"""Steps C and F at their boundaries, worked by hand: de-duplication at 50% (§10.1 C) and
the §6 agreement rule (structural Jaccard >= 0.8 on entities and on files, and a narrative
judge that says "equivalent")."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.build.build_helpers import (
    Script,
    answer_for,
    build,
    entity,
    jsonl,
    rules_of,
    scripted,
    step_file,
    supporting,
)

__all__ = ["scripted"]

#: query -> its target entities (by number): A = {1, 2}; each later one against A and B.
TARGETS = {
    "q_00001": [1, 2],  # A, accepted
    "q_00002": [2, 3],  # B: 1 of its 2 targets in A: 1/2 = 50%, not more: accepted
    "q_00003": [1, 2, 4],  # C: 2 of 3 in A: 66.7% > 50%: rejected
    "q_00004": [3, 5],  # D: 1 of 2 in B: 50%: accepted
    "q_00005": [5, 6, 7, 3],  # E: 1/4 in B, 2/4 = 50% in D: accepted
    "q_00006": [6, 7, 8],  # F: 2 of 3 in E: 66.7%: rejected
}


def test_dedup_rejects_only_more_than_half_the_targets_overlapping(
    tmp_path: Path, scripted: Script
) -> None:
    real = scripted.author

    def author(request):  # type: ignore[no-untyped-def]
        record = real(request)
        record["target_entity_ids"] = [entity(n) for n in TARGETS[request.query_id]]
        return record

    scripted.author = author
    # 4 targets, headroom 1.5: 6 slots, q_00001 .. q_00006
    _, _, batch, _ = build(tmp_path, {"explain": {"hard": 4}})
    dedup = step_file(batch, "dedup")
    assert dedup["accepted"] == ["q_00001", "q_00002", "q_00004", "q_00005"]
    reasons = {r["query_id"]: r["reason"] for r in dedup["rejected"]}
    assert set(reasons) == {"q_00003", "q_00006"}
    assert reasons["q_00003"] == "67% of its targets overlap accepted candidate q_00001"
    assert reasons["q_00006"] == "67% of its targets overlap accepted candidate q_00005"
    assert scripted.calls["oracle"] == 4  # the rejected never reach the oracle
    assert rules_of(batch)["q_00003"] == "dedup"


def test_dedup_threshold_is_configurable(tmp_path: Path, scripted: Script) -> None:
    real = scripted.author

    def author(request):  # type: ignore[no-untyped-def]
        record = real(request)
        record["target_entity_ids"] = [entity(n) for n in TARGETS[request.query_id]]
        return record

    scripted.author = author
    # at max_overlap 0.4, 50% is too much: B (1/2 in A) and C (2/3 in A) go; D {3, 5}
    # meets only accepted A: kept; E {5, 6, 7, 3} has 2/4 = 50% in D: goes; F {6, 7, 8}
    # meets A and D only: kept
    _, _, batch, _ = build(tmp_path, {"explain": {"hard": 4}}, dedup={"max_overlap": 0.4})
    assert step_file(batch, "dedup")["accepted"] == ["q_00001", "q_00004", "q_00006"]


def _many(n: int) -> list[str]:
    return [entity(k) for k in range(10, 10 + n)]


@pytest.mark.parametrize(
    ("entities", "partial", "partial_files", "passes", "jaccard"),
    [
        # 4 of 5 entities supported (one partial): J = 4/5 = 0.8 >= 0.8: agrees
        (5, 1, 0, True, (4 / 5, 1.0)),
        # 3 of 4: J = 3/4 = 0.75 < 0.8
        (4, 1, 0, False, (3 / 4, 1.0)),
        # 7 of 9: J = 7/9 = 0.778 < 0.8 (the second condition alone fails)
        (9, 2, 0, False, (7 / 9, 1.0)),
        # entities all supported, 4 of 5 files: J_files = 4/5 = 0.8: agrees
        (5, 0, 1, True, (1.0, 4 / 5)),
        # 3 of 4 files: 0.75 < 0.8
        (4, 0, 1, False, (1.0, 3 / 4)),
    ],
)
def test_structural_agreement_is_jaccard_of_at_least_0_8_on_entities_and_on_files(
    tmp_path: Path,
    scripted: Script,
    entities: int,
    partial: int,
    partial_files: int,
    passes: bool,
    jaccard: tuple[float, float],
) -> None:
    """The adversary supports all but the last ``partial`` entities (and files); the
    oracle's sets are the full ones, so Jaccard = supported / all."""
    ents = _many(entities)
    scripted.oracle = lambda r: answer_for(r.candidate.query_id, "explain", "hard", ents)
    scripted.adversary = lambda r: supporting(r, partial, partial_files)
    _, _, batch, _ = build(tmp_path, {"explain": {"hard": 1}}, headroom=1.0)
    step = step_file(batch, "adversary")
    assert step["agreement"]["q_00001"]["entities"] == pytest.approx(jaccard[0], abs=1e-12)
    assert step["agreement"]["q_00001"]["files"] == pytest.approx(jaccard[1], abs=1e-12)
    if passes:
        assert step["pool"] == ["q_00001"]
        # a partial verdict still sends it to a human (§3.3)
        assert step["flags"]["q_00001"] == ["partial adversary verdict"]
        assert scripted.calls["judge"] == 1
    else:
        assert step["pool"] == []
        assert rules_of(batch)["q_00001"] == "agreement:structural"
        queue = jsonl(batch / "04_human_review_queue.jsonl")
        assert queue[0]["query_id"] == "q_00001" and queue[0]["in_pool"] is False
        assert scripted.calls["judge"] == 0  # the judge runs on structural passes only


def test_the_agreement_threshold_is_configurable(tmp_path: Path, scripted: Script) -> None:
    ents = _many(4)
    scripted.oracle = lambda r: answer_for(r.candidate.query_id, "explain", "hard", ents)
    scripted.adversary = lambda r: supporting(r, 1)
    _, _, batch, _ = build(
        tmp_path, {"explain": {"hard": 1}}, headroom=1.0, agreement={"threshold": 0.75}
    )
    assert step_file(batch, "adversary")["pool"] == ["q_00001"]  # 3/4 >= 0.75


@pytest.mark.parametrize(
    ("verdict", "kept"),
    [("equivalent", True), ("minor_divergence", False), ("significant_divergence", False)],
)
def test_only_an_equivalent_narrative_passes(
    tmp_path: Path, scripted: Script, verdict: str, kept: bool
) -> None:
    scripted.judge = lambda r: {"query_id": r.query.query_id, "verdict": verdict, "rationale": "x"}
    _, _, batch, _ = build(tmp_path, {"locate": {"easy": 1}}, headroom=1.0)
    assert (step_file(batch, "adversary")["pool"] == ["q_00001"]) is kept
    if not kept:
        assert rules_of(batch)["q_00001"] == "agreement:narrative"
        assert verdict in jsonl(batch / "05_rejected.jsonl")[0]["reason"]


def test_an_unsupported_structural_claim_blocks_the_label(tmp_path: Path, scripted: Script) -> None:
    def adversary(request):  # type: ignore[no-untyped-def]
        report = supporting(request)
        report["claim_verdicts"].append(
            {"claim_type": "line_range", "claim": "pkg/m1.py:1-2", "verdict": "unsupported"}
        )
        report["overall_verdict"] = "unsupported"
        return report

    scripted.adversary = adversary
    _, _, batch, _ = build(tmp_path, {"locate": {"easy": 1}}, headroom=1.0)
    assert rules_of(batch)["q_00001"] == "adversary:unsupported"
    assert "line_range pkg/m1.py:1-2" in jsonl(batch / "05_rejected.jsonl")[0]["reason"]
    assert scripted.calls["judge"] == 0
    assert jsonl(batch / "04_human_review_queue.jsonl")[0]["reasons"][0].startswith("blocking")


def test_a_low_confidence_answer_is_flagged_and_still_goes_on(
    tmp_path: Path, scripted: Script
) -> None:
    real = scripted.oracle

    def oracle(request):  # type: ignore[no-untyped-def]
        return {**real(request), "confidence": "low", "uncertainty_notes": "unsure"}

    scripted.oracle = oracle
    _, _, batch, _ = build(tmp_path, {"locate": {"easy": 1}}, headroom=1.0)
    assert step_file(batch, "oracle")["low_confidence"] == ["q_00001"]
    assert step_file(batch, "adversary")["pool"] == ["q_00001"]
    sample = jsonl(batch / "review_sample.jsonl")
    assert "low-confidence oracle answer" in sample[0]["review_reasons"]


def test_every_gate_check_rejects_with_its_name(tmp_path: Path, scripted: Script) -> None:
    """The mechanical gate (§5) on answers, each broken one way."""
    real = scripted.oracle
    broken = {
        "q_00001": {"expected_entities": [{"entity_id": "pkg/m1.py::f99"}]},
        "q_00002": {"expected_files": ["pkg/m2.py", "pkg/missing.py"]},
        "q_00003": {"expected_line_ranges": [{"file": "pkg/m3.py", "start": 2, "end": 9}]},
        "q_00004": {"expected_files": []},
        "q_00005": {"canonical_narrative": "It calls `f7` before returning."},
    }

    def oracle(request):  # type: ignore[no-untyped-def]
        return {**real(request), **broken.get(request.candidate.query_id, {})}

    scripted.oracle = oracle
    _, _, batch, _ = build(tmp_path, {"debug": {"easy": 6}}, headroom=1.0)
    rules = rules_of(batch)
    assert {q: rules[q] for q in broken} == {
        "q_00001": "gate:entity",
        "q_00002": "gate:file",
        "q_00003": "gate:line-range",
        "q_00004": "gate:entity-file",
        "q_00005": "gate:narrative",
    }
    failures = {f["query_id"]: f["checks"] for f in jsonl(batch / "03_validation_failures.jsonl")}
    assert failures == {
        "q_00001": ["entity"],
        "q_00002": ["file"],
        "q_00003": ["line-range"],
        "q_00004": ["entity-file"],
        "q_00005": ["narrative"],
    }
    assert step_file(batch, "gate")["passed"] == ["q_00006"]
