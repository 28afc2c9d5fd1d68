"""A batch folder: the pipeline's files for one run, under the reference's names (§4.2).

``<output.dir>/pipeline/<UTC time>/`` holds, as each step writes it:

| file | written by | holds |
|---|---|---|
| ``config.yaml`` | A | the composed config, secrets redacted |
| ``plan.json`` | A | the checked plan: cells, targets, quotas, query ids |
| ``00_candidates.jsonl`` | B | every QueryCandidate the authors wrote |
| ``01_oracle_answers.jsonl`` | D | every OracleAnswer |
| ``02_adversary_reports.jsonl`` | F | every AdversaryReport |
| ``02_judge_verdicts.jsonl`` | F | every NarrativeJudgement |
| ``03_validation_failures.jsonl`` | E | mechanical-gate rejects, each with its checks |
| ``04_human_review_queue.jsonl`` | F | queries that need human eyes, with the reasons |
| ``review_sample.jsonl`` | G | the stratified spot-check sample, verdicts to fill in |
| ``human_reviews.jsonl`` | G | the verdicts and edits read back |
| ``05_rejected.jsonl`` | H | every query that did not make it, with its stage and rule |
| ``step_<name>.json`` | each | the step's decisions and its calls and tokens |
| ``batch.json`` | H | the batch's status, counts, calls, tokens and release |

Each file is written once, whole and atomically (temp file + rename), in
plan order, so the same inputs give the same bytes at any concurrency. A
batch folder is never written twice: batches are append-only history. Every
record carries ``schema_version``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from evalframe.core.errors import DataError
from evalframe.core.io import atomic_write_json, atomic_write_jsonl
from evalframe.core.reader import read_json, read_jsonl
from evalframe.plugin.roles import SCHEMA_VERSION

__all__ = ["FILES", "Batch"]

FILES = {
    "plan": "plan.json",
    "candidates": "00_candidates.jsonl",
    "answers": "01_oracle_answers.jsonl",
    "reports": "02_adversary_reports.jsonl",
    "verdicts": "02_judge_verdicts.jsonl",
    "failures": "03_validation_failures.jsonl",
    "queue": "04_human_review_queue.jsonl",
    "rejected": "05_rejected.jsonl",
    "sample": "review_sample.jsonl",
    "reviews": "human_reviews.jsonl",
    "batch": "batch.json",
}
#: Which step writes what a later step reads, for the error when it is missing.
WRITER = {
    "plan": "plan",
    "candidates": "author",
    "answers": "oracle",
    "failures": "gate",
    "reports": "adversary",
    "verdicts": "adversary",
    "queue": "adversary",
    "sample": "review",
    "reviews": "review",
}


def _versioned(record: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(record)
    out.setdefault("schema_version", SCHEMA_VERSION)
    return out


class Batch:
    """Reads and writes one batch folder's files."""

    def __init__(self, folder: Path) -> None:
        self.dir = Path(folder)

    def path(self, name: str) -> Path:
        return self.dir / FILES.get(name, name)

    def write_jsonl(self, name: str, records: Iterable[Mapping[str, Any]]) -> Path:
        return atomic_write_jsonl(self.path(name), (_versioned(r) for r in records))

    def write_config(self, raw: Mapping[str, Any]) -> Path:
        """``config.yaml``: the composed config, secrets redacted (docs/security.md)."""
        import yaml

        from evalframe.core.io import atomic_write
        from evalframe.core.secrets import redact

        text = yaml.safe_dump(redact(dict(raw)), sort_keys=False, allow_unicode=True)
        return atomic_write(self.dir / "config.yaml", text)

    def write_json(self, name: str, payload: Mapping[str, Any]) -> Path:
        return atomic_write_json(self.path(name), _versioned(payload))

    def _require(self, name: str, step: str | None) -> Path:
        path = self.path(name)
        if not path.is_file():
            before = step or WRITER.get(name, name.removeprefix("step_").removesuffix(".json"))
            raise DataError(
                f"{path} is missing: step {before} has not run in this batch",
                key="step",
                hint=f"run step={before} first (each step reads the files of the steps "
                "before it), or step=all",
            )
        return path

    def read_jsonl(self, name: str) -> list[dict[str, Any]]:
        path = self._require(name, None)
        return [
            r
            for _, r in read_jsonl(path, what=FILES.get(name, name), unique_keys=False)
            if isinstance(r, dict)
        ]

    def read_json(self, name: str) -> dict[str, Any]:
        data = read_json(self._require(name, None), what=FILES.get(name, name)).data
        return data if isinstance(data, dict) else {}

    def step(self, name: str) -> dict[str, Any]:
        """``step_<name>.json``: a step's decisions, for the steps after it."""
        path = self.dir / f"step_{name}.json"
        self._require(path.name, name)
        data = read_json(path, what=path.name).data
        return data if isinstance(data, dict) else {}

    def write_step(self, name: str, payload: Mapping[str, Any]) -> Path:
        return atomic_write_json(self.dir / f"step_{name}.json", _versioned(payload))

    def has_step(self, name: str) -> bool:
        return (self.dir / f"step_{name}.json").is_file()
