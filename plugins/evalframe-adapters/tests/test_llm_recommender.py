"""llm_recommender against a fake OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from evalframe_adapters.llm import (
    LLMRecommender,
    LLMRecommenderConfig,
    load_catalogue,
    parse_answer,
)
from evalframe_adapters.testing import FakeServer, Reply, Request

from evalframe.core.errors import ConfigError, DataError, PluginError
from evalframe.core.types import Corpus, Document
from evalframe.plugin.protocols import PluginContext, Query
from evalframe.plugin.testing import RetrieverContract

KEY = "sk-test-0123456789"
CATALOGUE = [
    {"id": "fastqc", "description": "Quality control of sequencing reads"},
    {"id": "multiqc", "description": "Aggregate QC reports"},
    {"id": "trimmomatic", "description": "Trim adapters from reads"},
    {"id": "bwa", "description": "Align reads to a reference"},
    {"id": "samtools", "description": "Sort and index alignments"},
]
ANSWERS = {
    "check read quality": (
        'Sure!\n```json\n["fastqc", "hallucinated_tool", "multiqc", "fastqc"]\n```'
    ),
    "align my reads": "1. **bwa** - aligns reads\n2) `samtools`: sorting\n- madeup_tool\n",
    "trim adapters": 'Here: {"tools": [{"id": "TRIMMOMATIC"}, {"id": "fastqc"}]}',
    "unknowable": "I don't know.",
}


def chat(request: Request) -> Reply:
    prompt = request.body["messages"][-1]["content"]
    query = prompt.split("Request: ", 1)[1].split("\n", 1)[0]
    if query == "always down":
        return Reply(503, {"error": "overloaded"})
    content = ANSWERS.get(query, "[]")
    return Reply(
        body={
            "choices": [{"message": {"role": "assistant", "content": content}}],
            "usage": {"total_tokens": 42},
        }
    )


@pytest.fixture
def catalogue(tmp_path: Path) -> str:
    path = tmp_path / "tools.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in CATALOGUE))
    return str(path)


@pytest.fixture
def server(serve: Any, monkeypatch: pytest.MonkeyPatch) -> FakeServer:
    monkeypatch.setenv("EFA_LLM_KEY", KEY)
    return serve(chat)  # type: ignore[no-any-return]


def make(
    server: FakeServer, catalogue: str | None, context: PluginContext | None = None, **settings: Any
) -> LLMRecommender:
    settings.setdefault("api_key_env", "EFA_LLM_KEY")
    config = LLMRecommenderConfig(
        api_url=server.url + "/v1/",
        model="test-model",
        catalogue_path=catalogue,
        backoff_seconds=0.01,
        seed=1,
        timeout_seconds=2,
        **settings,
    )
    return LLMRecommender(config, context or PluginContext())


def ids(r: LLMRecommender, text: str, k: int = 5, qid: str = "q1") -> tuple[str, ...] | None:
    ranking = r.retrieve(Query(id=qid, text=text), k)
    return None if ranking is None else ranking.doc_ids


class TestLLMContract(RetrieverContract):
    plugin_name = "llm_recommender"

    @pytest.fixture
    def retriever(self, server: FakeServer, catalogue: str) -> LLMRecommender:
        return make(server, catalogue)

    @pytest.fixture
    def queries(self) -> list[Query]:
        return [Query(id=f"q{i}", text=t) for i, t in enumerate(ANSWERS)]


def test_request_is_an_openai_chat_completion(server: FakeServer, catalogue: str) -> None:
    ids(make(server, catalogue), "check read quality", k=3)
    (req,) = server.requests
    assert req.path == "/v1/chat/completions"
    assert req.headers["Authorization"] == f"Bearer {KEY}"
    assert req.body["model"] == "test-model" and req.body["temperature"] == 0.0
    system, user = req.body["messages"]
    assert system["role"] == "system" and user["role"] == "user"
    assert "fastqc: Quality control of sequencing reads" in user["content"]
    assert "the 3 most useful" in user["content"]


def test_json_list_in_a_fence_drops_unknown_and_repeated_ids(
    server: FakeServer, catalogue: str
) -> None:
    r = make(server, catalogue)
    ranking = r.retrieve(Query(id="q1", text="check read quality"), 5)
    assert ranking is not None
    assert ranking.pairs() == [("fastqc", 2.0), ("multiqc", 1.0)]
    assert ranking.tokens == 42 and ranking.answer is not None and "json" in ranking.answer
    assert r.dropped_ids == 1 and r.dropped == {"q1": ["hallucinated_tool"]}


def test_dropped_ids_are_said_once_at_the_end(server: FakeServer, catalogue: str) -> None:
    r = make(server, catalogue)
    assert r.notes() == []
    ids(r, "check read quality", qid="q1")
    ids(r, "align my reads", qid="q2")
    assert r.notes() == [
        "2 id(s) the model gave in 2 answer(s) are not in the catalogue and were dropped "
        "(first: query 'q1', 'hallucinated_tool'); each answer's text is kept in "
        "per_query.jsonl ('answer')"
    ]


def test_answers_with_no_list_are_said_once_at_the_end(server: FakeServer, catalogue: str) -> None:
    """A chatty model (prose, a refusal) ranks nothing on every query: said, with the
    first such answer, rather than scored 0 without a word; "[]" is an answer, not one."""
    r = make(server, catalogue)
    prose = "I would suggest FastQC and then MultiQC."
    assert r.rank("q1", prose, 5).doc_ids == ()
    assert r.rank("q2", "Sorry, I cannot help with that.", 5).doc_ids == ()
    assert r.rank("q3", "[]", 5).doc_ids == ()  # none fits: a list, and no note
    assert r.notes() == [
        "2 answers held no list of ids (no JSON list, no numbered or bulleted line), so "
        f"they rank nothing (first: query 'q1', {prose!r}); ask for a JSON list in "
        "retriever.prompt_template, and read the answers in per_query.jsonl ('answer')"
    ]


def strip_version(ident: str) -> str:
    """Galaxy's rule, written out for the test: a toolshed id without its version."""
    parts = ident.split("/")
    return "/".join(parts[:-1]) if len(parts) == 6 else ident


