"""Sweeps: trackers hear on_sweep_start before the jobs and on_sweep_end after, even on failure.

These run real Hydra multiruns in-process (basic launcher) with a recording
tracker selected by ``tracking=sweeprec`` from the project's own ./conf.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalframe.app.hydra_app import run_hydra, tracking_from_env
from evalframe.assess.runfolder import RunFolder, SweepFolder
from evalframe.plugin.hooks import SweepContext, SweepJob
from evalframe.plugin.protocols import PluginContext
from evalframe.plugin.registry import TRACKERS
from tests.conftest import Project


class SweepRecorder:
    """Records sweep hooks; optionally raises SystemExit in one job, as a crashing tool would."""

    events: list[tuple[str, Any]] = []
    explode_at_depth: int | None = None
    interrupt_at_depth: int | None = None
    page: str | None = None

    def __init__(self, config: Any, context: PluginContext) -> None:
        pass

    def on_sweep_start(self, sweep: SweepContext) -> None:
        SweepRecorder.events.append(("start", sweep.sweep_dir))

    def on_run_start(self, ctx: Any) -> None:
        SweepRecorder.events.append(("run", ctx.metadata.get("sweep")))
        if ctx.config.get("depth") == SweepRecorder.explode_at_depth:
            raise SystemExit(9)  # not an Exception: the hook relay lets it through
        if ctx.config.get("depth") == SweepRecorder.interrupt_at_depth:
            raise KeyboardInterrupt  # Ctrl-C while the job runs

    def on_sweep_end(self, sweep: SweepContext, jobs: list[SweepJob]) -> None:
        SweepRecorder.events.append(("end", jobs))
        page = sweep.sweep_dir / SweepFolder.REPORT_HTML  # written before the end is heard
        SweepRecorder.page = page.read_text() if page.is_file() else None


@pytest.fixture
def sweep_project(project: Project, monkeypatch: pytest.MonkeyPatch) -> Project:
    conf = project.root / "conf" / "tracking"
    conf.mkdir(parents=True)
    (conf / "sweeprec.yaml").write_text("name: sweeprec\n")
    monkeypatch.chdir(project.root)
    monkeypatch.setenv("EVALFRAME_CACHE_DIR", str(project.root / ".cache"))
    SweepRecorder.events = []
    SweepRecorder.explode_at_depth = None
    SweepRecorder.interrupt_at_depth = None
    SweepRecorder.page = None
    return project


def _sweep(project: Project, *overrides: str, page: bool = False) -> int:
    with TRACKERS.scoped() as reg:
        reg.add("sweeprec", SweepRecorder)
        return run_hydra(
            [
                "-m",
                *project.data_args(),
                *(["report.html=true"] if page else []),  # the sweep's page, from the jobs'
                "tracking=sweeprec",
                "stats.bootstrap=0",
                f"hydra.sweep.dir={project.root / 'sweep'}",
                *overrides,
            ]
        )


def test_a_sweep_is_announced_before_its_jobs_and_summed_up_after(sweep_project: Project) -> None:
    code = _sweep(sweep_project, "depth=3,5", page=True)
    assert code == 0
    kinds = [e[0] for e in SweepRecorder.events]
    assert kinds == ["start", "run", "run", "end"]
    sweep_dir = (sweep_project.root / "sweep").resolve()
    assert SweepRecorder.events[0][1] == sweep_dir
    first_job = SweepRecorder.events[1][1]
    assert (first_job["dir"], first_job["num"]) == (str(sweep_dir), 0)
    assert first_job["overrides"][-2:] == ["stats.bootstrap=0", "depth=3"]
    jobs = SweepRecorder.events[-1][1]
    assert [(j.num, j.overrides[-1], j.exit_code) for j in jobs] == [
        (0, "depth=3", 0),
        (1, "depth=5", 0),
    ]
    assert jobs[1].summary["depth"] == 5
    record = json.loads((sweep_dir / "1" / RunFolder.JOB).read_text())
    assert (record["exit_code"], record["error"]) == (0, None)
    # one page compares the jobs, each labelled by the override that tells it apart
    page = SweepRecorder.page
    assert page is not None and "sweep of default (2 jobs" in page
    runs = page[page.index('class="runs"') :]
    assert "<b>depth=3</b>" in runs and "<b>depth=5</b>" in runs and "stats.bootstrap" not in runs
    assert (sweep_dir / "0" / RunFolder.REPORT_HTML).is_file()  # and each job has its own
    assert record["sweep_id"] == json.loads((sweep_dir / ".evalframe-sweep.json").read_text())["id"]


def test_the_sweep_still_ends_when_a_job_kills_hydra(sweep_project: Project) -> None:
    """Hydra skips on_multirun_end when a job raises; run_hydra ends the sweep itself."""
    SweepRecorder.explode_at_depth = 5
    code = _sweep(sweep_project, "depth=3,5")
    assert code != 0
    assert SweepRecorder.events[-1][0] == "end"
    jobs = SweepRecorder.events[-1][1]
    assert [(j.num, j.exit_code) for j in jobs] == [(0, 0), (1, None)]
    assert [e[0] for e in SweepRecorder.events].count("end") == 1


def test_ctrl_c_in_a_job_stops_the_sweep_with_130_and_says_interrupted_once(
    sweep_project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    SweepRecorder.interrupt_at_depth = 5
    assert _sweep(sweep_project, "depth=3,5,7") == 130
    err = capsys.readouterr().err
    assert err.splitlines().count("interrupted") == 1 and "Traceback" not in err
    jobs = SweepRecorder.events[-1][1]  # the third job never ran
    assert [(j.num, j.exit_code) for j in jobs] == [(0, 0), (1, 130)]


def test_ctrl_c_between_a_sweeps_jobs_says_interrupted_too(
    sweep_project: Project, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C outside a job's own handler (in Hydra's launcher, or while the job still
    imports the pipeline) ended the sweep with 130 and not a word."""
    import evalframe.app.hydra_app as hydra_app

    run_task = hydra_app._run_task
    seen: list[int] = []

    def interrupted_second(cfg: Any) -> Any:
        seen.append(int(cfg.depth))
        if len(seen) == 2:
            raise KeyboardInterrupt
        return run_task(cfg)

    monkeypatch.setattr(hydra_app, "_run_task", interrupted_second)
    assert _sweep(sweep_project, "depth=3,5,7") == 130
    err = capsys.readouterr().err
    assert err.splitlines().count("interrupted") == 1 and "Traceback" not in err
    assert seen == [3, 5]


