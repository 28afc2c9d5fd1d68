"""Rankings from a stored run file, so any system's output can be evaluated.

Three formats:

* ``trec`` — ``qid Q0 docid rank score tag``, 6 columns per line;
* ``jsonl`` — one query per line, either Galaxy-style predictions
  ``{"id": "q1", "predictions": ["t3", "t1"]}`` (the order is the ranking;
  scores are synthetic ``n - i``; a repeated id is kept once, at its first
  place, and counted in a warning, as Galaxy's evaluator de-duplicates) or
  scored results ``{"id": "q1", "results": [{"id": "d3", "score": 2.5}]}``;
* ``json`` — ranx / ir_measures style ``{"q1": {"d3": 2.5, "d1": 1.0}}``.

``normalise: [strip_version]`` applies the Galaxy dataset's id normalisers to
every document id, so predictions match a gold set normalised the same way.
Ids that become equal are merged (the higher score, i.e. the earlier
prediction, is kept) and counted in the same warning.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator

from evalframe.core.errors import DataError
from evalframe.core.io import read_jsonl, read_trec_run, require_file
from evalframe.core.records import At, UniqueIds
from evalframe.core.types import Ranking, Run
from evalframe.metrics.engine import trec_order
from evalframe.plugin.protocols import PluginConfig, PluginContext, Query
from evalframe.plugin.registry import retriever

try:  # the same normalisers as the Galaxy gold loader, when that plugin is installed
    from evalframe_formats.galaxy import NORMALISERS
except ImportError:  # pragma: no cover - exercised only without evalframe-formats

    def _strip_version(tool_id: str) -> str:
        # Local copy of evalframe_formats.galaxy.strip_version (Galaxy's
        # --normalize-tools): Tool Shed ids with a version segment lose it.
        prefix = "toolshed.g2.bx.psu.edu/"
        if tool_id.startswith(prefix):
            parts = tool_id.split("/")
            if len(parts) >= 6 and parts[1] == "repos":
                return "/".join(parts[:-1])
        return tool_id

    NORMALISERS: dict[str, Callable[[str], str]] = {  # type: ignore[no-redef]
        "strip_version": _strip_version,
        "lowercase": str.lower,
    }


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
        description="document-id normalisers applied in order (as the galaxy dataset's "
        f"normalise): {', '.join(NORMALISERS)}",
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


def _warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


def _id(at: At, value: Any, what: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
        raise at.error(f"{what} must be a non-empty string or an integer", got=repr(value)[:80])
    return str(value)


def _score(at: At, value: Any, doc: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise at.error(f"the score of {doc!r} is not a number", got=repr(value)[:80])
    return float(value)


def _jsonl_pairs(at: At, record: dict[str, Any]) -> list[tuple[str, float]]:
    if "predictions" in record:
        preds = record["predictions"]
        if not isinstance(preds, list):
            raise at.error("'predictions' must be a list of ids", got=type(preds).__name__)
        ids = [_id(at, p, f"prediction {i}") for i, p in enumerate(preds, start=1)]
        return [(doc, float(len(ids) - i)) for i, doc in enumerate(ids)]
    results = record["results"]
    if not isinstance(results, list):
        raise at.error("'results' must be a list of {id, score}", got=type(results).__name__)
    pairs = []
    for i, item in enumerate(results, start=1):
        if not isinstance(item, dict) or "id" not in item or "score" not in item:
            raise at.error(
                f"result {i} must be an object with 'id' and 'score'", got=repr(item)[:80]
            )
        doc = _id(at, item["id"], f"result {i}'s id")
        pairs.append((doc, _score(at, item["score"], doc)))
    return pairs


def read_jsonl_run(path: str | Path) -> Run:
    """A JSONL run: predictions (order = rank) or scored results, one query per line."""
    p = require_file(path, what="run file", key="retriever.path")
    seen = UniqueIds("query id", hint="give each query one line in the run file")
    pairs: dict[str, list[tuple[str, float]]] = {}
    for line, raw in read_jsonl(p, what="run file"):
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
        pairs[qid] = _jsonl_pairs(at, record)
    return Run(
        rankings={q: Ranking.from_pairs(q, items) for q, items in pairs.items()},
        metadata={"source": str(p)},
    )


def _members(text: str, start: int) -> list[tuple[str, int]]:
    """``(key, value_offset)`` of each member of the JSON object starting at ``start``."""
    decoder = json.JSONDecoder()
    out: list[tuple[str, int]] = []
    i = _ws(text, start + 1)
    while i < len(text) and text[i] != "}":
        key, end = decoder.raw_decode(text, i)
        i = _ws(text, _ws(text, end) + 1)  # skip the colon
        out.append((key, i))
        _, end = decoder.raw_decode(text, i)
        i = _ws(text, end)
        if i < len(text) and text[i] == ",":
            i = _ws(text, i + 1)
    return out


def _ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def read_json_run(path: str | Path) -> Run:
    """A ranx / ir_measures JSON run ``{qid: {doc: score}}``; errors name the line."""
    p = require_file(path, what="run file", key="retriever.path")
    text = p.read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(
            f"not valid JSON ({exc.msg} at column {exc.colno})", path=p, line=exc.lineno
        ) from None
    if not isinstance(data, dict):
        raise DataError(
            "a JSON run must be an object {query_id: {doc_id: score}}",
            path=p,
            line=1,
            got=f"a JSON {type(data).__name__}",
            hint="for a list of {id, predictions} records use format: jsonl",
        )

    def line_of(offset: int) -> int:
        return text.count("\n", 0, offset) + 1

    rankings: dict[str, Ranking] = {}
    for qid, offset in _members(text, _ws(text, 0)):
        at = At(p, line_of(offset))
        docs = data[qid]
        if not isinstance(docs, dict):
            raise at.error(
                f"query {qid!r} must map to an object {{doc_id: score}}",
                got=type(docs).__name__,
            )
        pairs = []
        for doc, doc_offset in _members(text, offset):
            pairs.append((doc, _score(At(p, line_of(doc_offset)), docs[doc], doc)))
        if not qid:
            raise at.error("a query id is empty")
        rankings[qid] = Ranking.from_pairs(qid, pairs)
    return Run(rankings=rankings, metadata={"source": str(p)})


def normalise_run(run: Run, names: Sequence[str]) -> tuple[Run, int, int]:
    """Normalise every doc id and merge repeats (first/highest kept): (run, removed, queries)."""
    removed = affected = 0
    rankings = {}
    for qid, ranking in run.rankings.items():
        kept: dict[str, float] = {}
        for doc, score in ranking.pairs():
            for name in names:
                doc = NORMALISERS[name](doc)
            kept[doc] = max(kept.get(doc, score), score)
        gone = len(ranking) - len(kept)
        if gone:
            removed += gone
            affected += 1
        rankings[qid] = Ranking.from_pairs(qid, kept.items())
    return Run(rankings=rankings, metadata=run.metadata), removed, affected


@retriever("run_file", config=RunFileConfig)
class RunFileRetriever:
    """Reads a run file (TREC, JSONL predictions/results, or JSON); absent queries are missing."""

    #: Reading the file is the retrieval: nothing to save by caching it.
    cacheable = False

    def __init__(self, config: RunFileConfig, context: PluginContext) -> None:
        self.config = config
        if config.format == "trec":
            run = read_trec_run(config.path, key="retriever.path")
        elif config.format == "jsonl":
            run = read_jsonl_run(config.path)
        else:
            run = read_json_run(config.path)
        #: Document ids dropped as repeats (after normalising), for reports and tests.
        self.duplicates_removed = 0
        if config.format != "trec" or config.normalise:
            run, self.duplicates_removed, queries = normalise_run(run, config.normalise)
            if self.duplicates_removed:
                _warn(
                    f"run file {config.path}: {self.duplicates_removed} repeated document id(s) "
                    f"removed in {queries} quer{'y' if queries == 1 else 'ies'} "
                    "(the first, highest-ranked occurrence is kept)"
                )
        self.run = run

    def retrieve(self, query: Query, k: int) -> Ranking | None:
        ranking = self.run.rankings.get(query.id)
        if ranking is None:
            return None  # the pipeline applies the missing-query policy
        top = trec_order(ranking.pairs())[:k]
        return Ranking.from_pairs(query.id, top)
