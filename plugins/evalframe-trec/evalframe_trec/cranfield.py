"""The Cranfield collection in its original three files.

- ``cran.all.1400``: 1400 abstracts, each ``.I <id>`` then ``.T`` (title),
  ``.A`` (authors), ``.B`` (bibliography) and ``.W`` (text);
- ``cran.qry``: 225 queries, each ``.I <number>`` then ``.W`` and the text
  (CRLF line endings);
- ``cranqrel``: ``<query> <doc> <code>`` lines.

Every quirk of the distribution is an explicit behaviour here (see the
plugin README for the full list):

- ``cranqrel`` numbers queries by their *position* in ``cran.qry`` (1 to
  225), not by their ``.I`` numbers (001, 002, 004, ...). Query ids are the
  positions by default (``query_ids=position``); ``query_ids=original`` uses
  the ``.I`` numbers and maps the qrels onto them. Both are kept as metadata.
- Codes run from 1 (most relevant) to 4 (least): ``grades`` turns them into
  labels where higher is better, by default 1→4, 2→3, 3→2, 4→1.
- One ``-1`` line per query is an artifact, not a judgment: dropped with a
  warning by default (``minus_one=drop``), or kept as judged non-relevant
  (label 0, ``minus_one=nonrelevant``). It is never a relevant grade; a code
  5 (which some "corrected" copies put in its place) is an error.
- Documents 471 and 995 are empty (``empty_docs``), and 240, 576 and 578
  have field markers inside their ``.W`` text (``stray_markers``).
- ``.W`` repeats the title in 1396 of the 1398 non-empty documents, so the
  title is not prepended by default (``include_title``).

With no ``path`` the copy packaged with this plugin is read.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from evalframe.core.errors import DataError
from evalframe.core.messages import shown, warn
from evalframe.core.reader import parse_int, read_fields, read_lines, require_file, require_folder
from evalframe.core.records import At, warn_ids_not_in_corpus
from evalframe.core.types import Corpus, Document, GoldenQuery, GoldenSet
from evalframe.plugin.protocols import PluginConfig, PluginContext
from evalframe.plugin.registry import corpus, dataset
from evalframe_trec._common import (
    Judgments,
    UnjudgedPolicy,
    apply_unjudged_policy,
)

__all__ = [
    "PACKAGED",
    "CranfieldCorpus",
    "CranfieldCorpusConfig",
    "CranfieldDataset",
    "CranfieldDatasetConfig",
    "read_cran_docs",
    "read_cran_queries",
]

#: The original three files, shipped inside this package.
PACKAGED = Path(__file__).resolve().parent / "data" / "cranfield"
#: Relevance codes of ``cranqrel``: 1 is the most relevant, 4 the least.
DEFAULT_GRADES = {1: 4, 2: 3, 3: 2, 4: 1}
ARTIFACT = -1

_MARKER = re.compile(r"^\.([A-Za-z])\s*$")
_ID_LINE = re.compile(r"^\.I(?:\s+(.*?))?\s*$")


def _files(path: str | None, section: str, **names: tuple[str, str]) -> dict[str, Path]:
    """``{setting: path}`` of the named files in the configured (or packaged) folder."""
    root = PACKAGED
    if path is not None:
        root = require_folder(
            path,
            what="Cranfield folder",
            key=f"{section}.path",
            expected="the folder holding cran.all.1400, cran.qry and cranqrel",
            hint="point the path at the folder (or leave it null for the packaged copy)",
        )
    return {
        setting: require_file(root / name, what=f"Cranfield {what}", key=f"{section}.{setting}")
        for setting, (name, what) in names.items()
    } | {"path": root}


class CranfieldDatasetConfig(PluginConfig):
    """Where the queries and judgments are, and how Cranfield's quirks are resolved."""

    path: str | None = Field(
        None, description="folder holding cran.qry and cranqrel; null: the packaged copy"
    )
    queries_file: str = Field("cran.qry", description="queries file name inside the folder")
    qrels_file: str = Field("cranqrel", description="judgments file name inside the folder")
    query_ids: Literal["position", "original"] = Field(
        "position",
        description="'position': query ids 1..225 as cranqrel numbers them; 'original': the "
        ".I numbers of cran.qry (1, 2, 4, 8, ...), with the qrels mapped onto them",
    )
    grades: dict[int, int] = Field(
        default_factory=lambda: dict(DEFAULT_GRADES),
        description="cranqrel code -> label (higher = more relevant); codes run from 1 (most "
        "relevant) to 4 (least); a code not listed is an error",
    )
    minus_one: Literal["drop", "nonrelevant"] = Field(
        "drop",
        description="the one code -1 line per query (an artifact): 'drop' it (with a warning) "
        "or keep it as judged non-relevant (label 0); never relevant",
    )
    unjudged_queries: UnjudgedPolicy = Field(
        "keep",
        description="queries left with no judgment: 'keep' as negative examples, 'drop' (both "
        "with a warning), or 'error'",
    )
    set_name: str = Field("cranfield", description="golden-set name")

    @field_validator("grades")
    @classmethod
    def _no_artifact_grade(cls, grades: dict[int, int]) -> dict[int, int]:
        if not grades:
            raise ValueError("map at least one code to a label, e.g. {1: 4, 2: 3, 3: 2, 4: 1}")
        if ARTIFACT in grades:
            raise ValueError(
                "code -1 is the artifact line, not a grade: choose its handling with "
                "dataset.minus_one (drop or nonrelevant)"
            )
        return grades


