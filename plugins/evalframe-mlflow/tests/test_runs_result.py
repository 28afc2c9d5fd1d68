"""`evalframe runs`' result column: a failed gate and an error read differently."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from evalframe_mlflow.commands import _result


def run(status: str, **tags: str) -> SimpleNamespace:
    return SimpleNamespace(info=SimpleNamespace(status=status), data=SimpleNamespace(tags=tags))


@pytest.mark.parametrize(
    ("status", "tags", "shown"),
    [
        ("FINISHED", {"evalframe.gates_passed": "true"}, "passed"),
        ("FINISHED", {"evalframe.gates_passed": "false"}, "FAILED"),  # a gate failed: exit 1
        ("FAILED", {}, "error"),  # an error stopped it (it was "failed", one case apart)
        ("RUNNING", {}, "running"),
        ("KILLED", {}, "killed"),
        ("FINISHED", {}, "—"),
        ("FINISHED", {"evalframe.sweep": "true"}, "sweep"),
        ("FAILED", {"evalframe.sweep": "true"}, "sweep failed"),
    ],
)
def test_each_way_a_run_ends_has_its_own_word(
    status: str, tags: dict[str, str], shown: str
) -> None:
    assert _result(run(status, **tags)) == shown
