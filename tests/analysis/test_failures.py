"""Failure categories: each rule at its boundary, the order between them, and the run-level counts.

Documents are written so that their content terms are easy to count by eye
(docs/analyses.md, "Failure categories"); every threshold is set explicitly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalframe.analysis.failures import DocFrequency, DocTerms, annotate_failures, categorise
from evalframe.analysis.settings import FailureSettings, validate_analysis
from evalframe.analysis.text import terms
from evalframe.assess.runfolder import FAIL, PASS
from evalframe.core.errors import ConfigError
from evalframe.core.store import open_store
from evalframe.core.types import Corpus, Document

DOCS = {
    "e": "alpha beta gamma delta",  # the expected document
    "x": "alpha beta gamma delta epsilon",  # shares one more term
    "y": "alpha beta gamma",  # shares as many as e... minus one
    "z": "unrelated words only",
}


def _terms_of(doc: str) -> frozenset[str] | None:
    return terms(DOCS[doc]) if doc in DOCS else None


def run(query: str, ranking: list[tuple[str, float]], expected=("e",), **settings: Any) -> dict:
    defaults = {"flat_count": 5, "flat_margin": 0.2, "short_query_terms": 0}
    cfg = FailureSettings(**{**defaults, **settings})
    return categorise(query, list(expected), ranking, _terms_of, cfg, lambda t: 0.0)


def test_vocabulary_mismatch_at_exactly_the_overlap_threshold() -> None:
    # query terms: alpha, zeta, eta, theta, iota -> the expected doc shares 1 of 5 = 0.2
    query = "alpha zeta eta theta iota"
    at = run(query, [("z", 1.0), ("e", 0.5)], vocabulary_max_overlap=0.2)
    assert at["signals"]["best_overlap"] == 0.2
    assert at["category"] == "vocabulary_mismatch" and at["fix"] == "vector search"
    above = run(query, [("z", 1.0), ("e", 0.5)], vocabulary_max_overlap=0.19)
    assert "vocabulary_mismatch" not in above["matched"]


def test_distractor_overlap_needs_strictly_more_shared_terms_above_every_expected_one() -> None:
    query = "alpha beta gamma delta epsilon"  # e shares 4, x shares 5, y shares 3
    hit = run(query, [("x", 2.0), ("e", 1.0)])
    assert hit["category"] == "distractor_overlap"
    assert hit["fix"].startswith("reranking")
    assert (hit["signals"]["distractor"], hit["signals"]["distractor_rank"]) == ("x", 1)
    # a document sharing only as many (or fewer) terms is not a distractor
    assert run(query, [("y", 2.0), ("e", 1.0)])["category"] == "other"
    # a document ranked *below* the first expected one is not either
    assert run(query, [("e", 2.0), ("x", 1.0)])["category"] == "other"
    # with no expected document retrieved, every retrieved document counts as above it
    assert run(query, [("z", 2.0), ("x", 1.0)])["category"] == "distractor_overlap"


FLAT = [("z", 10.0), ("y", 8.0), ("x", 8.0), ("a", 8.0), ("b", 8.0), ("e", 1.0)]


def test_specificity_gap_at_the_flat_margin_count_and_short_query_edges() -> None:
    query = "alpha beta gamma"  # 3 content terms; e shares all: no vocabulary mismatch
    # five scores >= 10 - 0.2 * 10 = 8.0 (8.0 itself counts), and the query is short (3 <= 3)
    gap = run(query, FLAT, short_query_terms=3)
    assert gap["signals"]["close_scores"] == 5
    assert gap["category"] == "specificity_gap" and gap["fix"] == "query expansion"
    assert run(query, FLAT, short_query_terms=2)["category"] != "specificity_gap"  # not short
    assert run(query, FLAT, short_query_terms=3, flat_count=6)["category"] != "specificity_gap"
    narrow = run(query, FLAT, short_query_terms=3, flat_margin=0.19)  # 8.1 > 8.0: only one
    assert narrow["signals"]["close_scores"] == 1


def test_a_long_query_is_a_specificity_gap_only_when_every_term_is_common() -> None:
    query = "alpha beta gamma delta"
    cfg = FailureSettings(flat_count=5, flat_margin=0.2, short_query_terms=3, generic_df_share=0.5)

    def with_share(share: dict[str, float]) -> dict:
        return categorise(query, ["e"], FLAT, _terms_of, cfg, lambda t: share.get(t, 0.0))

    everywhere = {"alpha": 0.5, "beta": 0.9, "gamma": 0.6, "delta": 0.5}  # 0.5 itself counts
    assert with_share(everywhere)["category"] == "specificity_gap"
    assert with_share(everywhere)["signals"]["generic"] is True
    one_rare = {**everywhere, "delta": 0.49}
    assert with_share(one_rare)["category"] == "other"


def test_the_first_matching_rule_in_the_reference_order_is_the_category() -> None:
    # vocabulary mismatch and distractor overlap at once: 0 of 2 shared, x shares 1
    both = run("epsilon omega", [("x", 1.0), ("e", 0.5)])
    assert both["matched"] == ["vocabulary_mismatch", "distractor_overlap"]
    assert both["category"] == "vocabulary_mismatch"
    assert both["heuristic"] is True


def test_expected_documents_the_corpus_lacks_leave_only_the_score_rule() -> None:
    out = run("alpha beta", FLAT, expected=("missing",), short_query_terms=3)
    assert out["signals"]["note"] == "no expected document's text is in the corpus"
    assert out["matched"] == ["specificity_gap"]


def _records() -> list[dict[str, Any]]:
    return [
        {"status": FAIL, "text": "zeta eta", "expected": ["e"], "retrieved": ["z"],
         "scores": [1.0]},
        {"status": PASS, "text": "alpha", "expected": ["e"], "retrieved": ["e"], "scores": [1.0]},
        {"status": FAIL, "text": "alpha beta gamma delta epsilon", "expected": ["e"],
         "retrieved": ["x", "e"], "scores": [2.0, 1.0]},
    ]  # fmt: skip


def test_only_failed_records_get_a_category_and_the_counts_add_up() -> None:
    corpus = Corpus.build("c", (Document(id=k, text=v) for k, v in DOCS.items()))
    records = _records()
    counts = annotate_failures(records, corpus, FailureSettings())
    assert [("failure" in r) for r in records] == [True, False, True]
    assert records[0]["failure"]["category"] == "vocabulary_mismatch"
    assert records[2]["failure"]["category"] == "distractor_overlap"
    assert counts["failed"] == 2
    assert counts["counts"] == {
        "vocabulary_mismatch": 1,
        "specificity_gap": 0,
        "distractor_overlap": 1,
        "other": 0,
    }
    assert counts["fixes"]["vocabulary_mismatch"] == "vector search"


def test_a_dataset_label_names_the_category_and_the_heuristics_verdict_stays_beside_it() -> None:
    """ADK's pairs carry ``kind``; mapped kinds name the category, others are left to the rules.

    By hand: record 0 (label paraphrase -> vocabulary_mismatch) is what the rules say too;
    record 2 (label vague -> specificity_gap) the rules call distractor_overlap; a third
    failed record labelled ``direct`` (not mapped) keeps the rules' category.
    """
    corpus = Corpus.build("c", (Document(id=k, text=v) for k, v in DOCS.items()))
    records = [{**r, "query_id": f"q{i}"} for i, r in enumerate(_records())]
    records.append({**records[0], "query_id": "q3"})
    cfg = FailureSettings(
        label_field="kind",
        label_categories={"paraphrase": "vocabulary_mismatch", "vague": "specificity_gap"},
    )
    labels = {"q0": "paraphrase", "q1": "vague", "q2": "vague", "q3": "direct"}
    counts = annotate_failures(records, corpus, cfg, labels=labels)
    first, third, fourth = records[0]["failure"], records[2]["failure"], records[3]["failure"]
    assert (first["category"], first["heuristic_category"]) == ("vocabulary_mismatch",) * 2
    assert first["source"] == "kind=paraphrase" and first["heuristic"] is False
    assert (third["category"], third["heuristic_category"]) == (
        "specificity_gap",
        "distractor_overlap",
    )
    assert (third["fix"], third["label"]) == ("query expansion", "specificity gap")
    assert third["matched"] == ["distractor_overlap"]  # the rules' own findings, unchanged
    assert fourth["category"] == "vocabulary_mismatch" and fourth["heuristic"] is True
    assert "source" not in fourth and "heuristic_category" not in fourth
    assert "failure" not in records[1]  # passed: its label names nothing
    assert counts["counts"] == {
        "vocabulary_mismatch": 2,
        "specificity_gap": 1,
        "distractor_overlap": 0,
        "other": 0,
    }
    assert counts["labels"] == {"field": "kind", "labelled": 2, "agree": 1}


@pytest.mark.parametrize(
    ("given", "key", "says"),
    [
        ({"label_field": "kind"}, "analysis.failures", "label_categories is empty"),
        (
            {"label_field": "kind", "label_categories": {"vague": "specifity_gap"}},
            "analysis.failures.label_categories.vague",
            "'specificity_gap'",
        ),
    ],
)
def test_a_label_field_needs_its_categories_and_each_a_known_one(
    given: dict, key: str, says: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        validate_analysis({"failures": given}, depth=10)
    assert caught.value.key == key
    assert says in caught.value.render()


def test_label_field_null_turns_the_labels_off_whatever_the_map_holds() -> None:
    """The off switch a stored run can take (an override cannot empty a stored map)."""
    cfg = FailureSettings(label_field=None, label_categories={"vague": "specificity_gap"})
    corpus = Corpus.build("c", (Document(id=k, text=v) for k, v in DOCS.items()))
    records = [{**r, "query_id": f"q{i}"} for i, r in enumerate(_records())]
    counts = annotate_failures(records, corpus, cfg, labels={"q2": "vague"})
    assert records[2]["failure"]["category"] == "distractor_overlap"  # the rules'
    assert "labels" not in counts and counts["heuristic"] is True


@pytest.mark.parametrize("enabled", [True, False])
def test_without_a_corpus_or_when_off_nothing_is_categorised(enabled: bool) -> None:
    records = _records()
    counts = annotate_failures(records, None, FailureSettings(enabled=enabled))
    assert not any("failure" in r for r in records)
    assert counts.get("available", False) is False
    if enabled:
        assert "no corpus" in counts["reason"]


# -- document frequencies, and keeping them for the next run on the same corpus -------------
def _corpus() -> Corpus:
    return Corpus.build("c", (Document(id=k, text=v) for k, v in DOCS.items()))


def test_a_terms_share_is_the_documents_that_hold_it_over_all_documents() -> None:
    df = DocFrequency(_corpus())
    assert df.share("alpha") == 3 / 4  # e, x, y
    assert df.share("epsilon") == 1 / 4  # x
    assert df.share("absent") == 0.0


def test_counts_kept_in_the_store_are_read_back_without_the_documents(tmp_path: Path) -> None:
    first = _corpus()
    store = open_store(tmp_path, DocFrequency.NAMESPACE)
    df = DocFrequency(first, store)
    df.expect(["epsilon", "absent"])
    assert df.share("alpha") == 3 / 4
    assert store.count() == 3  # the expected terms were counted in the same pass, and kept

    def unreadable() -> Corpus:
        raise AssertionError("the texts were read although the counts were kept")

    hashes = {d.id: "h" for d in first.documents}
    later = Corpus.deferred("c", first.content_hash, hashes, unreadable)
    df = DocFrequency(later, open_store(tmp_path, DocFrequency.NAMESPACE))
    assert (df.share("alpha"), df.share("epsilon"), df.share("absent")) == (3 / 4, 1 / 4, 0.0)


def test_a_term_never_counted_is_counted_from_the_documents_and_kept(tmp_path: Path) -> None:
    store = open_store(tmp_path, DocFrequency.NAMESPACE)
    DocFrequency(_corpus(), store).share("alpha")
    reads = []

    def readable() -> Corpus:
        reads.append(1)
        return _corpus()

    hashes = {d.id: "h" for d in _corpus().documents}
    later = Corpus.deferred("c", _corpus().content_hash, hashes, readable)
    df = DocFrequency(later, store)
    assert df.share("alpha") == 3 / 4 and not reads  # kept
    assert df.share("epsilon") == 1 / 4 and reads  # not kept: the documents are read
    assert store.count() == 2


def test_another_corpus_or_a_damaged_entry_is_counted_again(tmp_path: Path) -> None:
    store = open_store(tmp_path, DocFrequency.NAMESPACE)
    DocFrequency(_corpus(), store).share("alpha")
    other = Corpus.build("c", [Document(id="only", text="alpha")])
    assert DocFrequency(other, store).share("alpha") == 1.0  # its own counts, not the first's
    assert store.count() == 2
    key = DocFrequency(_corpus(), store)._key("alpha")
    for damaged in ("{not json", "", "-1", "\u00b2"):  # "²" is a digit to str.isdigit
        store.put(key, damaged)
        assert DocFrequency(_corpus(), store).share("alpha") == 3 / 4
        assert store.get(key) == "3"  # rewritten


# -- document terms, kept for the next run on the same corpus --------------------------------
def test_document_terms_are_the_term_rule_of_their_text_and_none_for_unknown_ids() -> None:
    doc_terms = DocTerms(_corpus())
    doc_terms.prefetch(["e", "x", "absent"])
    assert doc_terms("e") == terms(DOCS["e"]) and doc_terms("x") == terms(DOCS["x"])
    assert doc_terms("absent") is None
    assert doc_terms("z") == terms(DOCS["z"])  # one not prefetched is found on demand


def test_kept_document_terms_are_read_back_without_the_documents(tmp_path: Path) -> None:
    first = _corpus()
    store = open_store(tmp_path, DocFrequency.NAMESPACE)
    DocTerms(first, store).prefetch(["e", "x"])
    assert store.count() == 2

    def unreadable(*_: object) -> Any:
        raise AssertionError("a document's text was read although its terms were kept")

    hashes = {d.id: "h" for d in first.documents}
    later = Corpus.deferred("c", first.content_hash, hashes, unreadable, texts=unreadable)
    doc_terms = DocTerms(later, open_store(tmp_path, DocFrequency.NAMESPACE))
    doc_terms.prefetch(["x", "e"])
    assert (doc_terms("e"), doc_terms("x")) == (terms(DOCS["e"]), terms(DOCS["x"]))


def test_terms_of_another_corpus_or_a_damaged_entry_are_split_again(tmp_path: Path) -> None:
    store = open_store(tmp_path, DocFrequency.NAMESPACE)
    DocTerms(_corpus(), store).prefetch(["e"])
    other = Corpus.build("c", [Document(id="e", text="omega psi")])
    assert DocTerms(other, store)("e") == {"omega", "psi"}  # same id, another corpus
    key = DocTerms(_corpus(), store)._key("e")
    for damaged in ('["not", 3]', '[["nested"]]', '["x", null]', '{"a": "b"}', '"alpha"', "[1"):
        store.put(key, damaged)
        assert DocTerms(_corpus(), store)("e") == terms(DOCS["e"])
        assert json.loads(store.get(key) or "") == sorted(terms(DOCS["e"]))  # rewritten


def test_the_categories_are_the_same_with_terms_kept_or_split(tmp_path: Path) -> None:
    fresh, kept = _records(), _records()
    annotate_failures(fresh, _corpus(), FailureSettings())
    store = open_store(tmp_path, DocFrequency.NAMESPACE)
    annotate_failures(_records(), _corpus(), FailureSettings(), store)  # keeps the terms
    annotate_failures(kept, _corpus(), FailureSettings(), store)  # reads them back
    assert [r.get("failure") for r in kept] == [r.get("failure") for r in fresh]


def test_a_later_run_failing_other_queries_finds_their_counts_kept(tmp_path: Path) -> None:
    # the same golden set run twice, each failing another query of more than three terms
    # with flat scores: the second asks for counts the first never needed
    cfg = FailureSettings(short_query_terms=3, generic_df_share=0.5)
    ranking = {"retrieved": [d for d, _ in FLAT], "scores": [s for _, s in FLAT]}

    def records(failed: str) -> list[dict[str, Any]]:
        texts = {"q1": "alpha beta gamma delta", "q2": "beta gamma delta epsilon"}
        return [
            {"query_id": q, "status": FAIL if q == failed else PASS, "text": text,
             "expected": ["e"], **ranking}
            for q, text in texts.items()
        ]  # fmt: skip

    store = open_store(tmp_path, DocFrequency.NAMESPACE)
    annotate_failures(records("q1"), _corpus(), cfg, store)

    def unreadable(*_: object) -> Any:
        raise AssertionError("the corpus was read although every count and term was kept")

    hashes = {d.id: "h" for d in _corpus().documents}
    later = Corpus.deferred("c", _corpus().content_hash, hashes, unreadable, texts=unreadable)
    second, fresh = records("q2"), records("q2")
    annotate_failures(second, later, cfg, store)
    annotate_failures(fresh, _corpus(), cfg)
    assert second[1]["failure"] == fresh[1]["failure"]
    # beta, gamma: 3 of 4 documents; delta: 2 of 4 (0.5 counts); epsilon: 1 of 4
    assert fresh[1]["failure"]["signals"]["generic"] is False


@pytest.mark.parametrize("every", [1, 3, 4, 10])
def test_counting_advances_its_progress_bar_by_every_document_read(every: int) -> None:
    from evalframe.analysis.failures import _texts

    class Bar:
        done = 0.0

        def advance(self, n: float = 1) -> None:
            self.done += n

    bar = Bar()
    assert list(_texts(_corpus(), bar, every=every)) == list(DOCS.values())  # type: ignore[arg-type]
    assert bar.done == len(DOCS)
