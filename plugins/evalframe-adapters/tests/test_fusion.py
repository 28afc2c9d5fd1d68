"""fusion retriever: hand-computed RRF, CombSUM, CombMNZ and weighted scores; config errors."""

from __future__ import annotations

import math
from pathlib import Path
from statistics import mean, pstdev
from typing import Any

import pytest
import yaml
from evalframe_adapters.fusion import FusionConfig, FusionRetriever, normalise_scores

from evalframe.core.errors import ConfigError, PluginError
from evalframe.plugin.protocols import PluginContext, Query
from evalframe.plugin.testing import RetrieverContract

RUN_A = "q1 Q0 d1 1 3.0 a\nq1 Q0 d2 2 2.0 a\nq1 Q0 d3 3 1.0 a\nq2 Q0 d9 1 5.0 a\n"
RUN_B = "q1 Q0 d4 1 0.9 b\nq1 Q0 d5 2 0.5 b\nq1 Q0 d1 3 0.3 b\n"
USERLAND = str(Path(__file__).parent / "userland")


@pytest.fixture
def runs(tmp_path: Path) -> dict[str, dict[str, Any]]:
    (tmp_path / "a.run").write_text(RUN_A)
    (tmp_path / "b.run").write_text(RUN_B)
    return {
        "a": {"name": "run_file", "path": str(tmp_path / "a.run")},
        "b": {"name": "run_file", "path": str(tmp_path / "b.run")},
    }


def fused(runs: dict[str, Any], qid: str = "q1", k: int = 10, **settings: Any) -> Any:
    r = FusionRetriever(FusionConfig(retrievers=runs, **settings), PluginContext())
    ranking = r.retrieve(Query(id=qid, text="x"), k)
    return None if ranking is None else dict(ranking.pairs())


def ordered(runs: dict[str, Any], **settings: Any) -> list[str]:
    return list(fused(runs, **settings))


class TestFusionContract(RetrieverContract):
    plugin_name = "fusion"

    @pytest.fixture
    def retriever(self, runs: dict[str, Any]) -> FusionRetriever:
        return FusionRetriever(FusionConfig(retrievers=runs), PluginContext())

    @pytest.fixture
    def queries(self) -> list[Query]:
        return [Query(id="q1", text=""), Query(id="q2", text=""), Query(id="q3", text="")]


def test_rrf(runs: dict[str, Any]) -> None:
    scores = fused(runs, method="rrf")
    assert scores == pytest.approx(
        {
            "d1": 1 / (60 + 1) + 1 / (60 + 3),
            "d4": 1 / (60 + 1),
            "d2": 1 / (60 + 2),
            "d5": 1 / (60 + 2),
            "d3": 1 / (60 + 3),
        }
    )
    # d2 and d5 tie: trec_eval's rule puts the larger doc id first.
    assert list(scores) == ["d1", "d4", "d5", "d2", "d3"]
    assert fused(runs, rrf_k=0)["d1"] == pytest.approx(1 / 1 + 1 / 3)


def test_weighted_rrf_and_depth(runs: dict[str, Any]) -> None:
    scores = fused(runs, weights={"a": 2.0})
    assert scores["d1"] == pytest.approx(2 / (60 + 1) + 1 / (60 + 3))
    shallow = fused(runs, depth=1)
    assert shallow == pytest.approx({"d4": 1 / 61, "d1": 1 / 61})
    per_component = fused(runs, depth={"a": 1})  # b gets k
    assert per_component["d1"] == pytest.approx(1 / 61 + 1 / 63)
    assert "d2" not in per_component


def test_combsum_minmax(runs: dict[str, Any]) -> None:
    # a: (s - 1) / (3 - 1);  b: (s - 0.3) / (0.9 - 0.3)
    scores = fused(runs, method="combsum")
    assert scores == pytest.approx(
        {
            "d1": (3 - 1) / 2 + (0.3 - 0.3) / 0.6,
            "d4": (0.9 - 0.3) / 0.6,
            "d5": (0.5 - 0.3) / 0.6,
            "d2": (2 - 1) / 2,
            "d3": 0.0,
        }
    )
    assert list(scores) == ["d4", "d1", "d2", "d5", "d3"]  # d4 and d1 tie at 1.0


