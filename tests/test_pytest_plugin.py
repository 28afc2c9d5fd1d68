"""The pytest plugin, used the way a team would: pytester runs a quality test file."""

from __future__ import annotations

import pytest

from tests.conftest import Project

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.slow


def test_quality_tests_pass_and_fail_with_readable_gate_messages(
    pytester: pytest.Pytester, project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVALFRAME_CACHE_DIR", str(project.root / ".cache"))
    data = " ".join(f"'{a}'" for a in project.data_args())
    pytester.makepyfile(
        f"""
        def test_quality(evalframe_run):
            run = evalframe_run({data.replace(" ", ", ")}, "gates=quickstart")
            run.assert_gates()
            assert run.metric("RR") > 0.5

        def test_too_strict(evalframe_run):
            evalframe_run({data.replace(" ", ", ")}, "gates=quickstart",
                          "gates.mrr.value=1.01").assert_gates()
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*1 required gate(s) failed:*", "*✗ mrr: RR = *"])