class CranfieldCorpusConfig(PluginConfig):
    """Where the abstracts are, and how their quirks are resolved."""

    path: str | None = Field(
        None, description="folder holding cran.all.1400; null: the packaged copy"
    )
    docs_file: str = Field("cran.all.1400", description="documents file name inside the folder")
    include_title: bool = Field(
        False,
        description="prepend .T to the text; off because .W already begins with the title in "
        "1396 of the 1398 non-empty documents",
    )
    empty_docs: Literal["keep", "drop", "error"] = Field(
        "keep",
        description="documents with no title and no text (471 and 995): 'keep' as empty "
        "documents, 'drop' (both with a warning), or 'error'",
    )
    stray_markers: Literal["text", "error"] = Field(
        "text",
        description="a field marker after .W or repeating a field (documents 240, 576, 578): "
        "'text' ignores the marker and keeps its lines in the text (with a warning), 'error'",
    )
    corpus_name: str = Field("cranfield", description="corpus name")


# -- the .I record format shared by cran.qry and cran.all.1400 ---------------------


@dataclass(frozen=True)
class _Kind:
    """How one Cranfield file names its records in errors."""

    noun: str  # "query" / "document"
    file: str  # "queries file"
    layout: str  # the record layout, for `expected`
    unique_hint: str
    text_first: str  # the error for text before any field marker
    text_first_hint: str
    id_word: str  # ".I <number>" / ".I <id>"


_QUERIES = _Kind(
    "query",
    "queries file",
    "each query is .I <number>, then .W and its text",
    "every query needs its own .I number",
    "query text before its .W marker",
    "put a line '.W' before the query text",
    "number",
)
_DOCUMENTS = _Kind(
    "document",
    "documents file",
    ".I <id>, then .T, .A, .B and .W",
    "document ids must be unique",
    "text before the first field marker of a document",
    "put a field marker such as '.T' or '.W' before the text",
    "id",
)


@dataclass
class CranDoc:
    """One ``.I`` record as read: its fields' lines, and where it and stray markers are."""

    id: str
    line: int
    fields: dict[str, list[str]] = field(default_factory=dict)
    stray: list[int] = field(default_factory=list)  # lines of ignored markers
    current: str | None = None
    number: str = ""  # the .I number as written, e.g. "004"

    def value(self, name: str, sep: str = " ") -> str:
        lines = [ln.strip() for ln in self.fields.get(name, [])]
        if sep == " ":
            return " ".join(" ".join(lines).split())
        return sep.join(ln for ln in lines if ln)


