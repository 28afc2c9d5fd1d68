"""Number options: argparse says what is out of range (exit 2) before anything runs."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from evalframe.core.argtypes import number, whole


@pytest.mark.parametrize(
    ("parse", "text", "said"),
    [
        (whole(1, 64), "0", "0 is not between 1 and 64"),
        (whole(1, 64), "65", "65 is not between 1 and 64"),
        (whole(1, 64), "1.5", "'1.5' is not a whole number"),
        (whole(0), "-1", "-1 is not at least 0"),
        (whole(high=9), "10", "10 is not at most 9"),
        (number(0, 1, above=True, below=True), "0", "0 is not strictly between 0 and 1"),
        (number(0, 1, above=True, below=True), "1", "1 is not strictly between 0 and 1"),
        (number(0, 1, above=True), "0", "0 is not above 0 and at most 1"),
        (number(0, 1, below=True), "1", "1 is not at least 0 and below 1"),
        (number(0, above=True), "0", "0 is not above 0"),
        (number(high=1, below=True), "1", "1 is not below 1"),
        (number(), "nan", "'nan' is not a finite number"),
        (number(), "-inf", "'-inf' is not a finite number"),
        (number(0, 1), "x", "'x' is not a number"),
    ],
)
def test_out_of_range_says_the_range(parse, text: str, said: str) -> None:  # type: ignore[no-untyped-def]  # parse is one of two factories' results
    with pytest.raises(argparse.ArgumentTypeError) as err:
        parse(text)
    assert str(err.value) == said


def test_the_ends_of_a_closed_range_and_what_lies_inside_pass() -> None:
    assert [whole(1, 64)(t) for t in ("1", "64", "7")] == [1, 64, 7]
    assert [number(0, 1)(t) for t in ("0", "1", "0.25")] == [0.0, 1.0, 0.25]
    assert number(0, 1, above=True, below=True)("1e-9") == 1e-9
    assert whole()("-12") == -12


def test_a_command_says_it_in_argparses_line_with_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`compare --alpha 2` crashed on an index (exit 3); `--seed -1` in NumPy."""
    from evalframe.app.cli import main

    for argv, said in (
        (["--alpha", "2"], "argument --alpha: 2 is not strictly between 0 and 1"),
        (["--alpha", "nan"], "argument --alpha: 'nan' is not a finite number"),
        (["--seed", "-1"], "argument --seed: -1 is not at least 0"),
    ):
        with pytest.raises(SystemExit) as stopped:
            main(["compare", "a", "b", *argv])
        assert stopped.value.code == 2
        assert capsys.readouterr().err.splitlines()[-1] == f"evalframe compare: error: {said}"


def test_folder_takes_a_new_or_existing_folder_and_refuses_a_file(tmp_path: Path) -> None:
    from evalframe.core.argtypes import folder

    assert folder(str(tmp_path / "new")) == tmp_path / "new"  # made later, by the writer
    assert folder(str(tmp_path)) == tmp_path
    named = tmp_path / "out.json"
    named.write_text("")
    with pytest.raises(argparse.ArgumentTypeError, match=r"out\.json is a file, not a folder"):
        folder(str(named))
