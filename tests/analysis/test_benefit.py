"""A/B benefit: the shipped two-arm fixture's table derived by hand, and every refusal.

The fixture's costs are listed in evalframe/data/knowcode_analyses/README.md; the
expected values below are written as the arithmetic on those costs. Deltas are
per pair, averaged over a task's seeds, then over tasks; success lift = A - B and
every saved = B - A.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalframe.analysis.benefit import compute_benefit
from evalframe.analysis.calibration import BootstrapSettings
from evalframe.analysis.facts import FactsConfig, FactsJudge
from evalframe.analysis.settings import BenefitSettings, validate_analysis
from evalframe.app.benefit_cmd import main as benefit_main
from evalframe.core.errors import DataError
from evalframe.golden.load import load_golden
from evalframe.plugin.protocols import Answer, Judgement, MiningTask
from evalframe.plugin.registry import VALIDATORS
from evalframe.report.analyses import render_benefit
from tests.conftest import Project

DATA = Path(__file__).resolve().parents[2] / "evalframe" / "data" / "knowcode_analyses"
ARM_A, ARM_B = DATA / "benefit" / "knowcode.jsonl", DATA / "benefit" / "grep_only.jsonl"
BOOT = BootstrapSettings(resamples=400, seed=0)


def settings(**kw: Any) -> BenefitSettings:
    return BenefitSettings(a=str(kw.pop("a", ARM_A)), b=str(kw.pop("b", ARM_B)), **kw)


@pytest.fixture(scope="module")
def table() -> dict[str, Any]:
    result = compute_benefit(settings(), boot=BOOT)
    return {r.label: r for r in result.rows} | {"_result": result}


def d(row: Any, name: str) -> Any:
    return row.deltas[name]


def test_locate_easy_pays_the_schema_tax_every_time_so_it_is_a_net_cost(table: dict) -> None:
    row = table["locate/easy"]
    assert (row.n_tasks, row.n_pairs) == (3, 9)
    assert (d(row, "success_lift").mean, d(row, "success_lift").ci_low) == (0.0, 0.0)
    saved = d(row, "net_tokens_saved")  # B - A = -600 on every one of the 9 pairs
    assert (saved.mean, saved.ci_low, saved.ci_high) == (-600.0, -600.0, -600.0)
    assert d(row, "net_tokens_saved_per_success").mean == -600.0
    assert d(row, "tool_calls_saved").mean == 3 - 2
    assert d(row, "turns_saved").mean == 0
    assert d(row, "latency_ms_saved").mean == 4000 - 4500
    assert d(row, "usd_saved").mean == pytest.approx(-600 * 3e-6)
    assert row.verdict == "net cost"  # success holds 0, tokens saved lie below it
    assert row.arm_means["a"]["success"] == row.arm_means["b"]["success"] == 1.0


def test_explain_hard_pays_off_on_success(table: dict) -> None:
    row = table["explain/hard"]
    # B succeeds q09 on no seed, q10 on seed 0, q32 on seeds 0 and 1; A always
    lift = [1 - 0 / 3, 1 - 1 / 3, 1 - 2 / 3]
    assert d(row, "success_lift").mean == pytest.approx(sum(lift) / 3)
    # every resample's mean lies between the smallest and the largest task value
    assert 1 / 3 - 1e-12 <= d(row, "success_lift").ci_low <= d(row, "success_lift").ci_high <= 1
    assert d(row, "net_tokens_saved").mean == 4000
    per_success = d(row, "net_tokens_saved_per_success")  # q09 has no pair where both succeed
    assert (per_success.mean, per_success.n) == (4000, 2)
    assert d(row, "tool_calls_saved").mean == 12 - 4
    assert d(row, "turns_saved").mean == 9 - 3
    assert d(row, "latency_ms_saved").mean == 45000 - 20000
    assert d(row, "usd_saved").mean == pytest.approx(4000 * 3e-6)
    assert row.verdict == "pays off"
    assert row.arm_means["b"]["success"] == pytest.approx((0 + 1 / 3 + 2 / 3) / 3)


def test_debug_medium_saves_on_one_task_and_costs_on_the_other_so_it_is_inconclusive(
    table: dict,
) -> None:
    row = table["debug/medium"]
    saved = d(row, "net_tokens_saved")  # q07 +1000, q22 -1000
    assert saved.mean == 0
    # resampling two tasks gives means -1000, 0, +1000 with probabilities 1/4, 1/2, 1/4:
    # the 2.5 % and 97.5 % quantiles are the extremes
    assert (saved.ci_low, saved.ci_high) == (-1000, 1000)
    assert d(row, "tool_calls_saved").mean == ((5 - 3) + (4 - 5)) / 2
    assert d(row, "latency_ms_saved").mean == ((10000 - 9000) + (10000 - 11000)) / 2
    assert row.verdict == "inconclusive"


def test_baseline_answerable_is_its_own_split(table: dict) -> None:
    no, yes = table["baseline_answerable=false"], table["baseline_answerable=true"]
    assert (no.n_tasks, yes.n_tasks) == (2, 6)  # q09, q10 / the other six
    assert d(no, "success_lift").mean == pytest.approx((1 + 2 / 3) / 2)
    assert d(yes, "success_lift").mean == pytest.approx((1 / 3) / 6)  # only q32 differs
    assert d(yes, "net_tokens_saved").mean == pytest.approx((3 * -600 + 4000 + 1000 - 1000) / 6)


def test_overall(table: dict) -> None:
    row = table["overall"]
    assert (row.n_tasks, row.n_pairs) == (8, 24)
    assert d(row, "success_lift").mean == pytest.approx((1 + 2 / 3 + 1 / 3) / 8)
    assert d(row, "net_tokens_saved").mean == pytest.approx((3 * -600 + 3 * 4000 + 0) / 8)
    # both succeeded: q01-q03 (-600 each), q10, q32 (4000), q07 (+1000), q22 (-1000)
    per_success = d(row, "net_tokens_saved_per_success")
    assert (per_success.mean, per_success.n) == (pytest.approx((3 * -600 + 8000) / 7), 7)
    assert d(row, "tool_calls_saved").mean == pytest.approx((3 * 1 + 3 * 8 + 2 - 1) / 8)
    result = table["_result"]
    assert result.arms["a"]["models"] == result.arms["b"]["models"] == ["claude-sonnet-4"]
    assert (result.arms["a"]["label"], result.arms["b"]["label"]) == ("knowcode", "grep-only")
    assert result.seeds == {"min": 3, "max": 3}


def expected_verdict(lift: Any, saved: Any) -> str:
    """The documented rule: success decides when its interval excludes 0, then net tokens."""
    for delta in (lift, saved):
        if delta.ci_low > 0:
            return "pays off"
        if delta.ci_high < 0:
            return "net cost"
    return "inconclusive"


def test_the_verdict_follows_the_intervals_not_the_estimates(table: dict) -> None:
    rows = [r for r in table.values() if hasattr(r, "deltas")]
    for row in rows:
        assert row.verdict == expected_verdict(d(row, "success_lift"), d(row, "net_tokens_saved"))
    # debug/medium: the estimates of both are 0 and tokens' interval holds 0 -> inconclusive,
    # although tool calls favour A (+0.5): effort never decides the verdict
    assert table["debug/medium"].verdict == "inconclusive"
    assert d(table["debug/medium"], "tool_calls_saved").mean > 0


def test_scoring_the_answers_blind_gives_the_records_table() -> None:
    golden = load_golden(DATA / "golden_v1.0.json", "knowcode").golden
    analyses = validate_analysis(
        {"benefit": {"a": str(ARM_A), "b": str(ARM_B), "score": "answers"}}, depth=10
    )
    assert analyses.settings.benefit is not None
    judged = compute_benefit(
        analyses.settings.benefit, golden=golden, judge=analyses.benefit_judge, boot=BOOT
    )
    recorded = compute_benefit(settings(), golden=golden, boot=BOOT)
    assert [r.as_dict() for r in judged.rows] == [r.as_dict() for r in recorded.rows]
    assert judged.scoring == {"mode": "answers", "judge": "facts", "blind": True}


class Spy:
    """A judge that keeps everything it is given, to show that no arm label is among it."""

    seen: list[tuple[MiningTask, Answer]] = []

    def __init__(self, config: Any, context: Any) -> None:
        Spy.seen = []

    def validate(self, task: MiningTask, answer: Answer) -> Judgement:
        Spy.seen.append((task, answer))
        return FactsJudge(FactsConfig(), None).validate(task, answer)  # type: ignore[arg-type]


def _arm(path: Path, rename: dict[str, str], out: Path) -> Path:
    """A copy of an arm's records with labels and tools renamed."""
    lines = []
    for line in path.read_text().splitlines():
        r = json.loads(line)
        r["arm"] = rename[r["arm"]]
        r["tools"] = [rename.get(t, t) for t in r["tools"]]
        lines.append(json.dumps(r))
    out.write_text("\n".join(lines) + "\n")
    return out


