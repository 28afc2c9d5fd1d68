"""Rankings from a stored run file, so any system's output can be evaluated.

Three formats, all read through :mod:`evalframe.core.reader`:

* ``trec`` — ``qid Q0 docid rank score tag`` (the core's TREC reader, the
  same as ``evalframe trec-eval``'s);
* ``jsonl`` — one query per line, either Galaxy-style predictions
  ``{"id": "q1", "predictions": ["t3", "t1"]}`` (the order is the ranking;
  scores are synthetic ``n - i``) or scored results
  ``{"id": "q1", "results": [{"id": "d3", "score": 2.5}]}``;
* ``json`` — ranx / ir_measures style ``{"q1": {"d3": 2.5, "d1": 1.0}}``.

A JSONL record may also carry what a RAG system reports beside its ranking:
``confidence`` (a number in [0, 1], e.g. KnowCode's sufficiency score),
``answer`` (text), ``tokens``, ``tool_calls`` and ``latency_ms``. They are
kept on the ranking, so a stored system's output can be calibrated
(``analysis=calibration``, docs/analyses.md).

``normalise: [strip_version]`` applies the Galaxy dataset's tool-id
normalisers to every document id as it is read. The pipeline applies the
dataset's normalisers to every retriever's ids anyway; the shipped config
follows ``dataset.normalise`` too so that a list is normalised, then
de-duplicated, then cut to the depth, in Galaxy's order. (Normalising a Tool
Shed id ``.../repos/owner/repo/tool/version`` a second time changes nothing.)

A document listed twice for one query (as written, or once normalised) is
handled as ``duplicates`` says: ``error`` stops at its line; ``keep_first``
keeps the highest-ranked occurrence and counts the others in one warning, as
Galaxy's evaluator de-duplicates predictions. The shipped config follows
``metrics.policies.duplicates``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

from evalframe_formats.galaxy import NORMALISERS, normalise_tool_ids
from pydantic import Field, field_validator

from evalframe.core.errors import DataError
from evalframe.core.messages import warn
from evalframe.core.reader import read_json, read_jsonl, read_run_columns, require_file
from evalframe.core.records import At, UniqueIds
from evalframe.core.types import Ranking, Run, normalise_id
from evalframe.metrics.engine import trec_order
from evalframe.plugin.protocols import PluginConfig, PluginContext, Query
from evalframe.plugin.registry import retriever

__all__ = ["RunFileConfig", "RunFileRetriever", "read_run_file"]


class RunFileConfig(PluginConfig):
    """Which file holds the run, in what format, and how its ids are normalised."""

    path: str = Field(description="the run file")
    format: Literal["trec", "jsonl", "json"] = Field(
        "trec",
        description='trec: 6 columns; jsonl: {"id", "predictions": [...]} or {"id", "results": '
        '[{"id", "score"}]} per line; json: {qid: {doc: score}}',
    )
    normalise: list[str] = Field(
        default_factory=list,
        description="document-id normalisers applied in order (the galaxy dataset's; the "
        f"shipped config follows dataset.normalise): {', '.join(NORMALISERS)}",
    )
    duplicates: Literal["error", "keep_first"] = Field(
        "keep_first",
        description="a document listed twice for one query: 'error' stops at its line, "
        "'keep_first' keeps the highest-ranked one with a warning (the shipped config follows "
        "metrics.policies.duplicates)",
    )

    @field_validator("normalise")
    @classmethod
    def _known(cls, names: list[str]) -> list[str]:
        for name in names:
            if name not in NORMALISERS:
                raise ValueError(
                    f"unknown normaliser {name!r}; valid normalisers: {', '.join(NORMALISERS)}"
                )
        return names


#: One scored document as read, with where it was written.
Entry = tuple[str, float, At]


def _id(at: At, value: Any, what: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
        raise at.error(f"{what} must be a non-empty string or an integer", got=repr(value)[:80])
    try:
        return str(normalise_id(value))
    except ValueError as exc:  # a space or a control character inside: refused here, located
        raise at.error(
            f"{what}: {exc}", got=repr(value)[:80], hint="ids are single words; fix the file"
        ) from None


def _score(at: At, value: Any, doc: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise at.error(f"the score of {doc!r} is not a number", got=repr(value)[:80])
    if math.isnan(value):  # ±inf ranks first or last, as in a TREC run; NaN cannot rank
        raise at.error(f"the score of {doc!r} is NaN", hint="give every result a number")
    return float(value)


def _jsonl_entries(at: At, record: dict[str, Any]) -> list[Entry]:
    if "predictions" in record:
        preds = record["predictions"]
        if not isinstance(preds, list):
            raise at.error("'predictions' must be a list of ids", got=type(preds).__name__)
        ids = [_id(at, p, f"prediction {i}") for i, p in enumerate(preds, start=1)]
        return [(doc, float(len(ids) - i), at) for i, doc in enumerate(ids)]
    results = record["results"]
    if not isinstance(results, list):
        raise at.error("'results' must be a list of {id, score}", got=type(results).__name__)
    out = []
    for i, item in enumerate(results, start=1):
        if not isinstance(item, dict) or "id" not in item or "score" not in item:
            raise at.error(
                f"result {i} must be an object with 'id' and 'score'", got=repr(item)[:80]
            )
        doc = _id(at, item["id"], f"result {i}'s id")
        out.append((doc, _score(at, item["score"], doc), at))
    return out


#: What a JSONL record may carry beside its ranking, and the check each value passes.
EXTRAS: dict[str, tuple[type | tuple[type, ...], str]] = {
    "confidence": ((int, float), "a number in [0, 1]"),
    "answer": (str, "text"),
    "tokens": (int, "a whole number >= 0"),
    "tool_calls": (int, "a whole number >= 0"),
    "latency_ms": ((int, float), "a finite number of milliseconds >= 0"),
}


def _extras(at: At, record: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for name, (kind, wanted) in EXTRAS.items():
        value = record.get(name)
        if value is None:
            continue
        bad = isinstance(value, bool) or not isinstance(value, kind)
        if not bad and name == "confidence":
            bad = not 0.0 <= value <= 1.0
        elif not bad and isinstance(value, int | float) and not isinstance(value, bool):
            # a count or a duration: -5 ms went into timings.json as the p50, NaN as null
            bad = not 0 <= value < float("inf")
        if bad:
            raise at.error(f"field {name!r} must be {wanted}", got=repr(value)[:80])
        out[name] = value
    return out


def _read_jsonl(
    p: Path, extras: dict[str, dict[str, Any]] | None = None
) -> Iterator[tuple[str, list[Entry]]]:
    """A JSONL run: predictions (order = rank) or scored results, one query per line;
    each record's :data:`EXTRAS` go into ``extras`` by query id."""
    seen = UniqueIds("query id", hint="give each query one line in the run file")
    for line, raw in read_jsonl(p, what="run file", key="retriever.path"):
        at = At(p, line)
        record = at.mapping(raw, "run record")
        if "id" not in record or not ("predictions" in record or "results" in record):
            at.require(
                record,
                ["id", "predictions" if "results" not in record else "results"],
                hint='write {"id": ..., "predictions": [...]} or '
                '{"id": ..., "results": [{"id": ..., "score": ...}]}',
            )
        qid = _id(at, record["id"], "field 'id'")
        seen.add(qid, at)
        found = _extras(at, record)
        if found and extras is not None:
            extras[qid] = found
        yield qid, _jsonl_entries(at, record)


