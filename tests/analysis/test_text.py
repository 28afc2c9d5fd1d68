"""The term rule of the analyses (failure categories, KnowCode facts): words, terms, camelCase."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalframe.analysis import text as _text
from evalframe.analysis.text import documents_holding, normalise, terms, words
from tests.strategies import PROPERTY_SETTINGS

#: The camelCase rule written as one regex of lookarounds, as the module had it before
#: it was split in two passes for speed: the two must cut every text alike.
_CAMEL_AS_ONE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("parseHTTPServer", "parse http server"),
        ("getX", "get x"),
        ("iOS", "i os"),
        ("aB2C", "a b2 c"),
        ("ABCDe", "abc de"),
        ("plain words", "plain words"),
        ("ＡＢＣ", "abc"),  # NFKC first: full-width letters are letters
    ],
)
def test_identifiers_are_split_into_words(text: str, expected: str) -> None:
    assert normalise(text) == expected


@PROPERTY_SETTINGS
@given(st.text(alphabet="aBcDEf01 _XYzé-Ω", max_size=24))
def test_the_two_pass_camel_split_is_the_lookaround_rule(text: str) -> None:
    assert normalise(text) == _CAMEL_AS_ONE.sub(" ", text).casefold()


@PROPERTY_SETTINGS
@given(st.text(max_size=60))
def test_terms_are_the_set_of_words(text: str) -> None:
    assert terms(text) == frozenset(words(text))


#: ASCII texts take the byte-table path; these characters reach its every branch:
#: capitals (camelCase), digits, ``_`` and punctuation between words, stopwords, suffixes.
_ASCII = st.text(alphabet="aBcDeIsngxyz019 _-.(\t\n\x00\x7f", max_size=80)


@PROPERTY_SETTINGS
@given(_ASCII)
def test_terms_of_an_ascii_text_are_the_regex_rules_words(text: str) -> None:
    # words() is the rule as the module docstring states it: NFKC, split, fold, regex
    assert terms(text) == frozenset(words(text))


@PROPERTY_SETTINGS
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=80))
def test_terms_of_any_ascii_text_are_the_regex_rules_words(text: str) -> None:
    assert terms(text) == frozenset(words(text))


def test_the_remembered_terms_are_bounded() -> None:
    memo = _text._Terms(limit=3)
    assert [memo[w] for w in (b"dogs", "cats", b"is", "running")] == ["dog", "cat", "", "runn"]
    assert len(memo) == 1  # emptied on reaching the limit, then the new word kept
    assert memo == {"running": "runn"}


@PROPERTY_SETTINGS
@given(
    st.lists(st.one_of(_ASCII, st.text(alphabet="aBcDeIsngxyz019 _-.éΩß", max_size=40))),
    st.lists(st.sampled_from(["ab", "abs", "a", "is", "cat", "ing", "xyz", "é", "ßs", "ss"])),
)
def test_documents_holding_counts_the_texts_whose_terms_hold_each_term(
    texts: list[str], extra: list[str]
) -> None:
    # asked for terms the texts hold, and words that are not terms, or not there
    wanted = {t for x in texts[:3] for t in terms(x)} | set(extra)
    expected = {t: sum(t in terms(x) for x in texts) for t in wanted}
    got = documents_holding(texts, wanted)
    assert {t: got[t] for t in wanted} == expected
    assert set(got) <= wanted


def test_documents_holding_finds_a_term_under_each_of_its_spellings() -> None:
    texts = ["the dog", "two dogs", "dogging", "Dog_ed", "no", "dögs dogs", "DOGgy"]
    # dog: "dog", "dogs", "dog" of dog_ed (two words), "dogs" beside the non-ASCII
    # "dögs" (that text goes through terms()); "dogging" is "dogg" (ing dropped);
    # "ed" keeps its ending (fewer than three letters would remain); "DOGgy" is
    # split before its last capital: "do" (a stopword) "ggy"; nothing spells "doggy"
    got = documents_holding(texts, ["dog", "dogg", "ed", "ggy", "doggy"])
    assert got == {"dog": 4, "dogg": 1, "ed": 1, "ggy": 1}


def test_words_drop_stopwords_and_short_words_and_stem() -> None:
    assert words("The dogs are running to a parked car") == ["dog", "runn", "park", "car"]
