"""Tables for the terminal: drawn by rich, fitted to 100 columns, plain unless on a terminal.

Every table evalframe prints (``runs``, ``compare``, the sweep summary, the
report's slice tables) goes through :func:`table` and :func:`render`, so they
share one look and one width rule:

* by default a table fits :data:`WIDTH` columns (or the terminal, when it is
  narrower): a table with too many columns is stacked in parts, each
  starting with the columns that name a row (:func:`split_columns`); within
  a part rich shares the width out, wraps text cells at word boundaries and
  ends what still does not fit with ``…``; numbers are never cut;
* ``wide=True`` (the commands' ``--wide``) lays every cell out in full;
* styles (bold headers, dim marks) only when ``color`` is asked for, which
  callers do when standard output is a terminal; piped or redirected output
  is plain text with no escape codes and no trailing spaces.

rich is imported when a table is drawn, not when this module is imported.
"""

from __future__ import annotations

import io
import os
import shutil
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TextIO

__all__ = ["WIDTH", "Col", "color_for", "fit_width", "render", "split_columns", "table"]

#: The width every table fits by default.
WIDTH = 100
#: "Unbounded": what ``wide`` lays a table out in.
_UNBOUNDED = 100_000


@dataclass(frozen=True)
class Col:
    """One column: its header and how its cells behave when the table must shrink.

    ``kind``: ``"text"`` wraps at word boundaries (a word longer than the
    column folds onto the next line), ``"id"`` stays on one line and is cut
    with ``…`` (run ids, names), ``"number"`` is right-aligned and never cut.
    """

    header: str
    kind: Literal["text", "id", "number"] = "text"
    min_width: int | None = None
    max_width: int | None = None


def fit_width(wide: bool = False, stream: TextIO | None = None) -> int:
    """The width to draw in: :data:`WIDTH`, or the terminal's when narrower; unbounded if wide."""
    if wide:
        return _UNBOUNDED
    out = stream or sys.stdout
    if _isatty(out):
        return max(40, min(WIDTH, shutil.get_terminal_size((WIDTH, 24)).columns))
    return WIDTH


def color_for(stream: TextIO | None = None) -> bool:
    """Styles only on a terminal, and never with ``NO_COLOR`` set (no-color.org)."""
    return _isatty(stream or sys.stdout) and not os.environ.get("NO_COLOR")


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # a closed or fake stream
        return False


def table(
    columns: Sequence[Col | str],
    rows: Iterable[Sequence[Any]],
    *,
    title: str | None = None,
    caption: str | None = None,
    styles: Sequence[str | None] | None = None,
) -> Any:
    """A rich ``Table`` with evalframe's look: a rule under the header, no outer border.

    ``styles`` gives each row a rich style (``"bold"``) or None; it shows only
    when the table is rendered with colour.
    """
    from rich import box
    from rich.table import Table

    t = Table(
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        title=title,
        title_justify="left",
        title_style="",
        caption=caption,
        caption_justify="left",
        caption_style="",
        header_style="bold",
        collapse_padding=True,
    )
    for col in columns:
        c = Col(col) if isinstance(col, str) else col
        t.add_column(
            c.header,
            justify="right" if c.kind == "number" else "left",
            no_wrap=c.kind != "text",
            overflow="ellipsis" if c.kind == "id" else "fold",
            min_width=c.min_width,
            max_width=c.max_width,
        )
    for i, row in enumerate(rows):
        style = styles[i] if styles is not None and i < len(styles) else None
        t.add_row(*("" if v is None else str(v) for v in row), style=style)
    return t


def split_columns(
    columns: Sequence[Col], rows: Sequence[Sequence[Any]], *, keep: int, width: int
) -> list[list[int]]:
    """Column indexes of each part of a table too wide for ``width``, stacked to fit.

    The first ``keep`` columns (what names a row) start every part; the other
    columns are packed in order into parts whose natural width fits. A table
    that fits is one part; so is any table when ``width`` is unbounded.
    """

    def natural(i: int) -> int:
        cells = [len(str(r[i])) for r in rows if i < len(r)]
        width = max([len(columns[i].header), *cells])
        cap = columns[i].max_width  # a capped column is drawn no wider (cut or wrapped)
        return (min(width, cap) if cap is not None else width) + 2  # the gap between columns

    key = list(range(min(keep, len(columns))))
    base = sum(natural(i) for i in key) - 2  # no gap before the first column
    parts: list[list[int]] = []
    current: list[int] = []
    used = base
    for i in range(len(key), len(columns)):
        w = natural(i)
        if current and used + w > width:
            parts.append(key + current)
            current, used = [], base
        current.append(i)
        used += w
    parts.append(key + current)
    return parts


def render(*renderables: Any, width: int = WIDTH, color: bool = False) -> str:
    """Draw rich renderables (tables, text) as text ``width`` columns wide at most.

    Without colour the text is plain: no escape codes, and no spaces at the
    ends of lines (rich pads cells to the column width).
    """
    from rich.console import Console

    buf = io.StringIO()
    console = Console(
        file=buf,
        width=width,
        force_terminal=color,
        color_system="standard" if color else None,
        no_color=not color,
        highlight=False,
        emoji=False,
        markup=False,
        legacy_windows=False,
        soft_wrap=False,
    )
    for r in renderables:
        console.print(r)
    return "\n".join(line.rstrip() for line in buf.getvalue().rstrip("\n").split("\n"))
