"""Conformance with trec_eval (pytrec_eval-terrier as the oracle) on generated data.

Hypothesis generates qrels and runs with ties, float32-equal scores, graded and
negative labels, queries missing on either side, rankings shorter than k, and
numeric and non-numeric ids. Every per-query value must agree within 1e-9.

pytrec_eval runs in a child process (see pytrec_worker.py): a batch that
hangs is retried one case per process, and a case that still hangs is skipped
and counted, since the oracle's own bug must not fail our suite.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalframe.metrics import Policies, evaluate, parse_metrics

pytest.importorskip("pytrec_eval")

WORKER = Path(__file__).with_name("pytrec_worker.py")
KS = (1, 3, 5, 10)
TREC_MEASURES = [
    *(
        f"{name}.{','.join(map(str, KS))}"
        for name in ("P", "recall", "map_cut", "ndcg_cut", "success")
    ),
    "recip_rank",
    "map",
    "ndcg",
    "Rprec",
    "bpref",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "set_P",
    "set_recall",
    "set_F",
    "iprec_at_recall",
    "11pt_avg",
]
RANKED = {
    **{f"P@{k}": f"P_{k}" for k in KS},
    **{f"R@{k}": f"recall_{k}" for k in KS},
    **{f"AP@{k}": f"map_cut_{k}" for k in KS},
    **{f"Hit@{k}": f"success_{k}" for k in KS},
    "RR": "recip_rank",
    "AP": "map",
    "Rprec": "Rprec",
    "bpref": "bpref",
    "NumRel": "num_rel",
    "NumRelRet": "num_rel_ret",
    "SetP": "set_P",
    "SetR": "set_recall",
    "SetF": "set_F",
    **{f"IPrec@{r / 10}": f"iprec_at_recall_{r / 10:.2f}" for r in range(11)},
    "11pt": "11pt_avg",
}
GRADED = {**{f"nDCG@{k}": f"ndcg_cut_{k}" for k in KS}, "nDCG": "ndcg", "NumRet": "num_ret"}

DOCS = ("1", "2", "10", "d1", "d2", "D10", "doc-a", "é", "7x")
QUERIES = ("1", "2", "10", "q1", "q-2")
# 0.1 and 0.1 + 1e-12 are equal in float32: trec_eval ties them, and so do we.
SCORES = (0.0, 0.5, 1.0, 2.5, -1.0, 0.1, 0.1 + 1e-12, 3.0000001)


@st.composite
def case(draw: st.DrawFn) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]], int]:
    queries = draw(st.lists(st.sampled_from(QUERIES), unique=True, min_size=1, max_size=4))
    qrels = {
        q: draw(st.dictionaries(st.sampled_from(DOCS), st.integers(-1, 3), min_size=1, max_size=7))
        for q in queries
    }
    run_queries = draw(st.lists(st.sampled_from(QUERIES), unique=True, max_size=5))
    run = {
        q: draw(st.dictionaries(st.sampled_from(DOCS), st.sampled_from(SCORES), max_size=9))
        for q in run_queries
    }
    run = {q: r for q, r in run.items() if r}  # trec_eval cannot express an empty ranking
    return qrels, run, draw(st.integers(1, 3))


def run_oracle(batch: list[list[Any]], timeout: float = 2) -> list[dict[str, Any] | None]:
    """pytrec_eval's result for each case of ``batch``, None for a case it hung or
    crashed on. A batch takes ~0.2 s; the worker prints each result as it finishes,
    so a hang costs one ``timeout`` and one more process for the cases after it."""
    results: list[dict[str, Any] | None] = []
    while len(results) < len(batch):
        rest = batch[len(results) :]
        with tempfile.TemporaryFile("w+") as out:
            proc = subprocess.Popen(
                [sys.executable, str(WORKER)],
                stdin=subprocess.PIPE,
                stdout=out,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            try:
                proc.communicate(json.dumps(rest), timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            out.seek(0)
            done = [json.loads(line) for line in out.read().splitlines() if line.endswith("}")]
        results.extend(done[: len(rest)])
        if len(results) < len(batch):
            results.append(None)  # the oracle hung or crashed on this very case
    return results


@settings(
    max_examples=3,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.data_too_large, HealthCheck.too_slow],
)
@given(st.lists(case(), min_size=40, max_size=40))
def test_every_measure_agrees_with_trec_eval_query_by_query(cases: list[Any]) -> None:
    batch = [[qrels, run, TREC_MEASURES, rel] for qrels, run, rel in cases]
    results = run_oracle(batch)
    skipped = sum(r is None for r in results)
    assert skipped <= len(batch) // 5, f"the oracle failed on {skipped} of {len(batch)} cases"
    for (qrels, run, rel), theirs in zip(cases, results, strict=True):
        if theirs is None:
            continue
        names = {**{_with_rel(n, rel): t for n, t in RANKED.items()}, **GRADED}
        metrics = parse_metrics(list(names))
        ours = evaluate(
            [_v9(m) for m in metrics],
            qrels,
            {q: list(r.items()) for q, r in run.items()},
            Policies(no_relevant="zero", missing_query="skip"),
        )
        by_name = {str(m): v for m, v in zip(names, ours.values.values(), strict=True)}
        for name, trec_name in names.items():
            for i, q in enumerate(ours.query_ids):
                if q not in theirs:
                    continue  # trec_eval skips queries absent from the run
                assert by_name[name][i] == pytest.approx(theirs[q][trec_name], abs=1e-9), (
                    f"{name} vs trec_eval {trec_name} on query {q!r} (rel={rel}): "
                    f"qrels={qrels[q]} run={run.get(q)}"
                )


def _with_rel(name: str, rel: int) -> str:
    if rel == 1:
        return name
    head, at, k = name.partition("@")
    return f"{head}(rel={rel}){at}{k}"


def _v9(metric: Any) -> Any:
    """pytrec_eval embeds trec_eval 9.0.8, whose IPrec/11pt round recall levels its own way."""
    if metric.name not in ("IPrec", "11pt"):
        return metric
    from evalframe.metrics import parse_metric

    params = dict(metric.params) | {"rounding": "v9"}
    inner = ",".join(f"{k}={v}" for k, v in sorted(params.items()))
    return parse_metric(
        f"{metric.name}({inner})" + (f"@{metric.k}" if metric.k is not None else "")
    )
