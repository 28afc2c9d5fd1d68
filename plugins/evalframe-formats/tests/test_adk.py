"""The ADK retrieval_dataset.yaml (doc 004) as a dataset and a corpus, and every rejection."""

from __future__ import annotations

import json
import os
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
from evalframe_formats.adk import (
    AdkCorpus,
    AdkCorpusConfig,
    AdkDataset,
    AdkDatasetConfig,
    read_pairs,
)

from evalframe.core.errors import DataError
from evalframe.core.types import Corpus, GoldenSet
from evalframe.plugin.protocols import PluginContext
from evalframe.plugin.testing import CorpusLoaderContract
from evalframe.testing import DatasetLoaderContract
from tests import forkrun

DATA = Path(__file__).parent / "data"
SAMPLE = DATA / "retrieval_dataset.yaml"

LLM_AGENT = "google.adk.agents.llm_agent.LlmAgent"
RETRY = "google.adk.plugins.RetryPlugin"
SEQUENTIAL = "google.adk.agents.SequentialAgent"
PARALLEL = "google.adk.agents.ParallelAgent"
RUNNER = "google.adk.runners.Runner"
SESSIONS = "google.adk.sessions.InMemorySessionService"
BASE_TOOL = "google.adk.tools.BaseTool"


def adk_dataset(path: Path, context: PluginContext | None = None) -> GoldenSet:
    return AdkDataset(AdkDatasetConfig(path=str(path)), context or PluginContext()).load()


def adk_corpus(path: Path) -> Corpus:
    return AdkCorpus(AdkCorpusConfig(path=str(path)), PluginContext()).load()


def yaml_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "retrieval_dataset.yaml"
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


class TestAdkDatasetContract(DatasetLoaderContract):
    plugin_name = "adk"

    @pytest.fixture
    def loader(self) -> AdkDataset:
        return AdkDataset(AdkDatasetConfig(path=str(SAMPLE)), PluginContext())


class TestAdkCorpusContract(CorpusLoaderContract):
    plugin_name = "adk"

    @pytest.fixture
    def loader(self) -> AdkCorpus:
        return AdkCorpus(AdkCorpusConfig(path=str(SAMPLE)), PluginContext())


def test_pairs_become_queries_with_yes_as_1_and_no_as_0() -> None:
    golden = adk_dataset(SAMPLE)
    assert [q.id for q in golden] == [
        "api_understanding:01",
        "api_understanding:02",
        "fix_errors:03",
        "fix_errors:04",
    ]
    q1 = golden.by_id()["api_understanding:01"]
    assert q1.text == "How do I create a minimal LlmAgent?"
    assert q1.judgments == {LLM_AGENT: 1, RETRY: 0}
    assert golden.by_id()["api_understanding:02"].judgments == {
        SEQUENTIAL: 1,
        PARALLEL: 0,
        LLM_AGENT: 0,
    }
    # the unquoted YES on RUNNER is read as the string YES, not YAML 1.1's True
    assert golden.by_id()["fix_errors:03"].judgments == {RUNNER: 1, SESSIONS: 1, BASE_TOOL: 0}
    assert golden.name == "retrieval_dataset"
    assert golden.provenance == {"format": "adk", "path": str(SAMPLE)}


def test_pair_metadata_and_delta_p_are_query_metadata() -> None:
    q1 = adk_dataset(SAMPLE).by_id()["api_understanding:01"]
    assert q1.metadata == {
        "trials": 10,
        "base_success_rate": 0.1,
        "source": "api_understanding",
        "delta_p": {LLM_AGENT: 0.85, RETRY: 0.02},
    }


