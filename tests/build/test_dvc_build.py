"""The golden build's steps as DVC stages, with the real dvc in a temporary Git repository:
`dvc repro` runs steps A-H, a second `dvc repro` runs nothing, and a changed plan reruns
every stage from the authors on."""

from __future__ import annotations

import itertools
import json
import os
import shutil

import pytest
import yaml

from tests.test_dvc_pipeline import BIN, DVC, REPO, SKIPPED, Repo, ran

pytestmark = pytest.mark.slow

#: What the build stages need of the checkout (the evalframe they run is the installed one).
COPIED = [
    "conf",
    "dvc.yaml",
    ".dvcignore",
    ".dvc/config",
    ".dvc/.gitignore",
    ".dvc/plugins",
    "evalframe/build",
    "evalframe/data/knowcode/code",
    "evalframe/data/knowcode_demo",
    "plugins/evalframe-knowcode/evalframe_knowcode",
    "results/.gitignore",
]
ORDER = ("plan", "author", "dedup", "oracle", "gate", "adversary", "review", "assemble")
STAGES = {f"build_{s}" for s in ORDER}
BATCH = "results/golden_build/knowcode_demo/batch"
RELEASE = "results/golden_build/knowcode_demo/release"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    if not DVC.is_file() or shutil.which("git") is None:
        pytest.skip("needs dvc beside the interpreter and git")
    root = tmp_path_factory.mktemp("buildrepo")
    for rel in COPIED:
        source, target = REPO / rel, root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, ignore=SKIPPED)
        else:
            shutil.copy2(source, target)
    pipeline = yaml.safe_load((root / "dvc.yaml").read_text())  # only the build's stages
    pipeline["stages"] = {k: v for k, v in pipeline["stages"].items() if k in STAGES}
    pipeline.pop("plots", None)
    (root / "dvc.yaml").write_text(yaml.safe_dump(pipeline, sort_keys=False))
    home = root.parent / f"{root.name}-home"
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "DVC_NO_ANALYTICS": "1",
        "EVALFRAME_TRACKING": "none",
        "EVALFRAME_CACHE_DIR": str(home / "cache"),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "PYTHONIOENCODING": "utf-8",
    }
    repo = Repo(root, env)
    repo.run("git", "init", "-q", "-b", "main")
    repo.dvc("config", "--local", "core.site_cache_dir", str(home / "site"))
    repo.commit("init")
    return repo


def test_dvc_repro_runs_the_steps_and_then_nothing(repo: Repo) -> None:
    first = repo.dvc("repro")
    assert ran(first.stdout) == STAGES
    meta = json.loads((repo.root / RELEASE / "golden_v1.0.meta.json").read_text())
    assert meta["query_count"] == 12 and meta["dataset_status"] == "blessed"
    rejected = [
        json.loads(x) for x in (repo.root / BATCH / "05_rejected.jsonl").read_text().splitlines()
    ]
    assert {r["query_id"]: r["rule"] for r in rejected}["q_00016"] == "gate:entity"
    repo.commit("built")
    again = repo.dvc("repro")
    assert ran(again.stdout) == set()
    assert "Data and pipelines are up to date." in again.stdout


def test_each_build_stage_depends_on_what_the_stage_before_wrote() -> None:
    """The wiring that makes a changed plan re-run every stage from the authors on (the
    extended test below shows it with dvc): each stage reads an output of the one before,
    and the plan stage reads the plan file."""
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    order = [f"build_{s}" for s in ORDER]
    assert set(order) == STAGES
    assert "evalframe/data/knowcode_demo/plan.yaml" in stages["build_plan"]["deps"]
    for before, after in itertools.pairwise(order):
        outs = {str(o) for o in stages[before]["outs"]}
        deps = {str(d) for d in stages[after]["deps"]}
        assert outs & deps, f"{after} reads nothing {before} writes"


# Every stage again (17 s of two cores): the quicker test above checks the wiring, and the
# first test here shows dvc running every stage and tracking its outputs.
@pytest.mark.extended
def test_a_changed_plan_reruns_from_the_authors_on(repo: Repo) -> None:
    plan = repo.root / "evalframe/data/knowcode_demo/plan.yaml"
    plan.write_text(
        plan.read_text().replace("general: {easy: 1, medium: 1}", "general: {easy: 2, medium: 1}")
    )
    rerun = repo.dvc("repro")
    assert ran(rerun.stdout) == STAGES  # the plan, then every stage from the authors on
    plan_json = json.loads((repo.root / BATCH / "plan.json").read_text())
    assert plan_json["targets"] == 13 and plan_json["slots"] == 22
    # the new records have no verdict in the shipped review file: nothing is blessed
    batch = json.loads((repo.root / BATCH / "batch.json").read_text())
    assert batch["status"] == "awaiting_review"
    assert not any((repo.root / RELEASE).iterdir())
