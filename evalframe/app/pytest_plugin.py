"""pytest integration: keep KnowCode-style quality tests as ordinary tests.

Installed with evalframe (entry point ``pytest11``). A test asks for the
``evalframe_run`` fixture, runs an experiment as a user would (a real
``python -m evalframe`` process with Hydra composition), and asserts::

    def test_retrieval_quality(evalframe_run):
        evalframe_run("+experiment=knowcode").assert_gates()

A failure lists every failed gate with its message and the queries behind it,
so the pytest report reads like the evalframe report.

Hermetic by default: everything a run writes stays under the test's
``tmp_path``: its run folder, its MLflow store (``<tmp_path>/mlflow.db``,
artifacts beside it) and its caches (``<tmp_path>/cache``, matplotlib's font
cache included), whatever ``MLFLOW_TRACKING_URI`` or ``EVALFRAME_CACHE_DIR``
the shell has. A test logs
to a real store only when it asks, with ``tracking_uri=``; ``cache_dir=``
shares a cache (a large index) between tests.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

__all__ = ["EvalframeRun", "evalframe_run"]


@dataclass
class EvalframeRun:
    """One finished run: its exit code, output folder, metrics and gate verdicts."""

    args: tuple[str, ...]
    exit_code: int
    output_dir: Path
    stdout: str
    stderr: str
    metrics: dict[str, Any] = field(default_factory=dict)
    gates: list[dict[str, Any]] = field(default_factory=list)
    tracking_uri: str = ""  # where the run was logged, when tracking is on
    #: why the verdict is provisional (a golden set not blessed, drift allowed), from
    #: summary.json: the run's "Result:" line says it, and so does a failure here
    verdict_warnings: list[str] = field(default_factory=list)

    def metric(self, name: str) -> float:
        """An aggregate from metrics.json by its canonical name (``RR``, ``R@10``...)."""
        if name not in self.metrics:
            raise KeyError(f"{name!r} is not in metrics.json; it has {sorted(self.metrics)}")
        return float(self.metrics[name])

    def assert_ok(self) -> None:
        """The run finished (exit 0 or 1); a config or data error fails with its message."""
        if self.exit_code not in (0, 1):
            pytest.fail(
                f"evalframe {' '.join(self.args)} exited {self.exit_code}:\n{self.stderr}",
                pytrace=False,
            )

    def assert_gates(self) -> None:
        """Every required gate passed; otherwise fail listing each failed gate."""
        self.assert_ok()
        failed = [g for g in self.gates if g["required"] and not g["passed"]]
        if failed:
            lines = [f"{len(failed)} required gate(s) failed:"]
            for g in failed:
                lines.append(f"  ✗ {g['name']}: {g['message']}")
                lines.extend(f"      - {item}" for item in g["failures"][:10])
            lines.extend(f"  provisional: {w}" for w in self.verdict_warnings)
            pytest.fail("\n".join(lines), pytrace=False)


@pytest.fixture
def evalframe_run(tmp_path: Path) -> Callable[..., EvalframeRun]:
    """Run ``python -m evalframe <overrides>`` from the current directory, writing under tmp_path.

    ``tracking_uri`` logs the run to that MLflow store (a server or a sqlite
    file) instead of the test's own; ``cache_dir`` is the cache to use instead
    of one under ``tmp_path``.
    """

    def run(
        *overrides: str,
        timeout: float = 600,
        tracking_uri: str | None = None,
        cache_dir: str | Path | None = None,
    ) -> EvalframeRun:
        n = len(list(tmp_path.glob("run*")))
        out = tmp_path / f"run{n}"
        args = (*overrides, f"hydra.run.dir={out}", f"hydra.sweep.dir={tmp_path / f'sweep{n}'}")
        env = dict(os.environ)
        uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
        if tracking_uri is not None:
            uri = tracking_uri
            # a tracking key on the command line tracks even under EVALFRAME_TRACKING=none
            args = (*args, f"tracking.uri={tracking_uri}")
        env["MLFLOW_TRACKING_URI"] = uri
        cache = Path(cache_dir) if cache_dir is not None else tmp_path / "cache"
        env["EVALFRAME_CACHE_DIR"] = str(cache)
        # the run page draws with matplotlib, which keeps a font cache in the home folder
        env["MPLCONFIGDIR"] = str(cache / "matplotlib")
        proc = subprocess.run(
            [sys.executable, "-m", "evalframe", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
        )
        result = EvalframeRun(
            args, proc.returncode, out, proc.stdout, proc.stderr, tracking_uri=uri
        )
        from evalframe.assess.runfolder import RunFolder  # only when the fixture is used

        folder = RunFolder(out)
        if folder.file(folder.METRICS).is_file():
            result.metrics = folder.metrics()
        if folder.file(folder.GATES).is_file():
            result.gates = folder.gates()["gates"]
        if folder.file(folder.SUMMARY).is_file():
            said = folder.summary().get("verdict_warnings")
            result.verdict_warnings = [str(w) for w in said] if isinstance(said, list) else []
        return result

    return run
