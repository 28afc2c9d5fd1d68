"""Step H: assembly. Every reject in ``05_rejected.jsonl``, the batch's ``batch.json``, and,
when the review blessed it, the next version of the set with its meta file.

A new version holds the blessed version's records plus this batch's (a minor
version: additions); a blessed version of another major schema gives a new
major version (§10.2). The meta file records what §10.1 H asks for:

- ``cells``: the records per (task type, difficulty) cell, beside the plan;
- ``source_file_hashes``: the SHA-256 of every source file a record cites,
  which the ``knowcode`` loader's drift guard checks on every run;
- ``roles``: each role's plugin, version and model id (and those of earlier
  batches under ``history``);
- ``pipeline``: the git SHA of the repository the build ran in (and whether
  its work tree had changes), the evalframe version;
- ``spot_check``: the reviewer ids, the verdict counts and the error rates;
- ``dataset_status: blessed``, ``query_count``, ``schema_version``, ``batches``.
"""

from __future__ import annotations

import subprocess
from collections import Counter
from importlib import metadata
from pathlib import Path
from typing import Any

from evalframe.build.calls import Spend, now
from evalframe.build.config import STEPS
from evalframe.build.context import Context, label
from evalframe.core.errors import DataError
from evalframe.core.io import atomic_write_json
from evalframe.golden.versions import next_version
from evalframe.plugin.roles import ROLES, SCHEMA_VERSION, GoldenLabel

__all__ = ["git_state", "step_assemble"]

#: The steps whose rejects 05_rejected.jsonl collects, in pipeline order.
_REJECTING = ("author", "dedup", "oracle", "gate", "adversary", "review")


def git_state(cwd: Path | None = None) -> dict[str, Any]:
    """The commit the pipeline ran at, and whether its work tree had changes."""
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, check=False
        )
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=cwd,
            capture_output=True,
            text=True,
            check=False,
        )
    except FileNotFoundError:
        return {"git_sha": None, "dirty": None}
    if sha.returncode != 0:
        return {"git_sha": None, "dirty": None}
    return {"git_sha": sha.stdout.strip(), "dirty": bool(status.stdout.strip())}


def _evalframe_version() -> str | None:
    try:
        return metadata.version("evalframe")
    except metadata.PackageNotFoundError:
        return None


def _provenance(
    ctx: Context, qid: str, parts: dict[str, dict[str, dict[str, Any]]], review: dict[str, Any]
) -> dict[str, Any]:
    cand, answer = parts["candidates"][qid], parts["answers"][qid]
    report, judgement = parts["reports"].get(qid, {}), parts["verdicts"].get(qid, {})
    verdict = (review.get("verdicts") or {}).get(qid)
    reviewer = next((r for r in parts["reviews"].values() if r["query_id"] == qid), {}).get(
        "reviewer"
    )
    edits = (review.get("edits") or {}).get(qid) or {}
    labels = label(cand, answer)
    return {
        "query_author": cand.get("authored_by"),
        "oracle": answer.get("authored_by"),
        "adversary": report.get("reviewed_by"),
        "judge": judgement.get("judged_by"),
        "adversary_verdict": report.get("overall_verdict"),
        "agreement": (ctx.batch.step("adversary").get("agreement") or {}).get(qid),
        "batch": ctx.batch.dir.name,
        "created_at": cand.get("created_at"),
        "human_reviewed": verdict is not None,
        "human_reviewer": reviewer,
        "review_verdict": verdict,
        "reviewed_at": (parts["reviews"].get(qid) or {}).get("reviewed_at"),
        "edits": [{"field": f, "before": labels.get(f), "after": v} for f, v in edits.items()],
    }


def _records(ctx: Context, review: dict[str, Any]) -> list[dict[str, Any]]:
    """The batch's golden records: the pool, less what the review rejected, with edits."""
    batch = ctx.batch
    parts = {
        "candidates": {r["query_id"]: r for r in batch.read_jsonl("candidates")},
        "answers": {r["query_id"]: r for r in batch.read_jsonl("answers")},
        "reports": {r["query_id"]: r for r in batch.read_jsonl("reports")},
        "verdicts": {r["query_id"]: r for r in batch.read_jsonl("verdicts")},
        "reviews": {r["query_id"]: r for r in batch.read_jsonl("reviews")}
        if batch.path("reviews").is_file()
        else {},
    }
    out = {r["query_id"] for r in review.get("rejected") or []}
    records = []
    for qid in batch.step("adversary")["pool"]:
        if qid in out:
            continue
        record = label(parts["candidates"][qid], parts["answers"][qid])
        record.update((review.get("edits") or {}).get(qid) or {})
        record["provenance"] = _provenance(ctx, qid, parts, review)
        record["schema_version"] = SCHEMA_VERSION
        records.append(record)
    return records


def _roles(ctx: Context) -> dict[str, Any]:
    out = {}
    for role in ROLES:
        resolved = ctx.config.roles[role]
        out[role] = {
            "plugin": resolved.spec.name,
            "distribution": resolved.spec.distribution,
            "version": resolved.spec.version,
            "model": resolved.model,
        }
    return out


