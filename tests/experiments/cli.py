"""Running ``python -m evalframe`` as a user in a fresh clone does, for the experiment tests."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from tests import forkrun

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
    return forkrun.run(args, cwd=cwd, env=env, timeout=timeout)  # a process of its own


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))
