"""The fast JSON path gives what the json module gives, and takes its verdicts where they differ."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalframe.core import jsoncodec
from evalframe.core.jsoncodec import dumps_compact, dumps_line, loads

pytestmark = pytest.mark.skipif(jsoncodec._orjson is None, reason="orjson not installed")

#: Values as JSON can hold them (no NaN: JSON has none).
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(json_values)
def test_loads_reads_what_json_reads(value: object) -> None:
    text = json.dumps(value, ensure_ascii=False)
    got, want = loads(text), json.loads(text)
    assert got == want
    assert json.dumps(got) == json.dumps(want)  # same types: an int stays an int


@given(json_values)
def test_a_written_line_reads_back_as_the_json_module_writes_it(value: object) -> None:
    line = dumps_line(value)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert json.loads(line) == json.loads(json.dumps(value))


def test_integers_beyond_64_bits_stay_integers() -> None:
    # orjson alone reads 2**64 as the float 1.8446744073709552e19
    text = '{"id": 18446744073709551616, "n": [-9223372036854775809]}'
    assert loads(text) == {"id": 2**64, "n": [-(2**63) - 1]}
    assert type(loads(text)["id"]) is int
    assert loads("1e19") == 1e19  # a float written as one is still a float
    # after strings in one list (ids are cleared in one pass; a mixed list item by item)
    assert loads('["d1", "d2", 18446744073709551616]') == ["d1", "d2", 2**64]
    assert type(loads('["d1", 18446744073709551616]')[1]) is int


@pytest.mark.parametrize(
    ("text", "expected"),
    [("[NaN]", None), ("1e400", math.inf), ('"\\ud800"', "\ud800"), ("-Infinity", -math.inf)],
)
def test_what_only_the_json_module_accepts_is_still_accepted(text: str, expected: object) -> None:
    got = loads(text)
    if expected is None:
        assert math.isnan(got[0])
    else:
        assert got == expected


def test_bad_json_gets_the_json_modules_message() -> None:
    bad = '{"a": 1,}'
    with pytest.raises(json.JSONDecodeError) as ours:
        loads(bad)
    with pytest.raises(json.JSONDecodeError) as theirs:
        json.loads(bad)
    assert str(ours.value) == str(theirs.value)


def test_nan_numpy_and_odd_keys_are_written_as_before() -> None:
    assert json.loads(dumps_line({"a": math.nan, "b": [math.inf]})) == {"a": None, "b": [None]}
    # a NumPy float32 is written as its Python float, 0.10000000149011612, not as 0.1
    assert json.loads(dumps_line({"x": np.float32(0.1)})) == {"x": float(np.float32(0.1))}
    assert json.loads(dumps_line({1: "int key"})) == {"1": "int key"}
    assert json.loads(dumps_line({"big": 2**70})) == {"big": 2**70}


def test_compact_json_is_the_json_modules_bytes_for_every_code_point() -> None:
    """The corpus hash is over these bytes: a code point escaped differently would
    change every corpus's hash, and so every cache key."""
    for start in range(0, 0x110000, 0x1000):
        chars = "".join(chr(c) for c in range(start, start + 0x1000) if not 0xD800 <= c <= 0xDFFF)
        value = [[chars, chars[::-1]], ["", "x"]]
        want = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        assert dumps_compact(value) == want, hex(start)


def _reference_document(value: object) -> str:
    """What a JSON file held before orjson wrote them: the json module, indented."""
    text = json.dumps(jsoncodec.jsonable(value), indent=2, ensure_ascii=False, allow_nan=False)
    return text + "\n"


_ANY_FLOAT = st.floats(allow_nan=True, allow_infinity=True)
_DOCUMENT = st.recursive(
    st.none() | st.booleans() | st.integers() | _ANY_FLOAT | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=6) | st.integers(), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(_DOCUMENT)
def test_a_json_file_is_the_json_modules_bytes(value: object) -> None:
    assert jsoncodec.dumps_document(value) == _reference_document(value)


@pytest.mark.parametrize(
    "value",
    [
        {"tiny": 1e-05, "huge": 1e16, "edge": 1e-4, "below": 9.999999999999999e-05},
        {"wide": 2**64, "negative": -(2**63) - 1, "top": 2**64 - 1},
        {"numpy": np.float32(0.5), "int64": np.int64(3), "nan": float("nan")},
        {"lone surrogate": "\ud800", "controls": "\x00\x1f\x7f\u2028", "empty": [{}, []]},
        {1: "int key", None: "None key", 2.5: "float key"},
    ],
)
def test_values_orjson_could_write_otherwise_are_the_json_modules_bytes(value: object) -> None:
    # 1e-05 is "1e-05" to the json module and "0.00001" to orjson; 2**64 is beyond orjson
    assert jsoncodec.dumps_document(value) == _reference_document(value)


def test_every_code_point_in_a_json_file_is_escaped_as_the_json_module_does() -> None:
    text = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    assert jsoncodec.dumps_document({"all": text}) == _reference_document({"all": text})
