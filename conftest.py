"""Suite-wide settings, for the core tests and every plugin's tests alike.

Runs track nothing unless a test asks for a tracker (``tracking=mlflow``):
the default embedded MLflow store costs about two seconds a run, and most
tests are about something else. DVC and MLflow telemetry stay off.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

# A developer's own settings (a shared cache folder, the files store, MLflow tracking) would
# change what the tests see: the cache folder is written into each run's config.yaml, and a
# test that compares it failed with EVALFRAME_CACHE_DIR set. Tests that want one set it.
for _name in ("EVALFRAME_CACHE_DIR", "EVALFRAME_CACHE_STORE"):
    os.environ.pop(_name, None)
os.environ["EVALFRAME_TRACKING"] = "none"
os.environ.setdefault("DVC_NO_ANALYTICS", "1")
os.environ.setdefault("MLFLOW_ENABLE_TELEMETRY", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--extended",
        action="store_true",
        help="also run the tests marked `extended` (make test-all)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the modules that hold ``slow`` tests first, each whole and in file order.

    Why: under ``-n``, pyproject's ``--dist loadscope`` hands each worker one
    whole module at a time, in this order. Under xdist's default scheduler,
    with the slow end-to-end modules last in collection order (the MLflow
    plugin's), one worker ran them alone for the last 2.5 minutes of a
    9-minute suite. First, the workers share them and the quick modules even
    out the end: both finished within a second of each other
    (docs/performance.md, "The test suite's time"). A module stays on one
    worker, so its module-scoped fixtures are built once and its tests run
    in the order written (``tests/test_dvc_pipeline.py``'s steps rely on it).
    """
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow)  # stable: file order within each part
    # The `extended` tests are long runs that a quicker test also covers (the dense model
    # over all of Cranfield: two cores for two minutes; a sweep under submitit; every golden
    # build stage again under dvc after a changed plan).
    # `make test`, which CI runs, skips them by name; `make test-all` runs them.
    if not config.getoption("--extended"):
        skip = pytest.mark.skip(reason="extended: `make test-all` (pytest --extended) runs it")
        for item in items:
            if item.get_closest_marker("extended"):
                item.add_marker(skip)


@pytest.fixture(scope="session")
def store_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An initialised, empty sqlite MLflow store, made once per worker (in a child process:
    MLflow's warnings stay out of the test's output). MLflow's migrations of a new store
    take 2-3 s; a test about something else starts from a copy (:func:`mlflow_store`)."""
    db = tmp_path_factory.mktemp("store") / "mlflow.db"
    code = (
        "import sys; from mlflow.tracking import MlflowClient; "
        "MlflowClient(sys.argv[1]).search_experiments()"
    )
    subprocess.run([sys.executable, "-c", code, f"sqlite:///{db}"], check=True, timeout=120)
    return db


@pytest.fixture
def mlflow_store(store_template: Path) -> Callable[[Path], str]:
    """``mlflow_store(path)``: a copy of the empty store at ``path``; returns its URI.
    For tests whose point is not a new store's creation (those make their own)."""

    def make(path: Path) -> str:
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(store_template, path)
        return f"sqlite:///{path}"

    return make
