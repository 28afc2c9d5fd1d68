"""The Galaxy gold format (doc 003): what loads, how ids are normalised, every rejection."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from evalframe_formats.galaxy import (
    NORMALISERS,
    GalaxyDataset,
    GalaxyDatasetConfig,
    describe_normalisers,
    normalise_tool_id,
    normalise_tool_ids,
    strip_version,
)
from pydantic import ValidationError

from evalframe.core.errors import ConfigError, DataError
from evalframe.core.types import Corpus, Document, GoldenSet
from evalframe.plugin.protocols import PluginContext
from evalframe.plugin.registry import DATASETS, configure
from evalframe.testing import DatasetLoaderContract

DATA = Path(__file__).parent / "data"
GOLD = DATA / "galaxy_gold.jsonl"
TS = "toolshed.g2.bx.psu.edu/repos"


def galaxy(path: Path, context: PluginContext | None = None, **settings: Any) -> GoldenSet:
    config = GalaxyDatasetConfig(path=str(path), **settings)
    return GalaxyDataset(config, context or PluginContext()).load()


def gold_file(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "v1_items.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


class TestGalaxyDatasetContract(DatasetLoaderContract):
    plugin_name = "galaxy"

    @pytest.fixture
    def loader(self) -> GalaxyDataset:
        config = GalaxyDatasetConfig(path=str(GOLD), normalise=["strip_version"])
        return GalaxyDataset(config, PluginContext())


def test_sample_loads_as_written(capsys: pytest.CaptureFixture[str]) -> None:
    golden = galaxy(GOLD)
    assert [q.id for q in golden] == [
        "qc-01",
        "qc-02",
        "rnaseq-03",
        "rnaseq-04",
        "intro-05",
        "peaks-06",
        "none-07",
    ]
    q2 = golden.by_id()["qc-02"]
    assert q2.text == "Combine the FastQC reports of all my samples into one summary report"
    assert q2.judgments == {
        f"{TS}/iuc/multiqc/multiqc/1.11+galaxy1": 1,
        f"{TS}/devteam/fastqc/fastqc/0.73+galaxy0": 1,
    }
    assert q2.metadata == {"topic": "sequence-analysis", "tutorial": "quality-control"}
    # without normalisation the two featureCounts versions are two different tools
    assert len(golden.by_id()["rnaseq-03"].judgments) == 2
    assert golden.name == "galaxy_gold"
    assert golden.provenance == {"format": "galaxy", "path": str(GOLD), "normalise": []}
    assert capsys.readouterr().err == ""


def test_a_query_without_gold_tools_is_kept_as_a_negative_example() -> None:
    golden = galaxy(GOLD)
    assert [q.id for q in golden if q.is_negative] == ["none-07"]
    assert golden.by_id()["none-07"].judgments == {}


def test_strip_version_normalises_gold_ids_and_warns_about_the_duplicate(
    capsys: pytest.CaptureFixture[str],
) -> None:
    golden = galaxy(GOLD, normalise=["strip_version"])
    judged = {q.id: list(q.judgments) for q in golden}
    assert judged == {
        "qc-01": [f"{TS}/devteam/fastqc/fastqc"],
        "qc-02": [f"{TS}/iuc/multiqc/multiqc", f"{TS}/devteam/fastqc/fastqc"],
        "rnaseq-03": [f"{TS}/iuc/featurecounts/featurecounts"],  # 2.0.3 and 2.0.1: one tool
        "rnaseq-04": [f"{TS}/iuc/deseq2/deseq2"],
        "intro-05": ["Cut1"],  # not a Tool Shed id: unchanged
        "peaks-06": [f"{TS}/iuc/bedtools/bedtools_intersectbed"],  # no version: unchanged
        "none-07": [],
    }
    err = capsys.readouterr().err
    assert "warning: 1 duplicate gold tool id(s) after normalisation (strip_version)" in err
    assert f"{GOLD}:3 ('rnaseq-03': 1)" in err
    assert golden.provenance["normalise"] == ["strip_version"]


def test_normalisation_changes_the_content_hash() -> None:
    assert galaxy(GOLD).content_hash != galaxy(GOLD, normalise=["strip_version"]).content_hash


def test_normalisers_apply_in_the_order_listed(tmp_path: Path) -> None:
    path = gold_file(
        tmp_path,
        f'{{"id": "q", "query": "cut", "tools": ["{TS}/IUC/Cut/Cut1/1.0", "CUT1", "cut1"]}}',
    )
    golden = galaxy(path, normalise=["strip_version", "lowercase"])
    assert golden.queries[0].judgments == {f"{TS.lower()}/iuc/cut/cut1": 1, "cut1": 1}


def test_a_tool_listed_twice_is_kept_once_with_a_warning_even_without_normalisers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = gold_file(
        tmp_path,
        '{"id": "a", "query": "x", "tools": ["Cut1"]}',
        '{"id": "b", "query": "y", "tools": ["Cut1", "Grep1", "Cut1", "Cut1"]}',
    )
    golden = galaxy(path)
    assert list(golden.by_id()["b"].judgments) == ["Cut1", "Grep1"]
    err = capsys.readouterr().err
    assert "2 duplicate gold tool id(s) removed in 1 query" in err
    assert f"{path}:2 ('b': 2)" in err


@pytest.mark.parametrize(
    ("tool_id", "expected"),
    [
        (f"{TS}/iuc/fastqc/fastqc/0.73+galaxy0", f"{TS}/iuc/fastqc/fastqc"),
        (f"{TS}/iuc/fastqc/fastqc", f"{TS}/iuc/fastqc/fastqc"),  # already without version
        (f"{TS}/iuc/a/b/c/1.0", f"{TS}/iuc/a/b/c"),  # 7 segments: Galaxy drops the last one
        (
            "toolshed.g2.bx.psu.edu/view/iuc/fastqc/x/1.0",
            "toolshed.g2.bx.psu.edu/view/iuc/fastqc/x/1.0",
        ),
        (
            "testtoolshed.g2.bx.psu.edu/repos/iuc/f/f/1.0",
            "testtoolshed.g2.bx.psu.edu/repos/iuc/f/f/1.0",
        ),
        ("Cut1", "Cut1"),
        ("upload1", "upload1"),
    ],
)
def test_strip_version_follows_galaxys_rule(tool_id: str, expected: str) -> None:
    assert strip_version(tool_id) == expected
    assert normalise_tool_id("strip_version", tool_id) == expected


def test_normalise_id_is_public_for_run_readers() -> None:
    assert normalise_tool_id("lowercase", "Cut1") == "cut1"
    assert (
        normalise_tool_ids(["strip_version", "lowercase"], f"{TS}/IUC/X/X/1")
        == f"{TS.lower()}/iuc/x/x"
    )
    assert normalise_tool_ids([], "Cut1") == "Cut1"


def test_an_unknown_normaliser_name_is_a_config_error_listing_the_valid_ones() -> None:
    with pytest.raises(ConfigError) as err:
        normalise_tool_id("strip_versions", "Cut1")
    assert "unknown normaliser 'strip_versions'" in err.value.render()
    assert "valid normalisers: strip_version, lowercase" in err.value.render()


def test_an_unknown_normaliser_in_the_config_names_the_key_and_the_valid_ones() -> None:
    spec = DATASETS.get("galaxy")
    with pytest.raises(ConfigError) as err:
        configure(spec, {"path": "gold.jsonl", "normalise": ["lower_case"]}, "dataset")
    rendered = err.value.render()
    assert err.value.key == "dataset.normalise"
    assert rendered.startswith(
        "error: config key dataset.normalise: invalid settings for dataset 'galaxy': "
        "unknown normaliser 'lower_case'"
    )
    assert "valid normalisers: strip_version, lowercase" in rendered
    with pytest.raises(ValidationError, match="valid normalisers"):
        GalaxyDatasetConfig(path="gold.jsonl", normalise=["nope"])


def test_every_normaliser_is_listed_with_a_description() -> None:
    described = describe_normalisers()
    assert list(described) == list(NORMALISERS) == ["strip_version", "lowercase"]
    assert described["strip_version"].startswith("Drop the version segment of a Tool Shed id")
    field = GalaxyDatasetConfig.model_fields["normalise"]
    assert field.description is not None
    assert "strip_version: Drop the version" in field.description
    assert "lowercase: Lower-case" in field.description


def test_the_minimal_record_of_doc_003_loads_with_empty_text_and_no_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Galaxy's own gold has no text: that is its format, not a mistake. The texts come
    from a queries file (queries.path, joined by the core); the pipeline warns only when
    a retriever that reads the text would be asked an empty question."""
    path = gold_file(
        tmp_path,
        f'{{"id": "example-q01", "tools": ["{TS}/iuc/fastqc/fastqc/0.73+galaxy0"]}}',
    )
    golden = galaxy(path)
    assert golden.queries[0].text == ""
    assert golden.queries[0].metadata == {}
    assert capsys.readouterr().err == ""


