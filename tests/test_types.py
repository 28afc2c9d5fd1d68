"""The data model: id normalisation, immutability, content hashes and shape checks."""

from __future__ import annotations

from collections.abc import Collection

import pytest
from pydantic import ValidationError

from evalframe.core.types import (
    Corpus,
    Document,
    GoldenQuery,
    GoldenSet,
    Ranking,
    Run,
    content_hash,
    normalise_id,
)


def q(qid: object, judgments: dict[object, int] | None = None, **metadata: object) -> GoldenQuery:
    return GoldenQuery(id=qid, text=f"question {qid}", judgments=judgments or {}, metadata=metadata)


# -- id normalisation ----------------------------------------------------------


def test_normalise_id_turns_ints_into_decimal_strings_and_leaves_the_rest() -> None:
    assert normalise_id(12) == "12"
    assert normalise_id(-3) == "-3"
    assert normalise_id("12") == "12"
    assert normalise_id(True) is True  # left for pydantic to reject with a location


def test_integer_query_id_becomes_a_string() -> None:
    query = q(7)
    assert query.id == "7"
    assert isinstance(query.id, str)


def test_integer_judgment_keys_become_strings() -> None:
    """B.O.B's ``expected_chunks: [12, 13]`` must match a retriever's ``"12"``."""
    query = q("q1", {12: 1, "13": 2})
    assert query.judgments == {"12": 1, "13": 2}
    assert all(isinstance(k, str) for k in query.judgments)
    assert query.relevant == frozenset({"12", "13"})


def test_integer_ranking_ids_become_strings() -> None:
    ranking = Ranking(query_id=5, doc_ids=(1, "2", 30), scores=(3.0, 2.0, 1.0))
    assert ranking.query_id == "5"
    assert ranking.doc_ids == ("1", "2", "30")
    assert all(isinstance(d, str) for d in ranking.doc_ids)


def test_ranking_from_pairs_normalises_ids_and_scores() -> None:
    ranking = Ranking.from_pairs(9, [(1, 2), ("b", 0.5)])  # type: ignore[arg-type,list-item]
    assert ranking.query_id == "9"
    assert ranking.doc_ids == ("1", "b")
    assert ranking.scores == (2.0, 0.5)
    assert all(isinstance(s, float) for s in ranking.scores)
    assert ranking.pairs() == [("1", 2.0), ("b", 0.5)]
    assert len(ranking) == 2


def test_integer_document_id_becomes_a_string() -> None:
    assert Document(id=4, text="x").id == "4"


@pytest.mark.parametrize("bad", [True, False])
def test_bool_query_id_is_rejected(bad: bool) -> None:
    with pytest.raises(ValidationError) as info:
        GoldenQuery(id=bad, text="t")
    assert info.value.errors()[0]["loc"] == ("id",)


def test_bool_judgment_key_is_rejected() -> None:
    with pytest.raises(ValidationError):
        GoldenQuery(id="q", text="t", judgments={True: 1})


def test_bool_doc_id_in_a_ranking_is_rejected() -> None:
    with pytest.raises(ValidationError) as info:
        Ranking(query_id="q", doc_ids=("a", False), scores=(1.0, 0.5))
    assert info.value.errors()[0]["loc"] == ("doc_ids", 1)


def test_bool_ranking_query_id_is_rejected() -> None:
    with pytest.raises(ValidationError):
        Ranking(query_id=True)


def test_empty_id_is_rejected() -> None:
    with pytest.raises(ValidationError):
        GoldenQuery(id="", text="t")


# -- frozen models -------------------------------------------------------------


def test_golden_query_is_frozen() -> None:
    query = q("q1", {"a": 1})
    with pytest.raises(ValidationError):
        query.text = "changed"  # type: ignore[misc]


def test_golden_set_is_frozen() -> None:
    gs = GoldenSet.build("g", [q("q1", {"a": 1})])
    with pytest.raises(ValidationError):
        gs.name = "other"  # type: ignore[misc]
    with pytest.raises(ValidationError):
        gs.content_hash = "0" * 16  # type: ignore[misc]


def test_ranking_and_run_are_frozen() -> None:
    ranking = Ranking.from_pairs("q1", [("a", 1.0)])
    with pytest.raises(ValidationError):
        ranking.doc_ids = ("b",)  # type: ignore[misc]
    run = Run(rankings={"q1": ranking})
    with pytest.raises(ValidationError):
        run.metadata = {}  # type: ignore[misc]


