"""Steps A to F of KnowCode's Phase 1 (reference 002 §10.1): plan, authors, de-duplication,
oracle, mechanical gate, adversary and the agreement rule.

Each step reads the files of the steps before it from the batch folder and
writes its own (:mod:`evalframe.build.batch`), so a step can run on its own
(``step=oracle``, a DVC stage) or all of them in one process. Every reject
names its stage and its rule:

| rule | stage | when |
|---|---|---|
| ``schema`` | B, D, F | a role's record does not fit the reference's schema |
| ``plan-overflow`` | B, F | a candidate outside its cell; a record beyond its cell's target |
| ``dedup`` | C | more than ``dedup.max_overlap`` of its targets belong to an accepted candidate |
| ``gate:<check>`` | E | the gate (§5): entity, file, line-range, entity-file, narrative |
| ``authoring:<check>`` | E | an authoring rule, with ``authoring: error`` |
| ``adversary:unsupported`` | F | an unsupported structural claim or a blocking issue (§3.3) |
| ``agreement:structural`` | F | entity or file Jaccard below ``agreement.threshold`` (§6.1) |
| ``agreement:narrative`` | F | the judge's verdict is not ``equivalent`` (§6.2) |
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ValidationError

from evalframe.build.calls import estimate, run_concurrently
from evalframe.build.context import Context
from evalframe.build.plan import assign_ids, id_offset, plan_cells
from evalframe.core.types import content_hash
from evalframe.plugin.roles import (
    AdversaryReport,
    AdversaryRequest,
    AuthorRequest,
    JudgeRequest,
    NarrativeJudgement,
    OracleAnswer,
    OracleRequest,
    QueryCandidate,
    RoleReply,
)

__all__ = [
    "STRUCTURAL",
    "reject",
    "step_adversary",
    "step_author",
    "step_dedup",
    "step_gate",
    "step_oracle",
    "step_plan",
]

#: The adversary's claim types that are structural (§3.3: unsupported blocks the label).
STRUCTURAL = frozenset({"entity", "file", "line_range"})


def reject(qid: str, stage: str, rule: str, reason: str, **extra: Any) -> dict[str, Any]:
    return {"query_id": qid, "stage": stage, "rule": rule, "reason": reason, **extra}


def _seed(seed: int, qid: str) -> int:
    return int(content_hash([seed, qid]), 16) % (2**31 - 1)


def _validated(
    model: type[BaseModel], reply: RoleReply, qid: str, fill: dict[str, Any]
) -> tuple[dict[str, Any] | None, str | None]:
    """The reply's record checked against ``model``: (record, None) or (None, why not)."""
    record = dict(reply.record)
    for key, value in fill.items():
        record.setdefault(key, value)
    if str(record.get("query_id")) != qid:
        return None, f"the record is for query {record.get('query_id')!r}, not {qid!r}"
    try:
        return model.model_validate(record).model_dump(mode="json"), None
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "record"
        return None, f"not a {model.__name__}: {where}: {err['msg']}"


def _calls(ctx: Context) -> dict[str, Any]:
    return ctx.spend.to_dict()


# -- A: the plan --------------------------------------------------------------------


def step_plan(ctx: Context) -> str:
    config = ctx.config
    cells, path = plan_cells(config.plan, config.headroom)
    blessed = ctx.blessed()
    prior_ids = [str(r.get("query_id")) for r in blessed.records] if blessed else []
    ids = assign_ids(cells, id_offset(prior_ids))
    avoid = sorted({t for r in (blessed.records if blessed else []) for t in ctx.rules.targets(r)})
    payload = {
        "plan_file": path,
        "headroom": config.headroom,
        "cells": [
            {
                "cell": c.name,
                "task_type": c.task_type,
                "difficulty": c.difficulty,
                "target": c.target,
                "quota": c.quota,
                "query_ids": ids[c.name],
            }
            for c in cells
        ],
        "targets": sum(c.target for c in cells),
        "slots": sum(c.quota for c in cells),
        "source": {
            "root": config.source.root,
            "rev": config.source.rev,
            "label": ctx.rules.label,
            "python_files": len(ctx.rules.python_files()),
            "fingerprint": ctx.fingerprint(),
        },
        "blessed": None
        if blessed is None
        else {
            "version": str(blessed.version),
            "path": str(blessed.path),
            "query_count": len(blessed.records),
            "schema_version": blessed.schema_version,
        },
        "avoid_entity_ids": avoid,
        "feedback": previous_feedback(ctx),
    }
    # the budget refuses before anything is written or asked
    requests = author_requests(ctx, payload)
    caller = ctx.caller("author")
    estimate(config, len(requests), sum(caller.is_cached(r) for r in requests))
    ctx.batch.write_config(config.raw)
    ctx.batch.write_json("plan", payload)
    live = [c for c in cells if c.target]
    adds = f"; adds to v{blessed.version} ({len(blessed.records)} queries)" if blessed else ""
    return (
        f"{len(live)} cells, {payload['targets']} targets, {payload['slots']} author slots "
        f"(headroom {config.headroom:g}×){adds}"
    )


