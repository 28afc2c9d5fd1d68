"""pandas, imported when a DataFrame is asked for, with a clear error when it is missing.

pandas is an optional extra (``pip install 'evalframe[pandas]'``). mlflow, a
dependency of evalframe, requires it today, so it is nearly always there; the
API still imports it only inside the methods that return a DataFrame, so
``import evalframe`` stays instant and a slimmer install keeps working.
"""

from __future__ import annotations

from typing import Any

from evalframe.core.errors import ConfigError

__all__ = ["pandas"]


def pandas() -> Any:
    """The pandas module, or a ConfigError naming the extra that installs it."""
    try:
        import pandas as pd
    except ImportError as exc:
        raise ConfigError(
            "DataFrames need pandas, which is not installed",
            got=f"{type(exc).__name__}: {exc}",
            hint="pip install 'evalframe[pandas]' (or pip install pandas); the same data is "
            "available without it as plain Python: Result.metrics, Result.records, "
            "Comparison.rows",
        ) from None
    return pd