def _read_json(p: Path) -> Iterator[tuple[str, list[Entry]]]:
    """A ranx / ir_measures JSON run ``{qid: {doc: score}}``; errors name the line."""
    doc = read_json(
        p,
        what="run file",
        key="retriever.path",
        hint="a JSON run is one object {query_id: {doc_id: score}}",
        # its own check below names both lines of a repeated query or document id
        unique_keys=False,
    )
    if not isinstance(doc.data, dict):
        raise DataError(
            "a JSON run must be an object {query_id: {doc_id: score}}",
            path=p,
            line=doc.line_at(doc.start()),
            got=f"a JSON {type(doc.data).__name__}",
            hint="for a list of {id, predictions} records use format: jsonl",
        )
    seen = UniqueIds("query id", hint="a JSON object keeps only the last of a repeated key")
    members = list(doc.members(doc.start()))
    for qid, offset in members:  # all first: a repeated key's first value is already gone
        at = At(p, doc.line_at(offset))
        seen.add(_id(at, qid, "a query id") if qid else qid, at)
    for qid, offset in members:
        at = At(p, doc.line_at(offset))
        docs = doc.data[qid]
        if not isinstance(docs, dict):
            raise at.error(
                f"query {qid!r} must map to an object {{doc_id: score}}", got=type(docs).__name__
            )
        if not qid:
            raise at.error("a query id is empty")
        entries = []
        names = UniqueIds("document id", hint="list each document once per query")
        for name, doc_offset in doc.members(offset):
            where = At(p, doc.line_at(doc_offset))
            doc_id = _id(where, name, "a document id")
            names.add(doc_id, where)
            entries.append((doc_id, _score(where, docs[name], name), where))
        yield qid, entries


