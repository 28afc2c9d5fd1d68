"""Galaxy and generic golden sets evaluated end to end by the real CLI.

Galaxy predictions are scored the way Galaxy's own evaluator scores them:
versions stripped on both sides, predictions de-duplicated in order, queries
without predictions counted as 0.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests import forkrun

DATA = Path(__file__).parent / "data"


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "EVALFRAME_CACHE_DIR": str(cwd / ".cache")}
    return forkrun.run(args, cwd=cwd, env=env, timeout=120)  # a process of its own


def test_galaxy_gold_with_jsonl_predictions(tmp_path: Path) -> None:
    gold = [json.loads(line) for line in (DATA / "galaxy_gold.jsonl").read_text().splitlines()]
    first, second = gold[0], gold[1]
    # predictions carry other versions of the right tools (and a repeat)
    predictions = [
        {
            "id": first["id"],
            "predictions": [
                "toolshed.g2.bx.psu.edu/repos/devteam/fastqc/fastqc/0.72",
                "toolshed.g2.bx.psu.edu/repos/devteam/fastqc/fastqc/0.74+galaxy0",
            ],
        },
        {
            "id": second["id"],
            "predictions": [
                "toolshed.g2.bx.psu.edu/repos/iuc/cutadapt/cutadapt/4.0",
                "toolshed.g2.bx.psu.edu/repos/iuc/multiqc/multiqc/1.9",
            ],
        },
    ]
    pred = tmp_path / "predictions.jsonl"
    pred.write_text("".join(json.dumps(p) + "\n" for p in predictions))
    res = cli(
        tmp_path,
        "dataset=galaxy",
        f"dataset.path={DATA / 'galaxy_gold.jsonl'}",
        "dataset.normalise=[strip_version]",
        "corpus=none",
        "retriever=run_file",
        f"retriever.path={pred}",
        "retriever.format=jsonl",
        "retriever.normalise=[strip_version]",
        "metrics.measures=[Hit@1,Hit@5,RR,nDCG@5]",
        "metrics.policies.no_relevant=zero",
        "metrics.policies.duplicates=keep_first",
        f"hydra.run.dir={tmp_path / 'out'}",
    )
    assert res.returncode == 0, res.stderr
    per_query = {
        r["query_id"]: r["metrics"]
        for r in map(json.loads, (tmp_path / "out" / "per_query.jsonl").read_text().splitlines())
    }
    assert per_query[first["id"]]["Hit@1"] == 1.0  # fastqc, any version, first
    assert per_query[second["id"]]["RR"] == 1 / 2  # multiqc at rank 2
    missing = [q for q in per_query if q not in (first["id"], second["id"])]
    assert missing and all(per_query[q]["RR"] == 0.0 for q in missing)  # no predictions: 0


def test_generic_csv_with_a_trec_run(tmp_path: Path) -> None:
    run = tmp_path / "system.run"
    run.write_text(
        "q1 Q0 src/knowcode/parsers/markdown_parser.py::MarkdownParser 1 3.0 s\n"
        "q2 Q0 src/knowcode/config.py::AppConfig 1 3.0 s\n"
        "q2 Q0 src/knowcode/llm/agent.py::Agent.smart_answer 2 2.0 s\n"
    )
    res = cli(
        tmp_path,
        "dataset=generic",
        f"dataset.path={DATA / 'generic' / 'golden.csv'}",
        "dataset.id_field=query_id",
        "dataset.text_field=query_text",
        "dataset.judgments_field=expected_entities",
        "dataset.slice_fields=[task_type,difficulty]",
        "corpus=none",
        "retriever=run_file",
        f"retriever.path={run}",
        "metrics.measures=[RR,R@5]",
        f"hydra.run.dir={tmp_path / 'out'}",
    )
    assert res.returncode == 0, res.stderr
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    # q1 rank 1, q2 rank 2; q3 has no ranking: 0; q4 is a negative example (skipped)
    assert metrics["slice.task_type.locate.RR"] == pytest.approx((1 + 1 / 2) / 2)
    assert metrics["slice.task_type.explain.RR"] == 0.0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["counts"]["missing_queries"] == ["q3", "q4"]  # neither is in the run


def test_dataset_normalise_alone_normalises_the_predictions_too(tmp_path: Path) -> None:
    """#13 item 3: gold normalised but predictions not made every score 0, silently. The
    pipeline now applies the dataset's normalisers to every retrieved id (whatever the
    retriever says); normalising one side only gets a warning saying why all is 0."""
    gold = [json.loads(line) for line in (DATA / "galaxy_gold.jsonl").read_text().splitlines()]
    pred = tmp_path / "predictions.jsonl"
    first = gold[0]["id"]
    pred.write_text(
        json.dumps(
            {"id": first, "predictions": ["toolshed.g2.bx.psu.edu/repos/devteam/fastqc/fastqc/0.1"]}
        )
        + "\n"
    )
    common = [
        "dataset=galaxy",
        f"dataset.path={DATA / 'galaxy_gold.jsonl'}",
        "corpus=none",
        "retriever=run_file",
        f"retriever.path={pred}",
        "retriever.format=jsonl",
        "metrics.measures=[Hit@1]",
        "metrics.policies.missing_query=skip",
        "report.criterion=Hit@1",
    ]
    normalised = [*common, "dataset.normalise=[strip_version]"]
    res = cli(tmp_path, *normalised, f"hydra.run.dir={tmp_path / 'a'}")
    assert res.returncode == 0, res.stderr
    assert json.loads((tmp_path / "a" / "metrics.json").read_text())["Hit@1"] == 1.0
    assert "not one of the" not in res.stderr
    # the run file told not to normalise: the pipeline still applies the dataset's setting
    res = cli(tmp_path, *normalised, "retriever.normalise=[]", f"hydra.run.dir={tmp_path / 'b'}")
    assert json.loads((tmp_path / "b" / "metrics.json").read_text())["Hit@1"] == 1.0
    # only the run side normalised: nothing matches, and the warning says what is likely wrong
    res = cli(
        tmp_path,
        *common,
        "dataset.normalise=[]",
        "retriever.normalise=[strip_version]",
        f"hydra.run.dir={tmp_path / 'c'}",
    )
    assert json.loads((tmp_path / "c" / "metrics.json").read_text())["Hit@1"] == 0.0
    assert "not one of the 1 document ids retrieved for 1 judged query is a judged id" in (
        res.stderr
    )
    assert "normalisation mismatch, not a bad retriever" in res.stderr
