"""Argument types for command-line options: numbers (ranges said, NaN refused) and
output folders (a file given for one refused).

Why here: ``type=int`` or ``type=float`` lets a value through that the code
below cannot take (a seed of -1 crashed NumPy; ``--alpha 2`` an index; a port
above 65535 ``bind()``; ``--out`` naming a file, ``mkdir``), each then reported as
evalframe's bug with exit 3.
With these, argparse says what was wrong in its own one line, with exit 2,
before anything runs. Core and plugins' commands share them (public API).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from pathlib import Path

__all__ = ["folder", "number", "whole"]


def folder(text: str) -> Path:
    """An argparse ``type``: a folder to write into, new or existing, not a file."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file, not a folder")
    return path


def whole(low: int | None = None, high: int | None = None) -> Callable[[str], int]:
    """An argparse ``type``: a whole number from ``low`` to ``high`` (either end open)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        _check(value, low, high, False, False)
        return value

    return parse


def number(
    low: float | None = None,
    high: float | None = None,
    *,
    above: bool = False,
    below: bool = False,
) -> Callable[[str], float]:
    """An argparse ``type``: a finite number from ``low`` to ``high``.

    ``above`` excludes ``low`` itself and ``below`` excludes ``high`` (a
    significance level is strictly between 0 and 1). NaN and the infinities
    are refused: every comparison with NaN is false, so it would pass any
    range check and mean nothing.
    """

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
        _check(value, low, high, above, below)
        return value

    return parse


def _check(value: float, low: float | None, high: float | None, above: bool, below: bool) -> None:
    too_low = low is not None and (value <= low if above else value < low)
    too_high = high is not None and (value >= high if below else value > high)
    if not (too_low or too_high):
        return
    if low is not None and high is not None:
        if above == below:
            ends = f"{'strictly ' if above else ''}between {low:g} and {high:g}"
        else:
            start = f"{'above' if above else 'at least'} {low:g}"
            ends = f"{start} and {'below' if below else 'at most'} {high:g}"
        raise argparse.ArgumentTypeError(f"{value:g} is not {ends}")
    if low is not None:
        raise argparse.ArgumentTypeError(
            f"{value:g} is not {'above' if above else 'at least'} {low:g}"
        )
    raise argparse.ArgumentTypeError(f"{value:g} is not {'below' if below else 'at most'} {high:g}")
