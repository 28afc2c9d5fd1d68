"""BM25 settings that are user mistakes: refused by the config (exit 2, naming the key, the
accepted values and the fix), never a bm25s traceback or silently empty rankings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from evalframe_bm25.retriever import STOPWORD_LISTS, BM25Config, BM25Retriever

from evalframe.core.errors import ConfigError
from evalframe.core.types import Corpus, Document
from evalframe.plugin.protocols import PluginContext, Query
from evalframe.plugin.registry import RETRIEVERS, configure

CORPUS = Corpus.build(
    "pets",
    [
        Document(id="d1", text="Cats sleep most of the day and purr when content."),
        Document(id="d2", text="Dogs need daily walks and enjoy playing fetch."),
        Document(id="d3", text="Goldfish live in water and need a clean tank."),
    ],
)
CATS = Query(id="q", text="sleeping cats")


def config_error(**settings: Any) -> ConfigError:
    with pytest.raises(ConfigError) as err:
        configure(RETRIEVERS.get("bm25"), settings, key="retriever")
    return err.value


def test_an_unknown_stopword_list_names_the_key_and_the_lists() -> None:
    err = config_error(stopwords="xx")
    assert err.key == "retriever.stopwords"
    assert "unknown stopword list 'xx': give one of en, english, en_plus" in err.message
    assert "de, german" in err.message and "or null for none" in err.message


def test_every_list_offered_is_one_bm25s_knows(tmp_path: Path) -> None:
    """The names are bm25s's own (it has no API listing them): each one indexes."""
    from bm25s.tokenization import _infer_stopwords

    for name in STOPWORD_LISTS:
        assert _infer_stopwords(name), name
    config = BM25Config(stopwords="german")
    ranking = BM25Retriever(config, PluginContext(corpus=CORPUS, cache_dir=tmp_path)).retrieve(
        CATS, 2
    )
    assert ranking is not None and ranking.doc_ids[0] == "d1"


def test_explicit_lists_and_null_are_still_accepted() -> None:
    assert BM25Config(stopwords=["the", "a"]).stopwords == ["the", "a"]
    assert BM25Config(stopwords=None).stopwords is None


@pytest.mark.parametrize(
    ("settings", "key", "said"),
    [
        ({"k1": 1e308}, "retriever.k1", "less than or equal to 100"),
        ({"k1": 101}, "retriever.k1", "less than or equal to 100"),
        ({"k1": 0}, "retriever.k1", "greater than 0"),
        ({"b": 1.5}, "retriever.b", "less than or equal to 1"),
    ],
)
def test_k1_and_b_are_bounded(settings: dict[str, Any], key: str, said: str) -> None:
    err = config_error(**settings)
    assert err.key == key
    assert said in err.message


def test_the_largest_k1_still_ranks(tmp_path: Path) -> None:
    """k1=1e308 gave every query an empty ranking; the bound is well inside what works."""
    retriever = BM25Retriever(BM25Config(k1=100), PluginContext(corpus=CORPUS, cache_dir=tmp_path))
    ranking = retriever.retrieve(CATS, 3)
    assert ranking is not None and ranking.doc_ids == ("d1",)


def test_inside_a_fusion_the_error_names_the_component(tmp_path: Path) -> None:
    pytest.importorskip("evalframe_adapters")
    fusion = RETRIEVERS.get("fusion")
    context = PluginContext(corpus=CORPUS, cache_dir=tmp_path)
    for component, key in (
        ({"name": "bm25", "stopwords": "xx"}, "retriever.retrievers.b.stopwords"),
        ({"name": "bm25", "stemmer": "xx"}, "retriever.retrievers.b.stemmer"),
    ):
        settings = configure(fusion, {"retrievers": {"a": {"name": "bm25"}, "b": component}}, "r")
        with pytest.raises(ConfigError) as err:
            fusion.obj(settings, context)
        assert err.value.key == key


def test_on_the_command_line_it_is_exit_2_without_a_traceback(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(json.dumps({"id": d.id, "text": d.text}) + "\n" for d in CORPUS.documents)
    )
    golden = tmp_path / "golden.jsonl"
    golden.write_text(json.dumps({"id": "q1", "question": "cats", "expected_chunks": ["d1"]}))
    env = {**os.environ, "EVALFRAME_CACHE_DIR": str(tmp_path / "cache")}
    env["EVALFRAME_TRACKING"] = "none"
    base = [sys.executable, "-m", "evalframe", f"dataset.path={golden}", "corpus=jsonl"]
    base += [f"corpus.path={corpus}", "retriever=bm25", f"hydra.run.dir={tmp_path / 'run'}"]
    for override, key in (
        ("retriever.stopwords=xx", "retriever.stopwords"),
        ("retriever.k1=1e308", "retriever.k1"),
    ):
        done = subprocess.run(
            [*base, override], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr
        assert f"error: config key {key}: " in done.stderr
