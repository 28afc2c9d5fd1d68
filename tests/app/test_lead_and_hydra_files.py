"""Two of the command shell's small rules, each a unit of our own logic.

A comparison's lead metric is B's status criterion as the run's files key it
(``report.criterion: MRR`` in config.yaml is ``RR``): unconverted, ``compare``
fell back to the first metric while the run's own comparison used RR. And a run
folder stopped part way keeps the ``.hydra/`` that records its config, where a
user's folder refused for its files loses what Hydra wrote there for the job.
"""

from __future__ import annotations

from pathlib import Path

from evalframe.app.compare_cmd import _criterion
from evalframe.app.hydra_folder import _drop_hydra_files
from evalframe.assess.runfolder import RunFolder


def test_the_lead_is_the_criterion_as_the_files_key_it(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("report:\n  criterion: MRR\n")
    assert _criterion(tmp_path) == "RR"
    (tmp_path / "config.yaml").write_text("report:\n  criterion: not a metric\n")
    assert _criterion(tmp_path) == "not a metric"  # compare then leads by its first metric
    (tmp_path / "config.yaml").unlink()
    assert _criterion(tmp_path) is None


def _hydra_files(folder: Path) -> None:
    (folder / ".hydra").mkdir(parents=True)
    for name in ("config.yaml", "hydra.yaml", "overrides.yaml"):
        (folder / ".hydra" / name).write_text("x: 1\n")
    (folder / "__main__.log").write_text("")


def test_a_users_folder_loses_what_hydra_wrote_for_the_job(tmp_path: Path) -> None:
    _hydra_files(tmp_path)
    (tmp_path / "config.yaml").write_text("my: own\n")
    _drop_hydra_files(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.yaml"]


def test_a_run_stopped_part_way_keeps_its_hydra_folder(tmp_path: Path) -> None:
    _hydra_files(tmp_path)
    (tmp_path / RunFolder.UNFINISHED).write_text("unfinished\n")
    (tmp_path / "metrics.json").write_text("{}\n")
    _drop_hydra_files(tmp_path)
    assert sorted(p.name for p in (tmp_path / ".hydra").iterdir()) == [
        "config.yaml",
        "hydra.yaml",
        "overrides.yaml",
    ]
