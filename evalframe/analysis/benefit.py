"""A/B benefit: what a treatment arm (an agent with a tool) gains over a control arm
(the same agent without it), per stratum, net of everything either arm spent.

KnowCode's Appendix B (reference 002), generalised. The input is one JSONL
record per attempt (docs/analyses.md, "The attempts format")::

    {"task_id": "q_007", "seed": 0, "success": true, "total_tokens": 5210,
     "tool_calls": 3, "turns": 4, "latency_ms": 8200, "usd": 0.0156,
     "model": "claude-sonnet-4", "temperature": 0.0, "prompt": "v3",
     "task_type": "explain", "difficulty": "hard", "baseline_answerable": false}

Method, as the reference prescribes:

1. Attempts are paired on (task_id, seed); each task needs ``min_seeds``
   seeds in each arm, and an attempt without its partner is an error.
2. The arms may differ in their tool surface only: a pair whose model,
   temperature or prompt differ is refused.
3. Differences are taken per pair, then averaged over a task's seeds, so each
   task gives one value (its seeds are not independent draws); a stratum's
   value is the mean over its tasks, with a paired bootstrap CI over tasks
   (``assess.stats.paired_bootstrap_ci``). Reading and pairing the attempts,
   and the checks of steps 1 and 2, live in :mod:`evalframe.analysis.attempts`.
4. Directions: ``success_lift`` = success(A) - success(B); every ``*_saved``
   = cost(B) - cost(A). Positive always favours A. ``net_tokens_saved`` counts
   every token either arm spent (A's schema and context payload included);
   ``net_tokens_saved_per_success`` is the same, over the pairs where both
   arms succeeded, so a cheap but wrong arm earns nothing.
5. Verdict, from the intervals: when the success lift's CI excludes 0, its
   sign decides ("pays off" / "net cost"); otherwise the net tokens saved
   decide the same way; otherwise "inconclusive". Fewer than two tasks
   give no interval: "inconclusive".

With ``score: answers`` success is decided by a judge on each answer against
the golden set's facts, blind: the judge sees opaque ids in a shuffled
order, never the arm (:func:`evalframe.analysis.facts.judge_blind`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evalframe.analysis.attempts import (
    Attempt,
    check_controls,
    check_seeds,
    pair_attempts,
    read_arm,
)
from evalframe.analysis.calibration import BootstrapSettings
from evalframe.analysis.facts import BlindItem, judge_blind, warn_field_unused
from evalframe.analysis.settings import BENEFIT_METRICS, BenefitSettings, JudgeChoice
from evalframe.assess.results import Aggregate
from evalframe.assess.stats import paired_bootstrap_ci
from evalframe.core.messages import warn
from evalframe.core.records import At
from evalframe.core.types import GoldenSet

__all__ = ["Attempt", "BenefitResult", "BenefitRow", "compute_benefit", "read_arm"]

PAYS_OFF = "pays off"
NET_COST = "net cost"
INCONCLUSIVE = "inconclusive"
COSTS = ("total_tokens", "tool_calls", "turns", "latency_ms", "usd")
FEW_TASKS = 5


def _stratum_value(name: str, x: Attempt, y: Attempt, golden: Mapping[str, Any] | None) -> Any:
    if golden is not None:
        return golden.get(name)
    va, vb = x.fields.get(name), y.fields.get(name)
    if va is not None and vb is not None and va != vb:
        raise y.at.error(
            f"task {x.task_id!r}'s {name} is {va!r} in arm A ({x.at}) but {vb!r} here",
            hint="a task's stratum fields must agree across the arms",
        )
    return va if va is not None else vb


def _label(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass(frozen=True)
class Delta:
    mean: float
    ci_low: float
    ci_high: float
    n: int

    def excludes_zero(self) -> int:
        """+1 when the interval lies above 0, -1 below, 0 when it holds 0 (or is missing)."""
        if self.n < 2 or math.isnan(self.ci_low):
            return 0
        return 1 if self.ci_low > 0 else -1 if self.ci_high < 0 else 0

    def as_dict(self) -> dict[str, Any]:
        return {"mean": self.mean, "ci_low": self.ci_low, "ci_high": self.ci_high, "n": self.n}


@dataclass
class BenefitRow:
    group: str  # "stratum", "split" or "overall"
    label: str
    fields: dict[str, str]
    n_tasks: int
    n_pairs: int
    arm_means: dict[str, dict[str, float]]
    deltas: dict[str, Delta]
    verdict: str
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "label": self.label,
            "fields": self.fields,
            "n_tasks": self.n_tasks,
            "n_pairs": self.n_pairs,
            "arm_means": self.arm_means,
            "deltas": {k: d.as_dict() for k, d in self.deltas.items()},
            "verdict": self.verdict,
            "reason": self.reason,
        }


def _verdict(deltas: Mapping[str, Delta]) -> tuple[str, str]:
    lift, saved = deltas["success_lift"], deltas["net_tokens_saved"]
    if lift.n < 2:
        return INCONCLUSIVE, "fewer than two tasks: no interval"

    def ci(d: Delta) -> str:
        return f"[{d.ci_low:+.4g}, {d.ci_high:+.4g}]"

    side = lift.excludes_zero()
    if side:
        return (PAYS_OFF if side > 0 else NET_COST), f"success lift CI {ci(lift)} excludes 0"
    side = saved.excludes_zero()
    if side:
        return (PAYS_OFF if side > 0 else NET_COST), (
            f"success lift CI {ci(lift)} holds 0; net tokens saved CI {ci(saved)} excludes 0"
        )
    return INCONCLUSIVE, (
        f"success lift CI {ci(lift)} and net tokens saved CI {ci(saved)} both hold 0"
    )


@dataclass
class _Task:
    """Per task: per-pair values of each measure, in seed order."""

    task_id: str
    fields: dict[str, str]
    pairs: list[tuple[Attempt, bool, Attempt, bool]]

    def delta(self, name: str) -> float:
        if name == "success_lift":
            vals = [float(sa) - float(sb) for _, sa, _, sb in self.pairs]
        elif name == "net_tokens_saved_per_success":
            vals = [
                float(b.total_tokens - a.total_tokens) for a, sa, b, sb in self.pairs if sa and sb
            ]
        else:
            cost = {"net_tokens_saved": "total_tokens"}.get(name, name.removesuffix("_saved"))
            vals = [b.cost(cost) - a.cost(cost) for a, _, b, _ in self.pairs]
        return float(np.mean(vals)) if vals else math.nan

    def mean(self, arm: str, name: str) -> float:
        """One arm's mean over the task's seeds."""
        if name == "success":
            return float(np.mean([sa if arm == "a" else sb for _, sa, _, sb in self.pairs]))
        return float(np.mean([(a if arm == "a" else b).cost(name) for a, _, b, _ in self.pairs]))


@dataclass
class BenefitResult:
    arms: dict[str, dict[str, Any]]
    tasks: int
    pairs: int
    seeds: dict[str, int]
    min_seeds: int
    scoring: dict[str, Any]
    strata: list[str]
    split: str | None
    rows: list[BenefitRow]
    boot: BootstrapSettings
    caveats: list[str] = field(default_factory=list)

    def overall(self) -> BenefitRow:
        return next(r for r in self.rows if r.group == "overall")

    def as_dict(self) -> dict[str, Any]:
        return {
            "arms": self.arms,
            "directions": {
                "success_lift": "success(A) - success(B)",
                "*_saved": "cost(B) - cost(A)",
                "positive": "favours A",
            },
            "tasks": self.tasks,
            "pairs": self.pairs,
            "seeds_per_task": self.seeds,
            "min_seeds": self.min_seeds,
            "scoring": self.scoring,
            "strata": self.strata,
            "split": self.split,
            "confidence": self.boot.confidence,
            "bootstrap": self.boot.resamples,
            "seed": self.boot.seed,
            "metrics": list(BENEFIT_METRICS),
            "rows": [r.as_dict() for r in self.rows],
            "caveats": list(self.caveats),
        }

    def values(self) -> dict[str, Aggregate]:
        """The overall row's deltas as ``benefit.<measure>`` (gates, metrics.json)."""
        row = self.overall()
        return {
            f"benefit.{k}": Aggregate(
                mean=d.mean, std=math.nan, n=d.n, ci_low=d.ci_low, ci_high=d.ci_high
            )
            for k, d in row.deltas.items()
        }