def test_a_job_with_a_config_error_is_recorded_with_exit_code_2(sweep_project: Project) -> None:
    code = _sweep(sweep_project, "depth=3,0")
    assert code == 2
    jobs = SweepRecorder.events[-1][1]
    assert [j.exit_code for j in jobs] == [0, 2]
    assert "depth" in (jobs[1].error or "")


def test_collect_jobs_reads_folders_in_job_order(tmp_path: Path) -> None:
    for num in (10, 2):
        job = tmp_path / str(num)
        (job / ".hydra").mkdir(parents=True)
        (job / ".hydra" / "overrides.yaml").write_text(f"- depth={num}\n")
        SweepFolder.record_job(job, 1 if num == 2 else 0)
    (tmp_path / "3").mkdir()  # a job that never got to write anything
    (tmp_path / "notes").mkdir()  # not a job folder
    jobs = SweepFolder(tmp_path).jobs()
    assert [(j.num, j.overrides, j.exit_code) for j in jobs] == [
        (2, ("depth=2",), 1),
        (3, (), None),
        (10, ("depth=10",), 0),
    ]


def test_tracking_can_be_chosen_by_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALFRAME_TRACKING", "none")
    assert tracking_from_env(["depth=3"]) == ["tracking=none", "depth=3"]
    assert tracking_from_env(["tracking=mlflow"]) == ["tracking=mlflow"]  # the command line wins
    monkeypatch.delenv("EVALFRAME_TRACKING")
    assert tracking_from_env(["depth=3"]) == ["depth=3"]


def test_a_reused_sweep_folder_reports_only_the_new_sweeps_jobs(sweep_project: Project) -> None:
    """hydra.sweep.dir=fixed: the first sweep's failed job 1 is not the second sweep's."""
    assert _sweep(sweep_project, "depth=3,0") == 2
    SweepRecorder.events = []
    assert _sweep(sweep_project, "depth=4") == 0
    jobs = SweepRecorder.events[-1][1]
    assert [(j.num, j.overrides[-1], j.exit_code) for j in jobs] == [(0, "depth=4", 0)]


