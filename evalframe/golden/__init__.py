"""Golden-set curation: checks, stats, diffs, interactive authoring and the human spot-check.

The command line is ``evalframe golden ...`` (:func:`evalframe.app.golden_cli.main`);
every check is also a plain function importable from here::

    from evalframe.golden import diff_sets, run_checks
"""

from __future__ import annotations

from evalframe.golden.checks import (
    Thresholds,
    check_corpus_ids,
    check_domains,
    check_duplicates,
    check_plan,
    check_size,
    label_histogram,
    load_plan,
    run_checks,
)
from evalframe.golden.diff import GoldenDiff, diff_sets
from evalframe.golden.findings import Finding
from evalframe.golden.review import Ceilings, check_review, sample_for_review
from evalframe.golden.stats import compute_stats

__all__ = [
    "Ceilings",
    "Finding",
    "GoldenDiff",
    "Thresholds",
    "check_corpus_ids",
    "check_domains",
    "check_duplicates",
    "check_plan",
    "check_review",
    "check_size",
    "compute_stats",
    "diff_sets",
    "label_histogram",
    "load_plan",
    "run_checks",
    "sample_for_review",
]
