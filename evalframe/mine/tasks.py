"""The benchmark registry: where a benchmark's tasks are and how to read their ground truth.

A benchmark is a file of task records (JSONL, a JSON array or a YAML list)
and a description of its fields, given in config (ADK's "benchmark
registry")::

    benchmarks:
      api_understanding:
        tasks: benchmarks/api.jsonl
        id: id                   # record field with the task id
        query: question          # ... with what the solver is asked
        seeds: imports           # ... with the seeded candidate ids (null: none)
        solver_fields: [kind]    # fields the solver may see besides the query
        ground_truth:            # the validator's inputs, never shown to the solver
          answer: expected.text                      # a (dotted) field
          test_file: {template: "{dir}/tests/test_{id}.py"}  # or a template

A ground-truth extractor is either a dotted field path or ``{template: ...}``,
formatted with the record's top-level fields plus ``{dir}`` (the folder of
the tasks file) and ``{benchmark}``. A pair's id is ``<benchmark>:<task id>``
as in ADK's files (``fix_errors:01``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from evalframe.core.errors import ConfigError, DataError
from evalframe.core.reader import read_json_array, read_jsonl, read_text, require_file, yaml_error
from evalframe.core.records import id_problem
from evalframe.core.types import normalise_id
from evalframe.plugin.protocols import MiningTask

__all__ = ["BenchmarkSpec", "LoadedTask", "load_benchmark"]


class Template(BaseModel):
    """A ground-truth value built from the record: ``{template: "{dir}/t_{id}.py"}``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    template: str


