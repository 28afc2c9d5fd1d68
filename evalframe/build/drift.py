"""Batch drift (§10.2): is a later batch distributed like the blessed set it adds to?

"Every new batch is scored against the golden_v1.0 distribution on structural
and narrative metrics. Batches whose metric distributions differ
significantly from gold are requeued." Four tests, each two-sided, at a
family-wise level ``drift.alpha`` (Bonferroni: each at alpha / tests run):

- ``cells``: the records per (task type, difficulty) cell, a χ² test of the
  2 × k table blessed vs batch (:func:`scipy.stats.chi2_contingency`);
- ``entities_per_record``: expected entities per record, Mann-Whitney U
  (:func:`scipy.stats.mannwhitneyu`; ties are the rule for small counts);
- ``structural_entities`` / ``structural_files``: the §6 Jaccard scores the
  agreement rule gave each record, Mann-Whitney U. A blessed set without them
  (not built by the pipeline) skips these two.

Two samples with one value between them (every score 1.0) do not differ:
p = 1 by definition, where the test's statistic is undefined. Fewer than
``drift.min_records`` records on either side skips every test; the batch is
then too small to say anything about its distribution.

This is the batch-level comparison only. Whether the *source* has changed
under the blessed set is the dataset loader's drift guard (``allow_drift``),
applied when the blessed set is loaded.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from evalframe.build.config import DriftSection

__all__ = ["compare", "entity_count", "structural_scores"]


def entity_count(record: Mapping[str, Any]) -> int:
    value = record.get("expected_entities")
    return len(value) if isinstance(value, list) else 0


def structural_scores(record: Mapping[str, Any]) -> tuple[float, float] | None:
    agreement = (record.get("provenance") or {}).get("agreement")
    if not isinstance(agreement, Mapping):
        return None
    try:
        return float(agreement["entities"]), float(agreement["files"])
    except (KeyError, TypeError, ValueError):
        return None


def _cell(record: Mapping[str, Any]) -> str:
    return f"{record.get('task_type')}/{record.get('difficulty')}".casefold()


def _mwu(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    from scipy.stats import mannwhitneyu

    if len(set(a) | set(b)) <= 1:
        return 0.0, 1.0
    result = mannwhitneyu(a, b, alternative="two-sided")
    return float(result.statistic), float(result.pvalue)


def _chi2(a: Sequence[str], b: Sequence[str]) -> tuple[float, float] | None:
    from scipy.stats import chi2_contingency

    ca, cb = Counter(a), Counter(b)
    cells = sorted(set(ca) | set(cb))
    if len(cells) < 2:
        return None
    result = chi2_contingency([[ca[c] for c in cells], [cb[c] for c in cells]])
    return float(result.statistic), float(result.pvalue)


def compare(
    blessed: Sequence[Mapping[str, Any]], batch: Sequence[Mapping[str, Any]], cfg: DriftSection
) -> dict[str, Any]:
    """The drift tests of ``batch`` records against ``blessed`` records (both GoldenLabels,
    the batch's with ``provenance.agreement``). ``significant`` requeues the batch."""
    out: dict[str, Any] = {"alpha": cfg.alpha, "tests": [], "significant": False, "reasons": []}
    if len(blessed) < cfg.min_records or len(batch) < cfg.min_records:
        out["skipped"] = (
            f"{len(batch)} batch and {len(blessed)} blessed records; the tests need "
            f"{cfg.min_records} on each side (drift.min_records)"
        )
        return out
    results: list[tuple[str, float, float, str]] = []
    if "cells" in cfg.tests:
        chi = _chi2([_cell(r) for r in blessed], [_cell(r) for r in batch])
        if chi is not None:
            results.append(("cells", *chi, "records per task type × difficulty cell"))
    if "entities_per_record" in cfg.tests:
        a = [float(entity_count(r)) for r in blessed]
        b = [float(entity_count(r)) for r in batch]
        results.append(
            (
                "entities_per_record",
                *_mwu(a, b),
                f"mean {sum(a) / len(a):.2f} blessed vs {sum(b) / len(b):.2f} batch",
            )
        )
    for i, name in enumerate(("structural_entities", "structural_files")):
        if name not in cfg.tests:
            continue
        a = [s[i] for r in blessed if (s := structural_scores(r)) is not None]
        b = [s[i] for r in batch if (s := structural_scores(r)) is not None]
        if len(a) < cfg.min_records or len(b) < cfg.min_records:
            continue
        results.append(
            (
                name,
                *_mwu(a, b),
                f"mean {sum(a) / len(a):.3f} blessed vs {sum(b) / len(b):.3f} batch",
            )
        )
    level = cfg.alpha / len(results) if results else cfg.alpha
    for name, statistic, p, what in results:
        significant = p < level
        out["tests"].append(
            {
                "test": name,
                "statistic": statistic,
                "p": p,
                "level": level,
                "what": what,
                "significant": significant,
            }
        )
        if significant:
            out["significant"] = True
            out["reasons"].append(f"drift in {name}: {what} (p = {p:.3g} < {level:.3g})")
    return out
