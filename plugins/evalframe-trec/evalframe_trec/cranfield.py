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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from evalframe.core.errors import DataError
from evalframe.core.io import require_file
from evalframe.core.types import Corpus, Document, GoldenQuery, GoldenSet
from evalframe.plugin.protocols import PluginConfig, PluginContext
from evalframe.plugin.registry import corpus, dataset
from evalframe_trec._common import (
    Qrels,
    UnjudgedPolicy,
    apply_unjudged_policy,
    iter_lines,
    parse_int,
    shown,
    warn,
    warn_unknown_doc_ids,
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


def _folder(path: str | None, key: str) -> Path:
    if path is None:
        return PACKAGED
    root = require_file(path, what="Cranfield folder", key=key)
    if not root.is_dir():
        raise DataError(
            f"the Cranfield path is a file, not a folder: {root}",
            key=key,
            expected="the folder holding cran.all.1400, cran.qry and cranqrel",
            hint="point the path at the folder (or leave it null for the packaged copy)",
        )
    return root


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


# -- queries ----------------------------------------------------------------------


@dataclass(frozen=True)
class CranQuery:
    position: int
    number: str  # the .I number as written, e.g. "004"
    text: str
    line: int


def _id_token(line: str, path: Path, lineno: int, what: str) -> str:
    m = _ID_LINE.match(line)
    token = (m.group(1) or "") if m else ""
    if not token or not token.isdigit():
        raise DataError(
            f"a {what} .I line must carry one whole number",
            path=path,
            line=lineno,
            expected=".I <number>",
            got=repr(line[:60]),
            hint="every record starts with a line '.I' and its number, e.g. '.I 12'",
        )
    return token


@dataclass
class _RawQuery:
    number: str
    line: int
    text: list[str] | None = None  # None until its .W marker


def read_cran_queries(path: Path) -> list[CranQuery]:
    """Queries of ``cran.qry`` in file order, numbered by position from 1."""
    found: list[_RawQuery] = []
    seen: dict[int, int] = {}  # .I number -> line (001 and 1 are the same query)
    for lineno, line in iter_lines(path, what="Cranfield queries file", key="dataset.path"):
        if line.startswith(".I") and _ID_LINE.match(line):
            number = _id_token(line, path, lineno, "query")
            if int(number) in seen:
                raise DataError(
                    f"query .I {number} appears twice (first on line {seen[int(number)]})",
                    path=path,
                    line=lineno,
                    hint="every query needs its own .I number",
                )
            seen[int(number)] = lineno
            found.append(_RawQuery(number, lineno))
            continue
        current = found[-1] if found else None
        m = _MARKER.match(line)
        if m:
            if current is None:
                raise DataError(
                    "a field marker before the first .I line",
                    path=path,
                    line=lineno,
                    hint="the file must start with a line '.I <number>'",
                )
            if m.group(1) != "W" or current.text is not None:
                raise DataError(
                    f"unexpected field marker .{m.group(1)} in a query",
                    path=path,
                    line=lineno,
                    expected="each query is .I <number>, then .W and its text",
                    hint="a query has one .W field; is this a documents file?",
                )
            current.text = []
            continue
        if current is None or current.text is None:
            if line.strip():
                raise DataError(
                    "query text before its .W marker",
                    path=path,
                    line=lineno,
                    got=repr(line[:60]),
                    expected="each query is .I <number>, then .W and its text",
                    hint="put a line '.W' before the query text",
                )
            continue
        current.text.append(line)
    queries = []
    for position, raw in enumerate(found, start=1):
        text = " ".join(" ".join(raw.text or []).split())
        if not text:
            raise DataError(
                f"query .I {raw.number} has no text",
                path=path,
                line=raw.line,
                expected=".W followed by the query text",
                hint="add the query text after its .W line, or remove the query",
            )
        queries.append(CranQuery(position, raw.number, text, raw.line))
    if not queries:
        raise DataError(
            "the queries file has no .I entries",
            path=path,
            expected=".I <number>",
            hint="is this the right file? (cran.all.1400, cran.qry or cranqrel)",
        )
    return queries


# -- documents --------------------------------------------------------------------


@dataclass
class CranDoc:
    id: str
    line: int
    fields: dict[str, list[str]] = field(default_factory=dict)
    stray: list[int] = field(default_factory=list)  # lines of ignored markers
    current: str | None = None

    def value(self, name: str, sep: str = " ") -> str:
        lines = [ln.strip() for ln in self.fields.get(name, [])]
        if sep == " ":
            return " ".join(" ".join(lines).split())
        return sep.join(ln for ln in lines if ln)


def read_cran_docs(path: Path, *, stray_markers: str = "text") -> list[CranDoc]:
    """Documents of ``cran.all.1400`` with their raw fields, in file order."""
    docs: list[CranDoc] = []
    seen: dict[str, int] = {}
    for lineno, line in iter_lines(path, what="Cranfield documents file", key="corpus.path"):
        if line.startswith(".I") and _ID_LINE.match(line):
            doc_id = str(int(_id_token(line, path, lineno, "document")))
            if doc_id in seen:
                raise DataError(
                    f"document .I {doc_id} appears twice (first on line {seen[doc_id]})",
                    path=path,
                    line=lineno,
                    hint="document ids must be unique",
                )
            seen[doc_id] = lineno
            docs.append(CranDoc(doc_id, lineno))
            continue
        m = _MARKER.match(line)
        doc = docs[-1] if docs else None
        if m:
            name = m.group(1)
            if doc is None:
                raise DataError(
                    "a field marker before the first .I line",
                    path=path,
                    line=lineno,
                    hint="the file must start with a line '.I <id>'",
                )
            if name not in "TABW":
                raise DataError(
                    f"unknown field marker .{name}",
                    path=path,
                    line=lineno,
                    expected=".T, .A, .B or .W",
                    hint="Cranfield documents have only the fields .T, .A, .B and .W",
                )
            if name in doc.fields or "W" in doc.fields:
                if stray_markers == "error":
                    raise DataError(
                        f"document {doc.id}: field marker .{name} after .W or repeated",
                        path=path,
                        line=lineno,
                        hint="set corpus.stray_markers=text to keep its lines in the text",
                    )
                doc.stray.append(lineno)  # the lines go on in the field before it
                continue
            doc.fields[name] = []
            doc.current = name
            continue
        if doc is None or doc.current is None:
            if line.strip():
                raise DataError(
                    "text before the first field marker of a document",
                    path=path,
                    line=lineno,
                    got=repr(line[:60]),
                    expected=".I <id>, then .T, .A, .B and .W",
                    hint="put a field marker such as '.T' or '.W' before the text",
                )
            continue
        doc.fields[doc.current].append(line)
    for doc in docs:
        if "W" not in doc.fields:
            raise DataError(
                f"document {doc.id} has no .W field",
                path=path,
                line=doc.line,
                expected=".I <id>, then .T, .A, .B and .W",
                hint="add a .W line (it may be followed by no text)",
            )
    if not docs:
        raise DataError(
            "the documents file has no .I entries",
            path=path,
            expected=".I <id>",
            hint="is this the right file? (cran.all.1400, cran.qry or cranqrel)",
        )
    return docs


# -- loaders ----------------------------------------------------------------------


@dataset("cranfield", config=CranfieldDatasetConfig)
class CranfieldDataset:
    """Cranfield queries and judgments (cran.qry + cranqrel), quirks handled explicitly."""

    def __init__(self, config: CranfieldDatasetConfig, context: PluginContext) -> None:
        self.config = config
        self.context = context

    def load(self) -> GoldenSet:
        cfg = self.config
        root = _folder(cfg.path, "dataset.path")
        qry_path = require_file(
            root / cfg.queries_file, what="Cranfield queries file", key="dataset.queries_file"
        )
        qrels_path = require_file(
            root / cfg.qrels_file, what="Cranfield judgments file", key="dataset.qrels_file"
        )
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
        warn_unknown_doc_ids(queries, self.context.corpus)
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

    def _qrels(self, path: Path, ids: list[str]) -> tuple[Qrels, int]:
        """Judgments keyed by query id; cranqrel's first column is a position in cran.qry."""
        cfg = self.config
        qrels = Qrels(path)
        artifacts = 0
        for lineno, line in iter_lines(path, what="Cranfield judgments file", key="dataset.path"):
            cols = line.split()
            if not cols:
                continue
            if len(cols) != 3:
                raise DataError(
                    f"a cranqrel line has {len(cols)} column(s)",
                    path=path,
                    line=lineno,
                    expected="3 columns: query-position doc-id code",
                    got=repr(line.strip()[:80]),
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
class CranfieldCorpus:
    """The 1400 Cranfield abstracts (cran.all.1400); title, authors, bibliography as metadata."""

    def __init__(self, config: CranfieldCorpusConfig, context: PluginContext) -> None:
        self.config = config

    def load(self) -> Corpus:
        cfg = self.config
        root = _folder(cfg.path, "corpus.path")
        path = require_file(
            root / cfg.docs_file, what="Cranfield documents file", key="corpus.docs_file"
        )
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
