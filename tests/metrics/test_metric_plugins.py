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

import numpy as np
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


def test_a_value_outside_the_declared_bounds_is_the_kernels_fault() -> None:
    """A kernel declaring (0, 1) that gives 95 (a percentage) passed gates that were told
    `>= 0.9` while the range check advised writing 0.9 for 90: refused, naming it."""
    from evalframe.core.errors import PluginError
    from evalframe.metrics import metric

    with METRICS.scoped():

        @metric("Percent", k="required", bounds=(0.0, 1.0))
        def percent(m, k, p):  # type: ignore[no-untyped-def]  # a test's throwaway kernel
            return m.relevant(1, k).any(axis=1) * 100.0

        with pytest.raises(PluginError) as err:
            evaluate([parse_metric("Percent@3")], {"q": {"b": 1}}, {"q": [("b", 1.0)]}, Policies())
        assert "metric 'Percent@3' gave a value of 100, outside the range it declares" in (
            err.value.message
        )
        assert __name__ in (err.value.hint or "")


def test_a_value_a_hair_past_one_from_rounding_is_within_bounds() -> None:
    """nDCG's DCG and ideal DCG are summed in different orders: 1 + 2e-16 is rounding."""
    from evalframe.metrics import metric

    with METRICS.scoped():

        @metric("Hair", k="required", bounds=(0.0, 1.0))
        def hair(m, k, p):  # type: ignore[no-untyped-def]  # a test's throwaway kernel
            return np.full(m.labels.shape[0], 1.0 + 2e-16)

        scores = evaluate(
            [parse_metric("Hair@3")], {"q": {"b": 1}}, {"q": [("b", 1.0)]}, Policies()
        )
        assert scores.values[parse_metric("Hair@3")][0] == 1.0 + 2e-16


def test_a_kernel_that_writes_into_the_matrix_is_named_and_changes_nothing() -> None:
    """A kernel editing m.labels in place (through a view) changed every metric computed
    after it: R@5 0.742 became 0. The matrix is read-only; the write fails in that kernel."""
    from evalframe.core.errors import PluginError
    from evalframe.metrics import metric

    with METRICS.scoped():

        @metric("Scribble", k="required", bounds=(0.0, 1.0))
        def scribble(m, k, p):  # type: ignore[no-untyped-def]  # a test's throwaway kernel
            top = m.labels[:, :k]
            top[:] = 0  # the bug: a view of the shared labels
            return np.zeros(m.labels.shape[0])

        measures = [parse_metric("Scribble@2"), parse_metric("RR")]
        with pytest.raises(PluginError) as err:
            evaluate(measures, {"q": {"b": 1}}, {"q": [("b", 1.0)]}, Policies())
        assert "metric 'Scribble@2' wrote into the score matrix" in err.value.message
        # the same run without it: RR of a relevant document at rank 1 is 1
        rr = evaluate([measures[1]], {"q": {"b": 1}}, {"q": [("b", 1.0)]}, Policies())
        assert rr.values[measures[1]][0] == 1.0