#: What a record does with a field marker: start the field, or raise.
OnMarker = Callable[[CranDoc, str, At], None]


def _id_token(line: str, at: At, noun: str) -> str:
    m = _ID_LINE.match(line)
    token = (m.group(1) or "") if m else ""
    if not token or not token.isdigit():
        raise at.error(
            f"a {noun} .I line must carry one whole number",
            expected=".I <number>",
            got=repr(line[:60]),
            hint="every record starts with a line '.I' and its number, e.g. '.I 12'",
        )
    return token


def _records(path: Path, kind: _Kind, key: str, on_marker: OnMarker) -> list[CranDoc]:
    """The file's ``.I`` records in order, each field's lines gathered."""
    records: list[CranDoc] = []
    seen: dict[int, int] = {}  # .I number -> line (001 and 1 are the same record)
    for lineno, line in read_lines(path, what=f"Cranfield {kind.file}", key=key):
        at = At(path, lineno)
        if line.startswith(".I") and _ID_LINE.match(line):
            number = _id_token(line, at, kind.noun)
            shown_id = number if kind is _QUERIES else str(int(number))
            if int(number) in seen:
                raise at.error(
                    f"{kind.noun} .I {shown_id} appears twice (first on line {seen[int(number)]})",
                    hint=kind.unique_hint,
                )
            seen[int(number)] = lineno
            records.append(CranDoc(str(int(number)), lineno, number=number))
            continue
        record = records[-1] if records else None
        m = _MARKER.match(line)
        if m:
            if record is None:
                raise at.error(
                    "a field marker before the first .I line",
                    hint=f"the file must start with a line '.I <{kind.id_word}>'",
                )
            on_marker(record, m.group(1), at)
        elif record is None or record.current is None:
            if line.strip():
                raise at.error(
                    kind.text_first,
                    got=repr(line[:60]),
                    expected=kind.layout,
                    hint=kind.text_first_hint,
                )
        else:
            record.fields[record.current].append(line)
    if not records:
        raise DataError(
            f"the {kind.file} has no .I entries",
            path=path,
            expected=f".I <{kind.id_word}>",
            hint="is this the right file? (cran.all.1400, cran.qry or cranqrel)",
        )
    return records


def _start_field(record: CranDoc, name: str) -> None:
    record.fields[name] = []
    record.current = name


# -- queries ----------------------------------------------------------------------


@dataclass(frozen=True)
class CranQuery:
    position: int
    number: str  # the .I number as written, e.g. "004"
    text: str
    line: int


def _query_marker(record: CranDoc, name: str, at: At) -> None:
    if name != "W" or "W" in record.fields:
        raise at.error(
            f"unexpected field marker .{name} in a query",
            expected=_QUERIES.layout,
            hint="a query has one .W field; is this a documents file?",
        )
    _start_field(record, name)


def read_cran_queries(path: Path) -> list[CranQuery]:
    """Queries of ``cran.qry`` in file order, numbered by position from 1."""
    queries = []
    for position, raw in enumerate(_records(path, _QUERIES, "dataset.path", _query_marker), 1):
        text = raw.value("W")
        if not text:
            raise DataError(
                f"query .I {raw.number} has no text",
                path=path,
                line=raw.line,
                expected=".W followed by the query text",
                hint="add the query text after its .W line, or remove the query",
            )
        queries.append(CranQuery(position, raw.number, text, raw.line))
    return queries


# -- documents --------------------------------------------------------------------


