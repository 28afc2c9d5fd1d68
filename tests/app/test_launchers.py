"""A sweep whose launcher or sweeper cannot run here: one paragraph, exit code 2, and
nothing made for jobs that never ran.

Real Hydra multiruns, in-process. SLURM's absence is made certain with PATH:
an empty folder (no ``srun``, no ``sbatch``), or one whose ``srun`` and
``sbatch`` are scripts that refuse every job, as a cluster refuses a wrong
account; Submitit's real SLURM launcher then fails as it does on a cluster.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from evalframe.app import sweep
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
        Recorder.events.append(("end", (sweep.error, jobs)))


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


def _bin(root: Path, **scripts: str) -> Path:
    """A folder of executables (name -> shell script body), to stand alone on PATH."""
    folder = root / "bin"
    folder.mkdir()
    for name, body in scripts.items():
        path = folder / name
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(0o755)
    return folder


def test_slurm_without_srun_is_refused_before_the_sweep_makes_anything(
    here: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(_bin(here.root)))  # no srun, no sbatch
    store = here.root / "mlflow.db"
    code = _sweep(here, "hydra/launcher=submitit_slurm", "tracking=mlflow",
                  f"tracking.uri=sqlite:///{store}")  # fmt: skip
    assert code == 2
    lines = _paragraph(capsys.readouterr().err)
    assert lines[0].startswith("error: config key hydra/launcher: the launcher submitit_slurm ")
    assert "(expected `srun` and `sbatch` on PATH; got neither)" in lines[0]
    assert "SLURM login node" in lines[1] and "hydra/launcher=submitit_local" in lines[1]
    assert "hydra/launcher=joblib" in lines[1] and "docs/scaling.md" in lines[1]
    # no sweep folder, no MLflow store: the tracker was never started
    assert not (here.root / "sweep").exists()
    assert not store.exists() and not (here.root / "mlartifacts").exists()


@pytest.mark.parametrize("command", ["mine", "build"])
def test_a_mine_or_golden_build_sweep_on_slurm_without_srun_is_refused_alike(
    here: Project,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
) -> None:
    """The commands beside a run compose through Hydra too (app.composed): the same
    refusal, before Hydra makes the sweep's folder."""
    from evalframe.app.build_cmd import main as build
    from evalframe.app.mine_cmd import run_mining

    monkeypatch.setenv("PATH", str(_bin(here.root)))  # no srun, no sbatch
    first = "+mine=mine_demo" if command == "mine" else "+build=knowcode_demo"
    entry = run_mining if command == "mine" else build
    args = ["-m", first, "hydra/launcher=submitit_slurm", f"hydra.sweep.dir={here.root / 'sw'}"]
    assert entry([*args, "seed=1,2"]) == 2
    lines = _paragraph(capsys.readouterr().err)
    assert lines[0].startswith("error: config key hydra/launcher: the launcher submitit_slurm ")
    assert not (here.root / "sw").exists()


