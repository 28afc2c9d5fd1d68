"""Facts the offline oracle states and the offline adversary checks, in one set of forms.

The oracle writes facts the code itself states (where an entity is defined,
its parameters, what it calls, what it raises, whether it returns a value),
falsehoods of the same forms, and a narrative that names only the expected
entities. The adversary parses a fact of these forms and re-derives it from
the source; a fact of any other form cannot be checked mechanically and is
``partial``.
"""

from __future__ import annotations

import re

from evalframe.plugin.roles import LineRange, OracleAnswer
from evalframe_knowcode.codeindex import CodeIndex, Unit

__all__ = ["check_fact", "facts_for", "narrative_for"]

_NUMBERS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight")
_PAD = (
    "Read these lines in order to answer the question.",
    "Every statement above can be checked against the cited lines.",
    "Nothing outside the listed entities is needed to follow the behaviour.",
    "A developer who opens these spans sees the whole answer without guessing.",
    "The line numbers are those of the definitions, decorators included.",
    "Anything else in the same files is context rather than part of the answer.",
)


def _params(unit: Unit) -> str:
    return ", ".join(unit.params)


def facts_for(index: CodeIndex, units: list[Unit]) -> tuple[list[str], list[str]]:
    """3-8 checkable facts and 1-2 falsehoods about ``units`` (the first is primary)."""
    primary = units[0]
    sym = primary.symbol
    facts = [f"`{sym}` is defined in {primary.file} at lines {primary.start}-{primary.end}."]
    facts.append(
        f"`{sym}` takes the parameters {_params(primary)}."
        if primary.params
        else f"`{sym}` takes no parameters."
    )
    for callee in units[1:]:
        if callee.entity_id in primary.calls:
            facts.append(f"`{sym}` calls `{callee.symbol}`.")
    if primary.raises:
        facts.append(f"`{sym}` raises `{primary.raises[0][0]}`.")
    facts.append(
        f"`{sym}` returns a value."
        if primary.returns_value
        else f"`{sym}` does not return a value."
    )
    for other in units[1:]:
        facts.append(
            f"`{other.symbol}` is defined in {other.file} at lines {other.start}-{other.end}."
        )
    other_file = next((f for f in index.files if f != primary.file), primary.file)
    falsehoods = [f"`{sym}` is defined in {other_file}."]
    falsehoods.append(
        f"`{sym}` does not return a value."
        if primary.returns_value
        else f"`{sym}` returns a value."
    )
    return facts[:8], falsehoods


def narrative_for(units: list[Unit]) -> str:
    """80-250 words naming only the expected entities and their files."""
    primary = units[0]
    files = sorted({u.file for u in units})
    parts = [f"The answer lies in {', '.join(files)}."]
    for i, unit in enumerate(units):
        role = "is where this happens" if i == 0 else "does part of the work for it"
        parts.append(
            f"The {unit.kind} `{unit.symbol}` ({unit.file}, lines {unit.start}-{unit.end}) {role}."
        )
    n = len(primary.params)
    parts.append(
        f"It takes {_NUMBERS[n] if n < len(_NUMBERS) else n} parameter{'s' if n != 1 else ''}."
        if n
        else "It takes no parameters."
    )
    for callee in units[1:]:
        if callee.entity_id in primary.calls:
            parts.append(f"`{primary.symbol}` calls `{callee.symbol}` to do part of the job.")
    if primary.raises:
        parts.append("When its checks fail it raises an exception instead of returning a result.")
    parts.append(
        "It hands its result back to the caller."
        if primary.returns_value
        else "It works by its effects and returns nothing."
    )
    pads = iter(_PAD)
    while len(" ".join(parts).split()) < 80:
        parts.append(next(pads, "The cited lines are the evidence."))
    return " ".join(parts)


_DEFINED = re.compile(
    r"^`(?P<sym>[^`]+)` is defined in (?P<file>\S+?)(?: at lines (?P<a>\d+)-(?P<b>\d+))?\.$"
)
_PARAMS = re.compile(r"^`(?P<sym>[^`]+)` takes the parameters (?P<params>.+)\.$")
_NO_PARAMS = re.compile(r"^`(?P<sym>[^`]+)` takes no parameters\.$")
_CALLS = re.compile(r"^`(?P<sym>[^`]+)` calls `(?P<callee>[^`]+)`\.$")
_RAISES = re.compile(r"^`(?P<sym>[^`]+)` raises `(?P<exc>[^`]+)`\.$")
_RETURNS = re.compile(r"^`(?P<sym>[^`]+)` (?P<says>does not return|returns) a value\.$")


def check_fact(
    fact: str, index: CodeIndex, answer: OracleAnswer
) -> tuple[bool | None, LineRange | None]:
    """Whether a fact of the oracle's forms holds in the source (None: not checkable),
    and the lines that decide it."""
    by_symbol: dict[str, Unit] = {}
    for e in answer.expected_entities:
        unit = index.get(e.entity_id)
        if unit is not None:
            by_symbol.setdefault(unit.symbol, unit)

    def cite(unit: Unit) -> LineRange:
        return LineRange(file=unit.file, start=unit.start, end=unit.end)

    for pattern in (_DEFINED, _PARAMS, _NO_PARAMS, _CALLS, _RAISES, _RETURNS):
        match = pattern.match(fact.strip())
        if match is None:
            continue
        unit = by_symbol.get(match.group("sym"))
        if unit is None:
            return False, None
        if pattern is _DEFINED:
            same_file = match.group("file") == unit.file
            if match.group("a") is None:
                return same_file, cite(unit)
            span = (int(match.group("a")), int(match.group("b")))
            return same_file and span == (unit.start, unit.end), cite(unit)
        if pattern is _PARAMS:
            listed = [p.strip() for p in match.group("params").split(",")]
            return listed == list(unit.params), cite(unit)
        if pattern is _NO_PARAMS:
            return not unit.params, cite(unit)
        if pattern is _CALLS:
            callee = by_symbol.get(match.group("callee"))
            return callee is not None and callee.entity_id in unit.calls, cite(unit)
        if pattern is _RAISES:
            return match.group("exc") in {n for n, _ in unit.raises}, cite(unit)
        return (match.group("says") == "returns") == unit.returns_value, cite(unit)
    return None, None
