"""The check functions on in-memory golden sets: each rule, its threshold and its level."""

from __future__ import annotations

import difflib
import itertools
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalframe.core.errors import DataError
from evalframe.core.types import GoldenQuery, GoldenSet
from evalframe.golden.checks import (
    check_corpus_ids,
    check_domains,
    check_duplicates,
    check_plan,
    check_size,
    label_histogram,
    load_plan,
    near_pairs,
    normalise_question,
    run_checks,
)
from tests.golden.golden_helpers import question


def gset(*queries: GoldenQuery) -> GoldenSet:
    return GoldenSet.build("t", queries)


def q(qid: str, text: str, judged: dict[str, int] | None = None, **meta: object) -> GoldenQuery:
    return GoldenQuery(id=qid, text=text, judgments=judged or {}, metadata=meta)


def test_normalised_questions_ignore_case_punctuation_and_spacing() -> None:
    assert normalise_question("  How do I INSTALL  it?") == normalise_question(
        "how do i install it"
    )


def test_exact_duplicates_are_errors_naming_both_queries() -> None:
    golden = gset(q("1", "How do I install it?"), q("2", "how do I install  it"), q("3", "Other"))
    found = check_duplicates(golden, lambda i: f"g.jsonl:{i}")
    assert [(f.level, f.check, f.query_id, f.location) for f in found] == [
        ("error", "duplicate", "2", "g.jsonl:2")
    ]
    assert "query 1 (g.jsonl:1)" in found[0].message


def test_near_duplicates_are_warnings_and_the_ratio_is_configurable() -> None:
    golden = gset(
        q("a", "How do I install the tool on Linux?"),
        q("b", "How do I install the tool on Linus?"),
        q("c", "Which exit code does a failed gate give?"),
    )
    found = check_duplicates(golden)
    assert [(f.level, f.check, f.query_id) for f in found] == [("warning", "near-duplicate", "b")]
    assert check_duplicates(golden, near=0.999) == []
    assert check_duplicates(golden, near=1.5) == []


def by_definition(texts: list[str], near: float) -> list[tuple[int, int, float]]:
    """Every pair's SequenceMatcher ratio, with no bound to skip any (seq2 the shorter);
    two empty texts are no pair, as in the loop near_pairs replaced."""
    found = []
    for i, j in itertools.combinations(range(len(texts)), 2):
        if not texts[i] and not texts[j]:
            continue
        ratio = difflib.SequenceMatcher(None, texts[j], texts[i], autojunk=False).ratio()
        if ratio >= near:
            found.append((i, j, ratio))
    return found


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.text(alphabet="abcde é", max_size=14), max_size=12),
    st.sampled_from([0.0, 0.5, 0.75, 0.8, 0.9, 0.95, 1.0]),
)
def test_near_pairs_are_every_pair_whose_ratio_reaches_the_threshold(
    texts: list[str], near: float
) -> None:
    """The bounds (lengths, characters in common) skip only pairs below ``near``: the
    pairs, their order and their ratios are the brute-force ones, near ties included."""
    texts = sorted(texts, key=len)
    assert list(near_pairs(texts, near)) == by_definition(texts, near)


def test_near_pairs_reads_counts_above_255_of_one_character() -> None:
    texts = ["a" * 300 + "b", "a" * 300 + "c", "a" * 600]
    assert list(near_pairs(texts, 0.9)) == by_definition(texts, 0.9)
    assert [(i, j) for i, j, _ in near_pairs(texts, 0.9)] == [(0, 1)]  # 300/301 in common


def test_generated_test_questions_are_not_near_duplicates() -> None:
    golden = gset(*(q(str(i), question(i)) for i in range(1, 60)))
    assert check_duplicates(golden) == []


def test_expected_ids_missing_from_the_corpus_are_errors() -> None:
    golden = gset(q("1", "x", {"d1": 1, "d9": 1}), q("2", "y", {"d1": 1}))
    found = check_corpus_ids(golden, {"d1", "d2"})
    assert [(f.level, f.query_id) for f in found] == [("error", "1")]
    assert "d9" in found[0].message


def test_a_query_id_equal_to_a_doc_id_is_a_warning() -> None:
    golden = gset(q("d2", "x", {"d1": 1}))
    found = check_corpus_ids(golden, {"d1", "d2"})
    assert [(f.level, f.check) for f in found] == [("warning", "id-collision")]


