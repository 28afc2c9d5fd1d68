"""``evalframe ui`` stops everything it started: the MLflow server and its uvicorn
workers (and the job runner with its huey consumers, for a user who turns MLflow's
jobs on), on Ctrl-C and on SIGTERM. Real processes, checked in /proc afterwards."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from evalframe_mlflow.commands import JOB_EXECUTION, group_members, port_taken, ui_environment

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads process groups from /proc"),
]

# A stand-in for `mlflow ui`: a tree of helpers two levels deep, one of which ignores
# SIGTERM (so it must be killed), and a grandchild orphaned when its parent exits.
TREE = textwrap.dedent(
    """
    import os, signal, subprocess, sys, time
    sleeper = [sys.executable, "-c", "import time; time.sleep(600)"]
    stubborn = [sys.executable, "-c",
                "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                "time.sleep(600)"]
    runner = [sys.executable, "-c",
              "import subprocess, sys, time; "
              f"[subprocess.Popen({sleeper!r}) for _ in range(2)]; time.sleep(600)"]
    kids = [subprocess.Popen(c) for c in (sleeper, stubborn, runner)]
    with open(sys.argv[1], "w") as f:
        f.write("ready")
    time.sleep(600)
    """
)


def _alive(pids: list[int]) -> list[int]:
    """The pids still running (a zombie has stopped running)."""
    left = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ("Z", "X"):
            left.append(pid)
    return left


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def test_a_port_another_program_listens_on_is_refused_and_a_free_one_is_not(
    unused_port: int,
) -> None:
    with socket.socket() as other:
        other.bind(("127.0.0.1", unused_port))
        other.listen()
        taken = port_taken("127.0.0.1", unused_port)
        assert taken is not None
        assert taken.key == "--port"
        assert taken.hint == f"use another port (--port {unused_port + 1})"  # not MLflow
    assert port_taken("127.0.0.1", unused_port) is None
    # an address this machine does not have is the host's mistake, not the port's
    elsewhere = port_taken("192.0.2.1", unused_port)  # TEST-NET-1, never a local address
    assert elsewhere is not None and elsewhere.key == "--host"


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--port", "99999"], "argument --port: 99999 is not between 1 and 65535"),
        (["--port", "x"], "argument --port: 'x' is not a whole number"),
        (["--workers", "0"], "argument --workers: 0 is not between 1 and 64"),
    ],
)
def test_a_port_or_worker_count_out_of_range_is_a_usage_error(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 2 with argparse's line; a port above 65535 crashed in bind() (exit 3)."""
    from evalframe_mlflow.commands import ui_main

    with pytest.raises(SystemExit) as stopped:
        ui_main(argv)
    assert stopped.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"evalframe ui: error: {said}"


def test_the_ui_turns_mlflows_job_runner_off_unless_the_user_set_it() -> None:
    assert ui_environment({"PATH": "/bin"}) == {"PATH": "/bin", JOB_EXECUTION: "false"}
    assert ui_environment({JOB_EXECUTION: "true"})[JOB_EXECUTION] == "true"  # theirs, kept


def _wait_for(check: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.2)
    return False


def test_serve_stops_the_whole_group_on_sigterm_and_kills_what_ignores_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "tree.py").write_text(TREE)
    ready = tmp_path / "ready"
    code = (
        "import sys; from evalframe_mlflow.commands import serve; "
        f"sys.exit(serve([sys.executable, {str(tmp_path / 'tree.py')!r}, {str(ready)!r}], "
        "grace=1.0))"
    )
    log = tmp_path / "outer.log"
    with open(log, "w") as sink:
        outer = subprocess.Popen([sys.executable, "-c", code], stderr=sink)
    try:
        assert _wait_for(ready.is_file, 60)
        # the server's group: the tree's leader, its three children and two grandchildren
        leader = next(
            int(p.name)
            for p in Path("/proc").iterdir()
            if p.name.isdigit() and _ppid(int(p.name)) == outer.pid
        )
        assert _wait_for(lambda: len(group_members(leader) or []) == 6, 30)
        members = group_members(leader) or []
        assert outer.pid not in members  # the server has a group of its own
        outer.send_signal(signal.SIGTERM)
        assert outer.wait(timeout=30) == 0
        assert "stopping the MLflow UI" in log.read_text()
        assert _alive(members) == []
    finally:
        if outer.poll() is None:
            outer.kill()


