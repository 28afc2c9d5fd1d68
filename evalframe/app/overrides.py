"""Overrides Hydra cannot read because a value needs quoting: said in evalframe's words.

Metric strings such as ``P(rel=2)@5`` use characters of Hydra's override
grammar (``( ) = :``); unquoted on the command line, Hydra answers with a
grammar error that names none of that. :func:`check_override_syntax` runs
before Hydra and turns such an override into a config error with the
override to type instead.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from typing import Any

from evalframe.core.errors import ConfigError
from evalframe.core.secrets import redact_mapping_text, redact_override_value

__all__ = ["check_override_syntax", "quoted_override"]

#: A value with one of these characters must be quoted inside a Hydra override.
_NEEDS_QUOTES = re.compile(r"[^A-Za-z0-9_@.\-/+*]")


def _split_list(body: str) -> list[str]:
    """``a,P(rel=2)@5,SetF(beta=0.5,rel=2)``: split at commas outside brackets and quotes."""
    parts, depth, quote, current = [], 0, "", ""
    for ch in body:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        current += ch
    parts.append(current)
    return parts


def _quote_value(value: str) -> str:
    value = value.strip()
    if not value or value[0] in "'\"" or not _NEEDS_QUOTES.search(value):
        return value
    return '"' + value.replace('"', '\\"') + '"'


def quoted_override(item: str) -> str | None:
    """The override with every metric-like value double-quoted, or None if nothing needed it.

    ``metrics.measures=[P(rel=2)@5,RR]`` -> ``metrics.measures=["P(rel=2)@5",RR]``.
    """
    key, sep, value = item.partition("=")
    if not sep:
        return None
    if value.startswith("[") and value.endswith("]"):
        fixed = "[" + ",".join(_quote_value(v) for v in _split_list(value[1:-1])) + "]"
    else:
        fixed = _quote_value(value)
    return f"{key}={fixed}" if fixed != value else None


#: Hydra's folders a run or a sweep is written into: empty, Hydra writes into the
#: current folder (``hydra.run.dir=$OUTDIR`` with the variable unset).
_RUN_FOLDERS = ("hydra.run.dir", "hydra.sweep.dir")


def _refuse_an_empty_folder(key: str, value: Any, item: str) -> None:
    if key in _RUN_FOLDERS and (value is None or (isinstance(value, str) and not value.strip())):
        raise ConfigError(
            f"{key} is empty: the run would be written into the current folder",
            key=key,
            got=repr(item),
            hint=f"give a folder ({key}=outputs/NAME), or leave {key} out for the default; "
            "a variable of the shell that is not set gives an empty value",
        )


def check_override_syntax(overrides: Sequence[str]) -> None:
    """An override Hydra cannot read because a value needs quotes: say so, with the fix.

    Metric strings such as ``P(rel=2)@5`` use characters of Hydra's override
    grammar; unquoted, Hydra answers with a grammar error naming none of that.
    Other grammar errors are left to Hydra's own message.
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import OverrideParseException

    parser = OverridesParser.create()
    for item in overrides:
        try:
            (parsed,) = parser.parse_overrides([item])
            if not parsed.key_or_group.strip():  # `=3`: Hydra crashed on it (a traceback)
                raise ConfigError(
                    f"the override {item!r} has no key before its '='",
                    expected="KEY=VALUE, e.g. depth=10, or GROUP=OPTION, e.g. retriever=bm25",
                    got=repr(item),
                )
            if not parsed.is_delete():  # ~hydra.run.dir: Hydra's default folder, not none
                _refuse_an_empty_folder(parsed.key_or_group, parsed.value(), item)
        except OverrideParseException as exc:
            _refuse_a_metric_in_the_key(item, exc)
            _refuse_no_equals(item, exc)
            fixed = quoted_override(item)
            if fixed is None:
                continue
            try:
                parser.parse_overrides([fixed])
            except OverrideParseException:
                continue  # quoting is not the fix: Hydra's message says more
            key, _, value = item.partition("=")
            # said with any credential in it redacted (a token ending in `=` is a likely
            # cause): the key's name and the names inside a mapping judge the values
            shown = f"{key}={redact_override_value(key, value)}"
            why = redact_mapping_text(str(exc).splitlines()[0])
            if value.lstrip().startswith("{"):
                # quoting the whole mapping would make it a string: its values are quoted
                example = f'{key}={{Name: "a value with spaces or ="}}'
                hint = (
                    "quote each value inside the mapping that holds spaces or ( ) = : ;, and "
                    "the whole override for the shell: " + shlex.quote(example)
                )
            else:
                hint = "quote the value, and the whole override for the shell: " + shlex.quote(
                    fixed
                )
            raise ConfigError(
                "Hydra cannot read this override: a value with ( ) = : ; or spaces, as in a "
                "metric string like P(rel=2)@5, must be quoted inside the override",
                key=key.lstrip("+~"),
                got=f"{shown} ({why})",
                hint=hint,
            ) from None


def _refuse_no_equals(item: str, exc: Exception) -> None:
    """``depth`` alone: Hydra's "missing EQUAL at '<EOF>'" and its grammar, said as
    evalframe says any other mistake (``~key`` deletes a key and needs none)."""
    if "=" in item or item.startswith("~"):
        return
    key = item.lstrip("+")
    raise ConfigError(
        f"override {item!r} has no '=': an override sets a key or picks a group's option",
        key=key,
        expected="KEY=VALUE or GROUP=OPTION",
        got=item,
        hint=f"give it a value, e.g. {key}=VALUE (`--cfg job` prints every key and its value)",
    ) from None


def _refuse_a_metric_in_the_key(item: str, exc: Exception) -> None:
    """``metrics.labels.Hit@1=R1``: a metric string is a key's last part, which Hydra's
    grammar cannot read (``@`` marks a package there). Said with the mapping form that
    sets the same entry (``'++metrics.labels={Hit@1: R1}'``, merged into the mapping; ``++``
    so that it also works where the pack has no mapping yet)."""
    key, sep, value = item.partition("=")
    parent, _, last = key.lstrip("+~").rpartition(".")
    if not sep or not parent or not re.search(r"[@()=:,\s]", last):
        return
    fixed = f"++{parent}={{{last}: {value}}}"
    raise ConfigError(
        f"Hydra cannot read this override: {last!r}, a metric string, cannot be the last "
        "part of a key on the command line",
        key=key.lstrip("+~"),
        got=f"{item} ({str(exc).splitlines()[0]})",
        hint=f"set the entry in its mapping, which keeps the others: {shlex.quote(fixed)}",
    ) from None
