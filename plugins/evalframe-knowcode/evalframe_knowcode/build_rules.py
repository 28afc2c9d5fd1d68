"""KnowCode's rules as ``evalframe golden build`` asks for them (``format: knowcode``).

The build's engine is generic orchestration; what a record must satisfy is
the format's. For KnowCode these are the functions that already check a
committed golden set, reused here on the pipeline's records:

- the mechanical gate (§5) and the authoring rules: :func:`check_record` and
  :func:`authoring_findings`;
- Step C's de-duplication and §6's structural agreement:
  :func:`deduplicate_candidates` and :func:`labels_agree`;
- the source tree (a folder or a Git revision) and the SHA-256 of its files,
  written into the meta file as the drift guard's ``source_file_hashes``;
- loading the blessed set through the ``knowcode`` dataset loader, so its
  drift guard (``allow_drift``) decides whether a later batch may build on it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from evalframe_knowcode.authoring import AuthoringLevel, authoring_findings
from evalframe_knowcode.checks import (
    SourceIndex,
    check_record,
    deduplicate_candidates,
    entity_ids,
    labels_agree,
)
from evalframe_knowcode.source import open_tree, select

__all__ = ["KnowCodeBuildRules"]


class KnowCodeBuildRules:
    """The gate, de-duplication, agreement and source hashes over one source tree."""

    def __init__(self, root: str | Path, rev: str | None = None, *, loader: Any = None) -> None:
        self.root = str(root)
        self.rev = rev
        #: the knowcode dataset plugin's class, which reads a blessed version
        self.loader = loader
        self.tree = open_tree(root, rev, key="source.root", rev_key="source.rev")
        self.index = SourceIndex(self.tree)

    @property
    def label(self) -> str:
        return self.tree.label

    def python_files(self) -> list[str]:
        return select(self.tree.files())

    def file_hash(self, rel: str) -> str | None:
        if not self.tree.exists(rel):
            return None
        return hashlib.sha256(self.tree.read_bytes(rel)).hexdigest()

    def fingerprint(self) -> str:
        """One hash of every Python file's content: part of each role call's cache key."""
        digest = hashlib.sha256()
        for rel in self.python_files():
            digest.update(f"{rel}\0{self.file_hash(rel)}\n".encode())
        return digest.hexdigest()[:32]

    def file_hashes(self, files: Iterable[str]) -> dict[str, str]:
        out = {}
        for rel in sorted(set(files)):
            value = self.file_hash(rel)
            if value is not None:
                out[rel] = value
        return out

    def cited_files(self, record: Mapping[str, Any]) -> set[str]:
        """The files a record's labels depend on (expected files, ranges, evidence)."""
        files = {f for f in record.get("expected_files") or [] if isinstance(f, str)}
        for name in ("expected_line_ranges", "source_evidence"):
            for item in record.get(name) or []:
                if isinstance(item, Mapping) and isinstance(item.get("file"), str):
                    files.add(item["file"])
        return files

    def gate(self, record: Mapping[str, Any]) -> list[tuple[str, str]]:
        """§5 on an OracleAnswer: ``(check, message)`` per failure."""
        return [(f.check, f.message) for f in check_record(record, self.index)]

    def authoring(self, record: Mapping[str, Any], level: str) -> list[tuple[str, str]]:
        if level == "off":
            return []
        level = "warning" if level not in ("error", "warning") else level
        findings = authoring_findings(record, level=cast(AuthoringLevel, level))  # type: ignore[arg-type]
        return [(f.check, f.message) for f in findings]

    def targets(self, record: Mapping[str, Any]) -> list[str]:
        return entity_ids(record.get("target_entity_ids") or record.get("expected_entities"))

    def dedupe(
        self,
        candidates: Sequence[Mapping[str, Any]],
        prior: Sequence[Mapping[str, Any]],
        max_overlap: float,
    ) -> dict[str, str | None]:
        """Step C: ``{query id: None (accepted) or the reason it was rejected}``.

        ``prior`` (the blessed set's records) counts as already accepted, so a
        later batch never re-labels what the set already covers.
        """
        result = deduplicate_candidates([*prior, *candidates], max_overlap=max_overlap)
        mine = {id(c) for c in candidates}
        out: dict[str, str | None] = {}
        for cand in result.accepted:
            if id(cand) in mine:
                out[str(cand["query_id"])] = None
        for cand, reason in result.rejected:
            if id(cand) in mine:
                out[str(cand["query_id"])] = reason
        return out

    def agreement(
        self, oracle: Mapping[str, Any], supported: Mapping[str, Any], threshold: float
    ) -> tuple[float, float, bool]:
        """§6 condition 1: Jaccard of entities and of files, each >= ``threshold``."""
        result = labels_agree(oracle, supported, threshold=threshold)
        return result.entities, result.files, result.passed

    def load_blessed(self, path: Path, allow_drift: bool) -> list[dict[str, Any]]:
        """The records of a blessed version, after the knowcode loader's checks and its
        drift guard against this source (``allow_drift``: warn instead of stop)."""
        from evalframe.core.reader import read_json_array
        from evalframe.plugin.protocols import PluginContext

        settings = {"path": str(path), "source_root": self.root, "source_rev": self.rev}
        config = self.loader.config_model(**settings, allow_drift=allow_drift)
        loader = self.loader(config, PluginContext(config_key="allow_drift"))
        from evalframe_knowcode.source import SourceDriftError

        try:
            loader.load()
        except SourceDriftError as exc:  # said in the build's terms: its own setting
            exc.key = "allow_drift"
            exc.hint = (
                "the source changed since the blessed version: re-verify it, or build "
                "with allow_drift=true to add to it anyway (the drift is recorded)"
            )
            raise
        return [
            r for _, r in read_json_array(path, what="blessed golden set") if isinstance(r, dict)
        ]
