"""Builders for golden-set test data: B.O.B records, corpora and KnowCode copies."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

KNOWCODE_DATA = Path(__file__).resolve().parents[2] / "plugins/evalframe-knowcode/tests/data"
BOB_DATA = Path(__file__).resolve().parents[2] / "plugins/evalframe-jsonl/tests/data"

#: Distinct words so generated questions are never near-duplicates of each other.
WORDS = [
    "anchor",
    "basalt",
    "cobalt",
    "dolphin",
    "ember",
    "fjord",
    "granite",
    "harbor",
    "iris",
    "juniper",
    "kestrel",
    "lantern",
    "meadow",
    "nectar",
    "obsidian",
    "pepper",
    "quartz",
    "raven",
    "saffron",
    "tundra",
    "umber",
    "velvet",
    "walnut",
    "xenon",
    "yarrow",
    "zephyr",
    "amber",
    "bramble",
    "cinder",
    "dune",
    "elm",
    "falcon",
    "glacier",
    "hazel",
    "indigo",
    "jasper",
    "kelp",
    "lotus",
    "maple",
    "nutmeg",
    "orchid",
    "pine",
    "quill",
    "reed",
    "sage",
    "thistle",
    "umbra",
    "violet",
    "willow",
    "yucca",
    "zinc",
]  # one string is easier to scan


def question(i: int) -> str:
    n = len(WORDS)
    a, b, c = WORDS[i % n], WORDS[(i // n + 3 * i + 1) % n], WORDS[(7 * (i // n) + 5 * i + 2) % n]
    return f"{a.title()} {b} {c} {i}?"


def bob_records(
    n: int, negatives: int = 0, *, start: int = 1, prefix: str = "c"
) -> list[dict[str, Any]]:
    """``n`` B.O.B records, the last ``negatives`` of them negative examples."""
    out = []
    for i in range(start, start + n):
        negative = i >= start + n - negatives
        out.append(
            {
                "id": i,
                "question": question(i),
                "expected_chunks": [] if negative else [f"{prefix}{i}"],
                "difficulty": ("easy", "medium", "hard")[i % 3],
                "category": ("setup", "usage")[i % 2],
            }
        )
    return out


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def corpus_for(records: list[dict[str, Any]], path: Path) -> Path:
    docs = [
        {"id": c, "text": f"Passage {c}: {r['question']}"}
        for r in records
        for c in r["expected_chunks"]
    ]
    return write_jsonl(path, docs)


def copy_knowcode(tmp_path: Path) -> Path:
    """A writable copy of the KnowCode sample data (golden set, meta, src/)."""
    target = tmp_path / "knowcode"
    shutil.copytree(KNOWCODE_DATA, target)
    return target


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
