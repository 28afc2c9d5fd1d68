"""How a setting pydantic refused is said (``plugin.registry.validation_problems``)."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel, ValidationError

from evalframe.plugin.registry import format_validation_error


class Trials(BaseModel):
    n: int | Literal["auto"] = "auto"
    seeds: int = 1


class Mining(BaseModel):
    trials: Trials


def _said(data: dict[str, object]) -> str:
    with pytest.raises(ValidationError) as err:
        Mining.model_validate(data)
    return format_validation_error(err.value, "mine")


def test_a_union_setting_is_one_problem_at_its_own_key() -> None:
    """`trials.n=abc` was `trials.n.int: ...; trials.n.literal['auto']: ...`: two locations
    that name no setting, and the value said twice."""
    assert _said({"trials": {"n": "abc"}}) == (
        "mine.trials.n: Input should be a valid integer, unable to parse string as an integer "
        "or 'auto' (got 'abc')"
    )


def test_other_problems_of_the_same_model_stay_apart() -> None:
    said = _said({"trials": {"n": "abc", "seeds": "x"}})
    assert said.startswith("mine.trials.n: Input should be a valid integer")
    assert said.endswith(
        "; mine.trials.seeds: Input should be a valid integer, unable to parse string as an "
        "integer (got 'x')"
    )


class Labelled(BaseModel):
    labels: dict[str, int]


def test_mapping_entries_named_like_types_are_not_taken_for_a_union() -> None:
    """Each entry its own problem: merged, the second value was lost."""
    with pytest.raises(ValidationError) as err:
        Labelled.model_validate({"labels": {"int": "a", "str": "b"}})
    said = format_validation_error(err.value, "metrics")
    assert "metrics.labels.int: " in said and "(got 'a')" in said
    assert "metrics.labels.str: " in said and "(got 'b')" in said
