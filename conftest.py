"""Suite-wide settings, for the core tests and every plugin's tests alike.

Runs track nothing unless a test asks for a tracker (``tracking=mlflow``):
the default embedded MLflow store costs about two seconds a run, and most
tests are about something else. DVC and MLflow telemetry stay off.
"""

from __future__ import annotations

import os

os.environ.setdefault("EVALFRAME_TRACKING", "none")
os.environ.setdefault("DVC_NO_ANALYTICS", "1")
os.environ.setdefault("MLFLOW_ENABLE_TELEMETRY", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")