def test_another_version_of_a_catalogue_tool_is_that_tool_under_the_normaliser(
    serve: Any, tmp_path: Path
) -> None:
    """The catalogue offers multiqc 1.11; the model names 1.9 (as Galaxy's own predictions
    do). With the dataset's normaliser (strip versions) that is the catalogue's tool,
    not a hallucination; without one it is dropped, as before."""
    shed = "toolshed.g2.bx.psu.edu/repos/iuc"
    path = tmp_path / "tools.jsonl"
    path.write_text(
        json.dumps({"id": f"{shed}/multiqc/multiqc/1.11+galaxy0"})
        + "\n"
        + json.dumps({"id": f"{shed}/fastp/fastp/0.23.4+galaxy0"})
        + "\n"
    )
    answer = json.dumps([f"{shed}/multiqc/multiqc/1.9+galaxy1", f"{shed}/nope/nope/1.0"])
    server = serve(lambda request: Reply(body={"choices": [{"message": {"content": answer}}]}))
    context = PluginContext(normalise_id=strip_version)
    r = make(server, str(path), context, api_key_env=None)
    assert ids(r, "summarise my QC reports") == (f"{shed}/multiqc/multiqc/1.11+galaxy0",)
    assert r.dropped == {"q1": [f"{shed}/nope/nope/1.0"]}
    plain = make(server, str(path), api_key_env=None)
    assert ids(plain, "summarise my QC reports") == ()
    # what the normaliser makes of the catalogue decides the matches: it keys the cache
    assert r.cache_identity() != plain.cache_identity()


def test_numbered_and_bulleted_lines(server: FakeServer, catalogue: str) -> None:
    r = make(server, catalogue)
    assert ids(r, "align my reads", qid="q2") == ("bwa", "samtools")
    assert r.dropped == {"q2": ["madeup_tool"]}


def test_ids_inside_objects_match_case_insensitively(server: FakeServer, catalogue: str) -> None:
    assert ids(make(server, catalogue), "trim adapters", k=1) == ("trimmomatic",)


def test_an_answer_without_ids_is_empty_not_missing(server: FakeServer, catalogue: str) -> None:
    assert ids(make(server, catalogue), "unknowable") == ()


def test_max_queries_then_missing_with_one_warning(
    server: FakeServer, catalogue: str, capsys: pytest.CaptureFixture[str]
) -> None:
    r = make(server, catalogue, max_queries=2)
    answers = [ids(r, t) for t in ANSWERS]
    assert answers[2:] == [None, None] and answers[0] is not None
    assert len(server.requests) == 2
    assert capsys.readouterr().err.count("max_queries=2 reached") == 1


def test_delay_and_rate_limit_space_the_requests(server: FakeServer, catalogue: str) -> None:
    assert make(server, catalogue, delay_seconds=0.5, rate_limit=4).client.limiter.interval == 0.5
    assert make(server, catalogue, rate_limit=4).client.limiter.interval == 0.25


def test_retries_and_failures_reuse_the_http_machinery(server: FakeServer, catalogue: str) -> None:
    with pytest.raises(PluginError, match="query 'q1' failed after 2 attempt") as err:
        ids(make(server, catalogue, retries=1), "always down")
    assert KEY not in err.value.render()
    r = make(server, catalogue, retries=0, allow_failed_queries=True)
    assert ids(r, "always down") is None and r.failed_queries == 1


