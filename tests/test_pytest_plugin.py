"""The pytest plugin, used the way a team would: pytester runs a quality test file."""

from __future__ import annotations

from pathlib import Path

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
                          'gates.mrr.op="<"', "gates.mrr.value=0.5").assert_gates()  # RR is 1
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*1 required gate(s) failed:*", "*✗ mrr: RR = *"])


def test_a_failure_on_a_set_not_blessed_says_the_verdict_is_provisional(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shipped KnowCode set is pending its human spot-check: the run's Result line
    says the verdict is provisional, and the test's failure says it too."""
    monkeypatch.setenv("EVALFRAME_CACHE_DIR", str(tmp_path / ".cache"))
    pytester.makepyfile(
        """
        def test_retrieval_quality(evalframe_run):
            run = evalframe_run("+experiment=knowcode", "tracking=none")
            assert run.verdict_warnings and "not blessed" in run.verdict_warnings[0]
            run.assert_gates()
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*✗ easy_right_at_rank_1: every query where difficulty=easy has RR ≥ 1: 7 of 13 do*",
            "*- q_010: RR = 0.500*",
            "*provisional: gated on golden set 'golden_v1.0', which is not blessed*",
        ]
    )


def test_the_fixture_writes_nothing_outside_tmp_path_unless_asked(
    pytester: pytest.Pytester, project: Project, monkeypatch: pytest.MonkeyPatch, tmp_path_factory
) -> None:
    """Tracking on, a shell that names another store and cache: all of it lands in tmp_path."""
    outside = tmp_path_factory.mktemp("outside")
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("EVALFRAME_CACHE_DIR", raising=False)
    monkeypatch.delenv("EVALFRAME_TRACKING", raising=False)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{outside / 'shell.db'}")
    data = ", ".join(f"'{a}'" for a in project.data_args())
    asked = outside / "asked.db"
    pytester.makepyfile(
        f"""
        def test_hermetic(evalframe_run, tmp_path):
            run = evalframe_run({data}, "tracking=mlflow", "stats.bootstrap=20")
            run.assert_ok()
            assert run.tracking_uri == f"sqlite:///{{tmp_path / 'mlflow.db'}}"
            assert (tmp_path / "mlflow.db").is_file(), run.stderr
            assert (tmp_path / "mlartifacts").is_dir() and (tmp_path / "cache").is_dir()

        def test_a_real_store_when_asked(evalframe_run):
            run = evalframe_run({data}, "stats.bootstrap=20", tracking_uri="sqlite:///{asked}")
            run.assert_ok()
        """
    )
    before = sorted(p.name for p in pytester.path.iterdir())
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    # the folder pytest ran from, the home folder and the shell's store are as they were
    after = sorted(
        p.name
        for p in pytester.path.iterdir()
        # pytester's own: the inner pytest's basetemp, its captured output
        if p.name not in ("__pycache__", "stdout", "stderr") and not p.name.startswith("runpytest-")
    )
    assert after == before
    assert list(home.iterdir()) == []
    assert sorted(p.name for p in outside.iterdir()) == ["asked.db", "mlartifacts"]
