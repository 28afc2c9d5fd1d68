"""Reading a benchmark's tasks: the id rule of the golden loaders, and the seeds field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from evalframe.core.errors import ConfigError, DataError
from evalframe.mine.tasks import BenchmarkSpec, load_benchmark


def tasks_file(root: Path, records: list[dict[str, object]], suffix: str = ".jsonl") -> Path:
    path = root / f"tasks{suffix}"
    if suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
    else:
        path.write_text(yaml.safe_dump(records))
    return path


def load(path: Path, **spec: object) -> list[str]:
    """The pair ids and their seeds, as ``id:seed,seed``."""
    tasks = load_benchmark("b", BenchmarkSpec(tasks=str(path), **spec), key="benchmarks.b")
    return [f"{t.task.id}={','.join(t.seeds)}" for t in tasks]


def test_an_id_with_a_space_is_refused_at_its_line(tmp_path: Path) -> None:
    path = tasks_file(tmp_path, [{"id": "a", "query": "q"}, {"id": "x y", "query": "q"}])
    with pytest.raises(DataError) as info:
        load(path)
    assert (info.value.path, info.value.line) == (str(path), 2)
    assert info.value.message == (
        "record 2: field 'id' contains a space or a control character, "
        "which a TREC file cannot hold"
    )
    assert info.value.got == "'x y'"


@pytest.mark.parametrize("bad", ["a\tb", "a\x07b", "", True, 1.5, None])
def test_every_id_the_golden_loaders_refuse_is_refused(tmp_path: Path, bad: object) -> None:
    path = tasks_file(tmp_path, [{"id": bad, "query": "q"}], suffix=".yaml")
    with pytest.raises(DataError, match="record 1: field 'id' "):
        load(path)


def test_ids_are_kept_as_the_golden_loaders_keep_them(tmp_path: Path) -> None:
    # surrounding space is not part of an id; an integer id is its decimal text
    path = tasks_file(tmp_path, [{"id": " t0 ", "query": "q"}, {"id": 7, "query": "q"}])
    assert load(path, seeds=None) == ["b:t0=", "b:7="]
    # so "t0" and " t0" are one id, listed twice
    path = tasks_file(tmp_path, [{"id": "t0", "query": "q"}, {"id": " t0", "query": "q"}])
    with pytest.raises(DataError, match="task id 'b:t0' appears twice"):
        load(path)


def test_a_prefix_with_a_space_names_its_key(tmp_path: Path) -> None:
    path = tasks_file(tmp_path, [{"id": "t0", "query": "q"}])
    with pytest.raises(ConfigError) as info:
        load(path, id_prefix="my b:")
    assert info.value.key == "benchmarks.b.id_prefix"


def test_a_seeds_field_the_config_names_must_be_in_every_record(tmp_path: Path) -> None:
    path = tasks_file(
        tmp_path,
        [{"id": "t0", "query": "q", "imports": ["d1"]}, {"id": "t1", "query": "q"}],
    )
    with pytest.raises(DataError) as info:
        load(path, seeds="imports")
    assert info.value.line == 2
    assert "has no field 'imports' (named by benchmarks.b.seeds)" in info.value.message
    assert info.value.got == "fields id, query"
    # an empty list (or null) says "no seeds" for one task; seeds=None for the benchmark
    path = tasks_file(
        tmp_path,
        [{"id": "t0", "query": "q", "imports": ["d1"]}, {"id": "t1", "query": "q", "imports": []}],
    )
    assert load(path, seeds="imports") == ["b:t0=d1", "b:t1="]
    assert load(path, seeds=None) == ["b:t0=", "b:t1="]


def test_the_default_seeds_field_may_be_absent(tmp_path: Path) -> None:
    # a benchmark that names no seeds field: records without "seeds" have none
    path = tasks_file(
        tmp_path, [{"id": "t0", "query": "q", "seeds": ["d1", "d2"]}, {"id": "t1", "query": "q"}]
    )
    assert load(path) == ["b:t0=d1,d2", "b:t1="]


def test_a_prefix_that_starts_with_a_space_is_refused(tmp_path: Path) -> None:
    path = tasks_file(tmp_path, [{"id": "t0", "query": "q"}])
    with pytest.raises(ConfigError, match="starts with a space"):
        load(path, id_prefix=" b:")
    assert load(path, id_prefix="", seeds=None) == ["t0="]
