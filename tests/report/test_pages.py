"""The pages end to end: every run writes report.html and summary.md (listed with its
outputs), ``evalframe report`` redraws them (with a drift view against a baseline),
the corpus manifest names the documents that changed, and several runs get one page."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from evalframe.app.cli import main
from evalframe.assess.baseline import promote
from evalframe.pipeline.config import validate_experiment
from evalframe.pipeline.run import PipelineResult, run_experiment
from evalframe.report.page import RunPage
from evalframe.report.terminal import TerminalReport
from tests.conftest import (
    CORPUS,
    Project,
    RecordingDisplay,
    TerminalStderr,
    raw_config,
    write_jsonl,
)


def run(project: Project, name: str, **overrides: Any) -> PipelineResult:
    out = project.root / name
    cfg = raw_config(
        project,
        experiment=name,
        output={"dir": str(out), "cache_dir": str(project.root / "cache")},
        gates={"floor": {"type": "threshold", "metric": "R@5", "op": ">=", "value": 0.5}},
        stats={"bootstrap": 200},
        **{"report": {"html": True}, **overrides},  # raw_config's default has no page
    )
    return run_experiment(
        validate_experiment(cfg),
        reporters=[RunPage(), TerminalReport(io.StringIO())],
        progress=False,
    )


def external_references(page: str) -> list[str]:
    """Anything the page would fetch: src/href to another document, CSS url(), @import."""
    found = re.findall(r'(?:src|href)\s*=\s*"([^"#][^"]*)"', page)
    found += re.findall(r"url\(\s*['\"]?(?!#)([^)'\"]+)", page)
    found += re.findall(r"@import[^;]+", page)
    return found + re.findall(r"<link\b[^>]*>", page)


def test_a_run_writes_its_page_and_summary_and_lists_them_for_trackers(project: Project) -> None:
    result = run(project, "alpha")
    folder = project.root / "alpha"
    assert result.outputs["report_html"] == folder / "report.html"
    assert result.outputs["summary_md"] == folder / "summary.md"
    page = (folder / "report.html").read_text()
    assert page.startswith("<!doctype html>")
    # curves, slices, scores; no latency plot: bm25 answers in batches, so every query
    # has the batch's time shared out, one value that a histogram would not picture
    assert page.count("<svg") >= 3 and 'id="plot-latency"' not in page
    assert external_references(page) == []
    assert 'id="q-table"' in page and page.count('<tbody class="q"') == len(CORPUS)
    assert "Install the tool with pip" in page  # the chunk text of a retrieved document
    summary = (folder / "summary.md").read_text()
    assert summary.startswith("## ✓ PASSED · evalframe · alpha")
    assert "| R@5 |" in summary and "report.html" in summary
    assert len(summary) < 4000


def test_the_corpus_manifest_hashes_each_documents_text(project: Project) -> None:
    run(project, "alpha")
    folder = project.root / "alpha"
    manifest = json.loads((folder / "corpus_manifest.json").read_text())
    expected = {d["id"]: hashlib.sha256(d["text"].encode()).hexdigest()[:12] for d in CORPUS}
    assert manifest["documents"] == expected
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["corpus"]["documents"] == len(CORPUS)
    assert summary["corpus"]["content_hash"] == manifest["content_hash"]
    assert summary["corpus"]["manifest"] == "corpus_manifest.json"
    # the date differs on every run of the same inputs: it is in timings.json (docs/dvc.md)
    timings = json.loads((folder / "timings.json").read_text())
    assert "created" not in summary
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", timings["created"])
    target = promote(folder, "alpha", project.root / "baselines")
    assert (target / "corpus_manifest.json").read_text() == (
        folder / "corpus_manifest.json"
    ).read_text()


def test_the_page_shows_a_metrics_label_beside_its_canonical_name(project: Project) -> None:
    """metrics.labels (ADK's "Recall@5" for Hit@5) reach the page's headline table too."""
    metrics = {"measures": ["Hit@5", "R@5", "RR"], "labels": {"Hit@5": "Recall@5", "RR": "MRR"}}
    run(project, "labelled", metrics=metrics)
    page = (project.root / "labelled" / "report.html").read_text()
    table = page[page.index('id="headline"') : page.index("</table>", page.index('id="headline"'))]
    assert 'Recall@5 <span class="muted">(<code>Hit@5</code>)</span>' in table
    assert 'MRR <span class="muted">(<code>RR</code>)</span>' in table
    assert "<td><code>R@5</code></td>" in table  # no label: the canonical name alone
    # and each query's drill-down gives its values under the same names
    details = re.findall(r'<p class="muted">((?:Recall@5|Hit@5) [^<]*)</p>', page)
    assert details and all(
        re.fullmatch(r"Recall@5 \S+ · R@5 \S+ · MRR \S+( · latency .*)?", d) for d in details
    ), details[:2]


def test_report_html_false_turns_the_page_off(project: Project) -> None:
    result = run(project, "quiet", report={"html": False})
    assert "report_html" not in result.outputs
    assert not (project.root / "quiet" / "report.html").exists()


def test_a_document_changed_since_the_run_is_left_out_of_a_redrawn_page(project: Project) -> None:
    """In the run the drill-down shows the texts it scored; `evalframe report` later
    reads the corpus again and leaves out a text that changed since, saying so."""
    run(project, "alpha")
    folder = project.root / "alpha"
    cache = next(d for d in CORPUS if d["id"] == "cache")
    assert str(cache["text"]) in (folder / "report.html").read_text()
    docs = [{**d, "text": "Rewritten after the run."} if d["id"] == "cache" else d for d in CORPUS]
    write_jsonl(project.corpus, docs)
    assert main(["report", str(folder)]) == 0
    page = (folder / "report.html").read_text()
    assert "1 listed document(s) changed since this run; their text is not shown." in page
    assert "Rewritten after the run." not in page and str(cache["text"]) not in page


def test_the_drift_view_names_the_documents_that_changed(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    run(project, "before")
    # the passage that answers "Where is the BM25 index cached?" is rewritten
    docs = [
        {**d, "text": "Gates compare metrics with thresholds."} if d["id"] == "cache" else d
        for d in CORPUS
    ]
    write_jsonl(project.corpus, docs)
    result = run(project, "after", baseline=str(project.root / "before"))
    assert result.comparison is not None
    page = (project.root / "after" / "report.html").read_text()
    assert 'id="drift"' in page and "Pass → fail (1)" in page
    sources = page[page.index('class="sources"') :]
    assert "<code>cache</code>" in sources[: sources.index("</table>")]
    assert "1 document(s) with changed text, 0 added, 0 removed" in page
    # one metric per slice and per top query on every surface: the status criterion
    # (report.criterion, RR), by which summary.md ranked its top regressions while the
    # terminal and the page used the first measure (R@5)
    lead = result.comparison.as_dict()["lead"]
    assert lead == "RR" and next(iter(result.comparison.as_dict()["metrics"])) == "R@5"
    assert f"<h3>{lead} per slice</h3>" in page and "<h3>R@5 per slice</h3>" not in page
    assert f"{lead} by difficulty:" in (result.report or "")
    assert f"Top regressed ({lead}):" in (result.report or "")
    summary = (project.root / "after" / "summary.md").read_text()
    assert "**Drift:** 1 pass→fail, 0 fail→pass; corpus: 1 document(s) changed" in summary
    assert "### Top regressions (RR)" in summary and "| 3 |" in summary

    # `evalframe report` redraws it from the folders alone, against any baseline
    assert main(["report", str(project.root / "after"), "--format", "md"]) == 0
    assert capsys.readouterr().out == summary
    out = project.root / "again"
    code = main(
        ["report", str(project.root / "after"), "--baseline", str(project.root / "before"),
         "--out", str(out)]
    )  # fmt: skip
    assert code == 0 and "report.html" in capsys.readouterr().out
    assert "Pass → fail (1)" in (out / "report.html").read_text()


def test_several_runs_get_one_page_and_the_plot_files(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    run(project, "alpha")
    run(project, "beta", depth=4)
    out = project.root / "report"
    a, b = project.root / "alpha", project.root / "beta"
    assert main(["report", str(a), str(b), "--out", str(out)]) == 0
    assert "report.html" in capsys.readouterr().out
    with open(out / "recall_at_k.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["k"] for r in rows] == ["1", "2", "3", "4", "5"]
    assert rows[-1]["beta"] == ""  # beta retrieved 4: no k = 5
    metrics = json.loads((a / "metrics.json").read_text())
    assert float(rows[-1]["alpha"]) == pytest.approx(metrics["R@5"])
    with open(out / "slices.csv") as handle:
        slices = {s["slice"] for s in csv.DictReader(handle)}
    assert {"alpha difficulty=easy", "beta difficulty=hard"} <= slices
    markdown = (out / "report.md").read_text()
    assert "| alpha | golden" in markdown and "passed" in markdown
    page = (out / "report.html").read_text()
    # curves and slice bars; no latency plot: bm25 ranks a batch, so each query's time is
    # the batch's shared out (one value), as on each run's own page
    lat = [json.loads((project.root / n / "timings.json").read_text()) for n in ("alpha", "beta")]
    assert all(len(set(t["per_query_ms"].values())) == 1 for t in lat)
    assert page.count("<svg") == 2 and external_references(page) == [
        "../alpha/report.html",
        "../beta/report.html",
    ]
    assert main(["report", str(a), str(b)]) == 2  # several runs need --out
    assert "--out" in capsys.readouterr().err

    # nor into a run's folder, where the page would be taken for that run's own
    before = {p.name: p.read_bytes() for p in b.iterdir() if p.is_file()}
    assert main(["report", str(a), str(b), "--out", str(b)]) == 2
    assert capsys.readouterr().err.startswith(
        f"error: option --out: {b} is the folder of a run: the page of 2 runs would be taken "
        "for that run's own"
    )
    assert main(["report", str(a), "--out", str(b)]) == 2  # nor one run's page in another's
    assert f"the page of {a} would be taken" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in b.iterdir() if p.is_file()} == before
    assert main(["report", str(a), "--out", str(a)]) == 0  # its own folder: where it belongs
    capsys.readouterr()
    named = project.root / "page.html"  # a file given where the folder goes
    named.write_text("kept\n")
    with pytest.raises(SystemExit) as stopped:  # argparse's line (core.argtypes.folder)
        main(["report", str(a), "--out", str(named)])
    assert stopped.value.code == 2
    assert f"error: argument --out: {named} is a file, not a folder" in capsys.readouterr().err
    assert named.read_text() == "kept\n"


@pytest.mark.parametrize("source", ["corpus", "manifest"])
def test_text_past_the_budget_is_not_even_read(
    project: Project, monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    """Each listed document takes at least a 160-character preview: past the budget
    on that count alone, no text is read, from the corpus in memory or from the
    run's configured corpus (`evalframe report RUN`, which knows the documents
    from the run's manifest)."""
    from evalframe.core.types import Corpus
    from evalframe.report import querytable
    from evalframe.report.page import write_run_report

    run(project, "alpha")
    folder = project.root / "alpha"
    listed = sum(
        min(5, len(json.loads(line)["retrieved"]))  # depth 5: at most 5 listed per query
        for line in (folder / "per_query.jsonl").read_text().splitlines()
    )
    assert listed > 1
    monkeypatch.setattr(querytable, "TEXT_BUDGET", (listed - 1) * querytable.PREVIEW)

    def unreadable(*_: object) -> Any:
        raise AssertionError("a text was read although the page leaves text out")

    manifest = json.loads((folder / "corpus_manifest.json").read_text())
    corpus = Corpus.deferred(
        "c", manifest["content_hash"], manifest["documents"], unreadable, texts=unreadable
    )
    if source == "manifest":
        write_jsonl(project.corpus, [{"id": "only", "text": "no other document"}])
        corpus = None  # the run's corpus is read again only if the page needs its texts
    files = write_run_report(folder, out=project.root / "small", corpus=corpus)
    page = files["report_html"].read_text()
    assert "Document text is left out" in page
    assert "Install the tool with pip" not in page and "no other document" not in page


def test_evalframe_report_shows_its_step_and_reads_the_run_folder_once(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from evalframe.core import progress
    from evalframe.report.model import RunView

    run(project, "alpha")
    display = RecordingDisplay()
    monkeypatch.setattr(progress, "_make_progress", lambda: display)
    monkeypatch.setattr(sys, "stderr", TerminalStderr())
    loads: list[object] = []
    original = RunView.load.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(
        RunView, "load", classmethod(lambda cls, *a, **k: loads.append(a) or original(cls, *a, **k))
    )
    assert main(["report", str(project.root / "alpha")]) == 0
    assert display.steps == ["writing the run page (report.html)"]
    assert len(loads) == 1


def test_a_folder_that_is_not_a_run_is_a_one_paragraph_error(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(project.root)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "summary" in err and "Traceback" not in err


def test_document_text_is_left_out_past_the_budget(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalframe.report import querytable
    from evalframe.report.page import write_run_report

    run(project, "alpha")
    monkeypatch.setattr(querytable, "TEXT_BUDGET", 100)  # less than one query's top 5
    files = write_run_report(project.root / "alpha", out=project.root / "small")
    page = files["report_html"].read_text()
    assert "Install the tool with pip" not in page
    assert "Document text is left out" in page


def test_a_run_files_page_has_no_latency_plot(project: Project) -> None:
    """A run file's rankings are looked up, not retrieved: the time of the lookup is not a
    latency worth a plot (the Galaxy page drew one at 0.0 ms)."""
    trec = project.root / "run.trec"
    trec.write_text("".join(f"{q} Q0 install 1 2.0 r\n" for q in ("1", "2", "3", "4")))
    run(project, "replayed", retriever={"name": "run_file", "path": str(trec), "format": "trec"})
    page = (project.root / "replayed" / "report.html").read_text()
    assert 'id="plot-curves"' in page and 'id="plot-latency"' not in page
    # latencies that differ from query to query are drawn (the page's own rule, on the
    # folder a retriever wrote)
    from evalframe.report.model import RunView
    from evalframe.report.runpage import plots_section

    run(project, "retrieved")
    view = RunView.load(project.root / "retrieved")
    assert 'id="plot-latency"' not in plots_section(view)  # one value for every query
    for i, record in enumerate(view.records):
        record["latency_ms"] = 10.0 + i
    assert 'id="plot-latency"' in plots_section(view)


def test_past_lazy_over_the_drill_downs_are_data_filled_in_on_expand(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same drill-downs, as strings in one JSON block instead of elements (LAZY_OVER)."""
    from evalframe.report import querytable
    from evalframe.report.page import write_run_report

    run(project, "alpha")
    inline = write_run_report(project.root / "alpha", out=project.root / "inline")["report_html"]
    inline_text = inline.read_text()
    assert '<script type="application/json"' not in inline_text
    assert 'data-lazy="' not in inline_text
    monkeypatch.setattr(querytable, "LAZY_OVER", 1)  # 4 queries: more than 1
    lazy = write_run_report(project.root / "alpha", out=project.root / "lazy")["report_html"]
    text = lazy.read_text()
    block = re.search(r'<script type="application/json" id="q-details">(.*?)</script>', text, re.S)
    assert block is not None and "</" not in block[1]  # nothing in it can end the block
    details = json.loads(block[1])
    assert len(details) == text.count('data-lazy="') == text.count(" hidden><td") == 4
    assert "The 4 drill-downs are filled in when a row is expanded" in text

    # put each one back where the script puts it: the inline page's table, byte for byte
    def table(page: str) -> str:
        start = page.index('<table id="q-table">')
        return page[start : page.index("</table></div>", start)]

    filled = re.sub(
        r'<tr class="detail" id="d(\d+)" data-lazy="\d+" hidden><td colspan="(\d+)"></td>',
        lambda m: f'<tr class="detail" id="d{m[1]}"><td colspan="{m[2]}">{details[int(m[1])]}</td>',
        table(text),
    )
    assert filled == table(inline_text) and filled.count('<tbody class="q"') == 4


def test_failure_categories_read_as_words_on_the_page() -> None:
    """The page names a category as the terminal does: the analysis's label, else the
    id with spaces (a plugin's own ``failure_category``); filters keep the id."""
    from evalframe.report.querytable import category, category_words

    analysed = {"failure": {"category": "vocabulary_mismatch", "label": "vocabulary mismatch"}}
    plugin = {"failure_category": "off_topic_answer"}
    assert (category(analysed), category_words(analysed)) == (
        "vocabulary_mismatch",
        "vocabulary mismatch",
    )
    assert (category(plugin), category_words(plugin)) == ("off_topic_answer", "off topic answer")
    assert category_words({"status": "pass"}) == ""


def test_the_header_leaves_out_where_the_run_was_reported() -> None:
    """EVALFRAME_TRACKING=none reaches Hydra as the override tracking=none: the page
    credited the user with it, and a tracked and an untracked run of the same inputs
    read differently. Like config.yaml, the header leaves tracking out."""
    from pathlib import Path

    from evalframe.report.model import RunView
    from evalframe.report.runpage import facts

    def view(*overrides: str) -> RunView:
        return RunView(
            path=Path("run"), name="run", summary={}, metrics={}, gates={}, config={},
            records=[], comparison=None, manifest=None, overrides=overrides,
        )  # fmt: skip

    shown = dict(facts(view("tracking=none", "+experiment=adk", "retriever.k1=0.9"), None))
    assert shown["overrides"] == "<code>+experiment=adk retriever.k1=0.9</code>"
    untracked = dict(facts(view("tracking=none", "+experiment=adk"), None))
    tracked = dict(facts(view("+experiment=adk", "tracking.uri=http://127.0.0.1:5000"), None))
    assert untracked["overrides"] == tracked["overrides"] == "<code>+experiment=adk</code>"
    assert "overrides" not in dict(facts(view("tracking=mlflow"), None))


def test_a_stable_page_of_several_runs_reads_only_their_tracked_files(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """The DVC report stage's page is an output: it showed the runs' latency
    (timings.json) and linked their pages, neither of which DVC tracks, so a fresh
    clone's forced repro changed it. With --stable it leaves both out."""
    run(project, "alpha")
    run(project, "beta", depth=4)
    a, b = project.root / "alpha", project.root / "beta"
    out = project.root / "stable"
    args = ["report", str(a), str(b), "--out", str(out), "--stable"]
    assert main(args) == 0
    first = (out / "report.html").read_bytes()
    assert b'id="plot-latency"' not in first and b'href="../alpha/report.html"' not in first
    for folder in (a, b):  # what a fresh clone lacks after `dvc pull`
        (folder / "timings.json").unlink()
        (folder / "report.html").unlink()
    assert main(args) == 0
    assert (out / "report.html").read_bytes() == first
    capsys.readouterr()


def test_the_analyses_section_names_only_the_files_the_run_wrote(tmp_path: Path) -> None:
    """Every page said its analyses came from calibration.json and benefit.json, which
    only a run with those analyses writes."""
    from evalframe.report.runpage import _analyses_sources

    summary = "<code>summary.json</code>'s <code>analysis</code>"
    assert _analyses_sources(tmp_path) == summary
    (tmp_path / "benefit.json").write_text("{}")
    assert _analyses_sources(tmp_path) == f"<code>benefit.json</code> and {summary}"


def test_the_metrics_table_puts_the_headline_set_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Galaxy computes twelve metrics and heads with four: the table titled "Headline
    metrics" listed all twelve in the run's order, beginning with its @1 three."""
    import evalframe

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EVALFRAME_CACHE_DIR", str(tmp_path / "cache"))
    result = evalframe.run("galaxy", ["tracking=none"], output_dir="g", progress=False)
    page = (result.path / "report.html").read_text(encoding="utf-8")
    table = page[page.index('id="headline"') :]
    rows = re.findall(r"<tr><td><code>([^<]+)</code>", table[: table.index("</table>")])
    assert rows[:4] == ["Hit@1", "Hit@10", "RR@10", "nDCG@10"] and len(rows) == 12
    assert "The headline set first (Hit@1, Hit@10, RR@10, nDCG@10" in page
