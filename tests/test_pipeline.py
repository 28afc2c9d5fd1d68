"""The pipeline in-process: hook order, tracker isolation, latency and outputs.

Experiments are validated from plain dicts (the shape Hydra composes), so these
tests exercise the same boundary as the CLI without a subprocess.
"""

from __future__ import annotations

import io
import json
import sys
from typing import Any

import pytest

from evalframe.core.errors import EXIT_GATE_FAILED, EXIT_OK, ConfigError, DataError, PluginError
from evalframe.core.types import Ranking
from evalframe.pipeline.config import validate_experiment
from evalframe.pipeline.run import run_experiment
from evalframe.plugin.protocols import PluginConfig, PluginContext
from evalframe.plugin.registry import RETRIEVERS, TRACKERS
from evalframe.report.terminal import TerminalReport
from tests.conftest import GOLDEN, Project, RecordingDisplay, TerminalStderr, raw_config


class Recorder:
    """A tracker that records which hooks fired, and whether outputs existed at the end."""

    calls: list[str] = []
    outputs_present_at_end: bool = False

    def __init__(self, config: Any, context: PluginContext) -> None:
        Recorder.calls = []

    def on_run_start(self, ctx: Any) -> None:
        Recorder.calls.append("on_run_start")

    def on_retrieval_done(self, ctx: Any, run: Any) -> None:
        Recorder.calls.append("on_retrieval_done")

    def on_scored(self, ctx: Any, evaluation: Any) -> None:
        Recorder.calls.append("on_scored")

    def on_gated(self, ctx: Any, gates: Any) -> None:
        Recorder.calls.append("on_gated")

    def on_run_end(self, ctx: Any, outcome: Any) -> None:
        Recorder.calls.append("on_run_end")
        Recorder.outputs_present_at_end = all(p.is_file() for p in outcome.outputs.values())

    def on_error(self, ctx: Any, error: BaseException) -> None:
        Recorder.calls.append("on_error")


class Broken:
    """A tracker whose every hook raises, like a tracking server that is down."""

    def __init__(self, config: Any, context: PluginContext) -> None:
        pass

    def on_scored(self, ctx: Any, evaluation: Any) -> None:
        raise ConnectionError("tracking server unreachable")


def test_hooks_fire_in_order_after_outputs_are_written(project: Project) -> None:
    with TRACKERS.scoped() as reg:
        reg.add("recorder", Recorder)
        exp = validate_experiment(raw_config(project, tracking={"name": "recorder"}))
        result = run_experiment(exp, reporters=[TerminalReport(io.StringIO())], progress=False)
    assert result.exit_code == EXIT_OK
    assert Recorder.calls == [
        "on_run_start",
        "on_retrieval_done",
        "on_scored",
        "on_gated",
        "on_run_end",
    ]
    assert Recorder.outputs_present_at_end


