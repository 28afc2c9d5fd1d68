"""Corpus manifests: a run answered from the cache need not read its corpus.

The retrieval cache's keys need the corpus's content hash, and the dataset's
checks its ids; neither needs the documents. When a corpus loader names the
files it reads (``sources()``), the corpus's name, hash and each document's
hash (the run folder's ``corpus_manifest.json``, keyed by id) are kept in
the cache folder's entry store (namespace ``corpora``) under a key of the
loader's name, version and config (and the hash of its code when the version
does not pin it: :func:`evalframe.plugin.codeid.code_identity`) and each
source's path, size, modification and change times and inode. A later run
with the same key gets a :meth:`~evalframe.core.types.Corpus.deferred` corpus:
the documents are read only if something asks for them (a bm25 index to
build, a query not in the cache), and then checked against the kept hash.

A file cannot be rewritten without changing its change time (``st_ctime``,
which no tool can set), so a stale manifest needs a file edited in place
within the file system's timestamp resolution and to the same size.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from evalframe.core.errors import DataError
from evalframe.core.store import open_store
from evalframe.core.types import Corpus, content_hash, document_hash
from evalframe.plugin.codeid import code_identity

__all__ = ["FORMAT", "checked_load", "checked_texts", "manifest_key", "with_manifest"]

#: Bump when the manifest's layout changes.
FORMAT = 2


def manifest_key(
    name: str,
    version: str | None,
    config: BaseModel | None,
    sources: Sequence[Path],
    *,
    module: str | None = None,
) -> str | None:
    """The key of a corpus read by this loader from these files; None if one is missing.

    ``module`` registered the loader: when its version does not pin its code (an
    editable install, a module on ``PYTHONPATH``), the code's hash joins the key, so a
    loader fixed in place reads its files again instead of the old reading's hashes.
    """
    stamps: list[list[Any]] = []
    for source in sources:
        try:
            st = Path(source).stat()
        except OSError:
            return None  # the loader will say what is wrong with it
        stamps.append(
            [str(Path(source).resolve()), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
        )
        if Path(source).is_dir():
            return None  # a folder's files are not listed: read it every time
    key: dict[str, Any] = {
        "format": FORMAT,
        "loader": name,
        "version": version,
        "config": config.model_dump(mode="json") if config is not None else None,
        "sources": stamps,
    }
    code = code_identity(module) if module else None
    if code is not None:  # absent otherwise: a release's manifests keep their keys
        key["code"] = code
    return content_hash(key)


def with_manifest(
    loader: Any,
    spec: Any,
    config: Any,
    cache_dir: Path,
    load: Callable[[], Corpus] | None = None,
) -> Corpus:
    """The loader's corpus: deferred when its manifest is cached, else loaded (and kept).

    ``load`` reads the corpus (default: ``loader.load``; the pipeline wraps it
    to turn a record the data model refuses into a located error).
    """
    load = load or loader.load
    sources = getattr(loader, "sources", None)
    key = (
        manifest_key(
            spec.name, spec.version, config, list(sources()), module=getattr(spec, "module", None)
        )
        if callable(sources)
        else None
    )
    if key is None:
        return load()
    store = open_store(cache_dir, "corpora")
    text = store.get(key)
    if text is not None:
        try:
            kept = json.loads(text)
            name, digest, hashes = str(kept["name"]), str(kept["content_hash"]), kept["documents"]
            if not isinstance(hashes, dict):
                raise TypeError("documents")
        except (ValueError, KeyError, TypeError):
            pass  # damaged: read the corpus and keep a new manifest
        else:
            return Corpus.deferred(
                name,
                digest,
                hashes,
                checked_load(load, digest),
                texts=checked_texts(loader, hashes),
            )
    corpus = load()
    hashes = {d.id: document_hash(d.text) for d in corpus.documents}
    manifest = {"name": corpus.name, "content_hash": corpus.content_hash, "documents": hashes}
    store.put(key, json.dumps(manifest, ensure_ascii=False))
    # the documents as read, with their hashes known: the run folder's manifest needs them
    return Corpus.deferred(
        corpus.name, corpus.content_hash, hashes, lambda: corpus, corpus.documents
    )


def checked_texts(
    loader: Any, hashes: Mapping[str, str]
) -> Callable[[Collection[str]], dict[str, str]] | None:
    """The loader's ``texts(ids)`` (None when it has none), refusing a text that is not
    the one the manifest's hash says: its document changed since the corpus was read."""
    read = getattr(loader, "texts", None)
    if not callable(read):
        return None

    def texts(ids: Collection[str]) -> dict[str, str]:
        found = dict(read(ids))
        for doc_id in ids:
            text = found.get(doc_id)
            if text is None or document_hash(text) != hashes.get(doc_id):
                raise DataError(
                    f"document {doc_id!r} is not the one the corpus was read with: "
                    + ("it is gone" if text is None else "its text changed")
                    + " since then (the corpus's files changed meanwhile)",
                    hint="run again once nothing is writing the corpus files",
                )
        return found

    return texts


def checked_load(load: Callable[[], Corpus], digest: str) -> Callable[[], Corpus]:
    """``load``, refusing a corpus whose content is not the one ``digest`` says."""

    def again() -> Corpus:
        corpus = load()
        if corpus.content_hash != digest:
            raise DataError(
                f"corpus {corpus.name!r} is not the one this run started from (content hash "
                f"{digest} then, {corpus.content_hash} now): its files changed meanwhile",
                hint="run again once nothing is writing the corpus files",
            )
        return corpus

    return again
