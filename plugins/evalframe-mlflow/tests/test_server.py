"""Against a real ``mlflow server`` on 127.0.0.1: a run read back through the REST API, then
the server killed in the middle of a run, restarted, and ``evalframe sync``: nothing lost."""

from __future__ import annotations

import json
from typing import Any

import pytest
from evalframe_mlflow.keys import metric_key

pytestmark = pytest.mark.slow

# Kills the tracking server (its whole process group) on the first query, then answers.
KILLER = """
import os, signal, socket, time

def retrieve(text):
    pgid = os.environ.pop("KILL_PGID", None)
    if pgid:
        try:
            os.killpg(int(pgid), signal.SIGKILL)
        except ProcessLookupError:
            pass
        port = int(os.environ["KILL_PORT"])
        for _ in range(200):
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) != 0:
                    break
            time.sleep(0.05)
    words = set(text.lower().split())
    if "install" in words:
        return ["install", "gates"]
    if "gate" in words:
        return ["gates", "cache"]
    return ["cache", "install"]
"""


def _expected_keys(out: Any) -> set[str]:
    """Every metric key a run must have in MLflow: headline.json's, and p50/p95 latency."""
    head = json.loads((out / "headline.json").read_text())
    return {metric_key(k) for k in head} | {"latency.p50_ms", "latency.p95_ms"}


def _runs(server: Any) -> list[dict[str, Any]]:
    exp = server.api("experiments/get-by-name?experiment_name=default")["experiment"]
    found = server.api("runs/search", {"experiment_ids": [exp["experiment_id"]]})
    return list(found.get("runs", []))


def test_real_server_logging_outage_and_sync(project: Any, server: Any) -> None:
    server.start()
    first = project.run("tracking=mlflow", f"tracking.uri={server.uri}", out="first")
    assert first.returncode == 0, first.stderr
    assert "warning" not in first.stderr, first.stderr

    (run,) = _runs(server)
    assert run["info"]["status"] == "FINISHED"
    metrics = {m["key"]: m["value"] for m in run["data"]["metrics"]}
    assert _expected_keys(project.root / "first") <= set(metrics)
    assert metrics["RR"] == pytest.approx(1.0)
    params = {p["key"]: p["value"] for p in run["data"]["params"]}
    assert params["retriever.name"] == "bm25"
    assert set(metrics) == _expected_keys(project.root / "first")  # the headline, no more
    tags = {t["key"]: t["value"] for t in run["data"]["tags"]}
    assert tags["evalframe.metric.ndcg_at_10"] == "nDCG@10"
    assert tags["evalframe.upload"] == "complete"
    inputs = {
        next(t["value"] for t in i["tags"] if t["key"] == "mlflow.data.context"): i["dataset"]
        for i in run["inputs"]["dataset_inputs"]
    }
    assert inputs["eval"]["digest"] == tags["evalframe.golden_hash"]
    assert set(inputs) == {"eval", "corpus"}
    listed = server.api(f"artifacts/list?run_id={run['info']['run_id']}")
    assert {"summary.json", "per_query.jsonl", "metrics.json", "run.trec",
            "metrics_table.json"} <= {f["path"] for f in listed["files"]}  # fmt: skip

    # the server dies while the second run is retrieving
    (project.root / "killer.py").write_text(KILLER)
    project.env.update(KILL_PGID=str(server.proc.pid), KILL_PORT=str(server.port))
    second = project.run(
        "tracking=mlflow",
        f"tracking.uri={server.uri}",
        "tracking.timeout_seconds=3",
        "tracking.retries=1",
        "retriever=python",
        "retriever.target=killer:retrieve",
        out="second",
    )
    assert second.returncode == 0, second.stderr  # exit code unchanged by the outage
    assert "evalframe sync" in second.stderr
    out = project.root / "second"
    assert (out / "mlflow_pending.json").is_file()
    assert (out / "metrics.json").is_file()
    server.proc.wait(timeout=30)
    server.stop()

    # back up, through `evalframe ui` on the same store this time
    server.start(via_ui=True)
    synced = project.command("sync")
    assert synced.returncode == 0, synced.stdout + synced.stderr
    assert "1 synced, 0 still pending" in synced.stdout
    runs = _runs(server)
    assert len(runs) == 2
    (late,) = [r for r in runs if r["info"]["run_id"] != run["info"]["run_id"]]
    late_metrics = {m["key"] for m in late["data"]["metrics"]}
    assert _expected_keys(out) - late_metrics == set()  # 0 lost results
    late_params = {p["key"]: p["value"] for p in late["data"]["params"]}
    assert late_params["retriever.target"] == "killer:retrieve"
    listed = server.api(f"artifacts/list?run_id={late['info']['run_id']}")
    assert "per_query.jsonl" in {f["path"] for f in listed["files"]}

    again = project.command("sync")
    assert "nothing to sync" in again.stdout
    assert len(_runs(server)) == 2

    _the_ui_opens_the_runs_once_model_training_is_picked(server, project.root)


def _the_ui_opens_the_runs_once_model_training_is_picked(server: Any, root: Any) -> None:
    """docs/tracking.md's steps, in a real Chromium on the UI `evalframe ui` serves: the
    experiments list at the printed address, "Model training" picked once, then the
    experiment opens on its runs table (MLflow 3.17 would open its GenAI overview)."""
    from evalframe_mlflow.commands import has_workflow_switch

    from tests.report.test_browser import FLAGS, find_chromium

    sync_api = pytest.importorskip("playwright.sync_api")
    path, why = find_chromium()
    if path is None:
        pytest.skip(f"no Chromium for the MLflow UI check: {why}")
    with sync_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=path, headless=True, args=FLAGS)
        try:
            page = chromium.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"{server.uri}/#/experiments")
            if has_workflow_switch():  # older UIs open a classic experiment by its tag
                page.get_by_text("Model training", exact=True).first.click()
            page.get_by_role("link", name="default", exact=True).first.click()
            page.wait_for_url("**/experiments/*/runs?*", timeout=30_000)
            assert "workflowType=genai" not in page.url
            # both runs are rows of the table (their names are links to the run pages)
            page.locator("a[href*='/runs/']").nth(1).wait_for(timeout=30_000)
            page.screenshot(path=str(root / "mlflow-runs.png"))
        finally:
            chromium.close()