def test_id_normaliser_hands_the_same_normalisers_to_the_pipeline(tmp_path: Path) -> None:
    path = gold_file(tmp_path, '{"id": "q", "tools": ["Cut1"]}')
    plain = GalaxyDataset(GalaxyDatasetConfig(path=str(path)), PluginContext())
    assert plain.id_normaliser() is None  # nothing to apply: the run is left as it is
    config = GalaxyDatasetConfig(path=str(path), normalise=["strip_version", "lowercase"])
    fn = GalaxyDataset(config, PluginContext()).id_normaliser()
    assert fn is not None
    assert fn(f"{TS}/IUC/Cut/Cut1/1.0") == f"{TS.lower()}/iuc/cut/cut1"
    assert fn(fn(f"{TS}/iuc/fastqc/fastqc/0.73")) == f"{TS}/iuc/fastqc/fastqc"  # idempotent


def test_text_field_can_be_renamed(tmp_path: Path) -> None:
    path = gold_file(tmp_path, '{"id": "q", "question": "trim reads", "tools": []}')
    golden = galaxy(path, text_field="question")
    assert golden.queries[0].text == "trim reads"
    assert golden.queries[0].metadata == {}


def test_integer_query_ids_become_strings(tmp_path: Path) -> None:
    path = gold_file(tmp_path, '{"id": 7, "query": "x", "tools": ["Cut1"]}')
    assert galaxy(path).queries[0].id == "7"


