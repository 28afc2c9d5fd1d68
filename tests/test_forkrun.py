"""The tests' forked ``python -m evalframe`` (tests/forkrun.py) behaves as a new interpreter.

Most end-to-end tests run the command line through it; if it differed from a
new process, they would test something users never run. Each case here runs
the same command both ways and compares what a user sees.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import forkrun
from tests.conftest import Project

pytestmark = pytest.mark.skipif(not forkrun.forking(), reason="EVALFRAME_TEST_FORK=0 or no fork")


def fresh(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalframe", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def env_for(project: Project) -> dict[str, str]:
    return {
        **os.environ,
        "EVALFRAME_CACHE_DIR": str(project.root / ".cache"),
        "PYTHONIOENCODING": "utf-8",
    }


def test_a_config_error_reads_the_same_forked_and_fresh(project: Project) -> None:
    args = [*project.data_args(), "depth=abc"]
    forked = forkrun.run(args, cwd=project.root, env=env_for(project))
    new = fresh(args, project.root, env_for(project))
    assert (forked.returncode, forked.stdout, forked.stderr) == (
        new.returncode,
        new.stdout,
        new.stderr,
    )
    assert forked.returncode == 2
    assert "config key depth" in forked.stderr


def test_a_run_scores_and_reports_the_same_forked_and_fresh(project: Project) -> None:
    def shown(text: str) -> list[str]:  # but for the folder named and the time measured
        return [line for line in text.splitlines() if not line.startswith(("Saved", "  latency"))]

    runs = []
    for how, folder in ((forkrun.run, "a"), (fresh, "b")):
        env = {**env_for(project), "EVALFRAME_CACHE_DIR": str(project.root / f"cache-{folder}")}
        args = [*project.data_args(), f"hydra.run.dir={folder}"]
        runs.append(how(args, cwd=project.root, env=env))
    forked, new = runs
    assert forked.returncode == new.returncode == 0, forked.stderr + new.stderr
    metrics = [json.loads((project.root / d / "metrics.json").read_text()) for d in "ab"]
    assert metrics[0] == metrics[1]
    assert shown(forked.stdout) == shown(new.stdout)
    assert forked.stderr == new.stderr


def test_the_run_sees_its_own_folder_and_environment(project: Project) -> None:
    """The fork takes the request's folder and environment, as a new interpreter started
    there would: a retriever module in the project folder answers from a variable only
    this run's environment sets."""
    (project.root / "probe_here.py").write_text(
        "import os\ndef search(query, k):\n    return [os.environ['EVALFRAME_PROBE']]\n"
    )
    env = {**env_for(project), "EVALFRAME_PROBE": "install"}
    args = [*project.data_args(), "retriever=python", "retriever.target=probe_here:search"]
    done = forkrun.run([*args, "hydra.run.dir=out"], cwd=project.root, env=env)
    assert done.returncode in (0, 1), done.stderr
    ranked = (project.root / "out" / "run.trec").read_text().splitlines()
    # every query got the one document the environment named
    assert {line.split()[2] for line in ranked} == {"install"}
    assert len(ranked) == 4


def test_a_timeout_raises_as_subprocess_run_does(project: Project) -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        forkrun.run(project.data_args(), cwd=project.root, env=env_for(project), timeout=0.01)
    # the server is still there for the next run
    assert forkrun.run(["--version"], cwd=project.root).returncode == 0


def test_an_environment_that_changes_how_python_starts_gets_a_new_interpreter(
    tmp_path: Path,
) -> None:
    """``PYTHONPATH`` (a plugin on the path, a ``sitecustomize``) takes effect only when
    an interpreter starts: such a run is not forked."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import sys\nsys.stderr.write('new interpreter\\n')\n")
    env = {**os.environ, "PYTHONPATH": str(site)}
    done = forkrun.run(["--version"], cwd=tmp_path, env=env)
    assert done.returncode == 0
    assert "new interpreter" in done.stderr
    plain = forkrun.run(["--version"], cwd=tmp_path)
    assert "new interpreter" not in plain.stderr


def test_runs_from_two_threads_overlap_as_two_processes_would(project: Project) -> None:
    """The server forks one run at a time; a run asked for while another thread's is in
    it gets a new interpreter, so runs meant to overlap do. Each run's retriever waits
    for the other to have started: run one after the other, the first would wait in vain."""
    import threading

    (project.root / "meet.py").write_text(
        "import os, pathlib, time\n"
        "def search(query, k):\n"
        "    pathlib.Path(os.environ['MEET_ME']).touch()\n"
        "    end = time.monotonic() + 60\n"
        "    while not pathlib.Path(os.environ['MEET_OTHER']).exists():\n"
        "        if time.monotonic() > end:\n"
        "            raise SystemExit('the other run never started')\n"
        "        time.sleep(0.05)\n"
        "    return ['install']\n"
    )
    done: dict[str, subprocess.CompletedProcess[str]] = {}

    def run(me: str, other: str) -> None:
        env = {
            **env_for(project),
            "EVALFRAME_CACHE_DIR": str(project.root / f"cache-{me}"),
            "MEET_ME": str(project.root / me),
            "MEET_OTHER": str(project.root / other),
        }
        args = [*project.data_args(), "retriever=python", "retriever.target=meet:search"]
        done[me] = forkrun.run([*args, f"hydra.run.dir=out-{me}"], cwd=project.root, env=env)

    threads = [threading.Thread(target=run, args=pair) for pair in (("a", "b"), ("b", "a"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=150)
    assert sorted(done) == ["a", "b"]
    for proc in done.values():
        assert proc.returncode in (0, 1), proc.stderr  # scored (gates may fail)
        assert "never started" not in proc.stderr
