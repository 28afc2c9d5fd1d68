"""What a loader returned is checked where the pipeline loads it (``run._loaded``): a
corpus's document ids and a golden set's query ids are unique, even when the loader built
them without validation (``Corpus.build`` does not check; ``GoldenSet.model_construct``
skips the validator). Audit 47, finding 7."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from evalframe.core.errors import DataError
from evalframe.core.types import Corpus, Document, GoldenQuery, GoldenSet, content_hash
from evalframe.pipeline.config import validate_experiment
from evalframe.pipeline.run import load_inputs
from evalframe.plugin.registry import CORPORA, DATASETS, corpus, dataset
from tests.conftest import CORPUS, Project, raw_config


@pytest.fixture
def scoped() -> Iterator[None]:
    with CORPORA.scoped(), DATASETS.scoped():
        yield


def _docs(project: Project) -> list[Document]:
    lines = project.corpus.read_text().splitlines()
    return [Document(id=r["id"], text=r["text"]) for r in map(json.loads, lines)]


def test_a_corpus_with_a_document_id_twice_is_refused_naming_plugin_and_id(
    project: Project, scoped: None
) -> None:
    @corpus("t_twice")
    class Twice:
        """Reads the corpus file, and by a bug appends a stale copy of its first document."""

        def __init__(self, config: Any, context: Any) -> None: ...

        def load(self) -> Corpus:
            docs = _docs(project)
            return Corpus.build("t_twice", [*docs, docs[0].model_copy(update={"text": "old"})])

    exp = validate_experiment(raw_config(project, corpus={"name": "t_twice"}))
    with pytest.raises(DataError) as info:
        load_inputs(exp)
    err = info.value
    assert err.message == (
        f"corpus plugin 't_twice' ({__name__}) returned document id 'install' twice"
    )
    assert err.key == "corpus"
    assert err.hint is not None and f"fix the loader in {__name__}" in err.hint


def test_the_count_and_the_other_repeated_ids_are_said(project: Project, scoped: None) -> None:
    @corpus("t_thrice")
    class Thrice:
        """'gates' three times and 'cache' twice."""

        def __init__(self, config: Any, context: Any) -> None: ...

        def load(self) -> Corpus:
            by_id = {d.id: d for d in _docs(project)}
            docs = [by_id["gates"], by_id["cache"], by_id["gates"], by_id["cache"], by_id["gates"]]
            return Corpus.build("t_thrice", [*by_id.values(), *docs])

    exp = validate_experiment(raw_config(project, corpus={"name": "t_thrice"}))
    with pytest.raises(DataError) as info:
        load_inputs(exp)
    # 'gates': 1 + 3 = 4 times, the first repeated id in corpus order; 'cache' repeats too
    assert info.value.message.endswith(
        "returned document id 'gates' 4 times (1 other id repeats too)"
    )


def test_a_golden_set_built_by_model_construct_with_a_query_id_twice_is_refused(
    project: Project, scoped: None
) -> None:
    @dataset("t_construct")
    class Construct:
        """Builds its golden set the fast way, which skips the unique-id validator."""

        def __init__(self, config: Any, context: Any) -> None: ...

        def load(self) -> GoldenSet:
            qs = [
                GoldenQuery(id="q1", text="install with pip", judgments={"install": 1}),
                GoldenQuery(id="q2", text="gate exit code", judgments={"gates": 1}),
            ]
            qs.append(qs[0].model_copy(update={"judgments": {"cache": 1}}))
            return GoldenSet.model_construct(
                name="t_construct",
                queries=tuple(qs),
                provenance={},
                projections={},
                content_hash=content_hash([q.canonical() for q in qs]),
            )

    exp = validate_experiment(raw_config(project, dataset={"name": "t_construct"}))
    with pytest.raises(DataError) as info:
        load_inputs(exp)
    err = info.value
    assert err.message == f"dataset plugin 't_construct' ({__name__}) returned query id 'q1' twice"
    assert err.key == "dataset"


class Counted:
    """A corpus loader with ``sources()`` (so its corpus is deferred once its manifest is
    cached) that counts its loads; ``dup`` switches on a repeated document."""

    loads: ClassVar[int] = 0
    dup: ClassVar[bool] = False
    path: ClassVar[Path]

    def __init__(self, config: Any, context: Any) -> None: ...

    def sources(self) -> list[Path]:
        return [self.path]

    def load(self) -> Corpus:
        type(self).loads += 1
        docs = [Document(id=r["id"], text=r["text"]) for r in CORPUS]
        return Corpus.build("t_counted", docs + docs[:1] if self.dup else docs)


def test_a_deferred_corpus_is_not_read_to_check_it(project: Project, scoped: None) -> None:
    """With its manifest cached, the corpus is deferred: the check does not read it; when
    something does read the documents, they go through the same check."""
    corpus("t_counted")(Counted)
    Counted.path, Counted.loads, Counted.dup = project.corpus, 0, False
    exp = validate_experiment(raw_config(project, corpus={"name": "t_counted"}))
    assert exp.cache_retrieval
    assert len(load_inputs(exp).corpus or ()) == 4
    assert Counted.loads == 1  # read once, its manifest kept
    Counted.dup = True  # the loader changes, its file does not: the manifest still applies
    again = load_inputs(exp).corpus
    assert again is not None and len(again) == 4  # from the manifest
    assert Counted.loads == 1  # deferred, not read
    with pytest.raises(DataError, match="returned document id 'install' twice"):
        list(again.documents)
    assert Counted.loads == 2


def test_the_golden_commands_check_what_a_loader_returned_too(
    project: Project, scoped: None
) -> None:
    """``golden validate``/``review`` and ``benefit`` load through golden.load, not the run:
    the same check (plugin.loaded), said with the option the corpus came by."""
    from evalframe.golden.load import load_corpus
    from evalframe.plugin.protocols import PluginConfig

    class PathConfig(PluginConfig):
        path: str

    @corpus("t_twice_cli", config=PathConfig)
    class Twice:
        """The corpus file read twice."""

        def __init__(self, config: Any, context: Any) -> None: ...

        def load(self) -> Corpus:
            docs = _docs(project)
            return Corpus.build("t_twice_cli", [*docs, *docs])

    with pytest.raises(DataError) as info:
        load_corpus(str(project.corpus), "t_twice_cli")
    assert info.value.message.startswith(
        f"corpus plugin 't_twice_cli' ({__name__}) returned document id 'install' twice ("
    )
    assert info.value.key == "--corpus"