def read_cran_docs(path: Path, *, stray_markers: str = "text") -> list[CranDoc]:
    """Documents of ``cran.all.1400`` with their raw fields, in file order."""

    def marker(doc: CranDoc, name: str, at: At) -> None:
        if name not in "TABW":
            raise at.error(
                f"unknown field marker .{name}",
                expected=".T, .A, .B or .W",
                hint="Cranfield documents have only the fields .T, .A, .B and .W",
            )
        if name in doc.fields or "W" in doc.fields:
            if stray_markers == "error":
                raise at.error(
                    f"document {doc.id}: field marker .{name} after .W or repeated",
                    hint="set corpus.stray_markers=text to keep its lines in the text",
                )
            assert at.line is not None  # every line read from a file has its number
            doc.stray.append(at.line)  # the lines go on in the field before it
            return
        _start_field(doc, name)

    docs = _records(path, _DOCUMENTS, "corpus.path", marker)
    for doc in docs:
        if "W" not in doc.fields:
            raise DataError(
                f"document {doc.id} has no .W field",
                path=path,
                line=doc.line,
                expected=_DOCUMENTS.layout,
                hint="add a .W line (it may be followed by no text)",
            )
    return docs


# -- loaders ----------------------------------------------------------------------


@dataset("cranfield", config=CranfieldDatasetConfig)
@dataclass(eq=False)
class CranfieldDataset:
    """Cranfield queries and judgments (cran.qry + cranqrel), quirks handled explicitly."""

    config: CranfieldDatasetConfig
    context: PluginContext

    def load(self) -> GoldenSet:
        cfg = self.config
        files = _files(
            cfg.path,
            "dataset",
            queries_file=(cfg.queries_file, "queries file"),
            qrels_file=(cfg.qrels_file, "judgments file"),
        )
        root, qry_path, qrels_path = files["path"], files["queries_file"], files["qrels_file"]
        cran = read_cran_queries(qry_path)

        def qid(q: CranQuery) -> str:
            return str(q.position) if cfg.query_ids == "position" else str(int(q.number))

        qrels, artifacts = self._qrels(qrels_path, [qid(q) for q in cran])
        queries = [
            GoldenQuery(
                id=qid(q),
                text=q.text,
                judgments=qrels.labels.get(qid(q), {}),
                metadata={"position": q.position, "original_id": q.number},
            )
            for q in cran
        ]
        source = str(qrels_path)
        if artifacts and cfg.minus_one == "drop":
            source += " (once its code -1 lines are dropped)"
        queries = apply_unjudged_policy(
            queries,
            set(qrels.labels),
            {qid(q): (qry_path, q.line) for q in cran},
            cfg.unjudged_queries,
            key="dataset.unjudged_queries",
            source=source,
            noun="query(ies)",
        )
        if not queries:
            raise DataError(
                "no query is left to evaluate",
                path=qrels_path,
                hint="no query has judgments; set dataset.unjudged_queries=keep to keep them",
            )
        warn_ids_not_in_corpus(queries, self.context.corpus)
        return GoldenSet.build(
            cfg.set_name,
            queries,
            provenance={
                "format": "cranfield",
                "path": str(root),
                "packaged": cfg.path is None,
                "queries": str(qry_path),
                "qrels": str(qrels_path),
                "query_ids": cfg.query_ids,
                "grades": {str(c): g for c, g in sorted(cfg.grades.items())},
                "minus_one": cfg.minus_one,
                "artifact_lines": artifacts,
            },
        )

    def _qrels(self, path: Path, ids: list[str]) -> tuple[Judgments, int]:
        """Judgments keyed by query id; cranqrel's first column is a position in cran.qry."""
        cfg = self.config
        qrels = Judgments(path)
        artifacts = 0
        for lineno, cols in read_fields(path, what="Cranfield judgments file", key="dataset.path"):
            if len(cols) != 3:
                raise DataError(
                    f"a cranqrel line has {len(cols)} column(s)",
                    path=path,
                    line=lineno,
                    expected="3 columns: query-position doc-id code",
                    got=repr(" ".join(cols)[:80]),
                    hint="cranqrel lines are '<query position> <doc .I> <code>', e.g. '1 184 2'",
                )
            position = parse_int(
                cols[0], what="query number", path=path, line=lineno, expected="a query position"
            )
            if not 1 <= position <= len(ids):
                raise DataError(
                    f"query number {position} is out of range: cranqrel numbers queries by "
                    f"their position in the queries file, which has {len(ids)}",
                    path=path,
                    line=lineno,
                    expected=f"1..{len(ids)}",
                    got=str(position),
                    hint="the first column is a position (1, 2, 3, ...), not the .I number",
                )
            doc = str(
                parse_int(cols[1], what="document id", path=path, line=lineno, expected="a .I id")
            )
            code = parse_int(
                cols[2], what="relevance code", path=path, line=lineno, expected="1, 2, 3, 4 or -1"
            )
            if code == ARTIFACT:
                artifacts += 1
                if cfg.minus_one == "drop":
                    continue
                label = 0
            elif code in cfg.grades:
                label = cfg.grades[code]
            else:
                hint = "add the code to dataset.grades, e.g. {1: 4, 2: 3, 3: 2, 4: 1, ...}"
                if code == 5:
                    hint = (
                        "code 5 is not in the original cranqrel: some 'corrected' copies "
                        "replace the -1 artifact with 5, which wrongly makes it the most "
                        "relevant grade; use the original file"
                    )
                raise DataError(
                    f"relevance code {code} has no grade",
                    path=path,
                    line=lineno,
                    expected=f"one of {sorted(cfg.grades)} or -1",
                    got=str(code),
                    hint=hint,
                )
            qrels.add(ids[position - 1], doc, label, lineno)
        if artifacts and cfg.minus_one == "drop":
            warn(
                f"{artifacts} code -1 line(s) in {path} were dropped: an artifact, not a "
                "judgment (dataset.minus_one=drop)"
            )
        return qrels, artifacts