def test_a_failing_tracker_changes_neither_results_nor_exit_code(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    with TRACKERS.scoped() as reg:
        reg.add("broken", Broken)
        exp = validate_experiment(raw_config(project, tracking={"name": "broken"}))
        result = run_experiment(exp, reporters=[TerminalReport(io.StringIO())], progress=False)
    assert result.exit_code == EXIT_OK
    # named as configured (tracking.name), with its module: not as its Python class
    assert (
        f"tracker 'broken' ({__name__}) failed in on_scored: ConnectionError"
        in capsys.readouterr().err
    )
    assert (project.root / "out" / "metrics.json").is_file()


def test_latency_is_measured_per_query_and_summarised(project: Project) -> None:
    exp = validate_experiment(raw_config(project))
    result = run_experiment(exp, reporters=[TerminalReport(io.StringIO())], progress=False)
    rankings = result.evaluation.run.rankings
    assert all(r.latency_ms is not None and r.latency_ms >= 0 for r in rankings.values())
    assert set(result.evaluation.latency) == {"p50_ms", "p95_ms", "mean_ms", "max_ms"}
    timings = json.loads((project.root / "out" / "timings.json").read_text())
    assert timings["latency"]["p50_ms"] == pytest.approx(result.evaluation.latency["p50_ms"])
    assert timings["per_query_ms"] == {q: r.latency_ms for q, r in rankings.items()}
    # what the machine measured stays out of the files DVC tracks
    for name in ("metrics.json", "headline.json", "summary.json", "per_query.jsonl"):
        text = (project.root / "out" / name).read_text()
        assert '"latency' not in text and "latency." not in text, name


def test_latency_comes_back_from_timings_when_a_run_is_read(project: Project) -> None:
    from evalframe.assess.runfolder import RunFolder

    exp = validate_experiment(raw_config(project))
    result = run_experiment(exp, reporters=[TerminalReport(io.StringIO())], progress=False)
    stored = RunFolder(project.root / "out").run()
    assert {q: r.latency_ms for q, r in stored.rankings.items()} == {
        q: r.latency_ms for q, r in result.evaluation.run.rankings.items()
    }


def test_the_same_inputs_write_the_same_bytes(project: Project) -> None:
    """Every file but timings.json is a function of the inputs (DVC relies on it)."""
    exp = validate_experiment(raw_config(project, cache={"retrieval": False}))
    out = project.root / "out"
    run_experiment(exp, reporters=[TerminalReport(io.StringIO())], progress=False)
    first = {p.name: p.read_bytes() for p in out.iterdir()}
    run_experiment(exp, reporters=[TerminalReport(io.StringIO())], progress=False)
    second = {p.name: p.read_bytes() for p in out.iterdir()}
    assert first.keys() == second.keys()
    changed = {name for name in first if first[name] != second[name]}
    assert changed <= {"timings.json"}


def test_failed_required_gate_gives_exit_1(project: Project) -> None:
    gates = {"floor": {"type": "threshold", "metric": "RR", "op": "<", "value": 0.5}}  # RR = 1
    exp = validate_experiment(raw_config(project, gates=gates))
    result = run_experiment(exp, reporters=[TerminalReport(io.StringIO())], progress=False)
    assert result.exit_code == EXIT_GATE_FAILED
    written = json.loads((project.root / "out" / "gates.json").read_text())
    assert written["passed"] is False and written["gates"][0]["name"] == "floor"


def test_gate_on_an_uncomputed_metric_is_rejected_before_running(project: Project) -> None:
    gates = {"floor": {"type": "threshold", "metric": "AP", "value": 0.1}}
    with pytest.raises(ConfigError, match="needs metric 'AP', which is not computed") as err:
        validate_experiment(raw_config(project, gates=gates))
    assert err.value.key == "gates.floor.metric"


class _LyingConfig(PluginConfig):
    pass


class Lying:
    """A retriever that breaks the contract by returning more than k documents."""

    def __init__(self, config: Any, context: PluginContext) -> None:
        pass

    def retrieve(self, query: Any, k: int) -> Ranking:
        return Ranking.from_pairs(query.id, [(f"d{i}", 1.0 / (i + 1)) for i in range(k + 1)])


def test_a_retriever_returning_too_many_docs_is_named(project: Project) -> None:
    with RETRIEVERS.scoped() as reg:
        reg.add("lying", Lying, _LyingConfig)
        exp = validate_experiment(raw_config(project, retriever={"name": "lying"}))
        with pytest.raises(PluginError, match="retriever 'lying' returned 6 docs"):
            run_experiment(exp, reporters=[TerminalReport(io.StringIO())], progress=False)


def test_outputs_are_replaced_atomically(project: Project) -> None:
    exp = validate_experiment(raw_config(project))
    run_experiment(exp, reporters=[TerminalReport(io.StringIO())], progress=False)
    run_experiment(exp, reporters=[TerminalReport(io.StringIO())], progress=False)
    out = project.root / "out"
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [
            "config.yaml",
            "run.trec",
            "per_query.jsonl",
            "metrics.json",
            "headline.json",
            "gates.json",
            "summary.json",
            "timings.json",
            "corpus_manifest.json",
        ]
    )


