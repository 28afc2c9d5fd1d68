"""Metric identities: canonical strings, aliases, parameters and parse errors."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import Field

from evalframe.core.errors import ConfigError
from evalframe.metrics import Metric, MetricParams, metric, parse_metric, parse_metrics
from evalframe.plugin.registry import METRICS

# -- canonical strings -----------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "nDCG@10",
        "R@100",
        "RR@10",
        "P(rel=2)@5",
        "RR",
        "AP",
        "nDCG",
        "AP@1000",
        "Hit@1",
        "R(rel=3)@20",
        "RR(rel=2)",
    ],
)
def test_canonical_strings_round_trip(text: str) -> None:
    m = parse_metric(text)
    assert str(m) == text
    assert parse_metric(str(m)) == m


def test_parsed_fields() -> None:
    assert parse_metric("nDCG@10") == Metric(name="nDCG", params=(), k=10)
    assert parse_metric("RR") == Metric(name="RR", params=(), k=None)
    m = parse_metric("P(rel=2)@5")
    assert m == Metric(name="P", params=(("rel", 2),), k=5)
    assert m.rel == 2
    assert parse_metric("P@5").rel == 1


def test_default_parameters_are_dropped() -> None:
    assert parse_metric("P(rel=1)@5") == parse_metric("P@5")
    assert str(parse_metric("P(rel=1)@5")) == "P@5"


def test_whitespace_around_the_text_and_parameters_is_ignored() -> None:
    assert parse_metric("  P( rel = 2 )@5 ") == parse_metric("P(rel=2)@5")


def test_a_metric_object_passes_through() -> None:
    m = parse_metric("R@5")
    assert parse_metric(m) is m


@pytest.mark.parametrize(
    ("alias", "canonical"),
    [
        ("MRR@10", "RR@10"),
        ("MRR", "RR"),
        ("Recall@5", "R@5"),
        ("recall@5", "R@5"),
        ("Precision(rel=2)@3", "P(rel=2)@3"),
        ("MAP", "AP"),
        ("map@100", "AP@100"),
        ("NDCG@10", "nDCG@10"),
        ("ndcg", "nDCG"),
        ("Success@5", "Hit@5"),
        ("HitRate@1", "Hit@1"),
    ],
)
def test_aliases_read_back_as_the_canonical_name(alias: str, canonical: str) -> None:
    m = parse_metric(alias)
    assert str(m) == canonical
    assert m == parse_metric(canonical)


def test_metric_is_hashable_and_equal_by_value() -> None:
    a, b = parse_metric("MRR@10"), parse_metric("RR@10")
    assert hash(a) == hash(b)
    assert {a: 1}[b] == 1
    assert len({parse_metric("P@5"), parse_metric("P(rel=1)@5"), parse_metric("P(rel=2)@5")}) == 2


def test_repr_shows_the_canonical_string() -> None:
    assert repr(parse_metric("MRR@10")) == "Metric('RR@10')"


# -- errors ------------------------------------------------------------------------


def _error(text: str, key: str | None = None) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_metric(text, key=key)
    return info.value


@pytest.mark.parametrize("text", ["P", "R", "Hit", "Precision"])
def test_a_cutoff_is_required(text: str) -> None:
    err = _error(text)
    assert "needs a cutoff" in err.message


@pytest.mark.parametrize("text", ["nDCG@0", "P@0", "RR@0"])
def test_cutoff_zero_is_rejected(text: str) -> None:
    err = _error(text)
    assert "cutoff must be at least 1" in err.message
    assert err.got == "0"


def test_unknown_metric_lists_the_catalogue() -> None:
    err = _error("Foo@3", key="metrics.measures[0]")
    assert "no metric named 'Foo'" in err.message
    for name in ("AP", "Hit", "P", "R", "RR", "nDCG"):
        assert name in err.message
    assert err.key == "metrics.measures[0]"


@pytest.mark.parametrize(
    ("typo", "nearest"), [("nDGC@3", "nDCG"), ("Hits@3", "Hit"), ("RRR", "RR")]
)
def test_unknown_metric_suggests_the_nearest_name(typo: str, nearest: str) -> None:
    assert _error(typo).hint == f"did you mean {nearest!r}?"


def test_relevance_threshold_below_one_is_rejected() -> None:
    err = _error("P(rel=0)@5")
    assert "bad parameter" in err.message
    assert "rel" in err.message
    assert err.hint == "P accepts: rel, view"  # view: every metric (R(view=files)@5)


def test_unknown_parameter_is_rejected() -> None:
    err = _error("P(x=1)@5")
    assert "bad parameter" in err.message
    assert "x" in err.message


def test_ndcg_takes_no_relevance_threshold() -> None:
    """nDCG uses every positive label as a gain, so ``rel`` means nothing to it."""
    err = _error("nDCG(rel=2)@10")
    assert "bad parameter" in err.message
    assert "rel" in err.message
    assert err.hint is not None and err.hint.startswith("nDCG accepts:")


@pytest.mark.parametrize("text", ["P(rel)@5", "P(=2)@5"])
def test_parameter_without_key_value_is_rejected(text: str) -> None:
    assert "is not key=value" in _error(text).message


def test_non_integer_threshold_is_rejected() -> None:
    assert "bad parameter" in _error("P(rel=1.5)@5").message


@pytest.mark.parametrize(
    "text", ["@@", "", "nDCG@", "nDCG@-1", "nDCG@10@5", "P((rel=2))@5", "P@five", "P@5x", "P(rel=2"]
)
def test_garbage_cannot_be_read(text: str) -> None:
    err = _error(text, key="metrics.measures[3]")
    assert "cannot read metric" in err.message
    assert err.key == "metrics.measures[3]"
    assert err.expected is not None and "nDCG@10" in err.expected


# -- lists ---------------------------------------------------------------------------


def test_parse_metrics_keeps_order() -> None:
    assert [str(m) for m in parse_metrics(["nDCG@10", "MRR@10", "R@100"])] == [
        "nDCG@10",
        "RR@10",
        "R@100",
    ]


@pytest.mark.parametrize(
    "pair", [["nDCG@10", "nDCG@10"], ["P@5", "P(rel=1)@5"], ["MRR@10", "RR@10"]]
)
def test_parse_metrics_rejects_duplicates_and_names_the_index(pair: list[str]) -> None:
    with pytest.raises(ConfigError) as info:
        parse_metrics(pair, key="metrics.measures")
    err = info.value
    assert "listed twice" in err.message
    assert err.key == "metrics.measures[1]"
    assert "config key metrics.measures[1]" in str(err)


def test_parse_metrics_names_the_index_of_a_bad_entry() -> None:
    with pytest.raises(ConfigError) as info:
        parse_metrics(["nDCG@10", "P"], key="metrics.measures")
    assert info.value.key == "metrics.measures[1]"


def test_parse_metrics_default_key() -> None:
    with pytest.raises(ConfigError) as info:
        parse_metrics(["R@5", "Foo"])
    assert info.value.key == "metrics[1]"


# -- round trip over generated metrics ----------------------------------------------

CUTOFF = {
    "P": "required",
    "R": "required",
    "Hit": "required",
    "RR": "optional",
    "AP": "optional",
    "nDCG": "optional",
}
HAS_REL = {"P", "R", "Hit", "RR", "AP"}


@st.composite
def metric_texts(draw: st.DrawFn) -> tuple[str, str, int | None, int]:
    name = draw(st.sampled_from(sorted(CUTOFF)))
    k: int | None = draw(st.integers(1, 10_000))
    if CUTOFF[name] == "optional" and draw(st.booleans()):
        k = None
    rel = draw(st.integers(1, 9)) if name in HAS_REL else 1
    params = ""
    if name in HAS_REL and (rel != 1 or draw(st.booleans())):
        params = f"(rel={rel})"
    return name + params + (f"@{k}" if k is not None else ""), name, k, rel


@settings(max_examples=200, deadline=None, database=None)
@given(metric_texts())
def test_parse_and_str_round_trip(case: tuple[str, str, int | None, int]) -> None:
    text, name, k, rel = case
    m = parse_metric(text)
    assert m.name == name
    assert m.k == k
    assert m.rel == rel
    assert parse_metric(str(m)) == m
    assert str(parse_metric(str(m))) == str(m)
    expected = name + (f"(rel={rel})" if rel != 1 else "") + (f"@{k}" if k is not None else "")
    assert str(m) == expected


def test_a_typo_in_a_list_names_the_key_and_suggests_the_name() -> None:
    """The example from docs/metrics.md."""
    with pytest.raises(ConfigError) as info:
        parse_metrics(["R@5", "P@5", "nDGC@10"], key="metrics.measures")
    err = info.value
    assert err.key == "metrics.measures[2]"
    assert "no metric named 'nDGC'" in err.message
    assert err.hint == "did you mean 'nDCG'?"
    assert str(err).startswith("error: config key metrics.measures[2]: no metric named 'nDGC'")


# -- a third-party metric with several parameters ------------------------------------------


class MixParams(MetricParams):
    rel: int = Field(1, ge=1)
    alpha: float = 0.5
    mode: str = "fast"


@pytest.fixture
def mix_metric() -> Iterator[None]:
    with METRICS.scoped():

        @metric("Mix", params=MixParams, k="optional")
        def mix(m: object, k: int | None, p: MixParams) -> np.ndarray:
            """A test metric with three parameters."""
            raise NotImplementedError

        @metric("Flat", k="none")
        def flat(m: object, k: int | None, p: MetricParams) -> np.ndarray:
            raise NotImplementedError

        yield
    assert "Mix" not in METRICS._specs


def test_parameters_print_in_sorted_order(mix_metric: None) -> None:
    m = parse_metric("Mix(rel=2,mode=slow,alpha=0.25)@3")
    assert str(m) == "Mix(alpha=0.25,mode=slow,rel=2)@3"
    assert m.params == (("alpha", 0.25), ("mode", "slow"), ("rel", 2))
    assert parse_metric(str(m)) == m


def test_defaults_are_dropped_among_several_parameters(mix_metric: None) -> None:
    assert str(parse_metric("Mix(alpha=0.5,mode=fast,rel=3)")) == "Mix(rel=3)"
    assert str(parse_metric("Mix(alpha=0.5)@2")) == "Mix@2"


def test_float_parameters_round_trip(mix_metric: None) -> None:
    for text in ("Mix(alpha=1e-05)", "Mix(alpha=-2.5)", "Mix(alpha=1)"):
        m = parse_metric(text)
        assert parse_metric(str(m)) == m
    assert str(parse_metric("Mix(alpha=1)")) == "Mix(alpha=1.0)"
    assert parse_metric("Mix(alpha=1)") == parse_metric("Mix(alpha=1.0)")


def test_a_metric_that_takes_no_cutoff(mix_metric: None) -> None:
    assert str(parse_metric("Flat")) == "Flat"
    with pytest.raises(ConfigError, match="takes no cutoff"):
        parse_metric("Flat@5")


def test_the_description_is_the_first_docstring_line(mix_metric: None) -> None:
    definition = parse_metric("Mix").definition
    assert definition.description == "A test metric with three parameters."
    assert definition.params is MixParams
    assert parse_metric("Flat").definition.description == "Flat"  # no docstring: the name


# -- bounds: the range gates check a threshold against ---------------------------------


def test_every_built_in_metric_declares_its_bounds() -> None:
    """A new built-in without bounds would let any threshold on it through unchecked."""
    import evalframe.metrics.builtin as builtin

    built_in = [METRICS.get(n) for n in METRICS.names()]
    built_in = [spec for spec in built_in if spec.module == builtin.__name__]
    assert len(built_in) >= 18
    for spec in built_in:
        assert spec.obj.bounds is not None, spec.name


@pytest.mark.parametrize(
    ("metric_text", "bounds"),
    [
        ("R@5", (0.0, 1.0)),
        ("nDCG(gain=exp)@10", (0.0, 1.0)),
        ("nDCG(gain=1:3;2:9)@10", (0.0, 1.0)),  # nonnegative gains: DCG <= ideal DCG
        ("nDCG(gain=1:-2)@10", None),  # a negative gain can take nDCG below 0
        ("NumRet", (0.0, math.inf)),
    ],
)
def test_bounds_follow_the_parameters(metric_text: str, bounds: object) -> None:
    assert parse_metric(metric_text).bounds == bounds


@pytest.mark.parametrize(
    ("metric_text", "op", "value", "holds"),
    [
        ("R@5", ">=", 1.0, True),  # a perfect run meets it
        ("R@5", ">", 1.0, False),
        ("R@5", "<=", 0.0, True),
        ("R@5", "<", 0.0, False),
        ("R@5", ">=", 80.0, False),
        ("R@5", ">=", -3.0, True),  # always holds: allowed, the gate is merely lenient
        ("NumRet", ">=", 1e9, True),  # counts have no top
        ("NumRet", "<", 0.0, False),
        ("nDCG(gain=1:-2)@10", ">=", 3.0, True),  # no known range: not judged
        ("nDCG@x", ">=", 3.0, True),  # unreadable: the gate's own check says so
        ("NoSuchMetric@3", ">=", 3.0, True),
    ],
)
def test_threshold_problem(metric_text: str, op: str, value: float, holds: bool) -> None:
    from evalframe.metrics import threshold_problem

    assert (threshold_problem(metric_text, op, value) is None) is holds


def test_threshold_problem_names_the_range_and_the_fraction_meant() -> None:
    from evalframe.metrics import threshold_problem

    said = threshold_problem("R@5", ">=", 80)
    assert said is not None
    assert "from 0 to 1" in said and "'R@5 >= 80' can never hold" in said
    assert "80% is 0.8" in said


@pytest.mark.parametrize(
    ("metric_text", "drop", "relative", "can_fail"),
    [
        ("R@5", 1.0, False, True),  # the whole range: a fall from 1 to 0 exceeds nothing,
        ("R@5", 1.5, False, False),  # but more than the range is never exceeded
        ("R@5", 0.05, False, True),
        ("R@5", 1.0, True, True),  # all of the mean
        ("R@5", 5.0, True, False),  # 500% of it
        ("NumRet", 500.0, False, True),  # no top
        ("nDCG(gain=1:-2)@10", 9.0, False, True),
    ],
)
def test_tolerance_problem(metric_text: str, drop: float, relative: bool, can_fail: bool) -> None:
    from evalframe.metrics import tolerance_problem

    assert (tolerance_problem(metric_text, drop, relative=relative) is None) is can_fail


def test_declared_bounds_must_be_a_range() -> None:
    from evalframe.core.errors import PluginError

    with pytest.raises(PluginError, match="declares bounds"):
        metric("BadBounds", bounds=(1.0, 0.0))(lambda m, k, p: np.zeros(0))
    assert "BadBounds" not in METRICS


@pytest.mark.parametrize(
    ("text", "said"),
    [
        # SetF(beta=inf) retrieved, then failed as "the kernel returned NaN" (exit 2, late)
        ("SetF(beta=1e400)", "parameter 'beta' is '1e400', which is not a finite number"),
        ("SetF(beta=nan)", "parameter 'beta' is 'nan', which is not a finite number"),
        # a gain of NaN scored every query 0 without a word (exit 0)
        ("nDCG(gain=1:nan)@5", "the gain is not a finite number"),
        ("nDCG(gain=1:1e400)@5", "the gain is not a finite number"),
    ],
)
def test_a_parameter_that_is_no_finite_number_is_refused_at_its_key(text: str, said: str) -> None:
    err = _error(text, key="metrics.measures[0]")
    assert said in err.message
    assert err.key == "metrics.measures[0]"
