"""The build's machinery: cached and resumable calls, concurrency, the budget, schema
rejects, batch folders (append-only, every record versioned), one step at a time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalframe.build.config import validate_build
from evalframe.core.errors import ConfigError, DataError, PluginError
from evalframe.plugin.roles import Usage
from tests.build.build_helpers import (
    Script,
    build,
    jsonl,
    raw_build,
    rules_of,
    scripted,
    step,
    step_file,
)

__all__ = ["scripted"]

PLAN = {"locate": {"easy": 2, "medium": 2}, "debug": {"hard": 2}}  # 3 + 3 + 3 = 9 slots


def test_a_second_build_repeats_no_call(tmp_path: Path, scripted: Script) -> None:
    _, _, first, _ = build(tmp_path, PLAN, cache=True)
    made = dict(scripted.calls)
    assert made == {"author": 9, "oracle": 9, "adversary": 9, "judge": 9}
    _, _, second, lines = build(tmp_path, PLAN, "b2", cache=True)
    assert dict(scripted.calls) == made  # nothing asked again
    calls = json.loads((second / "batch.json").read_text())["calls"]
    assert calls["total_calls"] == 0 and calls["total_cached"] == 36
    assert "(0 calls, 9 cached)" in next(line for line in lines if line.startswith("B"))
    for name in ("00_candidates.jsonl", "01_oracle_answers.jsonl", "02_adversary_reports.jsonl"):
        assert (first / name).read_text() == (second / name).read_text()


def test_a_changed_role_setting_is_asked_again(tmp_path: Path, scripted: Script) -> None:
    build(tmp_path, PLAN, cache=True)
    build(tmp_path, PLAN, "b2", cache=True, oracle={"model": "script/2"})
    # the oracle's config is in its key; the authors' replies are still good
    assert scripted.calls["author"] == 9 and scripted.calls["oracle"] == 18


def test_calls_run_concurrently_up_to_max_concurrency(tmp_path: Path, scripted: Script) -> None:
    scripted.delay = 0.05
    build(tmp_path, PLAN, max_concurrency=3)
    assert scripted.max_active == 3


def test_one_call_at_a_time_when_max_concurrency_is_1(tmp_path: Path, scripted: Script) -> None:
    scripted.delay = 0.01
    _, _, batch, _ = build(tmp_path, PLAN, max_concurrency=1)
    assert scripted.max_active == 1
    # whatever the order of completion, files are written in plan order
    ids = [r["query_id"] for r in jsonl(batch / "00_candidates.jsonl")]
    assert ids == sorted(ids)


@pytest.mark.parametrize(("limit", "refused"), [(36, False), (35, True)])
def test_the_budget_refuses_a_build_that_may_make_more_calls(
    tmp_path: Path, scripted: Script, limit: int, refused: bool
) -> None:
    """9 author slots, then at most one oracle, adversary and judge call each: 4 × 9 = 36."""
    if not refused:
        build(tmp_path, PLAN, budget={"max_calls": limit})
        return
    with pytest.raises(ConfigError) as err:
        build(tmp_path, PLAN, budget={"max_calls": limit})
    assert err.value.key == "budget.max_calls"
    assert "may make 36 role calls" in err.value.message
    assert sum(scripted.calls.values()) == 0  # refused before any call


def test_the_token_estimate_and_spend(tmp_path: Path, scripted: Script) -> None:
    per = {"author": 10, "oracle": 100, "adversary": 50, "judge": 5}
    # estimate: 9 × (10 + 100 + 50 + 5) = 1485 tokens
    with pytest.raises(ConfigError) as err:
        build(tmp_path, PLAN, budget={"tokens_per_call": per, "max_tokens": 1484})
    assert err.value.key == "budget.max_tokens" and "about 1485 tokens" in err.value.message
    scripted.usage = {
        "author": Usage(input_tokens=3, output_tokens=1),
        "oracle": Usage(input_tokens=20, output_tokens=7),
    }
    assert not (tmp_path / "out/pipeline/b1/plan.json").exists()  # refused before writing
    _, _, batch, _ = build(
        tmp_path, PLAN, "b2", budget={"tokens_per_call": per, "max_tokens": 1485}
    )
    calls = json.loads((batch / "batch.json").read_text())["calls"]
    assert calls["input_tokens"]["author"] == 9 * 3 and calls["output_tokens"]["oracle"] == 9 * 7
    assert calls["total_tokens"] == 9 * (3 + 1) + 9 * (20 + 7)


def test_a_build_stops_when_the_tokens_spent_reach_the_budget(
    tmp_path: Path, scripted: Script
) -> None:
    scripted.usage = {"author": Usage(input_tokens=100)}
    per = dict.fromkeys(("author", "oracle", "adversary", "judge"), 0)
    with pytest.raises(ConfigError) as err:
        build(tmp_path, PLAN, max_concurrency=1, budget={"tokens_per_call": per, "max_tokens": 250})
    assert err.value.key == "budget.max_tokens"
    assert scripted.calls["author"] == 3  # 100, 200, 300 >= 250: no fourth call


@pytest.mark.parametrize(
    ("role", "broken", "rule_fragment"),
    [
        ("author", {"query_text": ""}, "not a QueryCandidate: query_text"),
        ("author", {"query_id": "q_99999"}, "the record is for query 'q_99999'"),
        ("oracle", {"expected_entities": []}, "not a OracleAnswer: expected_entities"),
        ("adversary", {"overall_verdict": "maybe"}, "not a AdversaryReport: overall_verdict"),
        ("judge", {"verdict": "same"}, "not a NarrativeJudgement: verdict"),
    ],
)
def test_a_record_that_does_not_fit_its_schema_is_a_schema_reject(
    tmp_path: Path, scripted: Script, role: str, broken: dict, rule_fragment: str
) -> None:
    real = getattr(scripted, role)
    setattr(scripted, role, lambda r: {**real(r), **broken})
    _, _, batch, _ = build(tmp_path, {"locate": {"easy": 1}}, headroom=1.0)
    rejected = jsonl(batch / "05_rejected.jsonl")
    assert [(r["query_id"], r["rule"]) for r in rejected] == [("q_00001", "schema")]
    assert rule_fragment in rejected[0]["reason"]


def test_a_role_that_returns_no_reply_is_a_plugin_error(tmp_path: Path, scripted: Script) -> None:
    from tests.build import build_helpers

    original = build_helpers.Scripted.answer
    build_helpers.Scripted.answer = lambda self, request: {"record": {}}  # type: ignore[assignment,method-assign]
    try:
        with pytest.raises(PluginError) as err:
            build(tmp_path, {"locate": {"easy": 1}}, headroom=1.0)
    finally:
        build_helpers.Scripted.answer = original  # type: ignore[method-assign]
    assert "returned dict, not a RoleReply" in err.value.message


def test_every_record_carries_schema_version(tmp_path: Path, scripted: Script) -> None:
    _, _, batch, _ = build(tmp_path, PLAN)
    for path in batch.glob("*.jsonl"):
        for record in jsonl(path):
            assert record["schema_version"] == "1.0.0", path.name
    for path in batch.glob("*.json"):
        assert json.loads(path.read_text())["schema_version"] == "1.0.0", path.name


def test_a_batch_folder_is_never_written_twice(tmp_path: Path, scripted: Script) -> None:
    build(tmp_path, PLAN)
    with pytest.raises(DataError) as err:
        build(tmp_path, PLAN)  # the same batch folder
    assert "batches are append-only" in err.value.message and err.value.key == "output.batch"


def test_one_step_at_a_time_gives_the_same_batch(tmp_path: Path, scripted: Script) -> None:
    _, _, whole, _ = build(tmp_path / "a", PLAN)
    steps = ("plan", "author", "dedup", "oracle", "gate", "adversary", "review", "assemble")
    for name in steps:
        batch = step(tmp_path / "b", PLAN, name)
    for name in ("00_candidates.jsonl", "01_oracle_answers.jsonl", "05_rejected.jsonl"):
        strip = [{k: v for k, v in r.items() if not k.endswith("_at")} for r in jsonl(batch / name)]
        want = [{k: v for k, v in r.items() if not k.endswith("_at")} for r in jsonl(whole / name)]
        assert strip == want, name
    assert json.loads((batch / "batch.json").read_text())["status"] == "awaiting_review"


def test_a_step_before_its_inputs_names_the_step_to_run(tmp_path: Path, scripted: Script) -> None:
    with pytest.raises(DataError) as err:
        step(tmp_path, PLAN, "oracle")
    assert "step author has not run in this batch" in err.value.message
    assert err.value.key == "step"


@pytest.mark.parametrize(
    ("over", "key"),
    [
        ({"author": {"name": "nope"}}, "author.name"),
        ({"oracle": {"name": "scripted", "temperature": 1}}, "oracle.temperature"),
        ({"format": "jsonl"}, "format"),
        ({"headroom": 0.5}, None),
        ({"budget": {"tokens_per_call": {"writer": 3}}}, "budget.tokens_per_call"),
    ],
)
def test_config_errors_name_their_key(
    tmp_path: Path, scripted: Script, over: dict, key: str | None
) -> None:
    with pytest.raises((ConfigError, PluginError)) as err:
        validate_build(raw_build(tmp_path, PLAN, **over))
    if key is not None:
        assert err.value.key == key
    else:
        assert "headroom" in err.value.message


def test_a_rejected_query_is_never_asked_of_a_later_role(tmp_path: Path, scripted: Script) -> None:
    real = scripted.oracle

    def oracle(request):  # type: ignore[no-untyped-def]
        record = real(request)
        if request.candidate.query_id == "q_00002":
            record["expected_files"] = ["pkg/none.py"]
        return record

    scripted.oracle = oracle
    _, _, batch, _ = build(tmp_path, {"locate": {"easy": 2}})
    assert rules_of(batch)["q_00002"] == "gate:file"
    assert ("adversary", "q_00002") not in scripted.asked
    assert step_file(batch, "gate")["passed"] == ["q_00001", "q_00003"]
