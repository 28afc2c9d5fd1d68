"""The plugins through the real CLI, and the shipped config files against the config models."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import evalframe_trec
import pytest
from evalframe_trec.beir import BeirCorpusConfig, BeirDatasetConfig
from evalframe_trec.cranfield import CranfieldCorpusConfig, CranfieldDatasetConfig
from evalframe_trec.trec import TrecDatasetConfig
from omegaconf import OmegaConf
from pydantic import BaseModel

from tests import forkrun

CONF = Path(evalframe_trec.__file__).parent / "conf"
TREC_DATA = Path(__file__).parent / "data" / "trec"


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str


def run_cli(root: Path, *args: str, timeout: float = 120) -> Result:
    """Run ``python -m evalframe`` in ``root``, as a user would (as tests/conftest.py does)."""
    env = {
        **os.environ,
        "EVALFRAME_CACHE_DIR": str(root / ".cache"),
        "PYTHONIOENCODING": "utf-8",
    }
    proc = forkrun.run(args, cwd=root, env=env, timeout=timeout)  # a process of its own
    return Result(proc.returncode, proc.stdout, proc.stderr)


@pytest.mark.parametrize(
    ("group", "name", "model", "required"),
    [
        ("dataset", "trec", TrecDatasetConfig, {"topics": "t", "qrels": "q"}),
        ("dataset", "beir", BeirDatasetConfig, {"path": "p"}),
        ("corpus", "beir", BeirCorpusConfig, {"path": "p"}),
        ("dataset", "cranfield", CranfieldDatasetConfig, {}),
        ("corpus", "cranfield", CranfieldCorpusConfig, {}),
    ],
)
def test_config_files_list_the_model_defaults(
    group: str, name: str, model: type[BaseModel], required: dict[str, Any]
) -> None:
    raw = OmegaConf.to_container(OmegaConf.load(CONF / group / f"{name}.yaml"))
    assert isinstance(raw, dict)
    assert raw.pop("name") == name
    missing = {k for k, v in raw.items() if v == "???"}
    assert missing == set(required), "exactly the required paths are ???"
    raw.update(required)
    assert model.model_validate(raw) == model.model_validate(required)
    assert set(raw) == set(model.model_fields), "every setting is listed in the YAML"
    assert all(f.description for f in model.model_fields.values())


@pytest.mark.slow
def test_bm25_on_the_packaged_cranfield_collection(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = run_cli(
        tmp_path,
        "dataset=cranfield",
        "corpus=cranfield",
        "retriever=bm25",
        "depth=100",
        "metrics.measures=[nDCG@10,AP,P@10,R@100,RR]",
        f"hydra.run.dir={out}",
    )
    assert result.code == 0, result.stderr
    assert "225 queries (0 negative)" in result.stdout
    assert "225 code -1 line(s)" in result.stderr
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["queries"] == 225
    assert metrics["AP.n"] == 225  # every query judged, none skipped
    # BM25 (Lucene variant, Snowball stemming, English stopwords) gives MAP 0.289 at
    # depth 100 with all four grades relevant; a loose range guards against gross errors
    # such as numbering queries by .I (MAP near 0) or dropping real judgments.
    assert 0.25 <= metrics["AP"] <= 0.45
    assert 0.30 <= metrics["nDCG@10"] <= 0.50
    summary = json.loads((out / "summary.json").read_text())
    assert summary["golden_set"]["provenance"]["format"] == "cranfield"


@pytest.mark.slow
def test_trec_topics_and_qrels_scored_from_a_run_file(tmp_path: Path) -> None:
    run = tmp_path / "run.trec"
    run.write_text(
        "401 Q0 FT911-0040 1 3.0 sys\n"
        "401 Q0 FT911-3012 2 2.0 sys\n"
        "402 Q0 FT934-5418 1 5.0 sys\n"
        "402 Q0 FBIS3-10082 2 4.0 sys\n"
    )
    out = tmp_path / "out"
    result = run_cli(
        tmp_path,
        "dataset=trec",
        f"dataset.topics={TREC_DATA / 'topics.trec'}",
        f"dataset.qrels={TREC_DATA / 'qrels.txt'}",
        "corpus=none",
        "retriever=run_file",
        f"retriever.path={run}",
        "metrics.measures=[RR,P@2]",
        f"hydra.run.dir={out}",
    )
    assert result.code == 0, result.stderr
    assert "1 topic(s) have no judgments" in result.stderr  # 404, a negative example
    metrics = json.loads((out / "metrics.json").read_text())
    # 401: relevant at ranks 1 and 2; 402: judged 0 then relevant; 403: missing -> 0
    assert metrics["RR"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert metrics["P@2"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert metrics["RR.n"] == 3


@pytest.mark.slow
def test_a_bad_setting_is_a_config_error_naming_the_key(tmp_path: Path) -> None:
    result = run_cli(tmp_path, "dataset=cranfield", "corpus=cranfield", "dataset.minus_one=five")
    assert result.code == 2
    assert "dataset.minus_one" in result.stderr


@pytest.mark.slow
def test_beir_folder_with_bm25_and_the_self_match_policy(tmp_path: Path) -> None:
    """The mini BEIR folder: q1 -> d1, q2 -> d2, 4 -> 3 (label 2); each query's text
    shares its key words with its document, so BM25 ranks it first. Doc "q3" has
    the id of query q3 (unjudged in test.tsv, so q3 is not loaded by default)."""
    beir = Path(__file__).parent / "data" / "beir" / "mini"
    out = tmp_path / "out"
    result = run_cli(
        tmp_path,
        "dataset=beir",
        f"dataset.path={beir}",
        "corpus=beir",
        f"corpus.path={beir}",
        "retriever=bm25",
        "metrics.measures=[RR,nDCG@10]",
        "metrics.policies.drop_self_matches=true",
        f"hydra.run.dir={out}",
    )
    assert result.code == 0, result.stderr
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["RR"] == 1.0 and metrics["RR.n"] == 3
    summary = json.loads((out / "summary.json").read_text())
    assert summary["policies"]["drop_self_matches"] is True
