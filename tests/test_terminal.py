"""The terminal, as a user sees it: 100 columns, plain when piped, the sweep's summary,
and a hint instead of a Hydra grammar error for metric strings that need quotes.

Real ``python -m evalframe`` processes with real Hydra; their stdout is a pipe,
so the output must be plain text (no escape codes).
"""

from __future__ import annotations

import json
import re

import pytest

from evalframe.core.console import WIDTH, Col, render, split_columns, table
from tests.conftest import Project

pytestmark = pytest.mark.slow

ESCAPE = re.compile(r"\x1b\[")


def fits(text: str, width: int = WIDTH) -> bool:
    return max(len(line) for line in text.splitlines()) <= width


# -- the table helper (unit) ------------------------------------------------------------
def test_a_table_fits_the_width_and_numbers_are_never_cut() -> None:
    long = "retriever.k1=0.9 retriever.b=0.3 +experiment=a-rather-long-experiment-name " * 2
    text = render(
        table([Col("run", "id"), "overrides", Col("nDCG@10", "number")], [["abc", long, "0.6663"]]),
        width=40,
    )
    assert fits(text, 40)
    assert "0.6663" in text and "nDCG@10" in text
    assert not any(line != line.rstrip() for line in text.splitlines())  # no trailing spaces


def test_colour_only_when_asked() -> None:
    t = table(["a"], [["x"]])
    assert not ESCAPE.search(render(t))
    assert ESCAPE.search(render(t, color=True))


def test_too_many_columns_are_stacked_in_parts_that_repeat_the_key() -> None:
    cols = [Col("run", "id"), *(Col(f"metric{i}", "number") for i in range(12))]
    rows = [["r1", *(["0.123"] * 12)]]
    parts = split_columns(cols, rows, keep=1, width=40)
    assert all(p[0] == 0 for p in parts)  # every part starts with the run
    assert sorted(i for p in parts for i in p[1:]) == list(range(1, 13))
    for part in parts:
        # natural widths: 3 for "run", 7 ("metric1") or 8 ("metric10") each, 2 between columns
        width = sum(len(cols[i].header) for i in part) + 2 * (len(part) - 1)
        assert width <= 40
        drawn = render(table([cols[i] for i in part], [[r[i] for i in part] for r in rows]))
        assert fits(drawn, 40) and "…" not in drawn  # laid out whole, nothing cut
    assert len(split_columns(cols, rows, keep=1, width=100_000)) == 1


# -- compare ------------------------------------------------------------------------------
def _metric_rows(text: str) -> list[str]:
    """The metrics of the comparison's first table (the lines after the header's rule)."""
    body = text.split("───\n", 1)[1].split("\n\n", 1)[0]
    return [line.split()[1] for line in body.splitlines()]


def _two_runs(project: Project) -> None:
    for out, k1 in (("a", "1.2"), ("b", "0.3")):
        res = project.run(*project.data_args(), f"retriever.k1={k1}", f"hydra.run.dir={out}")
        assert res.code == 0, res.stderr


def test_compare_shows_the_headline_set_in_100_columns_and_all_with_all(project: Project) -> None:
    _two_runs(project)
    headline = json.loads((project.root / "a" / "summary.json").read_text())["headline"]
    assert headline == ["R@5", "RR", "nDCG@10"]  # the default pack, no gates: see metrics.md
    res = project.run("compare", "a", "b")
    assert res.code == 0, res.stderr
    assert fits(res.stdout) and not ESCAPE.search(res.stdout)
    assert _metric_rows(res.stdout) == headline
    # the correction's family is what was compared: 3 metrics x (overall, easy, hard); the
    # category is no default slice (four values over four queries: an identifier)
    assert f"over {3 * (1 + 2)} tests" in res.stdout, res.stdout

    every = project.run("compare", "a", "b", "--all")
    assert _metric_rows(every.stdout) == ["R@5", "P@5", "RR", "RR@10", "nDCG@10", "AP", "Hit@5"]
    assert fits(every.stdout)

    many = project.run("compare", "a", "b", "a", "--all")
    assert many.code == 0, many.stderr
    assert fits(many.stdout)
    assert all(m in many.stdout for m in ("R@5", "Hit@5"))
    wide = project.run("compare", "a", "b", "a", "--all", "--wide")
    assert not fits(wide.stdout)  # seven metrics side by side need more than 100 columns


