"""The commands the DVC pipeline calls, in-process and without dvc: run-config,
baseline promote's printed versioning, golden diff --rev's refusals, the Hydra
plugin that DVC's composition loads."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import yaml

from evalframe.app.cli import main
from evalframe.app.dvc_hydra import data_path
from evalframe.core.errors import ConfigError
from evalframe.pipeline.config import validate_experiment
from evalframe.pipeline.run import run_experiment
from evalframe.report.terminal import TerminalReport
from tests.conftest import Project, raw_config


def composed(project: Project, **overrides: object) -> Path:
    """A params.yaml as `dvc exp run -S ...` writes it: the whole config, resolved."""
    path = project.root / "params.yaml"
    path.write_text(yaml.safe_dump(raw_config(project, **overrides)))
    return path


def test_run_config_runs_a_composed_params_file(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    params = composed(project, experiment="tuned")
    out = project.root / "results" / "exp"
    code = main(["run-config", str(params), "--out", str(out), "retriever.k1=1.1"])
    assert code == 0, capsys.readouterr().err
    config = yaml.safe_load((out / "config.yaml").read_text())
    assert config["experiment"] == "tuned" and config["retriever"]["k1"] == 1.1
    assert json.loads((out / "metrics.json").read_text())["queries"] == 4


def test_run_config_takes_the_tracker_from_the_environment(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalframe.app.runconfig import load_config

    params = composed(project, tracking={"name": "mlflow", "uri": None})
    monkeypatch.setenv("EVALFRAME_TRACKING", "none")
    assert load_config(params, [], None)["tracking"] == {"name": "none"}
    monkeypatch.setenv("EVALFRAME_TRACKING", "nosuch")
    with pytest.raises(ConfigError, match="no tracking config named 'nosuch'"):
        load_config(params, [], None)


def test_run_config_takes_the_cache_folder_from_the_environment(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A composed file names the cache folder of the machine that composed it; a rescore
    or run-config elsewhere uses the environment's, and an explicit override wins."""
    from evalframe.app.runconfig import load_config

    params = composed(project)
    monkeypatch.delenv("EVALFRAME_CACHE_DIR", raising=False)
    stored = load_config(params, [], None)["output"]["cache_dir"]
    assert stored == yaml.safe_load(params.read_text())["output"]["cache_dir"]
    assert load_config(params, [], None)["output"]["cache_dir"] == stored  # the file's
    monkeypatch.setenv("EVALFRAME_CACHE_DIR", str(project.root / "elsewhere"))
    assert load_config(params, [], None)["output"]["cache_dir"] == str(project.root / "elsewhere")
    chosen = ["output.cache_dir=/srv/cache"]
    assert load_config(params, chosen, None)["output"]["cache_dir"] == "/srv/cache"


def test_run_config_on_a_plainly_composed_default_names_the_unset_key(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    params = composed(project, dataset={"name": "jsonl", "path": "???"})
    assert main(["run-config", str(params)]) == 2
    err = capsys.readouterr().err
    assert "dataset.path" in err and "+experiment=" in err and "Traceback" not in err
    assert main(["run-config", str(project.root / "nope.yaml")]) == 2
    assert "not found" in capsys.readouterr().err
    # a folder given for the file: said as such (it was an IsADirectoryError, exit 3)
    assert main(["run-config", str(project.root)]) == 2
    assert capsys.readouterr().err.startswith(
        f"error: composed config is a folder, not a file: {project.root}"
    )


def test_ef_data_in_a_composed_file_is_relative_inside_a_checkout(tmp_path: Path) -> None:
    assert Path(data_path("quickstart/golden.jsonl", tmp_path)).is_absolute()  # not in it
    (tmp_path / "evalframe" / "data" / "quickstart").mkdir(parents=True)
    (tmp_path / "evalframe" / "data" / "quickstart" / "golden.jsonl").write_text("")
    assert (
        data_path("quickstart/golden.jsonl", tmp_path) == "evalframe/data/quickstart/golden.jsonl"
    )
    assert Path(data_path("quickstart/golden.jsonl", None)).is_file()


def promote_run(project: Project) -> Path:
    exp = validate_experiment(raw_config(project))
    run_experiment(exp, reporters=[TerminalReport(io.StringIO())], progress=False)
    return exp.output_dir


def test_promote_prints_the_dvc_and_git_commands(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = promote_run(project)
    root = project.root / "baselines"
    assert main(["baseline", "promote", str(run_dir), "--name", "main", "--root", str(root)]) == 0
    out = capsys.readouterr().out
    assert f"dvc add {root / 'main'}" in out
    assert f"git add {root / 'main.dvc'} {root / '.gitignore'}" in out
    assert "git commit -m 'baseline main'" in out and "--commit" in out
    assert "replaced" not in out  # a new name replaces nothing

    # promoting over the name moves the bar every later run is held to: said, old -> new
    first = json.loads((root / "main" / "summary.json").read_text())["headline"][0]
    metrics = json.loads((root / "main" / "metrics.json").read_text())
    metrics[first] = 0.25  # the earlier baseline's value, by hand
    (root / "main" / "metrics.json").write_text(json.dumps(metrics))
    assert main(["baseline", "promote", str(run_dir), "--name", "main", "--root", str(root)]) == 0
    now = json.loads((run_dir / "metrics.json").read_text())[first]
    said = capsys.readouterr().out.splitlines()[1]
    assert said.startswith(f"  it replaced the baseline main held: {first} 0.250 -> {now:.3f}")


def test_promote_commit_outside_dvc_is_refused_before_the_copy(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """It was refused after the copy: an earlier baseline of that name was replaced by a
    command that exited 2. Now nothing is written, and the earlier baseline stays."""
    run_dir = promote_run(project)
    root = project.root / "baselines"
    argv = ["baseline", "promote", str(run_dir), "--name", "main", "--root", str(root), "--commit"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "not inside a DVC repository" in err and "dvc init" in err
    assert not root.exists()
    (root / "main").mkdir(parents=True)
    (root / "main" / "metrics.json").write_text('{"RR": 0.25}\n')  # an earlier baseline's
    assert main(argv) == 2
    assert sorted(p.name for p in (root / "main").iterdir()) == ["metrics.json"]
    assert (root / "main" / "metrics.json").read_text() == '{"RR": 0.25}\n'


def test_golden_diff_rev_refusals(project: Project, capsys: pytest.CaptureFixture[str]) -> None:
    golden = str(project.golden)
    assert main(["golden", "diff", golden, "--rev", "HEAD"]) == 2
    assert "not inside a DVC repository" in capsys.readouterr().err
    assert main(["golden", "diff", golden]) == 2
    assert "argument NEW is missing: golden diff compares two versions" in capsys.readouterr().err
    assert main(["golden", "diff", golden, "--rev", "a", "--rev", "b", "--rev", "c"]) == 2
    assert "more than twice" in capsys.readouterr().err
