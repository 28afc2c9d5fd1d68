"""The sweep's page (``report.html`` in the sweep folder) names its metrics as the sweep's
terminal table and each job's own page do: by ``metrics.labels`` (ADK's Recall@1 for
Hit@1), the canonical name beside it, and by the canonical name alone where the jobs
disagree on a label. The labels expected are read from the experiment's config."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
import yaml

from evalframe.app.confdirs import core_conf_dir
from evalframe.app.hydra_app import run_hydra
from evalframe.assess.runfolder import SweepFolder
from evalframe.report.sweep import render_sweep
from tests.conftest import Project

#: ADK's metrics pack, as `+experiment=adk` composes it (conf/metrics/adk.yaml)
ADK = yaml.safe_load((core_conf_dir() / "metrics" / "adk.yaml").read_text())


def _sweep(project: Project, *overrides: str, metrics: str = "adk") -> Path:
    """Run a real sweep (Hydra's basic launcher, in this process) on the tiny project, of
    ADK's metrics by default, every measure in the headline set; return its folder."""
    pack = yaml.safe_load((core_conf_dir() / "metrics" / f"{metrics}.yaml").read_text())
    sweep_dir = project.root / "sweep"
    code = run_hydra(
        [
            "-m",
            *project.data_args(),
            "report.html=true",  # the sweep's page comes with the jobs' own pages
            "tracking=none",
            "stats.bootstrap=0",
            f"metrics={metrics}",
            f"metrics.headline=[{','.join(pack['measures'])}]",
            f"hydra.sweep.dir={sweep_dir}",
            *overrides,
        ]
    )
    assert code == 0
    return sweep_dir


@pytest.fixture
def sweep_project(project: Project, monkeypatch: pytest.MonkeyPatch) -> Project:
    monkeypatch.chdir(project.root)
    monkeypatch.setenv("EVALFRAME_CACHE_DIR", str(project.root / ".cache"))
    return project


def _heads(page: str) -> list[str]:
    """The runs' table's column heads, as a reader sees them (tags dropped)."""
    table = page[page.index('<table class="runs">') :]
    head = table[: table.index("</thead>")]
    return [html.unescape(re.sub(r"<[^>]+>", "", th)) for th in re.findall(r"<th>(.*?)</th>", head)]


def test_the_sweep_page_heads_its_columns_with_the_jobs_labels(sweep_project: Project) -> None:
    sweep_dir = _sweep(sweep_project, "depth=5,6")
    page = (sweep_dir / SweepFolder.REPORT_HTML).read_text()
    labels = ADK["labels"]
    # each metric under its label, the canonical name beside it (as on a job's own page)
    assert _heads(page) == [
        "run",
        "folder",
        "queries",
        *(f"{labels[m]} ({m})" for m in ADK["measures"]),
        "gates",
    ]
    hit1 = labels["Hit@1"]
    assert f'<th>{hit1} <span class="muted">(<code>Hit@1</code>)</span></th>' in page
    # the terminal table of the same jobs heads its columns alike
    terminal = render_sweep(sweep_dir, SweepFolder(sweep_dir).jobs(), width=200)
    assert all(labels[m] in terminal.splitlines()[1].split() for m in ADK["measures"])
    # the jobs have no gate: neither the page nor the terminal calls them passed (they said
    # "✓ 2 of 2 run(s) passed every required gate" and "2 passed their gates")
    assert '<div class="verdict none">2 run(s), none with a required gate: nothing was' in page
    assert "2 jobs, 0 passed their gates, 2 had no required gate (nothing checked)" in terminal
    # the per-slice bars of the first metric: axis title (the SVG's label too) and caption
    assert f'aria-label="per-slice bars: mean {hit1} (whisker: bootstrap CI)' in page
    assert f"Per-slice means of {hit1} (<code>Hit@1</code>)" in page
    # the curves' panel titles, as a job's page draws them: ADK's Recall@k for Hit@k
    curves = page[page.index('id="plot-curves"') :]
    aria = re.search(r'aria-label="metric at k: ([^"]*) against k"', curves)
    assert aria is not None and f"{hit1.split('@')[0]}@k (Hit@k)" in aria.group(1)


def test_a_label_the_jobs_disagree_on_gives_way_to_the_canonical_name(
    sweep_project: Project,
) -> None:
    """Jobs that label Hit@1 differently (a swept label, merged into ADK's others): no one
    label says what every job called it, so its column keeps the canonical name."""
    sweep_dir = _sweep(sweep_project, "metrics.labels={Hit@1: Top1},{Hit@1: First1}")
    jobs = SweepFolder(sweep_dir).jobs()
    assert [j.summary["labels"]["Hit@1"] for j in jobs] == ["Top1", "First1"]
    page = (sweep_dir / SweepFolder.REPORT_HTML).read_text()
    labels = ADK["labels"]
    heads = _heads(page)
    assert heads[3] == "Hit@1" and "<th>Hit@1</th>" in page
    assert heads[4:-1] == [f"{labels[m]} ({m})" for m in ADK["measures"][1:]]
    # the two labels appear only in the runs' names, which are their overrides
    for label in ("Top1", "First1"):
        assert page.count(label) == page.count(f"metrics.labels={{Hit@1:{label}}}") > 0
    assert "per-slice bars: mean Hit@1 (whisker" in page
    assert "Per-slice means of <code>Hit@1</code>" in page


def test_without_labels_the_page_names_the_canonical_metrics(sweep_project: Project) -> None:
    default = yaml.safe_load((core_conf_dir() / "metrics" / "default.yaml").read_text())
    assert not default.get("labels")
    sweep_dir = _sweep(sweep_project, "depth=5,6", metrics="default")
    page = (sweep_dir / SweepFolder.REPORT_HTML).read_text()
    assert _heads(page)[3:-1] == default["measures"]
    assert "metrics.labels" not in page and "(<code>" not in page
