"""A separate queries file, joined to any golden set by query id.

Some benchmarks keep the judgments and the query texts apart: Galaxy's gold
file holds only ``{"id", "tools"}`` and its queries (with their tutorial
metadata) live in another file. The join is done here, once, after whichever
dataset plugin read the gold, so every format gets it and no loader repeats
it. The config is ``queries:`` (``queries.path`` and the field names), and
``golden validate --queries FILE`` does the same join.

Rules, each chosen so that nothing is silently lost or silently wrong:

- a gold query with no text and no record in the queries file is an error
  (listing the ids): a retriever would be asked an empty question;
- a gold query that has text keeps it unless the queries file gives another,
  which then wins (the file was named on purpose) with one warning and a count;
- every other field of a queries record becomes query metadata (slices,
  prompt-template fields); the gold record's own metadata wins a clash, again
  with one warning;
- queries-file records that no gold query has are not used; how many is kept
  in the golden set's provenance (a queries file is often a superset).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evalframe.core.errors import DataError
from evalframe.core.messages import shown, warn
from evalframe.core.reader import read_json, read_jsonl, read_lines, require_file
from evalframe.core.records import At, UniqueIds
from evalframe.core.types import GoldenQuery, GoldenSet

__all__ = ["QueriesConfig", "QueryRecord", "join_queries", "read_queries"]

KEY = "queries.path"


class QueriesConfig(BaseModel):
    """``queries:`` a file of query texts joined to the golden set by id (for gold without text)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str | None = Field(
        None,
        description="queries file: JSONL or JSON records ({id, query, ...}), a JSON object "
        "{id: text}, or TSV (id<TAB>text); null: the golden set's own texts",
    )
    id_field: str = Field("id", description="field of a record holding the query id")
    text_field: str = Field("query", description="field of a record holding the query text")


@dataclass(frozen=True)
class QueryRecord:
    """One record of a queries file: its text, its other fields, and where it was written."""

    text: str
    at: At
    metadata: dict[str, Any] = field(default_factory=dict)


def _from_record(cfg: QueriesConfig, record: Any, at: At) -> tuple[str, QueryRecord]:
    record = at.mapping(record, "queries record")
    if cfg.id_field not in record or cfg.text_field not in record:
        at.require(
            record,
            [cfg.id_field, cfg.text_field],
            hint=f"name the fields with queries.id_field and queries.text_field "
            f"(now {cfg.id_field!r} and {cfg.text_field!r})",
        )
    qid = at.ident(record[cfg.id_field], cfg.id_field)
    text = at.text(record[cfg.text_field], cfg.text_field)
    metadata = {k: v for k, v in record.items() if k not in (cfg.id_field, cfg.text_field)}
    return qid, QueryRecord(text, at, metadata)


def _records(cfg: QueriesConfig, path: Path) -> Iterator[tuple[str, QueryRecord]]:
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        for line, raw in read_jsonl(path, what="queries file", key=KEY):
            yield _from_record(cfg, raw, At(path, line))
    elif suffix == ".json":
        doc = read_json(path, what="queries file", key=KEY)
        if isinstance(doc.data, list):
            for offset, raw in zip(doc.items(doc.start()), doc.data, strict=True):
                yield _from_record(cfg, raw, At(path, doc.line_at(offset)))
        elif isinstance(doc.data, dict):
            for qid, offset in doc.members(doc.start()):
                at = At(path, doc.line_at(offset))
                value = doc.data[qid]
                if isinstance(value, dict):
                    yield _from_record(cfg, {cfg.id_field: qid, **value}, at)
                else:
                    yield at.ident(qid, "query id"), QueryRecord(at.text(value, qid), at)
        else:
            raise DataError(
                "a JSON queries file must be a list of records or an object {id: text}",
                path=path,
                key=KEY,
                got=f"a JSON {type(doc.data).__name__}",
            )
    else:  # TSV: id<TAB>text, the TREC/MS MARCO topics layout
        for line, raw in read_lines(path, what="queries file", key=KEY):
            if not raw.strip() or raw.startswith("#"):
                continue
            at = At(path, line)
            qid, tab, text = raw.rstrip("\r\n").partition("\t")
            if not tab:
                raise at.error(
                    "a TSV queries line must be id<TAB>text",
                    got=repr(raw[:80]),
                    hint="use a .jsonl or .json file for records with more fields",
                )
            yield at.ident(qid.strip(), "query id"), QueryRecord(at.text(text, "text"), at)


def read_queries(cfg: QueriesConfig) -> dict[str, QueryRecord]:
    """Every record of the queries file by id; a repeated id is an error naming both lines."""
    if cfg.path is None:
        return {}
    path = require_file(Path(cfg.path).expanduser(), what="queries file", key=KEY)
    seen = UniqueIds("query id", hint="give each query one record in the queries file")
    out: dict[str, QueryRecord] = {}
    for qid, record in _records(cfg, path):
        seen.add(qid, record.at)
        out[qid] = record
    if not out:
        raise DataError("the queries file has no queries", path=path, key=KEY)
    return out


def join_queries(golden: GoldenSet, cfg: QueriesConfig) -> GoldenSet:
    """``golden`` with texts and metadata from the queries file (itself when none is set)."""
    if cfg.path is None:
        return golden
    records = read_queries(cfg)
    lacking = [q.id for q in golden if q.id not in records and not q.text.strip()]
    if lacking:
        raise DataError(
            f"{len(lacking)} of {len(golden)} golden queries have no text and no record in the "
            f"queries file: {shown(lacking)}",
            path=cfg.path,
            key=KEY,
            expected=f"a record with {cfg.id_field!r} equal to each golden query's id",
            hint="add them to the queries file, or point queries.path at the file that holds "
            "them (ids are compared as strings: 7 and '007' differ)",
        )
    replaced: list[str] = []
    clashes: list[str] = []
    queries: list[GoldenQuery] = []
    for q in golden:
        record = records.get(q.id)
        if record is None:
            queries.append(q)
            continue
        if q.text.strip() and q.text != record.text:
            replaced.append(q.id)
        metadata = dict(record.metadata)
        for name, value in q.metadata.items():
            if name in metadata and metadata[name] != value:
                clashes.append(f"{q.id}.{name}")
            metadata[name] = value
        queries.append(q.model_copy(update={"text": record.text, "metadata": metadata}))
    if replaced:
        own = (
            "query has a text of its own"
            if len(replaced) == 1
            else "queries have texts of their own"
        )
        warn(
            f"{len(replaced)} golden {own} that the queries file {cfg.path} replaces: "
            f"{shown(replaced)}"
        )
    if clashes:
        warn(
            f"{len(clashes)} metadata field(s) differ between the golden set and the queries "
            f"file {cfg.path}; the golden set's values are kept: {shown(clashes)}"
        )
    used = sum(1 for q in golden if q.id in records)
    provenance = {
        **golden.provenance,
        "queries": {
            "path": str(cfg.path),
            "joined": used,
            "unused": len(records) - used,
        },
    }
    return GoldenSet.build(golden.name, queries, provenance, golden.projections)