def test_the_benchmark_is_the_ids_prefix_unless_the_pair_names_one(tmp_path: Path) -> None:
    """ADK's real files name a pair's benchmark only in its id (``fix_errors:01``): the
    per-benchmark slices of ``+experiment=adk`` found no field and were dropped. Asked
    for (the experiment does): it is metadata, part of the set's content hash, so a set
    loaded without it keeps the hash it had."""
    path = yaml_file(
        tmp_path,
        """
        pairs:
          - id: "fix_errors:01"
            query: "q"
            candidates: [{fqn: a, text: "x", empirical_relevance: "YES"}]
          - id: "multi_agent:02"
            query: "q"
            candidates: [{fqn: a, text: "x", empirical_relevance: "YES"}]
            metadata: {benchmark: mine}
          - id: "plain"
            query: "q"
            candidates: [{fqn: a, text: "x", empirical_relevance: "YES"}]
        """,
    )
    config = AdkDatasetConfig(path=str(path), benchmark_from_id=True)
    derived = AdkDataset(config, PluginContext()).load()
    got = {q.id: q.metadata.get("benchmark") for q in derived}
    assert got == {"fix_errors:01": "fix_errors", "multi_agent:02": "mine", "plain": None}
    plain = adk_dataset(path)  # the default: as before, and its hash with it
    assert plain.by_id()["fix_errors:01"].metadata.get("benchmark") is None
    assert plain.content_hash != derived.content_hash


def test_a_pair_without_a_yes_candidate_is_a_negative_example() -> None:
    golden = adk_dataset(SAMPLE)
    assert [q.id for q in golden if q.is_negative] == ["fix_errors:04"]
    assert golden.by_id()["fix_errors:04"].judgments == {RETRY: 0, BASE_TOOL: 0}  # still judged


def test_the_corpus_is_the_union_of_candidates_keyed_by_fqn() -> None:
    corpus = adk_corpus(SAMPLE)
    assert [d.id for d in corpus.documents] == [
        LLM_AGENT,
        RETRY,
        SEQUENTIAL,
        PARALLEL,
        RUNNER,
        SESSIONS,
        BASE_TOOL,
    ]
    by_id = {d.id: d for d in corpus.documents}
    assert by_id[PARALLEL].text == (
        "class ParallelAgent(BaseAgent): runs its sub_agents concurrently, each on an isolated "
        "branch of the conversation."
    )
    assert by_id[PARALLEL].metadata == {}
    assert corpus.name == "retrieval_dataset"


def test_every_judged_candidate_is_in_the_corpus(capsys: pytest.CaptureFixture[str]) -> None:
    corpus = adk_corpus(SAMPLE)
    adk_dataset(SAMPLE, PluginContext(corpus=corpus))
    assert "not in corpus" not in capsys.readouterr().err


def test_other_candidate_fields_become_document_metadata(tmp_path: Path) -> None:
    path = yaml_file(
        tmp_path,
        """
        pairs:
          - id: p1
            query: q
            candidates:
              - {fqn: a.B, text: t, empirical_relevance: "YES", type: class, metadata: {p_in: 1.0}}
        """,
    )
    assert adk_corpus(path).documents[0].metadata == {"type": "class", "metadata": {"p_in": 1.0}}


def test_the_same_fqn_with_two_texts_is_an_error_naming_both_pairs(tmp_path: Path) -> None:
    path = yaml_file(
        tmp_path,
        """
        pairs:
          - id: "fix_errors:01"
            query: first
            candidates:
              - fqn: google.adk.runners.Runner
                text: "class Runner: runs an agent."
                empirical_relevance: "YES"
          - id: "fix_errors:02"
            query: second
            candidates:
              - fqn: google.adk.runners.Runner
                text: "class Runner: runs an agent for a session."
                empirical_relevance: "NO"
        """,
    )
    with pytest.raises(DataError) as err:
        adk_corpus(path)
    rendered = err.value.render()
    assert f"{path}:11: " in rendered
    assert "'google.adk.runners.Runner' has a different text in pair 'fix_errors:02'" in rendered
    assert "than in pair 'fix_errors:01' (pairs[0].candidates[0], line 5)" in rendered
    adk_dataset(path)  # the dataset itself does not care


GOOD_PAIR = """
pairs:
  - id: "p:01"
    query: "How do I create a minimal LlmAgent?"
    candidates:
      - fqn: google.adk.agents.LlmAgent
        text: "class LlmAgent"
        empirical_relevance: "YES"
        delta_p: 0.85
"""


