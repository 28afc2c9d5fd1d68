"""The Cranfield experiments end to end, scored again by pytrec_eval.

Each experiment runs through the real CLI on the packaged collection. The
expected values come from pytrec_eval (trec_eval 9.0.8), run in a child process
(tests/metrics/pytrec_worker.py: pytrec_eval-terrier can hang after many
evaluations in one process) on the run.trec evalframe wrote and on qrels this
test reads from the packaged ``cranqrel`` itself: query number = position,
code -1 lines dropped, codes 1..4 as gains 4..1 (the experiments' stated grades).
The fused run is recomputed here from the two runs it combines, by the RRF
formula, before pytrec_eval scores it.

The dense run is the suite's only run of the dense retriever on a real corpus
(embedding 1400 abstracts takes one to several minutes on two busy cores), so
it and the fusion test, which fuses BM25 with that run's stored rankings (a
`run_file` component) instead of embedding again, are marked `extended`:
`make test-all` runs them, `make test` (and CI) skip them. The dense
retriever still runs end to end in CI on KnowCode's code corpus
(`plugins/evalframe-knowcode`), and the dense and fusion plugins' own tests.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from evalframe_trec.cranfield import PACKAGED
from omegaconf import OmegaConf

from tests.experiments.cli import ROOT, evalframe, read_json

pytest.importorskip("pytrec_eval")

pytestmark = pytest.mark.slow

WORKER = ROOT / "tests" / "metrics" / "pytrec_worker.py"
#: evalframe's metric -> pytrec_eval's result key (asked for as MEASURES)
TREC = {
    "AP": "map",
    "nDCG@10": "ndcg_cut_10",
    "P@10": "P_10",
    "R@100": "recall_100",
    "RR": "recip_rank",
}
MEASURES = ["map", "ndcg_cut.10", "P.10", "recall.100", "recip_rank"]
GRADES = {1: 4, 2: 3, 3: 2, 4: 1}  # cranqrel code 1 is the most relevant
#: The published-style BM25 figures issue #13 asks for (title + text, k1 1.2, b 0.75,
#: English stop words, Snowball stemmer), and the nearest any setting gets: see
#: docs/experiments.md#cranfield_bm25 for what each setting changes.
TARGET = {"AP": 0.300, "nDCG@10": 0.368, "P@10": 0.233, "R@100": 0.735, "RR": 0.538}
RRF_K, DEPTH = 60, 100

Run = dict[str, dict[str, float]]


def cranfield_qrels() -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for line in (PACKAGED / "cranqrel").read_text(encoding="ascii").splitlines():
        if not line.strip():
            continue
        position, doc, code = line.split()
        if int(code) == -1:  # the artifact line, one per query
            continue
        qrels.setdefault(str(int(position)), {})[str(int(doc))] = GRADES[int(code)]
    return qrels


def read_run(path: Path) -> Run:
    run: Run = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        qid, _, doc, _, score, _ = line.split()
        run.setdefault(qid, {})[doc] = float(score)
    return run


def in_trec_order(scores: dict[str, float]) -> list[str]:
    """trec_eval's order: score descending, then doc id descending."""
    return [d for d, _ in sorted(scores.items(), key=lambda p: (p[1], p[0]), reverse=True)]


