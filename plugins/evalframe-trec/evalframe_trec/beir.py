"""BEIR folders: ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv``.

::

    scifact/
    ├── corpus.jsonl        {"_id": "4983", "title": "...", "text": "...", "metadata": {}}
    ├── queries.jsonl       {"_id": "1", "text": "...", "metadata": {}}
    └── qrels/
        ├── train.tsv       query-id<TAB>corpus-id<TAB>score, after a header line
        └── test.tsv

The dataset reads the queries and one split's qrels; by default only the
queries judged in that split are loaded (BEIR's own behaviour). The corpus
reads ``corpus.jsonl``.

BEIR's evaluation silently drops a retrieved document whose id equals the
query id (it matters for ArguAna and Quora). evalframe does not: that is a
metric policy, ``metrics.policies.drop_self_matches=true``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from evalframe.core.errors import DataError
from evalframe.core.io import read_jsonl, require_file
from evalframe.core.types import Corpus, Document, GoldenQuery, GoldenSet
from evalframe.plugin.protocols import PluginConfig, PluginContext
from evalframe.plugin.registry import corpus, dataset
from evalframe_trec._common import (
    Qrels,
    iter_lines,
    parse_int,
    shown,
    warn,
    warn_unknown_doc_ids,
)

__all__ = ["BeirCorpus", "BeirCorpusConfig", "BeirDataset", "BeirDatasetConfig", "read_beir_qrels"]

QRELS_HEADER = ("query-id", "corpus-id", "score")


class BeirDatasetConfig(PluginConfig):
    """Which BEIR folder and split, and which queries to load."""

    path: str = Field(description="the BEIR dataset folder (corpus.jsonl, queries.jsonl, qrels/)")
    split: str = Field("test", description="qrels split: reads qrels/<split>.tsv")
    queries: Literal["judged", "all"] = Field(
        "judged",
        description="'judged': only queries with a line in the split's qrels (BEIR's way; the "
        "others are counted in a warning); 'all': every query, unjudged ones as negatives",
    )
    allow_unknown_qrels: bool = Field(
        False,
        description="skip (with a warning) qrels for query ids absent from queries.jsonl "
        "instead of stopping at the first one",
    )
    set_name: str | None = Field(None, description="golden-set name (default: <folder>-<split>)")


class BeirCorpusConfig(PluginConfig):
    """Which BEIR folder, and how a document's title is used."""

    path: str = Field(description="the BEIR dataset folder (reads its corpus.jsonl)")
    include_title: bool = Field(
        True, description="prepend the title to the text (BEIR's retrievers index both)"
    )
    empty_docs: Literal["keep", "drop", "error"] = Field(
        "keep",
        description="documents with no title and no text: 'keep' (with a warning), 'drop' "
        "(with a warning), or 'error'",
    )
    corpus_name: str | None = Field(None, description="corpus name (default: the folder's name)")


def _folder(path: str, key: str) -> Path:
    root = require_file(path, what="BEIR folder", key=key)
    if not root.is_dir():
        raise DataError(
            f"a BEIR dataset is a folder, but this is a file: {root}",
            key=key,
            expected="a folder with corpus.jsonl, queries.jsonl and qrels/<split>.tsv",
            hint="point the path at the folder that holds corpus.jsonl",
        )
    return root


def _id(record: dict[str, Any], path: Path, line: int, what: str) -> str:
    if "_id" not in record:
        raise DataError(
            f"{what} has no '_id' field",
            path=path,
            line=line,
            got=f"fields {', '.join(sorted(record)) or '(none)'}",
            hint='BEIR records are {"_id": ..., "text": ...}',
        )
    raw = record["_id"]
    if isinstance(raw, bool) or not isinstance(raw, (str, int)) or str(raw).strip() == "":
        raise DataError(
            f"{what} '_id' must be a non-empty string or an integer",
            path=path,
            line=line,
            got=repr(raw),
            hint='give every record its own id, e.g. "_id": "doc1"',
        )
    return str(raw)


def _object(record: Any, path: Path, line: int, what: str) -> dict[str, Any]:
    if not isinstance(record, dict):
        raise DataError(
            f"a {what} line must be a JSON object",
            path=path,
            line=line,
            got=type(record).__name__,
            hint='BEIR records are {"_id": ..., "text": ...}, one per line',
        )
    return record


