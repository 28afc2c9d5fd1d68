"""JSONL corpus loader: one document per line."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import Field

from evalframe.core.errors import DataError
from evalframe.core.reader import read_jsonl
from evalframe.core.records import At, UniqueIds
from evalframe.core.types import Corpus, Document
from evalframe.plugin.protocols import PluginConfig, PluginContext
from evalframe.plugin.registry import corpus


class JsonlCorpusConfig(PluginConfig):
    """Where the corpus is and which fields hold the id and the text."""

    path: str = Field(description="JSONL file, one document per line")
    id_field: str = Field("id", description="field holding the document id")
    text_field: str = Field("text", description="field holding the document text")
    title_field: str | None = Field(
        None, description="optional field prepended to the text (e.g. a heading)"
    )


@corpus("jsonl", config=JsonlCorpusConfig)
@dataclass(eq=False)
class JsonlCorpus:
    """Documents from a JSONL file ({id, text, ...}); other fields become metadata."""

    config: JsonlCorpusConfig
    context: PluginContext

    def sources(self) -> list[Path]:
        """The one file this loader reads (lets a fully cached run skip reading it)."""
        return [Path(self.config.path).expanduser()]

    def load(self) -> Corpus:
        cfg = self.config
        path = Path(cfg.path)
        docs: list[Document] = []
        seen = UniqueIds("document id", hint="document ids must be unique")
        for lineno, record in read_jsonl(path, what="corpus file", key="corpus.path"):
            at = At(path, lineno)
            fields = at.mapping(record, "corpus line")
            at.require(
                fields,
                (cfg.id_field, cfg.text_field),
                hint="set corpus.id_field / corpus.text_field to your field names",
            )
            doc_id = at.ident(fields[cfg.id_field], cfg.id_field)
            seen.add(doc_id, at)
            text = at.text(fields[cfg.text_field], cfg.text_field, allow_empty=True)
            if cfg.title_field and fields.get(cfg.title_field):
                text = f"{fields[cfg.title_field]}\n{text}"
            meta = {k: v for k, v in fields.items() if k not in (cfg.id_field, cfg.text_field)}
            # id and text are checked just above: building without pydantic's second
            # look halves the time of a 100k-document corpus
            docs.append(Document.model_construct(id=doc_id, text=text, metadata=meta))
        if not docs:
            raise DataError("the corpus is empty", path=path, expected="at least one document")
        return Corpus.build(path.stem, docs)
