"""A run's verdict in three states: a run with no required gate exits 0 like a passed one,
but nothing that could fail it was checked, and every report says so (it read "✓ PASSED")."""

from __future__ import annotations

import pytest

from evalframe.assess.gates import FAILED, PASSED, UNCHECKED, verdict_state
from evalframe.assess.results import GateResult


def gate(required: bool, passed: bool) -> GateResult:
    return GateResult(name="g", type="t", passed=passed, required=required, message="")


@pytest.mark.parametrize(
    ("gates", "state"),
    [
        ([], UNCHECKED),  # none configured
        ([gate(False, True), gate(False, False)], UNCHECKED),  # advisory only, one missed
        ([gate(True, True), gate(False, False)], PASSED),  # an advisory miss fails nothing
        ([gate(True, True), gate(True, False)], FAILED),
        ([gate(True, False), gate(False, True)], FAILED),
    ],
)
def test_the_three_states(gates: list[GateResult], state: str) -> None:
    assert verdict_state(gates) == state
    # gates.json's entries give the same answer as the gates themselves
    assert verdict_state([g.as_dict() for g in gates]) == state