def test_run_file_is_trec_format(project: Project) -> None:
    exp = validate_experiment(raw_config(project))
    run_experiment(exp, reporters=[TerminalReport(io.StringIO())], progress=False)
    lines = (project.root / "out" / "run.trec").read_text().splitlines()
    cols = lines[0].split()
    assert len(cols) == 6 and cols[1] == "Q0" and cols[3] == "1"
    assert cols[5] == "evalframe"  # output.run_tag's default


def test_unknown_top_level_key_is_named(project: Project) -> None:
    with pytest.raises(ConfigError, match="depht: unknown key"):
        validate_experiment(raw_config(project, depht=3))


def test_missing_retriever_name_says_how_to_pick(project: Project) -> None:
    with pytest.raises(ConfigError, match="no retriever selected") as err:
        validate_experiment(raw_config(project, retriever={"k1": 1.0}))
    assert "bm25" in str(err.value)


class Answering:
    """A RAG-style retriever that reports an answer, a confidence and its costs."""

    def __init__(self, config: Any, context: PluginContext) -> None:
        pass

    def retrieve(self, query: Any, k: int) -> Ranking:
        return Ranking.from_pairs(
            query.id,
            [("install", 1.0)],
            answer=f"answer to {query.id}",
            confidence=0.75,
            tokens=120,
            tool_calls=2,
        )


def test_answers_confidences_and_costs_reach_per_query_and_survive_rescore(
    project: Project,
) -> None:
    from evalframe.app.commands import load_stored_run

    with RETRIEVERS.scoped() as reg:
        reg.add("answering", Answering, _LyingConfig)
        exp = validate_experiment(raw_config(project, retriever={"name": "answering"}))
        run_experiment(exp, reporters=[TerminalReport(io.StringIO())], progress=False)
    first = json.loads((project.root / "out" / "per_query.jsonl").read_text().splitlines()[0])
    assert (first["answer"], first["confidence"], first["tokens"], first["tool_calls"]) == (
        "answer to 1",
        0.75,
        120,
        2,
    )
    stored = load_stored_run(project.root / "out").rankings["1"]
    assert (stored.answer, stored.tool_calls) == ("answer to 1", 2)


class UnblessedConfig(PluginConfig):
    path: str
    status: str = "agent_curated_pending_human_review"
    blessed: bool = False
    drift: list[str] = []


class UnblessedDataset:
    """The project's JSONL golden set, marked with a curation status (a test double)."""

    def __init__(self, config: UnblessedConfig, context: PluginContext) -> None:
        self.config = config
        self.context = context

    def load(self) -> Any:
        from evalframe.core.types import GoldenSet
        from evalframe.plugin.registry import DATASETS, configure

        spec = DATASETS.get("jsonl")
        config = configure(spec, {"path": self.config.path}, "dataset")
        golden = spec.obj(config, self.context).load()
        provenance = {
            **golden.provenance,
            "dataset_status": self.config.status,
            "blessed": self.config.blessed,
            "blessed_statuses": ["blessed"],
            "drift": list(self.config.drift),
        }
        return GoldenSet.build(golden.name, golden.queries, provenance=provenance)