def _composed(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The overrides of every composition Hydra makes from here on (a spy on its loader)."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl

    seen: list[list[str]] = []
    load = ConfigLoaderImpl.load_configuration

    def spy(self: Any, config_name: Any, overrides: list[str], *args: Any, **kw: Any) -> Any:
        seen.append(list(overrides))
        return load(self, config_name, overrides, *args, **kw)

    monkeypatch.setattr(ConfigLoaderImpl, "load_configuration", spy)
    return seen


def test_a_run_composes_its_config_once(
    sweep_project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hydra 1.3 composes once to read ``hydra.mode`` and again to run; evalframe skips
    the first when nothing sets ``hydra.mode``, and lets it happen when something may."""
    seen = _composed(monkeypatch)
    with TRACKERS.scoped() as reg:
        reg.add("sweeprec", SweepRecorder)
        args = [*sweep_project.data_args(), "tracking=sweeprec", "stats.bootstrap=0"]
        out = f"hydra.run.dir={sweep_project.root / 'one'}"
        assert run_hydra([*args, out]) == 0
        assert len(seen) == 1
        assert run_hydra([*args, "hydra.mode=RUN", out]) == 0
    assert len(seen) == 3  # Hydra's own get_mode composed first
    assert [e[0] for e in SweepRecorder.events] == ["run", "run"]


def test_an_experiment_that_sets_hydra_mode_still_sweeps_without_dash_m(
    sweep_project: Project,
) -> None:
    experiment = sweep_project.root / "conf" / "experiment"
    experiment.mkdir(parents=True)
    (experiment / "swept.yaml").write_text(
        "# @package _global_\nhydra:\n  mode: MULTIRUN\n  sweeper:\n    params:\n      depth: 3,5\n"
    )
    with TRACKERS.scoped() as reg:
        reg.add("sweeprec", SweepRecorder)
        code = run_hydra(
            [
                *sweep_project.data_args(),
                "tracking=sweeprec",
                "stats.bootstrap=0",
                f"hydra.sweep.dir={sweep_project.root / 'sweep'}",
                "+experiment=swept",
            ]
        )
    assert code == 0
    assert [e[0] for e in SweepRecorder.events] == ["start", "run", "run", "end"]
    jobs = SweepRecorder.events[-1][1]
    assert [[o for o in j.overrides if o.startswith("depth=")] for j in jobs] == [
        ["depth=3"],
        ["depth=5"],
    ]


def test_a_misspelt_swept_key_is_evalframes_error_before_anything_is_made(
    sweep_project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """Hydra composes a sweep's jobs only as it launches them: a misspelt swept key was
    Hydra's raw text, after the sweep folder and the tracked parent run were made."""
    code = _sweep(sweep_project, "retriever.k11=0.9,1.2")
    err = capsys.readouterr().err
    assert code == 2, err
    assert "error: config key retriever.k11: there is no setting retriever.k11" in err
    assert "Could not override" not in err and "HYDRA_FULL_ERROR" not in err
    assert not (sweep_project.root / "sweep").exists()
    assert SweepRecorder.events == []  # no sweep was started, so none was tracked


def test_the_sweep_page_labels_a_lone_survivor_and_shows_the_headline_set(
    sweep_project: Project,
) -> None:
    """With one job failed, the other was labelled "0" (its overrides were all "shared"
    with itself); the page's table showed the first four measures, not the headline set
    the terminal's table shows."""
    code = _sweep(sweep_project, "depth=3,0", page=True)
    assert code == 2
    page = SweepRecorder.page
    assert page is not None
    survivor = RunFolder(sweep_project.root / "sweep" / "0")
    headline = survivor.summary()["headline"]
    head = page[page.index("<thead>") : page.index("</thead>")]
    for name in headline:
        assert f">{name}<" in head, (name, head)
    assert ">depth=3<" in page  # the survivor, labelled by what sets it apart
    assert "depth=0" in page  # the failed job, listed apart


def test_a_bad_value_every_job_shares_is_said_once_before_anything_is_made(
    sweep_project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """``report.terminal=short`` is the same in every job: each job printed the same
    error, after the sweep folder and the tracked parent were made."""
    code = _sweep(sweep_project, "depth=3,5", "report.terminal=short")
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("error: config key report.terminal:") == 1, err
    assert not (sweep_project.root / "sweep").exists()
    assert SweepRecorder.events == []


def test_a_bad_swept_value_fails_its_own_job_and_the_others_run(
    sweep_project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    code = _sweep(sweep_project, "depth=abc,3")
    err = capsys.readouterr().err
    assert code == 2, err
    assert "error: config key depth:" in err
    jobs = SweepRecorder.events[-1][1]
    assert [(j.overrides[-1], j.exit_code) for j in jobs] == [("depth=abc", 2), ("depth=3", 0)]


def test_a_sweep_over_a_config_group_leaves_every_value_to_its_job(
    sweep_project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each option of a swept group sets keys of its own, so the first job's config stands
    for no other: nothing is refused before the sweep, and each job says its error."""
    code = _sweep(sweep_project, "retriever=bm25,bm25", "report.terminal=short")
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("error: config key report.terminal:") == 2, err
    assert (sweep_project.root / "sweep").is_dir()


def test_a_tuning_sweeps_held_out_and_untuned_runs_have_pages_and_its_summary_comes_first(
    sweep_project: Project,
) -> None:
    """The held-out run is the figure to report: its folder gets the page and summary.md a
    trial gets (trackers show them), and tuning.md is written before the sweep's end is
    heard (the MLflow parent puts it above the trials' table)."""
    seen: dict[str, bool] = {}

    def on_sweep_end(self: Any, sweep: SweepContext, jobs: list[SweepJob]) -> None:
        seen["tuning.md"] = (sweep.sweep_dir / SweepFolder.TUNING_MD).is_file()

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(SweepRecorder, "on_sweep_end", on_sweep_end)
        code = _sweep(sweep_project, "tuning.metric=RR", "tuning.part=tune", "depth=3,5", page=True)
    assert code == 0
    sweep_dir = sweep_project.root / "sweep"
    assert seen == {"tuning.md": True}
    assert (sweep_dir / SweepFolder.TUNING_JSON).is_file()
    for run in ("heldout", "untuned_tune", "untuned_heldout"):
        folder = RunFolder(sweep_dir / run)
        assert folder.file(RunFolder.REPORT_HTML).is_file(), run
        assert folder.file(RunFolder.SUMMARY_MD).is_file(), run
