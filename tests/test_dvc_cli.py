"""The commands the DVC pipeline calls, in-process and without dvc: run-config,
baseline promote's printed versioning, golden diff --rev's refusals, the Hydra
plugin that DVC's composition loads."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from evalframe.app.cli import main
from evalframe.app.dvc_hydra import FROM_ENVIRONMENT, NO_EXPERIMENT, data_path
from evalframe.core.errors import ConfigError
from evalframe.pipeline.config import validate_experiment
from evalframe.pipeline.run import run_experiment
from evalframe.report.terminal import TerminalReport
from tests.conftest import Project, raw_config

REPO = Path(__file__).resolve().parents[1]


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


def test_run_config_keeps_the_cache_folder_the_file_names(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """EVALFRAME_CACHE_DIR is the default of output.cache_dir, as on a run: a file that
    names a cache folder keeps it (DVC's params.yaml names .evalframe-cache, so the exp
    stage's config.yaml, and dvc.lock, were another on every machine that set the
    variable); a file that names none gets the variable, else ~/.cache/evalframe; an
    override wins over both."""
    from evalframe.app.runconfig import load_config

    params = composed(project)
    output = {"dir": "results/exp", "cache_dir": ".evalframe-cache"}
    yaml_text = yaml.safe_dump({**raw_config(project), "output": output})
    params.write_text(yaml_text)
    monkeypatch.setenv("EVALFRAME_CACHE_DIR", str(project.root / "elsewhere"))
    assert load_config(params, [], None)["output"]["cache_dir"] == ".evalframe-cache"
    chosen = ["output.cache_dir=/srv/cache"]
    assert load_config(params, chosen, None)["output"]["cache_dir"] == "/srv/cache"
    # the command: the run's config.yaml names the file's folder, not the variable's
    out = project.root / "results" / "exp"
    monkeypatch.chdir(project.root)
    assert main(["run-config", str(params), "--out", str(out)]) == 0, capsys.readouterr().err
    assert yaml.safe_load((out / "config.yaml").read_text())["output"]["cache_dir"] == (
        ".evalframe-cache"
    )
    assert (project.root / ".evalframe-cache").is_dir()
    assert not (project.root / "elsewhere").exists()
    # a file without the key (or without an output section): the default, as on a run
    params.write_text(yaml.safe_dump({**raw_config(project), "output": {"dir": "x"}}))
    assert load_config(params, [], None)["output"]["cache_dir"] == str(project.root / "elsewhere")
    without = {k: v for k, v in raw_config(project).items() if k != "output"}
    params.write_text(yaml.safe_dump(without))
    loaded = load_config(params, [], out)["output"]
    assert loaded == {"dir": str(out), "cache_dir": str(project.root / "elsewhere")}
    monkeypatch.delenv("EVALFRAME_CACHE_DIR")
    monkeypatch.setenv("HOME", str(project.root / "home"))
    home_cache = str(project.root / "home" / ".cache" / "evalframe")
    assert load_config(params, [], out)["output"]["cache_dir"] == home_cache


def test_run_config_refuses_a_literal_credential_as_the_command_line_does(
    project: Project, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`python -m evalframe` refuses a credential written into the config, exit 2; so does
    run-config, at the file's line, before anything runs or is written, and never prints
    it. A reference (${oc.env:KEY}) is no credential."""
    secret = "sk-test-SECRET123"
    params = composed(project)
    text = params.read_text().replace(
        "  name: bm25\n", f"  name: http\n  url: http://127.0.0.1:9/ok?api_key={secret}\n"
    )
    assert secret in text
    params.write_text(text)
    line = text.splitlines().index(f"  url: http://127.0.0.1:9/ok?api_key={secret}") + 1
    out = project.root / "results" / "exp"
    assert main(["run-config", str(params), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {params}:{line}: config key retriever.url: a credential")
    assert "api_key" in err and "${oc.env:" in err and "Traceback" not in err
    assert "SECRET123" not in err and not out.exists()
    # the same credential in an override: refused by its key
    clean = composed(project)
    url = f"retriever.url=http://127.0.0.1:9/ok?api_key={secret}"
    assert main(["run-config", str(clean), "--out", str(out), "retriever=http", url]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: config key retriever.url: a credential")
    assert "SECRET123" not in err and not out.exists()
    # a reference is what the command line asks for: read from the environment
    from evalframe.app.runconfig import load_config

    monkeypatch.setenv("SEARCH_KEY", secret)
    reference = "retriever.url=http://127.0.0.1:9/ok?api_key=${oc.env:SEARCH_KEY}"
    loaded = load_config(params, [reference], out, refuse_secrets=True)
    assert loaded["retriever"]["url"] == f"http://127.0.0.1:9/ok?api_key={secret}"


def test_run_config_of_a_runs_config_yaml_says_its_credential_is_redacted(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run's config.yaml keeps a credential redacted (docs/security.md): run-config
    says so, where, and that the reference goes back as an override."""
    run_dir = promote_run(project)
    config = run_dir / "config.yaml"
    stored = yaml.safe_load(config.read_text())
    stored["retriever"] = {"name": "http", "url": "http://127.0.0.1:9/ok?api_key=sk-t…[redacted]"}
    config.write_text(yaml.safe_dump(stored, allow_unicode=True))
    assert main(["run-config", str(config), "--out", str(project.root / "again")]) == 2
    err = capsys.readouterr().err
    assert f"error: {config}:" in err and "retriever.url holds a redacted credential" in err
    assert "override" in err and "${oc.env:KEY}" in err
    assert not (project.root / "again").exists()


@pytest.mark.parametrize(
    ("text", "said", "got"),
    [
        ("dataset:\n  name: jsonl\n  path: [unclosed\n", "is not valid YAML", "flow sequence"),
        ("", "is empty", "no settings (only comments or blank lines)"),
        ("# composed later\n", "is empty", "no settings (only comments or blank lines)"),
        ("- experiment\n- dataset\n", "is not a mapping of settings", "got a list"),
    ],
)
def test_run_config_on_a_broken_file_says_how_to_mend_a_file_of_its_kind(
    project: Project, capsys: pytest.CaptureFixture[str], text: str, said: str, got: str
) -> None:
    """A params.yaml written by hand (or cut short) is mended by hand or composed again;
    a run's config.yaml is restored from where the run is kept. Either: one located
    paragraph, exit 2. (An empty file was "Missing key output" with --out.)"""
    params = project.root / "params.yaml"
    params.write_text(text)
    assert main(["run-config", str(params), "--out", str(project.root / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {params}") and said in err and got in err
    assert "hint: mend the YAML by hand" in err and "dvc exp run -S '+experiment=NAME'" in err
    assert "restore it from" not in err and "Missing key" not in err
    assert len(err.strip().splitlines()) == 2  # the paragraph and its hint
    if said == "is not valid YAML":
        assert err.startswith(f"error: {params}:4: ")  # the line the parser stopped at
    run_dir = promote_run(project)
    (run_dir / "config.yaml").write_text(text)
    assert main(["run-config", str(run_dir / "config.yaml")]) == 2
    err = capsys.readouterr().err
    assert said in err and "hint: restore it from where the run is kept" in err


def test_a_composition_that_picks_no_experiment_writes_no_params_yaml(tmp_path: Path) -> None:
    """DVC's own composition (what `dvc exp run` calls), with this repository's
    conf/dvc_exp.yaml and Hydra plugin: without +experiment=NAME it stops before the file
    is written (a plain `dvc exp run` then changes nothing); with one it writes it."""
    code = (
        "import sys; from dvc.utils.hydra import compose_and_dump\n"
        "compose_and_dump(sys.argv[1], sys.argv[2], None, 'dvc_exp', sys.argv[3], sys.argv[4:])"
    )
    params = tmp_path / "params.yaml"
    argv = [sys.executable, "-c", code, str(params), str(REPO / "conf"), str(REPO / ".dvc/plugins")]
    plain = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert plain.returncode != 0 and not params.exists()
    assert NO_EXPERIMENT in plain.stderr
    chosen = subprocess.run(
        [*argv, "+experiment=quickstart"], capture_output=True, text=True, timeout=120
    )
    assert chosen.returncode == 0, chosen.stderr
    written = yaml.safe_load(params.read_text())
    assert written["experiment"] == "quickstart"
    assert written["dataset"]["path"] == "evalframe/data/quickstart/golden.jsonl"


def test_a_composition_that_reads_the_environment_writes_no_params_yaml(tmp_path: Path) -> None:
    """`-S 'retriever.url=...?api_key=${oc.env:KEY}'`: DVC resolves every interpolation and
    wrote the key's value into params.yaml, which Git keeps. DVC's composition now stops
    before the file is written, naming the variable and never its value."""
    import os

    code = (
        "import sys; from dvc.utils.hydra import compose_and_dump\n"
        "compose_and_dump(sys.argv[1], sys.argv[2], None, 'dvc_exp', sys.argv[3], sys.argv[4:])"
    )
    params = tmp_path / "params.yaml"
    argv = [sys.executable, "-c", code, str(params), str(REPO / "conf"), str(REPO / ".dvc/plugins")]
    secret = "sk-live-9f8e7d6c5b4a39281706"
    env = {**os.environ, "SEARCH_API_KEY": secret}
    override = "+retriever.note=${oc.env:SEARCH_API_KEY}"
    proc = subprocess.run(
        [*argv, "+experiment=quickstart", override],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert proc.returncode != 0 and not params.exists()
    assert FROM_ENVIRONMENT.format(name="SEARCH_API_KEY") in proc.stderr
    assert secret not in proc.stderr + proc.stdout
    # the shipped configs read no variable under DVC: conf/dvc_exp.yaml names the cache folder
    plain = subprocess.run(
        [*argv, "+experiment=quickstart"], capture_output=True, text=True, timeout=120, env=env
    )
    assert plain.returncode == 0, plain.stderr
    assert yaml.safe_load(params.read_text())["output"]["cache_dir"] == ".evalframe-cache"


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
