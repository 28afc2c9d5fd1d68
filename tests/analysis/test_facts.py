"""The text rule and the facts judge: every step of the normalisation, and the share at its edge."""

from __future__ import annotations

import pytest

from evalframe.analysis.facts import FactsConfig, FactsJudge, check_facts, fact_mentioned
from evalframe.analysis.text import stem, strip_parentheticals, terms, words
from evalframe.core.errors import DataError
from evalframe.plugin.protocols import Answer, MiningTask, PluginContext
from evalframe.plugin.testing import ValidatorContract


def test_identifiers_are_split_into_words_and_case_folded() -> None:
    assert words("self.config.sufficiency_threshold") == [
        "self",
        "config",
        "sufficiency",
        "threshold",
    ]
    assert words("ContextSynthesizer parses HTTPServer") == [
        "context",
        "synthesizer",
        "pars",
        "http",
        "server",
    ]


def test_stopwords_and_one_letter_words_are_dropped() -> None:
    assert words("The gate is a check of x") == ["gate", "check"]


def test_nfkc_makes_compatibility_forms_the_same_term() -> None:
    assert terms("ﬁle") == terms("file")  # the fi ligature
    assert terms("ＡＢＣ") == terms("abc")  # full-width letters


@pytest.mark.parametrize(
    ("word", "stemmed"),
    [
        ("compares", "compar"),  # -es, 6 characters left
        ("compared", "compar"),  # -ed
        ("comparing", "compar"),  # -ing
        ("keys", "key"),  # -s leaves exactly 3 characters: removed
        ("uses", "use"),  # -es would leave 2: not removed; -s leaves 3: removed
        ("has", "has"),  # -s would leave 2: kept
        ("class", "class"),  # -ss is not a plural
        ("gate", "gate"),
    ],
)
def test_the_suffix_rule_at_its_three_character_edge(word: str, stemmed: str) -> None:
    assert stem(word) == stemmed


def test_parenthesised_notes_are_removed_nested_ones_too() -> None:
    text = "The threshold is hardcoded to 0.8 (it is not (see config) configurable)."
    assert strip_parentheticals(text).split() == [
        "The",
        "threshold",
        "is",
        "hardcoded",
        "to",
        "0.8",
        ".",
    ]


# A fact of four content terms: {gate, compar, sufficiency, threshold}.
FACT = "The gate compares sufficiency against the threshold."


def test_a_fact_is_mentioned_at_exactly_min_share_of_its_terms() -> None:
    assert len(terms(FACT)) == 4
    three = "the gate compared sufficiency"  # 3 of 4 = 0.75
    assert fact_mentioned(FACT, three, min_share=0.75)
    assert not fact_mentioned(FACT, three, min_share=0.76)
    assert not fact_mentioned(FACT, "gate and sufficiency", min_share=0.75)  # 2 of 4 = 0.5


def test_phrase_matching_needs_the_words_in_one_run() -> None:
    fact = "renamed over the target"
    assert fact_mentioned(fact, "then it is renamed over the target file", match="phrase")
    assert not fact_mentioned(fact, "the target is renamed over", match="phrase")
    assert fact_mentioned(fact, "the target is renamed over", match="terms", min_share=1.0)


def test_a_must_not_fact_is_looked_for_without_its_parenthesised_correction() -> None:
    must_not = "The decision is made in ContextSynthesizer (it is not: synthesizer only computes)."
    # the correction's words alone do not make the answer state the claim
    assert check_facts("the synthesizer only computes the score", [], [must_not]).correct
    stated = check_facts("the decision is made in the ContextSynthesizer", [], [must_not])
    assert stated.stated == (must_not,)
    assert not stated.correct


def test_a_must_not_fact_one_word_from_a_right_one_is_stated_only_with_that_word() -> None:
    """KnowCode's must-not facts are right ones with a word wrong: 4 of the 5 terms of
    "ties are broken by document id ascending" are in every right answer (0.8 >= 0.75),
    so the fact is stated only when its own term, "ascending", is there too."""
    must = ["Ties are broken by document id descending, as trec_eval does."]
    must_not = ["Ties are broken by document id ascending (descending)."]
    assert len(terms("Ties are broken by document id ascending")) == 5
    right = "Ties are broken by document id descending, as trec_eval does."
    assert fact_mentioned(must_not[0], right)  # the share rule alone would say it
    assert check_facts(right, must, must_not).correct
    wrong = check_facts(
        "Ties are broken by document id ascending, not as trec_eval.", must, must_not
    )
    assert wrong.stated == tuple(must_not) and wrong.missing == tuple(must)
    # without the must-mention fact beside it, nothing is shared: the share rule decides
    assert check_facts(right, [], must_not).stated == tuple(must_not)


def test_a_must_not_fact_with_no_term_of_its_own_is_judged_by_the_share_rule() -> None:
    """ "not" is a function word: the two facts have the same terms, so a lexical judge
    cannot tell them apart, and an answer holding the one states the other (the
    documented limit)."""
    must, must_not = (
        ["The cache is not shared between jobs."],
        ["The cache is shared between jobs."],
    )
    assert terms(must[0]) == terms(must_not[0])
    assert check_facts("The cache is not shared between jobs.", must, must_not).stated == tuple(
        must_not
    )


def test_correct_means_every_fact_and_no_forbidden_one() -> None:
    must = ["The text goes to a temporary file.", "The temporary file is renamed over the target."]
    answer = "It writes the text to a temporary file, which is then renamed over the target."
    assert check_facts(answer, must).correct
    missing = check_facts("It writes the text to a temporary file.", must)
    assert missing.missing == (must[1],)
    assert "misses: The temporary file is renamed" in missing.detail()


def test_a_fact_without_content_words_is_a_data_error() -> None:
    with pytest.raises(DataError, match="no content word"):
        check_facts("anything", ["(only a note)"])


TASK = MiningTask(
    id="0f3a",
    query="Where are outputs written?",
    ground_truth={
        "must_mention": ["The text goes to a temporary file."],
        "must_not_mention": ["The file is written in place."],
    },
)


class TestFactsJudgeContract(ValidatorContract):
    plugin_name = "facts"

    @pytest.fixture
    def validator(self) -> FactsJudge:
        return FactsJudge(FactsConfig(), PluginContext())

    @pytest.fixture
    def cases(self) -> list[tuple[MiningTask, Answer, bool]]:
        return [
            (TASK, Answer(text="The text goes to a temporary file first."), True),
            (TASK, Answer(text="Nothing about it."), False),
            (
                TASK,
                Answer(text="The text goes to a temporary file; the file is written in place."),
                False,
            ),
        ]


def test_ground_truth_that_is_not_a_list_of_texts_is_refused() -> None:
    judge = FactsJudge(FactsConfig(), PluginContext())
    task = MiningTask(id="t", query="q", ground_truth={"must_mention": "a fact"})
    with pytest.raises(DataError, match="must be a list of fact texts"):
        judge.validate(task, Answer(text="a fact"))