@pytest.mark.parametrize(
    ("text", "line", "fragments"),
    [
        (
            """
            pairs:
              - id: "p:01"
                query: "q"
                candidates:
                  - fqn: a.A
                    text: "A"
                    empirical_relevance: "YES"
                  - fqn: a.B
                    text: "B"
                    empirical_relevance: "MAYBE"
            """,
            10,
            [
                "pair 'p:01' (pairs[0]): "
                "pairs[0].candidates[1].empirical_relevance is not YES or NO",
                "got 'MAYBE'",
            ],
        ),
        (
            """
            pairs:
              - id: "p:01"
                query: "q"
                candidates:
                  - {fqn: a.A, text: "A", empirical_relevance: UNKNOWN}
            """,
            5,
            ["pairs[0].candidates[0].empirical_relevance", "got 'UNKNOWN'"],
        ),
        (
            """
            pairs:
              - id: "p:01"
                query: "q"
                candidates:
                  - fqn: a.A
                    text: "A"
                    empirical_relevance: "yes"
            """,
            7,
            ["empirical_relevance is not YES or NO", "got 'yes'", "write it in capitals, 'YES'"],
        ),
        (
            """
            pairs:
              - id: "p:01"
                query: "q"
                candidates:
                  - fqn: a.A
                    text: "A"
                    empirical_relevance: true
            """,
            7,
            ["empirical_relevance is not YES or NO", "got True"],
        ),
        (
            """
            pairs:
              - id: "p:01"
                query: "q"
                candidates:
                  - text: "A"
                    empirical_relevance: "YES"
            """,
            5,
            ["pair 'p:01' (pairs[0]): pairs[0].candidates[0] has no 'fqn' field"],
        ),
        (
            """
            pairs:
              - id: "p:01"
                query: "q"
                candidates: []
              - id: "p:01"
                query: "r"
                candidates: []
            """,
            5,
            ["query id 'p:01' is duplicated (first at pairs[0],", ":2)"],
        ),
        (
            """
            pairs:
              - id: "p:01"
                query: "q"
                candidates:
                  - {fqn: a.A, text: "A", empirical_relevance: "YES"}
                  - {fqn: a.A, text: "A", empirical_relevance: "NO"}
            """,
            6,
            ["'a.A' appears twice (pairs[0].candidates[0] and pairs[0].candidates[1])"],
        ),
        (
            """
            pairs:
              - id: "p:01"
                query: "q"
                candidates:
                  - {fqn: a.A, text: "A", empirical_relevance: "YES", delta_p: high}
            """,
            5,
            ["pairs[0].candidates[0].delta_p must be a number", "got 'high'"],
        ),
        (
            """
            pairs:
              - id: "p:01"
                query: "q"
                candidates:
                  - fqn: a.A
                    text: [not, text]
                    empirical_relevance: "YES"
            """,
            6,
            ["pairs[0].candidates[0].text must be a string"],
        ),
        (
            """
            pairs:
              - id: "p:01"
                query: ""
                candidates: []
            """,
            3,
            ["pair 'p:01' (pairs[0]): pairs[0].query must be non-empty text"],
        ),
        (
            """
            pairs:
              - id: "p:01"
                query: "q"
                candidates: {fqn: a.A}
            """,
            4,
            ["pairs[0].candidates must be a list"],
        ),
        (
            """
            pairs:
              - id: "p:01"
                query: "q"
                candidates:
                  - a.A
            """,
            5,
            ["pairs[0].candidates[0] must be a mapping", "got 'a.A'"],
        ),
        (
            """
            pairs:
              - id: "p:01"
                candidates: []
            """,
            2,
            ["pair 'p:01' (pairs[0]) has no 'query' field"],
        ),
        (
            """
            pairs:
              - "just a string"
            """,
            2,
            ["pairs[0] must be a mapping"],
        ),
        (
            """
            pairs:
              - id: [1, 2]
                query: q
                candidates: []
            """,
            2,
            ["pairs[0].id must be a non-empty string or an integer"],
        ),
        (
            """
            pairs:
              - id: "p:01"
                query: "q"
                source: fix_errors
                candidates: []
                metadata: {source: other, trials: 3}
            """,
            2,
            ["metadata key(s) 'source' clash with the pair's own fields"],
        ),
        (
            """
            pairs:
              - id: "p:01"
                query: "q"
                candidates: []
                metadata: [1, 2]
            """,
            5,
            ["pairs[0].metadata must be a mapping"],
        ),
        (
            """
            pairs:
              - id: "p:01"
                query: "q
                candidates: []
            """,
            5,
            ["not valid YAML (while scanning a quoted scalar started on line 3"],
        ),
        (
            """
            pairs:
              - id: "p:01"
                 query: "q"
            """,
            3,
            ["not valid YAML"],
        ),
        ("items: []\n", 1, ["top-level 'pairs' list", "got fields 'items'"]),
        ("- id: p\n", 1, ["top-level 'pairs' list", "got list"]),
        ("pairs: {id: p}\n", 1, ["'pairs' must be a list"]),
        ("pairs: []\n", 1, ["'pairs' is empty"]),
    ],
)
def test_malformed_datasets_name_file_line_and_location(
    tmp_path: Path, text: str, line: int, fragments: list[str]
) -> None:
    path = yaml_file(tmp_path, text)
    with pytest.raises(DataError) as err:
        adk_dataset(path)
    rendered = err.value.render()
    assert f"{path}:{line}: " in rendered
    for fragment in fragments:
        assert fragment in rendered


