"""TREC topics and qrels as a golden set.

Topics come in either of two formats:

- TSV, one topic per line: ``qid<TAB>text``;
- the classic TREC format, one ``<top> ... </top>`` block per topic::

      <top>
      <num> Number: 301
      <title> International Organized Crime
      <desc> Description:
      Identify organizations that participate in international criminal activity.
      <narr> Narrative:
      A relevant document must as a minimum identify the organization ...
      </top>

  ``topic_field`` picks the query text: the title, the description, or both.

Qrels are ``qid iter docno rel`` lines, read by the core's TREC reader
(:func:`evalframe.core.reader.read_qrels_columns`, the same one as
``evalframe trec-eval``): fields separated by ASCII whitespace, ``iter``
ignored, ``rel`` an integer that may be 0 or negative, ``#`` comment lines. The query text is
whitespace-normalised in both topic formats and nothing else of a topic is
kept, so the same queries give the same content hash from either format.

A run is not part of the dataset: read it with ``retriever=run_file``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field

from evalframe.core.errors import DataError
from evalframe.core.reader import ASCII_SPACE, read_lines, read_qrels_columns, require_file
from evalframe.core.records import At, warn_ids_not_in_corpus
from evalframe.core.types import GoldenQuery, GoldenSet
from evalframe.plugin.protocols import PluginConfig, PluginContext
from evalframe.plugin.registry import dataset
from evalframe_trec._common import (
    Judgments,
    UnjudgedPolicy,
    apply_unjudged_policy,
)

__all__ = ["TrecDataset", "TrecDatasetConfig", "read_qrels", "read_topics_trec", "read_topics_tsv"]


class TrecDatasetConfig(PluginConfig):
    """Where the topics and qrels are, and what to do when they do not match."""

    #: `evalframe golden validate --format trec TOPICS --param qrels=QRELS`: the
    #: positional path is the topics file.
    path_setting: ClassVar[str] = "topics"

    topics: str = Field(description="topics file: TSV (qid<TAB>text) or classic TREC <top> blocks")
    qrels: str = Field(description="qrels file: 'qid iter docno rel' lines, whitespace separated")
    topics_format: Literal["auto", "tsv", "trec"] = Field(
        "auto", description="'auto' reads <top> blocks as TREC format and anything else as TSV"
    )
    topic_field: Literal["title", "desc", "title+desc"] = Field(
        "title", description="TREC format only: the topic field(s) that become the query text"
    )
    unjudged_topics: UnjudgedPolicy = Field(
        "keep",
        description="topics with no qrels line: 'keep' as negative examples (empty judgments), "
        "'drop', or 'error'; keep and drop print a warning with the count",
    )
    allow_unknown_qrels: bool = Field(
        False,
        description="skip (with a warning) qrels for topics absent from the topics file "
        "instead of stopping at the first one",
    )
    set_name: str | None = Field(
        None, description="golden-set name (default: the topics file's name without suffix)"
    )


# -- topics ---------------------------------------------------------------------


def _clean(text: str) -> str:
    return " ".join(text.split())


def read_topics_tsv(path: Path) -> list[tuple[str, str, int]]:
    """``(qid, text, line)`` for each ``qid<TAB>text`` line; blank lines are skipped."""
    topics: list[tuple[str, str, int]] = []
    seen: dict[str, int] = {}
    for lineno, line in read_lines(path, what="topics file", key="dataset.topics"):
        if not line.strip():
            continue
        cols = line.split("\t")
        if len(cols) != 2:
            hint = "separate the id and the text with one tab, and use no tab inside the text"
            if "<top>" in line.lower() or line.lstrip().startswith("<"):
                hint = "this looks like TREC topic format: set dataset.topics_format=trec"
            raise DataError(
                f"a TSV topic line has {len(cols)} tab-separated column(s)",
                path=path,
                line=lineno,
                expected="2 columns: qid<TAB>text",
                got=repr(line[:80]),
                hint=hint,
            )
        qid, text = cols[0].strip(ASCII_SPACE), _clean(cols[1])
        if not qid or " " in qid:
            raise DataError(
                "the topic id is empty or contains spaces",
                path=path,
                line=lineno,
                got=repr(cols[0]),
                hint="a topic id is one token, as in the qrels' first column",
            )
        if not text:
            raise DataError(
                f"topic {qid!r} has no text",
                path=path,
                line=lineno,
                expected="qid<TAB>text",
                hint="write the query text after the tab, or remove the line",
            )
        if qid in seen:
            raise DataError(
                f"topic {qid!r} is duplicated (first on line {seen[qid]})",
                path=path,
                line=lineno,
                hint="give every topic its own id",
            )
        seen[qid] = lineno
        topics.append((qid, text, lineno))
    return topics


_TAG = re.compile(r"<\s*(/?)\s*([A-Za-z]+)\s*>")
_TOP = re.compile(r"<\s*top\s*>", re.IGNORECASE)
#: Labels that TREC topic files put at the start of a field's text.
_PREFIX = {
    "num": re.compile(r"^\s*number\s*:", re.IGNORECASE),
    "title": re.compile(r"^\s*topic\s*:", re.IGNORECASE),
    "desc": re.compile(r"^\s*description\s*:", re.IGNORECASE),
    "narr": re.compile(r"^\s*narrative\s*:", re.IGNORECASE),
}


@dataclass
class _Topic:
    line: int
    fields: dict[str, str] = field(default_factory=dict)
    field_lines: dict[str, int] = field(default_factory=dict)


class _TopicParser:
    """A line-by-line reader of ``<top>`` blocks that remembers where each field began."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.topics: list[_Topic] = []
        self.top: _Topic | None = None
        self.name: str | None = None  # the field being read
        self.buffer: list[str] = []

    def error(self, message: str, line: int, **details: str) -> DataError:
        return At(self.path, line).error(message, **details)

    def close_field(self) -> None:
        if self.top is not None and self.name is not None:
            text = "".join(self.buffer)
            prefix = _PREFIX.get(self.name)
            if prefix is not None:
                text = prefix.sub("", text, count=1)
            self.top.fields[self.name] = _clean(text)
        self.name = None
        self.buffer = []

    def text(self, chunk: str, line: int) -> None:
        if self.name is not None:
            self.buffer.append(chunk)
        elif chunk.strip():
            where = "outside any <top> block" if self.top is None else "outside any field"
            raise self.error(
                f"text {where}",
                line,
                got=repr(chunk.strip()[:60]),
                hint="every topic is <top> <num> ... <title> ... </top>; "
                "is the file TSV? then set dataset.topics_format=tsv",
            )

    def tag(self, closing: bool, name: str, line: int) -> None:
        if name == "top":
            if closing:
                if self.top is None:
                    raise self.error(
                        "</top> without an opening <top>",
                        line,
                        hint="remove the extra </top>, or add the <top> it closes",
                    )
                self.close_field()
                self.topics.append(self.top)
                self.top = None
            else:
                if self.top is not None:
                    raise self.error(
                        f"<top> opened while the topic begun on line {self.top.line} is still open",
                        line,
                        hint="close each topic with </top>",
                    )
                self.top = _Topic(line=line)
            return
        if self.top is None:
            raise self.error(
                f"<{'/' if closing else ''}{name}> outside any <top> block",
                line,
                hint="every field belongs inside a <top> ... </top> block",
            )
        self.close_field()
        if closing:
            return  # </title> and friends just end the field
        if name in self.top.field_lines:
            raise self.error(
                f"field <{name}> appears twice in the topic begun on line {self.top.line} "
                f"(first on line {self.top.field_lines[name]})",
                line,
                hint="give each topic one field of each kind; is a </top> missing?",
            )
        self.name = name
        self.top.field_lines[name] = line

    def feed(self, lineno: int, line: str) -> None:
        pos = 0
        for m in _TAG.finditer(line):
            self.text(line[pos : m.start()], lineno)
            self.tag(bool(m.group(1)), m.group(2).lower(), lineno)
            pos = m.end()
        self.text(line[pos:] + "\n", lineno)

    def finish(self) -> list[_Topic]:
        if self.top is not None:
            raise self.error(
                "the topic begun here is never closed with </top>",
                self.top.line,
                hint="add </top> after its last field",
            )
        return self.topics