def test_unknown_fields_are_rejected() -> None:
    with pytest.raises(ValidationError):
        GoldenQuery(id="q", text="t", judgment={"a": 1})  # type: ignore[call-arg]  # typo


# -- GoldenQuery ---------------------------------------------------------------


def test_is_negative_for_empty_judgments() -> None:
    assert q("q1").is_negative
    assert q("q1").relevant == frozenset()


def test_is_negative_when_every_judged_label_is_zero_or_below() -> None:
    query = q("q1", {"a": 0, "b": -1})
    assert query.is_negative
    assert query.relevant == frozenset()


def test_query_with_a_positive_label_is_not_negative() -> None:
    query = q("q1", {"a": 0, "b": 2})
    assert not query.is_negative
    assert query.relevant == frozenset({"b"})


# -- GoldenSet -----------------------------------------------------------------


def test_content_hash_is_16_hex_digits() -> None:
    digest = GoldenSet.build("g", [q("q1", {"a": 1})]).content_hash
    assert len(digest) == 16
    int(digest, 16)


def test_content_hash_ignores_query_order() -> None:
    a = GoldenSet.build("g", [q("q1", {"a": 1}), q("q2", {"b": 2}), q("q3")])
    b = GoldenSet.build("g", [q("q3"), q("q2", {"b": 2}), q("q1", {"a": 1})])
    assert a.content_hash == b.content_hash
    assert [x.id for x in b] == ["q3", "q2", "q1"]  # the given order is still kept


def test_content_hash_ignores_judgment_and_metadata_key_order() -> None:
    a = GoldenSet.build("g", [q("q1", {"a": 1, "b": 0}, x=1, y="z")])
    b = GoldenSet.build("g", [q("q1", {"b": 0, "a": 1}, y="z", x=1)])
    assert a.content_hash == b.content_hash


def test_content_hash_covers_content_not_name_or_provenance() -> None:
    a = GoldenSet.build("first", [q("q1", {"a": 1})], provenance={"path": "/a.jsonl"})
    b = GoldenSet.build("second", [q("q1", {"a": 1})], provenance={"path": "/b.jsonl"})
    assert a.content_hash == b.content_hash


def test_content_hash_changes_when_a_label_changes() -> None:
    a = GoldenSet.build("g", [q("q1", {"a": 1, "b": 0})])
    b = GoldenSet.build("g", [q("q1", {"a": 2, "b": 0})])
    assert a.content_hash != b.content_hash


@pytest.mark.parametrize(
    "changed",
    [
        q("q1", {"a": 1, "c": 0}),  # a different judged doc
        q("q1", {"a": 1}),  # a judgment removed
        GoldenQuery(id="q1", text="other text", judgments={"a": 1, "b": 0}),
        q("q1", {"a": 1, "b": 0}, difficulty="hard"),
        q("q9", {"a": 1, "b": 0}),
    ],
)
def test_content_hash_changes_with_any_query_content(changed: GoldenQuery) -> None:
    base = GoldenSet.build("g", [q("q1", {"a": 1, "b": 0})])
    assert GoldenSet.build("g", [changed]).content_hash != base.content_hash


def test_integer_and_string_ids_hash_the_same() -> None:
    a = GoldenSet.build("g", [q(1, {12: 1})])
    b = GoldenSet.build("g", [q("1", {"12": 1})])
    assert a.content_hash == b.content_hash


def test_content_hash_function_is_canonical_json() -> None:
    assert content_hash({"b": 1, "a": [1, 2]}) == content_hash({"a": [1, 2], "b": 1})
    assert content_hash({"a": 1}) != content_hash({"a": 2})


def test_duplicate_query_ids_are_rejected() -> None:
    with pytest.raises(ValidationError, match=r"query id 'q1' appears twice"):
        GoldenSet.build("g", [q("q1", {"a": 1}), q("q2"), q("q1", {"b": 1})])


def test_duplicate_query_ids_after_normalisation_are_rejected() -> None:
    with pytest.raises(ValidationError, match="appears twice"):
        GoldenSet.build("g", [q(1), q("1")])