def previous_feedback(ctx: Context) -> list[str]:
    """The failure modes of the last batch, if it was requeued (§8: agents are
    re-prompted with them)."""
    pipeline = ctx.config.output_dir / "pipeline"
    if not pipeline.is_dir():
        return []
    here = ctx.batch.dir.resolve()
    for folder in sorted(pipeline.iterdir(), reverse=True):
        if folder.resolve() == here or not (folder / "batch.json").is_file():
            continue
        from evalframe.core.reader import read_json

        data = read_json(folder / "batch.json", what="batch.json").data
        if isinstance(data, dict) and data.get("status") == "requeued":
            return [str(x) for x in data.get("feedback") or []]
        return []
    return []


# -- B: the authors -----------------------------------------------------------------


def author_requests(ctx: Context, plan: dict[str, Any]) -> list[AuthorRequest]:
    """One request per author slot of the plan, in plan order."""
    config = ctx.config
    quotas = {c["cell"]: c["quota"] for c in plan["cells"] if c["quota"]}
    return [
        AuthorRequest(
            query_id=qid,
            task_type=c["task_type"],
            difficulty=c["difficulty"],
            slot=slot,
            count=c["quota"],
            plan=quotas,
            focus_area=config.source.focus_area,
            avoid_entity_ids=plan.get("avoid_entity_ids") or [],
            feedback=plan.get("feedback") or [],
            seed=_seed(config.seed, qid),
            source=ctx.source,
        )
        for c in plan["cells"]
        for slot, qid in enumerate(c["query_ids"])
    ]


def step_author(ctx: Context) -> str:
    config = ctx.config
    plan = ctx.batch.read_json("plan")
    ctx.begin("author")
    requests = author_requests(ctx, plan)
    caller = ctx.caller("author")
    cached = sum(caller.is_cached(r) for r in requests)
    ctx.echo(estimate(config, len(requests), cached).line(config))
    replies = run_concurrently(requests, caller, config.max_concurrency)
    candidates, rejected = [], []
    for request, reply in zip(requests, replies, strict=True):
        qid = request.query_id
        record, problem = _validated(QueryCandidate, reply, qid, {"query_id": qid})
        if record is None:
            rejected.append(reject(qid, "B", "schema", problem or "", record=reply.record))
            continue
        candidates.append(record)
        cell = f"{record['task_type']}/{record['difficulty']}".casefold()
        asked = f"{request.task_type}/{request.difficulty}"
        if cell != asked:
            rejected.append(
                reject(qid, "B", "plan-overflow", f"written into cell {cell}, not its cell {asked}")
            )
    ctx.batch.write_jsonl("candidates", candidates)
    ctx.batch.write_step("author", {"rejected": rejected, "calls": _calls(ctx)})
    s = ctx.spend
    return (
        f"{len(candidates)} candidates ({s.calls['author']} calls, {s.cached['author']} cached)"
        + (f", {len(rejected)} rejected" if rejected else "")
    )


# -- C: de-duplication --------------------------------------------------------------


def step_dedup(ctx: Context) -> str:
    candidates = ctx.batch.read_jsonl("candidates")
    out = {r["query_id"] for r in ctx.batch.step("author")["rejected"]}
    live = [c for c in candidates if c["query_id"] not in out]
    blessed = ctx.blessed()
    decisions = ctx.rules.dedupe(
        live, blessed.records if blessed else [], ctx.config.dedup.max_overlap
    )
    accepted = [c["query_id"] for c in live if decisions.get(c["query_id"]) is None]
    rejected = [
        reject(c["query_id"], "C", "dedup", str(decisions[c["query_id"]]))
        for c in live
        if decisions.get(c["query_id"]) is not None
    ]
    ctx.batch.write_step("dedup", {"accepted": accepted, "rejected": rejected})
    return f"{len(accepted)} accepted, {len(rejected)} rejected (dedup)"


# -- D: the oracle ------------------------------------------------------------------