def test_the_bad_relevance_error_tells_what_is_allowed(tmp_path: Path) -> None:
    path = yaml_file(tmp_path, GOOD_PAIR.replace('"YES"', '"MAYBE"'))
    with pytest.raises(DataError) as err:
        read_pairs(path)
    assert err.value.expected == '"YES" (relevant) or "NO" (judged not relevant)'
    assert err.value.line == 7


def test_unquoted_yes_and_no_are_strings_but_true_and_false_stay_booleans(tmp_path: Path) -> None:
    path = yaml_file(
        tmp_path,
        """
        pairs:
          - id: p
            query: q
            is_sufficient_set: false
            candidates:
              - {fqn: a.A, text: A, empirical_relevance: YES}
              - {fqn: a.B, text: B, empirical_relevance: NO}
        """,
    )
    query = adk_dataset(path).queries[0]
    assert query.judgments == {"a.A": 1, "a.B": 0}
    assert query.metadata == {"is_sufficient_set": False}


def test_missing_file_names_the_config_key(tmp_path: Path) -> None:
    with pytest.raises(DataError) as err:
        adk_dataset(tmp_path / "nope.yaml")
    assert err.value.key == "dataset.path"
    with pytest.raises(DataError) as err:
        adk_corpus(tmp_path / "nope.yaml")
    assert err.value.key == "corpus.path"


def test_a_dataset_without_candidates_gives_no_corpus(tmp_path: Path) -> None:
    path = yaml_file(tmp_path, "pairs:\n  - {id: p, query: q, candidates: []}\n")
    assert adk_dataset(path).queries[0].is_negative
    with pytest.raises(DataError, match="corpus is empty"):
        adk_corpus(path)


# -- end to end: the real CLI, as a user runs it ---------------------------------


@dataclass
class Finished:
    code: int
    stdout: str
    stderr: str


def run_cli(root: Path, *args: str) -> Finished:
    """``python -m evalframe`` in ``root``, as in the core's tests/conftest.py Project.run."""
    env = {
        **os.environ,
        "EVALFRAME_CACHE_DIR": str(root / ".cache"),
        "PYTHONIOENCODING": "utf-8",
    }
    proc = forkrun.run(args, cwd=root, env=env, timeout=120)  # a process of its own
    return Finished(proc.returncode, proc.stdout, proc.stderr)


