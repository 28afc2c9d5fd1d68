"""The composition behind evalframe.run: the command line's preparation, Hydra's compose API.

Parity with ``python -m evalframe`` itself is in test_cli_parity.py; these are
the cheap, in-process checks of what compose_config adds and leaves behind.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from evalframe.app.compose import compose_config
from evalframe.core.errors import ConfigError, EvalframeError


@pytest.fixture(autouse=True)
def _here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EVALFRAME_CACHE_DIR", str(tmp_path / "cache"))


def test_the_environment_picks_the_tracker_and_an_override_wins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("EVALFRAME_TRACKING", "none")
    assert compose_config(["+experiment=quickstart"]).raw["tracking"] == {"name": "none"}
    chosen = compose_config(["+experiment=quickstart", "tracking=mlflow"])
    assert chosen.raw["tracking"]["name"] == "mlflow" and chosen.choices["tracking"] == "mlflow"
    monkeypatch.delenv("EVALFRAME_TRACKING")
    assert compose_config(["+experiment=quickstart"]).raw["tracking"]["name"] == "mlflow"


def test_the_run_folder_name_and_replaced_sections(tmp_path: Path) -> None:
    composed = compose_config(
        ["+experiment=quickstart"],
        run_dir="runs/one",
        name="mine",
        replace={
            "dataset": {"name": "python_object", "set_name": "g", "size": 1, "content_hash": "x"}
        },
    )
    assert composed.output_dir == tmp_path / "runs" / "one"
    assert composed.raw["output"]["dir"] == str(tmp_path / "runs" / "one")
    assert composed.raw["experiment"] == "mine" and composed.raw["output"]["run_tag"] == "mine"
    assert composed.raw["dataset"]["name"] == "python_object"
    assert next(iter(composed.raw)) == "dataset"  # the section keeps its place in config.yaml
    default = compose_config(["+experiment=quickstart"]).output_dir
    assert default.parent == tmp_path / "outputs" / "quickstart"  # Hydra's hydra.run.dir


def test_hydra_is_left_as_it_was(tmp_path: Path) -> None:
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.hydra_config import HydraConfig

    before = HydraConfig.instance().cfg
    compose_config(["+experiment=quickstart"])
    assert not GlobalHydra.instance().is_initialized()
    assert HydraConfig.instance().cfg is before
    # a notebook that uses Hydra for its own config keeps it
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "app.yaml").write_text("lr: 0.1\n")
    with initialize_config_dir(config_dir=str(tmp_path / "mine"), version_base="1.3"):
        compose_config(["+experiment=quickstart"])
        assert compose("app").lr == 0.1


def test_a_sweep_is_the_command_lines() -> None:
    with pytest.raises(ConfigError) as caught:
        compose_config(["+experiment=quickstart", "depth=5,10"])
    assert "evalframe.run once per value" in (caught.value.hint or "")


def test_a_user_error_in_jupyter_is_the_paragraph_without_a_traceback() -> None:
    with pytest.raises(EvalframeError) as caught:
        compose_config(["+experiment=quickstart", "retriever=bm26"])
    lines = caught.value._render_traceback_()  # what IPython shows instead of a traceback
    assert lines == caught.value.render().splitlines()
    assert lines[0].startswith("error: config key retriever: no retriever config named 'bm26'")


def test_import_evalframe_loads_none_of_the_api() -> None:
    """`import evalframe` stays instant; the old module path evalframe.compare keeps working
    and does not replace the function evalframe.compare."""
    code = (
        "import sys, evalframe\n"
        "heavy = [m for m in ('evalframe.api', 'hydra', 'pandas', 'mlflow') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "import evalframe.compare\n"
        "from evalframe.compare import compare_runs\n"
        "from evalframe.api.comparison import compare\n"
        "assert evalframe.compare is compare and callable(compare_runs)\n"
        "assert evalframe.run.__module__ == 'evalframe.api.runner'\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
