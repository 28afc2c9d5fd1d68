"""MLflow's SQL store opens under the suite's warning filters (``error``).

The store builds its SQLAlchemy mappers when it is first imported. A
deprecation warning raised there (SQLAlchemy 2.1 deprecates the ``noload``
strategy that mlflow 3.17 uses) is an error under ``filterwarnings = error``,
and a mapper that failed once stays failed for the whole process: every later
test in that pytest worker that opens a client then fails, in whatever order
xdist happened to deal them. This test fails alone, with the warning's text,
instead; pyproject.toml's ``filterwarnings`` lists the warnings let through.
"""

from __future__ import annotations

from pathlib import Path


def test_the_sql_store_opens_under_the_suites_warning_filters(tmp_path: Path) -> None:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    names = [e.name for e in client.search_experiments()]
    assert names == ["Default"]
