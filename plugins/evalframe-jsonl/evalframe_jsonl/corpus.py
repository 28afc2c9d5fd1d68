"""JSONL corpus loader: one document per line."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from evalframe.errors import DataError
from evalframe.io import read_jsonl
from evalframe.protocols import PluginConfig, PluginContext
from evalframe.registry import corpus
from evalframe.types import Corpus, Document


class JsonlCorpusConfig(PluginConfig):
    """Where the corpus is and which fields hold the id and the text."""

    path: str = Field(description="JSONL file, one document per line")
    id_field: str = Field("id", description="field holding the document id")
    text_field: str = Field("text", description="field holding the document text")
    title_field: str | None = Field(
        None, description="optional field prepended to the text (e.g. a heading)"
    )


@corpus("jsonl", config=JsonlCorpusConfig)
class JsonlCorpus:
    """Documents from a JSONL file ({id, text, ...}); other fields become metadata."""

    def __init__(self, config: JsonlCorpusConfig, context: PluginContext) -> None:
        self.config = config

    def load(self) -> Corpus:
        cfg = self.config
        path = Path(cfg.path)
        docs: list[Document] = []
        first_line: dict[str, int] = {}
        for lineno, record in read_jsonl(path, what="corpus file"):
            if not isinstance(record, dict):
                raise DataError(
                    "a corpus line must be a JSON object",
                    path=path,
                    line=lineno,
                    got=type(record).__name__,
                )
            for needed in (cfg.id_field, cfg.text_field):
                if needed not in record:
                    raise DataError(
                        f"document has no {needed!r} field",
                        path=path,
                        line=lineno,
                        expected=f"fields {cfg.id_field!r} and {cfg.text_field!r}",
                        got=f"fields {sorted(record)}",
                        hint="set corpus.id_field / corpus.text_field to your field names",
                    )
            raw_id = record[cfg.id_field]
            if not isinstance(raw_id, (str, int)) or isinstance(raw_id, bool) or raw_id == "":
                raise DataError(
                    "document id must be a non-empty string or an integer",
                    path=path,
                    line=lineno,
                    got=repr(raw_id),
                )
            doc_id = str(raw_id)
            if doc_id in first_line:
                raise DataError(
                    f"document id {doc_id!r} is duplicated (first on line {first_line[doc_id]})",
                    path=path,
                    line=lineno,
                    hint="document ids must be unique",
                )
            first_line[doc_id] = lineno
            text = record[cfg.text_field]
            if not isinstance(text, str):
                raise DataError(
                    "document text must be a string",
                    path=path,
                    line=lineno,
                    got=type(text).__name__,
                )
            if cfg.title_field and record.get(cfg.title_field):
                text = f"{record[cfg.title_field]}\n{text}"
            meta = {k: v for k, v in record.items() if k not in (cfg.id_field, cfg.text_field)}
            docs.append(Document(id=doc_id, text=text, metadata=meta))
        if not docs:
            raise DataError("the corpus is empty", path=path, expected="at least one document")
        return Corpus.build(path.stem, docs)
