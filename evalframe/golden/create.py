"""Interactive golden-set authoring, like B.O.B's ``eval create``.

For each question the session shows the retriever's top-k passages, the
curator picks the expected ones by number (``1,3``), types ids, or answers
``n`` for a negative example; then difficulty, category and notes; the record
gets the next free id and is appended to the JSONL file atomically (the file
is read, the new line added, written to a temporary file and renamed), so an
interrupted session never leaves a half-written golden set. An empty question
or end of input ends the session.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from evalframe.core.errors import DataError
from evalframe.core.io import atomic_write, default_cache_dir, read_jsonl
from evalframe.core.records import id_problem
from evalframe.core.types import Corpus
from evalframe.plugin.protocols import PluginContext, Query
from evalframe.plugin.registry import RETRIEVERS, configure

__all__ = [
    "DIFFICULTIES",
    "CreateSession",
    "default_cache_dir",
    "next_free_id",
    "parse_selection",
]

DIFFICULTIES = ("easy", "medium", "hard")
_TRAILING_NUMBER = re.compile(r"^(.*?)(\d+)$")


def next_free_id(existing: Sequence[Any]) -> int | str:
    """The id after the existing ones: ``max + 1`` for integer ids, ``q12`` after
    ``q11`` for prefixed ids, never one already used."""
    used = {str(i) for i in existing}
    if not existing:
        return 1
    if all(isinstance(i, int) or str(i).isdigit() for i in existing):
        return max(int(i) for i in existing) + 1
    last = str(existing[-1])
    match = _TRAILING_NUMBER.match(last)
    prefix, width = (match.group(1), len(match.group(2))) if match else (f"{last}-", 1)
    numbers = [
        int(m.group(2))
        for i in existing
        if (m := _TRAILING_NUMBER.match(str(i))) and m.group(1) == prefix
    ]
    n = max(numbers, default=0) + 1
    while f"{prefix}{n:0{width}d}" in used:
        n += 1
    return f"{prefix}{n:0{width}d}"


def parse_selection(
    answer: str, shown: Sequence[str], corpus_ids: frozenset[str]
) -> list[str] | str | None:
    """The expected ids picked by ``answer``.

    Returns ``[]`` for ``n`` (a negative example), the ids for ``1,3`` (numbers
    of shown passages), ``doc-7`` or ``id:12`` (corpus ids; ``id:`` forces an
    id that looks like a number), ``None`` for an empty answer, or an error
    message (a ``str``) to show before asking again.
    """
    text = answer.strip()
    if not text:
        return None
    if text.casefold() in ("n", "none", "negative"):
        return []
    picked: list[str] = []
    for token in (t for t in re.split(r"[,\s]+", text) if t):
        if token.startswith("id:"):
            doc = token[3:]
        elif token.isdigit() and 1 <= int(token) <= len(shown):
            doc = shown[int(token) - 1]
        else:
            doc = token
        if doc not in corpus_ids:
            hint = f"numbers go from 1 to {len(shown)}" if shown else "no passages were shown"
            return f"{token!r} is neither a shown passage nor a corpus id ({hint})"
        if doc not in picked:
            picked.append(doc)
    return picked


def _control_characters(text: str) -> str:
    """The control characters in ``text`` as a reader can see them (``'\\x1b'``,
    ``'\\t'``), or '' when it has none: a question is one line of printable text."""
    found = sorted({ch for ch in text if unicodedata.category(ch) == "Cc"})
    if not found:
        return ""
    names = ", ".join(repr(ch) for ch in found)
    return f"the control character{'s' if len(found) > 1 else ''} {names}"


def _json_id(value: str) -> int | str:
    """B.O.B writes integer ids as JSON numbers; keep that for ids made of digits."""
    return int(value) if value.isdigit() and (value == "0" or not value.startswith("0")) else value


class CreateSession:
    """One interactive session appending B.O.B records to ``path``."""

    def __init__(
        self,
        path: str | Path,
        corpus: Corpus,
        *,
        retriever: str = "bm25",
        k: int = 5,
        cache_dir: Path | None = None,
        stdin: TextIO,
        stdout: TextIO,
    ) -> None:
        self.path = Path(path)
        if self.path.is_dir():
            raise DataError(
                "create appends to one JSONL file, and this is a folder",
                path=self.path,
                hint="name the domain file inside it, e.g. domains/food.jsonl",
            )
        self.corpus = corpus
        self.corpus_ids = corpus.ids()
        self.texts = {d.id: d.text for d in corpus.documents}
        self.k = k
        self.stdin = stdin
        self.stdout = stdout
        self.ids: list[Any] = self._existing_ids()
        spec = RETRIEVERS.get(retriever, key="--retriever")
        config = configure(spec, {}, key="retriever")
        context = PluginContext(
            corpus=corpus,
            cache_dir=cache_dir or default_cache_dir(),
            config_key="retriever",
        )
        self.retriever = spec.obj(config, context)
        self.saved = 0

    def _existing_ids(self) -> list[Any]:
        if not self.path.exists():
            return []
        ids: list[Any] = []
        seen: set[str] = set()
        for line, record in read_jsonl(self.path, what="golden set"):
            if not isinstance(record, dict) or "id" not in record:
                raise DataError(
                    "every line of the golden set must be a record with an 'id'",
                    path=self.path,
                    line=line,
                    got=repr(record)[:80],
                    hint="fix the file (evalframe golden validate shows every problem) first",
                )
            if str(record["id"]) in seen:
                raise DataError(
                    f"query id {record['id']!r} is duplicated", path=self.path, line=line
                )
            seen.add(str(record["id"]))
            ids.append(record["id"])
        return ids

    # -- terminal --------------------------------------------------------------
    def say(self, text: str = "") -> None:
        print(text, file=self.stdout)

    def ask(self, prompt: str) -> str | None:
        """One line of input without its newline; None at end of input."""
        self.stdout.write(prompt)
        self.stdout.flush()
        line = self.stdin.readline()
        if not line:
            self.say()
            return None
        return line.rstrip("\r\n")

    # -- the loop --------------------------------------------------------------
    def run(self) -> int:
        """Ask for questions until an empty one or end of input; return how many were saved."""
        self.say(
            f"Adding questions to {self.path} ({len(self.ids)} already there); "
            f"passages from {len(self.corpus)} documents. An empty question ends the session."
        )
        try:
            while True:
                question = self.ask("\nQuestion: ")
                if question is None or not question.strip():
                    break
                control = _control_characters(question)
                if control:  # an arrow key's escape sequence, typed without line editing
                    self.say(
                        f"The question holds {control}, which would be saved into the golden "
                        "set as it is (arrow keys type escape sequences here); type it again "
                        "without them. Nothing was saved."
                    )
                    continue
                record = self._one(question.strip())
                if record is None:
                    self.say("(input ended; this question was not saved)")
                    break
                self._append(record)
        except KeyboardInterrupt:
            self.say("\n(interrupted; the question in progress was not saved)")
        if self.saved or self.path.is_file():
            self.say(f"saved {self.saved} question(s) to {self.path}")
        else:  # "saved 0 question(s) to new.jsonl", and no such file
            self.say(f"nothing saved: {self.path} was not created")
        return self.saved

    def _one(self, question: str) -> dict[str, Any] | None:
        ranking = self.retriever.retrieve(Query(id="__new__", text=question), self.k)
        shown = list(ranking.doc_ids) if ranking is not None else []
        if shown:
            self.say(f"Top {len(shown)} passages:")
            for i, doc in enumerate(shown, start=1):
                snippet = " ".join(self.texts.get(doc, "").split())
                snippet = snippet[:200] + ("…" if len(snippet) > 200 else "")
                self.say(f"  {i}. [{doc}] {snippet}")
        else:
            self.say("The retriever found no passage for this question.")
        expected: list[str] | None = None
        while expected is None:
            answer = self.ask("Expected passages (numbers like 1,3, ids, or n for negative): ")
            if answer is None:
                return None
            parsed = parse_selection(answer, shown, self.corpus_ids)
            if isinstance(parsed, str):
                self.say(f"  {parsed}")
            elif parsed is None:
                self.say("  answer n if no passage answers the question")
            else:
                expected = parsed
        difficulty = ""
        while True:
            answer = self.ask(f"Difficulty ({'/'.join(DIFFICULTIES)}, empty to skip): ")
            if answer is None:
                return None
            difficulty = answer.strip().lower()
            if not difficulty or difficulty in DIFFICULTIES:
                break
            self.say(f"  choose one of {', '.join(DIFFICULTIES)}")
        category = self.ask("Category (empty to skip): ")
        if category is None:
            return None
        default_notes = "Negative example" if not expected else ""
        notes = self.ask(f"Notes{f' [{default_notes}]' if default_notes else ''}: ")
        if notes is None:
            return None
        proposed = next_free_id(self.ids)
        while True:
            answer = self.ask(f"Id [{proposed}]: ")
            if answer is None:
                return None
            problem = id_problem(answer.strip()) if answer.strip() else None
            if problem is not None:  # the loader's rule: saved, the file would not load
                self.say(
                    f"  {answer.strip()!r} {problem}: an id is one word (a string without "
                    f"spaces, or an integer); type another (or press Enter for {proposed})"
                )
                continue
            qid: int | str = _json_id(answer.strip()) if answer.strip() else proposed
            if str(qid) in {str(i) for i in self.ids}:
                self.say(
                    f"  id {qid} is already used; pick another (or press Enter for {proposed})"
                )
                continue
            break
        record: dict[str, Any] = {
            "id": qid,
            "question": question,
            "expected_chunks": [_json_id(d) for d in expected],
        }
        if difficulty:
            record["difficulty"] = difficulty
        if category.strip():
            record["category"] = category.strip()
        record["notes"] = notes.strip() or default_notes
        return record

    def _append(self, record: dict[str, Any]) -> None:
        import json

        current = self.path.read_text(encoding="utf-8") if self.path.exists() else ""
        if current and not current.endswith("\n"):
            current += "\n"
        atomic_write(self.path, current + json.dumps(record, ensure_ascii=False) + "\n")
        self.ids.append(record["id"])
        self.saved += 1
        kind = "negative example" if not record["expected_chunks"] else "question"
        self.say(f"saved {kind} {record['id']} to {self.path}")
