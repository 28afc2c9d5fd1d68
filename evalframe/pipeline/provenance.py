"""When and from which commit a run was made: what a report names as "what ran"."""

from __future__ import annotations

import subprocess
from datetime import datetime, timezone
from typing import Any

__all__ = ["created", "git_state"]


def created() -> str:
    """Now, in UTC, to the second (``summary.json``'s ``created``)."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def git_state(timeout: float = 2.0) -> dict[str, Any] | None:
    """The commit of the working directory's repository and whether it had local
    changes (None outside a repository): what a report names as "what ran"."""

    def git(*args: str) -> str:
        proc = subprocess.run(
            ["git", *args], capture_output=True, text=True, timeout=timeout, check=True
        )
        return proc.stdout.strip()

    try:
        sha = git("rev-parse", "HEAD")
        dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError):
        return None
    return {"sha": sha, "dirty": dirty}
