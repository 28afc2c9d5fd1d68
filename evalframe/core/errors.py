"""User-facing errors.

An :class:`EvalframeError` is a *user* mistake (bad config, bad data, unknown
plugin) and is rendered as one paragraph with exit code 2: where it happened,
what was expected, what was found, and how to fix it. Anything else that
escapes is a bug in evalframe or a plugin and keeps its traceback.
"""

from __future__ import annotations

from pathlib import Path

from evalframe.core.secrets import redact_text

__all__ = [
    "EXIT_BROKEN_PIPE",
    "EXIT_CRASH",
    "EXIT_ERROR",
    "EXIT_GATE_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "ConfigError",
    "DataError",
    "EvalframeError",
    "PluginError",
]

EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_ERROR = 2
#: A bug in evalframe or a plugin (a traceback is printed): distinct from 2 so
#: CI can tell "you misconfigured it" from "it crashed".
EXIT_CRASH = 3
#: Ctrl-C: the shell's convention, 128 + SIGINT.
EXIT_INTERRUPTED = 130
#: The reader of a pipe stopped reading (``evalframe plugins list | head``): the shell's
#: convention for a command it stopped, 128 + SIGPIPE; nothing is printed.
EXIT_BROKEN_PIPE = 141


class EvalframeError(Exception):
    """A mistake the user can fix. Carries its location and a hint as fields."""

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        column: int | None = None,
        key: str | None = None,
        expected: str | None = None,
        got: str | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.path = str(path) if path is not None else None
        self.line = line
        self.column = column
        self.key = key
        self.expected = expected
        self.got = got
        self.hint = hint

    @property
    def where(self) -> str | None:
        if self.path is not None:
            if self.line is None:
                return self.path
            where = f"{self.path}:{self.line}"
            # a column only where a line alone is not enough (a bad byte in a long line)
            return f"{where}:{self.column}" if self.column is not None else where
        if self.key is not None:
            # a command-line option (--kind) is not a key of the composed config
            return f"option {self.key}" if self.key.startswith("-") else f"config key {self.key}"
        return None

    def render(self) -> str:
        """The one-paragraph message shown to the user (no traceback), credentials redacted."""
        head = "error: "
        if self.where:
            head += f"{self.where}: "
        head += self.message
        details = []
        if self.expected is not None:
            details.append(f"expected {self.expected}")
        if self.got is not None:
            details.append(f"got {self.got}")
        if details:
            head += f" ({'; '.join(details)})"
        if self.hint:
            head += f"\n  hint: {self.hint}"
        # A URL quoted in an error keeps its credentials to itself, and so does a plugin
        # that quotes its own key (every plugin's secret settings are remembered when
        # its config is validated): the paragraph goes to CI logs and job.json.
        return redact_text(head)

    def __str__(self) -> str:
        return self.render()

    def _render_traceback_(self) -> list[str]:
        """What IPython and Jupyter show for it: the paragraph, as the command line
        prints it, without a traceback (a crash is no EvalframeError and keeps its own)."""
        return self.render().splitlines()


class ConfigError(EvalframeError):
    """The composed configuration is invalid (names a config key)."""


class DataError(EvalframeError):
    """An input file is missing or malformed (names a file and line)."""


class PluginError(EvalframeError):
    """A plugin is unknown, broken, or broke its contract (names the plugin and rule)."""