class BenchmarkSpec(BaseModel):
    """One benchmark of the registry: its tasks file and its fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tasks: str = Field(description="the tasks file (.jsonl, .json array, .yaml/.yml list)")
    format: Literal["auto", "jsonl", "json", "yaml"] = Field(
        "auto", description="how to read it (auto: by extension)"
    )
    id: str = Field("id", description="record field holding the task id")
    query: str = Field("query", description="record field holding what the solver is asked")
    seeds: str | None = Field(
        "seeds",
        description="record field listing seeded candidate ids (None: no seeds); when set, "
        "every record must hold it (a list, possibly empty)",
    )
    solver_fields: list[str] = Field(
        default_factory=list, description="record fields the solver sees besides the query"
    )
    ground_truth: dict[str, str | Template] = Field(
        default_factory=dict, description="validator inputs: name -> field path or {template}"
    )
    id_prefix: str | None = Field(None, description="pair id prefix (default: '<benchmark>:')")


@dataclass(frozen=True)
class LoadedTask:
    """A task with its seeded candidates and where it was read (``file:line``)."""

    task: MiningTask
    seeds: tuple[str, ...]
    path: Path
    line: int | None
    benchmark: str


def _records(spec: BenchmarkSpec, path: Path) -> list[tuple[int | None, Any]]:
    kind: str = spec.format
    if kind == "auto":
        suffix = path.suffix.lower()
        kind = {".jsonl": "jsonl", ".json": "json", ".yaml": "yaml", ".yml": "yaml"}.get(
            suffix, "jsonl"
        )
    if kind == "jsonl":
        return [(line, value) for line, value in read_jsonl(path, what="tasks file")]
    if kind == "json":
        return [(line, value) for line, value in read_json_array(path, what="tasks file")]
    import yaml

    try:
        data = yaml.safe_load(read_text(path, what="tasks file"))
    except yaml.YAMLError as exc:
        raise yaml_error(
            exc, path, what="the tasks file", hint="a YAML tasks file is a list of task records"
        ) from None
    if not isinstance(data, list):
        raise DataError(
            "a YAML tasks file must be a list of task records",
            path=path,
            got=type(data).__name__,
        )
    return [(None, value) for value in data]


def _field(record: Mapping[str, Any], dotted: str) -> Any:
    value: Any = record
    for part in dotted.split("."):
        if not isinstance(value, Mapping) or part not in value:
            raise KeyError(dotted)
        value = value[part]
    return value


def _seed_id(item: Any) -> str | None:
    """A seed is an id, or a mapping with ``fqn`` or ``id`` (ADK's candidates)."""
    if isinstance(item, Mapping):
        item = item.get("fqn", item.get("id"))
    if isinstance(item, bool) or not isinstance(item, (str, int)) or str(item).strip() == "":
        return None
    return str(item)


def load_benchmark(name: str, spec: BenchmarkSpec, *, key: str) -> list[LoadedTask]:
    """Every task of one benchmark, checked; errors name the file, the line and the field."""
    path = require_file(spec.tasks, what=f"tasks file of benchmark {name!r}", key=f"{key}.tasks")
    prefix = f"{name}:" if spec.id_prefix is None else spec.id_prefix
    probe = f"{prefix}0"  # pair ids are "<prefix><task id>": one word, as the adk loader reads
    if id_problem(probe) is not None or normalise_id(probe) != probe:
        prefix_key = f"{key}.id_prefix" if spec.id_prefix is not None else key
        raise ConfigError(
            f"the pair id prefix {prefix!r} "
            + (id_problem(probe) or "starts with a space, which is not part of an id"),
            key=prefix_key,
            expected="one word, as every pair id of the mined dataset must be",
            hint="name the benchmark without spaces, or set "
            f"{key}.id_prefix to a prefix without them",
        )
    # a seeds field the config names must be in every record: a misspelt name would
    # otherwise mine every task on random distractors alone; the default may be absent
    seeds_required = spec.seeds is not None and "seeds" in spec.model_fields_set
    out: list[LoadedTask] = []
    seen: dict[str, str] = {}
    for index, (line, record) in enumerate(_records(spec, path)):
        where = f"record {index + 1}"

        def error(message: str, **kw: Any) -> DataError:
            return DataError(f"{where}: {message}", path=path, line=line, **kw)  # noqa: B023  # raised at once

        if not isinstance(record, Mapping):
            raise error("a task record must be a mapping", got=type(record).__name__)
        fields = ", ".join(sorted(map(str, record))) or "(none)"
        try:
            raw_id, query = _field(record, spec.id), _field(record, spec.query)
        except KeyError as exc:
            raise error(
                f"has no field {exc.args[0]!r}",
                got=f"fields {fields}",
                hint=f"set {key}.id / {key}.query to the fields that hold them",
            ) from None
        problem = id_problem(raw_id)  # the golden loaders' rule: the mined file must load
        if problem is not None:
            raise error(
                f"field {spec.id!r} {problem}",
                got=repr(raw_id),
                hint="an id is one word: a non-empty string without spaces, or an integer",
            )
        if not isinstance(query, str) or not query.strip():
            raise error(f"field {spec.query!r} must be non-empty text", got=repr(query))
        task_id = f"{prefix}{normalise_id(raw_id)}"
        if task_id in seen:
            raise error(
                f"task id {task_id!r} appears twice (first at {seen[task_id]})",
                hint="give every task its own id",
            )
        seen[task_id] = f"{path}:{line}" if line else where
        seeds: list[str] = []
        if spec.seeds is not None:
            try:
                raw_seeds = _field(record, spec.seeds)
            except KeyError:
                if seeds_required:
                    raise error(
                        f"has no field {spec.seeds!r} (named by {key}.seeds)",
                        expected="a field listing the seeded candidate ids",
                        got=f"fields {fields}",
                        hint=f"set {key}.seeds to the field that lists them, or to null for "
                        f"a benchmark without seeds; a task without seeds may hold "
                        f"{spec.seeds!r}: []",
                    ) from None
                raw_seeds = []
            if raw_seeds is None:
                raw_seeds = []
            if not isinstance(raw_seeds, list):
                raise error(
                    f"field {spec.seeds!r} must be a list of candidate ids",
                    got=repr(raw_seeds)[:80],
                )
            for item in raw_seeds:
                seed = _seed_id(item)
                if seed is None:
                    raise error(f"field {spec.seeds!r} holds a bad id", got=repr(item)[:80])
                if seed not in seeds:
                    seeds.append(seed)
        metadata = {}
        for name_ in spec.solver_fields:
            try:
                metadata[name_] = _field(record, name_)
            except KeyError:
                raise error(
                    f"has no field {name_!r} (listed in {key}.solver_fields)",
                    got=f"fields {fields}",
                ) from None
        truth: dict[str, Any] = {}
        for gt_name, extractor in spec.ground_truth.items():
            if isinstance(extractor, Template):
                values = {str(k): v for k, v in record.items()}
                values.update(dir=str(path.parent), benchmark=name)
                try:
                    truth[gt_name] = extractor.template.format(**values)
                except (KeyError, IndexError, ValueError) as exc:
                    raise error(
                        f"ground truth {gt_name!r}: template {extractor.template!r} "
                        f"cannot be filled ({type(exc).__name__}: {exc})",
                        hint="a template may use the record's top-level fields, {dir} "
                        "and {benchmark}",
                    ) from None
            else:
                try:
                    truth[gt_name] = _field(record, extractor)
                except KeyError:
                    raise error(
                        f"has no field {extractor!r} (ground truth {gt_name!r})",
                        got=f"fields {fields}",
                        hint=f"fix {key}.ground_truth.{gt_name}",
                    ) from None
        out.append(
            LoadedTask(
                task=MiningTask(id=task_id, query=query, metadata=metadata, ground_truth=truth),
                seeds=tuple(seeds),
                path=path,
                line=line,
                benchmark=name,
            )
        )
    if not out:
        raise DataError(
            f"benchmark {name!r} has no tasks", path=path, expected="at least one task record"
        )
    return out
