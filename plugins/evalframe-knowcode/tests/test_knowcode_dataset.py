"""KnowCode golden sets: two judgment views, file coverage, and the drift guard."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from evalframe_knowcode.dataset import KnowCodeConfig, KnowCodeDataset, source_drift

from evalframe.core.errors import DataError
from evalframe.core.io import read_trec_run
from evalframe.metrics import Policies, evaluate, parse_metrics
from evalframe.plugin.protocols import PluginContext
from evalframe.plugin.registry import DATASETS
from evalframe.plugin.testing import PluginContract
from tests import forkrun

DATA = Path(__file__).parent / "data"
GOLDEN = DATA / "golden_v1.0.json"


def load(tmp_root: Path | None = None, **settings: object):  # type: ignore[no-untyped-def]  # test helper
    root = tmp_root or DATA
    config = KnowCodeConfig(path=str(root / "golden_v1.0.json"), source_root=str(root), **settings)
    return KnowCodeDataset(config, PluginContext()).load()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A copy of the sample golden set and codebase that a test may edit."""
    shutil.copytree(DATA, tmp_path / "ws")
    return tmp_path / "ws"


class TestKnowCodeContract(PluginContract):
    plugin_name = "knowcode"
    registry = DATASETS


def test_entities_are_judgments_and_files_are_a_view() -> None:
    golden = load()
    q2 = golden.by_id()["q2"]
    assert q2.judgments == {"src/knowcode/llm/agent.py::Agent.smart_answer": 1}
    assert q2.views == {"files": {"src/knowcode/llm/agent.py": 1, "src/knowcode/config.py": 1}}
    assert q2.metadata["task_type"] == "locate" and q2.metadata["difficulty"] == "medium"
    assert q2.metadata["entity_roles"] == {
        "src/knowcode/llm/agent.py::Agent.smart_answer": "primary"
    }
    assert golden.projections == {"files": r"^(.*?)::"}
    assert set(golden.slice_fields()) == {"task_type", "difficulty"}


def test_knowcode_metrics_on_the_sample_run() -> None:
    """Worked by hand from tests/data/system.run (see the data README)."""
    golden = load()
    run = read_trec_run(DATA / "system.run")
    metrics = parse_metrics(["P@1", "RR", "R@10", "R(view=files)@5"])
    scores = evaluate(metrics, golden, run, Policies())
    means = {str(m): float(v.mean()) for m, v in scores.values.items()}
    assert means["P@1"] == (1 + 0 + 0 + 1) / 4
    assert means["RR"] == (1 + 1 / 2 + 1 / 2 + 1) / 4
    assert means["R@10"] == (2 / 2 + 1 / 1 + 1 / 2 + 1 / 1) / 4
    # q2 finds agent.py twice but not config.py: 1/2; q3's first file is not expected
    assert means["R(view=files)@5"] == (1 + 1 / 2 + 1 + 1) / 4


def test_unchanged_sources_pass_the_drift_guard() -> None:
    golden = load()
    assert golden.provenance["drift"] == []
    assert golden.provenance["source_files_checked"] == 4


def test_a_changed_source_file_stops_the_load_and_is_named(workspace: Path) -> None:
    agent = workspace / "src/knowcode/llm/agent.py"
    agent.write_text(agent.read_text() + "\n# refactored\n")
    (workspace / "src/knowcode/config.py").unlink()
    with pytest.raises(DataError) as err:
        load(workspace)
    message = err.value.render()
    assert "2 source file(s) differ" in message
    assert "src/knowcode/llm/agent.py (changed)" in message
    assert "src/knowcode/config.py (missing)" in message
    assert "dataset.allow_drift=true" in message


