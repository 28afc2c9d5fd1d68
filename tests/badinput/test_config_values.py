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


def test_measures_without_the_criterion_name_what_the_gates_miss_too(project: Project) -> None:
    """`rescore RUN 'metrics.measures=[R@5,R@10,nDCG@10]'` of the quickstart said the
    criterion RR was missing, then, fixed, that gate mrr needed RR: one round each."""
    raw = raw_config(
        project,
        metrics={"measures": ["R@5", "nDCG@10"]},
        gates={"mrr": {"type": "threshold", "metric": "RR", "op": ">=", "value": 0.5},
               "hit": {"type": "threshold", "metric": "Hit@3", "op": ">=", "value": 0.5},
               "recall": {"type": "threshold", "metric": "R@5", "op": ">=", "value": 0.5}},
        report={"html": False, "criterion": "RR"},
    )  # fmt: skip
    with pytest.raises(ConfigError) as err:
        validate_experiment(raw)
    assert err.value.key == "report.criterion"
    assert err.value.message == (
        "the report criterion 'RR' is not among the computed metrics; gate 'mrr' needs 'RR', "
        "not computed either; gate 'hit' needs 'Hit@3', not computed either"
    )
    assert err.value.hint is not None
    assert "'metrics.measures=[R@5, nDCG@10, RR, Hit@3]'" in err.value.hint


@pytest.mark.parametrize("sweep", [False, True], ids=["run", "sweep"])
def test_a_run_folder_hydra_cannot_make_is_one_paragraph(project: Project, sweep: bool) -> None:
    """Hydra makes the run's (or sweep's) folder itself, before evalframe's checks: a
    folder under a file (a read-only working folder alike) was Hydra's traceback."""
    (project.root / "afile").write_text("not a folder")
    key = "hydra.sweep.dir" if sweep else "hydra.run.dir"
    args = ["-m", "depth=3,5"] if sweep else []
    res = project.run(*args, "+experiment=quickstart", f"{key}={project.root / 'afile' / 'x'}")
    assert res.code == 2
    assert "Traceback" not in res.stderr and "HYDRA_FULL_ERROR" not in res.stderr
    what = "sweep" if sweep else "run"
    assert res.stderr.startswith(
        f"error: config key {key}: the {what}'s folder cannot be made or written: "
    )
    assert "Not a directory" in res.stderr and f"set {key}=DIR" in res.stderr


def test_an_experiment_file_that_is_not_utf8_is_located(project: Project) -> None:
    folder = project.root / "conf" / "experiment"
    folder.mkdir(parents=True)
    (folder / "mine.yaml").write_bytes(b"# @package _global_\ndepth: 5\n\xff\xfe oops\n")
    res = project.run("+experiment=mine")
    assert res.code == 2
    assert "Traceback" not in res.stderr
    assert res.stderr.startswith(f"error: {folder / 'mine.yaml'}:3: the config file is not UTF-8")
    assert "byte 0xff at line 3, column 1" in res.stderr


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("gates.recall_at_5.value=nan", "gates.recall_at_5.value"),
        ("gates.recall_at_5.value=inf", "gates.recall_at_5.value"),
        ("retriever.k1=inf", "retriever.k1"),
        ("stats.confidence=nan", "stats.confidence"),
    ],
)
def test_a_number_that_is_not_finite_is_named(project: Project, override: str, key: str) -> None:
    """`value=nan` made a gate that no mean meets (exit 1, "≥ nan does not hold"), and
    `timeout_seconds=inf` overflowed the clock (exit 3): every setting wants a finite number."""
    res = project.run("+experiment=quickstart", override, "tracking=none")
    assert res.code == 2, res.stderr
    assert res.stderr.startswith(f"error: config key {key}: ")
    assert "Input should be a finite number" in res.stderr and "Traceback" not in res.stderr


@pytest.mark.parametrize("ratio", ["nan", "-1"])
def test_golden_validate_refuses_a_near_duplicate_ratio_that_means_nothing(
    project: Project, ratio: str
) -> None:
    res = project.run("golden", "validate", str(project.golden), "--near-duplicate", ratio)
    assert res.code == 2
    assert f"argument --near-duplicate: '{ratio}' is not a ratio from 0 up" in res.stderr


def test_a_plus_on_a_key_the_config_has_is_said_in_evalframes_form(project: Project) -> None:
    res = project.run("+experiment=quickstart", "+depth=3", "tracking=none")
    assert res.code == 2
    assert res.stderr == (
        "error: config key depth: depth is already in the config, so it is set without the "
        "plus (got +depth=3)\n  hint: write depth=3 (a plus adds a key the config does not have)\n"
    )


@pytest.mark.parametrize(
    ("section", "key"),
    [
        ({"stats": {"seed": -1}}, "stats.seed"),  # NumPy refused it after retrieval (exit 3)
        ({"stats": {"bootstrap": 10**11}}, "stats.bootstrap"),  # asked NumPy for 5 TiB
        ({"stats": {"bootstrap": 1_000_001}}, "stats.bootstrap"),
    ],
    ids=["seed", "bootstrap-huge", "bootstrap-past-the-bound"],
)
def test_a_seed_or_a_resample_count_numpy_cannot_take_is_named(
    project: Project, section: dict, key: str
) -> None:
    with pytest.raises(ConfigError) as err:
        validate_experiment(raw_config(project, **section))
    assert err.value.key == key
    validate_experiment(raw_config(project, stats={"seed": 0, "bootstrap": 1_000_000}))


@pytest.mark.parametrize("bad", [{"seed": -1}, {"resamples": 1_000_001}], ids=["seed", "resamples"])
def test_the_noninferiority_gates_seed_and_resamples_are_bounded(
    project: Project, bad: dict
) -> None:
    gate = {"type": "noninferiority", "metric": "RR", "margin": 0.05, **bad}
    with pytest.raises(ConfigError) as err:
        validate_experiment(raw_config(project, gates={"ni": gate}, baseline=str(project.root)))
    assert err.value.key == f"gates.ni.{next(iter(bad))}"


@pytest.mark.parametrize(
    ("section", "key"),
    [
        ({"output": {"dir": "", "cache_dir": "c"}}, "output.dir"),
        ({"output": {"dir": "o", "cache_dir": " "}}, "output.cache_dir"),
        ({"dataset": {"name": "jsonl", "path": ""}}, "dataset.path"),
        ({"corpus": {"name": "jsonl", "path": "  "}}, "corpus.path"),
        ({"baseline": ""}, "baseline"),  # looked up "." as a folder of runs
    ],
    ids=["output-dir", "cache-dir", "dataset", "corpus", "baseline"],
)
def test_an_empty_path_is_named_not_read_as_the_current_folder(
    project: Project, section: dict, key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`output.dir=""` wrote the run's files among the user's in the current folder;
    `dataset.path=""` read every *.jsonl there as the golden set."""
    monkeypatch.chdir(project.root)  # which holds golden.jsonl and corpus.jsonl
    with pytest.raises(ConfigError) as err:
        validate_experiment(raw_config(project, **section))
    assert err.value.key == key
    assert "empty" in err.value.message


def test_a_fail_mark_above_the_pass_mark_is_named(project: Project) -> None:
    """`report.pass_at=0.3` beside the default fail_below 0.5: a query at 0.4 would have
    been both ✓ and ✗; each mark is the other's bound."""
    with pytest.raises(ConfigError) as err:
        validate_experiment(raw_config(project, report={"pass_at": 0.3, "html": False}))
    assert err.value.key == "report.fail_below"
    validate_experiment(raw_config(project, report={"pass_at": 0.5, "fail_below": 0.5}))
