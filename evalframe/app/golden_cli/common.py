"""What the ``golden`` subcommands share: argument types, golden-set options, loading, output."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from typing import Any

from evalframe.core.argtypes import number, whole
from evalframe.core.errors import ConfigError

__all__ = ["add_format", "count", "emit", "fraction", "load", "share"]


#: A share of the set (``--fraction``, ``--plan-fill``): from 0 to 1.
fraction = number(0, 1)
_share = number(0, 1, above=True)


def share(text: str) -> float:
    """A share of the set to draw (``golden sample --fraction``): above 0 (a sample of
    nothing is no sample) and at most 1, every wrong value said the same way."""
    try:
        return _share(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"{text} is not a fraction above 0 and at most 1 (0.15 draws 15% of the set)"
        ) from None


#: A number of records or passages (``--n``, ``--min-*``): 0 or more.
count = whole(0)


def ratio(text: str) -> float:
    """A similarity threshold: a number from 0 up (above 1 matches nothing); NaN and a
    negative one would pass every pair or none without saying so."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if math.isnan(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a ratio from 0 up (above 1: off)")
    return value


def add_format(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--format",
        metavar="F",
        help="dataset plugin that reads the file (jsonl, knowcode, ...); default: inferred "
        "(*.jsonl or a folder of them -> jsonl, *.json -> knowcode)",
    )
    p.add_argument(
        "--param",
        action="append",
        metavar="KEY=VALUE",
        help="extra dataset plugin setting (repeatable), e.g. --param domain_field=area",
    )
    p.add_argument(
        "--queries",
        metavar="FILE",
        help="a separate queries file joined to the golden set by id, for gold without text "
        "(Galaxy): JSONL/JSON records, {id: text} or TSV",
    )
    p.add_argument(
        "--queries-param",
        action="append",
        metavar="KEY=VALUE",
        help="queries file setting (repeatable): id_field, text_field (default id, query)",
    )


def emit(args: argparse.Namespace, data: Callable[[], Any], text: Callable[[], str]) -> None:
    """Print ``data()`` as JSON with ``--json``, else ``text()`` (each built only when asked)."""
    if getattr(args, "json", False):
        print(json.dumps(data(), indent=2, ensure_ascii=False))
    else:
        print(text())


def load(path: str, args: argparse.Namespace, label: str | None = None, **kwargs: Any) -> Any:
    """The golden set at ``path`` read with ``--format``/``--param``/``--queries``; the format
    inferred from the path is said on stderr."""
    from evalframe.golden.load import load_golden, parse_params

    queries = None
    if args.queries is not None:
        from pydantic import ValidationError

        from evalframe.golden.queries import QueriesConfig

        try:
            queries = QueriesConfig(
                path=args.queries, **parse_params(args.queries_param, "--queries-param")
            )
        except ValidationError as exc:
            raise ConfigError(
                f"--queries-param: {exc.errors()[0]['msg']} ({exc.errors()[0]['loc'][0]!r})",
                key="--queries-param",
                expected="id_field=NAME or text_field=NAME",
            ) from None
    loaded = load_golden(
        path, args.format, parse_params(args.param, "--param"), queries=queries, **kwargs
    )
    if loaded.inferred:
        print(f"{label or path}: {loaded.inferred}", file=sys.stderr)
    return loaded
