"""Running ``python -m evalframe`` as a user in a fresh clone does, for the experiment tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def evalframe(
    cwd: Path, *args: str, timeout: float = 300, cache: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m evalframe ARGS`` in ``cwd``, with tracking off and a cache of its own.

    ``cache`` lets two runs share indexes and embeddings (default: ``cwd/.cache``).
    """
    env = {
        **os.environ,
        "EVALFRAME_CACHE_DIR": str(cache or cwd / ".cache"),
        "EVALFRAME_TRACKING": "none",
        "PYTHONIOENCODING": "utf-8",
    }
    return subprocess.run(
        [sys.executable, "-m", "evalframe", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))