def test_golden_set_container_helpers() -> None:
    gs = GoldenSet.build(
        "g",
        [
            q("q1", {"a": 1}, difficulty="easy", notes="free text", tags=["x"], qnum=1),
            q("q2", category="setup", difficulty="hard", qnum=2),
            q("q3", category="setup", difficulty="easy", qnum=3),
        ],
    )
    assert len(gs) == 3
    assert [x.id for x in gs] == ["q1", "q2", "q3"]
    assert set(gs.by_id()) == {"q1", "q2", "q3"}
    # scalar fields in first-seen order; never free text ("notes") or lists ("tags"),
    # nor a field with a distinct value per query ("qnum": tables of n = 1)
    assert gs.slice_fields() == ["difficulty", "category"]


# -- Ranking, Run, Corpus ------------------------------------------------------


@pytest.mark.parametrize(
    ("doc_ids", "scores"),
    [(("a", "b"), (1.0,)), (("a",), (1.0, 0.5)), ((), (1.0,)), (("a",), ())],
)
def test_ranking_with_mismatched_lengths_is_rejected(
    doc_ids: tuple[str, ...], scores: tuple[float, ...]
) -> None:
    with pytest.raises(ValidationError, match="give one score per doc id"):
        Ranking(query_id="q1", doc_ids=doc_ids, scores=scores)


def test_empty_ranking_is_allowed() -> None:
    ranking = Ranking(query_id="q1")
    assert len(ranking) == 0
    assert ranking.pairs() == []


def test_run_holds_rankings_by_query_id() -> None:
    run = Run(rankings={"q1": Ranking.from_pairs("q1", [("a", 1.0)])}, metadata={"system": "x"})
    assert len(run) == 1
    assert run.rankings["q1"].doc_ids == ("a",)


def test_corpus_hash_depends_on_ids_and_texts() -> None:
    a = Corpus.build("c", [Document(id=1, text="one"), Document(id="2", text="two")])
    b = Corpus.build("other-name", [Document(id="1", text="one"), Document(id=2, text="two")])
    c = Corpus.build("c", [Document(id=1, text="one"), Document(id="2", text="TWO")])
    assert a.content_hash == b.content_hash
    assert a.content_hash != c.content_hash
    assert a.ids() == frozenset({"1", "2"})
    assert len(a) == 2


def test_integer_run_keys_become_strings() -> None:
    run = Run(rankings={7: Ranking.from_pairs("7", [("a", 1.0)])})
    assert list(run.rankings) == ["7"]


@pytest.mark.parametrize("n", [0, 1, 2, 5, 6, 7])
def test_a_corpus_hash_is_the_content_hash_of_its_pairs_whatever_the_chunks(n: int) -> None:
    """The corpus is hashed a chunk at a time; the digest is the one of the whole list."""
    from evalframe.core.types import _documents_hash

    docs = [Document(id=f"d{i}", text='é "q"\nx' * i) for i in range(n)]
    whole = content_hash([[d.id, d.text] for d in docs])
    assert Corpus.build("c", docs).content_hash == whole
    assert all(_documents_hash(docs, chunk=c) == whole for c in (1, 2, 3, 5))


def test_a_rankings_ids_follow_the_id_policy_on_the_fast_path_too() -> None:
    """Clean ids skip the per-id check; any other id still gets it (strip, or refuse)."""
    assert Ranking(query_id="q", doc_ids=("a", " b\t"), scores=(2.0, 1.0)).doc_ids == ("a", "b")
    assert Ranking(query_id="q", doc_ids=("a", 7), scores=(2.0, 1.0)).doc_ids == ("a", "7")
    assert Ranking(query_id="q", doc_ids=("a\u00a0b",), scores=(1.0,)).doc_ids == ("a\u00a0b",)
    for bad in ("d 1", "d\x011"):
        with pytest.raises(ValidationError, match="whitespace or a control character"):
            Ranking(query_id="q", doc_ids=("a", bad), scores=(2.0, 1.0))


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ({"d1": 1, "d2": 0}, {"d1": 1, "d2": 0}),  # plain ids: kept as they are
        ({12: 1, " d2 ": 2}, {"12": 1, "d2": 2}),  # one key to normalise: every key is
        ({"é": 1, "x-1": -1}, {"é": 1, "x-1": -1}),
    ],
)
def test_judgment_keys_follow_the_id_rules_whatever_the_mix(
    given: dict[object, int], kept: dict[str, int]
) -> None:
    query = GoldenQuery(id="q", text="t", judgments=given)  # type: ignore[arg-type]
    assert query.judgments == kept
    assert query.views == {}
    viewed = GoldenQuery(id="q", text="t", views={"files": given})  # type: ignore[dict-item]
    assert viewed.views == {"files": kept}