@pytest.mark.parametrize("blessed", [False, True])
def test_gating_on_an_unblessed_set_puts_a_warning_in_the_verdict(
    project: Project, blessed: bool
) -> None:
    """Issue #25 §4: the gates still decide the exit code; the verdict says it is provisional."""
    from evalframe.plugin.registry import DATASETS

    DATASETS.get("jsonl")  # imported before the scope, so the scope cannot drop it
    gates = {"floor": {"type": "threshold", "metric": "RR", "value": 0.0}}
    dataset = {"name": "unblessed", "path": str(project.golden), "blessed": blessed}
    with DATASETS.scoped() as reg:
        reg.add("unblessed", UnblessedDataset, UnblessedConfig)
        exp = validate_experiment(raw_config(project, dataset=dataset, gates=gates))
        stream = io.StringIO()
        result = run_experiment(exp, reporters=[TerminalReport(stream)], progress=False)
        gated = json.loads((project.root / "out" / "gates.json").read_text())
        summary = json.loads((project.root / "out" / "summary.json").read_text())
        ungated = validate_experiment(raw_config(project, dataset=dataset))
        quiet = run_experiment(ungated, reporters=[TerminalReport(io.StringIO())], progress=False)
    assert result.exit_code == EXIT_OK and quiet.exit_code == EXIT_OK
    written = json.loads((project.root / "out" / "gates.json").read_text())
    assert written["gates"] == [] and written["warnings"] == []  # no gates, no verdict to qualify
    report = stream.getvalue()
    if blessed:
        assert gated["warnings"] == [] and summary["verdict_warnings"] == []
        assert "not blessed" not in report and report.rstrip().endswith("Result: PASSED")
        return
    warning = (
        "gated on golden set 'golden', which is not blessed: its dataset_status is "
        "'agent_curated_pending_human_review' (blessed: blessed); its labels have not passed "
        "the human spot-check, so this verdict is provisional"
    )
    assert gated["passed"] is True and gated["warnings"] == [warning]
    assert summary["verdict_warnings"] == [warning]
    # the report wraps lines at 100 columns: compare the words
    assert f"⚠ warning: {' '.join(warning.split())}" in " ".join(report.split())
    assert report.rstrip().endswith("Result: PASSED (provisional: 1 warning(s) above)")


def test_a_verdict_on_drifted_code_is_provisional_on_every_page(project: Project) -> None:
    """Issue #25 §12: with dataset.allow_drift the run proceeds, and its verdict says it
    rests on ids the code may no longer have: in gates.json, the terminal, report.html
    and summary.md (a CI job posting summary.md must not show a bare PASSED)."""
    from evalframe.plugin.registry import DATASETS
    from evalframe.report.page import RunPage

    DATASETS.get("jsonl")
    gates = {"floor": {"type": "threshold", "metric": "RR", "value": 0.0}}
    dataset = {
        "name": "unblessed",
        "path": str(project.golden),
        "blessed": True,
        "drift": ["src/a.py: changed", "src/b.py: missing"],
    }
    with DATASETS.scoped() as reg:
        reg.add("unblessed", UnblessedDataset, UnblessedConfig)
        exp = validate_experiment(
            raw_config(project, dataset=dataset, gates=gates, report={"html": True})
        )
        stream = io.StringIO()
        result = run_experiment(exp, reporters=[RunPage(), TerminalReport(stream)], progress=False)
    assert result.exit_code == EXIT_OK
    warning = (
        "gated on golden set 'golden' while the code under evaluation has drifted from it in "
        "2 source file(s) (dataset.allow_drift=true): src/a.py: changed; src/b.py: missing; "
        "its entity ids and line ranges may no longer hold, so this verdict is provisional"
    )
    out = project.root / "out"
    assert json.loads((out / "gates.json").read_text())["warnings"] == [warning]
    assert stream.getvalue().rstrip().endswith("Result: PASSED (provisional: 1 warning(s) above)")
    summary = (out / "summary.md").read_text()
    assert summary.startswith("## ✓ PASSED (provisional) · evalframe · unit")
    assert f"> ⚠ {warning}" in summary
    page = (out / "report.html").read_text()
    banner = page.split('id="verdict">', 1)[1].split("</div>", 1)[0]
    assert banner.startswith("✓ PASSED: every required gate passed")
    assert "(provisional: 1 warning(s) below)" in banner
    assert "src/a.py: changed; src/b.py: missing" in banner


def test_a_run_file_with_queries_the_golden_set_lacks_says_so(project: Project) -> None:
    """They are ignored by every metric, and counted and named rather than dropped silently."""
    run = project.root / "run.trec"
    lines = [f"{q} Q0 install 1 2.0 r" for q in ("1", "2", "3", "4", "extra-a", "extra-b")]
    run.write_text("\n".join(lines) + "\n")
    retriever = {"name": "run_file", "path": str(run), "format": "trec"}
    exp = validate_experiment(raw_config(project, retriever=retriever, corpus=None))
    out = io.StringIO()
    result = run_experiment(exp, reporters=[TerminalReport(out)], progress=False)
    assert result.evaluation.extra_queries == ["extra-a", "extra-b"]
    summary = json.loads((project.root / "out" / "summary.json").read_text())
    assert summary["counts"]["extra_queries_in_run"] == 2
    assert "the run has 2 queries not in the golden set (ignored): extra-a, extra-b" in (
        out.getvalue()
    )


