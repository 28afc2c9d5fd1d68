"""The sweep's closing table heads its metric columns as the jobs' own reports name them
(``metrics.labels``: ADK's Recall@1 for Hit@1) and says what each label stands for."""

from __future__ import annotations

from pathlib import Path

from evalframe.plugin.hooks import SweepJob
from evalframe.report.sweep import render_sweep


def _job(num: int, labels: dict[str, str] | None, hit: float) -> SweepJob:
    summary = {
        "headline": ["Hit@1", "RR"],
        "overall": {"Hit@1": {"mean": hit}, "RR": {"mean": 0.5}},
        "gates_passed": True,
    }
    if labels is not None:
        summary["labels"] = labels
    return SweepJob(num, Path(str(num)), (f"retriever.k1={num}",), 0, summary)


def test_labels_every_job_gives_alike_head_the_columns() -> None:
    jobs = [_job(0, {"Hit@1": "Recall@1", "RR": "MRR"}, 0.7), _job(1, {"Hit@1": "Recall@1"}, 0.8)]
    text = render_sweep(Path("sweep"), jobs)
    header = text.splitlines()[1].split()
    # RR: the second job gives it no label, so its column keeps the canonical name
    assert header == ["job", "overrides", "gates", "Recall@1", "RR"]
    assert "labels (metrics.labels): Recall@1 is Hit@1" in text


def test_no_labels_no_line() -> None:
    text = render_sweep(Path("sweep"), [_job(0, None, 0.7), _job(1, None, 0.8)])
    assert text.splitlines()[1].split()[3:] == ["Hit@1", "RR"]
    assert "labels (metrics.labels)" not in text
