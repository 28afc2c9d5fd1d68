"""What every step of a build shares: the config, the batch folder, the format's rules,
the role callers and what they spent, and the blessed version the batch adds to."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from evalframe.build.batch import Batch
from evalframe.build.calls import RoleCaller, Spend
from evalframe.build.config import STEPS, BuildConfig
from evalframe.core.reader import read_json
from evalframe.core.types import content_hash
from evalframe.golden.versions import Version, list_versions
from evalframe.plugin.roles import SourceRef

__all__ = ["Blessed", "BuildRules", "Context", "label", "label_hash"]


class BuildRules(Protocol):
    """What a format (its dataset plugin's ``build_rules(root, rev)``) checks for a build."""

    @property
    def label(self) -> str: ...

    def python_files(self) -> list[str]: ...

    def fingerprint(self) -> str: ...

    def file_hashes(self, files: Iterable[str]) -> dict[str, str]: ...

    def cited_files(self, record: Mapping[str, Any]) -> set[str]: ...

    def gate(self, record: Mapping[str, Any]) -> list[tuple[str, str]]: ...

    def authoring(self, record: Mapping[str, Any], level: str) -> list[tuple[str, str]]: ...

    def targets(self, record: Mapping[str, Any]) -> list[str]: ...

    def dedupe(
        self,
        candidates: Sequence[Mapping[str, Any]],
        prior: Sequence[Mapping[str, Any]],
        max_overlap: float,
    ) -> dict[str, str | None]: ...

    def agreement(
        self, oracle: Mapping[str, Any], supported: Mapping[str, Any], threshold: float
    ) -> tuple[float, float, bool]: ...

    def load_blessed(self, path: Path, allow_drift: bool) -> list[dict[str, Any]]: ...


@dataclass
class Blessed:
    """The newest blessed version in ``output.blessed_dir``: what a new batch adds to."""

    version: Version
    path: Path
    meta: dict[str, Any]
    records: list[dict[str, Any]]

    @property
    def schema_version(self) -> str | None:
        value = self.meta.get("schema_version")
        return str(value) if value else None


#: The GoldenLabel's fields, in the order they are written (§4.1).
CANDIDATE_FIELDS = (
    "query_id",
    "query_text",
    "task_type",
    "difficulty",
    "focus_area",
    "difficulty_rationale",
    "classifier_expectation",
)
ANSWER_FIELDS = (
    "expected_entities",
    "expected_files",
    "expected_line_ranges",
    "must_mention_facts",
    "must_not_mention_facts",
    "canonical_narrative",
    "source_evidence",
    "confidence",
    "uncertainty_notes",
)


def label(candidate: Mapping[str, Any], answer: Mapping[str, Any]) -> dict[str, Any]:
    """The golden record of a query, without provenance: what a reviewer judges."""
    out: dict[str, Any] = {}
    for name in CANDIDATE_FIELDS:
        if candidate.get(name) is not None:
            out[name] = candidate[name]
    for name in ANSWER_FIELDS:
        if answer.get(name) is not None:
            out[name] = answer[name]
    return out


def label_hash(record: Mapping[str, Any]) -> str:
    """Identifies the record a verdict was given on: a verdict applies to that content only."""
    return content_hash({k: v for k, v in record.items() if k not in ("provenance",)})


@dataclass
class Context:
    config: BuildConfig
    batch: Batch
    echo: Callable[[str], None] = lambda line: print(line, flush=True)
    _rules: BuildRules | None = None
    _fingerprint: str | None = None
    _blessed: Blessed | None = None
    _blessed_loaded: bool = False
    spend: Spend = field(default_factory=Spend)

    @property
    def rules(self) -> BuildRules:
        if self._rules is None:
            source = self.config.source
            self._rules = self.config.rules_factory(source.root, source.rev)
        return self._rules

    @property
    def source(self) -> SourceRef:
        return SourceRef(root=self.config.source.root, rev=self.config.source.rev)

    def fingerprint(self) -> str:
        if self._fingerprint is None:
            self._fingerprint = self.rules.fingerprint()
        return self._fingerprint

    def begin(self, step: str) -> Spend:
        """A fresh tally for ``step``; the token budget counts what earlier steps spent."""
        spent = 0
        for earlier in STEPS[: STEPS.index(step)]:
            if self.batch.has_step(earlier):
                calls = self.batch.step(earlier).get("calls") or {}
                spent += int(calls.get("total_tokens", 0))
        budget = self.config.budget.max_tokens
        self.spend = Spend(max_tokens=None if budget is None else budget - spent)
        return self.spend

    def caller(self, role: str) -> RoleCaller:
        return RoleCaller(self.config, role, self.fingerprint(), self.spend)

    def blessed(self) -> Blessed | None:
        """The newest version in ``blessed_dir``, loaded through the format's loader (its
        drift guard stops a build on changed source unless ``allow_drift``)."""
        if self._blessed_loaded:
            return self._blessed
        self._blessed_loaded = True
        folder = self.config.blessed_dir
        versions = list_versions(folder) if folder is not None else []
        if not versions:
            return None
        version, path = versions[-1]
        meta_path = path.with_name(version.meta)
        meta = read_json(meta_path, what="meta file").data if meta_path.is_file() else {}
        records = self.rules.load_blessed(path, self.config.allow_drift)
        self._blessed = Blessed(version, path, meta if isinstance(meta, dict) else {}, records)
        return self._blessed