def test_combmnz_multiplies_by_the_number_of_hits(runs: dict[str, Any]) -> None:
    scores = fused(runs, method="combmnz")
    assert scores["d1"] == pytest.approx((1.0 + 0.0) * 2)
    assert scores["d4"] == pytest.approx(1.0 * 1)
    assert ordered(runs, method="combmnz")[0] == "d1"


def test_weighted_without_normalisation(runs: dict[str, Any]) -> None:
    scores = fused(runs, method="weighted", weights={"a": 2.0, "b": 1.0}, normalise="none")
    assert scores == pytest.approx(
        {"d1": 2 * 3.0 + 1 * 0.3, "d2": 2 * 2.0, "d3": 2 * 1.0, "d4": 0.9, "d5": 0.5}
    )


def test_combsum_zscore(runs: dict[str, Any]) -> None:
    a, b = [3.0, 2.0, 1.0], [0.9, 0.5, 0.3]
    za = {d: (s - mean(a)) / pstdev(a) for d, s in zip(["d1", "d2", "d3"], a, strict=True)}
    zb = {d: (s - mean(b)) / pstdev(b) for d, s in zip(["d4", "d5", "d1"], b, strict=True)}
    scores = fused(runs, method="combsum", normalise="zscore")
    assert scores["d1"] == pytest.approx(za["d1"] + zb["d1"])
    assert scores["d4"] == pytest.approx(zb["d4"])
    assert scores["d3"] == pytest.approx(za["d3"])


def test_normalise_edge_cases() -> None:
    assert normalise_scores([2.0, 2.0], "minmax") == [1.0, 1.0]
    assert normalise_scores([2.0, 2.0], "zscore") == [0.0, 0.0]
    assert normalise_scores([], "minmax") == []
    assert all(math.isfinite(x) for x in normalise_scores([1e-300, 0.0], "zscore"))


def test_missing_in_one_component_uses_the_others_and_in_all_is_missing(
    runs: dict[str, Any],
) -> None:
    assert fused(runs, "q2") == pytest.approx({"d9": 1 / 61})
    assert fused(runs, "q3") is None


def test_components_can_be_any_retriever(runs: dict[str, Any]) -> None:
    mine = {"name": "python", "target": "efa_sample:search", "python_path": [USERLAND]}
    scores = fused({"a": runs["a"], "mine": mine}, "q1")
    assert scores is not None and "d1" in scores


def test_component_errors_name_their_key(runs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match=r"retriever\.retrievers\.b\.pathh: unknown key"):
        fused({**runs, "b": {"name": "run_file", "pathh": "x"}})
    with pytest.raises(PluginError, match="no retriever named 'bm26'") as err:
        fused({**runs, "b": {"name": "bm26"}})
    assert err.value.key == "retriever.retrievers.b.name"


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"retrievers": {}}, "at least one component"),
        ({"retrievers": {"a": {"path": "x"}}}, "component 'a' needs a name"),
        ({"weights": {"c": 1.0}}, "weights for unknown components: c"),
        ({"method": "weighted"}, "method weighted needs weights"),
        ({"depth": {"c": 3}}, "depth for unknown components: c"),
        ({"depth": 0}, "depth must be at least 1"),
    ],
)
def test_config_checks(runs: dict[str, Any], settings: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        FusionConfig.model_validate({"retrievers": runs, **settings})


def test_example_config_validates(runs: dict[str, Any]) -> None:
    path = Path(__file__).parents[1] / "evalframe_adapters" / "conf" / "retriever" / "fusion.yaml"
    node = yaml.safe_load(path.read_text())
    assert node.pop("name") == "fusion"
    FusionConfig.model_validate({**node, "retrievers": runs})
