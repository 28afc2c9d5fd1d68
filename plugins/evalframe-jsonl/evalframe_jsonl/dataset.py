"""The B.O.B golden-set format: JSON Lines of questions with expected chunk ids.

One record per line::

    {"id": 1, "question": "How do I install B.O.B?", "expected_chunks": [5, 6],
     "expected_answer": null, "difficulty": "easy", "category": "installation",
     "notes": "README installation section"}

``expected_chunks: []`` marks a negative example (nothing should match). A
mapping ``{"chunk": label}`` is accepted too, for graded judgments. Every
other field is kept as metadata, so ``difficulty`` and ``category`` become
slices. A folder of ``*.jsonl`` files loads as one set with a ``domain``
field taken from each file name.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field

from evalframe.core.errors import DataError
from evalframe.core.messages import Tally, warn
from evalframe.core.reader import read_jsonl, require_file
from evalframe.core.records import (
    LABEL_MAX,
    LABEL_MIN,
    At,
    UniqueIds,
    id_problem,
    warn_ids_not_in_corpus,
)
from evalframe.core.types import GoldenQuery, GoldenSet, is_plain_id, normalise_id
from evalframe.plugin.protocols import PluginConfig, PluginContext
from evalframe.plugin.registry import dataset

REQUIRED = ("id", "question", "expected_chunks")


class JsonlDatasetConfig(PluginConfig):
    """Where the golden set is."""

    path: str = Field(description="a .jsonl file, or a folder of per-domain *.jsonl files")
    set_name: str | None = Field(None, description="golden-set name (default: the file name)")
    domain_field: str = Field("domain", description="slice field set from each file's name")


def _judgments(value: Any, at: At) -> dict[str, int]:
    if isinstance(value, list):
        out: dict[str, int] = {}
        for item in value:
            problem = id_problem(item)
            if problem is not None:  # says which: not a string, empty, or a space inside
                raise at.error(
                    f"field 'expected_chunks' must list chunk ids: {repr(item)[:60]} {problem}",
                    got=repr(item),
                    hint='write chunk ids as 12 or "12", one word each',
                )
            # the id as kept ("c1 " is "c1"), so a repeat is one however it is spaced
            out[str(normalise_id(item))] = 1
        if len(out) != len(value):
            raise at.error(
                "field 'expected_chunks' lists the same chunk twice",
                got=repr(value),
                hint="list each expected chunk once (ids are compared without surrounding spaces)",
            )
        return out
    if isinstance(value, dict):
        return at.graded(value, "expected_chunks", noun="chunk")
    hint = None
    if isinstance(value, str):
        hint = f'write it as a JSON list: "expected_chunks": [{value}]'
    raise at.error(
        "field 'expected_chunks' must be a list of ids (or {id: label} for graded judgments)",
        got=repr(value),
        hint=hint,
    )


def _plain_ids(ids: list[str]) -> bool:
    """Whether every id is a one-word string already in normal form (``is_plain_id``):
    one look at their joined text, where a space or an unprintable character in any
    of them shows, and none may be empty."""
    return all(ids) and is_plain_id("".join(ids)) if ids else True


#: The warning for query ids that are also chunk ids (after its count).
COLLISION = (
    "query id(s) are also chunk ids of the corpus, so runs and reports cannot tell them "
    "apart (renumber the questions, e.g. q101, or the chunks)"
)


@dataset("jsonl", config=JsonlDatasetConfig)
@dataclass(eq=False)
class JsonlDataset:
    """B.O.B JSONL golden set (id, question, expected_chunks, difficulty, category, notes)."""

    config: JsonlDatasetConfig
    context: PluginContext

    def _files(self) -> list[tuple[Path, str | None]]:
        root = require_file(
            self.config.path,
            what="golden set",
            key="dataset.path",
            expected="an existing .jsonl file, or a folder of them (one per domain)",
        )
        if root.is_dir():
            files = sorted(root.glob("*.jsonl"))
            if not files:
                raise DataError(
                    "the golden-set folder has no *.jsonl files",
                    path=root,
                    hint="put one <domain>.jsonl file per domain in it",
                )
            # what the folder holds besides (travel.JSONL, sports.json, a subfolder) is not
            # read: said, or its questions would be missing from the set without a word
            others = sorted(
                p.name + ("/" if p.is_dir() else "")
                for p in root.iterdir()
                if p not in files and not p.name.startswith(".")
            )
            if others:
                shown = ", ".join(others[:5]) + (
                    f" and {len(others) - 5} more" if len(others) > 5 else ""
                )
                warn(
                    f"{root}: {len(others)} entr{'y is' if len(others) == 1 else 'ies are'} not "
                    f"*.jsonl and not read as part of the golden set: {shown} (a folder loads "
                    "every <domain>.jsonl file in it; rename a file that belongs to the set)"
                )
            return [(f, f.stem) for f in files]
        return [(root, None)]

    def load(self) -> GoldenSet:
        queries: list[GoldenQuery] = []
        seen = UniqueIds("query id", hint="give every question its own id")
        files = self._files()
        chunks = self.context.corpus.ids() if self.context.corpus is not None else frozenset()
        with Tally() as tally:  # said once, with the count, after the whole set is read
            for path, domain in files:
                for lineno, record in read_jsonl(path, what="golden set", key="dataset.path"):
                    query = self._plain(record, domain, seen, path, lineno)
                    if query is None:  # anything unusual: every located check, or its error
                        query = self._query(record, At(path, lineno), domain, seen)
                    if query.id in chunks:
                        tally.add(COLLISION, query.id, where=f"{path}:{lineno}")
                    queries.append(query)
        if not queries:
            raise DataError(
                "the golden set has no queries",
                path=files[0][0],
                expected="one JSON object per line, each a question with its expected chunks",
                hint="add questions (`evalframe golden create FILE --corpus CORPUS` asks for "
                "them), or point dataset.path at the golden set",
            )
        root = Path(self.config.path)
        warn_ids_not_in_corpus(queries, self.context.corpus, "expected chunk")
        return GoldenSet.build(
            self.config.set_name or root.stem,
            queries,
            provenance={"format": "jsonl", "path": str(root), "files": [str(p) for p, _ in files]},
        )

    def _plain(
        self, record: Any, domain: str | None, seen: UniqueIds, path: Path, lineno: int
    ) -> GoldenQuery | None:
        """The usual record as :meth:`_query` would build it, or None for any other.

        Usual: an object whose id is a one-word string (or an integer) first seen
        here, whose question is non-empty text, and whose judgments are a list of
        one-word string ids, or a mapping of them to whole-number labels, with no
        id twice. These pass :meth:`_query`'s checks by construction, so the query
        is built without them and without pydantic's second look (10k queries:
        0.25 s less of every run and rescore). Anything else returns None, and
        :meth:`_query` says what is wrong with it, at its line.
        """
        if type(record) is not dict:
            return None
        qid, question = record.get("id"), record.get("question")
        chunks = record.get("expected_chunks")
        if type(qid) is int:  # not a bool, whose type is bool
            qid = str(qid)
        elif type(qid) is not str or not is_plain_id(qid):
            return None
        if type(question) is not str or not question.strip():
            return None
        if type(chunks) is list:
            if not all(type(c) is str for c in chunks) or not _plain_ids(chunks):
                return None
            judgments = dict.fromkeys(chunks, 1)
        elif type(chunks) is dict:
            if not _plain_ids(list(chunks)):
                return None
            for label in chunks.values():
                if type(label) is not int or not LABEL_MIN <= label <= LABEL_MAX:
                    return None
            judgments = dict(chunks)
        else:
            return None
        if len(judgments) != len(chunks) or not seen.add_new(qid, path, lineno):
            return None  # a repeated chunk or query id: said by _query, with both places
        metadata = {k: v for k, v in record.items() if k not in REQUIRED}
        if domain is not None:
            metadata.setdefault(self.config.domain_field, domain)
        return GoldenQuery.checked(qid, question, judgments, metadata)

    def _query(self, record: Any, at: At, domain: str | None, seen: UniqueIds) -> GoldenQuery:
        fields = at.mapping(
            record,
            "golden-set line",
            hint='write one question per line as an object: {"id": "q1", "question": "...", '
            '"expected_chunks": ["doc-1"]} (docs/golden-sets.md)',
        )
        if "expected_chunks" not in fields and all(
            f in fields for f in REQUIRED if f != "expected_chunks"
        ):
            hint = 'a negative example still needs "expected_chunks": []'
        else:
            hint = 'each line is {"id": ..., "question": ..., "expected_chunks": [...]}'
        at.require(fields, REQUIRED, hint=hint)
        qid = at.ident(fields["id"], "id")
        seen.add(qid, at)
        question = at.text(fields["question"], "question")
        metadata = {k: v for k, v in fields.items() if k not in REQUIRED}
        if domain is not None:
            metadata.setdefault(self.config.domain_field, domain)
        return GoldenQuery(
            id=qid,
            text=question,
            judgments=_judgments(fields["expected_chunks"], at),
            metadata=metadata,
        )