def pytrec_means(qrels: dict[str, dict[str, int]], run: Run) -> dict[str, float]:
    """Mean of each measure over every judged query (a query without a ranking scores 0)."""
    payload = json.dumps([[qrels, run, MEASURES, 1]])
    proc = subprocess.run(
        [sys.executable, str(WORKER)], input=payload, text=True, capture_output=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    (per_query,) = map(json.loads, proc.stdout.splitlines())  # one line per case
    return {
        ours: sum(per_query.get(q, {}).get(theirs, 0.0) for q in qrels) / len(qrels)
        for ours, theirs in TREC.items()
    }


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cranfield")


@pytest.fixture(scope="module")
def qrels() -> dict[str, dict[str, int]]:
    return cranfield_qrels()


def run_experiment(work: Path, name: str, *overrides: str) -> tuple[Path, str]:
    out = work / name
    res = evalframe(work, f"+experiment={name}", f"hydra.run.dir={out}", *overrides, timeout=1200)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return out, res.stdout


@pytest.fixture(scope="module")
def bm25(work: Path) -> tuple[Path, str]:
    return run_experiment(work, "cranfield_bm25")


@pytest.fixture(scope="module")
def dense(work: Path) -> tuple[Path, str]:
    return run_experiment(work, "cranfield_dense")


def test_cranfield_bm25_gives_trec_evals_numbers(
    bm25: tuple[Path, str], qrels: dict[str, dict[str, int]]
) -> None:
    out, text = bm25
    assert len(qrels) == 225 and sum(len(j) for j in qrels.values()) == 1612
    expected = pytrec_means(qrels, read_run(out / "run.trec"))
    got = read_json(out / "metrics.json")
    assert got["queries"] == 225
    for m, value in expected.items():
        assert got[m] == pytest.approx(value, abs=1e-9), m
        assert got[f"{m}.n"] == 225
    # The reference's figures: MAP and MRR to three decimals; nDCG@10, P@10 and R@100
    # within 0.0015 (0.369, 0.234 and 0.734 against 0.368, 0.233 and 0.735). No
    # combination of loader and BM25 settings gives all five (docs/experiments.md).
    assert round(expected["AP"], 3) == TARGET["AP"]
    assert round(expected["RR"], 3) == TARGET["RR"]
    for m, target in TARGET.items():
        assert abs(expected[m] - target) < 0.0015, m
    assert {m: round(v, 3) for m, v in expected.items()} == {
        "AP": 0.300,
        "nDCG@10": 0.369,
        "P@10": 0.234,
        "R@100": 0.734,
        "RR": 0.538,
    }
    assert "225 queries (0 negative)" in text
    assert "AP       0.300 (±0.240)" in text
    assert "ties: trec_eval (equal scores rank by doc id, descending)" in text
    summary = read_json(out / "summary.json")
    provenance = summary["golden_set"]["provenance"]
    assert provenance["grades"] == {"1": 4, "2": 3, "3": 2, "4": 1}
    assert provenance["artifact_lines"] == 225 and provenance["query_ids"] == "position"


@pytest.mark.extended  # two cores for two minutes; the knowcode and dense plugin tests embed too
def test_cranfield_dense_gives_trec_evals_numbers(
    dense: tuple[Path, str], qrels: dict[str, dict[str, int]]
) -> None:
    out, text = dense
    expected = pytrec_means(qrels, read_run(out / "run.trec"))
    got = read_json(out / "metrics.json")
    for m, value in expected.items():
        assert got[m] == pytest.approx(value, abs=1e-9), m
    # docs/experiments.md's figures; a CPU with other float kernels may move a near tie
    documented = {"AP": 0.321, "nDCG@10": 0.382, "P@10": 0.247, "R@100": 0.772, "RR": 0.543}
    for m, value in documented.items():
        assert expected[m] == pytest.approx(value, abs=0.002), m
    assert "retriever dense" in text
    assert list((out.parent / ".cache" / "dense").glob("*/embeddings.npy"))  # cached


@pytest.mark.extended  # fuses the dense run above; the fusion plugin's own tests fuse in CI
def test_cranfield_fusion_is_reciprocal_rank_fusion_of_the_two(
    work: Path,
    bm25: tuple[Path, str],
    dense: tuple[Path, str],
    qrels: dict[str, dict[str, int]],
) -> None:
    stored = dense[0] / "run.trec"
    out, text = run_experiment(
        work,
        "cranfield_fusion",
        "~retriever.retrievers.dense",  # the dense component, replaced by its stored run
        f"+retriever.retrievers.dense={{name: run_file, path: '{stored}'}}",
    )
    sparse, dense_run = read_run(bm25[0] / "run.trec"), read_run(stored)
    fused: Run = {}
    for qid in qrels:
        scores: dict[str, float] = {}
        for run in (sparse, dense_run):
            for rank, doc in enumerate(in_trec_order(run.get(qid, {}))[:DEPTH], 1):
                scores[doc] = scores.get(doc, 0.0) + 1 / (RRF_K + rank)
        top = in_trec_order(scores)[:DEPTH]
        fused[qid] = {d: scores[d] for d in top}
    written = read_run(out / "run.trec")
    assert {q: in_trec_order(r) for q, r in written.items()} == {
        q: in_trec_order(r) for q, r in fused.items()
    }
    expected = pytrec_means(qrels, fused)
    got = read_json(out / "metrics.json")
    for m, value in expected.items():
        assert got[m] == pytest.approx(value, abs=1e-9), m
    documented = {"AP": 0.348, "nDCG@10": 0.418, "P@10": 0.267, "R@100": 0.785, "RR": 0.581}
    for m, value in documented.items():
        assert expected[m] == pytest.approx(value, abs=0.002), m
    assert "retriever fusion" in text


def test_the_three_experiments_judge_the_same_collection_the_same_way() -> None:
    def settings(name: str) -> dict[str, Any]:
        raw = OmegaConf.to_container(OmegaConf.load(ROOT / "conf" / "experiment" / f"{name}.yaml"))
        assert isinstance(raw, dict)
        # the metrics are one pack, conf/metrics/cranfield.yaml, that each picks
        packs = [d for d in raw["defaults"] if isinstance(d, dict) and "override /metrics" in d]
        return {k: raw[k] for k in ("dataset", "depth", "slices", "report")} | {
            "include_title": raw["corpus"]["include_title"],
            "metrics": packs,
        }

    bm25 = settings("cranfield_bm25")
    assert bm25["metrics"] == [{"override /metrics": "cranfield"}]
    assert settings("cranfield_dense") == bm25 == settings("cranfield_fusion")
    fusion = OmegaConf.load(ROOT / "conf" / "experiment" / "cranfield_fusion.yaml")
    bm25_retriever = OmegaConf.load(ROOT / "conf" / "experiment" / "cranfield_bm25.yaml").retriever
    assert fusion.retriever.retrievers.bm25 == {"name": "bm25", **bm25_retriever}
