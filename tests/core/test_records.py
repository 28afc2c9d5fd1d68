"""evalframe.core.records: the record checks and set-level warnings every loader shares."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalframe.core.errors import DataError
from evalframe.core.records import (
    At,
    UniqueIds,
    is_id,
    warn_ids_not_in_corpus,
    warn_if_nothing_matches,
    warn_query_id_lookalikes,
)
from evalframe.core.types import Corpus, Document, GoldenQuery, Ranking, Run


def test_an_id_is_a_non_blank_string_or_an_integer() -> None:
    assert is_id("a") and is_id(0) and is_id(" a ")
    assert not any(is_id(v) for v in ("", "  ", True, None, 1.5, ["a"]))


def test_a_duplicate_names_both_places_in_the_callers_words() -> None:
    seen = UniqueIds("query id", hint="give every pair its own id")
    seen.add("p1", At(Path("adk.yaml"), 3), place="pairs[0], adk.yaml:2")
    with pytest.raises(DataError) as err:
        seen.add("p1", At(Path("adk.yaml"), 9))
    assert "adk.yaml:9: query id 'p1' is duplicated (first at pairs[0], adk.yaml:2)" in str(
        err.value
    )


def q(qid: str, *docs: str) -> GoldenQuery:
    return GoldenQuery(id=qid, text="t", judgments=dict.fromkeys(docs, 1))


def run(**rankings: list[str]) -> Run:
    return Run(
        rankings={
            k: Ranking.from_pairs(k, [(d, float(-i)) for i, d in enumerate(v)])
            for k, v in rankings.items()
        }
    )


def test_a_run_that_matches_no_judged_id_at_all_is_warned_about(
    capsys: pytest.CaptureFixture[str],
) -> None:
    golden = [q("q1", "tool/a"), q("q2", "tool/b"), q("q3")]
    assert warn_if_nothing_matches(golden, run(q1=["tool/a/1.0"], q2=["tool/b/2", "x"], q3=["y"]))
    err = capsys.readouterr().err
    assert "not one of the 3 document ids retrieved for 2 judged queries" in err
    assert "(query 'q1': retrieved 'tool/a/1.0', judged e.g. 'tool/a')" in err


def test_one_match_anywhere_is_enough_to_stay_quiet(capsys: pytest.CaptureFixture[str]) -> None:
    golden = [q("q1", "a"), q("q2", "b")]
    assert not warn_if_nothing_matches(golden, run(q1=["x"], q2=["y", "b"]))
    assert not warn_if_nothing_matches(golden, run())  # nothing retrieved: nothing to say
    assert capsys.readouterr().err == ""


def test_judged_ids_the_corpus_lacks_are_listed_once(capsys: pytest.CaptureFixture[str]) -> None:
    corpus = Corpus.build("c", [Document(id="a", text="x")])
    warn_ids_not_in_corpus(
        [q("q1", "a", "b"), q("q2", "c"), q("q3", "c")], corpus, "expected chunk"
    )
    assert capsys.readouterr().err == (
        "warning: 2 expected chunk id(s) are not in corpus 'c' and can never be retrieved: "
        "b (query q1), c (query q2, q3)\n"
    )


def test_graded_judgments_keep_ids_as_kept_and_refuse_a_repeat_or_a_bad_id(
    tmp_path: Path,
) -> None:
    at = At(tmp_path / "g.jsonl", 3)
    assert at.graded({"a": 2, " b": 0, 7: -1}, "rel") == {"a": 2, "b": 0, "7": -1}
    with pytest.raises(DataError) as err:
        at.graded({"a": 1, "a ": 2}, "rel", noun="chunk")  # one chunk, two labels
    assert err.value.line == 3
    assert "field 'rel' labels chunk 'a' twice" in err.value.message
    with pytest.raises(DataError) as err:
        at.graded({"a b": 1}, "rel")
    assert "maps 'a b', which is not a doc id" in err.value.message
    with pytest.raises(DataError) as err:
        at.graded({"a": "1"}, "rel")
    assert "the label of doc 'a' in 'rel' is not a whole number" in err.value.message


def test_run_query_ids_that_differ_from_golden_ones_only_by_case_are_named(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Q01 for q01: that golden query has no ranking and scores as missing; said once."""
    golden = [q("q01", "a"), q("q02", "b"), q("q03", "c")]
    # the run holds q03 as written, Q01 as a ranking, and Ｑ02 (full width) only as a listed id
    assert warn_query_id_lookalikes(golden, run(q03=["c"], Q01=["a"]), extra=["Ｑ02", "z9"]) == 2
    err = capsys.readouterr().err
    assert "2 query ids of the run differ from a golden query id only by case or Unicode" in err
    assert "run 'Ｑ02' ~ golden 'q02'" in err and "run 'Q01' ~ golden 'q01'" in err
    assert "z9" not in err  # an id like no golden one is the usual note's, not this warning's


def test_a_run_id_whose_golden_twin_has_its_own_ranking_is_not_a_lookalike(
    capsys: pytest.CaptureFixture[str],
) -> None:
    golden = [q("q01", "a")]
    assert warn_query_id_lookalikes(golden, run(q01=["a"], Q01=["a"])) == 0
    assert warn_query_id_lookalikes(golden, run(q01=["a"])) == 0
    assert capsys.readouterr().err == ""
