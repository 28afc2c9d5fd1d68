"""Hydra glue: argv ordering, group-option checks and the config search path."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalframe.app.hydra_app import (
    check_group_overrides,
    config_search_path,
    core_conf_dir,
    group_options,
    plugin_conf_dirs,
    prepare_overrides,
    split_argv,
)
from evalframe.app.hydra_mode import mode_may_be_set
from evalframe.core.errors import ConfigError


def test_flags_move_before_overrides_whatever_order_the_user_wrote() -> None:
    flags, overrides = split_argv(["+experiment=q", "--cfg", "job", "depth=3", "-m", "x=1,2"])
    assert flags == ["--cfg", "job", "-m"]
    assert overrides == ["+experiment=q", "depth=3", "x=1,2"]


def test_info_takes_an_optional_value() -> None:
    assert split_argv(["--info", "searchpath", "a=1"]) == (["--info", "searchpath"], ["a=1"])
    assert split_argv(["-i", "config", "a=1"]) == (["-i", "config"], ["a=1"])
    # alone, it is given Hydra's default: put first, it would take the next word (the
    # user's override, or the tracking= and hydra.searchpath= evalframe adds) as its value
    assert split_argv(["--info", "a=1"]) == (["--info", "all"], ["a=1"])
    assert split_argv(["a=1", "--info"]) == (["--info", "all"], ["a=1"])
    assert split_argv(["-i", "~gates", "--cfg", "job"]) == (
        ["-i", "all", "--cfg", "job"],
        ["~gates"],
    )


def test_a_word_after_info_that_is_none_of_its_choices_is_said_with_them() -> None:
    with pytest.raises(ConfigError) as err:
        split_argv(["--info", "confg", "+experiment=quickstart"])
    said = err.value.render()
    assert said.startswith(
        "error: option --info: 'confg' is not one of the choices --info takes (expected one "
        "of all, config, defaults, defaults-tree, plugins, searchpath, or nothing (all))"
    ), said
    assert "hint: did you mean --info config? for example `evalframe --info config " in said
    with pytest.raises(ConfigError, match="'zzz' is not one of the choices -i takes"):
        split_argv(["-i", "zzz"])


def test_info_before_an_override_prints_hydras_information_under_evalframe_tracking(
    tmp_path: Path,
) -> None:
    """`EVALFRAME_TRACKING=none evalframe --info +experiment=quickstart` said "argument
    --info/-i: invalid choice: 'tracking=none'", a token the user never typed (and without
    the variable, '+experiment=quickstart'; with no override at all, hydra.searchpath=)."""
    res = subprocess.run(
        [sys.executable, "-m", "evalframe", "--info", "+experiment=quickstart"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "EVALFRAME_TRACKING": "none"},
        check=False,
    )
    assert res.returncode == 0, res.stderr
    assert "invalid choice" not in res.stderr
    assert "Config search path" in res.stdout and "experiment/quickstart" in res.stdout
    assert "tracking/none" in res.stdout  # the variable's tracker, composed
    assert not (tmp_path / "outputs").exists()


def test_an_unknown_tracker_in_evalframe_tracking_is_said_as_the_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It said "config key tracking: no tracking config named 'mlfow'": the user typed no
    tracking key, and looked for one on the command line and in their YAML."""
    monkeypatch.setenv("EVALFRAME_TRACKING", "mlfow")
    with pytest.raises(ConfigError) as err:
        prepare_overrides(["+experiment=quickstart"], cwd=tmp_path)
    said = err.value.render()
    assert said.startswith(
        "error: environment variable EVALFRAME_TRACKING: no tracking config named 'mlfow' "
        "(expected one of: mlflow, none; got EVALFRAME_TRACKING=mlfow in the environment, "
        "which picks the tracker when the command line sets no tracking key)"
    ), said
    assert "hint: did you mean EVALFRAME_TRACKING=mlflow? set it to one of the options" in said
    assert "config key" not in said
    # the command line's tracker wins, and the variable is not read at all
    prepare_overrides(["+experiment=quickstart", "tracking=none"], cwd=tmp_path)
    # the real command says the same, exit 2
    res = _quickstart(tmp_path, EVALFRAME_TRACKING="mlfow")
    assert res.returncode == 2
    assert res.stderr.startswith("error: environment variable EVALFRAME_TRACKING: ")
    assert "Traceback" not in res.stderr and not (tmp_path / "outputs").exists()