@corpus("cranfield", config=CranfieldCorpusConfig)
@dataclass(eq=False)
class CranfieldCorpus:
    """The 1400 Cranfield abstracts (cran.all.1400); title, authors, bibliography as metadata."""

    config: CranfieldCorpusConfig
    context: PluginContext

    def load(self) -> Corpus:
        cfg = self.config
        path = _files(cfg.path, "corpus", docs_file=(cfg.docs_file, "documents file"))["docs_file"]
        raw = read_cran_docs(path, stray_markers=cfg.stray_markers)
        docs: list[Document] = []
        empty: list[str] = []
        for d in raw:
            title, body = d.value("T"), d.value("W", sep="\n")
            if not title and not body:
                if cfg.empty_docs == "error":
                    raise DataError(
                        f"document {d.id} has no title and no text",
                        path=path,
                        line=d.line,
                        hint="set corpus.empty_docs=keep or corpus.empty_docs=drop",
                    )
                empty.append(d.id)
                if cfg.empty_docs == "drop":
                    continue
            text = f"{title}\n{body}" if cfg.include_title and title else body
            meta = {
                k: v
                for k, v in (
                    ("title", title),
                    ("authors", d.value("A")),
                    ("bibliography", d.value("B")),
                )
                if v
            }
            docs.append(Document(id=d.id, text=text, metadata=meta))
        stray = [d.id for d in raw if d.stray]
        if stray:
            warn(
                f"{len(stray)} document(s) in {path} have stray field markers (after .W or "
                "repeating a field); the markers were ignored and their lines kept in the text "
                f"(corpus.stray_markers=text): {shown(stray)}"
            )
        if empty:
            done = "dropped" if cfg.empty_docs == "drop" else "kept as empty documents"
            warn(
                f"{len(empty)} document(s) in {path} have no title and no text; {done} "
                f"(corpus.empty_docs={cfg.empty_docs}): {shown(empty)}"
            )
        if not docs:
            raise DataError(
                "the corpus is empty",
                path=path,
                expected="at least one document",
                hint="every document was dropped; set corpus.empty_docs=keep",
            )
        return Corpus.build(cfg.corpus_name, docs)