def test_a_launcher_that_fails_once_the_sweep_started_is_said_and_ends_the_sweep(
    here: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """srun and sbatch are there, and the cluster refuses every job: Submitit's real launcher
    raises once the sweep has begun; the sweep still ends, with the error as its reason."""
    refuse = "echo 'sbatch: error: Invalid account or account/partition combination' >&2; exit 1"
    fake = _bin(here.root, srun="exit 1", sbatch=refuse)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    code = _sweep(here, "hydra/launcher=submitit_slurm", "tracking=recorder")
    assert code == 2
    err = capsys.readouterr().err
    lines = _paragraph(err.replace(refuse.split("'")[1] + "\n", "", 1))  # sbatch's own line
    assert lines[0].startswith(
        "error: config key hydra/launcher: the launcher submitit_slurm could not start the "
        "sweep's jobs, so none ran: FailedJobError: sbatch: error: Invalid account"
    )
    assert "HYDRA_FULL_ERROR=1" in lines[1]
    assert [kind for kind, _ in Recorder.events] == ["start", "end"]
    error, jobs = Recorder.events[-1][1]
    assert jobs == [] and error == "\n".join(lines)


def test_the_launchers_traceback_when_asked_for(
    here: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = _bin(here.root, srun="exit 1", sbatch="echo 'sbatch: error: no' >&2; exit 1")
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("HYDRA_FULL_ERROR", "1")
    try:
        with pytest.raises(Exception, match="sbatch: error: no") as raised:
            _sweep(here, "hydra/launcher=submitit_slurm", "tracking=recorder")
    finally:
        sweep.take_started()  # run_hydra, left by the exception, did not take its folder
    assert type(raised.value).__name__ == "FailedJobError"
    error, jobs = Recorder.events[-1][1]  # the sweep was still ended, with its reason
    assert jobs == [] and "could not start the sweep's jobs" in error


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


def _raised(module: str, function: str, exc: Exception) -> Exception:
    """``exc`` as raised by ``function`` of ``module`` (its frame says where it came from)."""
    scope: dict[str, Any] = {"__name__": module, "exc": exc}
    exec(f"def {function}():\n    raise exc\n", scope)
    try:
        scope[function]()
    except Exception as raised:  # noqa: BLE001  # the exception is what the test is about
        return raised
    raise AssertionError("did not raise")


def test_a_launcher_that_stops_a_started_sweep_is_told_from_a_crash_of_evalframe() -> None:
    from omegaconf import OmegaConf

    from evalframe.app.launchers import launch_failure

    config = OmegaConf.create(
        {"hydra": {"runtime": {"choices": {"hydra/launcher": "ray", "hydra/sweeper": "optuna"}}}}
    )
    lost = ConnectionError("Could not find any running Ray instance.\nmore detail")
    error = launch_failure(_raised("hydra_plugins.x", "launch", lost), config, jobs=3)
    assert error is not None and error.key == "hydra/launcher"
    assert error.message == (
        "the launcher ray stopped the sweep after 3 of its jobs had started: "
        "ConnectionError: Could not find any running Ray instance."
    )
    bad = ValueError("empty search space")
    error = launch_failure(_raised("hydra_plugins.y", "sweep", bad), config, jobs=0)
    assert error is not None and error.key == "hydra/sweeper"
    assert error.message.startswith("the sweeper optuna could not start the sweep's jobs")
    assert "docs/scaling.md#tuning" in (error.hint or "")
    # raised in evalframe's own code (a callback at the sweep's end): a crash, with its traceback
    ours = _raised("evalframe.app.tune", "launch", ValueError("a bug"))
    assert launch_failure(ours, config, jobs=2) is None


def test_a_misspelt_key_of_the_sweepers_search_space_is_refused_before_the_sweep(
    here: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """``hydra.sweeper.params`` (Optuna's search space, or the basic sweeper's) is applied
    only as each batch launches: a key the config lacks stopped the sweep after it had
    begun, said as the launcher's failure."""
    (here.root / "conf" / "experiment").mkdir()
    (here.root / "conf" / "experiment" / "typo.yaml").write_text(
        "# @package _global_\nhydra:\n  sweeper:\n    params:\n      retriever.k11: 0.9,1.2\n"
    )
    assert _sweep(here, "+experiment=typo", "tracking=recorder") == 2
    lines = _paragraph(capsys.readouterr().err)
    assert lines == [
        "error: config key hydra.sweeper.params.retriever.k11: there is no setting "
        "retriever.k11 to sweep: the sweep was not started (expected a key of the composed "
        "config; got retriever.k11: 0.9,1.2)",
        "  hint: check its spelling (`--cfg job` prints every key), or write +retriever.k11 "
        "to add a new key",
    ]
    assert Recorder.events == [] and not (here.root / "sweep").exists()


def test_a_job_that_hydra_cannot_compose_is_the_keys_mistake_not_the_launchers() -> None:
    """What Hydra raises when a launched job's override cannot be applied (a value of the
    wrong type for a typed setting): said with the key, not blamed on the launcher."""
    from hydra.errors import ConfigCompositionException
    from omegaconf import OmegaConf

    from evalframe.app.launchers import launch_failure

    config = OmegaConf.create({"hydra": {"sweeper": {"params": {"retriever.k1": "abc,1.2"}}}})
    try:
        try:
            raise ValueError("Value 'abc' could not be converted to Float")
        except ValueError as cause:
            raise ConfigCompositionException("Could not override 'retriever.k1'.") from cause
    except ConfigCompositionException as exc:
        error = launch_failure(exc, config, jobs=0)
    assert error is not None
    assert error.render() == (
        "error: config key hydra.sweeper.params.retriever.k1: a job's value for retriever.k1 "
        "could not be set: the sweep stopped before any job ran (got Value 'abc' could not "
        "be converted to Float)\n"
        "  hint: check the values swept for retriever.k1 (`--cfg job` prints the setting's "
        "type)"
    )
