"""The report's slice tables on the terminal: every part names its rows."""

from __future__ import annotations

from evalframe.core.console import WIDTH
from evalframe.report.terminal import _table


def test_a_slice_table_wider_than_the_terminal_keeps_its_value_column_in_every_part() -> None:
    """12 metrics (Galaxy: Hit, RR and nDCG at 1, 3, 5, 10) do not fit 100 columns; in one
    part rich squeezed the topic column to nothing. Stacked, each part starts with the
    topic and the query count, and every line fits."""
    metrics = [f"{m}@{k}" for k in (1, 3, 5, 10) for m in ("Hit", "RR", "nDCG")]
    rows = [
        ["genome-annotation", "6", *(["0.500"] * 12)],
        ["variant-analysis", "9", *(["0.444"] * 12)],
    ]
    lines = _table(["topic", "queries", *metrics], rows)
    assert max(len(line) for line in lines) <= WIDTH
    headers = [line.split() for line in lines if line.strip().startswith("topic")]
    assert len(headers) == 2  # two parts
    assert [h[:2] for h in headers] == [["topic", "queries"]] * 2
    assert [m for h in headers for m in h[2:]] == metrics  # every metric once, in order
    rows_drawn = [line.split()[0] for line in lines if line.strip()[:1].isalpha()]
    rows_drawn = [r for r in rows_drawn if r != "topic"]
    assert rows_drawn.count("genome-annotation") == 2
    assert rows_drawn.count("variant-analysis") == 2
