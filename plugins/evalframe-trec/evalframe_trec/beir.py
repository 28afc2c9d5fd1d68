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

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from evalframe.core.errors import DataError
from evalframe.core.messages import shown, warn
from evalframe.core.reader import parse_int, read_fields, read_jsonl, require_folder
from evalframe.core.records import At, warn_ids_not_in_corpus
from evalframe.core.types import Corpus, Document, GoldenQuery, GoldenSet, is_plain_id
from evalframe.plugin.protocols import PluginConfig, PluginContext
from evalframe.plugin.registry import corpus, dataset
from evalframe_trec._common import Judgments

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
    return require_folder(
        path,
        what="BEIR dataset folder",
        key=key,
        expected="a folder with corpus.jsonl, queries.jsonl and qrels/<split>.tsv",
        hint="point the path at the folder that holds corpus.jsonl",
    )


_SHAPE = 'BEIR records are {"_id": ..., "text": ...}, one per line'


def _record(raw: Any, at: At, what: str) -> tuple[dict[str, Any], str]:
    """The record and its ``_id``, checked."""
    record = at.mapping(raw, f"{what} line", hint=_SHAPE)
    at.require(record, ["_id"], hint=_SHAPE)
    return record, at.ident(
        record["_id"], "_id", hint='give every record its own id, e.g. "_id": "doc1"'
    )


def _text(record: dict[str, Any], name: str, at: At, *, required: bool) -> str:
    if required:
        at.require(record, [name], hint=_SHAPE)
    value = record.get(name)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise at.error(
            f"field {name!r} must be a string",
            got=type(value).__name__,
            hint="write the text as a JSON string",
        )
    return value


def _first_time(seen: dict[str, tuple[Path, int]], ident: str, at: At, what: str) -> None:
    if ident in seen:
        raise at.error(
            f"{what} {ident!r} is duplicated (first on line {seen[ident][1]})",
            hint=f"{what}s must be unique",
        )


def _metadata(record: dict[str, Any], known: tuple[str, ...], at: At) -> dict[str, Any]:
    meta = record.get("metadata") or {}
    if not isinstance(meta, dict):
        raise at.error(
            "field 'metadata' must be a JSON object",
            got=type(meta).__name__,
            hint='write metadata as {"key": value, ...}, or leave it out',
        )
    extra = {k: v for k, v in record.items() if k not in (*known, "metadata")}
    return {**meta, **extra}


def read_beir_qrels(path: Path) -> Judgments:
    """``query-id<TAB>corpus-id<TAB>score`` lines after the header; labels are integers."""
    qrels = Judgments(path)
    header_seen = False
    for lineno, cols in read_fields(path, what="qrels file", key="dataset.split", sep="\t"):
        at, text = At(path, lineno), repr("\t".join(cols)[:80])
        if not header_seen:
            if tuple(c.lower() for c in cols) != QRELS_HEADER:
                raise at.error(
                    "the first line of a BEIR qrels file must be its header",
                    expected="query-id<TAB>corpus-id<TAB>score",
                    got=text,
                    hint="add the header line; TREC-style qrels load with dataset=trec",
                )
            header_seen = True
            continue
        if len(cols) != 3:
            raise at.error(
                f"a BEIR qrels line has {len(cols)} tab-separated column(s)",
                expected="3 columns: query-id<TAB>corpus-id<TAB>score",
                got=text,
                hint="separate the three columns with tabs, not spaces",
            )
        qid, doc, raw = cols
        if not qid or not doc:
            raise at.error(
                "empty query-id or corpus-id",
                got=text,
                hint="every qrels line names a query id and a document id",
            )
        score = parse_int(
            raw, what="score", path=path, line=lineno, expected="an integer in column 3", label=True
        )
        qrels.add(qid, doc, score, lineno)
    return qrels