@pytest.mark.parametrize(
    ("lines", "line", "fragment"),
    [
        (['{"id": "a", "query": "x", "tools": []}', '{"id": "b", "tools": ['], 2, "not valid JSON"),
        (['{"id": "a", "query": "x"}'], 1, "no 'tools' field"),
        (['{"query": "x", "tools": []}'], 1, "no 'id' field"),
        (['{"id": "a", "query": "x", "tools": "Cut1"}'], 1, "'tools' must be a list"),
        (['{"id": "a", "query": "x", "tools": null}'], 1, "'tools' must be a list"),
        (['{"id": "a", "query": "x", "tools": ["Cut1", 3]}'], 1, "tools[1] of query 'a'"),
        (['{"id": "a", "query": "x", "tools": [""]}'], 1, "tools[0] of query 'a'"),
        (
            [
                '{"id": "a", "query": "x", "tools": []}',
                "",
                '{"id": "a", "query": "y", "tools": []}',
            ],
            3,
            "query id 'a' is duplicated (first at",
        ),
        (['{"id": false, "query": "x", "tools": []}'], 1, "field 'id'"),
        (['{"id": "a", "query": 5, "tools": []}'], 1, "'query' (the query text) must be a string"),
        (['["a", ["Cut1"]]'], 1, "must be a JSON object"),
    ],
)
def test_malformed_gold_names_file_and_line(
    tmp_path: Path, lines: list[str], line: int, fragment: str
) -> None:
    path = gold_file(tmp_path, *lines)
    with pytest.raises(DataError) as err:
        galaxy(path)
    rendered = err.value.render()
    assert f"{path}:{line}: " in rendered
    assert fragment in rendered


def test_the_duplicate_id_error_points_at_the_first_occurrence(tmp_path: Path) -> None:
    path = gold_file(
        tmp_path,
        '{"id": "a", "query": "x", "tools": []}',
        '{"id": "a", "query": "y", "tools": []}',
    )
    with pytest.raises(DataError, match=f"first at {path}:1"):
        galaxy(path)


def test_missing_and_empty_files(tmp_path: Path) -> None:
    with pytest.raises(DataError) as err:
        galaxy(tmp_path / "nope.jsonl")
    assert err.value.key == "dataset.path"
    with pytest.raises(DataError, match="no queries"):
        galaxy(gold_file(tmp_path, ""))


def test_gold_tools_absent_from_the_corpus_are_warned_about(
    capsys: pytest.CaptureFixture[str],
) -> None:
    corpus = Corpus.build("tools", [Document(id="Cut1", text="Cut columns from a table")])
    galaxy(GOLD, PluginContext(corpus=corpus), normalise=["strip_version"])
    err = capsys.readouterr().err
    assert "5 relevant gold tool id(s) are not in corpus 'tools'" in err


def test_a_tool_id_with_a_space_is_refused_at_its_line(tmp_path: Path) -> None:
    path = gold_file(tmp_path, '{"id": "g0", "tools": ["a"]}', '{"id": "g1", "tools": ["t 1"]}')
    with pytest.raises(DataError) as err:
        galaxy(path)
    assert err.value.line == 2
    assert "tools[0] of query 'g1': the id 't 1' contains whitespace" in err.value.message