def _row(
    group: str, label: str, fields: dict[str, str], tasks: Sequence[_Task], boot: BootstrapSettings
) -> BenefitRow:
    deltas = {}
    for name in BENEFIT_METRICS:
        d = np.asarray([t.delta(name) for t in tasks], dtype=np.float64)
        kept = d[~np.isnan(d)]
        low, high = paired_bootstrap_ci(
            np.zeros(kept.size),
            kept,
            resamples=boot.resamples,
            seed=boot.seed,
            confidence=boot.confidence,
        )
        deltas[name] = Delta(
            mean=float(kept.mean()) if kept.size else math.nan,
            ci_low=low if kept.size > 1 else math.nan,
            ci_high=high if kept.size > 1 else math.nan,
            n=int(kept.size),
        )
    verdict, reason = _verdict(deltas)
    arm_means = {
        side: {
            name: float(np.mean([t.mean(side, name) for t in tasks]))
            for name in ("success", *COSTS)
        }
        for side in ("a", "b")
    }
    return BenefitRow(
        group=group,
        label=label,
        fields=fields,
        n_tasks=len(tasks),
        n_pairs=sum(len(t.pairs) for t in tasks),
        arm_means=arm_means,
        deltas=deltas,
        verdict=verdict,
        reason=reason,
    )