# -- the sweep's summary -------------------------------------------------------------------
def test_a_sweep_ends_with_one_table_marking_the_best_job_per_metric(project: Project) -> None:
    res = project.run(
        "-m",
        *project.data_args(),
        "retriever.k1=0.3,1.2",
        "retriever.b=0.1,0.9",
        "gates=quickstart",
        "hydra.sweep.dir=sweep",
    )
    assert res.code in (0, 1), res.stderr
    assert not ESCAPE.search(res.stdout)
    summary = res.stdout[res.stdout.rindex("Sweep sweep: 4 jobs") :]
    assert fits(summary)
    lines = summary.splitlines()
    header = lines[1].split()
    assert header[:3] == ["job", "overrides", "gates"]
    metrics = header[3:]
    assert metrics == ["R@5", "RR", "nDCG@10"]  # the gated R@5 and RR, and nDCG@10
    rows = {int(line.split()[0]): line for line in lines[3:7]}
    assert sorted(rows) == [0, 1, 2, 3]
    means = {
        n: json.loads((project.root / "sweep" / str(n) / "summary.json").read_text())["overall"]
        for n in rows
    }
    for n, line in rows.items():
        cells = line.split()
        overrides = " ".join(cells[1:3])
        assert re.fullmatch(r"retriever\.k1=\S+ retriever\.b=\S+", overrides), line
        gates = json.loads((project.root / "sweep" / str(n) / "gates.json").read_text())
        assert cells[3] == ("passed" if gates["passed"] else "FAILED")
        for metric, cell in zip(metrics, cells[4:], strict=True):
            value = means[n][metric]["mean"]
            best = max(means[j][metric]["mean"] for j in rows)
            assert cell == f"{value:.3f}" + ("*" if value == best else ""), (metric, line)
    assert "* the best job for that metric (the highest mean)" in summary
    # each job said its own few lines first (report.terminal: auto), not the full report
    jobs = res.stdout[: res.stdout.rindex("Sweep sweep: 4 jobs")]
    assert "Results (mean" not in jobs and "Per-query breakdown" not in jobs
    for n in rows:
        folder = project.root / "sweep" / str(n)
        at = jobs.index(f"Saved results to: {folder}\n")
        block = jobs[jobs.rindex("evalframe · ", 0, at) : at]
        headline = " · ".join(
            f"{m} {means[n][m]['mean']:.3f} "
            f"[{means[n][m]['ci_low']:.3f}, {means[n][m]['ci_high']:.3f}]"
            for m in metrics
        )
        assert f"\n  {headline}\n" in block, block
        gates = json.loads((folder / "gates.json").read_text())["gates"]
        assert "  gates: " in block and all(g["name"] in block for g in gates)
        for g in gates:  # a failed one with its message (wrapped to the width)
            if not g["passed"]:
                assert f"{g['name']}: {g['message']}" in " ".join(block.split())


# -- quoting ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("override", "fixed"),
    [
        ("metrics.measures=[P(rel=2)@5,R@5,RR]", "'metrics.measures=[\"P(rel=2)@5\",R@5,RR]'"),
        (
            "metrics.headline=[SetF(beta=0.5,rel=2)]",
            "'metrics.headline=[\"SetF(beta=0.5,rel=2)\"]'",
        ),
        ("report.criterion=P(rel=2)@5", "'report.criterion=\"P(rel=2)@5\"'"),
    ],
)
def test_a_metric_string_that_needs_quotes_gets_a_hint(
    project: Project, override: str, fixed: str
) -> None:
    res = project.run(*project.data_args(), override)
    assert res.code == 2
    assert "Traceback" not in res.stderr and "hydra.cc" not in res.stderr
    assert res.stderr.startswith(f"error: config key {override.partition('=')[0]}:")
    assert "must be quoted inside the override" in res.stderr
    assert f"hint: quote the value, and the whole override for the shell: {fixed}" in res.stderr


def test_the_quoted_form_the_hint_gives_runs(project: Project) -> None:
    res = project.run(
        *project.data_args(),
        'metrics.measures=["P(rel=2)@5",R@5,RR]',
        "hydra.run.dir=out",
    )
    assert res.code == 0, res.stderr
    assert (
        "P(rel=2)@5" in json.loads((project.root / "out" / "summary.json").read_text())["metrics"]
    )
    # the tiny set's labels are all 1: said once, rather than left to a row of n/a
    assert (
        "warning: P(rel=2)@5 counts documents labelled 2 or more, and no golden query judges "
        "one that high (the highest label is 1), so it is n/a on every query" in res.stderr
    )
    rows = [line for line in res.stdout.splitlines() if line.startswith(("  P(rel", "  R@5"))]
    assert len(rows) == 2
    assert rows[0].index("[") == rows[1].index("[")  # the intervals line up under n/a too


def test_long_lines_wrap_under_their_text_but_paths_stay_whole() -> None:
    """A path cut at a space cannot be copied from the terminal in one piece."""
    from evalframe.report.terminal import _fit

    deep = "/tmp/" + "/".join(["a-rather-long-folder-name"] * 5) + "/report.html"
    words = "  warning: " + " ".join(["word"] * 30)
    out = _fit([f"Report: {deep} (summary: summary.md)", f"Saved results to: {deep}", words], 60)
    assert out[0] == f"Report: {deep} (summary: summary.md)"
    assert out[1] == f"Saved results to: {deep}"
    rest = out[2:]
    assert len(rest) > 1 and all(len(line) <= 60 for line in rest)
    assert all(line.startswith(" " * 6 + "word") for line in rest[1:])  # indent 2, then 4


def test_report_terminal_chooses_the_full_or_the_brief_report(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """auto: brief in a sweep's job, full otherwise; full and brief: always."""
    import io

    from evalframe.pipeline.config import validate_experiment
    from evalframe.pipeline.run import run_experiment
    from evalframe.report.terminal import TerminalReport
    from tests.conftest import raw_config

    def printed(terminal: str, in_sweep: bool) -> str:
        cfg = raw_config(project, report={"html": False, "terminal": terminal})
        stream = io.StringIO()
        reporter = TerminalReport(stream, in_sweep=in_sweep)
        run_experiment(validate_experiment(cfg), reporters=[reporter], progress=False)
        return stream.getvalue()

    full, brief = "Results (mean", "  R@5 "
    assert full in printed("auto", in_sweep=False)
    assert full not in printed("auto", in_sweep=True)
    assert brief in printed("auto", in_sweep=True)
    assert full in printed("full", in_sweep=True)
    text = printed("brief", in_sweep=False)
    assert full not in text and text.rstrip().splitlines()[-1].startswith("Result: ")
    capsys.readouterr()
