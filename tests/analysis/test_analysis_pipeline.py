"""The analyses inside a run: config validation, the files written, metrics.json, gates, rescore.

A fake retriever answers the tiny project's queries with a fixed ranking, a
confidence and an answer, so every number below is worked out from the tables
in this file.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from evalframe.app.cli import main as cli_main
from evalframe.core.errors import (
    EXIT_GATE_FAILED,
    EXIT_OK,
    ConfigError,
    DataError,
    EvalframeError,
)
from evalframe.core.types import Ranking
from evalframe.pipeline.config import validate_experiment
from evalframe.pipeline.run import run_experiment
from evalframe.plugin.protocols import PluginContext, Query
from evalframe.plugin.registry import RETRIEVERS
from evalframe.report.terminal import TerminalReport
from tests.conftest import Project, raw_config, write_jsonl

FACTS = {
    "1": ["pip install in a virtual environment"],
    "2": ["a failed required gate exits with code 1"],
    "3": ["the index is cached on disk under the corpus hash"],
}
# query id -> (ranking, confidence, answer); query 4 is the negative example
ANSWERS: dict[str, tuple[list[str], float | None, str | None]] = {
    "1": (["install", "gates"], 0.9, "Use pip install in a virtual environment."),  # hit, right
    "2": (["cache", "slices"], 0.8, "It exits with code 2."),  # miss (Hit@1 0), wrong
    "3": (["cache", "install"], 0.3, "The index is cached on disk under the corpus hash."),
    "4": (["slices"], 0.6, "No."),
}


class Answering:
    """Fixed rankings with a confidence and an answer per query."""

    def __init__(self, config: Any, context: PluginContext) -> None:
        pass

    def retrieve(self, query: Query, k: int) -> Ranking:
        ids, confidence, answer = ANSWERS[query.id]
        pairs = [(d, 1.0 / (i + 1)) for i, d in enumerate(ids)][:k]
        return Ranking.from_pairs(query.id, pairs, confidence=confidence, answer=answer)


@pytest.fixture
def facts_project(project: Project) -> Project:
    records = [json.loads(line) for line in project.golden.read_text().splitlines()]
    for r in records:
        r["must_mention_facts"] = FACTS.get(str(r["id"]), [])
    write_jsonl(project.golden, records)
    return project


def run(project: Project, **overrides: Any) -> Any:
    cfg = raw_config(project, retriever={"name": "answering"}, **overrides)
    with RETRIEVERS.scoped() as reg:
        reg.add("answering", Answering)
        exp = validate_experiment(cfg)
        return run_experiment(exp, reporters=[TerminalReport(io.StringIO())], progress=False)


CAL = {"calibration": {"outcome": "answer", "min_queries": 30}}


def test_calibration_of_the_answers_is_written_with_its_numbers(facts_project: Project) -> None:
    result = run(facts_project, analysis=CAL)
    cal = json.loads((facts_project.root / "out" / "calibration.json").read_text())
    # usable: 1 (0.9, right), 2 (0.8, wrong), 3 (0.3, right); 4 has no facts: left out
    assert cal["n"] == 3 and cal["excluded"] == {"no_facts": ["4"]}
    assert [q["outcome"] for q in cal["queries"]] == [True, False, True]
    # bins [0.3,0.4) {0.3: 1} gap 0.7; [0.8,0.9) {0.8: 0} gap 0.8; [0.9,1] {0.9: 1} gap 0.1
    assert cal["ece"] == pytest.approx((0.7 + 0.8 + 0.1) / 3)
    assert cal["mce"] == pytest.approx(0.8)
    assert cal["brier"] == pytest.approx((0.1**2 + 0.8**2 + 0.7**2) / 3)
    at8 = cal["answer_correctness"]["0.8"]
    assert (at8["routed"], at8["value"]) == (2, 0.5)
    assert any("fewer than about 30" in c for c in cal["caveats"])
    assert "misses" in cal["queries"][1]["detail"]
    metrics = json.loads((facts_project.root / "out" / "metrics.json").read_text())
    assert metrics["calibration.ece"] == pytest.approx(cal["ece"])
    assert metrics["calibration.answer_correctness@0.8.n"] == 2
    assert result.outputs["calibration"].name == "calibration.json"  # trackers log outputs
    summary = json.loads((facts_project.root / "out" / "summary.json").read_text())
    assert summary["analysis"]["calibration"]["verdict"] == cal["verdict"]


@pytest.mark.parametrize(("outcome", "k", "metric"), [("hit", 1, "Hit@1"), ("recall", 2, "R@2")])
def test_a_ranking_outcome_leaves_negative_examples_out(
    project: Project, outcome: str, k: int, metric: str
) -> None:
    run(project, analysis={"calibration": {"outcome": outcome, "k": k}})
    cal = json.loads((project.root / "out" / "calibration.json").read_text())
    # one relevant document each: query 1 finds it (install, rank 1), 2 does not (gates is
    # not retrieved), 3 does (cache, rank 1); 4 is a negative example
    assert [(q["query_id"], q["outcome"]) for q in cal["queries"]] == [
        ("1", True),
        ("2", False),
        ("3", True),
    ]
    assert cal["excluded"] == {"negative": ["4"]}
    assert cal["outcome_description"] == f"{metric} = 1"


def test_gates_read_analysis_values(facts_project: Project) -> None:
    gates = {
        "calibrated": {"type": "analysis", "analysis": "calibration.ece", "op": "<=", "value": 0.6},
        "routing": {
            "type": "analysis",
            "analysis": "calibration.answer_correctness@0.8",
            "value": 0.5,
        },
    }
    result = run(facts_project, analysis=CAL, gates=gates)
    by_name = {g.name: g for g in result.gates}
    assert by_name["calibrated"].passed  # ECE 1.6 / 3 = 0.533 <= 0.6
    assert by_name["routing"].passed and by_name["routing"].value == 0.5
    gates["calibrated"]["value"] = 0.5
    result = run(facts_project, analysis=CAL, gates=gates)
    assert result.exit_code == EXIT_GATE_FAILED
    assert "calibration.ece = 0.533 ≤ 0.5 does not hold (n=3)" in result.gates[0].message


def test_a_gate_on_an_analysis_value_nobody_computes_fails_before_retrieval(
    facts_project: Project,
) -> None:
    gates = {
        "g": {"type": "analysis", "analysis": "calibration.answer_correctness@0.7", "value": 1}
    }
    with pytest.raises(ConfigError, match="no configured analysis produces") as e:
        validate_experiment(raw_config(facts_project, analysis=CAL, gates=gates))
    assert e.value.key == "gates.g.analysis"
    assert "calibration.answer_correctness@0.8" in (e.value.expected or "")


@pytest.mark.parametrize(
    ("analysis", "key"),
    [
        ({"calibration": {"thresholds": [0.8, 1.5]}}, "analysis.calibration.thresholds"),
        ({"calibration": {"outcome": "hit", "k": 6}}, "analysis.calibration.k"),  # depth is 5
        ({"calibration": {"judge": {"name": "fact"}}}, "analysis.calibration.judge.name"),
        ({"calibration": {"judge": {"min_share": 2}}}, "analysis.calibration.judge.min_share"),
        ({"calibration": {"binning": "quantile"}}, "analysis.calibration.binning"),
        ({"failures": {"flat_count": 1}}, "analysis.failures.flat_count"),
        ({"calibraton": {}}, "analysis.calibraton"),
        ({"benefit": {"a": "x.jsonl"}}, "analysis.benefit.b"),
    ],
)
def test_bad_analysis_settings_name_their_key(
    project: Project, analysis: dict[str, Any], key: str
) -> None:
    with pytest.raises(EvalframeError) as e:  # a misspelt plugin name is a PluginError
        validate_experiment(raw_config(project, analysis=analysis))
    assert (e.value.key or "").startswith(key), e.value.render()


def test_a_retriever_without_confidences_cannot_be_calibrated(project: Project) -> None:
    experiment = validate_experiment(raw_config(project, analysis=CAL))
    with pytest.raises(DataError, match="calibration has no query to use") as e:
        run_experiment(experiment, progress=False)
    assert e.value.key == "analysis.calibration"


def test_a_stated_must_not_fact_fails_an_answer_only_when_its_field_is_named(
    facts_project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """KnowCode's curve is against "the answer contained all must_mention_facts": by
    default query 1's answer, which holds its fact and states its must-not one, is right;
    with forbidden_field named it is wrong; a field no query has is said."""
    records = [json.loads(line) for line in facts_project.golden.read_text().splitlines()]
    for r in records:
        if str(r["id"]) == "1":
            r["must_not_mention_facts"] = ["Use pip install in a virtual environment"]
    write_jsonl(facts_project.golden, records)
    out = facts_project.root / "out" / "calibration.json"
    run(facts_project, analysis=CAL)
    first = json.loads(out.read_text())["queries"][0]
    assert (first["query_id"], first["outcome"]) == ("1", True)
    strict = {"calibration": {**CAL["calibration"], "forbidden_field": "must_not_mention_facts"}}
    run(facts_project, analysis=strict)
    cal = json.loads(out.read_text())
    assert (cal["queries"][0]["outcome"], cal["queries"][0]["detail"]) == (
        False,
        "states: Use pip install in a virtual environment",
    )
    assert cal["outcome_description"].startswith(
        "the answer holds every must_mention_facts and no must_not_mention_facts"
    )
    capsys.readouterr()
    misnamed = {"calibration": {**CAL["calibration"], "forbidden_field": "must_not"}}
    run(facts_project, analysis=misnamed)
    err = capsys.readouterr().err
    assert "analysis.calibration.forbidden_field: no golden query has a 'must_not' field" in err
    assert json.loads(out.read_text())["queries"][0]["outcome"] is True


def test_a_misnamed_facts_field_gets_the_hint_for_it(facts_project: Project) -> None:
    """Every query has a confidence; none has facts under the named field: the hint
    names facts_field, not the confidences (it said a retriever must return them)."""
    misnamed = {"calibration": {**CAL["calibration"], "facts_field": "facts"}}
    with pytest.raises(DataError) as e:
        run(facts_project, analysis=misnamed)
    assert "no facts" in e.value.message
    assert "analysis.calibration.facts_field ('facts')" in str(e.value.hint)


def test_a_confidence_outside_0_1_is_a_data_error(facts_project: Project) -> None:
    saved = ANSWERS["1"]
    ANSWERS["1"] = (saved[0], 1.5, saved[2])
    try:
        with pytest.raises(DataError, match=r"confidence 1.5 is not in \[0, 1\]"):
            run(facts_project, analysis=CAL)
    finally:
        ANSWERS["1"] = saved


def test_a_label_field_no_query_holds_is_said_and_the_heuristics_decide(
    facts_project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    failures = {"label_field": "kindd", "label_categories": {"vague": "specificity_gap"}}
    run(facts_project, analysis={"failures": failures})
    err = capsys.readouterr().err
    assert "analysis.failures.label_field: no query of the golden set has a metadata field " in err
    assert "'kindd'" in err
    summary = json.loads((facts_project.root / "out" / "summary.json").read_text())
    assert summary["analysis"]["failures"]["labels"] == {
        "field": "kindd",
        "labelled": 0,
        "agree": 0,
    }


def test_failed_queries_get_categories_and_rescore_keeps_them(
    facts_project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    run(facts_project, analysis=CAL)
    out = facts_project.root / "out"
    failed = [
        json.loads(line)
        for line in (out / "per_query.jsonl").read_text().splitlines()
        if json.loads(line)["status"] == "✗"
    ]
    assert [r["query_id"] for r in failed] == ["2"]  # RR 0: "gates" is not retrieved
    assert failed[0]["failure"]["heuristic"] is True
    summary = json.loads((out / "summary.json").read_text())
    assert summary["analysis"]["failures"]["failed"] == 1
    before = (out / "calibration.json").read_text()
    with RETRIEVERS.scoped() as reg:  # rescore validates the stored config, retriever included
        reg.add("answering", Answering)
        assert cli_main(["rescore", str(out)]) == EXIT_OK
    capsys.readouterr()
    assert (out / "calibration.json").read_text() == before
    again = [json.loads(line) for line in (out / "per_query.jsonl").read_text().splitlines()]
    assert [r["failure"] for r in again if r["status"] == "✗"] == [failed[0]["failure"]]


def test_a_two_arm_benefit_runs_from_config(tmp_path: Path, project: Project) -> None:
    arm = [
        {"task_id": str(t), "seed": s, "success": True, "total_tokens": 100 + 10 * t,
         "tool_calls": 1, "turns": 1, "latency_ms": 5, "model": "m"}
        for t in (1, 2, 3) for s in range(3)
    ]  # fmt: skip
    cheaper = [r | {"total_tokens": r["total_tokens"] - 30} for r in arm]
    a, b = write_jsonl(tmp_path / "a.jsonl", cheaper), write_jsonl(tmp_path / "b.jsonl", arm)
    benefit = {"a": str(a), "b": str(b), "strata": ["difficulty"], "split": None}
    gates = {"saves": {"type": "analysis", "analysis": "benefit.net_tokens_saved", "value": 30}}
    result = run(project, analysis={"benefit": benefit}, gates=gates)
    saved = json.loads((project.root / "out" / "benefit.json").read_text())
    assert [r["label"] for r in saved["rows"]] == ["easy", "hard", "overall"]  # from the golden set
    overall = saved["rows"][-1]["deltas"]["net_tokens_saved"]
    assert (overall["mean"], overall["ci_low"], overall["ci_high"]) == (30, 30, 30)
    assert result.gates[0].passed


def test_rescore_can_add_calibration_to_a_stored_run(
    facts_project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    run(facts_project)
    out = facts_project.root / "out"
    assert not (out / "calibration.json").exists()
    with RETRIEVERS.scoped() as reg:
        reg.add("answering", Answering)
        assert cli_main(["rescore", str(out), "analysis=calibration"]) == EXIT_OK
    assert "verdict:" in capsys.readouterr().out
    cal = json.loads((out / "calibration.json").read_text())
    assert cal["n"] == 3 and cal["outcome"] == "answer"  # confidences and answers restored