def _text(record: dict[str, Any], name: str, path: Path, line: int, *, required: bool) -> str:
    if name not in record:
        if required:
            raise DataError(
                f"record has no {name!r} field",
                path=path,
                line=line,
                got=f"fields {', '.join(sorted(record))}",
                hint='BEIR records are {"_id": ..., "text": ...}, one per line',
            )
        return ""
    value = record[name]
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise DataError(
            f"field {name!r} must be a string",
            path=path,
            line=line,
            got=type(value).__name__,
            hint="write the text as a JSON string",
        )
    return value


def _metadata(
    record: dict[str, Any], known: tuple[str, ...], path: Path, line: int
) -> dict[str, Any]:
    meta = record.get("metadata") or {}
    if not isinstance(meta, dict):
        raise DataError(
            "field 'metadata' must be a JSON object",
            path=path,
            line=line,
            got=type(meta).__name__,
            hint='write metadata as {"key": value, ...}, or leave it out',
        )
    extra = {k: v for k, v in record.items() if k not in (*known, "metadata")}
    return {**meta, **extra}


def read_beir_qrels(path: Path) -> Qrels:
    """``query-id<TAB>corpus-id<TAB>score`` lines after the header; labels are integers."""
    qrels = Qrels(path)
    header_seen = False
    for lineno, line in iter_lines(path, what="qrels file", key="dataset.split"):
        if not line.strip():
            continue
        cols = [c.strip() for c in line.split("\t")]
        if not header_seen:
            if tuple(c.lower() for c in cols) != QRELS_HEADER:
                raise DataError(
                    "the first line of a BEIR qrels file must be its header",
                    path=path,
                    line=lineno,
                    expected="query-id<TAB>corpus-id<TAB>score",
                    got=repr(line[:80]),
                    hint="add the header line; TREC-style qrels load with dataset=trec",
                )
            header_seen = True
            continue
        if len(cols) != 3:
            raise DataError(
                f"a BEIR qrels line has {len(cols)} tab-separated column(s)",
                path=path,
                line=lineno,
                expected="3 columns: query-id<TAB>corpus-id<TAB>score",
                got=repr(line[:80]),
                hint="separate the three columns with tabs, not spaces",
            )
        qid, doc, raw = cols
        if not qid or not doc:
            raise DataError(
                "empty query-id or corpus-id",
                path=path,
                line=lineno,
                got=repr(line[:80]),
                hint="every qrels line names a query id and a document id",
            )
        score = parse_int(
            raw, what="score", path=path, line=lineno, expected="an integer in column 3"
        )
        qrels.add(qid, doc, score, lineno)
    return qrels


