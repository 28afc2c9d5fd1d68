"""What the pipeline does for gold written like Galaxy's, whatever the retriever (#13, #25 §3).

- #13 item 3: the dataset's normalisers (``dataset.normalise``) reach every
  retriever's ids, not only a run file's: one setting for gold and predictions;
- a separate queries file (``queries.path``) gives text and metadata to gold
  without text, so a retriever that reads the text can run on it;
- a retriever's per-query cache inputs (a prompt template's fields) join the key.

Expected values are written out by hand from the few ids involved.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalframe.core.errors import DataError
from evalframe.core.types import GoldenQuery, GoldenSet, Ranking, Run
from evalframe.pipeline.config import validate_experiment
from evalframe.pipeline.run import run_experiment
from evalframe.plugin.protocols import PluginConfig, PluginContext, Query
from evalframe.plugin.registry import RETRIEVERS, Registry
from evalframe.retrieval.cache import RunCache
from evalframe.retrieval.normalise import normalise_run
from evalframe.retrieval.retrieve import retrieve_all

TS = "toolshed.g2.bx.psu.edu/repos"
FASTQC = f"{TS}/devteam/fastqc/fastqc"
MULTIQC = f"{TS}/iuc/multiqc/multiqc"


class AgentConfig(PluginConfig):
    """No settings."""


class Agent:
    """Answers with versioned Tool Shed ids, as an LLM picking from a catalogue does."""

    seen: list[Query] = []
    answers: dict[str, list[str]] = {
        "q1": [f"{FASTQC}/0.74+galaxy0", f"{MULTIQC}/1.11+galaxy1"],
        "q2": [f"{FASTQC}/0.74+galaxy0", f"{FASTQC}/0.73+galaxy0", f"{MULTIQC}/1.9"],
    }

    def __init__(self, config: AgentConfig, context: PluginContext) -> None:
        pass

    def retrieve(self, query: Query, k: int) -> Ranking:
        Agent.seen.append(query)
        ids = Agent.answers.get(query.id, [])[:k]
        return Ranking.from_pairs(query.id, [(d, float(len(ids) - i)) for i, d in enumerate(ids)])


@pytest.fixture
def agent() -> Iterator[Registry[Any]]:
    Agent.seen = []
    with RETRIEVERS.scoped() as reg:
        reg.add("agent", Agent, AgentConfig)
        yield reg


def galaxy_config(tmp_path: Path, **overrides: Any) -> dict[str, Any]:
    gold = tmp_path / "gold.jsonl"
    gold.write_text(
        json.dumps({"id": "q1", "tools": [f"{FASTQC}/0.73+galaxy0"]})
        + "\n"
        + json.dumps({"id": "q2", "tools": [f"{MULTIQC}/1.11+galaxy1"]})
        + "\n"
    )
    cfg: dict[str, Any] = {
        "experiment": "unit",
        "dataset": {"name": "galaxy", "path": str(gold), "normalise": ["strip_version"]},
        "retriever": {"name": "agent"},
        "depth": 10,
        "metrics": {
            "measures": ["Hit@1", "RR@10"],
            "policies": {"no_relevant": "zero", "ties": "given", "duplicates": "keep_first"},
        },
        "report": {"criterion": "RR@10"},
        "tracking": {"name": "none"},
        "output": {"dir": str(tmp_path / "out"), "cache_dir": str(tmp_path / "cache")},
    }
    cfg.update(overrides)
    return cfg


def test_the_datasets_normalisers_reach_any_retrievers_ids(
    tmp_path: Path, agent: Registry[Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: gold normalised, the agent's versioned ids not: every score 0."""
    result = run_experiment(validate_experiment(galaxy_config(tmp_path)), progress=False)
    per_query = result.evaluation.scores.per_query()
    # q1: fastqc (0.74 for gold 0.73) is first -> hit, RR 1
    assert per_query["q1"] == {"Hit@1": 1.0, "RR@10": 1.0}
    # q2: fastqc 0.74 and 0.73 are one tool once normalised: the repeat goes, multiqc is 2nd
    assert per_query["q2"] == {"Hit@1": 0.0, "RR@10": 1 / 2}
    assert result.evaluation.run.rankings["q2"].doc_ids == (FASTQC, MULTIQC)
    err = capsys.readouterr().err
    assert "1 retrieved id(s) in 1 query repeated an id ranked above them once normalised" in err
    assert "not one of the" not in err
    # the run folder holds the ids as scored
    assert f"q2 Q0 {MULTIQC} 2 " in (tmp_path / "out" / "run.trec").read_text()


