"""Any golden set in JSONL, JSON or CSV, read through a field mapping in the config.

Nothing about the field names is assumed beyond the defaults: say which field
holds the query id (``id_field``), the text (``text_field``) and the judged
documents (``judgments_field``), and which fields are slices (``slice_fields``).
The judgments field may hold

* a list of ids (each relevant, label 1): ``["a.py::f", "b.py::g"]``;
* a mapping of id to integer label (graded; labels <= 0 are judged non-relevant):
  ``{"a.py::f": 2, "b.py::g": 0}``;
* in CSV only, a string of ids separated by ``list_separator`` (``a.py::f;b.py::g``),
  or a cell holding a JSON list or mapping. An empty cell is a negative example.

Other fields are dropped unless ``keep_other_fields`` is set. Every error names
the file and line (for JSON, the line where the record starts, and its index in
the list) and, for a missing or mistyped field, the config key to set.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from evalframe.core.errors import DataError
from evalframe.core.reader import read_json, read_jsonl, read_text, require_file
from evalframe.core.records import At, UniqueIds, field_names, is_id, warn_ids_not_in_corpus
from evalframe.core.types import GoldenQuery, GoldenSet, normalise_id
from evalframe.plugin.protocols import PluginConfig, PluginContext
from evalframe.plugin.registry import dataset

__all__ = ["GenericDataset", "GenericDatasetConfig"]

SUFFIXES = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".csv": "csv", ".tsv": "csv"}


class GenericDatasetConfig(PluginConfig):
    """Where the file is, its format, and which fields hold what."""

    path: str = Field(description="the golden-set file (.jsonl, .json or .csv)")
    set_name: str | None = Field(None, description="golden-set name (default: the file name)")
    format: Literal["auto", "jsonl", "json", "csv"] = Field(
        "auto",
        description="file format; 'auto' picks it from the suffix "
        "(.jsonl/.ndjson, .json, .csv/.tsv)",
    )
    id_field: str = Field("id", description="field holding the query id")
    text_field: str = Field("query", description="field holding the query text")
    judgments_field: str = Field(
        "relevant",
        description="field holding the judged doc ids: a list of ids, an {id: label} mapping, "
        "or (CSV) ids separated by list_separator",
    )
    slice_fields: list[str] = Field(
        default_factory=list,
        description="fields kept as query metadata, for per-slice tables (each record needs them)",
    )
    keep_other_fields: bool = Field(
        False, description="keep every other field as metadata too (default: drop them)"
    )
    list_separator: str = Field(
        ";", min_length=1, description="separator of the ids in a CSV judgments cell"
    )
    csv_delimiter: str | None = Field(
        None,
        min_length=1,
        max_length=1,
        description="CSV column delimiter (default: ',' or, for a .tsv file, a tab)",
    )
    records_key: str | None = Field(
        None,
        description="for a JSON object rather than a list: the key holding the list of records",
    )


# -- readers: (line, location, record) ----------------------------------------

#: (line, location, record); the location is the JSON list index ("[3]"), else "".
Rows = Iterator[tuple[int | None, str, Any]]


def _jsonl_rows(path: Path) -> Rows:
    for lineno, record in read_jsonl(path, what="golden set", key="dataset.path"):
        yield lineno, "", record


def _json_rows(path: Path, records_key: str | None) -> Rows:
    doc = read_json(
        path,
        what="golden set",
        key="dataset.path",
        hint="a JSON golden set is one list of objects; for one object per line use .jsonl",
    )
    data, start, prefix = doc.data, doc.start(), ""
    if records_key is not None:
        if not isinstance(data, dict) or records_key not in data:
            got = f"keys {field_names(data)}" if isinstance(data, dict) else type(data).__name__
            raise DataError(
                f"the file has no top-level {records_key!r} key (dataset.records_key)",
                path=path,
                line=doc.line_at(start),
                got=got,
                hint="set dataset.records_key to the key holding the records, or null for a list",
            )
        data = data[records_key]
        offset = doc.member(start, records_key)
        start = offset if offset is not None else start
        prefix = records_key
    if not isinstance(data, list):
        hint = "the file must be a JSON list of objects"
        if isinstance(data, dict) and records_key is None:
            lists = [k for k, v in data.items() if isinstance(v, list)]
            hint = "set dataset.records_key to the key holding the list of records" + (
                f" (lists here: {', '.join(repr(k) for k in lists)})" if lists else ""
            )
        raise DataError(
            f"{prefix or 'the file'} is not a list of records",
            path=path,
            line=doc.line_at(start),
            got=type(data).__name__,
            hint=hint,
        )
    for i, (offset, record) in enumerate(zip(doc.items(start), data, strict=True)):
        yield doc.line_at(offset), f"{prefix}[{i}]", record


def _csv_rows(path: Path, delimiter: str, required: dict[str, str]) -> Rows:
    """Rows of a CSV file; ``required`` maps each column that must exist to its config key."""
    text = read_text(path, what="golden set", key="dataset.path")
    with io.StringIO(text, newline="") as handle:
        reader = csv.reader(handle, delimiter=delimiter, strict=True)
        try:
            header = next(reader, None)
            if header is None:
                raise DataError("the CSV file is empty", path=path, expected="a header row")
            duplicated = sorted({c for c in header if header.count(c) > 1})
            if duplicated:
                raise DataError(
                    f"the CSV header names column(s) {', '.join(map(repr, duplicated))} twice",
                    path=path,
                    line=reader.line_num,
                    hint="give every column its own name",
                )
            for column, key in required.items():
                if column not in header:
                    raise DataError(
                        f"the CSV header has no {column!r} column",
                        path=path,
                        line=reader.line_num,
                        got=f"columns {', '.join(map(repr, header))}",
                        hint=f"set dataset.{key} to the column that holds it"
                        if key != "slice_fields"
                        else f"add the column, or remove {column!r} from dataset.slice_fields",
                    )
            previous = reader.line_num
            for row in reader:
                start, previous = previous + 1, reader.line_num
                if not any(cell.strip() for cell in row):
                    continue  # blank line
                if len(row) != len(header):
                    raise DataError(
                        f"the row has {len(row)} cells but the header has {len(header)} columns",
                        path=path,
                        line=start,
                        expected=f"{len(header)} cells separated by {delimiter!r}",
                        got=repr(delimiter.join(row)[:80]),
                        hint="quote cells that contain the delimiter; "
                        "set dataset.csv_delimiter if the file uses another one",
                    )
                yield start, "", dict(zip(header, row, strict=True))
        except csv.Error as exc:
            raise DataError(
                f"the file is not valid CSV ({exc})",
                path=path,
                line=reader.line_num,
                hint="check the quoting on this line",
            ) from None


# -- the plugin -----------------------------------------------------------------


@dataset("generic", config=GenericDatasetConfig)
@dataclass(eq=False)
class GenericDataset:
    """Any JSONL, JSON or CSV golden set, read through a field mapping in the config."""

    config: GenericDatasetConfig
    context: PluginContext

    def _format(self, path: Path) -> str:
        if self.config.format != "auto":
            return self.config.format
        fmt = SUFFIXES.get(path.suffix.lower())
        if fmt is None:
            raise DataError(
                f"cannot tell the format of {path.name!r} from its suffix",
                path=path,
                expected=f"one of {', '.join(SUFFIXES)}",
                got=repr(path.suffix or "(no suffix)"),
                hint="set dataset.format to jsonl, json or csv",
            )
        return fmt

    def load(self) -> GoldenSet:
        cfg = self.config
        path = require_file(cfg.path, what="golden set", key="dataset.path")
        fmt = self._format(path)
        if fmt == "jsonl":
            rows = _jsonl_rows(path)
        elif fmt == "json":
            rows = _json_rows(path, cfg.records_key)
        else:
            delimiter = cfg.csv_delimiter or ("\t" if path.suffix.lower() == ".tsv" else ",")
            required = {
                cfg.id_field: "id_field",
                cfg.text_field: "text_field",
                cfg.judgments_field: "judgments_field",
                **dict.fromkeys(cfg.slice_fields, "slice_fields"),
            }
            rows = _csv_rows(path, delimiter, required)
        seen = UniqueIds("query id", hint="give every query its own id")
        queries = [
            self._query(record, At(path, line), where, fmt, seen) for line, where, record in rows
        ]
        if not queries:
            raise DataError("the golden set has no queries", path=path, expected="records")
        warn_ids_not_in_corpus(queries, self.context.corpus, "relevant judged", relevant_only=True)
        return GoldenSet.build(
            cfg.set_name or path.stem,
            queries,
            provenance={
                "format": f"generic/{fmt}",
                "path": str(path),
                "fields": {
                    "id": cfg.id_field,
                    "text": cfg.text_field,
                    "judgments": cfg.judgments_field,
                },
            },
        )

    def _query(self, record: Any, at: At, where: str, fmt: str, seen: UniqueIds) -> GoldenQuery:
        cfg = self.config
        rec = f"record {where}" if where else "record"
        if not isinstance(record, dict):
            raise at.error(
                f"{rec} must be a JSON object",
                got=type(record).__name__,
            )
        for needed, key, role in (
            (cfg.id_field, "id_field", "query id"),
            (cfg.text_field, "text_field", "query text"),
            (cfg.judgments_field, "judgments_field", "judged doc ids"),
        ):
            if needed not in record:
                raise at.error(
                    f"{rec} has no {needed!r} field (the {role})",
                    got=f"fields {field_names(record)}",
                    hint=f"set dataset.{key} to the field that holds the {role}",
                )
        raw_id = record[cfg.id_field]
        if not is_id(raw_id):
            raise at.error(
                f"{rec}: field {cfg.id_field!r} (the query id) must be a non-empty "
                "string or an integer",
                got=repr(raw_id),
                hint="fill it in, or set dataset.id_field to the field that holds the query id",
            )
        qid = str(raw_id)
        seen.add(qid, at, place=f"{at} ({where})" if fmt == "json" else None)
        text = record[cfg.text_field]
        if not isinstance(text, str) or not text.strip():
            raise at.error(
                f"{rec}: field {cfg.text_field!r} (the query text) must be non-empty text",
                got=repr(text),
                hint="fill it in, or set dataset.text_field to the field that holds the text",
            )
        judgments = self._judgments(record[cfg.judgments_field], at, where, fmt)
        metadata: dict[str, Any] = {}
        for name in cfg.slice_fields:
            if name not in record:
                raise at.error(
                    f"{rec} has no {name!r} field, listed in dataset.slice_fields",
                    got=f"fields {field_names(record)}",
                    hint=f"add {name!r} to every record, or remove it from dataset.slice_fields",
                )
            value = record[name]
            if value is not None and not isinstance(value, (str, int, float, bool)):
                raise at.error(
                    f"{rec}: slice field {name!r} must be a single value",
                    expected="a string, number, boolean or null",
                    got=repr(value),
                    hint=f"remove {name!r} from dataset.slice_fields "
                    "(set dataset.keep_other_fields=true to keep it as plain metadata)",
                )
            metadata[name] = value
        if cfg.keep_other_fields:
            used = {cfg.id_field, cfg.text_field, cfg.judgments_field}
            metadata.update({k: v for k, v in record.items() if k not in used})
        return GoldenQuery(id=qid, text=text, judgments=judgments, metadata=metadata)

    def _judgments(self, value: Any, at: At, where: str, fmt: str) -> dict[str, int]:
        cfg = self.config
        rec = f"record {where}" if where else "record"
        field = cfg.judgments_field
        if fmt == "csv" and isinstance(value, str):
            cell = value.strip()
            if cell.startswith(("[", "{")):
                try:
                    value = json.loads(cell)
                except json.JSONDecodeError as exc:
                    raise at.error(
                        f"{rec}: the {field!r} cell looks like JSON but is not valid ({exc.msg})",
                        got=repr(cell[:80]),
                        hint=f"write the ids separated by {cfg.list_separator!r}, "
                        "or valid JSON with doubled quotes inside the quoted cell",
                    ) from None
            else:
                value = [p.strip() for p in cell.split(cfg.list_separator) if p.strip()]
        if isinstance(value, list):
            out: dict[str, int] = {}
            for i, item in enumerate(value):
                if not is_id(item):
                    raise at.error(
                        f"{rec}: {field}[{i}] is not a doc id",
                        expected="a non-empty string or an integer",
                        got=repr(item),
                        hint=f"set dataset.judgments_field if the doc ids are not in {field!r}",
                    )
                doc = str(normalise_id(item))  # as kept: "d1 " is "d1"
                if doc in out:
                    raise at.error(
                        f"{rec}: field {field!r} lists doc {doc!r} twice",
                        got=repr(value),
                        hint="list each judged doc once",
                    )
                out[doc] = 1
            return out
        if isinstance(value, dict):
            return at.graded(value, field, prefix=f"{rec}: ")
        hint = (
            "write a list of ids or an {id: label} mapping; "
            "set dataset.judgments_field if the ids are in another field"
        )
        if isinstance(value, str):
            ids = [p.strip() for p in re.split(r"[,;]", value) if p.strip()]
            hint = (
                "a string of ids is read from CSV files only: write a list, e.g. "
                f'"{field}": {json.dumps(ids)}'
            )
        elif value is None:
            hint = f'write "{field}": [] for a query that nothing answers'
        raise at.error(
            f"{rec}: field {field!r} (the judged doc ids) must be a list of ids "
            "or an {id: label} mapping",
            got=repr(value),
            hint=hint,
        )