@dataset("beir", config=BeirDatasetConfig)
@dataclass(eq=False)
class BeirDataset:
    """A BEIR folder's queries with one split's qrels (queries.jsonl + qrels/<split>.tsv)."""

    config: BeirDatasetConfig
    context: PluginContext

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
            at = At(queries_path, lineno)
            record, qid = _record(raw, at, "queries.jsonl")
            _first_time(lines, qid, at, "query id")
            text = " ".join(_text(record, "text", at, required=True).split())
            if not text:
                raise at.error(
                    f"query {qid!r} has empty text",
                    hint="give every query its text, or remove the record",
                )
            lines[qid] = (queries_path, lineno)
            metadata = _metadata(record, ("_id", "text"), at)
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
        unjudged = [q.id for q in queries if q.id not in qrels.labels]
        if unjudged:
            done = (
                "and were not loaded"
                if cfg.queries == "judged"
                else "; kept as negative examples with empty judgments"
            )
            warn(
                f"{len(unjudged)} of {len(queries)} queries have no qrels in split "
                f"{cfg.split!r}{'' if done.startswith(';') else ' '}{done} "
                f"(dataset.queries={cfg.queries}): {shown(unjudged)}"
            )
        if cfg.queries == "judged":
            queries = [q for q in queries if q.id in qrels.labels]
        corpus_ = self.context.corpus
        warn_ids_not_in_corpus(queries, corpus_)
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
@dataclass(eq=False)
class BeirCorpus:
    """A BEIR folder's corpus.jsonl (_id, title, text); title and metadata kept."""

    config: BeirCorpusConfig
    context: PluginContext

    def sources(self) -> list[Path]:
        """The one file :meth:`load` reads (lets a run answered from the cache skip it)."""
        return [Path(self.config.path).expanduser() / "corpus.jsonl"]

    def load(self) -> Corpus:
        cfg = self.config
        root = _folder(cfg.path, "corpus.path")
        path = root / "corpus.jsonl"
        docs: list[Document] = []
        first: dict[str, tuple[Path, int]] = {}
        empty: list[str] = []
        for lineno, raw in read_jsonl(path, what="BEIR corpus file"):
            at = At(path, lineno)
            record, doc_id = _record(raw, at, "corpus.jsonl")
            _first_time(first, doc_id, at, "document id")
            first[doc_id] = (path, lineno)
            text, is_empty = self._text_of(record, doc_id, at)
            if is_empty:
                empty.append(doc_id)
                if cfg.empty_docs == "drop":
                    continue
            meta = _metadata(record, ("_id", "text"), at)
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

    def texts(self, ids: Collection[str]) -> dict[str, str]:
        """The texts :meth:`load` gives the documents among ``ids``, building no document:
        a report shows a few thousand documents of a corpus that may hold millions."""
        wanted = set(ids)
        path = _folder(self.config.path, "corpus.path") / "corpus.jsonl"
        found: dict[str, str] = {}
        for lineno, raw in read_jsonl(path, what="BEIR corpus file"):
            quick = raw.get("_id") if type(raw) is dict else None
            if type(quick) is str and quick not in wanted and is_plain_id(quick):
                continue  # not asked for: its id alone is looked at
            at = At(path, lineno)
            record, doc_id = _record(raw, at, "corpus.jsonl")
            if doc_id in wanted:
                text, is_empty = self._text_of(record, doc_id, at)
                if not (is_empty and self.config.empty_docs == "drop"):
                    found[doc_id] = text
        return found

    def _text_of(self, record: dict[str, Any], doc_id: str, at: At) -> tuple[str, bool]:
        """A record's document text as :meth:`load` keeps it, and whether the document
        has neither title nor text (an error under ``corpus.empty_docs=error``)."""
        cfg = self.config
        title = _text(record, "title", at, required=False)
        body = _text(record, "text", at, required=True)
        is_empty = not title.strip() and not body.strip()
        if is_empty and cfg.empty_docs == "error":
            raise at.error(
                f"document {doc_id!r} has no title and no text",
                hint="set corpus.empty_docs=keep or corpus.empty_docs=drop",
            )
        text = f"{title}\n{body}" if cfg.include_title and title.strip() else body
        return text, is_empty
