"""The Galaxy tool-recommendation gold file: JSON Lines of query ids and gold tool ids.

One record per line (the benchmark items file, e.g. ``data/benchmark/v1_items.jsonl``)::

    {"id": "example-q01", "tools": ["toolshed.g2.bx.psu.edu/repos/iuc/fastqc/fastqc/0.73+galaxy0"]}

``id`` and ``tools`` are required. Galaxy keeps the query texts in a separate
file; give it as ``queries.path`` (the core joins it by id, for every format).
A text inside the gold record is read from ``query`` (``text_field``) and
every other field becomes metadata. Any gold tool is relevant (label 1).
``"tools": []`` is a query no tool answers: it is kept as a negative example,
which Galaxy's evaluator scores 0 (``metrics.policies.no_relevant=zero``, as
the ``galaxy`` experiment sets it).

Tool ids can be normalised before scoring (Galaxy's ``--normalize-tools``):
``normalise: [strip_version]`` drops the version segment of Tool Shed ids.
The loader's :meth:`GalaxyDataset.id_normaliser` hands the same normalisers to
the pipeline, which applies them to every retrieved id, whatever the
retriever, so gold and predictions are normalised by one setting.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError

from evalframe.core.errors import ConfigError, DataError
from evalframe.core.messages import warn
from evalframe.core.reader import read_jsonl
from evalframe.core.records import At, UniqueIds, field_names, is_id, warn_ids_not_in_corpus
from evalframe.core.types import GoldenQuery, GoldenSet, normalise_id
from evalframe.plugin.protocols import PluginConfig, PluginContext
from evalframe.plugin.registry import dataset

__all__ = [
    "NORMALISERS",
    "GalaxyDataset",
    "GalaxyDatasetConfig",
    "describe_normalisers",
    "lowercase",
    "normalise_tool_id",
    "normalise_tool_ids",
    "strip_version",
]

TOOLSHED_PREFIX = "toolshed.g2.bx.psu.edu/"


def strip_version(tool_id: str) -> str:
    """Drop the version segment of a Tool Shed id (Galaxy's --normalize-tools).

    ``toolshed.g2.bx.psu.edu/repos/<owner>/<repo>/<tool>/<version>`` becomes
    ``toolshed.g2.bx.psu.edu/repos/<owner>/<repo>/<tool>``. Exactly Galaxy's
    rule: only ids that start with ``toolshed.g2.bx.psu.edu/``, whose second
    segment is ``repos`` and that have at least six segments lose their last
    segment; an id already without a version (five segments) and every
    non-Tool-Shed id (``upload1``, ``Cut1``) are left alone.
    """
    if tool_id.startswith(TOOLSHED_PREFIX):
        parts = tool_id.split("/")
        if len(parts) >= 6 and parts[1] == "repos":
            return "/".join(parts[:-1])
    return tool_id


def lowercase(tool_id: str) -> str:
    """Lower-case the whole id (Cut1 and cut1 become the same tool)."""
    return tool_id.lower()


#: Named tool-id normalisers, applied in the order the config lists them.
NORMALISERS: dict[str, Callable[[str], str]] = {
    "strip_version": strip_version,
    "lowercase": lowercase,
}


def describe_normalisers() -> dict[str, str]:
    """Each normaliser's name and the first line of its docstring (for listings)."""
    return {
        name: (fn.__doc__ or "").strip().splitlines()[0].rstrip(".")
        for name, fn in NORMALISERS.items()
    }


def _unknown(name: str) -> str:
    return f"unknown normaliser {name!r}; valid normalisers: {', '.join(NORMALISERS)}"


def normalise_tool_id(name: str, tool_id: str) -> str:
    """Apply the normaliser called ``name`` to one id.

    Use this (or :func:`normalise_tool_ids`) on predicted ids too: gold and run must
    be normalised the same way. An unknown name is a :class:`ConfigError`
    listing the valid ones.
    """
    fn = NORMALISERS.get(name)
    if fn is None:
        raise ConfigError(_unknown(name), hint="pick normalisers from the list above")
    return fn(tool_id)


def normalise_tool_ids(names: Sequence[str], tool_id: str) -> str:
    """Apply several normalisers to one id, in order."""
    for name in names:
        tool_id = normalise_tool_id(name, tool_id)
    return tool_id


_TEXT_FIELD = (
    "field holding the query text, if the gold has one; Galaxy's gold has none: give its "
    "queries file as queries.path"
)


class GalaxyDatasetConfig(PluginConfig):
    """Where the gold file is, which field holds the query text, how ids are normalised."""

    path: str = Field(description='gold JSONL file, one {"id", "tools", ...} per line')
    set_name: str | None = Field(None, description="golden-set name (default: the file name)")
    text_field: str = Field("query", description=_TEXT_FIELD)
    normalise: list[str] = Field(
        default_factory=list,
        description="tool-id normalisers applied in order to gold ids and to every retrieved id "
        "(Galaxy's --normalize-tools is [strip_version]). Available: "
        + "; ".join(f"{n}: {d}" for n, d in describe_normalisers().items()),
    )

    @field_validator("normalise")
    @classmethod
    def _known_normalisers(cls, names: list[str]) -> list[str]:
        for name in names:
            if name not in NORMALISERS:
                raise PydanticCustomError("unknown_normaliser", _unknown(name))
        return names


REQUIRED = ("id", "tools")


@dataset("galaxy", config=GalaxyDatasetConfig)
@dataclass(eq=False)
class GalaxyDataset:
    """Galaxy tool-recommendation gold JSONL ({id, tools}) with tool-id normalisers."""

    config: GalaxyDatasetConfig
    context: PluginContext

    def __post_init__(self) -> None:
        for name in self.config.normalise:  # a config built with model_construct skips validation
            if name not in NORMALISERS:
                raise ConfigError(_unknown(name), key="dataset.normalise")

    def id_normaliser(self) -> Callable[[str], str] | None:
        """The normalisers as one function, for the pipeline to apply to retrieved ids."""
        names = tuple(self.config.normalise)
        if not names:
            return None
        return lambda tool_id: normalise_tool_ids(names, tool_id)

    def load(self) -> GoldenSet:
        cfg = self.config
        path = Path(cfg.path).expanduser()
        seen = UniqueIds("query id", hint="give every query its own id")
        queries: list[GoldenQuery] = []
        duplicates: list[tuple[int, str, int]] = []  # (line, query id, tools removed)
        for lineno, record in read_jsonl(path, what="Galaxy gold file", key="dataset.path"):
            query, removed = self._query(record, At(path, lineno), seen)
            if removed:
                duplicates.append((lineno, query.id, removed))
            queries.append(query)
        if not queries:
            raise DataError("the gold file has no queries", path=path, expected="one per line")
        if duplicates:
            total = sum(n for _, _, n in duplicates)
            shown = ", ".join(f"{path}:{line} ({qid!r}: {n})" for line, qid, n in duplicates[:5])
            more = " …" if len(duplicates) > 5 else ""
            after = f" after normalisation ({', '.join(cfg.normalise)})" if cfg.normalise else ""
            warn(
                f"{total} duplicate gold tool id(s){after} removed in {len(duplicates)} "
                f"quer{'y' if len(duplicates) == 1 else 'ies'}, keeping the first of each: "
                f"{shown}{more}"
            )
        warn_ids_not_in_corpus(
            queries,
            self.context.corpus,
            "relevant gold tool",
            relevant_only=True,
            normalise=self.id_normaliser(),  # the catalogue's versions stripped as the gold's
        )
        return GoldenSet.build(
            cfg.set_name or path.stem,
            queries,
            provenance={
                "format": "galaxy",
                "path": str(path),
                "normalise": list(cfg.normalise),
            },
        )

    def _query(self, record: Any, at: At, seen: UniqueIds) -> tuple[GoldenQuery, int]:
        cfg = self.config
        if not isinstance(record, dict):
            raise at.error(
                "a gold line must be a JSON object",
                got=type(record).__name__,
            )
        missing = [f for f in REQUIRED if f not in record]
        if missing:
            raise at.error(
                f"gold record has no {' or '.join(repr(m) for m in missing)} field",
                expected='fields "id" and "tools"',
                got=f"fields {field_names(record)}",
                hint='a query that no tool answers still needs "tools": []',
            )
        raw_id = record["id"]
        if not is_id(raw_id):
            raise at.error(
                "field 'id' must be a non-empty string or an integer",
                got=repr(raw_id),
            )
        qid = str(raw_id)
        seen.add(qid, at)
        tools = record["tools"]
        if not isinstance(tools, list):
            raise at.error(
                "field 'tools' must be a list of tool ids",
                got=repr(tools),
                hint='write "tools": [] for a query that no tool answers',
            )
        judgments: dict[str, int] = {}
        removed = 0
        for i, tool in enumerate(tools):
            if not isinstance(tool, str) or not tool.strip():
                raise at.error(
                    f"tools[{i}] of query {qid!r} is not a tool id",
                    expected="a non-empty string",
                    got=repr(tool),
                )
            try:
                tool_id = normalise_id(normalise_tool_ids(cfg.normalise, tool))
            except ValueError as exc:  # a space inside: located here, not by the model
                raise at.error(
                    f"tools[{i}] of query {qid!r}: {exc}",
                    got=repr(tool),
                    hint="tool ids are single words; fix the gold file",
                ) from None
            if tool_id in judgments:
                removed += 1
                continue
            judgments[tool_id] = 1
        text = record.get(cfg.text_field, "")
        if not isinstance(text, str):
            raise at.error(
                f"field {cfg.text_field!r} (the query text) must be a string",
                got=repr(text),
                hint="set dataset.text_field to the field that holds the query text",
            )
        metadata = {k: v for k, v in record.items() if k not in (*REQUIRED, cfg.text_field)}
        return GoldenQuery(id=qid, text=text, judgments=judgments, metadata=metadata), removed
