"""The command line as a user runs it: real Hydra composition, real subprocesses.

Each test runs ``python -m evalframe`` in a temporary project folder and checks
the exit code, the report and the files written.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evalframe.app import cli
from tests.conftest import GOLDEN, Project, write_jsonl

pytestmark = pytest.mark.slow


def run_dir(project: Project) -> Path:
    return project.root / "out"


def test_a_run_prints_the_report_writes_outputs_and_exits_0(project: Project) -> None:
    res = project.run(*project.data_args(), f"hydra.run.dir={run_dir(project)}")
    assert res.code == 0, res.stderr
    assert "Results (mean ± std" in res.stdout
    assert "Result: PASSED" in res.stdout
    assert "By difficulty:" in res.stdout
    assert "Per-query breakdown" in res.stdout
    out = run_dir(project)
    for name in (
        "config.yaml",
        "run.trec",
        "per_query.jsonl",
        "metrics.json",
        "gates.json",
        "summary.json",
    ):
        assert (out / name).is_file(), name
    metrics = json.loads((out / "metrics.json").read_text())
    assert all(isinstance(v, (int, float)) or v is None for v in metrics.values())
    assert metrics["queries"] == len(GOLDEN)
    per_query = [json.loads(line) for line in (out / "per_query.jsonl").read_text().splitlines()]
    assert [r["query_id"] for r in per_query] == ["1", "2", "3", "4"]
    assert per_query[0]["expected"] == ["install"]
    assert per_query[0]["retrieved"][0] == "install"
    assert per_query[3]["status"] == "–"  # the negative example
    assert not list(out.glob("*.tmp")), "no temporary files are left behind"


def test_unknown_retriever_group_option_lists_the_available_ones(project: Project) -> None:
    res = project.run(*project.data_args(), "retriever=nope")
    assert res.code == 2
    assert "no retriever config named 'nope'" in res.stderr
    assert "bm25" in res.stderr
    assert "run_file" in res.stderr
    assert "Traceback" not in res.stderr


def test_a_near_miss_gets_a_suggestion(project: Project) -> None:
    res = project.run(*project.data_args(), "retriever=bm52")
    assert res.code == 2
    assert "did you mean 'bm25'?" in res.stderr


def test_unknown_plugin_name_lists_registered_plugins(project: Project) -> None:
    res = project.run(*project.data_args(), "retriever.name=bm52")
    assert res.code == 2
    assert "config key retriever.name" in res.stderr
    assert "no retriever named 'bm52'; available: " in res.stderr
    assert "bm25" in res.stderr and "run_file" in res.stderr
    assert "did you mean 'bm25'?" in res.stderr


def test_a_gate_above_the_runs_value_fails_the_run_and_names_the_gate(
    project: Project,
) -> None:
    # RR is 1 on this set: a gate RR < 0.5 is one it can fail (RR > 1, which no run meets,
    # is refused before retrieval: test_hydra_app)
    res = project.run(
        *project.data_args(), "gates=quickstart", 'gates.mrr.op="<"', "gates.mrr.value=0.5"
    )
    assert res.code == 1, res.stderr
    assert "✗ mrr:" in res.stdout
    assert "required gate(s) failed: mrr" in res.stdout


def test_advisory_gate_failure_does_not_fail_the_run(project: Project) -> None:
    res = project.run(
        *project.data_args(),
        "gates=quickstart",
        'gates.mrr.op="<"',
        "gates.mrr.value=0.5",
        "gates.mrr.severity=advisory",
    )
    assert res.code == 0
    assert "mrr (advisory)" in res.stdout


@pytest.mark.parametrize(
    ("override", "fragment"),
    [
        # Hydra's "not in struct", in evalframe's words
        (
            "retriever.k11=3",
            "config key retriever.k11: there is no setting retriever.k11 to override",
        ),
        (
            "+retriever.k11=3",
            "config key retriever.k11: invalid settings for retriever 'bm25': unknown key",
        ),
        (
            "retriever.k1=-1",
            "config key retriever.k1: invalid settings for retriever 'bm25': "
            "Input should be greater than 0 (got -1)",
        ),
        ("depth=0", "depth"),
        ("metrics.measures=[Foo]", "no metric named 'Foo'"),
        ("report.criterion=AP@3", "report.criterion"),
        # Hydra's own sentences (no key, "HYDRA_FULL_ERROR=1"), and a traceback for `=3`
        ("=3", "error: the override '=3' has no key before its '='"),
        ("depth=1,2", "config key depth: depth=1,2 is a comma-separated value"),
        ("~nosuch", "config key nosuch: ~nosuch deletes a key the config does not have"),
        ("+retriever=bm25", "config key retriever: +retriever=... adds a second retriever"),
        ("~hydra.run.dir", "config key hydra.run.dir: ~hydra.run.dir: Hydra's own setting"),
    ],
)
def test_config_mistakes_exit_2_with_the_key(
    project: Project, override: str, fragment: str
) -> None:
    res = project.run(*project.data_args(), override)
    assert res.code == 2, (res.stdout, res.stderr)
    assert fragment in res.stderr
    assert "Traceback" not in res.stderr and "HYDRA_FULL_ERROR" not in res.stderr


def test_missing_golden_file(project: Project) -> None:
    res = project.run(
        f"dataset.path={project.root / 'nope.jsonl'}", f"corpus.path={project.corpus}"
    )
    assert res.code == 2
    assert "golden set not found" in res.stderr
    assert "dataset.path" in res.stderr
    # a folder of per-domain files is a golden set too: the message says both
    assert "(expected an existing .jsonl file, or a folder of them (one per domain))" in (
        res.stderr
    )


def test_a_run_that_stops_at_a_mistake_leaves_no_folder_behind(project: Project) -> None:
    """Hydra makes the run folder before the job reads its data: after exit 2 it held
    only .hydra/ and an empty log, which read as a run. A sweep's job keeps its folder
    (job.json says how it ended)."""
    bad = f"dataset.path={project.root / 'nope.jsonl'}"
    res = project.run(bad, f"corpus.path={project.corpus}", "hydra.run.dir=out")
    assert res.code == 2, res.stderr
    assert not (project.root / "out").exists()
    # nor the folders Hydra made above it (`outputs/<experiment>/` on a first run); one
    # that holds something else stays
    (project.root / "kept" / "other").mkdir(parents=True)
    res = project.run(bad, f"corpus.path={project.corpus}", "hydra.run.dir=kept/a/b/run")
    assert res.code == 2, res.stderr
    assert sorted(p.name for p in (project.root / "kept").iterdir()) == ["other"]
    res = project.run(bad, f"corpus.path={project.corpus}", "-m", "hydra.sweep.dir=swept")
    assert res.code == 2, res.stderr
    job = json.loads((project.root / "swept" / "0" / "job.json").read_text())
    assert job["exit_code"] == 2


def test_no_dataset_path_says_what_to_set(project: Project) -> None:
    res = project.run(f"corpus.path={project.corpus}")
    assert res.code == 2
    assert "dataset.path" in res.stderr
    assert "Traceback" not in res.stderr


def test_malformed_jsonl_line_gives_file_and_line(project: Project) -> None:
    project.golden.write_text(project.golden.read_text() + '{"id": 9, "question": \n')
    res = project.run(*project.data_args())
    assert res.code == 2
    assert f"{project.golden}:5: line is not valid JSON" in res.stderr


def test_duplicate_golden_id(project: Project) -> None:
    write_jsonl(project.golden, [*GOLDEN, {**GOLDEN[0], "question": "again?"}])
    res = project.run(*project.data_args())
    assert res.code == 2
    assert (
        f"{project.golden}:5: query id '1' is duplicated (first at {project.golden}:1)"
        in res.stderr
    )


def test_run_file_retriever_with_a_missing_query(project: Project) -> None:
    run = project.root / "system.run"
    run.write_text("1 Q0 install 1 2.0 sys\n2 Q0 cache 1 1.0 sys\n2 Q0 gates 2 0.5 sys\n")
    res = project.run(
        *project.data_args(),
        "retriever=run_file",
        f"retriever.path={run}",
        f"hydra.run.dir={run_dir(project)}",
    )
    assert res.code == 0, res.stderr
    assert "2 golden queries have no ranking in the run" in res.stdout
    summary = json.loads((run_dir(project) / "summary.json").read_text())
    assert summary["counts"]["missing_queries"] == ["3", "4"]
    metrics = json.loads((run_dir(project) / "metrics.json").read_text())
    # RR per query: q1 = 1, q2 = 1/2, q3 missing = 0 (missing_query=zero), q4 negative = skipped
    assert metrics["RR"] == pytest.approx((1 + 1 / 2 + 0) / 3)


def test_a_users_own_project_experiment(project: Project) -> None:
    exp = project.root / "conf" / "experiment"
    exp.mkdir(parents=True)
    (exp / "mine.yaml").write_text(
        "# @package _global_\n"
        "experiment: mine\n"
        f"dataset: {{path: {project.golden}}}\n"
        f"corpus: {{path: {project.corpus}}}\n"
        "retriever: {k1: 0.9, b: 0.4}\n"
        "metrics: {measures: [R@5, RR, nDCG@10]}\n"
    )
    res = project.run("+experiment=mine")
    assert res.code == 0, res.stderr
    assert "evalframe · mine ·" in res.stdout
    assert list((project.root / "outputs" / "mine").glob("*/metrics.json"))


def test_an_experiment_file_whose_package_line_hydra_missed_is_said_before_any_folder(
    project: Project,
) -> None:
    # a comment above `# @package _global_` ends Hydra's header: the keys land under
    # `experiment:`, and the run folder would be named after the mapping's text
    exp = project.root / "conf" / "experiment"
    exp.mkdir(parents=True)
    (exp / "x.yaml").write_text(
        "# conf/experiment/x.yaml\n"
        "# @package _global_\n"
        "experiment: x\n"
        f"dataset: {{path: {project.golden}}}\n"
        "depth: 20\n"
    )
    for args in (["+experiment=x"], ["-m", "+experiment=x", "depth=5,10"]):
        res = project.run(*args)
        assert res.code == 2, res.stderr
        assert res.stderr.startswith(
            "error: config key experiment: not a name (expected a name such as quickstart; "
            "got a mapping with keys experiment, dataset, depth)\n"
        )
        assert "`# @package _global_` on the experiment file's very first line" in res.stderr
        assert "Traceback" not in res.stderr
    assert not (project.root / "outputs").exists()
    assert not (project.root / "multirun").exists()
    # the line first, after an invisible byte-order mark: the hint names the mark
    (exp / "x.yaml").write_bytes(b"\xef\xbb\xbf# @package _global_\nexperiment: x\ndepth: 20\n")
    res = project.run("+experiment=x")
    assert res.code == 2, res.stderr
    assert f"hint: {exp / 'x.yaml'} starts with a byte-order mark" in res.stderr
    assert not (project.root / "outputs").exists()


def test_unknown_experiment_lists_the_available_ones(project: Project) -> None:
    res = project.run("+experiment=quikstart")
    assert res.code == 2
    assert "did you mean 'quickstart'?" in res.stderr


def test_sweep_runs_one_job_per_value(project: Project) -> None:
    res = project.run(
        "-m",
        *project.data_args(),
        "retriever.k1=0.9,1.5",
        f"hydra.sweep.dir={project.root / 'sweep'}",
    )
    assert res.code == 0, res.stderr
    assert sorted(p.parent.name for p in (project.root / "sweep").glob("*/metrics.json")) == [
        "0",
        "1",
    ]


def test_cfg_job_prints_the_composed_config_and_runs_nothing(project: Project) -> None:
    res = project.run("+experiment=quickstart", "--cfg", "job")
    assert res.code == 0
    assert "experiment: quickstart" in res.stdout
    assert "Results" not in res.stdout


def test_unknown_subcommand_exits_2(project: Project) -> None:
    res = project.run("frobnicate")
    assert res.code == 2
    assert "unknown command 'frobnicate'" in res.stderr


def test_plugins_list_shows_kind_distribution_and_description(project: Project) -> None:
    res = project.run("plugins", "list")
    assert res.code == 0
    bm25 = next(line for line in res.stdout.splitlines() if line.startswith("retriever  bm25"))
    assert "evalframe-bm25" in bm25
    assert "BM25" in bm25
    assert any(line.startswith("metric") and " nDCG " in line for line in res.stdout.splitlines())


def test_plugins_show_renders_settings(project: Project) -> None:
    res = project.run("plugins", "show", "retriever", "bm25")
    assert res.code == 0
    assert "k1 (float, default 1.2): term-frequency saturation" in res.stdout


def test_plugins_show_gives_a_metrics_cutoff_and_range(project: Project) -> None:
    """The range a gate's threshold is checked against, where a user looks a metric up."""
    res = project.run("plugins", "show", "metric", "R")
    assert res.code == 0
    assert "  needs @k; values from 0 to 1" in res.stdout.splitlines()
    res = project.run("plugins", "show", "metric", "NumRet")
    assert "  takes no @k; values >= 0" in res.stdout.splitlines()


