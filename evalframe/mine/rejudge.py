"""Re-judging an existing ADK ``retrieval_dataset.yaml`` at another threshold.

Two cases, per pair:

* every candidate has the counts ``evalframe mine`` writes (``trials_in``,
  ``passes_in``, ``trials_out``, ``passes_out``): the full verdict is
  recomputed (test, interval, correction) at the new threshold, confidence
  and correction, and ``verdict``, ``p_value``, ``ci`` are rewritten;
* otherwise (a file mined by ADK's own tools): ADK's rule, ``YES`` when
  ``delta_p`` exceeds the threshold. A candidate without ``delta_p`` keeps
  its label, and the change list says so.

Everything else in the file (texts, other fields, pair metadata) is kept.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalframe.core.errors import DataError
from evalframe.core.reader import read_text, yaml_error
from evalframe.mine.output import LABEL, candidate_fields
from evalframe.mine.stats import Correction, doc_stats

__all__ = ["Change", "read_dataset", "rejudge"]

COUNTS = ("trials_in", "passes_in", "trials_out", "passes_out")


@dataclass(frozen=True)
class Change:
    """One candidate whose label changed (or could not be re-judged)."""

    pair: str
    fqn: str
    before: str
    after: str
    delta_p: float | None
    note: str = ""


def _label(value: Any) -> str:
    # PyYAML's safe loader reads an unquoted YES/NO as a YAML 1.1 boolean
    if value is True:
        return "YES"
    if value is False:
        return "NO"
    return str(value)


def read_dataset(path: str | Path) -> dict[str, Any]:
    """The file as a mapping with a ``pairs`` list (the adk loader checks it fully)."""
    import yaml

    p = Path(path).expanduser()
    # read_text: a folder, an unreadable file or one that is not UTF-8 is a DataError
    text = read_text(p, what="ADK retrieval dataset")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise yaml_error(
            exc,
            p,
            what="the file",
            hint="`evalframe golden validate FILE --format adk` locates the problem",
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("pairs"), list):
        raise DataError(
            "the file must be a mapping with a top-level 'pairs' list",
            path=p,
            hint="see the schema in docs/mining.md",
        )
    return data


def _has_counts(cand: Any) -> bool:
    return isinstance(cand, dict) and all(
        isinstance(cand.get(k), int) and not isinstance(cand.get(k), bool) for k in COUNTS
    )


def rejudge(
    data: dict[str, Any],
    *,
    threshold: float,
    confidence: float | None = None,
    correction: Correction | None = None,
    source: Path | None = None,
) -> tuple[dict[str, Any], list[Change]]:
    """A re-judged copy of the dataset and the candidates whose label changed; ``source``,
    the file it came from, names where a value is wrong."""
    out = copy.deepcopy(data)
    mining: dict[str, Any] = out["mining"] if isinstance(out.get("mining"), dict) else {}
    conf = confidence if confidence is not None else float(mining.get("confidence", 0.95))
    corr: Correction = correction or mining.get("correction", "holm")
    changes: list[Change] = []
    for index, pair in enumerate(out["pairs"]):
        if not isinstance(pair, dict) or not isinstance(pair.get("candidates"), list):
            continue
        pid = str(pair.get("id", f"pairs[{index}]"))
        cands = [c for c in pair["candidates"] if isinstance(c, dict)]
        if cands and all(_has_counts(c) for c in cands):
            counts = [
                (
                    int(c["trials_in"]),
                    int(c["passes_in"]),
                    int(c["trials_out"]),
                    int(c["passes_out"]),
                )
                for c in cands
            ]
            stats = doc_stats(counts, threshold=threshold, confidence=conf, correction=corr)
            for cand, s in zip(cands, stats, strict=True):
                before = _label(cand.get("empirical_relevance"))
                cand.update(candidate_fields(s))
                if before != cand["empirical_relevance"]:
                    changes.append(
                        Change(pid, str(cand.get("fqn")), before, LABEL[s.verdict], cand["delta_p"])
                    )
            continue
        for j, cand in enumerate(cands):
            before = _label(cand.get("empirical_relevance"))
            dp = cand.get("delta_p")
            if dp is None:  # absent (or null): nothing to re-judge by, the label stays
                changes.append(
                    Change(pid, str(cand.get("fqn")), before, before, None, "no delta_p: kept")
                )
                continue
            if isinstance(dp, bool) or not isinstance(dp, (int, float)):
                # `delta_p: high` is a mistake in the file, not a missing value
                raise DataError(
                    f"pairs[{index}].candidates[{j}].delta_p is {dp!r}, not a number",
                    path=source,
                    expected="delta_p: a number (the candidate's pass-rate difference), or "
                    "no delta_p at all to keep its label",
                    hint="fix the value in the file, or remove it",
                )
            after = "YES" if float(dp) > threshold else "NO"
            cand["empirical_relevance"] = after
            cand.pop("verdict", None)  # a verdict from another threshold would mislead
            if before != after:
                changes.append(Change(pid, str(cand.get("fqn")), before, after, float(dp)))
    if isinstance(out.get("mining"), dict):
        out["mining"] = {
            **out["mining"],
            "threshold": threshold,
            "confidence": conf,
            "correction": corr,
        }
    return out, changes