def step_oracle(ctx: Context) -> str:
    config = ctx.config
    by_id = {c["query_id"]: c for c in ctx.batch.read_jsonl("candidates")}
    accepted = ctx.batch.step("dedup")["accepted"]
    feedback = ctx.batch.read_json("plan").get("feedback") or []
    ctx.begin("oracle")
    requests = [
        OracleRequest(
            candidate=QueryCandidate.model_validate(by_id[qid]),
            source=ctx.source,
            feedback=feedback,
        )
        for qid in accepted
    ]
    replies = run_concurrently(requests, ctx.caller("oracle"), config.max_concurrency)
    answers, rejected, low = [], [], []
    for qid, reply in zip(accepted, replies, strict=True):
        cand = by_id[qid]
        fill = {"task_type": cand["task_type"], "difficulty": cand["difficulty"]}
        record, problem = _validated(OracleAnswer, reply, qid, fill)
        if record is None:
            rejected.append(reject(qid, "D", "schema", problem or "", record=reply.record))
            continue
        answers.append(record)
        if record["confidence"] == "low":
            low.append(qid)  # §3.2: flagged for human review, and still goes on
    ctx.batch.write_jsonl("answers", answers)
    ctx.batch.write_step(
        "oracle",
        {
            "answered": [a["query_id"] for a in answers],
            "low_confidence": low,
            "rejected": rejected,
            "calls": _calls(ctx),
        },
    )
    s = ctx.spend
    return (
        f"{len(answers)} answers ({s.calls['oracle']} calls, {s.cached['oracle']} cached), "
        f"{len(low)} low confidence" + (f", {len(rejected)} rejected" if rejected else "")
    )


# -- E: the mechanical gate ---------------------------------------------------------


def step_gate(ctx: Context) -> str:
    level = ctx.config.authoring
    candidates = {c["query_id"]: c for c in ctx.batch.read_jsonl("candidates")}
    failures, rejected, passed = [], [], []
    warnings: dict[str, list[str]] = {}
    by_check: dict[str, int] = {}
    for answer in ctx.batch.read_jsonl("answers"):
        qid = answer["query_id"]
        findings = ctx.rules.gate(answer)
        authoring = ctx.rules.authoring({**candidates.get(qid, {}), **answer}, level)
        if level == "error":
            findings += [(f"authoring:{c}", m) for c, m in authoring]
        elif authoring:
            warnings[qid] = [f"{c}: {m}" for c, m in authoring]
        if not findings:
            passed.append(qid)
            continue
        checks = sorted({c for c, _ in findings})
        for c in checks:
            by_check[c] = by_check.get(c, 0) + 1
        failures.append(
            {
                "query_id": qid,
                "checks": checks,
                "findings": [{"check": c, "message": m} for c, m in findings],
                "oracle": answer.get("authored_by"),
            }
        )
        first = findings[0]
        rule = first[0] if first[0].startswith("authoring:") else f"gate:{first[0]}"
        rejected.append(reject(qid, "E", rule, first[1], checks=checks))
    ctx.batch.write_jsonl("failures", failures)
    ctx.batch.write_step(
        "gate", {"passed": passed, "rejected": rejected, "authoring_warnings": warnings}
    )
    shown = ", ".join(f"{c} {n}" for c, n in sorted(by_check.items()))
    note = f" ({sum(len(w) for w in warnings.values())} authoring warnings)" if warnings else ""
    return f"{len(passed)} passed, {len(failures)} failed" + (f" ({shown})" if shown else "") + note


# -- F: the adversary, the judge and the agreement rule -----------------------------


def _review_one(
    ctx: Context,
    adversary: Callable[[Any], RoleReply],
    judge: Callable[[Any], RoleReply],
    candidate: dict[str, Any],
    answer: dict[str, Any],
) -> dict[str, Any]:
    qid = answer["query_id"]
    reply = adversary(
        AdversaryRequest(answer=OracleAnswer.model_validate(answer), source=ctx.source)
    )
    report, problem = _validated(AdversaryReport, reply, qid, {})
    if report is None:
        return {"query_id": qid, "schema": problem, "raw": reply.record}
    claims = report["claim_verdicts"]
    unsupported = [
        f"{c['claim_type']} {c['claim']}"
        for c in claims
        if c["claim_type"] in STRUCTURAL and c["verdict"] == "unsupported"
    ]
    supported = {
        "expected_entities": [
            c["claim"]
            for c in claims
            if c["claim_type"] == "entity" and c["verdict"] == "supported"
        ],
        "expected_files": [
            c["claim"] for c in claims if c["claim_type"] == "file" and c["verdict"] == "supported"
        ],
    }
    entities, files, agree = ctx.rules.agreement(answer, supported, ctx.config.agreement.threshold)
    out: dict[str, Any] = {
        "query_id": qid,
        "report": report,
        "blocking": unsupported + list(report["blocking_issues"]),
        "entities": entities,
        "files": files,
        "agree": agree,
        "partial": report["overall_verdict"] == "partial"
        or any(c["verdict"] == "partial" for c in claims),
    }
    if out["blocking"] or not agree:
        return out  # the judge runs only on structural passes (§12)
    request = JudgeRequest(
        query=QueryCandidate.model_validate(candidate),
        canonical_narrative=answer.get("canonical_narrative") or "",
        adversary=AdversaryReport.model_validate(report),
    )
    jreply = judge(request)
    judgement, problem = _validated(NarrativeJudgement, jreply, qid, {})
    if judgement is None:
        out["schema"], out["raw"] = problem, jreply.record
    out["judgement"] = judgement
    return out


