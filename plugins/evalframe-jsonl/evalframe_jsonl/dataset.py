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

import sys
from pathlib import Path
from typing import Any

from pydantic import Field

from evalframe.core.errors import DataError
from evalframe.core.io import read_jsonl, require_file
from evalframe.core.records import At, UniqueIds
from evalframe.core.types import GoldenQuery, GoldenSet
from evalframe.plugin.protocols import PluginConfig, PluginContext
from evalframe.plugin.registry import dataset

REQUIRED = ("id", "question", "expected_chunks")


class JsonlDatasetConfig(PluginConfig):
    """Where the golden set is."""

    path: str = Field(description="a .jsonl file, or a folder of per-domain *.jsonl files")
    set_name: str | None = Field(None, description="golden-set name (default: the file name)")
    domain_field: str = Field("domain", description="slice field set from each file's name")


def _judgments(value: Any, path: Path, line: int) -> dict[str, int]:
    if isinstance(value, list):
        out: dict[str, int] = {}
        for item in value:
            if isinstance(item, bool) or not isinstance(item, (str, int)) or item == "":
                raise DataError(
                    "field 'expected_chunks' must list chunk ids (strings or integers)",
                    path=path,
                    line=line,
                    got=repr(item),
                )
            out[str(item)] = 1
        if len(out) != len(value):
            raise DataError(
                "field 'expected_chunks' lists the same chunk twice",
                path=path,
                line=line,
                got=repr(value),
                hint="list each expected chunk once",
            )
        return out
    if isinstance(value, dict):
        graded: dict[str, int] = {}
        for key, label in value.items():
            if isinstance(label, bool) or not isinstance(label, int):
                raise DataError(
                    f"graded label for chunk {key!r} must be an integer",
                    path=path,
                    line=line,
                    got=repr(label),
                )
            graded[str(key)] = label
        return graded
    hint = None
    if isinstance(value, str):
        hint = f'write it as a JSON list: "expected_chunks": [{value}]'
    raise DataError(
        "field 'expected_chunks' must be a list of ids (or {id: label} for graded judgments)",
        path=path,
        line=line,
        got=repr(value),
        hint=hint,
    )


@dataset("jsonl", config=JsonlDatasetConfig)
class JsonlDataset:
    """B.O.B JSONL golden set (id, question, expected_chunks, difficulty, category, notes)."""

    def __init__(self, config: JsonlDatasetConfig, context: PluginContext) -> None:
        self.config = config
        self.context = context

    def _files(self) -> list[tuple[Path, str | None]]:
        root = require_file(self.config.path, what="golden set", key="dataset.path")
        if root.is_dir():
            files = sorted(root.glob("*.jsonl"))
            if not files:
                raise DataError(
                    "the golden-set folder has no *.jsonl files",
                    path=root,
                    hint="put one <domain>.jsonl file per domain in it",
                )
            return [(f, f.stem) for f in files]
        return [(root, None)]

    def load(self) -> GoldenSet:
        queries: list[GoldenQuery] = []
        seen = UniqueIds("query id", hint="give every question its own id")
        files = self._files()
        for path, domain in files:
            for lineno, record in read_jsonl(path, what="golden set"):
                queries.append(self._query(record, At(path, lineno), domain, seen))
        if not queries:
            raise DataError("the golden set has no queries", path=files[0][0])
        root = Path(self.config.path)
        self._warn_unknown_ids(queries)
        return GoldenSet.build(
            self.config.set_name or root.stem,
            queries,
            provenance={"format": "jsonl", "path": str(root), "files": [str(p) for p, _ in files]},
        )

    def _query(self, record: Any, at: At, domain: str | None, seen: UniqueIds) -> GoldenQuery:
        fields = at.mapping(record, "golden-set line")
        at.require(fields, REQUIRED, hint='a negative example still needs "expected_chunks": []')
        qid = at.ident(fields["id"], "id")
        seen.add(qid, at)
        question = at.text(fields["question"], "question")
        metadata = {k: v for k, v in fields.items() if k not in REQUIRED}
        if domain is not None:
            metadata.setdefault(self.config.domain_field, domain)
        return GoldenQuery(
            id=qid,
            text=question,
            judgments=_judgments(fields["expected_chunks"], at.path, at.line),
            metadata=metadata,
        )

    def _warn_unknown_ids(self, queries: list[GoldenQuery]) -> None:
        corpus = self.context.corpus
        if corpus is None:
            return
        known = corpus.ids()
        unknown = sorted({d for q in queries for d in q.judgments if d not in known})
        if unknown:
            shown = ", ".join(unknown[:10]) + (" …" if len(unknown) > 10 else "")
            print(
                f"warning: {len(unknown)} expected chunk id(s) are not in corpus "
                f"{corpus.name!r} and can never be retrieved: {shown}",
                file=sys.stderr,
            )
