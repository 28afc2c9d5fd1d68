"""docs/python-api.md runs: its ```python blocks, in order, in one fresh process and folder.

The page is a notebook session; running it here keeps it from drifting from
the code. The blocks check themselves (their asserts hold hand-worked numbers).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "python-api.md"

pytestmark = pytest.mark.slow


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", text, flags=re.S | re.M)


def test_the_page_has_a_session_to_run() -> None:
    blocks = python_blocks(PAGE.read_text(encoding="utf-8"))
    assert len(blocks) >= 10
    assert "import evalframe" in blocks[0]


def test_the_python_api_page_runs_as_written(tmp_path: Path) -> None:
    blocks = python_blocks(PAGE.read_text(encoding="utf-8"))
    # one script, each block marked, so a failure names the block it came from
    script = "\n".join(
        f"# --- block {i} ---\n__block__ = {i}\n{block}" for i, block in enumerate(blocks, 1)
    )
    (tmp_path / "session.py").write_text(script, encoding="utf-8")
    env = {**os.environ, "EVALFRAME_CACHE_DIR": str(tmp_path / ".cache")}
    env.pop("EVALFRAME_TRACKING", None)  # the page sets it itself, as a reader would
    # twice, as a notebook's "Restart & Run All" does: the second session finds the
    # first one's cache and folders
    for session in ("first", "second"):
        proc = subprocess.run(
            [sys.executable, "session.py"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert proc.returncode == 0, f"{session} session: " + proc.stderr[-4000:]
    assert not (tmp_path / "mlflow.db").exists()  # the session tracked nothing, as it says
    assert (tmp_path / "outputs" / "quickstart").is_dir()