def _facts(
    golden: GoldenSet | None, task: str, settings: BenefitSettings, where: At
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    query = golden.by_id().get(task) if golden is not None else None
    if query is None:
        raise where.error(
            f"task {task!r} is not in the golden set, so its answer has no facts to check",
            hint="give the golden set that holds the tasks (--golden / the run's dataset)",
        )
    must = query.metadata.get(settings.facts_field) or []
    forbidden = settings.forbidden_field
    must_not = (query.metadata.get(forbidden) or []) if forbidden else []
    if not must:
        raise where.error(
            f"task {task!r} has no {settings.facts_field!r} in the golden set: its answers "
            "cannot be judged",
            hint="score such tasks from the records' own success (score: records)",
        )
    return tuple(str(f) for f in must), tuple(str(f) for f in must_not)


def _arm_info(attempts: Sequence[Attempt], source: str, label: str | None) -> dict[str, Any]:
    labels = sorted({a.label for a in attempts if a.label})
    return {
        "label": label or (labels[0] if len(labels) == 1 else None),
        "source": source,
        "attempts": len(attempts),
        "models": sorted({a.model for a in attempts}),
        "temperatures": sorted({a.temperature for a in attempts if a.temperature is not None}),
        "prompts": sorted({a.prompt for a in attempts if a.prompt is not None}),
    }


def compute_benefit(
    settings: BenefitSettings,
    *,
    golden: GoldenSet | None = None,
    judge: JudgeChoice | None = None,
    boot: BootstrapSettings | None = None,
    key: str = "analysis.benefit",
) -> BenefitResult:
    """The benefit table of ``settings.a`` over ``settings.b`` (see the module docstring)."""
    boot = boot or BootstrapSettings()
    answers = settings.score == "answers"
    a = read_arm(settings.a, "a", need_answer=answers, key=f"{key}.a")
    b = read_arm(settings.b, "b", need_answer=answers, key=f"{key}.b")
    pairs = pair_attempts(a, b)
    seeds = check_seeds(pairs, settings.min_seeds)
    check_controls(pairs)
    usd_given = {x.usd is not None for pair in pairs.values() for x in pair}
    if len(usd_given) > 1:
        x = next(x for pair in pairs.values() for x in pair if x.usd is None)
        raise x.at.error(
            "some attempts give 'usd' and this one does not",
            hint="give usd on every attempt of both arms, or on none",
        )
    success: dict[tuple[str, str, int], bool] = {}
    scoring: dict[str, Any] = {"mode": settings.score}
    if answers:
        assert judge is not None  # validate_analysis resolves it with score: answers
        items = {}
        for (task, seed), pair in pairs.items():
            must, must_not = _facts(golden, task, settings, pair[0].at)
            for att in pair:
                items[(att.arm, task, seed)] = BlindItem(
                    question=golden.by_id()[task].text if golden is not None else "",
                    answer=att.answer or "",
                    must_mention=must,
                    must_not_mention=must_not,
                )
        warn_field_unused(golden, settings.forbidden_field, "analysis.benefit.forbidden_field")
        verdicts = judge_blind(
            judge.build(), items, seed=boot.seed, who=f"judge {judge.spec.name!r}"
        )
        success = {k: v.passed for k, v in verdicts.items()}
        scoring.update(judge=judge.spec.name, blind=True)
    else:
        success = {(x.arm, t, s): bool(x.success) for (t, s), pair in pairs.items() for x in pair}
    meta = {q.id: q.metadata for q in golden} if golden is not None else None
    names = [*settings.strata, *([settings.split] if settings.split else [])]
    tasks: dict[str, _Task] = {}
    for (task, seed), (x, y) in pairs.items():
        if meta is not None and task not in meta:
            raise x.at.error(
                f"task {task!r} is not in the golden set, so its stratum is unknown",
                hint="give the golden set that holds the tasks, or none to read the strata "
                "from the records",
            )
        if task not in tasks:
            fields = {
                n: _label(_stratum_value(n, x, y, meta.get(task) if meta else None)) for n in names
            }
            tasks[task] = _Task(task, fields, [])
        tasks[task].pairs.append((x, success[("a", task, seed)], y, success[("b", task, seed)]))
    ordered = [tasks[t] for t in sorted(tasks)]
    for n in names:  # a misspelt field (task_typ) made rows of 'unset' without a word
        if ordered and all(t.fields[n] == "unset" for t in ordered):
            which = "split" if n == settings.split and n not in settings.strata else "strata"
            warn(
                f"benefit: no task has a {n!r} field (in the golden set or the attempts' "
                f"records), so its rows are all 'unset'; name a field the tasks have in "
                f"analysis.benefit.{which} (--{which}), or leave it out"
            )
    rows = []
    strata: dict[tuple[str, ...], list[_Task]] = {}
    for t in ordered:
        strata.setdefault(tuple(t.fields[n] for n in settings.strata), []).append(t)
    for values, members in sorted(strata.items()):
        fields = dict(zip(settings.strata, values, strict=True))
        rows.append(_row("stratum", "/".join(values) or "all", fields, members, boot))
    if settings.split:
        groups: dict[str, list[_Task]] = {}
        for t in ordered:
            groups.setdefault(t.fields[settings.split], []).append(t)
        for value, members in sorted(groups.items()):
            rows.append(
                _row("split", f"{settings.split}={value}", {settings.split: value}, members, boot)
            )
    rows.append(_row("overall", "overall", {}, ordered, boot))
    caveats = []
    few = [r.label for r in rows if 0 < r.n_tasks < FEW_TASKS and r.group != "overall"]
    if few:
        caveats.append(
            f"{len(few)} row(s) rest on fewer than {FEW_TASKS} tasks ({', '.join(few[:6])}"
            f"{' …' if len(few) > 6 else ''}): a bootstrap over so few tasks understates the "
            "uncertainty"
        )
    if not usd_given or usd_given == {False}:
        caveats.append("no attempt gives usd: usd_saved is n/a")
    counts = sorted(len(s) for s in seeds.values())
    return BenefitResult(
        arms={
            "a": _arm_info(a, str(settings.a), settings.label_a),
            "b": _arm_info(b, str(settings.b), settings.label_b),
        },
        tasks=len(tasks),
        pairs=len(pairs),
        seeds={"min": counts[0], "max": counts[-1]},
        min_seeds=settings.min_seeds,
        scoring=scoring,
        strata=list(settings.strata),
        split=settings.split,
        rows=rows,
        boot=boot,
        caveats=caveats,
    )