def step_adversary(ctx: Context) -> str:
    config = ctx.config
    candidates = {c["query_id"]: c for c in ctx.batch.read_jsonl("candidates")}
    answers = {a["query_id"]: a for a in ctx.batch.read_jsonl("answers")}
    passed = ctx.batch.step("gate")["passed"]
    low = set(ctx.batch.step("oracle").get("low_confidence") or [])
    targets = {c["cell"]: c["target"] for c in ctx.batch.read_json("plan")["cells"]}
    ctx.begin("adversary")
    adversary, judge = ctx.caller("adversary"), ctx.caller("judge")
    results = run_concurrently(
        passed,
        lambda qid: _review_one(ctx, adversary, judge, candidates[qid], answers[qid]),
        config.max_concurrency,
    )
    reports, verdicts, queue, rejected, pool = [], [], [], [], []
    agreement: dict[str, dict[str, Any]] = {}
    flags: dict[str, list[str]] = {}
    t = config.agreement.threshold
    for r in results:
        qid = r["query_id"]
        if r.get("report"):
            reports.append(r["report"])
        if r.get("judgement"):
            verdicts.append(r["judgement"])
        if r.get("schema"):
            rejected.append(reject(qid, "F", "schema", r["schema"], record=r.get("raw")))
            continue
        agreement[qid] = {"entities": r["entities"], "files": r["files"]}
        if r["blocking"]:
            why = "; ".join(r["blocking"])
            rejected.append(reject(qid, "F", "adversary:unsupported", why))
            queue.append({"query_id": qid, "in_pool": False, "reasons": [f"blocking: {why}"]})
            continue
        if not r["agree"]:
            why = (
                f"entity Jaccard {r['entities']:.3g}, file Jaccard {r['files']:.3g}; "
                f"both must be >= {t:g}"
            )
            rejected.append(reject(qid, "F", "agreement:structural", why))
            queue.append({"query_id": qid, "in_pool": False, "reasons": [f"agreement: {why}"]})
            continue
        verdict = r["judgement"]["verdict"]
        agreement[qid]["narrative"] = verdict
        if verdict != "equivalent":
            why = f"the narrative judge says {verdict}: {r['judgement'].get('rationale', '')}"
            rejected.append(reject(qid, "F", "agreement:narrative", why))
            queue.append({"query_id": qid, "in_pool": False, "reasons": [f"agreement: {why}"]})
            continue
        pool.append(qid)
        reasons = (["low-confidence oracle answer"] if qid in low else []) + (
            ["partial adversary verdict"] if r["partial"] else []
        )
        if reasons:
            flags[qid] = reasons
    # overflow: a cell keeps its target's worth of records, in plan order (§10.1 A)
    kept: list[str] = []
    count: dict[str, int] = {}
    for qid in pool:
        cand = candidates[qid]
        cell = f"{cand['task_type']}/{cand['difficulty']}".casefold()
        count[cell] = count.get(cell, 0) + 1
        if count[cell] > targets.get(cell, 0):
            why = f"cell {cell} is full: its target is {targets.get(cell, 0)}"
            rejected.append(reject(qid, "F", "plan-overflow", why))
            flags.pop(qid, None)
        else:
            kept.append(qid)
    queue += [{"query_id": q, "in_pool": True, "reasons": flags[q]} for q in kept if q in flags]
    order = {q: i for i, q in enumerate(passed)}
    queue.sort(key=lambda e: order[e["query_id"]])
    ctx.batch.write_jsonl("reports", reports)
    ctx.batch.write_jsonl("verdicts", verdicts)
    ctx.batch.write_jsonl("queue", queue)
    ctx.batch.write_step(
        "adversary",
        {
            "pool": kept,
            "agreement": agreement,
            "flags": {q: flags[q] for q in kept if q in flags},
            "rejected": rejected,
            "calls": _calls(ctx),
        },
    )
    s = ctx.spend
    by_rule: dict[str, int] = {}
    for r in rejected:
        by_rule[r["rule"]] = by_rule.get(r["rule"], 0) + 1
    shown = ", ".join(f"{k} {v}" for k, v in sorted(by_rule.items()))
    return (
        f"{len(reports)} reports, {len(verdicts)} narrative verdicts "
        f"({s.calls['adversary'] + s.calls['judge']} calls, "
        f"{s.cached['adversary'] + s.cached['judge']} cached); pool {len(kept)}"
        + (f", rejected: {shown}" if shown else "")
        + f", {len(queue)} queued for human review"
    )
