"""Table widths (core.console): a capped column is measured at its cap."""

from __future__ import annotations

from evalframe.core.console import Col, split_columns


def test_a_capped_column_counts_at_its_cap_when_parts_are_cut() -> None:
    """`evalframe runs --max 3` printed a 72-column table in two parts: the run name's
    40-character cell was counted whole, though the column is drawn 24 wide."""
    columns = [Col("run", "id"), Col("name", "id", max_width=24), Col("R@5", "number")]
    rows = [["abc12345", "x" * 40, "0.844"]]
    # drawn: 8, a gap of 2, min(40, 24), a gap of 2, 5 = 41 columns
    assert split_columns(columns, rows, keep=1, width=41) == [[0, 1, 2]]
    assert split_columns(columns, rows, keep=1, width=40) == [[0, 1], [0, 2]]
