"""``python -m evalframe ARGS`` for the tests, without paying the interpreter's start each time.

Why: about three hundred tests run the command line as a user does, and each
such process spends most of its CPU importing (Python, NumPy, pydantic,
Hydra's parser, evalframe) before it reads its first override. On CI's two
cores that was about a sixth of the suite (docs/performance.md, "The test
suite's time"). Here one server process per pytest worker imports those
modules once, and each run is a ``fork`` of it: a process of its own (its own
folder, environment, files 0-2, exit code, atexit handlers), that starts where
``python -m evalframe`` would have finished importing. What runs is the real
entry point (``evalframe/__main__.py``), with real Hydra composition.

It is the tests' tool, not evalframe's: the product never forks. A run falls
back to a plain ``subprocess.run`` when the fork could differ from a new
interpreter: an environment that changes how Python starts (``PYTHON*``,
``LANG``, ``LC_*``), a platform without ``fork``, or ``EVALFRAME_TEST_FORK=0``
(which runs the whole suite the slow way, to check the two agree).

The server preloads only modules the command line imports anyway, and never
dvc, torch or matplotlib: the tests that check those stay lazy start their
own interpreters. The MLflow plugin's tests, whose runs all track, ask for a
second server that has imported mlflow's client and its SQL store too.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["MLFLOW", "forking", "run"]

#: What ``python -m evalframe`` imports before its first override is read, and what
#: composing and running a small experiment imports next (numbers in the module docstring).
PRELOAD = (
    "evalframe",
    "evalframe.app.cli",
    "evalframe.app.hydra_app",
    "evalframe.app.overrides",
    "evalframe.app.sweep",
    "evalframe.app.commands",
    "evalframe.assess.runfolder",
    "evalframe.pipeline",
    "evalframe.pipeline.run",
    "evalframe.report.terminal",
    "evalframe.metrics.engine",
    "hydra",
    "hydra.main",
    "hydra._internal.utils",
    "hydra._internal.config_loader_impl",
    "hydra.core.override_parser.overrides_parser",
    "omegaconf",
    "numpy",
    "pydantic",
    "rich.console",
    "rich.table",
)

#: What every tracked run imports (3 s of CPU a process): the MLflow plugin's tests ask
#: for a server that has it (``run(..., preload=MLFLOW)``).
MLFLOW = ("mlflow.tracking", "mlflow.store.tracking.sqlalchemy_store", "evalframe_mlflow.tracker")

#: Environment variables read when an interpreter starts: a run that sets one of them
#: differently from the server gets a new interpreter instead of a fork.
_STARTUP_PREFIXES = ("PYTHON", "LC_", "LANG")

#: The environment the worker started with, before any test changed it: the server
#: starts from it whichever test asks first, so a test that sets PYTHONPATH (a
#: third-party plugin's folder) gets a new interpreter whether it runs alone or not
_WORKER_ENV = dict(os.environ)
_UTF8 = {"utf-8", "utf8"}


def _startup_env(env: Mapping[str, str]) -> dict[str, str]:
    out = {k: v for k, v in env.items() if k.startswith(_STARTUP_PREFIXES)}
    if out.get("PYTHONIOENCODING", "utf-8").lower() in _UTF8:
        out.pop("PYTHONIOENCODING", None)  # the server reads and writes UTF-8 either way
    out.pop("PYTHONDONTWRITEBYTECODE", None)  # the server's modules are imported already
    return out


class _Server:
    """One forking server, started on first use by this process (a pytest worker)."""

    def __init__(self, extra: tuple[str, ...]) -> None:
        env = {**_WORKER_ENV, "PYTHONIOENCODING": "utf-8"}
        self.env = _startup_env(env)
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--serve", *extra],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            cwd=Path(__file__).resolve().parent.parent,
        )
        self.lock = threading.Lock()
        ready = self._read()
        if ready.get("ready") is not True:  # pragma: no cover - the server failed to start
            raise RuntimeError(f"the test fork server did not start: {ready}")

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the test fork server stopped")
        result: dict[str, Any] = json.loads(line)
        return result

    def request(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """The run's reply; None when another thread's run holds the server (the server
        forks one at a time, and runs meant to overlap must overlap)."""
        assert self.proc.stdin is not None
        if not self.lock.acquire(blocking=False):
            return None
        try:
            self.proc.stdin.write((json.dumps(message) + "\n").encode())
            self.proc.stdin.flush()
            return self._read()
        finally:
            self.lock.release()

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()  # the server's loop ends at the end of its input
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()


#: One server per set of extra modules (the MLflow plugin's tests preload mlflow).
_servers: dict[tuple[str, ...], _Server] = {}


_servers_lock = threading.Lock()


def _get_server(extra: tuple[str, ...] = ()) -> _Server:
    with _servers_lock:
        server = _servers.get(extra)
        if server is None or server.proc.poll() is not None:
            server = _servers[extra] = _Server(extra)
            atexit.register(server.close)
        return server


def forking() -> bool:
    """Whether runs fork from the server (``EVALFRAME_TEST_FORK=0`` turns it off)."""
    return hasattr(os, "fork") and os.environ.get("EVALFRAME_TEST_FORK", "1") != "0"


def run(
    args: Sequence[str],
    *,
    cwd: Path | str,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
    preload: Sequence[str] = (),
) -> subprocess.CompletedProcess[str]:
    """``python -m evalframe ARGS`` in ``cwd`` with ``env``: stdout and stderr as text.

    Like ``subprocess.run(..., capture_output=True, text=True, timeout=...)``,
    and raises :class:`subprocess.TimeoutExpired` the same way. ``preload``
    names modules to import beyond :data:`PRELOAD`, in a server of their own
    (the MLflow plugin's tests: importing its client costs 3 s of CPU a run).
    """
    command = [sys.executable, "-m", "evalframe", *args]
    env = dict(os.environ if env is None else env)
    extra = tuple(preload)

    def new_interpreter() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
        )

    if not forking() or _startup_env(env) != _get_server(extra).env:
        return new_interpreter()
    with tempfile.TemporaryDirectory(prefix="evalframe-forkrun-") as tmp:
        out, err = Path(tmp, "stdout"), Path(tmp, "stderr")
        reply = _get_server(extra).request(
            {
                "args": list(args),
                "cwd": str(Path(cwd).resolve()),
                "env": env,
                "stdout": str(out),
                "stderr": str(err),
                "timeout": timeout,
            }
        )
        if reply is None:  # another thread's run is in the server: this one runs beside it
            return new_interpreter()
        stdout = out.read_text(encoding="utf-8") if out.exists() else ""
        stderr = err.read_text(encoding="utf-8") if err.exists() else ""
    if reply.get("timeout"):
        raise subprocess.TimeoutExpired(command, timeout, output=stdout, stderr=stderr)
    return subprocess.CompletedProcess(command, int(reply["code"]), stdout, stderr)


# ----------------------------------------------------------------------------- the server


def _child(request: dict[str, Any]) -> None:
    """In the forked process: become ``python -m evalframe ARGS`` and never return."""
    code = 1
    try:
        os.setpgrp()  # a timeout kills the run and whatever it started
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
            handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(handle, fd)
            os.close(handle)
        os.close(null)
        sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115  # the process's own
        # what a new interpreter would have: the folder on the path, caches empty
        sys.path[0] = str(Path.cwd())
        tempfile.tempdir = None
        import importlib

        importlib.invalidate_caches()
        import evalframe

        main = str(Path(evalframe.__file__).with_name("__main__.py"))
        sys.argv = [main, *request["args"]]
        import runpy

        try:
            runpy.run_module("evalframe", run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as exc:
            if exc.code is None:
                code = 0
            elif isinstance(exc.code, int):
                code = exc.code
            else:
                print(exc.code, file=sys.stderr)
                code = 1
        except BaseException:  # noqa: BLE001  # as the interpreter would: traceback, exit 1
            import traceback

            traceback.print_exc()
            code = 1
        # the end of an interpreter: its threads joined, its atexit handlers run
        threading._shutdown()  # type: ignore[attr-defined]  # what Py_FinalizeEx calls
        atexit._run_exitfuncs()
    except BaseException:  # noqa: BLE001  # the fork's own set-up failed: say it on its stderr
        import traceback

        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # a closed stream: nothing left to say
                stream.flush()
        os._exit(code)


def _wait(pid: int, timeout: float) -> dict[str, Any]:
    import select

    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):  # pragma: no cover - Linux < 5.3
        fd = None
    if fd is not None:
        ready, _, _ = select.select([fd], [], [], timeout)
        os.close(fd)
        if not ready:
            return _kill(pid)
        _, status = os.waitpid(pid, 0)
    else:  # pragma: no cover
        import time

        end = time.monotonic() + timeout
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > end:
                return _kill(pid)
            time.sleep(0.005)
    return {"code": os.waitstatus_to_exitcode(status)}


def _kill(pid: int) -> dict[str, Any]:
    import signal

    with contextlib.suppress(ProcessLookupError):  # it ended as the timeout struck
        os.killpg(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return {"timeout": True}


def serve(extra: Sequence[str]) -> None:
    """Import once, then fork one run per request line on stdin; reply on stdout."""
    import importlib

    for name in (*PRELOAD, *extra):
        importlib.import_module(name)
    requests, replies = sys.stdin.buffer, sys.stdout.buffer
    replies.write(b'{"ready": true}\n')
    replies.flush()
    for line in requests:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request)  # never returns
        reply = _wait(pid, float(request["timeout"]))
        replies.write((json.dumps(reply) + "\n").encode())
        replies.flush()


if __name__ == "__main__" and sys.argv[1:2] == ["--serve"]:
    sys.path.pop(0)  # tests/ is not on a user's path
    serve(sys.argv[2:])