def test_a_non_openai_answer_is_a_plugin_error(serve: Any, catalogue: str) -> None:
    other = serve(lambda req: Reply(body={"results": []}))
    with pytest.raises(PluginError, match=r"no choices\[0\]\.message\.content"):
        ids(make(other, catalogue, api_key_env=None), "x")
    assert "Authorization" not in other.requests[0].headers


def test_missing_key_names_the_variable(
    server: FakeServer, catalogue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("EFA_LLM_MISSING", raising=False)
    with pytest.raises(ConfigError, match="EFA_LLM_MISSING is not set") as err:
        make(server, catalogue, api_key_env="EFA_LLM_MISSING")
    # the setting a user changes, not the header the plugin built from it
    assert err.value.key == "retriever.api_key_env"


def test_catalogue_from_the_corpus_or_none(server: FakeServer) -> None:
    corpus = Corpus.build("tools", [Document(id="bwa", text="Align reads")])
    config = LLMRecommenderConfig(api_url=server.url, model="m", api_key_env="EFA_LLM_KEY")
    r = LLMRecommender(config, PluginContext(corpus=corpus))
    assert r.catalogue == {"bwa": "Align reads"}
    with pytest.raises(ConfigError, match="set catalogue_path or configure a corpus"):
        LLMRecommender(config, PluginContext())


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("tools.txt", "# candidates\nbwa\tAlign reads\nsamtools\n\n"),
        ("tools.json", '["bwa", {"id": "samtools"}]'),
        ("tools.json", '{"bwa": "Align reads", "samtools": ""}'),
    ],
)
def test_catalogue_formats(tmp_path: Path, name: str, text: str) -> None:
    (tmp_path / name).write_text(text)
    assert list(load_catalogue(str(tmp_path / name))) == ["bwa", "samtools"]


def test_bad_catalogue_record_names_the_line(tmp_path: Path) -> None:
    (tmp_path / "c.jsonl").write_text('{"id": "bwa"}\n{"name": "x"}\n')
    with pytest.raises(DataError, match="no usable id") as err:
        load_catalogue(str(tmp_path / "c.jsonl"))
    assert err.value.line == 2


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('["a", "b"]', ["a", "b"]),
        ('Answer: [[1, 2]] and ["x", 3]', ["x", "3"]),
        ('{"recommendations": [{"tool_id": "t1"}, {"name": "t2"}]}', ["t1", "t2"]),
        ("1. a\n2. b - the second\n* c", ["a", "b - the second", "c"]),
        ("no list here", []),
        ("[not json", []),
    ],
)
def test_parse_answer(text: str, expected: list[str]) -> None:
    assert parse_answer(text) == expected


def test_example_config_validates() -> None:
    path = Path(__file__).parents[1] / "evalframe_adapters" / "conf" / "retriever"
    node = yaml.safe_load((path / "llm_recommender.yaml").read_text())
    assert node.pop("name") == "llm_recommender"
    LLMRecommenderConfig.model_validate({**node, "model": "gpt-4o-mini"})


def test_cache_identity_follows_the_catalogue_file(server: FakeServer, catalogue: str) -> None:
    """The catalogue is named by path: editing it must not reuse cached recommendations."""
    before = make(server, catalogue).cache_identity()
    assert before == make(server, catalogue).cache_identity()
    path = Path(catalogue)
    path.write_text(path.read_text() + json.dumps({"id": "new-tool", "description": "x"}) + "\n")
    assert make(server, catalogue).cache_identity() != before


def test_raising_max_queries_reuses_the_cached_answers(
    server: FakeServer, catalogue: str, tmp_path: Path
) -> None:
    """#13 item 9: max_queries (and timeouts, concurrency) say how to ask, not what comes back.

    A first run capped at one query, then a second with a higher cap: the
    second pays only for the query the first did not ask.
    """
    from evalframe.core.types import GoldenQuery, GoldenSet
    from evalframe.plugin.registry import RETRIEVERS
    from evalframe.retrieval.retrieve import retrieve_all, run_cache

    spec = RETRIEVERS.get("llm_recommender")
    golden = GoldenSet.build(
        "g",
        [
            GoldenQuery(id="q1", text="check read quality", judgments={"fastqc": 1}),
            GoldenQuery(id="q2", text="align my reads", judgments={"bwa": 1}),
        ],
    )

    def run(**settings: Any) -> int:
        retriever = make(server, catalogue, **settings)
        cache = run_cache(spec, retriever.config, None, retriever, tmp_path / "cache")
        assert cache is not None
        before = len(server.requests)
        retrieve_all(retriever, golden, 3, name="llm_recommender", progress=False, cache=cache)
        return len(server.requests) - before

    assert run(max_queries=1) == 1
    assert run(max_queries=5, max_concurrency=8, delay_seconds=0.001, retries=1) == 1
    assert run(max_queries=5) == 0
    assert run(max_queries=5, temperature=0.5) == 2  # a setting that changes answers re-asks