def test_the_judge_cannot_see_the_arm(tmp_path: Path) -> None:
    """Every channel to the judge is checked: the task it receives has an opaque random id,
    the question, the facts and nothing else; the answers reach it in a shuffled order;
    and swapping which arm is A and which is B leaves what it sees unchanged."""
    golden = load_golden(DATA / "golden_v1.0.json", "knowcode").golden
    labels = {"knowcode": "ARM-LABEL-ALPHA", "grep-only": "ARM-LABEL-BRAVO",
              "retrieve_context_for_query": "TOOL-SECRET"}  # fmt: skip
    a = _arm(ARM_A, labels, tmp_path / "a.jsonl")
    b = _arm(ARM_B, labels, tmp_path / "b.jsonl")

    def seen(first: Path, second: Path) -> list[tuple[MiningTask, Answer]]:
        with VALIDATORS.scoped() as reg:
            reg.add("spy", Spy)
            analyses = validate_analysis(
                {"benefit": {"a": str(first), "b": str(second), "score": "answers",
                             "judge": {"name": "spy"}}},
                depth=10,
            )  # fmt: skip
            assert analyses.settings.benefit is not None
            compute_benefit(analyses.settings.benefit, golden=golden,
                            judge=analyses.benefit_judge, boot=BOOT)  # fmt: skip
        return list(Spy.seen)

    forward = seen(a, b)
    assert len(forward) == 48
    for task, answer in forward:
        assert set(task.model_dump()) == {"id", "query", "metadata", "ground_truth"}
        assert task.metadata == {}
        assert set(task.ground_truth) == {"must_mention", "must_not_mention"}
        assert len(task.id) == 16 and int(task.id, 16) >= 0  # opaque hex
        assert set(answer.model_dump()) == {"text", "metadata"} and answer.metadata == {}
        dumped = json.dumps([task.model_dump(), answer.model_dump()])
        for secret in (*labels.values(), "a.jsonl", "b.jsonl", '"arm"', str(tmp_path)):
            assert secret not in dumped
    # shuffled: the two arms' answers are interleaved, not first all A then all B
    failed = [i for i, (_, ans) in enumerate(forward) if "could not find" in ans.text]
    assert min(failed) > 0 and max(failed) < 47 and failed != list(range(min(failed), 48))
    # swapping the arms changes nothing the judge can observe but the order
    backward = seen(b, a)
    key = lambda pair: (pair[0].query, pair[1].text)  # noqa: E731
    assert sorted(map(key, forward)) == sorted(map(key, backward))