def _release(
    ctx: Context, records: list[dict[str, Any]], review: dict[str, Any], spend: Spend
) -> dict[str, Any]:
    blessed = ctx.blessed()
    version, change = next_version(
        blessed.version if blessed else None,
        blessed.schema_version if blessed else None,
        SCHEMA_VERSION,
    )
    carried = list(blessed.records) if blessed else []
    if change == "schema":  # the records are re-read in the schema this evalframe writes
        carried = [
            {
                **GoldenLabel.model_validate(r).model_dump(mode="json"),
                "schema_version": SCHEMA_VERSION,
            }
            for r in carried
        ]
    everything = carried + records
    target = ctx.config.output_dir / version.file
    meta_path = ctx.config.output_dir / version.meta
    if target.exists() or meta_path.exists():
        raise DataError(
            f"{target} already exists; a blessed version is never overwritten",
            key="output.dir",
            hint="build into a folder whose newest version is the one this batch adds to "
            "(output.blessed_dir = output.dir)",
        )
    plan = ctx.batch.read_json("plan")
    cited: set[str] = set()
    for r in everything:
        cited |= ctx.rules.cited_files(r)
    previous = blessed.meta if blessed else {}
    spot = review.get("ceilings") or {}
    meta = {
        "version": str(version),
        "schema_version": SCHEMA_VERSION,
        "change": change,
        "previous_version": str(blessed.version) if blessed else None,
        "query_count": len(everything),
        "added": len(records),
        "dataset_status": "blessed",
        "created_at": now(),
        "build": ctx.config.name,
        "batches": [*(previous.get("batches") or []), ctx.batch.dir.name],
        "cells": dict(
            sorted(Counter(f"{r['task_type']}/{r['difficulty']}" for r in everything).items())
        ),
        "plan": {c["cell"]: c["target"] for c in plan["cells"]},
        "source": {"root": ctx.config.source.root, "rev": ctx.config.source.rev},
        "source_file_hashes": ctx.rules.file_hashes(cited),
        "roles": _roles(ctx),
        "history": [
            *(previous.get("history") or []),
            *(
                [{"version": previous.get("version"), "roles": previous.get("roles")}]
                if previous
                else []
            ),
        ],
        "pipeline": {**git_state(), "evalframe": _evalframe_version()},
        "spot_check": {
            "reviewers": review.get("reviewers") or [],
            "sample": spot.get("total"),
            "counts": spot.get("counts"),
            "rates": spot.get("rates"),
            "ceilings": {
                "max_major_wrong": ctx.config.review.max_major_wrong,
                "max_minor": ctx.config.review.max_minor,
                "max_wrong_easy": ctx.config.review.max_wrong_easy,
            },
            "review_file": review.get("review_file"),
        },
        "drift": review.get("drift"),
        "calls": spend.to_dict(),
    }
    atomic_write_json(target, everything)
    atomic_write_json(meta_path, meta)
    return {
        "version": str(version),
        "change": change,
        "path": str(target),
        "meta": str(meta_path),
        "query_count": len(everything),
        "added": len(records),
    }


def step_assemble(ctx: Context) -> str:
    batch = ctx.batch
    review = batch.step("review")
    status = review["status"]
    rejected: list[dict[str, Any]] = []
    for step in _REJECTING:
        rejected += batch.step(step).get("rejected") or []
    batch.write_jsonl("rejected", rejected)
    spend = Spend()
    for step in STEPS:
        if batch.has_step(step):
            spend.merge(batch.step(step).get("calls") or {})
    release = None
    records: list[dict[str, Any]] = []
    if status == "ready":
        records = _records(ctx, review)
        if records:
            release = _release(ctx, records, review, spend)
            status = "blessed"
        else:
            status = "empty"
    by_rule = Counter(r["rule"] for r in rejected)
    plan = batch.read_json("plan")
    fill = Counter(f"{r['task_type']}/{r['difficulty']}" for r in records)
    under = [
        f"{c['cell']} {fill[c['cell']]}/{c['target']}"
        for c in plan["cells"]
        if c["target"] and fill[c["cell"]] < 0.8 * c["target"]
    ]
    summary = {
        "build": ctx.config.name,
        "batch": batch.dir.name,
        "status": status,
        "finished_at": now(),
        "plan": {"targets": plan["targets"], "slots": plan["slots"]},
        "records": len(records),
        "rejected": dict(sorted(by_rule.items())),
        "cells_under_80_percent": under if status == "blessed" else None,
        "review": {k: review.get(k) for k in ("review_file", "missing", "stale", "reviewers")},
        "drift": review.get("drift"),
        "feedback": review.get("feedback") or [],
        "calls": spend.to_dict(),
        "release": release,
    }
    batch.write_json("batch", summary)
    # the release folder exists whatever the verdict (a DVC stage declares it as its output)
    ctx.config.output_dir.mkdir(parents=True, exist_ok=True)
    line = f"{len(rejected)} rejected ({', '.join(f'{k} {v}' for k, v in sorted(by_rule.items()))})"
    if release is not None:
        line += (
            f"; blessed v{release['version']} ({release['change']}): {release['query_count']} "
            f"queries -> {release['path']}"
        )
    else:
        line += f"; not blessed ({status})"
    return line
