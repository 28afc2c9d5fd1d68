"""Chunk evalframe's own Markdown docs into the quickstart corpus.

Each ``##``/``###`` section becomes one passage whose id is stable across
edits elsewhere: ``<file stem>#<heading slug>`` (``-2``, ``-3`` for a long
section split at paragraph boundaries). Run it after editing the docs, then
re-check the golden set's expected ids (``make quickstart-corpus``)::

    python tools/chunk_docs.py README.md docs/*.md -o evalframe/data/quickstart/corpus.jsonl
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalframe.core.io import atomic_write  # needs the repo root on sys.path first

MAX_WORDS = 220
HEADING = re.compile(r"^(#{1,3})\s+(.*\S)\s*$")


def slug(text: str) -> str:
    text = re.sub(r"[`*_]", "", text.lower())
    return re.sub(r"[^a-z0-9]+", "-", text).strip("-") or "section"


def sections(path: Path) -> list[tuple[str, str]]:
    """(heading, body) pairs; fenced code stays with its section."""
    out: list[tuple[str, list[str]]] = []
    heading, body, fenced = path.stem, [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        match = None if fenced else HEADING.match(line)
        if match:
            out.append((heading, body))
            heading, body = match.group(2), []
        else:
            body.append(line)
    out.append((heading, body))
    return [(h, "\n".join(b).strip()) for h, b in out if "\n".join(b).strip()]


def split_long(body: str) -> list[str]:
    parts, current = [], []
    for para in re.split(r"\n\s*\n", body):
        if current and len(" ".join([*current, para]).split()) > MAX_WORDS:
            parts.append("\n\n".join(current))
            current = []
        current.append(para)
    if current:
        parts.append("\n\n".join(current))
    return parts


def chunk(paths: list[Path]) -> list[dict[str, str]]:
    records, seen = [], set()
    for path in paths:
        for heading, body in sections(path):
            base = f"{path.stem.lower()}#{slug(heading)}"
            for i, part in enumerate(split_long(body), start=1):
                doc_id = base if i == 1 else f"{base}-{i}"
                n = 2
                while doc_id in seen:
                    doc_id, n = f"{base}~{n}", n + 1
                seen.add(doc_id)
                records.append(
                    {
                        "id": doc_id,
                        "title": f"{path.name} › {heading}",
                        "text": part,
                        "source": str(path),
                    }
                )
    return records


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("docs", nargs="+", type=Path)
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args()
    records = chunk(args.docs)
    atomic_write(args.output, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    print(f"{len(records)} passages from {len(args.docs)} files -> {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