def write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def attempt(task: str, seed: int, **kw: Any) -> dict[str, Any]:
    base = {"task_id": task, "seed": seed, "success": True, "total_tokens": 100,
            "tool_calls": 1, "turns": 1, "latency_ms": 10, "model": "m"}  # fmt: skip
    return base | kw


def two_arms(tmp_path: Path, a: list[dict], b: list[dict], **kw: Any) -> Any:
    pa, pb = write(tmp_path / "a.jsonl", a), write(tmp_path / "b.jsonl", b)
    return compute_benefit(settings(a=pa, b=pb, **kw), boot=BOOT)


SEEDS = [attempt("t", s) for s in range(3)]


def test_fewer_than_min_seeds_is_refused_and_exactly_min_seeds_is_enough(tmp_path: Path) -> None:
    assert two_arms(tmp_path, SEEDS, SEEDS).pairs == 3
    with pytest.raises(DataError, match=r"fewer than 4 seeds per arm: t \(3\)"):
        two_arms(tmp_path, SEEDS, SEEDS, min_seeds=4)


def test_an_attempt_without_its_partner_is_refused_with_its_line(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"no partner in the other arm: t seed 3 \(A only\)") as e:
        two_arms(tmp_path, [*SEEDS, attempt("t", 3)], SEEDS)
    assert e.value.line == 4 and str(e.value.path).endswith("a.jsonl")


def test_a_repeated_task_and_seed_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="duplicated"):
        two_arms(tmp_path, [*SEEDS, attempt("t", 0)], SEEDS)


@pytest.mark.parametrize(
    ("field", "a_value", "b_value"),
    [("model", "m", "other-model"), ("temperature", 0.0, 0.7), ("prompt", "v1", "v2"),
     ("temperature", 0.0, None)],
)  # fmt: skip
def test_arms_that_differ_in_anything_but_tools_are_refused(
    tmp_path: Path, field: str, a_value: Any, b_value: Any
) -> None:
    a = [attempt("t", s, **{field: a_value}) for s in range(3)]
    b = [attempt("t", s, **({field: b_value} if b_value is not None else {})) for s in range(3)]
    with pytest.raises(DataError, match=f"the arms differ in {field}"):
        two_arms(tmp_path, a, b)
    # tools, answers and costs may differ
    b = [attempt("t", s, tools=["grep"], total_tokens=999, **{field: a_value}) for s in range(3)]
    assert two_arms(tmp_path, a, b).pairs == 3


def test_usd_is_all_or_nothing(tmp_path: Path) -> None:
    with_usd = [attempt("t", s, usd=0.1) for s in range(3)]
    with pytest.raises(DataError, match="some attempts give 'usd'"):
        two_arms(tmp_path, with_usd, SEEDS)
    result = two_arms(tmp_path, SEEDS, SEEDS)
    assert result.overall().deltas["usd_saved"].n == 0
    assert any("usd_saved is n/a" in c for c in result.caveats)


