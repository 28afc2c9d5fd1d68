"""Doc ids as integer words: their order is trec_eval's strcmp order on UTF-8."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from evalframe.metrics._ids import order_words
from tests.strategies import PROPERTY_SETTINGS

IDS = st.lists(
    st.text(alphabet=st.sampled_from(list("09aZz-_é中\U0001f600")), min_size=1, max_size=19),
    min_size=1,
    max_size=30,
)


def _order(words: list[np.ndarray]) -> list[int]:
    return [int(i) for i in np.lexsort(tuple(reversed(words)))]


@PROPERTY_SETTINGS
@given(ids=IDS)
def test_unicode_ids_sort_by_code_point(ids: list[str]) -> None:
    arr = np.array(ids)
    got = [ids[i] for i in _order(order_words(arr))]
    assert got == sorted(ids)  # Python compares str by code point: strcmp on UTF-8


@PROPERTY_SETTINGS
@given(ids=IDS)
def test_utf8_byte_ids_sort_by_byte(ids: list[str]) -> None:
    raw = [s.encode("utf-8") for s in ids]
    arr = np.array(raw)
    got = [raw[i] for i in _order(order_words(arr))]
    assert got == sorted(raw)
