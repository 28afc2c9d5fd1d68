"""The identifier policy (#16, docs/golden-sets.md "Identifiers"), in loaders, models and config.

- surrounding ASCII whitespace is not part of an id: ``q02`` and ``q02 `` are one id;
- ASCII whitespace or a control character inside an id is refused where it is read,
  because a TREC file (run.trec, qrels) splits on it and could never read it back;
- ids are compared exactly (no Unicode normalisation), and a judged id that matches a
  corpus id only after normalisation is named in a warning;
- the run tag is one word for the same reason.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from evalframe.core.errors import ConfigError, DataError
from evalframe.core.types import GoldenQuery, GoldenSet, Ranking
from evalframe.pipeline.config import validate_experiment
from evalframe.pipeline.run import run_experiment
from evalframe.plugin.registry import DATASETS
from tests.conftest import Project, raw_config


def golden_file(project: Project, *records: dict[str, object]) -> Path:
    path = project.root / "ids.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def run_on(project: Project, golden: Path) -> None:
    run_on_dataset(project, {"name": "jsonl", "path": str(golden)})


def run_on_dataset(project: Project, dataset: dict[str, object]) -> None:
    cfg = raw_config(project, dataset=dataset)
    run_experiment(validate_experiment(cfg), progress=False)


def test_surrounding_space_is_not_part_of_an_id() -> None:
    q = GoldenQuery(id=" q02\t", text="t", judgments={" a ": 1})
    assert q.id == "q02" and q.judgments == {"a": 1}
    assert Ranking(query_id="q02 ", doc_ids=("a\n",), scores=(1.0,)).doc_ids == ("a",)


@pytest.mark.parametrize("bad", ["q 1", "q\t1", "q\x001", "a\x1fb"], ids=repr)
def test_space_or_control_inside_an_id_is_refused_by_the_model(bad: str) -> None:
    with pytest.raises(ValidationError, match="TREC file cannot hold"):
        GoldenQuery(id=bad, text="t")


def test_a_no_break_space_is_data_as_in_trec_files() -> None:
    assert GoldenQuery(id="a\u00a0b", text="t").id == "a\u00a0b"


def test_two_spellings_of_one_id_are_a_duplicate_at_the_second_line(project: Project) -> None:
    golden = golden_file(
        project,
        {"id": "q02", "question": "install with pip?", "expected_chunks": ["install"]},
        {"id": "q02 ", "question": "gate exit code?", "expected_chunks": ["gates"]},
    )
    with pytest.raises(DataError) as err:
        run_on(project, golden)
    assert f"{golden}:2" in str(err.value) and "duplicated (first at" in str(err.value)


def test_a_space_inside_a_query_id_is_located(project: Project) -> None:
    golden = golden_file(
        project, {"id": "q 1", "question": "install with pip?", "expected_chunks": ["install"]}
    )
    with pytest.raises(DataError) as err:
        run_on(project, golden)
    assert f"{golden}:1" in str(err.value) and "TREC file cannot hold" in str(err.value)


def test_a_space_inside_a_judged_id_is_located(project: Project) -> None:
    golden = golden_file(
        project, {"id": "q1", "question": "install with pip?", "expected_chunks": ["in stall"]}
    )
    with pytest.raises(DataError) as err:
        run_on(project, golden)
    assert f"{golden}:1" in str(err.value) and "'in stall'" in str(err.value)


class Careless:
    """A third-party loader that builds models without the core's record checks."""

    def __init__(self, config: object, context: object) -> None:
        pass

    def load(self) -> GoldenSet:
        return GoldenSet.build("c", [GoldenQuery(id="q1", text="t", judgments={"a b": 1})])


def test_what_a_loader_lets_through_is_a_data_error_not_a_crash(project: Project) -> None:
    """The pipeline's backstop: one paragraph naming the plugin and the problem, exit 2."""
    with DATASETS.scoped() as reg:
        reg.add("careless", Careless)
        with pytest.raises(DataError) as err:
            run_on_dataset(project, {"name": "careless"})
    message = str(err.value)
    assert "dataset plugin 'careless'" in message and "TREC file cannot hold" in message
    assert err.value.key == "dataset"


def test_a_judged_id_that_matches_a_corpus_id_only_after_normalisation_is_named(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    golden = golden_file(
        project,
        {"id": "q1", "question": "install with pip?", "expected_chunks": ["ｉｎｓｔａｌｌ"]},
        {"id": "q2", "question": "gate exit code?", "expected_chunks": ["Gates"]},
    )
    run_on(project, golden)
    err = capsys.readouterr().err
    assert "2 of those expected chunk id(s) differ from an id of corpus" in err
    assert "'ｉｎｓｔａｌｌ' ~ 'install'" in err and "'Gates' ~ 'gates'" in err


def test_the_run_tag_is_one_word(project: Project) -> None:
    cfg = raw_config(project)
    cfg["output"] = {**cfg["output"], "run_tag": "my run"}
    with pytest.raises(ConfigError) as err:
        validate_experiment(cfg)
    assert err.value.key == "output.run_tag" and "one word" in str(err.value)


def test_a_run_files_ids_are_checked_before_rankings_skip_validation(tmp_path: Path) -> None:
    """read_trec_run builds rankings without pydantic's look only when every id is plain;
    an id with a control character (which trec_eval's reading lets through) is refused
    with its file and line, not with a validation traceback."""
    from evalframe.core.reader import read_trec_run

    plain = tmp_path / "plain.trec"
    plain.write_text("q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2 1.5 t\nq2 Q0 d3 1 0.5 t\n")
    run = read_trec_run(plain)
    assert run.rankings["q1"] == Ranking(query_id="q1", doc_ids=("d1", "d2"), scores=(2.5, 1.5))
    # an id that is fine but not "plain" (a no-break space is data) still reads
    nbsp = tmp_path / "nbsp.trec"
    nbsp.write_text("q1 Q0 d\u00a01 1 2.5 t\n", encoding="utf-8")
    assert read_trec_run(nbsp).rankings["q1"].doc_ids == ("d\u00a01",)
    for text, line, what in [
        ("q1 Q0 d1 1 2.5 t\nq2 Q0 d2 1 1.5 t\nq2 Q0 d\x013 2 0.5 t\n", 3, "doc id 'd\\x013'"),
        ("q1 Q0 d1 1 2.5 t\nq\x7f2 Q0 d2 1 1.5 t\n", 2, "query id 'q\\x7f2'"),
    ]:
        odd = tmp_path / "odd.trec"
        odd.write_text(text)
        with pytest.raises(DataError) as err:
            read_trec_run(odd)
        assert err.value.line == line and f"the {what} holds a control character" in str(err.value)
