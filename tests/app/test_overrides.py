"""Overrides Hydra's grammar cannot read, said with the form that works (app.overrides)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalframe.app.overrides import check_override_syntax
from evalframe.core.errors import ConfigError


def test_a_metric_string_as_the_last_part_of_a_key_gets_the_mapping_form() -> None:
    """`metrics.labels.Hit@1=R1` was Hydra's lexer error, with no where or fix."""
    with pytest.raises(ConfigError) as err:
        check_override_syntax(["metrics.labels.Hit@1=R1"])
    assert err.value.key == "metrics.labels.Hit@1"
    assert "'Hit@1', a metric string, cannot be the last part of a key" in err.value.message
    assert err.value.hint == (
        "set the entry in its mapping, which keeps the others: '++metrics.labels={Hit@1: R1}'"
    )


def test_the_mapping_form_and_plain_keys_pass() -> None:
    check_override_syntax(["metrics.labels={Hit@1: R1}", "retriever.k1=0.9", "+x.y_z=1"])


def test_an_unquoted_metric_value_still_gets_the_quoting_hint() -> None:
    with pytest.raises(ConfigError) as err:
        check_override_syntax(["metrics.measures=[P(rel=2)@5,RR]"])
    assert "must be quoted inside the override" in err.value.message


def test_an_override_without_equals_is_said_in_evalframes_words() -> None:
    """`depth` alone was Hydra's "missing EQUAL at '<EOF>'" with a link to its grammar."""
    with pytest.raises(ConfigError) as err:
        check_override_syntax(["retriever.k1=0.9", "depth"])
    assert err.value.key == "depth"
    assert err.value.message == (
        "override 'depth' has no '=': an override sets a key or picks a group's option"
    )
    assert err.value.hint is not None and "depth=VALUE" in err.value.hint
    check_override_syntax(["~gates.recall"])  # deleting a key takes no value


def test_a_stored_configs_override_without_equals_is_refused_not_set_to_null(
    tmp_path: Path,
) -> None:
    """`run-config FILE depth` (and `rescore RUN depth`) set depth to None: "Input should be a
    valid integer (got None)", as if the user had written null."""
    from evalframe.app.runconfig import load_config

    config = tmp_path / "config.yaml"
    config.write_text("experiment: x\ndepth: 5\n")
    with pytest.raises(ConfigError) as err:
        load_config(config, ["depth"], None)
    assert err.value.key == "depth" and "has no '='" in err.value.message


@pytest.mark.parametrize(
    "item", ["hydra.run.dir=", "hydra.run.dir=''", "hydra.sweep.dir=", "hydra.run.dir=null"]
)
def test_an_empty_run_folder_is_refused_before_hydra_writes_into_the_current_one(
    item: str,
) -> None:
    """``hydra.run.dir=$OUTDIR`` with the variable unset: Hydra wrote the run (config.yaml,
    run.trec, .hydra/) into the current folder, exit 0."""
    with pytest.raises(ConfigError) as refused:
        check_override_syntax(["+experiment=quickstart", item])
    key = item.partition("=")[0]
    assert refused.value.key == key
    assert f"{key} is empty: the run would be written into the current folder" in (
        refused.value.message
    )


def test_a_run_folder_is_still_any_folder() -> None:
    check_override_syntax(["hydra.run.dir=out", "hydra.sweep.dir=multirun/x", "hydra.run.dir=."])


def test_deleting_the_run_folder_setting_is_not_an_empty_one() -> None:
    """``~hydra.run.dir`` falls back to Hydra's default folder: it was refused as empty."""
    check_override_syntax(["~hydra.run.dir"])
