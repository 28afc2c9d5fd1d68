"""evalframe.core.messages: one warning per line, a repeated one said once with its count."""

from __future__ import annotations

import pytest

from evalframe.core.messages import Tally, kept, kept_so_far, shown, warn


def test_warn_is_one_line_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    warn("3 things happened")
    assert capsys.readouterr() == ("", "warning: 3 things happened\n")


def test_shown_cuts_long_lists() -> None:
    assert shown(["a", "b"]) == "a, b"
    assert shown([str(i) for i in range(12)], limit=3) == "0, 1, 2 …"


def test_a_tally_says_each_kind_once_with_the_count_and_the_first_place(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with Tally() as tally:
        for i in range(12):
            tally.add("query id(s) are also document ids", f"q{i}", where=f"g.jsonl:{i + 1}")
        tally.add("odd character(s)", where="r:3:4", n=5)
        assert len(tally) == 17 and tally.count("odd character(s)") == 5
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        "warning: 12 query id(s) are also document ids: q0, q1, q2, q3, q4, q5, q6, q7, q8, q9 "
        "… (first at g.jsonl:1)",
        "warning: 5 odd character(s) (first at r:3:4)",
    ]


def test_a_tally_is_dropped_when_reading_fails(capsys: pytest.CaptureFixture[str]) -> None:
    """The error is what the user must read; half-counted warnings would only distract."""
    tally = Tally()

    def read() -> None:
        with tally:
            tally.add("repeat(s)", "a")
            raise ValueError("bad line")

    with pytest.raises(ValueError, match="bad line"):
        read()
    assert capsys.readouterr().err == ""
    assert len(tally) == 0


def test_kept_collects_each_warning_once_in_order_and_only_inside(
    capsys: pytest.CaptureFixture[str],
) -> None:
    warn("before")  # said, not kept: no block is open
    with kept() as said:
        warn("first")
        with Tally() as tally:
            tally.add("ids repeated", "d1", "run.trec:3")
            tally.add("ids repeated", "d2")
        warn("first")  # printed again, kept once
        with kept() as inner:  # a nested block adds to the outer one
            warn("second")
        assert inner is said
        assert kept_so_far() == said
    warn("after")
    assert said == ["first", "2 ids repeated: d1, d2 (first at run.trec:3)", "second"]
    assert kept_so_far() == []
    assert capsys.readouterr().err.count("warning: first") == 2
