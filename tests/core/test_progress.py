"""Progress on stderr: drawn on a terminal after a second, silent otherwise."""

from __future__ import annotations

import io
import sys
import time

import pytest

from evalframe.core import progress


class Terminal(io.StringIO):
    """A stderr that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def test_nothing_is_drawn_when_stderr_is_not_a_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setattr(progress, "SHOW_AFTER", 0.0)
    assert not progress.enabled()
    with progress.step("indexing", total=10) as bar:
        bar.advance(10)
    assert err.getvalue() == ""


def test_a_step_on_a_terminal_is_drawn_and_cleared(monkeypatch: pytest.MonkeyPatch) -> None:
    err = Terminal()
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setattr(progress, "SHOW_AFTER", 0.0)
    assert progress.enabled()
    with progress.step("bm25: indexing 3 documents", total=3, unit="docs") as bar:
        bar.advance(2)
        time.sleep(0.3)  # the display refreshes 8 times a second
    assert "bm25: indexing 3 documents" in err.getvalue()
    assert progress._live is None  # the last step closed the display


def test_quiet_and_short_steps_draw_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    err = Terminal()
    monkeypatch.setattr(sys, "stderr", err)
    with progress.quiet():
        assert not progress.enabled()
        with progress.step("retrieving", total=5) as bar:
            bar.advance(5)
    with progress.step("a quick step"):  # shown only after SHOW_AFTER (1 s)
        pass
    assert "retrieving" not in err.getvalue() and "a quick step" not in err.getvalue()


def test_a_timer_step_shows_its_time_but_no_bar_count_or_eta(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    err = Terminal()
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setattr(progress, "SHOW_AFTER", 0.0)
    with (
        progress.step("loading the corpus"),
        progress.step("indexing", total=3, unit="docs") as bar,
    ):
        bar.advance(2)
        time.sleep(0.3)
    drawn = err.getvalue()
    timer = [line for line in drawn.splitlines() if "loading the corpus" in line][-1]
    counted = [line for line in drawn.splitlines() if "indexing" in line][-1]
    assert "0:00:0" in timer and "/" not in timer and "eta" not in timer and "━" not in timer
    assert "2/3" in counted and "docs" in counted and "eta" in counted