def read_topics_trec(path: Path, topic_field: str = "title") -> list[tuple[str, str, int]]:
    """``(qid, text, line of <top>)`` for each ``<top>`` block, text from ``topic_field``."""
    parser = _TopicParser(path)
    for lineno, line in read_lines(path, what="topics file", key="dataset.topics"):
        parser.feed(lineno, line)
    wanted = topic_field.split("+")
    topics: list[tuple[str, str, int]] = []
    seen: dict[str, int] = {}
    for top in parser.finish():
        num = top.fields.get("num", "")
        if not num or " " in num:
            raise DataError(
                "the topic has no number" if not num else "the topic number is not one token",
                path=path,
                line=top.field_lines.get("num", top.line),
                expected="<num> Number: 301",
                got=repr(num) if num else None,
                hint="every topic needs a <num> field with its id, as used in the qrels",
            )
        parts = []
        for name in wanted:
            value = top.fields.get(name, "")
            if not value:
                raise DataError(
                    f"topic {num!r} has no <{name}> text, which dataset.topic_field="
                    f"{topic_field} needs",
                    path=path,
                    line=top.field_lines.get(name, top.line),
                    got=f"fields {', '.join(f'<{f}>' for f in top.fields) or '(none)'}",
                    hint="pick another dataset.topic_field, or fill the field in",
                )
            parts.append(value)
        if num in seen:
            raise DataError(
                f"topic {num!r} is duplicated (first at line {seen[num]})",
                path=path,
                line=top.line,
                hint="give every topic its own number",
            )
        seen[num] = top.line
        topics.append((num, " ".join(parts), top.line))
    return topics