@dataset("beir", config=BeirDatasetConfig)
class BeirDataset:
    """A BEIR folder's queries with one split's qrels (queries.jsonl + qrels/<split>.tsv)."""

    def __init__(self, config: BeirDatasetConfig, context: PluginContext) -> None:
        self.config = config
        self.context = context

    def _qrels_path(self, root: Path) -> Path:
        path = root / "qrels" / f"{self.config.split}.tsv"
        if not path.is_file():
            splits = sorted(p.stem for p in (root / "qrels").glob("*.tsv"))
            raise DataError(
                f"split {self.config.split!r} has no qrels file: {path}",
                key="dataset.split",
                expected=f"one of: {', '.join(splits) or '(no qrels/*.tsv files)'}",
                hint="pick the split with dataset.split=<name>",
            )
        return path

    def load(self) -> GoldenSet:
        cfg = self.config
        root = _folder(cfg.path, "dataset.path")
        qrels_path = self._qrels_path(root)
        queries_path = root / "queries.jsonl"
        queries: list[GoldenQuery] = []
        lines: dict[str, tuple[Path, int]] = {}
        for lineno, raw in read_jsonl(queries_path, what="BEIR queries file"):
            record = _object(raw, queries_path, lineno, "queries.jsonl")
            qid = _id(record, queries_path, lineno, "query")
            if qid in lines:
                raise DataError(
                    f"query id {qid!r} is duplicated (first on line {lines[qid][1]})",
                    path=queries_path,
                    line=lineno,
                    hint="query ids must be unique",
                )
            text = " ".join(_text(record, "text", queries_path, lineno, required=True).split())
            if not text:
                raise DataError(
                    f"query {qid!r} has empty text",
                    path=queries_path,
                    line=lineno,
                    hint="give every query its text, or remove the record",
                )
            lines[qid] = (queries_path, lineno)
            metadata = _metadata(record, ("_id", "text"), queries_path, lineno)
            queries.append(GoldenQuery(id=qid, text=text, metadata=metadata))
        qrels = read_beir_qrels(qrels_path)
        qrels.drop_unknown(
            lines,
            allow=cfg.allow_unknown_qrels,
            key="dataset.allow_unknown_qrels",
            source=str(queries_path),
        )
        if not len(qrels):
            raise DataError(
                f"split {cfg.split!r} has no judgments",
                path=qrels_path,
                expected="query-id<TAB>corpus-id<TAB>score lines after the header",
                hint="check that this is the right split file, or pick another with dataset.split",
            )
        queries = [q.model_copy(update={"judgments": qrels.labels.get(q.id, {})}) for q in queries]
        if cfg.queries == "judged":
            unjudged = [q.id for q in queries if q.id not in qrels.labels]
            if unjudged:
                warn(
                    f"{len(unjudged)} of {len(queries)} queries have no qrels in split "
                    f"{cfg.split!r} and were not loaded (dataset.queries=judged): "
                    f"{shown(unjudged)}"
                )
            queries = [q for q in queries if q.id in qrels.labels]
        else:
            unjudged = [q.id for q in queries if q.id not in qrels.labels]
            if unjudged:
                warn(
                    f"{len(unjudged)} of {len(queries)} queries have no qrels in split "
                    f"{cfg.split!r}; kept as negative examples with empty judgments "
                    f"(dataset.queries=all): {shown(unjudged)}"
                )
        corpus_ = self.context.corpus
        warn_unknown_doc_ids(queries, corpus_)
        if corpus_ is not None:
            selves = sorted(q.id for q in queries if q.id in corpus_.ids())
            if selves:
                warn(
                    f"{len(selves)} query id(s) are also document ids; BEIR drops such documents "
                    "from rankings, evalframe keeps them unless "
                    "metrics.policies.drop_self_matches=true"
                )
        return GoldenSet.build(
            cfg.set_name or f"{root.name}-{cfg.split}",
            queries,
            provenance={
                "format": "beir",
                "path": str(root),
                "split": cfg.split,
                "queries": str(queries_path),
                "qrels": str(qrels_path),
                "query_selection": cfg.queries,
            },
        )


@corpus("beir", config=BeirCorpusConfig)
class BeirCorpus:
    """A BEIR folder's corpus.jsonl (_id, title, text); title and metadata kept."""

    def __init__(self, config: BeirCorpusConfig, context: PluginContext) -> None:
        self.config = config

    def load(self) -> Corpus:
        cfg = self.config
        root = _folder(cfg.path, "corpus.path")
        path = root / "corpus.jsonl"
        docs: list[Document] = []
        first: dict[str, int] = {}
        empty: list[str] = []
        for lineno, raw in read_jsonl(path, what="BEIR corpus file"):
            record = _object(raw, path, lineno, "corpus.jsonl")
            doc_id = _id(record, path, lineno, "document")
            if doc_id in first:
                raise DataError(
                    f"document id {doc_id!r} is duplicated (first on line {first[doc_id]})",
                    path=path,
                    line=lineno,
                    hint="document ids must be unique",
                )
            first[doc_id] = lineno
            title = _text(record, "title", path, lineno, required=False)
            body = _text(record, "text", path, lineno, required=True)
            if not title.strip() and not body.strip():
                if cfg.empty_docs == "error":
                    raise DataError(
                        f"document {doc_id!r} has no title and no text",
                        path=path,
                        line=lineno,
                        hint="set corpus.empty_docs=keep or corpus.empty_docs=drop",
                    )
                empty.append(doc_id)
                if cfg.empty_docs == "drop":
                    continue
            text = f"{title}\n{body}" if cfg.include_title and title.strip() else body
            meta = _metadata(record, ("_id", "text"), path, lineno)
            docs.append(Document(id=doc_id, text=text, metadata=meta))
        if empty:
            done = "dropped" if cfg.empty_docs == "drop" else "kept"
            warn(
                f"{len(empty)} document(s) in {path} have no title and no text; "
                f"{done} (corpus.empty_docs={cfg.empty_docs}): {shown(empty)}"
            )
        if not docs:
            raise DataError(
                "the corpus is empty",
                path=path,
                expected="at least one document",
                hint="check that corpus.path is the right BEIR folder",
            )
        return Corpus.build(cfg.corpus_name or root.name, docs)
