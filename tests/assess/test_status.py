"""A query's status mark (assess.runfolder.query_status), worked by hand."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from evalframe.assess.runfolder import FAIL, NEGATIVE, PASS, UNSCORED, WARN, query_status


@dataclass(frozen=True)
class Rule:
    criterion: str = "RR"
    pass_at: float = 1.0
    fail_below: float = 0.5


@pytest.mark.parametrize(
    ("value", "negative", "status"),
    [
        (1.0, False, PASS),  # at pass_at
        (0.75, False, WARN),  # in between
        (0.5, False, WARN),  # fail_below itself is not below it
        (0.25, False, FAIL),
        (0.0, True, NEGATIVE),  # a negative example, whatever its value
        (math.nan, True, NEGATIVE),
        # a query the policy left out (missing_query: skip) has no value: it is not
        # "in between" (the Galaxy review found v1-q47 filed under ⚠)
        (math.nan, False, UNSCORED),
        (None, False, UNSCORED),
    ],
)
def test_status_marks(value: float | None, negative: bool, status: str) -> None:
    assert query_status(value, negative, Rule()) == status
