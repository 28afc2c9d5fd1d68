"""run_file formats: Galaxy JSONL predictions, scored JSONL results, ranx JSON, normalisers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from evalframe_runfile.retriever import RunFileConfig, RunFileRetriever

from evalframe.core.errors import DataError
from evalframe.plugin.protocols import PluginContext, Query
from evalframe.plugin.testing import RetrieverContract

TS = "toolshed.g2.bx.psu.edu/repos/iuc"
PREDICTIONS = [
    {"id": "q1", "predictions": ["t3", "t1", "t3", "t2"]},
    {"id": "q2", "predictions": [7, "t9"]},
    {"id": "q3", "predictions": []},
]
RANX = """\
{
  "q1": {"d1": 1.0, "d3": 2.5,
         "d2": 1.5},
  "q2": {"d7": 3}
}
"""


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def jsonl(records: list[object]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def make(path: str, fmt: str, **settings: object) -> RunFileRetriever:
    return RunFileRetriever(RunFileConfig(path=path, format=fmt, **settings), PluginContext())


def ask(r: RunFileRetriever, qid: str, k: int = 10) -> tuple[str, ...] | None:
    ranking = r.retrieve(Query(id=qid, text=""), k)
    return None if ranking is None else ranking.doc_ids


class TestJsonlPredictionsContract(RetrieverContract):
    plugin_name = "run_file"

    @pytest.fixture
    def retriever(self, tmp_path: Path) -> RunFileRetriever:
        return make(write(tmp_path, "p.jsonl", jsonl(PREDICTIONS)), "jsonl")

    @pytest.fixture
    def queries(self) -> list[Query]:
        return [Query(id=q, text="") for q in ("q1", "q2", "q3", "q4")]


class TestRanxJsonContract(TestJsonlPredictionsContract):
    @pytest.fixture
    def retriever(self, tmp_path: Path) -> RunFileRetriever:
        return make(write(tmp_path, "run.json", RANX), "json")


def test_predictions_order_is_the_ranking_and_repeats_are_dropped_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    r = make(write(tmp_path, "p.jsonl", jsonl(PREDICTIONS)), "jsonl")
    assert ask(r, "q1") == ("t3", "t1", "t2")
    ranking = r.retrieve(Query(id="q1", text=""), 10)
    assert ranking is not None and ranking.scores == (4.0, 3.0, 1.0)  # n - i, first kept
    assert ask(r, "q2", 1) == ("7",)  # integer ids become strings; cut at k
    assert ask(r, "q3") == ()  # answered with nothing: empty, not missing
    assert ask(r, "q404") is None
    assert r.duplicates_removed == 1
    assert "1 repeated document id(s) removed in 1 query of the file" in capsys.readouterr().err


def test_scored_results_are_sorted_by_score(tmp_path: Path) -> None:
    record = {"id": "q1", "results": [{"id": "a", "score": 0.1}, {"id": "b", "score": 0.9}]}
    r = make(write(tmp_path, "r.jsonl", jsonl([record])), "jsonl")
    assert ask(r, "q1") == ("b", "a")


def test_ranx_json_reads_scores(tmp_path: Path) -> None:
    r = make(write(tmp_path, "run.json", RANX), "json")
    ranking = r.retrieve(Query(id="q1", text=""), 2)
    assert ranking is not None
    assert ranking.pairs() == [("d3", 2.5), ("d2", 1.5)]
    assert ask(r, "q2") == ("d7",)


def test_strip_version_matches_the_galaxy_normaliser(tmp_path: Path) -> None:
    preds = [
        f"{TS}/fastqc/fastqc/0.73+galaxy0",
        f"{TS}/fastqc/fastqc/0.74",  # the same tool once versions are stripped
        f"{TS}/multiqc/multiqc/1.12",
        "upload1",
    ]
    path = write(tmp_path, "p.jsonl", jsonl([{"id": "q1", "predictions": preds}]))
    r = make(path, "jsonl", normalise=["strip_version"])
    assert ask(r, "q1") == (f"{TS}/fastqc/fastqc", f"{TS}/multiqc/multiqc", "upload1")
    assert r.duplicates_removed == 1
    galaxy = pytest.importorskip("evalframe_formats.galaxy")
    assert all(galaxy.normalise_tool_id("strip_version", p) in ask(r, "q1", 9) for p in preds)


def test_normalise_applies_to_trec_runs_too(tmp_path: Path) -> None:
    run = f"q1 Q0 {TS}/a/a/1.0 1 2.0 s\nq1 Q0 {TS}/a/a/2.0 2 3.0 s\nq1 Q0 x 3 1.0 s\n"
    r = make(write(tmp_path, "s.run", run), "trec", normalise=["strip_version"])
    ranking = r.retrieve(Query(id="q1", text=""), 5)
    assert ranking is not None and ranking.pairs() == [(f"{TS}/a/a", 3.0), ("x", 1.0)]


def test_duplicates_error_stops_at_the_repeated_line(tmp_path: Path) -> None:
    """metrics.policies.duplicates=error reaches the run file (the shipped config follows it)."""
    path = write(tmp_path, "p.jsonl", jsonl(PREDICTIONS))
    with pytest.raises(DataError) as err:
        make(path, "jsonl", duplicates="error")
    assert err.value.line == 1
    assert f"query 'q1' lists document 't3' twice (first at {path}:1)" in err.value.render()
    run = write(tmp_path, "s.run", f"q1 Q0 {TS}/a/a/1.0 1 2.0 s\nq1 Q0 {TS}/a/a/2.0 2 3.0 s\n")
    with pytest.raises(DataError) as err:
        make(run, "trec", normalise=["strip_version"], duplicates="error")
    assert err.value.line == 2
    assert f"lists document '{TS}/a/a' ('{TS}/a/a/2.0' once normalised) twice" in str(err.value)


def test_unknown_normaliser_is_a_config_error() -> None:
    with pytest.raises(ValueError, match="unknown normaliser 'strip_versions'"):
        RunFileConfig(path="x", format="jsonl", normalise=["strip_versions"])


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"predictions": ["a"]}', "no 'id' field"),
        ('{"id": "q2"}', "no 'predictions' field"),
        ('{"id": "q2", "predictions": "a"}', "must be a list of ids"),
        ('{"id": "q2", "predictions": ["a", null]}', "prediction 2 must be"),
        ('{"id": "q2", "results": [{"id": "a"}]}', "result 1 must be an object"),
        ('{"id": "q2", "results": [{"id": "a", "score": "x"}]}', "score of 'a' is not a number"),
        ('{"id": "q1", "predictions": []}', "query id 'q1' is duplicated"),
        ('{"id": "q2", "predictions": ["d 1"]}', "prediction 1: the id 'd 1' contains whitespace"),
        ('{"id": "q2", "results": [{"id": "a", "score": NaN}]}', "score of 'a' is NaN"),
        ('["q2", "a"]', "must be a JSON object"),
        ('{"id": "q2", "predictions": [', "not valid JSON"),
    ],
)
def test_malformed_jsonl_records_name_file_and_line(
    tmp_path: Path, line: str, message: str
) -> None:
    path = write(tmp_path, "p.jsonl", '{"id": "q1", "predictions": ["a"]}\n\n' + line + "\n")
    with pytest.raises(DataError, match=message) as err:
        make(path, "jsonl")
    assert err.value.line == 3
    assert "p.jsonl:3" in err.value.render()


def test_malformed_ranx_json_names_the_line(tmp_path: Path) -> None:
    bad = RANX.replace('"d2": 1.5', '"d2": "high"')
    with pytest.raises(DataError, match="score of 'd2' is not a number") as err:
        make(write(tmp_path, "run.json", bad), "json")
    assert err.value.line == 3  # where "d2" is, not where q1 starts
    with pytest.raises(DataError, match="must map to an object") as err:
        make(write(tmp_path, "run.json", '{\n "q1": {},\n "q2": [1]\n}'), "json")
    assert err.value.line == 3
    with pytest.raises(DataError, match="must be an object"):
        make(write(tmp_path, "run.json", "[]"), "json")
    with pytest.raises(DataError, match="not valid JSON") as err:
        make(write(tmp_path, "run.json", '{\n "q1": {"a": 1,}\n}'), "json")
    assert err.value.line == 2


def test_a_json_run_with_a_query_or_document_twice_names_both_lines(tmp_path: Path) -> None:
    """A JSON object keeps only the last of a repeated key: the first ranking (or score)
    would be dropped without a word, and a repeated query crashed with a KeyError."""
    twice = '{\n "q1": {"d1": 2},\n "q1": {"d4": 9}\n}\n'
    with pytest.raises(DataError, match=r"query id 'q1' is duplicated \(first at .*:2\)") as err:
        make(write(tmp_path, "run.json", twice), "json")
    assert err.value.line == 3
    doc_twice = '{\n "q1": {"d1": 2,\n        "d1": 3}\n}\n'
    with pytest.raises(DataError, match="document id 'd1' is duplicated") as err:
        make(write(tmp_path, "run.json", doc_twice), "json")
    assert err.value.line == 3
    spaced = '{\n "q1": {"d 1": 2}\n}\n'
    with pytest.raises(DataError, match="the id 'd 1' contains whitespace") as err:
        make(write(tmp_path, "run.json", spaced), "json")
    assert err.value.line == 2


def test_an_empty_run_file_is_warned_about(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make(write(tmp_path, "run.trec", ""), "trec")
    assert "holds no rankings: every golden query is missing" in capsys.readouterr().err
