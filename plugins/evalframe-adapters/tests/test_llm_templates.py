"""llm_recommender prompt templates read any metadata field of a query (#25 §3).

Galaxy's generator enriches each query with its tutorial's metadata before
asking the model; here a template names the fields it wants (``{tutorial}``,
``{tutorial.title}``), and a missing one is an error that names the field,
the query and the config key.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from evalframe_adapters.llm import LLMRecommender, LLMRecommenderConfig, placeholders
from evalframe_adapters.testing import FakeServer, Reply, Request
from pydantic import ValidationError

from evalframe.core.errors import ConfigError
from evalframe.plugin.protocols import PluginContext, Query

PROMPTS: list[str] = []


def chat(request: Request) -> Reply:
    PROMPTS.append(request.body["messages"][-1]["content"])
    content = '["fastqc", "multiqc"]'
    return Reply(body={"choices": [{"message": {"role": "assistant", "content": content}}]})


@pytest.fixture
def server(serve: Any) -> FakeServer:
    PROMPTS.clear()
    return serve(chat)  # type: ignore[no-any-return]


def make(server: FakeServer, tmp_path: Path, template: str) -> LLMRecommender:
    catalogue = tmp_path / "tools.jsonl"
    catalogue.write_text(
        json.dumps({"id": "fastqc", "description": "read QC {k} {query}"})
        + "\n"
        + json.dumps({"id": "multiqc", "description": "aggregate reports"})
        + "\n"
    )
    config = LLMRecommenderConfig(
        api_url=server.url,
        model="m",
        api_key_env=None,
        catalogue_path=str(catalogue),
        prompt_template=template,
        retries=0,
        timeout_seconds=2,
    )
    return LLMRecommender(config, PluginContext())


QUERY = Query(
    id="v1-q01",
    text="Check my reads",
    metadata={"topic": "sequence-analysis", "tutorial": {"name": "quality-control", "hours": 1}},
)


def test_metadata_fields_nested_fields_and_builtins_are_filled_in_one_pass(
    server: FakeServer, tmp_path: Path
) -> None:
    template = (
        "Topic: {topic}. Tutorial: {tutorial.name} ({tutorial}). Query {id}: {query}\n"
        'Pick {k} of:\n{catalogue}\nAnswer as {{"tools": [...]}}'
    )
    recommender = make(server, tmp_path, template)
    ranking = recommender.retrieve(QUERY, 2)
    assert ranking is not None and ranking.doc_ids == ("fastqc", "multiqc")
    assert PROMPTS == [
        "Topic: sequence-analysis. Tutorial: quality-control "
        '({"name": "quality-control", "hours": 1}). Query v1-q01: Check my reads\n'
        # the catalogue's own "{k} {query}" is text, not a placeholder: it is never re-read
        "Pick 2 of:\nfastqc: read QC {k} {query}\nmultiqc: aggregate reports\n"
        'Answer as {"tools": [...]}'
    ]
    # the fields the prompt reads join the query's cache key; built-ins are keyed already
    assert recommender.cache_inputs(QUERY) == {
        "topic": "sequence-analysis",
        "tutorial.name": "quality-control",
        "tutorial": '{"name": "quality-control", "hours": 1}',
    }
    assert make(server, tmp_path, "{query} {k}").cache_inputs(QUERY) is None


def test_a_missing_field_names_the_field_the_query_and_the_key(
    server: FakeServer, tmp_path: Path
) -> None:
    recommender = make(server, tmp_path, "{query} for the {difficulty} level")
    with pytest.raises(ConfigError) as err:
        recommender.retrieve(QUERY, 2)
    text = err.value.render()
    assert (
        "retriever.prompt_template uses {difficulty}, but query 'v1-q01' has no metadata " in text
    )
    assert err.value.key == "retriever.prompt_template"
    assert "fields topic, tutorial" in text
    assert "queries.path" in text
    assert PROMPTS == []  # nothing was asked
    with pytest.raises(ConfigError, match=r"uses \{tutorial.title\}"):
        make(server, tmp_path, "{query} {tutorial.title}").retrieve(QUERY, 2)


def test_placeholders_and_the_query_requirement() -> None:
    assert placeholders("{query} {{literal}} {a.b} {x-y} {1bad} {}") == ["query", "a.b", "x-y"]
    with pytest.raises(ValidationError, match=r"must contain \{query\}"):
        LLMRecommenderConfig(model="m", prompt_template="only {{query}} as text")