@pytest.mark.parametrize(
    ("bad", "message"),
    [({"seed": "0"}, "'seed' must be an integer"), ({"total_tokens": -1}, "whole number >= 0"),
     ({"success": "yes"}, "'success' must be true/false"), ({"model": ""}, "'model'"),
     ({"latency_ms": "fast"}, "'latency_ms' must be a number"),
     ({"wall_clock_s": 2}, "give latency once")],
)  # fmt: skip
def test_a_bad_field_names_its_file_and_line(tmp_path: Path, bad: dict, message: str) -> None:
    a = [*SEEDS[:2], attempt("t", 2) | bad]
    with pytest.raises(DataError, match=message) as e:
        two_arms(tmp_path, a, SEEDS)
    assert e.value.line == 3


def test_wall_clock_seconds_are_read_as_milliseconds(tmp_path: Path) -> None:
    a = [{k: v for k, v in attempt("t", s).items() if k != "latency_ms"} | {"wall_clock_s": 2}
         for s in range(3)]  # fmt: skip
    assert two_arms(tmp_path, a, SEEDS).overall().deltas["latency_ms_saved"].mean == 10 - 2000


def test_the_command_writes_benefit_json_and_a_table_within_100_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = benefit_main([str(ARM_A), str(ARM_B), "--out", str(tmp_path), "--bootstrap", "200"])
    assert code == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 100
    assert "locate/easy" in out and "net cost" in out and "pays off" in out
    saved = json.loads((tmp_path / "benefit.json").read_text())
    assert saved["arms"]["a"]["label"] == "knowcode"
    assert {r["label"]: r["verdict"] for r in saved["rows"]}["explain/hard"] == "pays off"
    assert render_benefit(saved)  # the stored file renders as the fresh one did


def test_the_command_refuses_answer_scoring_without_a_golden_set(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from evalframe.app.cli import main

    assert main(["benefit", str(ARM_A), str(ARM_B), "--score", "answers"]) == 2
    assert "--golden" in capsys.readouterr().err


def test_the_command_refuses_a_judge_that_records_scoring_would_not_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--judge nosuch` with the default --score records was accepted without a word."""
    from evalframe.app.cli import main

    out = tmp_path / "b"
    assert main(["benefit", str(ARM_A), str(ARM_B), "--judge", "nosuch", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: option --judge: --judge and --judge-param choose how an answer")
    assert "(got --judge nosuch)" in err and "add --score answers" in err
    assert not out.exists()


def test_the_command_says_when_out_is_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from evalframe.app.cli import main

    named = tmp_path / "benefit.json"
    named.write_text("kept\n")
    with pytest.raises(SystemExit) as stopped:  # argparse's line (core.argtypes.folder)
        main(["benefit", str(ARM_A), str(ARM_B), "--bootstrap", "50", "--out", str(named)])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert f"{named} is a file, not a folder" in err and "Traceback" not in err
    assert named.read_text() == "kept\n"


def test_the_command_never_writes_into_a_run_folder(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run made with analysis.benefit keeps its own benefit.json, which its page shows:
    `benefit --out RUN` would put one there that the run never computed."""
    from evalframe.app.cli import main

    res = project.run(*project.data_args(), f"hydra.run.dir={project.root / 'run'}")
    assert res.code == 0, res.stderr
    run_dir = project.root / "run"
    before = {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()}
    code = main(["benefit", str(ARM_A), str(ARM_B), "--bootstrap", "50", "--out", str(run_dir)])
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: option --out: {run_dir} is the folder of a run: benefit.json ")
    assert f"hint: give --out a folder of its own, e.g. {project.root / 'benefit'}" in err
    assert {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()} == before


@pytest.mark.parametrize(
    ("change", "field", "which"),
    [
        ({"strata": ["task_typ", "difficulty"]}, "task_typ", "strata"),
        ({"split": "baseline_answerabl"}, "baseline_answerabl", "split"),
    ],
)
def test_a_field_no_task_has_is_said(
    capsys: pytest.CaptureFixture[str], change: dict[str, Any], field: str, which: str
) -> None:
    """A misspelt stratum or split field made rows of 'unset' (one a copy of overall),
    exit 0, without a word."""
    capsys.readouterr()
    result = compute_benefit(settings(**change), boot=BOOT)
    assert any("unset" in r.label for r in result.rows)
    err = capsys.readouterr().err
    assert f"benefit: no task has a {field!r} field" in err
    assert f"analysis.benefit.{which} (--{which})" in err
    compute_benefit(settings(), boot=BOOT)  # the fixture's own fields: nothing to say
    assert "no task has" not in capsys.readouterr().err