def sniff_topics_format(path: Path) -> Literal["tsv", "trec"]:
    """'trec' when the first non-blank line holds a ``<top>`` tag, else 'tsv'."""
    for _, line in read_lines(path, what="topics file", key="dataset.topics"):
        if line.strip():
            return "trec" if _TOP.search(line) else "tsv"
    return "tsv"


# -- qrels ----------------------------------------------------------------------


def read_qrels(path: Path) -> Judgments:
    """TREC qrels through the core's reader; a bad line names its file and line."""
    columns = read_qrels_columns(path, key="dataset.qrels")
    qrels = Judgments(Path(columns.path))
    for qid, doc, label, line in columns.rows():
        qrels.add(qid, doc, label, line)
    if not len(qrels):
        raise DataError(
            "the qrels file has no judgments",
            path=path,
            expected="qid iter docno rel lines",
            hint="check that dataset.qrels names the qrels file",
        )
    return qrels


# -- the loader -----------------------------------------------------------------


@dataset("trec", config=TrecDatasetConfig)
@dataclass(eq=False)
class TrecDataset:
    """TREC topics (TSV or <top> format) with qrels (qid iter docno rel)."""

    config: TrecDatasetConfig
    context: PluginContext

    def load(self) -> GoldenSet:
        cfg = self.config
        topics_path = require_file(cfg.topics, what="topics file", key="dataset.topics")
        qrels_path = require_file(cfg.qrels, what="qrels file", key="dataset.qrels")
        fmt = cfg.topics_format if cfg.topics_format != "auto" else sniff_topics_format(topics_path)
        if fmt == "trec":
            topics = read_topics_trec(topics_path, cfg.topic_field)
        else:
            topics = read_topics_tsv(topics_path)
        if not topics:
            raise DataError(
                "the topics file has no topics",
                path=topics_path,
                expected="qid<TAB>text lines or <top> blocks",
                hint="check that dataset.topics names the topics file",
            )
        qrels = read_qrels(qrels_path)
        qrels.drop_unknown(
            (qid for qid, _, _ in topics),
            allow=cfg.allow_unknown_qrels,
            key="dataset.allow_unknown_qrels",
            source=f"the topics file {topics_path}",
        )
        queries = [
            GoldenQuery(id=qid, text=text, judgments=qrels.labels.get(qid, {}))
            for qid, text, _ in topics
        ]
        queries = apply_unjudged_policy(
            queries,
            set(qrels.labels),
            {qid: (topics_path, line) for qid, _, line in topics},
            cfg.unjudged_topics,
            key="dataset.unjudged_topics",
            source=str(qrels_path),
        )
        if not queries:
            raise DataError(
                "no topic is left to evaluate",
                path=topics_path,
                hint="no topic has judgments; check that the files belong together",
            )
        warn_ids_not_in_corpus(queries, self.context.corpus)
        provenance: dict[str, object] = {
            "format": "trec",
            "topics": str(topics_path),
            "qrels": str(qrels_path),
            "topics_format": fmt,
        }
        if fmt == "trec":
            provenance["topic_field"] = cfg.topic_field
        return GoldenSet.build(cfg.set_name or topics_path.stem, queries, provenance=provenance)
