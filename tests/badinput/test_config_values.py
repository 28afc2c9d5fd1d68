"""Absurd or misspelt config values (#16): refused before anything slow, naming the key.

Each case is what a tired user types; each must stop with exit 2 and one
paragraph naming the config key, before retrieval, leaving no output behind.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evalframe.core.errors import ConfigError
from evalframe.pipeline.config import validate_experiment
from evalframe.pipeline.run import run_experiment
from tests.conftest import Project, raw_config


@pytest.mark.parametrize("depth", [True, 5.5, "10", 0, -3], ids=repr)
def test_a_depth_that_is_not_a_positive_whole_number_is_named(
    project: Project, depth: object
) -> None:
    with pytest.raises(ConfigError) as err:
        validate_experiment(raw_config(project, depth=depth))
    assert err.value.key == "depth"


def test_an_output_dir_that_is_a_file_stops_before_retrieval(project: Project) -> None:
    blocker = project.root / "results"
    blocker.write_text("not a folder")
    for target in (blocker, blocker / "run1"):
        cfg = raw_config(project)
        cfg["output"] = {**cfg["output"], "dir": str(target)}
        with pytest.raises(ConfigError) as err:
            validate_experiment(cfg)
        assert err.value.key == "output.dir"
        assert f"{blocker} is a file" in str(err.value)
    assert blocker.read_text() == "not a folder"


def test_an_output_dir_that_is_a_file_exits_2_from_the_command_line(project: Project) -> None:
    (project.root / "taken").write_text("x")
    res = project.run("+experiment=quickstart", "output.dir=taken", "tracking=none")
    assert res.code == 2, res.stderr
    assert "Traceback" not in res.stderr
    assert "config key output.dir" in res.stderr
    assert (project.root / "taken").read_text() == "x"


def test_a_misspelt_slice_is_said_with_the_fields_there_are(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    exp = validate_experiment(raw_config(project, slices=["dificulty"]))
    run_experiment(exp, progress=False)
    err = capsys.readouterr().err
    assert "slices[0] 'dificulty'" in err and "did you mean 'difficulty'" in err
    summary = (Path(exp.output_dir) / "summary.json").read_text()
    assert "did you mean 'difficulty'" in summary
