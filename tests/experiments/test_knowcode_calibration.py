"""The `knowcode_calibration` experiment end to end, through Hydra, as a user runs it.

Expected numbers come from the sample's README table (confidence and whether
the answer is correct, per query), not from evalframe: ECE is written out
below as the sum over the ten equal-width bins. The headline values go to
metrics.json, every key of which the MLflow tracker logs (its own test,
plugins/evalframe-mlflow/tests/test_tracker.py, checks that against a real store).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests import forkrun

pytestmark = pytest.mark.slow

# (confidence, the answer is correct) per query, from evalframe/data/knowcode_analyses/README.md
SAMPLE = {
    "q01": (0.95, 1), "q21": (0.93, 0), "q03": (0.91, 1), "q11": (0.88, 0), "q02": (0.86, 1),
    "q30": (0.84, 0), "q25": (0.82, 1), "q04": (0.79, 0), "q19": (0.77, 0), "q20": (0.75, 1),
    "q06": (0.74, 0), "q08": (0.72, 0), "q05": (0.71, 0), "q22": (0.68, 1), "q29": (0.66, 0),
    "q18": (0.64, 0), "q26": (0.62, 1), "q13": (0.61, 0), "q07": (0.58, 0), "q12": (0.56, 1),
    "q14": (0.54, 0), "q16": (0.52, 0), "q31": (0.47, 0), "q17": (0.45, 1), "q23": (0.42, 0),
    "q27": (0.37, 0), "q24": (0.33, 0), "q10": (0.27, 0), "q15": (0.24, 0), "q09": (0.21, 0),
    "q28": (0.15, 0), "q32": (0.12, 0),
}  # fmt: skip


def hand_ece() -> float:
    """sum over bins of (n_b / N) |acc_b - conf_b|, bins [i/10, (i+1)/10), the last closed."""
    bins: dict[int, list[tuple[float, int]]] = {}
    for c, y in SAMPLE.values():
        bins.setdefault(min(int(c * 10 + 1e-9), 9), []).append((c, y))
    total = 0.0
    for members in bins.values():
        conf = sum(c for c, _ in members) / len(members)
        acc = sum(y for _, y in members) / len(members)
        total += len(members) * abs(acc - conf)
    return total / len(SAMPLE)


def test_the_experiment_reproduces_knowcodes_finding(tmp_path: Path) -> None:
    env = {**os.environ, "EVALFRAME_CACHE_DIR": str(tmp_path / ".cache")}
    res = forkrun.run(
        ["+experiment=knowcode_calibration", "tracking=none", "hydra.run.dir=out"],
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr
    out = tmp_path / "out"
    cal = json.loads((out / "calibration.json").read_text())
    assert {q["query_id"]: (q["confidence"], int(q["outcome"])) for q in cal["queries"]} == SAMPLE
    assert hand_ece() == pytest.approx(10.11 / 32, abs=1e-9)  # the README's arithmetic
    assert cal["ece"] == pytest.approx(hand_ece(), abs=1e-9)
    # KnowCode's committed baseline: answer_correctness@0.8 = 0.571 over 7 routed records
    at8 = cal["answer_correctness"]["0.8"]
    assert (at8["routed"], at8["value"]) == (7, 4 / 7)
    assert round(at8["value"], 3) == 0.571
    assert cal["verdict"] == "over-confident"
    assert [b["direction"] for b in cal["bins"] if b["direction"]] == ["over"]  # the 0.7-0.8 bin
    assert cal["lowest_threshold"] is None  # no threshold routing >= 5 reaches precision 0.9

    benefit = json.loads((out / "benefit.json").read_text())
    verdicts = {r["label"]: r["verdict"] for r in benefit["rows"]}
    assert verdicts["locate/easy"] == "net cost"
    assert verdicts["explain/hard"] == "pays off"
    assert verdicts["debug/medium"] == "inconclusive"
    assert benefit["scoring"] == {"mode": "answers", "judge": "facts", "blind": True}

    summary = json.loads((out / "summary.json").read_text())
    failures = summary["analysis"]["failures"]
    assert sum(failures["counts"].values()) == failures["failed"] > 0
    text = res.stdout
    assert "Calibration (32 queries" in text and "verdict: over-confident" in text
    blocks = text[text.index("Calibration (") : text.index("\nGates:")]
    assert max(len(line) for line in blocks.splitlines()) <= 100
    # the page and summary.md give the same lines: KnowCode's routing figure and the
    # per-stratum benefit table are not left in the terminal alone
    import html

    page = (out / "report.html").read_text()
    shown = html.unescape(page[page.index('<pre class="analyses">') :].split("</pre>")[0])
    assert shown.removeprefix('<pre class="analyses">') == blocks.strip()
    assert "answer_correctness@0.8 = 0.571" in shown and "pays off" in shown
    assert 'href="#analyses"' in page
    summary_md = (out / "summary.md").read_text()
    assert "### Analyses" in summary_md and blocks.strip() in summary_md

    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["calibration.ece"] == pytest.approx(hand_ece())
    assert metrics["calibration.answer_correctness@0.8"] == pytest.approx(4 / 7)
    assert metrics["calibration.answer_correctness@0.8.n"] == 7
    assert metrics["benefit.net_tokens_saved"] == pytest.approx((3 * -600 + 3 * 4000) / 8)
    assert metrics["failures.failed"] == failures["failed"]


def test_a_misspelt_analysis_option_is_refused_with_a_suggestion(tmp_path: Path) -> None:
    env = {**os.environ, "EVALFRAME_TRACKING": "none"}
    res = forkrun.run(["+experiment=quickstart", "analysis=calibraton"], cwd=tmp_path, env=env)
    assert res.returncode == 2
    assert "no analysis config named 'calibraton'" in res.stderr
    assert "did you mean 'calibration'?" in res.stderr


def test_a_stated_must_not_fact_changes_no_outcome_of_the_sample(tmp_path: Path) -> None:
    """By default only the must-mention facts decide (KnowCode's definition); every wrong
    answer of the sample also misses one, so naming the must-not field gives the README's
    outcomes too. q11's right fact, "... by document id descending", is not read as its
    must-not one, "... ascending": the word that differs decides."""
    env = {**os.environ, "EVALFRAME_CACHE_DIR": str(tmp_path / ".cache")}
    strict = "analysis.calibration.forbidden_field=must_not_mention_facts"
    args = ["+experiment=knowcode_calibration", strict, "tracking=none", "hydra.run.dir=out"]
    res = forkrun.run(args, cwd=tmp_path, env=env, timeout=300)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr
    cal = json.loads((tmp_path / "out" / "calibration.json").read_text())
    assert {q["query_id"]: (q["confidence"], int(q["outcome"])) for q in cal["queries"]} == SAMPLE
    detail = {q["query_id"]: q.get("detail", "") for q in cal["queries"]}
    assert detail["q11"].startswith("misses: The given rule") and "states" not in detail["q11"]
    assert "states: Latency is reported in seconds." in detail["q30"]
