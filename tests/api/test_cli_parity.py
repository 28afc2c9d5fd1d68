"""The Python API against the command line: the same numbers, errors, verdicts and tracking.

Every shipped experiment runs both ways on the same config, and the files each
leaves are compared to the last digit. The command line runs them as one ``-m``
sweep (one process, each job exactly ``python -m evalframe +experiment=X``);
``evalframe.run`` then runs each in this process with the same cache folder.
The CLI's rankings are then found in the cache: a full hit proves that the API
composed the same retriever, corpus and settings (the key covers them all), and
it makes the latencies equal too, so ``metrics.json`` must be equal as a whole.
Scoring, intervals, slices, gates and analyses are computed again by the API run.

Not run here: ``cranfield_dense`` and ``cranfield_fusion``: embedding the 1400
Cranfield abstracts takes minutes on two cores (tests/experiments runs the dense
one once, through the command line). They compose through the same function as
the others; their config is still checked (``test_the_expensive_ones_compose_alike``).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import evalframe
from evalframe.app.compose import compose_config
from evalframe.core.errors import EvalframeError
from tests.experiments.cli import ROOT, read_json
from tests.experiments.cli import evalframe as cli

pytestmark = pytest.mark.slow

SHIPPED = sorted(p.stem for p in (ROOT / "conf" / "experiment").glob("*.yaml"))
EXPENSIVE = ("cranfield_dense", "cranfield_fusion")
#: a sweep of its own (hydra/sweeper=optuna): it cannot be one job of another sweep;
#: each of its trials is a cranfield_bm25 run, which is compared here
SWEEPS = ("cranfield_bm25_tune",)
CHEAP = [e for e in SHIPPED if e not in EXPENSIVE + SWEEPS]
#: Both sides: the page is drawn from the files compared here (and costs a second a run).
SAME = ["report.html=false"]
#: summary.json keys that say when and how a run ran, not what it measured
CIRCUMSTANCES = {"created", "retrieval_cache"}


def docs_keywords_golden(work: Path) -> None:
    """docs_keywords reads golden/docs_keywords.jsonl (DVC-tracked): take it from the
    repository's DVC storage by the md5 its .dvc file records, as `dvc pull` would."""
    import yaml

    stated = yaml.safe_load((ROOT / "golden" / "docs_keywords.jsonl.dvc").read_text())
    md5 = stated["outs"][0]["md5"]
    (work / "golden").mkdir()
    shutil.copy(
        ROOT / "dvc-storage" / "files" / "md5" / md5[:2] / md5[2:],
        work / "golden" / "docs_keywords.jsonl",
    )