def _ppid(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def test_ctrl_c_stops_evalframe_ui_and_every_process_it_started(
    store: str, tmp_path: Path, unused_port: int
) -> None:
    """The real `mlflow ui` behind `evalframe ui`: the server and its uvicorn worker, and
    not MLflow's job runner, which browsing runs does not need (`ui_environment`)."""
    port = unused_port
    leader = 0
    env = {**os.environ, "EVALFRAME_CACHE_DIR": str(tmp_path / "cache")}
    env.pop(JOB_EXECUTION, None)
    log = tmp_path / "ui.log"
    with open(log, "w") as sink:
        # with Ctrl-C's default action, as in a terminal (a background shell job, such as a
        # CI runner's, hands its children SIGINT ignored)
        sigint_default = (
            "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
            "os.execv(sys.argv[1], sys.argv[1:])"
        )
        ui = subprocess.Popen(
            [
                sys.executable,
                "-c",
                sigint_default,
                sys.executable,
                "-m",
                "evalframe",
                "ui",
                "--uri",
                store,
                "--port",
                str(port),
            ],
            cwd=tmp_path,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:

        def up() -> bool:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                    return bool(r.status == 200)
            except (urllib.error.URLError, OSError):
                assert ui.poll() is None, log.read_text()
                return False

        assert _wait_for(up, 180)
        leader = next(
            int(p.name)
            for p in Path("/proc").iterdir()
            if p.name.isdigit() and _ppid(int(p.name)) == ui.pid
        )
        # wait for the server's helper (uvicorn) to start; the leader is `mlflow ui`
        _wait_for(lambda: len(group_members(leader) or []) >= 2, 60)
        members = group_members(leader) or []
        assert len(members) >= 2, members
        commands = [_cmdline(pid) for pid in members]
        assert any("uvicorn" in c for c in commands), commands
        assert not any("huey" in c or "_job_runner" in c for c in commands), commands
        # a second UI on the same port: refused before MLflow starts (which would log the
        # bind error among its start-up lines and exit 0), pointing at the one running
        second = subprocess.run(
            [sys.executable, "-m", "evalframe", "ui", "--uri", store, "--port", str(port)],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert second.returncode == 2, second.stdout + second.stderr
        assert second.stdout == ""
        assert second.stderr == (
            f"error: option --port: cannot serve the MLflow UI on 127.0.0.1:{port}: Address "
            "already in use (expected a port no other program listens on)\n"
            f"  hint: an MLflow server already answers there: open http://127.0.0.1:{port}, "
            f"or use another port (--port {port + 1})\n"
        )
        ui.send_signal(signal.SIGINT)  # what Ctrl-C sends to the terminal's foreground process
        assert ui.wait(timeout=60) == 0
        # the address carries no workflowType: with it, the "Model training" click that
        # makes the classic view the browser's default would do nothing (MLflow 3.17)
        said = log.read_text().splitlines()
        assert said[0] == (
            f"MLflow UI for {store} at http://127.0.0.1:{port}/#/experiments (Ctrl-C stops it)"
        )
        assert said[1].startswith('  first time in this browser: pick "Model training"')
        assert _alive(members) == []
        assert group_members(leader) == []
    finally:
        if ui.poll() is None:
            ui.kill()
        if leader:  # never leave a server behind, even when the test fails
            with contextlib.suppress(ProcessLookupError):
                os.killpg(leader, signal.SIGKILL)
