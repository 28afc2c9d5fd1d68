"""What a tuning sweep varies, and the overrides its untuned runs are named and tagged by.

The sweep's config is composed by Hydra as ``-m`` composes it (the config the
sweep callback receives), from the real ``cranfield_bm25_tune`` experiment,
whose search space is in ``hydra.sweeper.params`` and not on the command line.
The run names themselves are the MLflow plugin's (its test_record.py); the
whole sweep, read back from MLflow, is tests/experiments/test_cranfield_tune.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalframe.app.hydra_app import prepare_overrides
from evalframe.app.sweep import swept_keys
from evalframe.app.tune import _choices, _task, _typed, untuned_overrides


@pytest.fixture(autouse=True)
def _no_tracker_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The suite's EVALFRAME_TRACKING=none would be one more override of every sweep."""
    monkeypatch.delenv("EVALFRAME_TRACKING", raising=False)


def _sweep_config(*overrides: str) -> Any:
    """The config of ``python -m evalframe -m OVERRIDES``, Hydra's node included."""
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.types import RunMode

    prepared = prepare_overrides(list(overrides))
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(prepared.primary), version_base="1.3"):
        return (
            GlobalHydra.instance()
            .config_loader()
            .load_configuration(
                "config", [*prepared.overrides, prepared.searchpath_override], RunMode.MULTIRUN
            )
        )


@pytest.mark.parametrize(
    ("overrides", "swept"),
    [
        # the search space in the experiment's hydra.sweeper.params
        ([], ("retriever.k1", "retriever.b")),
        # a plain value on the command line fixes a key the params sweep
        (["retriever.b=0.6"], ("retriever.k1",)),
        # a sweep on the command line adds to them
        (["depth=50,100"], ("retriever.k1", "retriever.b", "depth")),
    ],
)
def test_a_tuning_sweep_varies_its_search_space_and_its_command_lines_sweeps(
    overrides: list[str], swept: tuple[str, ...]
) -> None:
    config = _sweep_config("+experiment=cranfield_bm25_tune", *overrides)
    assert swept_keys(config) == swept


def test_a_grid_in_the_basic_sweepers_params_is_what_it_varies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user's experiment that keeps its grid in config, not on the command line."""
    experiments = tmp_path / "conf" / "experiment"
    experiments.mkdir(parents=True)
    (experiments / "grid.yaml").write_text(
        "# @package _global_\n"
        "defaults:\n  - quickstart\n  - _self_\n"
        "experiment: grid\n"
        "hydra:\n  sweeper:\n    params:\n      retriever.k1: 0.9,1.2\n      depth: 10\n"
    )
    monkeypatch.chdir(tmp_path)
    assert swept_keys(_sweep_config("+experiment=grid")) == ("retriever.k1",)


def test_the_untuned_runs_overrides_are_the_sweeps_own_values_of_what_it_varies() -> None:
    config = _sweep_config("+experiment=cranfield_bm25_tune", "retriever.b=0.6", "depth=50,100")
    swept = swept_keys(config)
    overrides = untuned_overrides(_task(config), swept, _typed(config), _choices(config.hydra))
    # k1 at cranfield_bm25's own 1.2 and depth at its 100; the command line's
    # fixed b and the experiment kept as typed; the depth sweep itself left out
    assert overrides == [
        "retriever.k1=1.2",
        "depth=100",
        "+experiment=cranfield_bm25_tune",
        "retriever.b=0.6",
    ]


@pytest.mark.parametrize(
    ("swept", "typed", "choices", "expected"),
    [
        # a swept group is named by Hydra's choice, not by the group's contents
        (("retriever",), {"retriever": {"name": "bm25"}}, {"retriever": "bm25"},
         ["retriever=bm25"]),
        (("x.on", "x.off", "x.none", "x.list"),
         {"x": {"on": True, "off": False, "none": None, "list": [1, 2]}}, {},
         ["x.on=true", "x.off=false", "x.none=null", "x.list=[1, 2]"]),
        # a key the sweep adds (+key=...) is not in the untuned config: left out
        (("extra.k",), {}, {}, []),
        # as typed: a value from the environment stays a reference, never the secret
        (("retriever.api_key",), {"retriever": {"api_key": "${oc.env:KEY}"}}, {},
         ["retriever.api_key=${oc.env:KEY}"]),
    ],
)  # fmt: skip
def test_an_untuned_value_is_written_as_an_override_would_write_it(
    swept: tuple[str, ...], typed: dict[str, Any], choices: dict[str, str], expected: list[str]
) -> None:
    assert untuned_overrides([], swept, typed, choices) == expected


def test_the_tuning_table_says_when_a_metric_averages_over_fewer_than_n_queries() -> None:
    """The header's n counts each part's queries; R@5 skips negative examples, so its
    means are over 10 and 12 of 13: said under the table, for that metric only."""
    from evalframe.app.tune import render_tuning

    report = {
        "metric": "R@5",
        "direction": "maximize",
        "scored_trials": 2,
        "trials": 2,
        "split": {"seed": 0, "fraction": 0.5, "of": {}, "tune_queries": 13, "heldout_queries": 13},
        "best": {"job": 1, "overrides": ["retriever.k1=0.9"]},
        "tuning": {"R@5": {"mean": 0.5, "n": 10}, "P@5": {"mean": 0.2, "n": 13}},
        "heldout": {"R@5": {"mean": 0.4, "n": 12}, "P@5": {"mean": 0.1, "n": 13}},
        "gap": {"R@5": 0.1, "P@5": 0.1},
        "heldout_folder": "heldout",
    }
    text = render_tuning(report)
    assert "tuning (n=13)" in text
    assert "averages over fewer, tuning and held-out: R@5 10 and 12." in text
    for m in ("R@5", "P@5"):  # every metric scoring all 13 on both parts: no such line
        report["tuning"][m]["n"] = report["heldout"][m]["n"] = 13
    assert "averages over fewer" not in render_tuning(report)
