"""Step G: the reviewer's loop (§8) and the batch-drift check (§10.2) before it.

1. **Drift.** With a blessed version to add to, the batch's pool is compared
   with it (:mod:`evalframe.build.drift`); a significant difference requeues
   the batch before a human spends time on it.
2. **The sample.** ``golden sample``'s stratified draw (≥ ``review.fraction``
   of the pool, at least one record per cell) plus every record that must go
   to a human (low-confidence oracle answer, partial adversary verdict) is
   written to ``review_sample.jsonl``: each line the golden record as it would
   be committed, its ``record_hash``, ``stratum``, ``review_reasons`` and
   ``verdict: null``, ``reviewer: null``, ``notes: ""``.
3. **The verdicts.** The reviewer fills ``verdict`` (``correct``,
   ``minor_issue``, ``major_issue``, ``wrong``) and ``reviewer`` and may edit
   ``must_mention_facts``, ``must_not_mention_facts`` and
   ``canonical_narrative`` in place; the build reads the file named by
   ``review.file`` back. A verdict counts only for the record it was given on
   (same ``record_hash``); one for a record that has changed since is stale
   and ignored, with a warning, as is one for a record not in the batch's
   pool (a review file of another batch). Edits are kept in ``human_reviews.jsonl`` and
   in each record's provenance, and an edited record passes the mechanical
   gate again. Editing any other field is an error (exit 2) at its line.
4. **The ceilings** (``golden review-check``'s arithmetic): a breach requeues
   the batch, with the failure modes as feedback for the next one; every
   sampled record reviewed and no breach makes the batch ready to bless; a
   sampled record still without a verdict leaves it awaiting review. A record
   judged ``major_issue`` or ``wrong`` is dropped even when the batch passes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalframe.build.context import Context, label, label_hash
from evalframe.build.drift import compare
from evalframe.build.steps import reject
from evalframe.core.errors import DataError
from evalframe.core.messages import warn
from evalframe.core.reader import read_jsonl
from evalframe.core.types import GoldenQuery, GoldenSet
from evalframe.golden.review import (
    LOW_CONFIDENCE,
    PARTIAL_VERDICT,
    VERDICTS,
    Ceilings,
    apply_ceilings,
    sample_for_review,
)

__all__ = ["EDITABLE", "Review", "read_verdicts", "step_review"]

#: What a reviewer may edit in place (§8); anything else is an error.
EDITABLE = ("must_mention_facts", "must_not_mention_facts", "canonical_narrative")
KEYS = ("review.max_major_wrong", "review.max_minor", "review.max_wrong_easy")
_REASONS = {
    "low-confidence oracle answer": LOW_CONFIDENCE,
    "partial adversary verdict": PARTIAL_VERDICT,
}


@dataclass
class Review:
    query_id: str
    verdict: str
    reviewer: str | None
    reviewed_at: str | None
    notes: str
    line: int
    edits: dict[str, Any] = field(default_factory=dict)


@dataclass
class Verdicts:
    reviews: dict[str, Review] = field(default_factory=dict)
    stale: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)


def read_verdicts(path: Path, labels: Mapping[str, Mapping[str, Any]]) -> Verdicts:
    """The verdicts of ``path`` for the records in ``labels`` (query id -> golden record)."""
    out = Verdicts()
    for line, rec in read_jsonl(path, what="review file", key="review.file"):
        if not isinstance(rec, dict) or "query_id" not in rec:
            raise DataError(
                "a review line must be a JSON object with a query_id",
                path=path,
                line=line,
                hint="fill in the lines of the batch's review_sample.jsonl",
            )
        qid = str(rec["query_id"])
        verdict = rec.get("verdict")
        if verdict is None:
            continue  # not reviewed yet
        if verdict not in VERDICTS:
            raise DataError(
                f"record {qid} has an unknown verdict",
                path=path,
                line=line,
                expected=" | ".join(VERDICTS),
                got=repr(verdict),
            )
        if qid not in labels:
            out.unknown.append(f"{qid} (line {line})")
            continue
        if "record_hash" not in rec:
            raise DataError(
                f"record {qid} has no record_hash, so its verdict cannot be matched to what "
                "was reviewed",
                path=path,
                line=line,
                hint="review the lines of review_sample.jsonl, which carry record_hash",
            )
        current = labels[qid]
        if rec["record_hash"] != label_hash(current):
            out.stale.append(qid)
            continue
        if qid in out.reviews:
            raise DataError(
                f"record {qid} is reviewed twice (first at line {out.reviews[qid].line})",
                path=path,
                line=line,
                hint="keep one verdict per record",
            )
        edits = {}
        for name, value in current.items():
            if name in rec and rec[name] != value:
                if name not in EDITABLE:
                    raise DataError(
                        f"record {qid}: field {name} was edited; a reviewer may edit only "
                        f"{', '.join(EDITABLE)} (§8)",
                        path=path,
                        line=line,
                        hint="undo the edit, and give the verdict major_issue or wrong if the "
                        "field is wrong: the batch is then requeued",
                    )
                edits[name] = rec[name]
        out.reviews[qid] = Review(
            qid,
            verdict,
            rec.get("reviewer") or None,
            rec.get("reviewed_at"),
            str(rec.get("notes") or ""),
            line,
            edits,
        )
    return out


def pool_labels(ctx: Context, pool: list[str]) -> dict[str, dict[str, Any]]:
    candidates = {c["query_id"]: c for c in ctx.batch.read_jsonl("candidates")}
    answers = {a["query_id"]: a for a in ctx.batch.read_jsonl("answers")}
    return {qid: label(candidates[qid], answers[qid]) for qid in pool}


def _with_agreement(records: dict[str, dict[str, Any]], agreement: Mapping[str, Any]) -> list[Any]:
    return [{**r, "provenance": {"agreement": agreement.get(q)}} for q, r in records.items()]


def step_review(ctx: Context) -> str:
    config = ctx.config
    adversary = ctx.batch.step("adversary")
    pool: list[str] = adversary["pool"]
    labels = pool_labels(ctx, pool)
    result: dict[str, Any] = {"status": None, "drift": None, "rejected": [], "feedback": []}

    def finish(status: str, line: str) -> str:
        result["status"] = status
        ctx.batch.write_step("review", result)
        return line

    blessed = ctx.blessed()
    if blessed is not None and config.drift.enabled:
        drift = compare(
            blessed.records, _with_agreement(labels, adversary["agreement"]), config.drift
        )
        result["drift"] = drift
        if drift["significant"]:
            result["feedback"] = drift["reasons"]
            return finish("requeued", "REQUEUED: " + "; ".join(drift["reasons"]))
    if not pool:
        return finish("empty", "no record survived to be reviewed")
    golden = GoldenSet.build(
        f"{config.name}-batch",
        [
            GoldenQuery(
                id=qid,
                text=r["query_text"],
                judgments={e["entity_id"]: 1 for e in r["expected_entities"]},
                metadata={"task_type": r["task_type"], "difficulty": r["difficulty"]},
            )
            for qid, r in labels.items()
        ],
    )
    always = {q: [_REASONS.get(r, r) for r in reasons] for q, reasons in adversary["flags"].items()}
    sample, cells = sample_for_review(
        golden,
        labels,
        fraction=config.review.fraction,
        seed=config.review.seed,
        always=always,
    )
    for record in sample:
        record["record_hash"] = label_hash(labels[record["query_id"]])
    ctx.batch.write_jsonl("sample", sample)
    sampled = [r["query_id"] for r in sample]
    result["sample"] = {
        "ids": sampled,
        "cells": {"/".join(c): list(v) for c, v in cells.items()},
        "mandatory": always,
    }
    head = (
        f"sample {len(sampled)} of {len(pool)} ({len(sampled) / len(pool):.0%}; "
        f"{len(cells)} cells, {len(always)} mandatory) -> {ctx.batch.path('sample')}"
    )
    if config.review.file is None:
        result["missing"] = sampled
        return finish(
            "awaiting_review",
            f"{head}; awaiting review: fill in the verdicts, then build again with "
            "review.file=<that file>",
        )
    path = Path(config.review.file)
    verdicts = read_verdicts(path, labels)
    if verdicts.stale:
        warn(
            f"{path}: {len(verdicts.stale)} verdict(s) are for an earlier version of their "
            f"record and were ignored: {', '.join(verdicts.stale[:10])}"
        )
    if verdicts.unknown:
        warn(
            f"{path}: {len(verdicts.unknown)} verdict(s) are for records that are not in this "
            f"batch's pool and were ignored: {', '.join(verdicts.unknown[:10])} (a review file "
            "of another batch, or records dropped since; review this batch's "
            f"{ctx.batch.path('sample').name})"
        )
    reviews = verdicts.reviews
    ctx.batch.write_jsonl(
        "reviews",
        [
            {
                "query_id": r.query_id,
                "verdict": r.verdict,
                "reviewer": r.reviewer,
                "reviewed_at": r.reviewed_at,
                "notes": r.notes,
                "edits": sorted(r.edits),
                "record_hash": label_hash(labels[r.query_id]),
                "review_file": str(path),
            }
            for r in reviews.values()
        ],
    )
    ceilings = apply_ceilings(
        [
            (
                r.line,
                {
                    "query_id": q,
                    "verdict": r.verdict,
                    "reviewer": r.reviewer,
                    "difficulty": labels[q]["difficulty"],
                },
            )
            for q, r in reviews.items()
        ],
        str(path),
        Ceilings(
            major_wrong=config.review.max_major_wrong,
            minor=config.review.max_minor,
            wrong_easy=config.review.max_wrong_easy,
        ),
        keys=KEYS,
    )
    for w in ceilings.warnings:
        warn(w)
    missing = [q for q in sampled if q not in reviews]
    result.update(
        {
            "review_file": str(path),
            "ceilings": ceilings.to_dict(),
            "missing": missing,
            "stale": verdicts.stale,
            "ignored": len(verdicts.unknown),
            "reviewers": sorted({r.reviewer for r in reviews.values() if r.reviewer}),
            "edits": {q: r.edits for q, r in reviews.items() if r.edits},
            "verdicts": {q: r.verdict for q, r in reviews.items()},
        }
    )
    for q, r in reviews.items():
        if r.verdict in ("major_issue", "wrong"):
            why = f"the reviewer's verdict is {r.verdict}" + (f": {r.notes}" if r.notes else "")
            result["rejected"].append(reject(q, "G", f"review:{r.verdict}", why))
        elif r.edits:
            answer = {**labels[q], **r.edits}
            failed = ctx.rules.gate(answer)
            if failed:
                check, message = failed[0]
                result["rejected"].append(
                    reject(
                        q, "G", f"review-edit:gate:{check}", f"after the reviewer's edit: {message}"
                    )
                )
    rates = (
        f"{ceilings.total} verdicts: "
        f"major_issue+wrong {ceilings.rate('major_issue', 'wrong'):.1%}, "
        f"minor_issue {ceilings.rate('minor_issue'):.1%}, wrong on easy {len(ceilings.wrong_easy)}"
    )
    if not ceilings.passed:
        result["feedback"] = [
            *ceilings.breaches,
            *(
                f"{q} ({r.verdict}): {r.notes}"
                for q, r in reviews.items()
                if r.verdict != "correct"
            ),
        ]
        return finish("requeued", f"{head}; {rates}; REQUEUED: " + "; ".join(ceilings.breaches))
    if missing:
        return finish(
            "awaiting_review",
            f"{head}; {rates}; awaiting review of {len(missing)}: {', '.join(missing[:8])}"
            + (" …" if len(missing) > 8 else ""),
        )
    return finish("ready", f"{head}; {rates}; every ceiling holds")
