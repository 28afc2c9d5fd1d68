"""metric_key: the hand-written table, MLflow's character set, and injectivity."""

from __future__ import annotations

import itertools
import re

import pytest
from evalframe_mlflow.keys import curve_key, metric_key, safe_segment

ALLOWED = re.compile(r"^[A-Za-z0-9_\-./ ]+$")


@pytest.mark.parametrize(
    ("canonical", "safe"),
    [
        ("RR", "RR"),
        # mlflow.evaluate's names where it has the metric (mlflow.metrics.ndcg_at_k ...)
        ("nDCG@10", "ndcg_at_10"),
        ("R@5", "recall_at_5"),
        ("P@5", "precision_at_5"),
        ("nDCG", "nDCG"),  # no cutoff: mlflow has no such metric
        ("nDCG@10.ci_low", "ndcg_at_10/ci_low"),
        ("R@100.n", "recall_at_100/n"),
        ("P(rel=2)@5", "P_rel_2__at_5"),
        ("R(view=files)", "R_view_files_"),
        ("R(view=files)@5", "R_view_files__at_5"),
        ("SetF(beta=0.5,rel=2)", "SetF_beta_0.5__rel_2_"),
        ("nDCG(gain=1:3;2:9)@10", "nDCG_gain_1-3--2-9__at_10"),
        ("IPrec@0.5", "IPrec_at_0.5"),
        ("RR@10.ci_low", "RR_at_10/ci_low"),
        ("SetF(beta=0.5).std", "SetF_beta_0.5_/std"),
        ("latency.p50", "latency.p50"),
        ("gates.passed", "gates.passed"),
        ("Abstained(threshold=-0.5)@5", "Abstained_threshold_-0.5__at_5"),
        ("x#y", "x-u23-y"),
    ],
)
def test_table(canonical: str, safe: str) -> None:
    assert metric_key(canonical) == safe


def canonical_names() -> list[str]:
    """Canonical names as Metric.__str__ writes them, over the built-in grammar."""
    names = ["P", "R", "RR", "AP", "nDCG", "Hit", "Rprec", "bpref", "Judged", "NumRet"]
    names += ["NumRel", "NumRelRet", "SetP", "SetR", "SetF", "IPrec", "11pt", "Abstained"]
    params: list[tuple[tuple[str, str], ...]] = [()]
    values = {
        "rel": ["1", "2", "3"],
        "gain": ["linear", "exp", "1:3;2:9", "1:3", "2:9"],
        "beta": ["0.5", "1.0", "2.0"],
        "rounding": ["round", "v9"],
        "threshold": ["0.0", "-0.5", "0.25"],
        "view": ["files", "docs"],
    }
    for key, vals in values.items():
        params += [((key, v),) for v in vals]
    for (k1, v1), (k2, v2) in itertools.combinations(
        [(k, v) for k, vals in values.items() for v in vals[:2]], 2
    ):
        if k1 != k2:
            params.append(((k1, v1), (k2, v2)))
    ks = [None, "1", "5", "10", "100", "0.5"]
    out = []
    for name, ps, k in itertools.product(names, params, ks):
        text = name
        if ps:
            text += "(" + ",".join(f"{a}={b}" for a, b in ps) + ")"
        if k is not None:
            text += f"@{k}"
        out.append(text)
    stats = [".std", ".n", ".ci_low", ".ci_high"]
    return out + [n + s for n in out for s in stats]


def test_injective_and_allowed_over_the_builtin_grammar() -> None:
    names = canonical_names()
    assert len(names) > 10_000
    keys: dict[str, str] = {}
    for name in names:
        key = metric_key(name)
        assert ALLOWED.match(key), (name, key)
        assert keys.setdefault(key, name) == name, f"{name!r} and {keys[key]!r} both -> {key!r}"


def test_curve_keys_follow_the_same_names() -> None:
    assert [curve_key(f) for f in ("R", "nDCG", "P", "RR", "P(rel=2)")] == [
        "recall_at_k",
        "ndcg_at_k",
        "precision_at_k",
        "RR_at_k",
        "P_rel_2__at_k",
    ]


@pytest.mark.parametrize("text", ["", ".", "..", "a/b", "easy"])
def test_safe_segment_is_one_valid_segment(text: str) -> None:
    seg = safe_segment(text)
    assert seg and "/" not in seg and seg not in (".", "..")
