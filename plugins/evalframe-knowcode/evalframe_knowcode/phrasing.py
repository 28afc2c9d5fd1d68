"""What the offline author asks about: eligible targets per plan cell, and a developer's
question phrased from the primary entity's docstring (KnowCode §3.1, §9.1).

A docstring summary becomes a verb phrase after "we" ("Where do we write text to
path atomically?"); summaries that read as code (naming code-like parameters, a
parenthesised object right after the verb) are not used, so no query leaks an
identifier or reads like one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from evalframe_knowcode.authoring import authoring_findings
from evalframe_knowcode.codeindex import CodeIndex, Unit, stable

__all__ = ["Option", "leaks", "options", "phrase", "query_text"]


_VERBS = frozenset(
    (  # noqa: SIM905  # a word list reads best as words
        "add apply build check compute convert count create cut decide decode draw drop emit "
        "find flatten format get import join keep list load make map merge normalise open parse "
        "pick print produce raise read record refuse register remove render resolve return run "
        "save score select show skip sort split strip tell turn validate warn wrap write yield"
    ).split()
)
_ARTICLES = frozenset({"the", "a", "an", "one", "each", "every"})
_BAD = re.compile(r"[<>{}\[\]|=()]")


def _verb(word: str) -> str | None:
    w = word.lower()
    for form in (w, w[:-1] if w.endswith("s") else "", w[:-2] if w.endswith("es") else ""):
        if form in _VERBS:
            return form
    return None


def phrase(summary: str, params: Iterable[str] = ()) -> str | None:
    """The docstring summary as a verb phrase after "we" (``write text to path``), or None.

    Only its first clause (up to ``;`` or ``:``), without parenthesised asides. A
    summary that names code-like parameters (``Count n occurrences of what``) or whose
    verb takes a parenthesised object (``Yield (line, value) ...``) reads as code, not as
    a developer's question, and is not used; nor is a noun phrase with a comma."""
    clause = re.sub(r"\s*\([^()]*\)", "", summary)
    clause = re.split(r"[;:]|\. ", clause, maxsplit=1)[0].strip().rstrip(",")
    words = clause.split()
    if not 4 <= len(words) <= 16 or _BAD.search(clause) or not words[0][:1].isupper():
        return None
    codeish = {p for p in params if len(p) <= 2 or "_" in p}
    if {w.strip(",.") for w in words} & codeish or re.match(r"^\w+\s*\(", summary):
        return None
    verb = _verb(words[0])
    if verb is not None:
        return " ".join([verb, *words[1:]])
    if words[0].lower() in _ARTICLES and "," not in clause:
        return " ".join(["produce", words[0].lower(), *words[1:]])
    return None


#: An explain or review query needs a body worth walking through (§9.1 anti-patterns).
_MIN_LINES = 6


@dataclass(frozen=True)
class Option:
    targets: tuple[str, ...]
    unit: Unit
    exception: tuple[str, str] | None = None

    @property
    def primary(self) -> str:
        return self.targets[0]


def _callables(index: CodeIndex, ids: Iterable[str]) -> list[Unit]:
    units = [index.get(i) for i in ids]
    return [u for u in units if u is not None and u.kind != "class"]


def _chain(index: CodeIndex, unit: Unit, limit: int = 4) -> list[Unit]:
    """The unit and what it calls, breadth first, two hops deep, at most ``limit``."""
    out, frontier = [unit], [unit]
    for _ in range(2):
        nxt = []
        for u in frontier:
            for callee in _callables(index, u.calls):
                if callee not in out and len(out) < limit:
                    out.append(callee)
                    nxt.append(callee)
        frontier = nxt
    return out


def options(index: CodeIndex, task: str, difficulty: str, seed: int) -> list[Option]:
    out = []
    for unit in index.units.values():
        if unit.kind == "class" or phrase(unit.summary, unit.params) is None:
            continue
        if task in ("explain", "review") and unit.end - unit.start < _MIN_LINES:
            continue  # §9.1: not a one-liner, nor glue that only forwards
        if difficulty == "easy":
            group = [unit]
        elif difficulty == "medium":
            group = [unit, *_callables(index, unit.calls)[:2]]
            if len(group) < 2:
                continue
        else:
            group = _chain(index, unit)
            if len(group) < 3 or len({u.file for u in group}) < 2:
                continue
        raised = next(((u, r) for u in group for r in u.raises), None)
        if task == "debug" and raised is None:
            continue
        out.append(Option(tuple(u.entity_id for u in group), unit, raised[1] if raised else None))
    cell = f"{task}/{difficulty}"
    return sorted(out, key=lambda o: (stable(seed, cell, o.primary), o.primary))


_TEMPLATES = {
    "locate": (
        "Where do we {v}?",
        "Which part of the code is responsible when we {v}?",
        "I need to change how we {v}; where is that done?",
    ),
    "explain": ("Walk me through how we {v}.",),
    "extend": ("I want to extend how we {v}. Which code would the change touch?",),
    "review": ("Review how we {v}: are its failure cases handled?",),
    "general": ("What is going on with how we {v}?",),
}


def query_text(option: Option, task: str, difficulty: str, slot: int) -> str:
    v = phrase(option.unit.summary, option.unit.params) or option.unit.summary.lower()
    if task == "explain" and difficulty != "easy":
        return f"Explain step by step what happens when we {v}, including the helpers it uses."
    if task == "debug" and option.exception is not None:
        name, message = option.exception
        words = message.strip().rstrip(":(").split()
        if difficulty == "easy" and len(words) >= 3:
            quoted = " ".join(words[:8])
            return f'I get a {name} saying "{quoted}". What is causing it?'
        return f"Something fails with a {name} when we {v}. Where should I look?"
    templates = _TEMPLATES.get(task, _TEMPLATES["general"])
    return templates[slot % len(templates)].format(v=v)


def leaks(option: Option, task: str, difficulty: str, slot: int) -> bool:
    probe = {
        "query_id": "probe",
        "query_text": query_text(option, task, difficulty, slot),
        "task_type": task,
        "difficulty": difficulty,
        "target_entity_ids": list(option.targets),
    }
    return any(f.check == "authoring-leak" for f in authoring_findings(probe))
