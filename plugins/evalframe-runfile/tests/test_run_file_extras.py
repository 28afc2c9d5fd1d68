"""run_file JSONL records keep what a RAG system reports beside its ranking (confidence, answer)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from evalframe_runfile.retriever import RunFileConfig, RunFileRetriever

from evalframe.core.errors import DataError
from evalframe.plugin.protocols import PluginContext, Query

RECORD = {
    "id": "q1",
    "results": [{"id": "d1", "score": 1.0}, {"id": "d2", "score": 2.0}],
    "confidence": 0.8,
    "answer": "d2, because ...",
    "tokens": 1200,
    "tool_calls": 2,
    "latency_ms": 35.5,
}


def make(tmp_path: Path, *records: dict[str, object]) -> RunFileRetriever:
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return RunFileRetriever(RunFileConfig(path=str(path), format="jsonl"), PluginContext())


def test_the_extras_reach_the_ranking_the_pipeline_sees(tmp_path: Path) -> None:
    ranking = make(tmp_path, RECORD).retrieve(Query(id="q1", text=""), 1)
    assert ranking is not None
    assert ranking.doc_ids == ("d2",)  # cut at k after ordering by score
    assert (ranking.confidence, ranking.answer, ranking.tokens) == (0.8, "d2, because ...", 1200)
    assert (ranking.tool_calls, ranking.latency_ms) == (2, 35.5)


def test_records_without_extras_have_none(tmp_path: Path) -> None:
    ranking = make(tmp_path, {"id": "q1", "predictions": ["d1"]}).retrieve(
        Query(id="q1", text=""), 5
    )
    assert ranking is not None and ranking.confidence is None and ranking.answer is None


@pytest.mark.parametrize(
    ("field", "value", "wanted"),
    [("confidence", 1.2, "a number in [0, 1]"), ("confidence", True, "a number in [0, 1]"),
     ("answer", 3, "text"), ("tokens", 1.5, "a whole number >= 0"),
     # a count or a duration below 0, or not finite: timings.json took -5 ms as the p50
     ("tokens", -7, "a whole number >= 0"), ("tool_calls", -1, "a whole number >= 0"),
     ("latency_ms", -5, "a finite number of milliseconds >= 0"),
     ("latency_ms", float("inf"), "a finite number of milliseconds >= 0")],
)  # fmt: skip
def test_a_bad_extra_names_its_line(tmp_path: Path, field: str, value: object, wanted: str) -> None:
    with pytest.raises(DataError, match=re.escape(f"field {field!r} must be {wanted}")) as e:
        make(tmp_path, {**RECORD, "id": "q0"}, {**RECORD, field: value})
    assert e.value.line == 2
