"""A metric shipped by a third-party distribution works like a built-in.

The plugin lives in a temporary folder with its own dist-info, outside the
core; it is found through the ``evalframe.metrics`` entry point, named in YAML
with parameters and @k, and used by a real run.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalframe.metrics import Policies, evaluate, parse_metric
from evalframe.plugin.registry import METRICS
from tests.conftest import Project

PLUGIN = '''
"""A third party's metric: reward finding a relevant doc, discounted by a factor."""
import numpy as np
from pydantic import Field
from evalframe.metrics import MetricParams, metric


class DecayParams(MetricParams):
    base: float = Field(0.5, gt=0, lt=1, description="weight lost per rank")


@metric("DecayHit", params=DecayParams, k="required")
def decay_hit(m, k, p):
    """base ** (rank - 1) of the first relevant doc within k, else 0."""
    rel = m.relevant(1, k)
    first = rel.argmax(axis=1)
    return np.where(rel.any(axis=1), p.base ** first, 0.0)
'''


@pytest.fixture
def third_party(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    site = tmp_path / "site"
    dist = site / "decay_metric-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: decay-metric\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[evalframe.metrics]\nDecayHit = decay_metric\n")
    (site / "decay_metric.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(site))
    yield site
    sys.modules.pop("decay_metric", None)


def test_discovered_parsed_and_computed_like_a_builtin(third_party: Path) -> None:
    with METRICS.scoped():
        m = parse_metric("DecayHit(base=0.25)@3")
        assert str(m) == "DecayHit(base=0.25)@3"
        assert str(parse_metric("DecayHit(base=0.5)@3")) == "DecayHit@3"  # default dropped
        scores = evaluate([m], {"q": {"b": 1}}, {"q": [("a", 2.0), ("b", 1.0)]}, Policies())
        assert scores.values[m][0] == 0.25**1  # first relevant at rank 2


def test_used_by_name_in_a_real_run(
    third_party: Path, project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join([str(third_party), os.environ.get("PYTHONPATH", "")])
    )
    res = project.run(
        *project.data_args(),
        "metrics.measures=[RR,DecayHit@5]",
        f"hydra.run.dir={project.root / 'out'}",
    )
    assert res.code == 0, res.stderr
    metrics = json.loads((project.root / "out" / "metrics.json").read_text())
    # q1 and q2 have their doc at rank 1 (1.0), q3 at rank 1 too; the negative q4 is skipped
    assert metrics["DecayHit@5.n"] == 3
    assert "DecayHit@5" in res.stdout