@pytest.mark.slow
def test_end_to_end_adk_dataset_and_corpus_with_bm25(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = run_cli(
        tmp_path,
        "dataset=adk",
        f"dataset.path={SAMPLE}",
        "corpus=adk",
        f"corpus.path={SAMPLE}",
        "retriever=bm25",
        "metrics.measures=[R@1,R@5,P@5,RR,nDCG@5]",
        f"hydra.run.dir={out}",
    )
    assert result.code == 0, result.stderr + result.stdout
    assert "4 queries (1 negative)" in result.stdout
    summary = json.loads((out / "per_query.jsonl").read_text().splitlines()[0])
    assert summary["query_id"] == "api_understanding:01"


# -- evalframe mine's files: verdicts, and re-judging at another threshold ----------

MINED = """
pairs:
  - id: "demo:01"
    query: "How do I retry?"
    candidates:
      - {fqn: a.Retry, text: "Retry", empirical_relevance: "YES", delta_p: 0.45,
         verdict: relevant, p_value: 0.0001, ci: [0.3, 0.6]}
      - {fqn: a.Log, text: "Log", empirical_relevance: "NO", delta_p: 0.12,
         verdict: inconclusive, p_value: 0.2, ci: [-0.02, 0.25]}
      - {fqn: a.Conf, text: "Conf", empirical_relevance: "NO", delta_p: -0.01,
         verdict: not_relevant, p_value: 1.0, ci: [-0.09, 0.07]}
    metadata: {trials: 296, base_success_rate: 0.14}
mining: {threshold: 0.1, confidence: 0.95}
"""


def mined_dataset(tmp_path: Path, **settings: object) -> GoldenSet:
    path = yaml_file(tmp_path, MINED)
    config = AdkDatasetConfig(path=str(path), **settings)  # type: ignore[arg-type]
    return AdkDataset(config, PluginContext()).load()


def test_a_mined_file_reads_with_inconclusive_as_no(tmp_path: Path) -> None:
    (q,) = mined_dataset(tmp_path)
    assert q.judgments == {"a.Retry": 1, "a.Log": 0, "a.Conf": 0}
    assert q.metadata["delta_p"] == {"a.Retry": 0.45, "a.Log": 0.12, "a.Conf": -0.01}


def test_inconclusive_candidates_can_stay_unjudged(tmp_path: Path) -> None:
    (q,) = mined_dataset(tmp_path, inconclusive="unjudged")
    assert q.judgments == {"a.Retry": 1, "a.Conf": 0}


@pytest.mark.parametrize(
    ("threshold", "expected"),
    [
        (0.1, {"a.Retry": 1, "a.Log": 1, "a.Conf": 0}),  # ADK's rule: delta_p > 0.1
        (0.5, {"a.Retry": 0, "a.Log": 0, "a.Conf": 0}),
        (0.0, {"a.Retry": 1, "a.Log": 1, "a.Conf": 0}),
    ],
)
def test_relevance_threshold_rejudges_by_delta_p(
    tmp_path: Path, threshold: float, expected: dict[str, int]
) -> None:
    (q,) = mined_dataset(tmp_path, relevance_threshold=threshold)
    assert q.judgments == expected


def test_rejudging_a_candidate_without_delta_p_names_it(tmp_path: Path) -> None:
    path = yaml_file(tmp_path, GOOD_PAIR.replace("        delta_p: 0.85\n", ""))
    config = AdkDatasetConfig(path=str(path), relevance_threshold=0.2)
    with pytest.raises(DataError) as err:
        AdkDataset(config, PluginContext()).load()
    assert "pairs[0].candidates[0] has no delta_p" in err.value.render()
    assert err.value.line == 5  # the candidate's first line


def test_an_fqn_with_a_space_is_refused_at_its_line(tmp_path: Path) -> None:
    """It was refused by the model afterwards, with no line and pydantic's wording."""
    from evalframe.app.cli import main

    path = tmp_path / "a.yaml"
    path.write_text(
        'pairs:\n  - id: "p:01"\n    query: "q"\n    candidates:\n'
        '      - fqn: "a C"\n        text: "A"\n        empirical_relevance: "YES"\n'
    )
    assert main(["golden", "validate", "--format", "adk", str(path)]) == 2