def _read_trec(p: Path) -> Iterator[tuple[str, list[Entry]]]:
    columns = read_run_columns(p, key="retriever.path")
    grouped: dict[str, list[Entry]] = {}
    for code, doc, score, line in zip(
        columns.qid_codes.tolist(),
        columns.docs.tolist(),
        columns.scores.tolist(),
        columns.lines.tolist(),
        strict=True,
    ):
        grouped.setdefault(columns.qid_names[code], []).append(
            (doc.decode("utf-8"), score, At(p, line))
        )
    yield from grouped.items()


_READERS = {"trec": _read_trec, "jsonl": _read_jsonl, "json": _read_json}


def read_run_file(
    path: str | Path,
    fmt: Literal["trec", "jsonl", "json"] = "trec",
    *,
    normalise: Sequence[str] = (),
    duplicates: Literal["error", "keep_first"] = "keep_first",
) -> tuple[Run, int, int]:
    """The run, and how many repeated ids were removed in how many queries.

    Ids are normalised first; a repeat (as written or once normalised) is an
    error at its line, or keeps the highest-ranked occurrence.
    """
    p = require_file(path, what="run file", key="retriever.path")
    rankings: dict[str, Ranking] = {}
    removed = affected = 0
    extras: dict[str, dict[str, Any]] = {}
    entries_of = _read_jsonl(p, extras) if fmt == "jsonl" else _READERS[fmt](p)
    for qid, entries in entries_of:
        kept: dict[str, tuple[float, At]] = {}
        for raw_doc, score, at in entries:
            doc = normalise_tool_ids(normalise, raw_doc)
            first = kept.get(doc)
            if first is None:
                kept[doc] = (score, at)
                continue
            if duplicates == "error":
                became = f" ({raw_doc!r} once normalised)" if doc != raw_doc else ""
                raise at.error(
                    f"query {qid!r} lists document {doc!r}{became} twice (first at {first[1]})",
                    hint="remove the repeat, or set metrics.policies.duplicates=keep_first to "
                    "keep the highest-ranked one",
                )
            kept[doc] = (max(first[0], score), first[1])
        gone = len(entries) - len(kept)
        if gone:
            removed, affected = removed + gone, affected + 1
        rankings[qid] = Ranking.from_pairs(
            qid, ((d, s) for d, (s, _) in kept.items()), **extras.get(qid, {})
        )
    return Run(rankings=rankings, metadata={"source": str(p)}), removed, affected


@retriever("run_file", config=RunFileConfig)
class RunFileRetriever:
    """Reads a run file (TREC, JSONL predictions/results, or JSON); absent queries are missing."""

    #: Reading the file is the retrieval: nothing to save by caching it.
    cacheable = False
    #: Rankings are looked up by query id: an empty query text is no problem.
    reads_query_text = False

    def __init__(self, config: RunFileConfig, context: PluginContext) -> None:
        self.config = config
        self.run, removed, queries = read_run_file(
            config.path, config.format, normalise=config.normalise, duplicates=config.duplicates
        )
        if not self.run.rankings:  # every query will be missing: said, not only counted
            warn(
                f"run file {config.path} holds no rankings: every golden query is missing "
                "from the run (is it the right file, and retriever.format the right format?)"
            )
        #: Document ids dropped as repeats (after normalising), for reports and tests.
        self.duplicates_removed = removed
        if removed:
            warn(
                f"run file {config.path}: {removed} repeated document id(s) "
                f"removed in {queries} quer{'y' if queries == 1 else 'ies'} of the file "
                "(the first, highest-ranked occurrence is kept)"
            )

    @property
    def held_query_ids(self) -> list[str]:
        """Every query the file answers: the pipeline reports those no golden query asked."""
        return list(self.run.rankings)

    def retrieve(self, query: Query, k: int) -> Ranking | None:
        ranking = self.run.rankings.get(query.id)
        if ranking is None:
            return None  # the pipeline applies the missing-query policy
        top = trec_order(ranking.pairs())[:k]
        return Ranking.from_pairs(query.id, top, **ranking.model_dump(include=set(EXTRAS)))
