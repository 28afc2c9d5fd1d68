"""The miner: pools, seeded draws, the call cache, concurrency, resume, and its outputs."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, ClassVar

import pytest
from evalframe_formats.adk import read_pairs

from evalframe.core.errors import ConfigError, DataError
from evalframe.mine.engine import draw_trials, mine, prepare
from evalframe.mine.output import DATASET, write_outputs
from evalframe.plugin.protocols import Answer, Attempt, PluginConfig, PluginContext
from evalframe.plugin.registry import SOLVERS
from tests.mine.mine_helpers import DOCS, mining_config, write_project


def outcomes(result: Any) -> list[list[bool]]:
    return [[o.passed for o in p.outcomes] for p in result.pairs]


def test_pool_is_the_seeds_then_distinct_distractors(tmp_path: Path) -> None:
    prepared = prepare(mining_config(write_project(tmp_path), **{"pool.distractors": 5}))
    pool = prepared.pairs[0].pool
    assert pool[:2] == ("doc0", "doc1")
    assert len(pool) == 7 and len(set(pool)) == 7 and set(pool) <= set(DOCS)


def test_more_distractors_than_documents_takes_them_all(tmp_path: Path) -> None:
    prepared = prepare(mining_config(write_project(tmp_path), **{"pool.distractors": 50}))
    assert sorted(prepared.pairs[0].pool) == sorted(DOCS)


def test_trial_draws_depend_only_on_seed_task_and_index() -> None:
    pool = tuple(DOCS)
    long = draw_trials("t", pool, 80, p_include=0.5, seed=3, shuffle=True)
    short = draw_trials("t", pool, 50, p_include=0.5, seed=3, shuffle=True)
    assert long[:50] == short  # more trials extend fewer: nothing paid for is lost
    assert draw_trials("t", pool, 50, p_include=0.5, seed=4, shuffle=True) != short
    assert draw_trials("u", pool, 50, p_include=0.5, seed=3, shuffle=True) != short
    assert len({t.seed for t in long}) == 80  # every trial its own seed


def test_inclusion_rate_is_p(tmp_path: Path) -> None:
    trials = draw_trials("t", tuple(DOCS), 2000, p_include=0.3, seed=0, shuffle=False)
    share = sum(len(t.included) for t in trials) / (2000 * len(DOCS))
    assert share == pytest.approx(0.3, abs=0.01)  # 20,000 Bernoulli(0.3): SE 0.0032


def test_same_seed_same_result_at_any_concurrency(tmp_path: Path) -> None:
    root = write_project(tmp_path)
    one = mine(mining_config(root, max_concurrency=1))
    many = mine(mining_config(root, max_concurrency=8))
    assert outcomes(one) == outcomes(many)
    assert one.pairs[0].stats == many.pairs[0].stats
    other = mine(mining_config(root, seed=1))
    assert outcomes(other) != outcomes(one)


def test_auto_trials_follow_the_budget(tmp_path: Path) -> None:
    prepared = prepare(mining_config(write_project(tmp_path), **{"trials.n": "auto"}))
    assert prepared.trials == prepared.budget.required == len(prepared.pairs[0].trials)
    capped = prepare(
        mining_config(write_project(tmp_path), **{"trials.n": "auto", "trials.max": 40})
    )
    assert capped.trials == 40


class CountingConfig(PluginConfig):
    model: str = "m1"


class Counting:
    """Answers 'solved' when doc0 is in the context; counts calls; an outage at a trial."""

    calls: ClassVar[list[tuple[str, int]]] = []
    #: the outage is outside the config, as in life: the same command is re-run
    outage_at: ClassVar[int] = -1
    lock = threading.Lock()

    def __init__(self, config: CountingConfig, context: PluginContext) -> None:
        self.config = config

    def solve(self, attempt: Attempt) -> Answer:
        if attempt.trial == self.outage_at:
            raise DataError(f"outage at trial {attempt.trial}")
        with self.lock:
            self.calls.append((attempt.task_id, attempt.trial))
        ok = any(d.id == "doc0" for d in attempt.context)
        return Answer(text="solved" if ok else "no")


@pytest.fixture
def counting() -> Any:
    Counting.calls = []
    Counting.outage_at = -1
    with SOLVERS.scoped() as reg:
        reg.add("counting", Counting, CountingConfig)
        yield Counting
    Counting.outage_at = -1


def test_cached_calls_are_not_made_again(tmp_path: Path, counting: Any) -> None:
    root = write_project(tmp_path, tasks=2)
    cfg = {"solver": {"name": "counting"}, "cache": True, "trials.n": 30, "max_concurrency": 4}
    first = mine(mining_config(root, **cfg))
    assert len(counting.calls) == 60 and first.calls["solver_calls"] == 60
    counting.calls.clear()
    again = mine(mining_config(root, **cfg))
    assert counting.calls == [] and again.calls["solver_cached"] == 60
    assert outcomes(again) == outcomes(first)
    counting.calls.clear()
    more = mine(mining_config(root, **{**cfg, "trials.n": 40}))
    assert sorted(t for _, t in counting.calls) == sorted(list(range(30, 40)) * 2)
    assert [o[:30] for o in outcomes(more)] == outcomes(first)


def test_an_interrupted_run_resumes_without_repeating_a_call(tmp_path: Path, counting: Any) -> None:
    root = write_project(tmp_path, tasks=2)
    cfg = {"solver": {"name": "counting"}, "cache": True, "trials.n": 40, "max_concurrency": 3}
    counting.outage_at = 25
    with pytest.raises(DataError, match="outage at trial 25"):
        mine(mining_config(root, **cfg))
    paid = list(counting.calls)
    assert 0 < len(paid) < 80
    counting.calls.clear()
    counting.outage_at = -1
    resumed = mine(mining_config(root, **cfg))
    assert not set(counting.calls) & set(paid)  # no answer paid for is asked again
    assert sorted(paid + counting.calls) == sorted(
        (f"b:t{i}", t) for i in range(2) for t in range(40)
    )
    counting.calls.clear()
    fresh = mine(mining_config(root, **{**cfg, "cache": False}))
    assert outcomes(fresh) == outcomes(resumed)


def test_a_config_change_is_a_new_key(tmp_path: Path, counting: Any) -> None:
    root = write_project(tmp_path)
    cfg = {"solver": {"name": "counting"}, "cache": True, "trials.n": 10}
    mine(mining_config(root, **cfg))
    counting.calls.clear()
    mine(mining_config(root, **{**cfg, "solver.model": "m2"}))
    assert len(counting.calls) == 10


def test_solver_answers_are_checked(tmp_path: Path) -> None:
    class Bad:
        def __init__(self, config: Any, context: PluginContext) -> None:
            pass

        def solve(self, attempt: Attempt) -> str:
            return "text"

    with SOLVERS.scoped() as reg:
        reg.add("bad", Bad)
        with pytest.raises(Exception, match="not an Answer"):
            mine(mining_config(write_project(tmp_path), solver={"name": "bad"}))


def test_unknown_seed_names_the_task_file_and_line(tmp_path: Path) -> None:
    root = write_project(tmp_path)
    tasks = root / "tasks.jsonl"
    tasks.write_text(tasks.read_text().replace('"doc1"', '"doc11"'))
    with pytest.raises(DataError) as info:
        prepare(mining_config(root))
    assert info.value.path == str(tasks) and info.value.line == 1
    assert "doc11" in info.value.message and "doc1" in (info.value.hint or "")


def test_missing_ground_truth_field_is_named(tmp_path: Path) -> None:
    root = write_project(tmp_path)
    with pytest.raises(DataError, match="no field 'nope'"):
        prepare(mining_config(root, **{"benchmarks.b.ground_truth": {"answer": "nope"}}))


def test_templates_and_yaml_task_files(tmp_path: Path) -> None:
    root = write_project(tmp_path)
    records = [json.loads(x) for x in (root / "tasks.jsonl").read_text().splitlines()]
    import yaml

    (root / "tasks.yaml").write_text(yaml.safe_dump(records))
    cfg = mining_config(
        root,
        **{
            "benchmarks.b.tasks": str(root / "tasks.yaml"),
            "benchmarks.b.ground_truth": {
                "answer": "expected",
                "test_file": {"template": "{dir}/tests/test_{id}.py"},
            },
        },
    )
    (task,) = prepare(cfg).pairs
    assert task.loaded.task.ground_truth == {
        "answer": "solved",
        "test_file": f"{root}/tests/test_t0.py",
    }
    assert task.loaded.task.id == "b:t0"


def test_a_bad_setting_names_its_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        mining_config(write_project(tmp_path), **{"trials.p_include": 1.5})
    assert "trials.p_include" in info.value.render()
    with pytest.raises(ConfigError) as info:
        mining_config(
            write_project(tmp_path),
            solver={"name": "simulated", "base_rate": 0.9, "lift": {"a": 0.3}},
        )
    assert info.value.key == "solver"


def test_outputs_round_trip_through_the_adk_reader(tmp_path: Path) -> None:
    root = write_project(tmp_path, tasks=2)
    cfg = mining_config(root, **{"trials.n": 200})
    result = mine(cfg)
    paths = write_outputs(result, cfg)
    pairs = read_pairs(paths["dataset"])
    assert [p.id for p in pairs] == ["b:t0", "b:t1"]
    first = pairs[0]
    assert first.metadata["trials"] == 200
    by = {c.fqn: c for c in first.candidates}
    stats = result.pairs[0].stats
    for doc, cand in by.items():
        assert cand.label == (stats[doc].verdict == "relevant")
        assert cand.delta_p == pytest.approx(stats[doc].delta_p, abs=1e-6)
        assert cand.extra["verdict"] == stats[doc].verdict
        assert cand.extra["trials_in"] + cand.extra["trials_out"] == 200
    assert by["doc0"].label == 1  # lift 0.4 at 200 trials
    trials = (cfg.output_dir / "trials.jsonl").read_text().splitlines()
    assert len(trials) == 400
    assert (cfg.output_dir / DATASET).is_file()


def test_the_registry_may_be_a_yaml_list_of_named_benchmarks(tmp_path: Path) -> None:
    from evalframe.mine.config import validate_mining
    from tests.mine.mine_helpers import raw_mining

    root = write_project(tmp_path)
    raw = raw_mining(root)
    spec = raw["benchmarks"]["b"]
    raw["benchmarks"] = [{"name": "first", **spec}, {"name": "second", **spec}]
    prepared = prepare(validate_mining(raw))
    assert [p.loaded.task.id for p in prepared.pairs] == ["first:t0", "second:t0"]
    raw["benchmarks"] = [{"name": "same", **spec}, {"name": "same", **spec}]
    with pytest.raises(ConfigError, match="unique 'name'"):
        validate_mining(raw)