@pytest.fixture(scope="module")
def cli_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every cheap shipped experiment through the command line: {experiment: run folder}."""
    work = tmp_path_factory.mktemp("parity")
    docs_keywords_golden(work)
    sweep = work / "cli"
    proc = cli(
        work,
        "-m",
        f"+experiment={','.join(CHEAP)}",
        *SAME,
        f"hydra.sweep.dir={sweep}",
        timeout=600,
        cache=work / "cache",
    )
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    folders = {}
    for job in sorted(p for p in sweep.iterdir() if p.is_dir() and p.name.isdigit()):
        folders[read_json(job / "summary.json")["experiment"]] = job
    assert sorted(folders) == CHEAP
    return {"work": work, "folders": folders}


def _numbers(summary: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in summary.items() if k not in CIRCUMSTANCES}


@pytest.mark.parametrize("experiment", CHEAP)
def test_python_gives_the_command_lines_numbers(
    experiment: str, cli_runs: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    work: Path = cli_runs["work"]
    theirs: Path = cli_runs["folders"][experiment]
    monkeypatch.chdir(work)
    monkeypatch.setenv("EVALFRAME_CACHE_DIR", str(work / "cache"))
    monkeypatch.setenv("EVALFRAME_TRACKING", "none")
    result = evalframe.run(experiment, SAME, output_dir=work / "py" / experiment, progress=False)
    ours = result.path
    cache = read_json(ours / "timings.json")["retrieval_cache"]
    # A retriever that is not cached (a run file is read again) has its own wall times;
    # a cached one answered with the command line's rankings, latencies included.
    timed = cache is not None
    if timed:
        assert cache["misses"] == 0 and cache["hits"] > 0  # the same key: the same inputs

    def numbers(folder: Path) -> tuple[Any, ...]:
        metrics = read_json(folder / "metrics.json")
        summary = read_json(folder / "summary.json")
        records = [json.loads(x) for x in (folder / "per_query.jsonl").read_text().splitlines()]
        if not timed:
            metrics = {k: v for k, v in metrics.items() if not k.startswith("latency.")}
            summary.pop("latency", None)
            for r in records:
                r.pop("latency_ms", None)
        summary = {k: v for k, v in summary.items() if k not in CIRCUMSTANCES}
        return metrics, summary, records, read_json(folder / "gates.json")

    # every number: aggregates, CIs, slices, gates, analyses, each query's values and ranking
    assert numbers(ours) == numbers(theirs)
    assert result.exit_code == read_json(theirs / "summary.json")["exit_code"]
    assert result.metrics == evalframe.load(theirs).metrics
    # the same composed config, but for the folder it was written to
    mine, cli_config = result.config, evalframe.load(theirs).config
    mine["output"].pop("dir"), cli_config["output"].pop("dir")
    assert mine == cli_config
    for name in ("calibration.json", "benefit.json", "comparison.json"):
        if (theirs / name).is_file():
            assert read_json(ours / name) == read_json(theirs / name), name


@pytest.mark.parametrize("experiment", EXPENSIVE)
def test_the_expensive_ones_compose_alike(
    experiment: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the command line would run for them (its ``--cfg job --resolve``) is what
    evalframe.run would, but for the folder."""
    proc = cli(
        tmp_path, f"+experiment={experiment}", "--cfg", "job", "--resolve", "hydra.run.dir=x"
    )
    assert proc.returncode == 0, proc.stderr
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EVALFRAME_TRACKING", "none")  # as cli() sets it
    monkeypatch.setenv("EVALFRAME_CACHE_DIR", str(tmp_path / ".cache"))
    import yaml

    theirs = yaml.safe_load(proc.stdout)
    ours = compose_config([f"+experiment={experiment}"], run_dir="x").raw
    assert theirs["output"].pop("dir") is None  # --cfg prints before Hydra sets the folder
    assert ours["output"].pop("dir") == str(Path("x").absolute())
    assert ours == theirs