def test_allow_drift_proceeds_warns_and_records(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = workspace / "src/knowcode/llm/agent.py"
    agent.write_text(agent.read_text().replace("0.8", "0.9"))
    golden = load(workspace, allow_drift=True)
    assert golden.provenance["drift"] == []  # the text changed, the file did not
    agent.write_text(agent.read_text() + "# edited\n")
    golden = load(workspace, allow_drift=True)
    assert golden.provenance["drift"] == ["src/knowcode/llm/agent.py (changed)"]
    assert "evaluating despite source drift in 1 file(s)" in capsys.readouterr().err


def test_sha256_prefix_is_accepted(workspace: Path) -> None:
    meta_path = workspace / "golden_v1.0.meta.json"
    meta = json.loads(meta_path.read_text())
    meta["source_file_hashes"] = {k: f"sha256:{v}" for k, v in meta["source_file_hashes"].items()}
    assert source_drift(meta["source_file_hashes"], workspace) == []


def test_missing_meta_file_is_an_error_unless_waived(workspace: Path) -> None:
    (workspace / "golden_v1.0.meta.json").unlink()
    with pytest.raises(DataError, match="meta file not found") as err:
        load(workspace)
    assert err.value.key == "dataset.meta_path"
    assert "drift" not in load(workspace, require_meta=False).provenance


@pytest.mark.parametrize(
    ("edit", "bad_record", "fragment"),
    [
        (lambda r: r[1].pop("expected_files"), 1, "'expected_files'"),
        (lambda r: r[2].update(query_id="q1"), 2, "duplicated (first at "),
        (lambda r: r[0].update(expected_entities=["MarkdownParser"]), 0, "file_path::symbol"),
        (lambda r: r[3].update(expected_files="src/knowcode/config.py"), 3, "list of relative"),
        # a repeated path is refused, as a repeated entity is: the files view would merge it
        (lambda r: r[1]["expected_files"].append(r[1]["expected_files"][0]), 1, "twice"),
        (lambda r: r[2]["expected_entities"].append(r[2]["expected_entities"][0]), 2, "twice"),
        (lambda r: r[0].update(query_text=""), 0, "non-empty text"),
    ],
)
def test_malformed_records_name_file_and_line(  # type: ignore[no-untyped-def]  # parametrized lambdas
    workspace: Path, edit, bad_record: int, fragment: str
) -> None:
    records = json.loads(GOLDEN.read_text())
    edit(records)
    text = json.dumps(records, indent=2)
    (workspace / "golden_v1.0.json").write_text(text)
    # with indent=2 each record opens on its own line as "  {"
    starts = [i + 1 for i, line in enumerate(text.splitlines()) if line == "  {"]
    with pytest.raises(DataError) as err:
        load(workspace)
    assert fragment in err.value.render()
    assert err.value.path is not None and err.value.path.endswith("golden_v1.0.json")
    assert err.value.line == starts[bad_record]


def test_records_off_the_schema_are_loaded_and_said(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A record without task_type, or with a difficulty outside easy/medium/hard, still
    scores, but in a row of its own that no tier's gate sees: one warning lists them."""
    records = json.loads(GOLDEN.read_text())
    records[0]["difficulty"] = "Easy"
    del records[1]["task_type"]
    records[2]["task_type"] = "lokate"  # out of the locate gate's sight (§3.1's six types)
    (workspace / "golden_v1.0.json").write_text(json.dumps(records, indent=2))
    golden = load(workspace)
    assert len(golden.queries) == len(records)
    err = capsys.readouterr().err
    q0, q1, q2 = (records[i]["query_id"] for i in range(3))
    assert f"1 record(s) without task_type ({q1})" in err
    assert f"1 record(s) with a difficulty other than easy, medium, hard ({q0}: 'Easy')" in err
    types = "locate, explain, debug, extend, review, general"
    assert f"1 record(s) with a task_type other than {types} ({q2}: 'lokate')" in err
    load()  # the shipped sample follows the schema: no warning
    assert "other than" not in capsys.readouterr().err


def test_invalid_json_gives_the_line(workspace: Path) -> None:
    (workspace / "golden_v1.0.json").write_text('[\n  {"query_id": "q1",\n  "x" 1}\n]\n')
    with pytest.raises(DataError) as err:
        load(workspace)
    assert err.value.line == 3


def run_cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "EVALFRAME_CACHE_DIR": str(cwd / ".cache")}
    return forkrun.run(args, cwd=cwd, env=env, timeout=120)  # a process of its own


def test_end_to_end_with_the_drift_guard(workspace: Path) -> None:
    args = [
        "dataset=knowcode",
        f"dataset.path={workspace / 'golden_v1.0.json'}",
        f"dataset.source_root={workspace}",
        "corpus=none",
        "metrics=knowcode",
        "retriever=run_file",
        f"retriever.path={workspace / 'system.run'}",
        f"hydra.run.dir={workspace / 'out'}",
    ]
    ok = run_cli(workspace, *args)
    assert ok.returncode == 0, ok.stderr
    metrics = json.loads((workspace / "out" / "metrics.json").read_text())
    assert metrics["R(view=files)@5"] == (1 + 1 / 2 + 1 + 1) / 4
    assert metrics["slice.task_type.locate.RR"] == (1 + 1 / 2 + 1) / 3

    config = workspace / "src/knowcode/config.py"
    config.write_text(config.read_text() + "# drift\n")
    stopped = run_cli(workspace, *args)
    assert stopped.returncode == 2
    assert "src/knowcode/config.py (changed)" in stopped.stderr
    assert "Traceback" not in stopped.stderr

    allowed = run_cli(workspace, *args, "dataset.allow_drift=true")
    assert allowed.returncode == 0, allowed.stderr
    summary = json.loads((workspace / "out" / "summary.json").read_text())
    assert summary["golden_set"]["provenance"]["drift"] == ["src/knowcode/config.py (changed)"]


def test_knowcode_gate_pack_reproduces_the_quality_tests(workspace: Path) -> None:
    """On the sample run every KnowCode rule holds (RR 0.75 >= 0.40, R@10 0.875 >= 0.50,
    file coverage 0.875 >= 0.50, both easy queries at rank 1, locate RR (1 + 1/2 + 1)/3 >= 0.60,
    explain R@10 = 1/2 > 0). Dropping q3's relevant entity blinds the 'explain' task type."""
    args = [
        "dataset=knowcode",
        f"dataset.path={workspace / 'golden_v1.0.json'}",
        f"dataset.source_root={workspace}",
        "corpus=none",
        "metrics=knowcode",
        "gates=knowcode",
        "retriever=run_file",
        f"retriever.path={workspace / 'system.run'}",
        f"hydra.run.dir={workspace / 'out'}",
    ]
    ok = run_cli(workspace, *args)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    gates = json.loads((workspace / "out" / "gates.json").read_text())
    assert [g["name"] for g in gates["gates"]] == [
        "mrr",
        "recall_at_10",
        "file_coverage_at_5",
        "easy_right_at_rank_1",
        "locate_mrr",
        "no_task_type_blind",
    ]
    assert gates["passed"] is True
    # the sample meta says agent_curated_pending_human_review: the verdict says it is provisional
    assert gates["warnings"] == [
        "gated on golden set 'golden_v1.0', which is not blessed: its dataset_status is "
        "'agent_curated_pending_human_review' (blessed: blessed); its labels have not passed "
        "the human spot-check, so this verdict is provisional"
    ]
    assert "Result: PASSED (provisional: 1 warning(s) above)" in ok.stdout

    run = workspace / "system.run"
    run.write_text(
        "".join(
            line for line in run.read_text().splitlines(keepends=True) if "parse_module" not in line
        )
    )
    blind = run_cli(workspace, *args)
    assert blind.returncode == 1
    assert "✗ no_task_type_blind" in blind.stdout
    assert "task_type=explain: R@10 = 0 (n=1)" in blind.stdout


@pytest.mark.parametrize(
    ("status", "settings", "blessed"),
    [
        ("agent_curated_pending_human_review", {}, False),
        ("blessed", {}, True),
        ("phase1_blessed", {"blessed_statuses": ["phase1_blessed"]}, True),
        ("blessed", {"blessed_statuses": ["phase1_blessed"]}, False),
        (None, {}, None),
    ],
)
def test_the_meta_status_says_whether_the_set_is_blessed(
    workspace: Path, status: str | None, settings: dict[str, object], blessed: bool | None
) -> None:
    meta_path = workspace / "golden_v1.0.meta.json"
    meta = json.loads(meta_path.read_text())
    meta.pop("dataset_status")
    if status is not None:
        meta["dataset_status"] = status
    meta_path.write_text(json.dumps(meta))
    provenance = load(workspace, **settings).provenance
    assert provenance.get("blessed") is blessed
    assert provenance["dataset_status"] == status


def test_the_drift_guard_can_check_a_committed_revision(workspace: Path) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t"}
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "c"]):
        subprocess.run(["git", *args], cwd=workspace, env=env, check=True, capture_output=True)
    config = workspace / "src/knowcode/config.py"
    config.write_text(config.read_text() + "# uncommitted\n")
    with pytest.raises(DataError, match=r"config\.py \(changed\)"):
        load(workspace)
    golden = load(workspace, source_rev="HEAD")
    assert golden.provenance["drift"] == [] and golden.provenance["source_rev"] == "HEAD"


def test_an_expected_entity_the_corpus_lacks_is_named(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A golden set naming an entity the code does not have (renamed, mistyped) was
    scored and gated without a word, that query's recall capped below 1."""
    from evalframe.core.types import Corpus, Document

    entities = sorted({e for q in load() for e in q.judgments})
    kept = [e for e in entities if e != "src/knowcode/llm/agent.py::Agent.smart_answer"]
    corpus = Corpus.build("code", [Document(id=e, text=e) for e in kept])
    config = KnowCodeConfig(path=str(GOLDEN), source_root=str(DATA))
    KnowCodeDataset(config, PluginContext(corpus=corpus)).load()
    err = capsys.readouterr().err
    assert (
        "1 expected entity id(s) are not in corpus 'code' and can never be retrieved: "
        "src/knowcode/llm/agent.py::Agent.smart_answer (query q2)"
    ) in err
    whole = Corpus.build("code", [Document(id=e, text=e) for e in entities])
    KnowCodeDataset(config, PluginContext(corpus=whole)).load()
    assert "can never be retrieved" not in capsys.readouterr().err
