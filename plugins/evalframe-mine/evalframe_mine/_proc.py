"""Running a program with a JSON request on standard input, with a timeout."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from typing import Any

from evalframe.core.errors import PluginError

__all__ = ["run_json", "tail"]


def tail(text: str, lines: int = 5, chars: int = 600) -> str:
    kept = "\n".join(text.strip().splitlines()[-lines:])
    return kept[-chars:]


def run_json(
    argv: Sequence[str],
    request: Any,
    *,
    who: str,
    what: str,
    timeout: float,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` with ``request`` as JSON on stdin; a program that cannot start is an error."""
    try:
        return subprocess.run(
            list(argv),
            input=json.dumps(request, ensure_ascii=False),
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            timeout=timeout,
            cwd=cwd,
            env={**os.environ, **(env or {})},
            check=False,
        )
    except FileNotFoundError:
        raise PluginError(
            f"{who}: the program {argv[0]!r} was not found",
            hint="give its full path, or the interpreter and the script: [python, agent.py]",
        ) from None
    except PermissionError:
        raise PluginError(
            f"{who}: the program {argv[0]!r} is not executable",
            hint=f"chmod +x {argv[0]}, or run it through its interpreter",
        ) from None
    except subprocess.TimeoutExpired:
        raise PluginError(
            f"{who}: {what} took longer than {timeout:g}s and was stopped",
            hint="raise timeout_seconds, or make the program faster",
        ) from None