@pytest.mark.parametrize("bad", ["d 1", "", "d\x07"])
def test_a_judgment_key_that_cannot_be_an_id_is_refused_with_its_value(bad: str) -> None:
    with pytest.raises(ValidationError) as info:
        GoldenQuery(id="q", text="t", judgments={"d1": 1, bad: 1})
    assert info.value.errors()[0]["loc"][0] == "judgments"


def test_a_run_keyed_by_integers_is_keyed_by_their_decimal_strings() -> None:
    run = Run(rankings={5: Ranking(query_id="5")})  # type: ignore[dict-item]
    assert list(run.rankings) == ["5"]


def test_a_checked_query_is_what_validation_builds() -> None:
    """GoldenQuery.checked (a loader's fast path) sets what pydantic sets: fields, the
    fields given, equality, the canonical form, a copy with a change."""
    from evalframe.core.types import GoldenQuery

    fields = {
        "id": "q1",
        "text": "How?",
        "judgments": {"c1": 2, "c2": 0},
        "metadata": {"difficulty": "easy", "n": 3},
    }
    validated = GoldenQuery(**fields)  # type: ignore[arg-type]  # a test's plain mapping
    checked = GoldenQuery.checked(**fields)  # type: ignore[arg-type]
    assert checked == validated
    assert checked.model_fields_set == validated.model_fields_set
    assert checked.model_dump() == validated.model_dump()
    assert checked.canonical() == validated.canonical()
    assert checked.model_copy(update={"text": "Why?"}).text == "Why?"
    with pytest.raises(ValidationError):  # frozen, as a validated one
        checked.text = "x"  # type: ignore[misc]  # the assignment under test


# -- a corpus under the ids a run is judged by ---------------------------------------


def _strip_version(ident: str) -> str:
    return ident.rsplit("/", 1)[0] if ident.count("/") >= 2 else ident


CATALOGUE = [
    Document(id="repos/fastqc/0.74", text="read quality"),
    Document(id="repos/fastqc/0.73", text="read quality, older"),
    Document(id="upload1", text="upload a file"),
]


def test_a_corpus_judged_as_normalised_ids_keeps_the_first_document_of_each() -> None:
    corpus = Corpus.build("catalogue", CATALOGUE)
    view = corpus.judged_as(_strip_version)
    # by hand: both fastqc versions become repos/fastqc; the first (0.74) stands for it
    assert view.ids() == frozenset({"repos/fastqc", "upload1"})
    assert view.texts(["repos/fastqc", "upload1", "repos/fastqc/0.74"]) == {
        "repos/fastqc": "read quality",
        "upload1": "upload a file",
    }
    assert view.content_hash != corpus.content_hash  # what is kept per document differs
    assert corpus.ids() == frozenset(d.id for d in CATALOGUE)  # the corpus itself unchanged


def test_a_normaliser_that_changes_nothing_gives_the_corpus_itself() -> None:
    corpus = Corpus.build("catalogue", CATALOGUE)
    assert corpus.judged_as(None) is corpus
    assert corpus.judged_as(lambda ident: ident) is corpus


def test_a_deferred_corpus_judged_as_normalised_ids_reads_only_the_texts_asked_for() -> None:
    built = Corpus.build("catalogue", CATALOGUE)
    loads: list[str] = []
    asked: list[set[str]] = []

    def load() -> Corpus:
        loads.append("all")
        return built

    def texts(ids: Collection[str]) -> dict[str, str]:
        asked.append(set(ids))
        return {d.id: d.text for d in CATALOGUE if d.id in asked[-1]}

    hashes = {d.id: f"h{i}" for i, d in enumerate(CATALOGUE)}
    deferred = Corpus.deferred("catalogue", built.content_hash, hashes, load, texts=texts)
    view = deferred.judged_as(_strip_version)
    assert view.ids() == frozenset({"repos/fastqc", "upload1"})
    assert view.texts(["repos/fastqc"]) == {"repos/fastqc": "read quality"}
    assert asked == [{"repos/fastqc/0.74"}] and loads == []  # one text, by its own id
    # the whole view, when something reads every document, is the built view's
    assert [(d.id, d.text) for d in view.documents] == [
        (d.id, d.text) for d in built.judged_as(_strip_version).documents
    ]
    assert view.content_hash == built.judged_as(_strip_version).content_hash
