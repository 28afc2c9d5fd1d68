"""KnowCode golden sets: code entities judged in two views, guarded against source drift.

``golden_v1.0.json`` is a JSON list of records::

    {"query_id": "q1", "query_text": "Find the function that parses markdown files.",
     "task_type": "locate", "difficulty": "easy",
     "expected_entities": ["src/pkg/md.py::MarkdownParser.parse_file", ...],
     "expected_files": ["src/pkg/md.py"],
     "must_mention_facts": [], "must_not_mention_facts": []}

``expected_entities`` may also hold objects ``{"entity_id", "role", "rationale"}``.
The entities are the query's judgments; the expected files are its ``files``
view, with retrieved entity ids projected to their file (the part before
``::``), so ``R(view=files)@5`` is KnowCode's file coverage@5.

``golden_v1.0.meta.json`` records a SHA-256 per source file
(``source_file_hashes``). When a listed file has changed or vanished under
``source_root``, the golden set's line ranges and entity ids may no longer be
true, so loading stops and lists the files, unless ``allow_drift`` is set: then
the run proceeds, warns, and records the drift in the golden set's provenance
(and so in ``summary.json``). With ``source_rev`` the files are read as
committed at that Git revision instead (``git show REV:path``).

The meta file's ``dataset_status`` says whether the set is blessed (§8: no
automated set is golden before the human spot-check). A status outside
``blessed_statuses`` is recorded as ``provenance.blessed = false``, and a run
that gates on such a set carries a warning in its verdict.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from pydantic import Field

from evalframe.core.errors import DataError
from evalframe.core.messages import warn
from evalframe.core.reader import read_json, read_json_array, require_file
from evalframe.core.records import At, UniqueIds, warn_ids_not_in_corpus
from evalframe.core.types import GoldenQuery, GoldenSet
from evalframe.golden.versions import list_versions, resolve_version
from evalframe.plugin.protocols import PluginConfig, PluginContext
from evalframe.plugin.registry import dataset
from evalframe_knowcode.authoring import TASK_TYPES
from evalframe_knowcode.source import SourceDriftError, SourceTree, open_tree

REQUIRED = ("query_id", "query_text", "expected_entities", "expected_files")


#: Retrieved entity ids map to their file: everything before the first "::".
FILES_PROJECTION = r"^(.*?)::"


class KnowCodeConfig(PluginConfig):
    """Where the golden set, its meta file and the code under evaluation are."""

    path: str = Field(
        description="golden_v1.0.json (a JSON list of records), or a folder of versions "
        "golden_vMAJOR.MINOR.json: the newest is loaded unless `version` pins one"
    )
    version: str | None = Field(
        None, description="pin a version (1.0) when path is a folder of versions"
    )
    meta_path: str | None = Field(
        None, description="meta file with source_file_hashes (default: <stem>.meta.json)"
    )
    source_root: str = Field(".", description="root the meta file's source paths are relative to")
    allow_drift: bool = Field(
        False, description="run even if source files changed; the drift is warned and recorded"
    )
    require_meta: bool = Field(
        True, description="a missing meta file is an error (false: skip the drift guard)"
    )
    source_rev: str | None = Field(
        None,
        description="check the drift guard against this Git revision of source_root "
        "(git show REV:path) instead of the working tree",
    )
    blessed_statuses: list[str] = Field(
        ["blessed"],
        description="meta dataset_status values of a blessed set; any other status puts a "
        "warning in the gates' verdict",
    )


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def source_drift(hashes: dict[str, str], root: Path | SourceTree) -> list[str]:
    """Files whose current SHA-256 differs from the recorded one (or that are gone).

    ``root`` is a folder or a :class:`~evalframe_knowcode.source.SourceTree` (a Git
    revision). A recorded value may carry a ``sha256:`` prefix.
    """
    changed = []
    for rel, recorded in sorted(hashes.items()):
        expected = recorded.split(":", 1)[1] if recorded.startswith("sha256:") else recorded
        if isinstance(root, Path):
            target = root / rel
            found = sha256_file(target) if target.is_file() else None
        else:
            found = hashlib.sha256(root.read_bytes(rel)).hexdigest() if root.exists(rel) else None
        if found is None:
            changed.append(f"{rel} (missing)")
        elif found != expected.lower():
            changed.append(f"{rel} (changed)")
    return changed


def _entities(value: Any, at: At) -> tuple[dict[str, int], dict[str, str]]:
    if not isinstance(value, list) or not value:
        raise at.error(
            "field 'expected_entities' must be a non-empty list",
            got=repr(value)[:80],
            hint='list entity ids like "src/pkg/mod.py::Class.method"',
        )
    judgments: dict[str, int] = {}
    roles: dict[str, str] = {}
    for item in value:
        if isinstance(item, dict):
            entity = item.get("entity_id")
            role = item.get("role")
            if isinstance(role, str):
                roles[str(entity)] = role
        else:
            entity = item
        if not isinstance(entity, str) or "::" not in entity:
            raise at.error(
                "an expected entity must be 'file_path::symbol'",
                got=repr(entity),
                hint="objects need an 'entity_id' field in that form",
            )
        if entity in judgments:
            raise at.error(
                f"expected entity {entity!r} is listed twice", hint="list each entity once"
            )
        judgments[entity] = 1
    return judgments, roles


def _files(value: Any, at: At) -> dict[str, int]:
    if not isinstance(value, list) or not all(isinstance(f, str) and f for f in value):
        raise at.error(
            "field 'expected_files' must be a list of relative file paths",
            got=repr(value)[:80],
            hint='write them like "src/pkg/mod.py"',
        )
    files = dict.fromkeys(value, 1)
    if len(files) != len(value):  # the files view would merge them, and count one hit once
        twice = sorted({f for f in value if value.count(f) > 1})
        raise at.error(
            f"field 'expected_files' lists {', '.join(map(repr, twice))} twice",
            got=repr(value)[:120],
            hint="list each expected file once",
        )
    return files


@dataset("knowcode", config=KnowCodeConfig)
@dataclass(eq=False)
class KnowCodeDataset:
    """KnowCode golden_v1.0.json: entities and files views, with the source drift guard."""

    config: KnowCodeConfig
    context: PluginContext
    config_model = KnowCodeConfig

    def _meta_path(self, golden: Path) -> Path:
        if self.config.meta_path:
            return Path(self.config.meta_path)
        return golden.with_name(f"{golden.stem}.meta.json")

    def _golden_path(self) -> Path:
        """The file to read: ``path``, or the newest (or pinned) version in that folder."""
        found = require_file(self.config.path, what="golden set", key="dataset.path")
        if found.is_dir() and not list_versions(found) and self.config.version is None:
            return found  # no versions in it: the reader says it is a folder, not a file
        return require_file(
            resolve_version(found, self.config.version), what="golden set", key="dataset.path"
        )

    @staticmethod
    def build_rules(root: str | Path, rev: str | None = None) -> Any:
        """The rules ``evalframe golden build`` applies to KnowCode records (``format:
        knowcode``): see :mod:`evalframe_knowcode.build_rules`."""
        from evalframe_knowcode.build_rules import KnowCodeBuildRules

        return KnowCodeBuildRules(root, rev, loader=KnowCodeDataset)

    def load(self) -> GoldenSet:
        golden_path = self._golden_path()
        queries = self._queries(golden_path)
        provenance: dict[str, Any] = {"format": "knowcode", "path": str(golden_path)}
        meta_path = self._meta_path(golden_path)
        if meta_path.is_file():
            provenance.update(self._check_meta(meta_path, len(queries)))
        elif self.config.require_meta:
            raise DataError(
                f"meta file not found: {meta_path}",
                key="dataset.meta_path",
                expected="golden_v1.0.meta.json with source_file_hashes beside the golden set",
                hint="set dataset.meta_path, or dataset.require_meta=false to skip the drift guard",
            )
        # an entity the code does not have (renamed, or mistyped) can never be retrieved:
        # said, as every other loader says it, rather than scored 0 without a word
        warn_ids_not_in_corpus(queries, self.context.corpus, "expected entity")
        return GoldenSet.build(
            golden_path.stem,
            queries,
            provenance=provenance,
            projections={"files": FILES_PROJECTION},
        )

    def _queries(self, path: Path) -> list[GoldenQuery]:
        queries: list[GoldenQuery] = []
        seen = UniqueIds("query id")
        for line, record in read_json_array(path, what="KnowCode golden set"):
            at = At(path, line)
            record = at.mapping(record)
            at.require(record, REQUIRED)
            qid = at.ident(record["query_id"], "query_id")
            seen.add(qid, at)
            text = at.text(record["query_text"], "query_text")
            judgments, roles = _entities(record["expected_entities"], at)
            files = _files(record["expected_files"], at)
            metadata = {k: v for k, v in record.items() if k not in (*REQUIRED, "query_id")}
            if roles:
                metadata["entity_roles"] = roles
            queries.append(
                GoldenQuery(
                    id=qid,
                    text=text,
                    judgments=judgments,
                    metadata=metadata,
                    views={"files": files},
                )
            )
        if not queries:
            raise DataError("the golden set has no records", path=path)
        _warn_off_schema(path, queries)
        return queries

    def _check_meta(self, meta_path: Path, count: int) -> dict[str, Any]:
        meta = read_json(meta_path, what="meta file", key="dataset.meta_path").data
        hashes = meta.get("source_file_hashes") if isinstance(meta, dict) else None
        if not isinstance(hashes, dict):
            raise DataError(
                "meta file has no 'source_file_hashes' mapping",
                path=meta_path,
                expected='{"source_file_hashes": {"src/pkg/mod.py": "<sha256>"}}',
            )
        recorded_count = meta.get("query_count")
        if isinstance(recorded_count, int) and recorded_count != count:
            warn(
                f"{meta_path}: query_count is {recorded_count} but the golden set has "
                f"{count} records; update the meta file"
            )
        root = Path(self.config.source_root)
        rev = self.config.source_rev
        tree: Path | SourceTree = root
        if rev is not None:
            tree = open_tree(root, rev, key="dataset.source_root", rev_key="dataset.source_rev")
        drift = source_drift(hashes, tree)
        status = meta.get("dataset_status")
        info: dict[str, Any] = {
            "meta_path": str(meta_path),
            "source_root": str(root.resolve()),
            "dataset_status": status,
            "source_files_checked": len(hashes),
            "drift": drift,
        }
        if rev is not None:
            info["source_rev"] = rev
        if isinstance(status, str):
            info["blessed"] = status in self.config.blessed_statuses
            info["blessed_statuses"] = list(self.config.blessed_statuses)
        if drift and not self.config.allow_drift:
            shown = "; ".join(drift[:10]) + (" …" if len(drift) > 10 else "")
            raise SourceDriftError(
                f"the code under evaluation has drifted from the golden set: {len(drift)} "
                f"source file(s) differ from {meta_path.name}: {shown}",
                path=meta_path,
                hint="re-verify the affected records and refresh source_file_hashes; or "
                "evaluate the revision the set was labelled on (dataset.source_rev=REV, with "
                "corpus.rev=REV); or run with dataset.allow_drift=true to evaluate anyway "
                "(the drift is recorded and the verdict marked provisional)",
            )
        if drift:
            warn(
                f"evaluating despite source drift in {len(drift)} file(s) "
                f"(dataset.allow_drift=true): {'; '.join(drift[:5])}"
            )
        return info

    def _records(self) -> tuple[Path, list[tuple[int | None, dict[str, Any]]]]:
        path = self._golden_path()
        records: list[tuple[int | None, dict[str, Any]]] = [
            (line, record)
            for line, record in read_json_array(path, what="KnowCode golden set")
            if isinstance(record, dict)
        ]
        return path, records

    def mechanical_checks(self, source_root: str | Path, rev: str | None = None) -> list[Any]:
        """KnowCode's mechanical validation gate (§5) on every record, against the
        Python source under ``source_root`` (read with ``ast``, never imported), on
        disk or, with ``rev``, as committed at that Git revision.

        Returns :class:`evalframe.golden.findings.Finding` objects located at
        ``golden_v1.0.json:<line>``; see :mod:`evalframe_knowcode.checks`.
        """
        from evalframe_knowcode.checks import check_records

        path, records = self._records()
        tree = open_tree(source_root, rev, key="--source-root", rev_key="--rev")
        return check_records(records, tree, path)

    def authoring_checks(self, level: str = "warning") -> list[Any]:
        """KnowCode's authoring rules (§3.1, §7.2, §9) on every record, at ``level``
        (``warning``, ``error`` or ``off``); see :mod:`evalframe_knowcode.authoring`."""
        from evalframe_knowcode.authoring import AuthoringLevel, check_authoring

        if level not in ("warning", "error", "off"):
            raise DataError(
                f"unknown authoring level {level!r}",
                key="--authoring",
                expected="warning, error or off",
            )
        path, records = self._records()
        return check_authoring(records, str(path), cast(AuthoringLevel, level))


#: KnowCode's difficulty tiers (§7.2), as its gates and tables spell them.
TIERS = ("easy", "medium", "hard")


def _warn_off_schema(path: Path, queries: list[GoldenQuery]) -> None:
    """One warning for records without a task type or with a difficulty outside the
    tiers: they sit in rows of their own ('unset', 'Easy') that no tier's gate sees,
    which must not pass unsaid (``golden validate`` lists each with its line)."""
    problems = []
    for field_name in ("task_type", "difficulty"):
        missing = [q.id for q in queries if q.metadata.get(field_name) is None]
        if missing:
            problems.append(f"{len(missing)} record(s) without {field_name} ({_some(missing)})")
    for field_name, allowed in (("difficulty", TIERS), ("task_type", TASK_TYPES)):
        odd = [
            f"{q.id}: {q.metadata[field_name]!r}"
            for q in queries
            if q.metadata.get(field_name) is not None and q.metadata[field_name] not in allowed
        ]
        if odd:
            problems.append(
                f"{len(odd)} record(s) with a {field_name} other than {', '.join(allowed)} "
                f"({_some(odd)})"
            )
    if problems:
        warn(
            f"{path}: {'; '.join(problems)}. Those queries are in rows of their own in the "
            "tables, and a gate on a tier or a task type (difficulty=easy, task_type=locate) "
            "does not see them; `evalframe golden validate --authoring` gives each one's line"
        )


def _some(items: list[str], limit: int = 5) -> str:
    return ", ".join(items[:limit]) + (", …" if len(items) > limit else "")
