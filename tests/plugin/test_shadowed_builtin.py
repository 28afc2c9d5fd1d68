"""A distribution declaring a metric under a built-in's name (``nDCG``): the built-in
wins, as docs/plugins.md says, with a warning in a run and a ``broken:`` line in
``plugins list`` (before, every run measuring nDCG stopped with "two plugins")."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from evalframe.plugin.registry import METRICS
from tests.plugin.fakedist import installer

install = pytest.fixture(installer, name="install")
Install = Callable[[str, str, Mapping[str, str]], Path]

OURS = '''
import numpy as np
from evalframe.metrics import MetricParams, ScoreMatrix, metric

@metric("nDCG", params=MetricParams, k="optional", bounds=(0.0, 1.0))
def ndcg(m: ScoreMatrix, k, p):
    """Our nDCG."""
    return np.zeros(len(m.query_ids))
'''


def test_the_builtin_wins_and_the_other_is_said_to_be_shadowed(install: Install) -> None:
    root = install(
        "ef-m-ndcg",
        "[evalframe.metrics]\nnDCG = ef_m_ndcg.metric\n",
        {"ef_m_ndcg/__init__.py": "", "ef_m_ndcg/metric.py": OURS},
    )
    # a fresh process, as a run is: the built-in metrics load through their entry points
    script = (
        "from evalframe.metrics import parse_metric\n"
        "m = parse_metric('nDCG@10'); parse_metric('nDCG@5')\n"
        "print(m.definition.kernel.__module__)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), *sys.path])}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
    )
    assert done.stdout == "evalframe.metrics.builtin\n"
    assert done.stderr == (  # said once, however often the name is used
        "warning: the metric plugin 'nDCG' of ef-m-ndcg (ef_m_ndcg.metric) is shadowed by "
        "evalframe's built-in 'nDCG' and is not used; rename it there (a built-in name "
        "keeps its meaning wherever it is written)\n"
    )
    _, broken = METRICS.load_all()
    assert (
        "metric nDCG: entry point 'ef_m_ndcg.metric' of ef-m-ndcg is shadowed by evalframe's "
        "built-in 'nDCG'; rename the plugin"
    ) in broken
