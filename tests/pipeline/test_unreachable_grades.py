"""A graded measure on binary judgments (``P(rel=2)@5`` where every label is 1): the
warning says what the run will show under the metric policy in force."""

from __future__ import annotations

import pytest

from evalframe.core.types import GoldenQuery, GoldenSet
from evalframe.pipeline.config import validate_experiment
from evalframe.pipeline.run import _warn_unreachable_grades
from tests.conftest import Project, raw_config

GOLDEN = GoldenSet.build("g", [GoldenQuery(id="q1", text="t", judgments={"d1": 1})])


@pytest.mark.parametrize(
    ("policy", "said"),
    [
        ("skip", "P(rel=2)@5 ... so it is n/a on every query"),
        ("zero", "P(rel=2)@5 ... so it is 0 on every query (no_relevant: zero)"),
        # B.O.B's value for a query with nothing relevant: recall 1, precision has none
        ("bob", "R(rel=2)@5 ... so it is 1 on every query (no_relevant: bob)"),
        ("bob", "P(rel=2)@5 ... so it is 0 on every query (no_relevant: bob)"),
    ],
)
def test_the_warning_says_what_the_policy_makes_of_it(
    project: Project, capsys: pytest.CaptureFixture[str], policy: str, said: str
) -> None:
    metrics = {"measures": ["P(rel=2)@5", "R(rel=2)@5", "RR"], "policies": {"no_relevant": policy}}
    exp = validate_experiment(raw_config(project, metrics=metrics))
    capsys.readouterr()
    _warn_unreachable_grades(exp, GOLDEN)
    name, _, outcome = said.partition(" ... ")
    lines = [x for x in capsys.readouterr().err.splitlines() if x.startswith(f"warning: {name}")]
    assert len(lines) == 1
    assert "no golden query judges one that high (the highest label is 1)" in lines[0]
    assert outcome in lines[0]