def test_a_run_file_of_none_of_the_golden_queries_is_refused(project: Project) -> None:
    """The wrong file (or ids written another way): every golden query was missing, every
    score 0, exit 0 with a note. `trec-eval` refuses the same; so does a run now."""
    run = project.root / "run.trec"
    run.write_text("".join(f"Q{q} Q0 install 1 2.0 r\n" for q in ("1", "2", "3")))
    retriever = {"name": "run_file", "path": str(run), "format": "trec"}
    exp = validate_experiment(raw_config(project, retriever=retriever, corpus=None))
    with pytest.raises(DataError) as err:
        run_experiment(exp, progress=False)
    assert err.value.key == "retriever.path"
    assert err.value.message.startswith(
        "the run answers 3 queries and none is a golden query (its ids: Q1, Q2, Q3; "
        "the golden set's: 1, 2, 3"
    )
    out = project.root / "out"  # made before retrieval (the CLI removes it), left empty
    assert not out.exists() or list(out.iterdir()) == []


@pytest.mark.parametrize("shown", [True, False])
def test_every_step_after_retrieval_shows_progress_unless_asked_not_to(
    project: Project, monkeypatch: pytest.MonkeyPatch, shown: bool
) -> None:
    from evalframe.core import progress
    from evalframe.report.page import RunPage

    display = RecordingDisplay()
    monkeypatch.setattr(progress, "_make_progress", lambda: display)
    monkeypatch.setattr(sys, "stderr", TerminalStderr())
    # one query nothing answers, so that the failure categories have a query to look at
    unanswered = {"id": 99, "question": "zzyzx qwv", "expected_chunks": ["slices"]}
    project.golden.write_text(
        project.golden.read_text(encoding="utf-8") + json.dumps(unanswered) + "\n",
        encoding="utf-8",
    )
    exp = validate_experiment(raw_config(project, report={"html": True}))
    run_experiment(exp, reporters=[RunPage(), TerminalReport(io.StringIO())], progress=shown)
    # after the retrieval (bm25 indexes inside it, on its first query)
    after = display.steps[display.steps.index("bm25: indexing 4 documents") + 1 :] if shown else []
    assert display.steps[:3] == (
        ["loading the corpus (jsonl)", "loading the golden set (jsonl)", "retrieving (bm25)"]
        if shown
        else []
    )
    assert after == (
        [
            f"scoring {len(GOLDEN) + 1} queries",
            "failure categories (1 failed query)",
            "writing the run folder",
            "writing the run page (report.html)",
        ]
        if shown
        else []
    )
    assert shown or display.steps == []


@pytest.mark.parametrize(
    ("depth", "measures", "said"),
    [
        (5, ["R@5", "RR", "R@10"], "R@10 looks past depth 5"),
        (3, ["nDCG@10", "P@5"], "nDCG@10, P@5 look past depth 3"),
        (5, ["R@5", "RR", "IPrec@0.5"], None),  # a recall level, not a rank
        (10, ["R@10", "RR"], None),
    ],
)
def test_a_cutoff_deeper_than_the_rankings_is_said(
    project: Project,
    capsys: pytest.CaptureFixture[str],
    depth: int,
    measures: list[str],
    said: str | None,
) -> None:
    """R@10 of a run that retrieves 5 a query is R@5 under a name that promises 10."""
    cfg = raw_config(
        project,
        depth=depth,
        metrics={"measures": measures},
        report={"html": False, "criterion": measures[0]},
    )
    validate_experiment(cfg)
    err = capsys.readouterr().err
    if said is None:
        assert "past depth" not in err
    else:
        assert f"warning: {said}" in err
        assert f"set depth={max(int(m.split('@')[1]) for m in measures if '@' in m)}" in err
