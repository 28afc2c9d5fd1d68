"""A sweep's marker file: how jobs, wherever they run, find their parent run.

At the sweep's start the tracker writes ``mlflow_sweep.json`` into the sweep
folder with the parent's ``uid`` (and its run id when the server answered).
Each job reads it from its own folder's parent. Jobs run by a joblib or
submitit launcher share nothing else with the launching process.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalframe.core.io import atomic_write_json

__all__ = ["MARKER", "read_sweep_marker", "write_sweep_marker"]

MARKER = "mlflow_sweep.json"


def write_sweep_marker(sweep_dir: Path, data: dict[str, Any]) -> Path:
    return atomic_write_json(sweep_dir / MARKER, data)


def read_sweep_marker(sweep_dir: Path) -> dict[str, Any]:
    try:
        data = json.loads((sweep_dir / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