def test_search_path_is_core_then_user_then_plugins(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    paths = config_search_path(tmp_path)
    assert paths[0] == core_conf_dir()
    assert paths[1] == (tmp_path / "conf").resolve()
    assert {name for name, _ in plugin_conf_dirs()} >= {"bm25", "jsonl", "run_file"}


def test_plugin_groups_are_found_through_the_conf_entry_point(tmp_path: Path) -> None:
    options = group_options("retriever", config_search_path(tmp_path))
    assert {"bm25", "run_file"} <= set(options)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("retriever=nope", "no retriever config named 'nope'"),
        ("retriever=bm25,nope", "no retriever config named 'nope'"),
        ("+experiment=quikstart", "no experiment named 'quikstart'"),
    ],
)
def test_unknown_group_options_are_errors(tmp_path: Path, override: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as err:
        check_group_overrides([override], config_search_path(tmp_path))
    assert "available:" in err.value.message


def test_known_options_sweeps_and_plain_keys_pass(tmp_path: Path) -> None:
    check_group_overrides(
        [
            "retriever=bm25",
            "retriever=bm25,run_file",
            "retriever.k1=3",
            "depth=4",
            "+experiment=quickstart",
            "retriever=glob(*)",
            "~corpus",
        ],
        config_search_path(tmp_path),
    )


def test_hydras_not_in_struct_error_is_said_in_evalframes_words() -> None:
    from evalframe.app.hydra_errors import hydra_message

    hydra_text = (
        "Could not override 'retriever.k11'.\n"
        "To append to your config use +retriever.k11=3\n"
        "Key 'k11' is not in struct\n    full_key: retriever.k11\n    object_type=dict\n\n"
        "Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.\n"
    )
    assert hydra_message(hydra_text) == (
        "error: config key retriever.k11: there is no setting retriever.k11 to override "
        "(expected a key of the composed config; got retriever.k11=3)\n"
        "  hint: check its spelling: `evalframe plugins show retriever NAME` lists the "
        "settings of the retriever plugin NAME, and `--cfg job` prints every key\n"
    )
    # outside a plugin's section, '+' does add a key
    assert "or write +stats.extra=1 to add a new key" in hydra_message(
        hydra_text.replace("retriever.k11", "stats.extra")
        .replace("=3", "=1")
        .replace("'k11'", "'extra'")  # as Hydra names it
    )
    # a value with spaces (a map), as Hydra prints it: the whole override is named
    mapped = hydra_text.replace("retriever.k11", "analysis.failures.label_categories")
    # (Hydra names the missing key itself, as the real command shows)
    mapped = mapped.replace("=3", "={hard: specificity_gap}").replace("'k11'", "'label_categories'")
    assert (
        "or write +analysis.failures.label_categories={hard: specificity_gap} to add a new key"
        in hydra_message(mapped)
    )
    other = "no viable alternative at input '['\n"
    assert hydra_message(other) == other  # a message we do not recognise is kept whole
    # the setting exists; a key inside the mapping given to it does not (Hydra's text for
    # `dataset.grades={1:4,9:1}` under +experiment=cranfield_bm25): said as that
    grades = hydra_text.replace("retriever.k11", "dataset.grades").replace("=3", "={1:4,9:1}")
    assert hydra_message(grades.replace("'k11'", "'9'")) == (
        "error: config key dataset.grades: dataset.grades has no key '9': a mapping given to "
        "an existing setting is merged into it key by key, and new keys are not added (got "
        "dataset.grades={1:4,9:1})\n"
        "  hint: replace the whole mapping with ++dataset.grades={1:4,9:1}, or add the one key "
        "with +dataset.grades.9=VALUE\n"
    )
    # a misspelt section on the way to the key (`output.headrs.x=3`): Hydra names the
    # section; it is the missing setting, not a key inside a mapping given as the value
    middle = hydra_text.replace("retriever.k11", "output.headrs.x").replace("'k11'", "'headrs'")
    assert hydra_message(middle) == (
        "error: config key output.headrs.x: there is no setting output.headrs to override (so "
        "output.headrs.x cannot be set) (expected a key of the composed config; got "
        "output.headrs.x=3)\n"
        "  hint: check its spelling (`--cfg job` prints every key), or write "
        "+output.headrs.x=3 to add a new key\n"
    )


def test_an_experiment_chosen_without_its_plus_is_said_in_evalframes_words() -> None:
    """Hydra 1.3's own text for `evalframe experiment=quickstart`, as it prints it."""
    from evalframe.app.hydra_errors import hydra_message

    hydra_text = (
        "Could not override 'experiment'. No match in the defaults list.\n"
        "To append to your default list use +experiment=quickstart\n\n"
        "Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.\n"
    )
    assert hydra_message(hydra_text) == (
        "error: config key experiment: experiment is not chosen by default, so it is added "
        "with a plus, not overridden (got experiment=quickstart)\n"
        "  hint: write +experiment=quickstart (as in `python -m evalframe "
        "+experiment=quickstart`)\n"
    )


def _prepared(overrides: list[str], cwd: Path) -> tuple[tuple[str, ...], tuple[Path, ...]]:
    prepared = prepare_overrides(overrides, cwd)
    return prepared.overrides, prepared.search_path


def test_nothing_shipped_sets_hydra_mode_so_a_run_composes_once(tmp_path: Path) -> None:
    """A shipped config that mentioned both would cost every run a second composition."""
    assert not mode_may_be_set(*_prepared(["+experiment=quickstart"], tmp_path))
    assert mode_may_be_set(*_prepared(["hydra.mode=MULTIRUN"], tmp_path))
    assert mode_may_be_set(*_prepared(["++hydra.mode=RUN"], tmp_path))


def test_a_users_config_that_may_set_hydra_mode_is_noticed(tmp_path: Path) -> None:
    experiment = tmp_path / "conf" / "experiment"
    experiment.mkdir(parents=True)
    (experiment / "mine.yaml").write_text("# @package _global_\nhydra: {mode: MULTIRUN}\n")
    assert mode_may_be_set(*_prepared([], tmp_path))
    (experiment / "mine.yaml").write_text("retriever:\n  mode: fast  # not Hydra's\n")
    assert not mode_may_be_set(*_prepared([], tmp_path))


def _quickstart(cwd: Path, *overrides: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The real command, ``python -m evalframe +experiment=quickstart OVERRIDES``, in
    ``cwd`` with tracking off (and ``env`` added)."""
    return subprocess.run(
        [sys.executable, "-m", "evalframe", "+experiment=quickstart", *overrides],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "EVALFRAME_TRACKING": "none", **env},
        check=False,
    )


def test_a_group_set_to_null_on_the_command_line_is_said_with_the_way_to_turn_it_off(
    tmp_path: Path,
) -> None:
    """`gates=null` crashed inside Hydra (its traceback, no key named); the real command,
    then the check with the hint each kind of group gets."""
    res = _quickstart(tmp_path, "gates=null")
    assert res.returncode == 2, res.stderr
    assert res.stderr.startswith(
        "error: config key gates: a config group cannot be null on the command line"
    )
    assert "hint: write gates=none (the option that turns it off) or ~gates" in res.stderr
    assert "Traceback" not in res.stderr and not (tmp_path / "outputs").exists()
    with pytest.raises(ConfigError, match="write ~dataset to drop its default") as err:
        prepare_overrides(["+experiment=quickstart", "dataset=null"], cwd=tmp_path)
    assert err.value.key == "dataset"
    prepare_overrides(["+experiment=quickstart", "~gates", "gates.x=null"], cwd=tmp_path)


def test_a_gate_threshold_written_as_a_percentage_stops_the_run_before_retrieval(
    tmp_path: Path,
) -> None:
    """`value: 80` on R@5 (a fraction) made every run fail its gate, exit 1, with the
    report's `R@5 = 0.742 >= 80 does not hold` the only clue; now the real command says
    so at the key, exit 2, and writes no file."""
    res = _quickstart(tmp_path, "+gates.pct={type: threshold, metric: R@5, value: 80}")
    assert res.returncode == 2, res.stderr
    assert res.stderr.startswith("error: config key gates.pct.value: ")
    assert "'R@5 >= 80' can never hold" in res.stderr and "80% is 0.8" in res.stderr
    assert "Traceback" not in res.stderr
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]  # no run folder, no file


def test_a_cache_folder_holding_other_files_stops_the_run_before_retrieval(
    tmp_path: Path,
) -> None:
    """The real command with EVALFRAME_CACHE_DIR at a folder of other files: exit 2 with
    what it holds, nothing written into it, no run folder."""
    shared = tmp_path / "dot-cache"
    shared.mkdir()
    (shared / "notes.txt").write_text("mine\n")
    work = tmp_path / "work"
    work.mkdir()
    res = _quickstart(work, EVALFRAME_CACHE_DIR=str(shared))
    assert res.returncode == 2, res.stderr
    assert res.stderr.startswith(
        f"error: {shared}: the cache folder holds files evalframe did not put there"
    )
    assert "got 1 entry: notes.txt" in res.stderr and "Traceback" not in res.stderr
    assert sorted(p.name for p in shared.iterdir()) == ["notes.txt"]
    assert not [p for p in work.rglob("*") if p.is_file()]
