"""A sweep whose launcher or sweeper is not installed: one paragraph, exit code 2, and
nothing made. Real Hydra multiruns, in-process."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

from evalframe.app.hydra_app import run_hydra
from evalframe.app.launchers import PLUGINS, missing_option_error
from evalframe.plugin.hooks import SweepContext, SweepJob
from evalframe.plugin.protocols import PluginContext
from evalframe.plugin.registry import TRACKERS
from tests.conftest import Project

ROOT = Path(__file__).resolve().parents[2]


class Recorder:
    """A tracker that records the sweep hooks it hears."""

    events: list[tuple[str, Any]] = []

    def __init__(self, config: Any, context: PluginContext) -> None:
        pass

    def on_sweep_start(self, sweep: SweepContext) -> None:
        Recorder.events.append(("start", sweep.sweep_dir))

    def on_sweep_end(self, sweep: SweepContext, jobs: list[SweepJob]) -> None:
        Recorder.events.append(("end", jobs))


@pytest.fixture
def here(project: Project, monkeypatch: pytest.MonkeyPatch) -> Project:
    (project.root / "conf" / "tracking").mkdir(parents=True)
    (project.root / "conf" / "tracking" / "recorder.yaml").write_text("name: recorder\n")
    monkeypatch.chdir(project.root)
    monkeypatch.setenv("EVALFRAME_CACHE_DIR", str(project.root / ".cache"))
    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    Recorder.events = []
    return project


def _sweep(project: Project, *overrides: str) -> int:
    with TRACKERS.scoped() as reg:
        reg.add("recorder", Recorder)
        return run_hydra(
            [
                "-m",
                *project.data_args(),
                "stats.bootstrap=0",
                f"hydra.sweep.dir={project.root / 'sweep'}",
                *overrides,
                "depth=3,5",
            ]
        )


def _paragraph(err: str) -> list[str]:
    """The error's lines: one paragraph (its message and its hint), no traceback."""
    assert "Traceback" not in err and "Config search path" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("error: "), err
    assert lines[1].startswith("  hint: "), err
    return lines


@pytest.mark.skipif(
    importlib.util.find_spec("hydra_plugins.hydra_ray_launcher") is not None,
    reason="the ray extra is installed here",
)
def test_a_launcher_whose_plugin_is_not_installed_names_its_extra(
    here: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _sweep(here, "hydra/launcher=ray", "tracking=recorder") == 2
    lines = _paragraph(capsys.readouterr().err)
    assert lines[0].startswith("error: config key hydra/launcher: the launcher 'ray' is not ")
    available = lines[0].split("available: ")[1].split(" (got")[0].split(", ")
    assert {"basic", "submitit_local", "submitit_slurm"} <= set(available)
    assert lines[0].endswith("(got hydra/launcher=ray)")
    assert 'pip install "evalframe[ray]"' in lines[1] and "docs/scaling.md" in lines[1]
    assert Recorder.events == [] and not (here.root / "sweep").exists()


def test_a_misspelt_launcher_is_suggested(
    here: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _sweep(here, "hydra/launcher=submitit_slrum", "tracking=recorder") == 2
    lines = _paragraph(capsys.readouterr().err)
    assert "there is no launcher named 'submitit_slrum'; available: basic," in lines[0]
    assert lines[1].startswith("  hint: did you mean 'submitit_slurm'? ")


#: What Hydra 1.3 prints for ``hydra/sweeper=optuna`` without hydra-optuna-sweeper (the
#: suite installs it, so it is written out here; the launcher test above is Hydra's own).
HYDRA_TEXT = """\
In 'hydra/config': Could not find 'hydra/sweeper/optuna'

Available options in 'hydra/sweeper':
\tbasic
Config search path:
\tprovider=hydra, path=pkg://hydra.conf
\tprovider=main, path=file:///x/conf

Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.
"""


def test_a_sweeper_whose_plugin_is_not_installed_names_its_extra() -> None:
    error = missing_option_error(HYDRA_TEXT)
    assert error is not None
    text = error.render()
    assert text.startswith(
        "error: config key hydra/sweeper: the sweeper 'optuna' is not installed; available: "
        "basic (got hydra/sweeper=optuna)"
    )
    assert 'pip install "evalframe[tune]"' in text and "search path" not in text


def test_the_known_plugins_are_the_extras_pyproject_declares() -> None:
    if sys.version_info < (3, 11):
        pytest.skip("tomllib")
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    for (group, option), plugin in PLUGINS.items():
        if 'evalframe["' in plugin.install or "evalframe[" in plugin.install:
            extra = plugin.install.split("evalframe[")[1].split("]")[0]
            assert extra in extras, (group, option)
            assert any(d.startswith(plugin.package) for d in extras[extra]), (group, option)
        elif "dependency of evalframe" in plugin.install:
            assert any(d.startswith(plugin.package) for d in dependencies), (group, option)
        else:
            assert plugin.install == f"pip install {plugin.package}", (group, option)
    scaling = (ROOT / "docs" / "scaling.md").read_text()
    assert all(f"hydra/launcher={o}" in scaling for g, o in PLUGINS if g == "hydra/launcher")