def test_help_imports_no_heavy_module() -> None:
    code = (
        "import sys; from evalframe.app.cli import main; main(['--help']); "
        "print(sorted(m for m in ('hydra', 'mlflow', 'dvc', 'torch', 'numpy', 'bm25s') "
        "if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "+experiment=NAME" in proc.stdout
    assert proc.stdout.strip().endswith("[]")


def test_help_lists_plugin_commands_from_their_entry_points_and_fits_100_columns() -> None:
    """The core names no plugin: `runs`, `sync`, `ui` come from evalframe-mlflow's metadata."""
    code = (
        "import sys; from evalframe.app.cli import main; main(['--help']); "
        "print(sorted(m for m in sys.modules if m.startswith('evalframe_') and '.' in m))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    lines = proc.stdout.splitlines()
    for command, words in (("runs", "MLflow store"), ("sync", "unreachable"), ("ui", "UI")):
        line = next(x for x in lines if x.startswith(f"  evalframe {command} "))
        assert words in line
    assert lines[-1] == "[]"  # found without importing a plugin's modules (only its package)
    assert max(len(x) for x in lines) <= 100


def test_console_script_matches_python_m() -> None:
    script = Path(sys.executable).with_name("evalframe")
    proc = subprocess.run([str(script), "--help"], capture_output=True, text=True, check=True)
    assert proc.stdout.startswith("evalframe ")


def test_no_arguments_at_all_points_to_an_experiment(project: Project) -> None:
    res = project.run()
    assert res.code == 2
    assert "config key dataset.path" in res.stderr and "+experiment=quickstart" in res.stderr
    assert "not found: ???" not in res.stderr  # the unset value never reaches a loader


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
@pytest.mark.parametrize("retrieval_cache", ["true", "false"])
def test_a_cache_folder_that_cannot_be_made_is_exit_2_whatever_is_cached(
    project: Project, retrieval_cache: str
) -> None:
    """With the retrieval cache off, BM25's token and index files were the first writers,
    and a folder /proc refuses (ENOENT) crashed the run with exit 3."""
    res = project.run(
        *project.data_args(),
        "output.cache_dir=/proc/evalframe-no-such-cache",
        f"cache.retrieval={retrieval_cache}",
        "tracking.name=none",
    )
    assert res.code == 2, res.stderr
    assert "/proc/evalframe-no-such-cache: the cache folder cannot be made" in res.stderr
    assert "Traceback" not in res.stderr


def test_ctrl_c_in_any_command_is_exit_130_without_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C while a command runs (or still imports what it needs) is the shell's 130
    and one word, as it is for a run; it was a KeyboardInterrupt traceback."""
    import evalframe.app.commands as commands

    def interrupted(argv: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(commands, "cache_main", interrupted)
    assert cli.main(["cache", "info"]) == 130
    err = capsys.readouterr().err
    assert err == "interrupted\n"


def test_hydras_traceback_when_asked_for_is_still_a_config_error(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HYDRA_FULL_ERROR=1 makes Hydra raise its composition error: the traceback is shown
    as asked, and the exit code stays 2 (the config's mistake), not 3 and "a bug"."""
    monkeypatch.setenv("HYDRA_FULL_ERROR", "1")
    res = project.run(*project.data_args(), "retriever.k11=3", "hydra.run.dir=out")
    assert res.code == 2, res.stderr
    assert "Traceback" in res.stderr and "this is a bug" not in res.stderr
    assert res.stderr.rstrip().splitlines()[-1] == (
        "error: Hydra could not compose the config: Could not override 'retriever.k11'. "
        "(above is the traceback HYDRA_FULL_ERROR=1 asks for)"
    )


def test_version_prints_the_version_and_refuses_what_it_does_not_take(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from evalframe import __version__

    for spelled in (["version"], ["--version"]):
        assert cli.main(spelled) == 0
        assert capsys.readouterr().out == f"evalframe {__version__}\n"
    # `version --json` printed the plain line, as if --json were understood
    assert cli.main(["version", "--json"]) == 2
    seen = capsys.readouterr()
    assert seen.out == "" and "unrecognized arguments: --json" in seen.err


def test_a_plugins_log_warnings_go_to_stderr_never_into_the_report(project: Project) -> None:
    """Hydra's console log handler wrote to stdout: one "[WARNING] ... giving up" line per
    query of a service that kept failing sat in the report a user pipes to a file."""
    res = project.run(
        *project.data_args(),
        "retriever=http",
        "retriever.url=http://127.0.0.1:9/",  # nothing listens: each query fails
        "retriever.retries=1",
        "retriever.backoff_seconds=0.01",
        "retriever.allow_failed_queries=true",  # each lost query is then a warning
        "tracking=none",
    )
    assert res.code in (0, 1), res.stderr
    assert "giving up after 2 attempts" in res.stderr
    assert "WARNING" not in res.stdout and "giving up" not in res.stdout


def test_a_run_stopped_by_a_failing_service_says_it_once(project: Project) -> None:
    """Without allow_failed_queries the run stops at the first query that fails for good:
    the error paragraph says it, and the queries in flight beside it (up to twice
    max_concurrency) each logging "giving up" said it again, timestamped, above it."""
    res = project.run(
        *project.data_args(),
        "retriever=http",
        "retriever.url=http://127.0.0.1:9/",
        "retriever.retries=1",
        "retriever.backoff_seconds=0.01",
        "retriever.max_concurrency=4",
        "tracking=none",
    )
    assert res.code == 2, res.stderr
    assert "giving up" not in res.stderr and "WARNING" not in res.stderr
    assert res.stderr.startswith("error: http retriever: query "), res.stderr
    assert "failed after 2 attempts: connection failed" in res.stderr