def test_without_normalisers_the_run_is_left_alone_and_the_mismatch_is_named(
    tmp_path: Path, agent: Registry[Any], capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = galaxy_config(tmp_path)
    cfg["dataset"]["normalise"] = []
    result = run_experiment(validate_experiment(cfg), progress=False)
    assert result.evaluation.run.rankings["q2"].doc_ids == tuple(Agent.answers["q2"])
    assert result.evaluation.overall[result.evaluation.metrics[0]].mean == 0.0
    assert "normalisation mismatch, not a bad retriever" in capsys.readouterr().err


def test_a_collapse_under_duplicates_error_stops_and_names_both_ids(
    tmp_path: Path, agent: Registry[Any]
) -> None:
    cfg = galaxy_config(tmp_path)
    cfg["metrics"]["policies"]["duplicates"] = "error"
    with pytest.raises(DataError) as err:
        run_experiment(validate_experiment(cfg), progress=False)
    text = err.value.render()
    assert f"query 'q2': retrieved ids '{FASTQC}/0.74+galaxy0' and '{FASTQC}/0.73+galaxy0'" in text
    assert err.value.key == "metrics.policies.duplicates"


def test_normalise_run_keeps_order_and_scores_and_leaves_raw_repeats_to_the_engine() -> None:
    run = Run(
        rankings={
            "a": Ranking.from_pairs("a", [("x/1", 3.0), ("y", 2.0), ("x/2", 1.0)]),
            "b": Ranking.from_pairs("b", [("y", 2.0), ("y", 1.0)]),  # a repeat as written
            "c": Ranking.from_pairs("c", [("z", 1.0)]),
        }
    )
    out = normalise_run(run, lambda d: d.split("/")[0], "keep_first")
    assert out.rankings["a"].pairs() == [("x", 3.0), ("y", 2.0)]
    assert out.rankings["b"].pairs() == [("y", 2.0), ("y", 1.0)]
    assert out.rankings["c"] is run.rankings["c"]  # nothing to change: the same object
    assert normalise_run(run, None, "error") is run


def test_gold_without_text_gets_its_texts_from_the_queries_file(
    tmp_path: Path, agent: Registry[Any], capsys: pytest.CaptureFixture[str]
) -> None:
    queries = tmp_path / "queries.jsonl"
    queries.write_text(
        json.dumps({"id": "q1", "query": "Check my reads", "tutorial": "quality-control"})
        + "\n"
        + json.dumps({"id": "q2", "query": "One report for all", "tutorial": "quality-control"})
        + "\n"
    )
    cfg = galaxy_config(tmp_path, queries={"path": str(queries)})
    result = run_experiment(validate_experiment(cfg), progress=False)
    assert [(q.id, q.text, q.metadata) for q in Agent.seen] == [
        ("q1", "Check my reads", {"tutorial": "quality-control"}),
        ("q2", "One report for all", {"tutorial": "quality-control"}),
    ]
    assert result.evaluation.golden.provenance["queries"]["joined"] == 2
    assert "no text" not in capsys.readouterr().err


def test_a_retriever_that_reads_text_is_warned_about_empty_questions_once(
    tmp_path: Path, agent: Registry[Any], capsys: pytest.CaptureFixture[str]
) -> None:
    run_experiment(validate_experiment(galaxy_config(tmp_path)), progress=False)
    err = capsys.readouterr().err
    assert err.count("2 of 2 golden queries have no text, so retriever 'agent' is asked") == 1
    assert "queries.path=FILE" in err
    # a run file answers by id: no warning
    pred = tmp_path / "p.jsonl"
    pred.write_text(json.dumps({"id": "q1", "predictions": [f"{FASTQC}/0.74"]}) + "\n")
    cfg = galaxy_config(
        tmp_path, retriever={"name": "run_file", "path": str(pred), "format": "jsonl"}
    )
    cfg["metrics"]["policies"]["missing_query"] = "skip"
    run_experiment(validate_experiment(cfg), progress=False)
    assert "no text" not in capsys.readouterr().err


class TemplatedAgent(Agent):
    """Reads a metadata field besides the text, and says so for the cache key."""

    def cache_inputs(self, query: Query) -> dict[str, str]:
        return {"tutorial": str(query.metadata.get("tutorial"))}


def test_cache_inputs_join_the_key_so_changed_metadata_is_asked_again(tmp_path: Path) -> None:
    golden = GoldenSet.build(
        "g", [GoldenQuery(id="q1", text="Check my reads", metadata={"tutorial": "qc"})]
    )
    cache = RunCache(tmp_path, {"retriever": "templated"})
    retriever = TemplatedAgent(AgentConfig(), PluginContext())
    Agent.seen = []
    retrieve_all(retriever, golden, 5, progress=False, cache=cache)
    retrieve_all(retriever, golden, 5, progress=False, cache=cache)
    assert len(Agent.seen) == 1  # the second run came from the cache
    changed = GoldenSet.build(
        "g", [GoldenQuery(id="q1", text="Check my reads", metadata={"tutorial": "ngs"})]
    )
    retrieve_all(retriever, changed, 5, progress=False, cache=cache)
    assert len(Agent.seen) == 2  # same text, other tutorial: another prompt, another answer
    # a retriever without cache_inputs keeps the keys it always had
    assert cache.key("Check my reads", 5) == cache.key("Check my reads", 5, None)
    assert cache.key("Check my reads", 5) != cache.key("Check my reads", 5, {"tutorial": "qc"})


def test_queries_without_text_never_share_a_cache_entry(tmp_path: Path) -> None:
    """The cache keys a ranking by query text (two ids may share one); with no text at
    all the id is added, or every text-less query got the first one's ranking."""
    golden = GoldenSet.build("g", [GoldenQuery(id="q1", text=""), GoldenQuery(id="q2", text="")])
    cache = RunCache(tmp_path, {"retriever": "agent"})
    retriever = Agent(AgentConfig(), PluginContext())
    Agent.seen = []
    first = retrieve_all(retriever, golden, 5, progress=False, cache=cache)
    assert first.rankings["q2"].doc_ids == tuple(Agent.answers["q2"])
    again = retrieve_all(retriever, golden, 5, progress=False, cache=cache)
    assert len(Agent.seen) == 2 and (cache.hits, cache.misses) == (2, 2)
    assert again.rankings["q2"].doc_ids == tuple(Agent.answers["q2"])