def test_label_histogram_counts_every_judgment() -> None:
    golden = gset(q("1", "x", {"a": 2, "b": 0}), q("2", "y", {"a": 2}), q("3", "z"))
    assert label_histogram(golden) == {0: 1, 2: 2}


def test_size_threshold() -> None:
    golden = gset(*(q(str(i), question(i), {"d": 1}) for i in range(5)))
    assert [f.check for f in check_size(golden, min_queries=20)] == ["size"]
    assert check_size(golden, min_queries=5) == []
    assert check_size(golden, min_queries=0) == []


def domain_set(n: int, negatives: int, domain: str = "food") -> list[GoldenQuery]:
    return [
        q(f"{domain}{i}", question(i), {} if i < negatives else {"d": 1}, domain=domain)
        for i in range(n)
    ]


def test_domains_need_ten_questions_and_two_to_three_negatives() -> None:
    good = gset(*domain_set(10, 2, "food"), *domain_set(12, 3, "travel"))
    assert check_domains(good) == []
    bad = gset(*domain_set(9, 1, "food"), *domain_set(12, 5, "travel"))
    found = check_domains(bad)
    assert sorted((f.level, f.message.split(" has")[0]) for f in found) == [
        ("error", "domain 'food'"),
        ("error", "domain 'food'"),
        ("warning", "domain 'travel'"),
    ]
    relaxed = check_domains(bad, min_questions=5, min_negatives=1, max_negatives=5)
    assert relaxed == []


def test_domain_checks_skip_sets_without_domains_and_flag_queries_missing_one() -> None:
    assert check_domains(gset(q("1", "x"))) == []
    mixed = gset(*domain_set(10, 2), q("lost", "where does this go?", {"d": 1}))
    assert [(f.level, f.query_id) for f in check_domains(mixed)] == [("warning", "lost")]


def plan_set() -> GoldenSet:
    items = [("locate", "easy")] * 5 + [("locate", "medium")] * 3 + [("explain", "hard")] * 2
    return gset(
        *(
            q(str(i), question(i), {"d": 1}, task_type=t, difficulty=d)
            for i, (t, d) in enumerate(items)
        )
    )


def test_plan_cells_must_be_filled_to_80_percent() -> None:
    plan = {"LOCATE": {"easy": 6, "medium": 4}, "explain": {"hard": 2, "easy": 0}}
    found = check_plan(plan_set(), plan)
    # locate/easy 5/6 = 83% passes; locate/medium 3/4 = 75% fails; explain/hard full
    assert [(f.level, f.message.split(" has")[0]) for f in found] == [
        ("error", "cell LOCATE/medium")
    ]
    assert check_plan(plan_set(), plan, fill=0.75) == []


def test_queries_outside_the_plan_are_warnings() -> None:
    found = check_plan(plan_set(), {"locate": {"easy": 5, "medium": 3}})
    assert {(f.level, f.query_id) for f in found} == {("warning", "8"), ("warning", "9")}


def test_load_plan_reads_yaml_json_and_the_slash_form(tmp_path: Path) -> None:
    y = tmp_path / "plan.yaml"
    y.write_text("locate:\n  easy: 6\n  medium: 4\nexplain: {hard: 4}\n")
    assert load_plan(y) == {"locate": {"easy": 6, "medium": 4}, "explain": {"hard": 4}}
    j = tmp_path / "plan.json"
    j.write_text('{"cells": {"locate/easy": 2, "explain/hard": 1}}')
    assert load_plan(j) == {"locate": {"easy": 2}, "explain": {"hard": 1}}


@pytest.mark.parametrize(
    ("name", "text", "line"),
    [
        ("bad.json", '{"locate": {"easy": 6,}}', 1),
        ("bad.yaml", "locate:\n  easy: [6\n", 3),
        ("neg.yaml", "locate: {easy: -1}\n", None),
        ("list.yaml", "- 1\n- 2\n", None),
    ],
)
def test_a_malformed_plan_is_a_data_error_with_its_place(
    tmp_path: Path, name: str, text: str, line: int | None
) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(DataError) as err:
        load_plan(path)
    assert err.value.path == str(path)
    assert err.value.line == line


def test_run_checks_always_reports_the_label_histogram() -> None:
    found = run_checks(gset(*(q(str(i), question(i), {"d": 1}) for i in range(20))))
    assert [(f.level, f.check) for f in found] == [("info", "labels")]