@pytest.mark.parametrize(
    "overrides",
    [
        ["+experiment=quickstart", "retriever.k11=1"],  # Hydra: no such key
        ["+experiment=quickstart", "retriever.k1=-1"],  # pydantic: out of range
        ["+experiment=quickstart", "retriever=bm26"],  # a group option that does not exist
        ["dataset.path=nowhere.jsonl", "corpus=none"],  # a file that does not exist
    ],
)
def test_a_user_error_is_the_one_the_command_line_prints(
    overrides: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proc = cli(tmp_path, *overrides)
    assert proc.returncode == 2
    monkeypatch.chdir(tmp_path)
    with pytest.raises(EvalframeError) as caught:
        evalframe.run(overrides=overrides)
    assert caught.value.render() == proc.stderr.strip()


def test_verdicts_are_evalframe_compares(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EVALFRAME_CACHE_DIR", str(tmp_path / "cache"))
    settings = ["tracking=none", "report.html=false"]
    base = evalframe.run("quickstart", settings, output_dir="base")
    tuned = evalframe.run("quickstart", [*settings, "retriever.k1=0.6"], output_dir="tuned")
    corpus = (ROOT / "evalframe/data/quickstart/corpus.jsonl").read_text(encoding="utf-8")
    ids = [json.loads(line)["id"] for line in corpus.splitlines() if line.strip()]

    def first_ten(query: str) -> list[str]:  # a poor system: the same ten documents for all
        return ids[:10]

    poor = evalframe.run("quickstart", settings, retriever=first_ten, output_dir="poor")

    pair = evalframe.compare([base, poor])
    assert cli(tmp_path, "compare", "base", "poor", "--out", "pair").returncode == 0
    theirs = read_json(tmp_path / "pair" / "comparison.json")
    for m in pair.metrics:
        row = pair.rows[1]
        assert row[f"{m} verdict"] == theirs["metrics"][m]["verdict"]
        assert row[f"{m} p-value (holm)"] == theirs["metrics"][m]["p_adjusted"]
        assert row[f"{m} Δ"] == theirs["metrics"][m]["delta"]
    assert pair.reference == "quickstart" and pair.systems == ["quickstart (poor)"]
    assert "regressed" in pair.verdicts()["quickstart (poor)"].values()

    table = evalframe.compare({"base": base, "tuned": tuned, "poor": poor}, baseline="base")
    assert cli(tmp_path, "compare", "base", "tuned", "poor", "--out", "many").returncode == 0
    theirs = read_json(tmp_path / "many" / "comparison.json")
    assert table.family == theirs["family"]
    for name in ("tuned", "poor"):
        for m in table.metrics:
            assert table.verdicts()[name][m] == theirs["runs"][name][m]["verdict"]
    frame = table.to_pandas()
    assert list(frame["name"]) == ["base", "tuned", "poor"]
    assert frame.attrs["correction"] == "holm"
    assert {"RR", "RR Δ", "RR p-value", "RR p-value (holm)", "RR verdict"} <= set(frame.columns)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # MLflow's sqlalchemy, not ours
def test_tracking_records_what_the_command_line_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mlflow_store: Callable[[Path], str]
) -> None:
    """tracking=mlflow from Python logs the run the command line logs: metrics, params, tags.

    ``EVALFRAME_TRACKING=none`` is set for both: an explicit ``tracking=`` wins
    over it, on the command line and from Python alike.
    """
    store = mlflow_store(tmp_path / "mlflow.db")
    settings = ["tracking=mlflow", f"tracking.uri={store}", "report.html=false"]
    proc = cli(tmp_path, "+experiment=quickstart", *settings, "hydra.run.dir=cli")
    assert proc.returncode == 0, proc.stderr
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EVALFRAME_CACHE_DIR", str(tmp_path / ".cache"))  # the CLI's cache
    monkeypatch.setenv("EVALFRAME_TRACKING", "none")
    assert evalframe.run("quickstart", settings, output_dir="py").passed

    from mlflow.tracking import MlflowClient

    client = MlflowClient(store)
    runs = client.search_runs([client.get_experiment_by_name("quickstart").experiment_id])
    assert len(runs) == 2, [r.data.tags for r in runs]
    cli_run, py_run = sorted(runs, key=lambda r: r.info.start_time)
    assert py_run.data.metrics == cli_run.data.metrics  # the same cached rankings: all equal
    assert py_run.data.params == cli_run.data.params
    # where each was written is a tag: as a param, every two runs would differ in it
    assert Path(py_run.data.tags["evalframe.run_folder"]).name == "py"
    assert Path(cli_run.data.tags["evalframe.run_folder"]).name == "cli"
    assert not any(k.startswith(("output.", "tracking.")) for k in cli_run.data.params)

    def tags(run: Any) -> dict[str, str]:
        return {k: v for k, v in run.data.tags.items() if k.startswith("evalframe.")}

    assert tags(py_run).keys() == tags(cli_run).keys()
    choices = {k: v for k, v in tags(cli_run).items() if "choice" in k}
    assert choices and choices.items() <= tags(py_run).items()  # Hydra's choices, as on the CLI
