"""BM25 retriever: the contract, the on-disk index cache, and its example config."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from evalframe_bm25.retriever import BM25Config, BM25Retriever

from evalframe.core.errors import ConfigError
from evalframe.core.types import Corpus, Document
from evalframe.plugin.protocols import PluginContext, Query
from evalframe.plugin.testing import RetrieverContract

CORPUS = Corpus.build(
    "pets",
    [
        Document(id="d1", text="Cats sleep most of the day and purr when content."),
        Document(id="d2", text="Dogs need daily walks and enjoy playing fetch."),
        Document(id="d3", text="Goldfish live in water and need a clean tank."),
        Document(id=4, text="A cat and a dog can share a home if introduced slowly."),
    ],
)


def make(tmp_path: Path, **settings: object) -> BM25Retriever:
    return BM25Retriever(BM25Config(**settings), PluginContext(corpus=CORPUS, cache_dir=tmp_path))


class TestBM25Contract(RetrieverContract):
    plugin_name = "bm25"

    @pytest.fixture
    def retriever(self, tmp_path: Path) -> BM25Retriever:
        return make(tmp_path)

    @pytest.fixture
    def queries(self) -> list[Query]:
        return [
            Query(id="q1", text="How long do cats sleep?"),
            Query(id="q2", text="walking the dog"),
            Query(id="q3", text="quantum chromodynamics"),
        ]


def test_stemmed_match_ranks_the_right_document_first(tmp_path: Path) -> None:
    ranking = make(tmp_path).retrieve(Query(id="q", text="sleeping cats"), 3)
    assert ranking is not None
    assert ranking.doc_ids[0] == "d1"


def test_documents_without_a_shared_term_are_not_returned(tmp_path: Path) -> None:
    """bm25s pads results with zero-score docs; those are not matches."""
    ranking = make(tmp_path).retrieve(Query(id="q", text="quantum chromodynamics"), 4)
    assert ranking is not None
    assert ranking.doc_ids == ()


def test_integer_corpus_ids_come_back_as_strings(tmp_path: Path) -> None:
    ranking = make(tmp_path).retrieve(Query(id="q", text="share a home"), 1)
    assert ranking is not None
    assert ranking.doc_ids == ("4",)


def test_index_is_built_once_on_first_use_and_reused_from_disk(tmp_path: Path) -> None:
    q = Query(id="q", text="dog walks")
    first = make(tmp_path)
    assert not first.built and not first.index_dir.exists()  # nothing asked yet
    answer = first.retrieve(q, 3)
    assert first.built
    assert (first.index_dir / "doc_ids.json").is_file()
    second = make(tmp_path)
    assert second.retrieve(q, 3) == answer
    assert not second.built
    assert second.index_dir == first.index_dir


def test_a_batch_is_answered_as_each_query_alone(tmp_path: Path) -> None:
    r = make(tmp_path)
    queries = [
        Query(id="a", text="sleeping cats"),
        Query(id="b", text="quantum"),
        Query(id="c", text="dogs and cats at home"),
        Query(id="d", text=""),
    ]
    assert r.retrieve_batch(queries, 3) == [r.retrieve(q, 3) for q in queries]
    assert r.retrieve_batch([], 3) == []


def test_index_key_changes_with_parameters_and_corpus(tmp_path: Path) -> None:
    base = make(tmp_path).index_dir
    assert make(tmp_path, k1=0.9).index_dir != base
    other = Corpus.build("pets", [*CORPUS.documents, Document(id="d5", text="Parrots talk.")])
    changed = BM25Retriever(BM25Config(), PluginContext(corpus=other, cache_dir=tmp_path))
    assert changed.index_dir != base


def test_needs_a_corpus() -> None:
    with pytest.raises(ConfigError, match="needs a corpus"):
        BM25Retriever(BM25Config(), PluginContext(corpus=None))


def test_unknown_stemmer_names_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        make(tmp_path, stemmer="klingon")
    assert err.value.key == "retriever.stemmer"


def test_example_config_validates() -> None:
    path = Path(__file__).parents[1] / "evalframe_bm25" / "conf" / "retriever" / "bm25.yaml"
    node = yaml.safe_load(path.read_text())
    assert node.pop("name") == "bm25"
    BM25Config.model_validate(node)


def test_a_k1_b_sweep_tokenises_the_corpus_once_and_ranks_the_same(tmp_path: Path) -> None:
    """The tokens are keyed by corpus and text processing only: every k1/b/method reuses
    them, and an index built from cached tokens ranks exactly as one built from scratch."""
    shared, alone = tmp_path / "shared", tmp_path / "alone"
    first = BM25Retriever(
        BM25Config(k1=1.2, b=0.75), PluginContext(corpus=CORPUS, cache_dir=shared)
    )
    assert first.index  # built on first use
    assert first.built and not first.tokens_cached
    for k1, b, method in ((0.9, 0.4, "lucene"), (2.0, 1.0, "robertson")):
        config = BM25Config(k1=k1, b=b, method=method)
        reused = BM25Retriever(config, PluginContext(corpus=CORPUS, cache_dir=shared))
        assert reused.index  # built on first use
        assert reused.built and reused.tokens_cached  # a new index, from the cached tokens
        fresh = BM25Retriever(config, PluginContext(corpus=CORPUS, cache_dir=alone / method))
        assert fresh.index  # built on first use
        assert fresh.built and not fresh.tokens_cached
        for text in ("install with pip", "cached index", "exit code gate"):
            q = Query(id="q", text=text)
            assert reused.retrieve(q, 5) == fresh.retrieve(q, 5)
    assert len(list((shared / "bm25-tokens").rglob("*.json"))) == 1
    other = BM25Retriever(BM25Config(stemmer=None), PluginContext(corpus=CORPUS, cache_dir=shared))
    assert other.index  # built on first use
    assert other.built and not other.tokens_cached  # other text processing, other tokens


def _words(i: int) -> str:
    """A deterministic pseudo-text: a few of 40 words, so documents share terms."""
    vocab = [f"w{j}" for j in range(40)]
    return " ".join(vocab[(i * 7 + j * j) % 40] for j in range(1 + i % 9))


def test_threads_change_nothing_but_speed(tmp_path: Path) -> None:
    corpus = Corpus.build("words", [Document(id=f"d{i}", text=_words(i)) for i in range(300)])
    queries = [Query(id=f"q{i}", text=_words(i * 13 + 5)) for i in range(60)]

    def answers(threads: int) -> list[object]:
        r = BM25Retriever(
            BM25Config(threads=threads), PluginContext(corpus=corpus, cache_dir=tmp_path)
        )
        return r.retrieve_batch(queries, 20)

    one = answers(1)
    assert any(len(r.doc_ids) > 5 for r in one)  # real rankings, not empty ones
    assert answers(3) == one
    assert answers(0) == one


def test_threads_stay_out_of_the_index_and_retrieval_cache_keys(tmp_path: Path) -> None:
    from evalframe.retrieval.cache import retriever_fingerprint

    assert make(tmp_path, threads=4).index_dir == make(tmp_path).index_dir
    fingerprints = [
        retriever_fingerprint("bm25", "1", BM25Config(threads=n), CORPUS.content_hash)
        for n in (0, 1, 4)
    ]
    assert fingerprints[0] == fingerprints[1] == fingerprints[2]


@pytest.mark.parametrize(
    ("threads", "queries", "expected"),
    [(1, 100, 0), (4, 100, 4), (4, 2, 2), (4, 1, 0)],
)
def test_threads_asked_of_bm25s(tmp_path: Path, threads: int, queries: int, expected: int) -> None:
    """bm25s's n_threads=0 is its plain loop: one thread (or one query) needs no pool."""
    assert make(tmp_path, threads=threads)._threads(queries) == expected


@pytest.mark.parametrize("where", ["a file", "/proc"])
def test_a_cache_folder_that_cannot_keep_the_index_is_a_data_error(
    tmp_path: Path, where: str
) -> None:
    """Said before the corpus is tokenised, as a located error (exit 2), whatever the
    reason: a file in the way, or a place where no folder can be made."""
    from evalframe.core.errors import DataError

    if where == "/proc":
        if not Path("/proc/self").is_dir():
            pytest.skip("needs Linux's /proc")
        cache = Path("/proc/evalframe-no-such-cache")
    else:
        cache = tmp_path / "a-file"
        cache.write_text("not a folder")
    retriever = BM25Retriever(BM25Config(), PluginContext(corpus=CORPUS, cache_dir=cache))
    with pytest.raises(DataError) as info:
        retriever.retrieve(Query(id="q", text="anything"), 3)
    assert info.value.path == str(cache)
    assert "the cache folder" in info.value.message
