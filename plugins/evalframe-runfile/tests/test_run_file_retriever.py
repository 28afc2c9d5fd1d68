"""run_file retriever: the contract, trec order, missing queries, and file errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from evalframe_runfile.retriever import RunFileConfig, RunFileRetriever

from evalframe.core.errors import DataError
from evalframe.plugin.protocols import PluginContext, Query
from evalframe.plugin.testing import RetrieverContract

RUN = """\
q1 Q0 d3 1 2.5 sys
q1 Q0 d1 2 1.0 sys
q1 Q0 d2 3 1.0 sys
q1 Q0 d9 4 0.5 sys
q2 Q0 d7 1 3.0 sys
"""


def make(tmp_path: Path, text: str = RUN) -> RunFileRetriever:
    path = tmp_path / "system.run"
    path.write_text(text)
    return RunFileRetriever(RunFileConfig(path=str(path)), PluginContext())


class TestRunFileContract(RetrieverContract):
    plugin_name = "run_file"

    @pytest.fixture
    def retriever(self, tmp_path: Path) -> RunFileRetriever:
        return make(tmp_path)

    @pytest.fixture
    def queries(self) -> list[Query]:
        return [Query(id="q1", text="a"), Query(id="q2", text="b"), Query(id="q3", text="c")]


def test_rankings_follow_trec_order_and_are_cut_at_k(tmp_path: Path) -> None:
    """d1 and d2 tie at 1.0; trec_eval puts the larger doc id first (d2 before d1)."""
    ranking = make(tmp_path).retrieve(Query(id="q1", text=""), 3)
    assert ranking is not None
    assert ranking.doc_ids == ("d3", "d2", "d1")


def test_query_absent_from_the_file_is_missing_not_empty(tmp_path: Path) -> None:
    assert make(tmp_path).retrieve(Query(id="q404", text=""), 5) is None


def test_a_short_line_is_reported_with_file_and_line(tmp_path: Path) -> None:
    with pytest.raises(DataError) as err:
        make(tmp_path, RUN + "q3 Q0 d1 1 0.3\n")
    assert err.value.line == 6
    assert "6 columns" in err.value.render()
    assert "system.run:6" in err.value.render()


def test_a_non_numeric_score_is_reported(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="score column") as err:
        make(tmp_path, "q1 Q0 d1 1 high sys\n")
    assert err.value.line == 1


def test_missing_file_is_a_data_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="run file not found"):
        RunFileRetriever(RunFileConfig(path=str(tmp_path / "nope.run")), PluginContext())


def _shipped(root: dict[str, object]) -> dict[str, object]:
    """The shipped retriever config, its interpolations resolved in ``root`` as Hydra would."""
    from omegaconf import OmegaConf

    path = Path(__file__).parents[1] / "evalframe_runfile" / "conf" / "retriever" / "run_file.yaml"
    cfg = OmegaConf.create({**root, "retriever": yaml.safe_load(path.read_text())})
    node = OmegaConf.to_container(cfg, resolve=True)["retriever"]  # type: ignore[index]
    assert isinstance(node, dict)
    return node


def test_example_config_validates() -> None:
    node = _shipped({})
    assert node.pop("name") == "run_file"
    RunFileConfig.model_validate({**node, "path": "x.run"})


def test_the_shipped_config_follows_the_dataset_and_the_duplicates_policy() -> None:
    """One setting for both sides: gold and run ids are normalised by dataset.normalise."""
    node = _shipped({})
    assert node["normalise"] == [] and node["duplicates"] == "error"
    node = _shipped(
        {
            "dataset": {"name": "galaxy", "normalise": ["strip_version"]},
            "metrics": {"policies": {"duplicates": "keep_first"}},
        }
    )
    assert node["normalise"] == ["strip_version"] and node["duplicates"] == "keep_first"
