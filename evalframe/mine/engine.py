"""The Monte Carlo miner: pools, seeded trials, solver and validator calls, per-document stats.

For each task:

1. **Pool.** The seeded candidates (from the task record) plus
   ``pool.distractors`` documents drawn at random from the rest of the corpus.
2. **Trials.** Trial ``t`` draws every candidate in with probability
   ``p_include`` (and, by default, shuffles the order shown). The draw depends
   only on the seed, the task id and ``t``, never on ``N`` or on the order in
   which calls finish, so a run with more trials extends one with fewer, and
   results are the same at any concurrency.
3. **Calls.** The solver attempts the task with that context and the
   validator judges the answer; both through the call cache, so a killed run
   resumes without repeating a call. Calls run in a thread pool of
   ``max_concurrency``.
4. **Stats.** For every candidate: passes with and without it, Δp, Newcombe's
   interval, the one-sided Fisher p-value, corrected across the pair, and the
   verdict (:mod:`evalframe.mine.stats`).
"""

from __future__ import annotations

import hashlib
import sys
import threading
from collections.abc import Callable
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from evalframe.core.errors import DataError, PluginError
from evalframe.core.store import open_store
from evalframe.core.types import Corpus
from evalframe.mine.cache import CallCache, plugin_fingerprint
from evalframe.mine.config import MineConfig, Resolved
from evalframe.mine.stats import Budget, DocStats, doc_stats, plan_budget
from evalframe.mine.tasks import LoadedTask, load_benchmark
from evalframe.plugin.blame import blamed
from evalframe.plugin.loaded import check_loaded
from evalframe.plugin.protocols import (
    Answer,
    Attempt,
    ContextDoc,
    CorpusLoader,
    Judgement,
    PluginContext,
    Solver,
    Validator,
)

__all__ = [
    "MineResult",
    "PairResult",
    "Trial",
    "TrialOutcome",
    "draw_trials",
    "mine",
    "prepare",
]


@dataclass(frozen=True)
class Trial:
    """One trial's draw: the candidates in its context, in the order shown, and its seed."""

    index: int
    included: tuple[str, ...]
    seed: int


@dataclass(frozen=True)
class TrialOutcome:
    passed: bool
    answer: str
    detail: str


@dataclass
class PairResult:
    """One task: its pool, its trials and their outcomes, and each candidate's stats."""

    loaded: LoadedTask
    pool: tuple[str, ...]
    trials: list[Trial]
    outcomes: list[TrialOutcome | None] = field(default_factory=list)
    stats: dict[str, DocStats] = field(default_factory=dict)

    @property
    def seeded(self) -> set[str]:
        return set(self.loaded.seeds)

    @property
    def success_rate(self) -> float:
        done = [o.passed for o in self.outcomes if o is not None]
        return sum(done) / len(done) if done else float("nan")

    def base_success_rate(self) -> float:
        """Success rate of the trials with none of the relevant documents (all, if none is)."""
        relevant = {d for d, s in self.stats.items() if s.verdict == "relevant"}
        kept = [
            o.passed
            for t, o in zip(self.trials, self.outcomes, strict=True)
            if o is not None and not relevant & set(t.included)
        ]
        return sum(kept) / len(kept) if kept else float("nan")


@dataclass
class MineResult:
    pairs: list[PairResult]
    budget: Budget
    trials: int
    corpus: Corpus
    calls: dict[str, int] = field(default_factory=dict)


def _stable(text: str) -> int:
    """A process-independent 64-bit number for a text (Python's hash() is salted)."""
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def draw_trials(
    task_id: str, pool: tuple[str, ...], n: int, *, p_include: float, seed: int, shuffle: bool
) -> list[Trial]:
    """The draws of trials 0..n-1; trial t's draw is the same for every n > t."""
    trials = []
    for t in range(n):
        rng = np.random.default_rng([seed, _stable(task_id), t])
        mask = rng.random(len(pool)) < p_include
        chosen = [d for d, keep in zip(pool, mask, strict=True) if keep]
        if shuffle and len(chosen) > 1:
            chosen = [chosen[i] for i in rng.permutation(len(chosen))]
        trials.append(Trial(index=t, included=tuple(chosen), seed=int(rng.integers(0, 2**31 - 1))))
    return trials


def _pool(
    loaded: LoadedTask, corpus_ids: list[str], distractors: int, seed: int
) -> tuple[str, ...]:
    seeds = list(loaded.seeds)
    seeded = set(seeds)
    others = [d for d in corpus_ids if d not in seeded]
    k = min(distractors, len(others))
    rng = np.random.default_rng([seed, _stable("pool:" + loaded.task.id)])
    picked = sorted(rng.choice(len(others), size=k, replace=False).tolist()) if k else []
    return tuple(seeds + [others[i] for i in picked])


def _check_seeds(loaded: LoadedTask, corpus_ids: set[str], key: str) -> None:
    unknown = [s for s in loaded.seeds if s not in corpus_ids]
    if unknown:
        import difflib

        close = difflib.get_close_matches(unknown[0], sorted(corpus_ids), n=1)
        raise DataError(
            f"task {loaded.task.id!r}: seeded candidate(s) {', '.join(map(repr, unknown))} "
            "are not in the corpus",
            path=loaded.path,
            line=loaded.line,
            expected="ids of corpus documents (the solver is shown their text)",
            hint=(f"did you mean {close[0]!r}? " if close else "")
            + f"fix the task record or {key}, or point corpus.path at the corpus they come from",
        )


def _build(resolved: Resolved, context: PluginContext, protocol: type) -> Any:
    instance = resolved.spec.obj(resolved.config, context)
    if not isinstance(instance, protocol):
        raise PluginError(
            f"{resolved.spec.kind} plugin {resolved.spec.name!r} ({resolved.spec.module}) does "
            f"not satisfy the {protocol.__name__} protocol",
            hint=f"see evalframe.plugin.protocols.{protocol.__name__}",
        )
    return instance


@dataclass
class Prepared:
    """Everything decided before the first call: tasks, pools, budget, trials."""

    config: MineConfig
    corpus: Corpus
    pairs: list[PairResult]
    budget: Budget
    trials: int


def prepare(config: MineConfig) -> Prepared:
    """Load the corpus and the benchmarks, build the pools, plan the budget and draw trials."""
    corpus_loader = _build(
        config.corpus, PluginContext(cache_dir=config.cache_dir, config_key="corpus"), CorpusLoader
    )
    with blamed(config.corpus.spec, "loading"):
        corpus: Corpus = check_loaded(corpus_loader.load(), config.corpus.spec, "corpus")
    ids = [d.id for d in corpus.documents]
    known = set(ids)
    loaded: list[LoadedTask] = []
    for name, spec in config.benchmarks.items():
        key = f"benchmarks.{name}"
        for task in load_benchmark(name, spec, key=key):
            _check_seeds(task, known, f"{key}.seeds")
            loaded.append(task)
    pools = [_pool(t, ids, config.pool.distractors, config.seed) for t in loaded]
    stats = config.statistics
    candidates = max(len(p) for p in pools)

    def budget(n: int) -> Budget:
        return plan_budget(
            trials=n,
            candidates=candidates,
            effect=stats.design_effect,
            target_power=stats.power,
            confidence=stats.confidence,
            p_include=config.trials.p_include,
            threshold=stats.threshold,
            correction=stats.correction,
            base_rate=stats.base_rate,
        )

    if config.trials.n == "auto":
        needed = budget(config.trials.max).required
        n = config.trials.max if needed is None else min(needed, config.trials.max)
    else:
        n = config.trials.n
    pairs = [
        PairResult(
            loaded=task,
            pool=pool,
            trials=draw_trials(
                task.task.id,
                pool,
                n,
                p_include=config.trials.p_include,
                seed=config.seed,
                shuffle=config.pool.shuffle_context,
            ),
        )
        for task, pool in zip(loaded, pools, strict=True)
    ]
    return Prepared(config=config, corpus=corpus, pairs=pairs, budget=budget(n), trials=n)


class _Caller:
    """Runs one trial (solve, then validate) through the two call caches."""

    def __init__(self, prepared: Prepared) -> None:
        config = prepared.config
        context = PluginContext(corpus=prepared.corpus, cache_dir=config.cache_dir)
        self.solver: Solver = _build(config.solver, replace(context, config_key="solver"), Solver)
        self.validator: Validator = _build(
            config.validator, replace(context, config_key="validator"), Validator
        )
        self.texts = {d.id: d.text for d in prepared.corpus.documents}
        self.solver_name = config.solver.spec.name
        self.validator_name = config.validator.spec.name

        def cache(kind: str, resolved: Resolved, instance: Any) -> CallCache:
            use = config.cache and getattr(type(instance), "cacheable", True)
            store = open_store(config.cache_dir, kind) if use else None
            fingerprint = plugin_fingerprint(
                kind, resolved.spec.name, resolved.spec.version, resolved.config, instance
            )
            return CallCache(store, fingerprint)

        self.solver_cache = cache("solver", config.solver, self.solver)
        self.validator_cache = cache("validator", config.validator, self.validator)

    def __call__(self, pair: PairResult, trial: Trial) -> TrialOutcome:
        task = pair.loaded.task
        context = tuple(ContextDoc(id=d, text=self.texts[d]) for d in trial.included)
        attempt = Attempt(
            task_id=task.id,
            query=task.query,
            metadata=task.metadata,
            context=context,
            trial=trial.index,
            seed=trial.seed,
        )
        skey = self.solver_cache.key(attempt.model_dump(mode="json"))
        cached = self.solver_cache.get(skey)
        answer = None
        if cached is not None:
            try:
                answer = Answer.model_validate(cached)
            except ValueError:
                answer = None
        if answer is None:
            answer = self.solver.solve(attempt)
            if not isinstance(answer, Answer):
                raise PluginError(
                    f"solver {self.solver_name!r} returned {type(answer).__name__} for task "
                    f"{task.id!r} (trial {trial.index}), not an Answer",
                    hint="return evalframe.plugin.protocols.Answer(text=...)",
                )
            self.solver_cache.put(skey, answer.model_dump(mode="json"))
        inputs: dict[str, Any] = {
            "task": task.model_dump(mode="json"),
            "answer": answer.model_dump(mode="json"),
        }
        extra = getattr(self.validator, "cache_inputs", None)
        if callable(extra):  # what else decides the verdict (a test file's content)
            inputs["extra"] = extra(task)
        vkey = self.validator_cache.key(inputs)
        raw = self.validator_cache.get(vkey)
        judgement = None
        if raw is not None:
            try:
                judgement = Judgement.model_validate(raw)
            except ValueError:
                judgement = None
        if judgement is None:
            judgement = self.validator.validate(task, answer)
            if not isinstance(judgement, Judgement):
                raise PluginError(
                    f"validator {self.validator_name!r} returned {type(judgement).__name__} "
                    f"for task {task.id!r}, not a Judgement",
                    hint="return evalframe.plugin.protocols.Judgement(passed=...)",
                )
            self.validator_cache.put(vkey, judgement.model_dump(mode="json"))
        return TrialOutcome(passed=judgement.passed, answer=answer.text, detail=judgement.detail)


def _run_all(
    prepared: Prepared, caller: _Caller, progress: Callable[[int, int], None] | None
) -> None:
    jobs = [(pair, trial) for pair in prepared.pairs for trial in pair.trials]
    for pair in prepared.pairs:
        pair.outcomes = [None] * len(pair.trials)
    done = 0
    lock = threading.Lock()
    pool = ThreadPoolExecutor(max_workers=prepared.config.max_concurrency)
    try:
        futures: dict[Future[TrialOutcome], tuple[PairResult, Trial]] = {
            pool.submit(caller, pair, trial): (pair, trial) for pair, trial in jobs
        }
        pending = set(futures)
        while pending:
            finished, pending = wait(pending, return_when=FIRST_EXCEPTION, timeout=0.5)
            for future in finished:
                pair, trial = futures[future]
                error = future.exception()
                if error is not None:
                    for other in pending:
                        other.cancel()
                    raise error
                pair.outcomes[trial.index] = future.result()  # by index: order-independent
                with lock:
                    done += 1
            if progress is not None and finished:
                progress(done, len(jobs))
    finally:
        # let calls in flight finish (their answers are paid for: they get cached),
        # start no new one
        pool.shutdown(wait=True, cancel_futures=True)


def _stats(pair: PairResult, config: MineConfig) -> None:
    counts = []
    for doc in pair.pool:
        n_in = s_in = n_out = s_out = 0
        for trial, outcome in zip(pair.trials, pair.outcomes, strict=True):
            if outcome is None:
                continue
            if doc in trial.included:
                n_in += 1
                s_in += outcome.passed
            else:
                n_out += 1
                s_out += outcome.passed
        counts.append((n_in, s_in, n_out, s_out))
    stats = config.statistics
    results = doc_stats(
        counts,
        threshold=stats.threshold,
        confidence=stats.confidence,
        correction=stats.correction,
    )
    pair.stats = dict(zip(pair.pool, results, strict=True))


def mine(
    config: MineConfig,
    *,
    prepared: Prepared | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> MineResult:
    """Run every trial of every task and judge every candidate."""
    prepared = prepared or prepare(config)
    caller = _Caller(prepared)
    _run_all(prepared, caller, progress)
    for pair in prepared.pairs:
        _stats(pair, config)
    calls = {
        "solver_calls": caller.solver_cache.calls,
        "solver_cached": caller.solver_cache.hits,
        "validator_calls": caller.validator_cache.calls,
        "validator_cached": caller.validator_cache.hits,
    }
    return MineResult(
        pairs=prepared.pairs,
        budget=prepared.budget,
        trials=prepared.trials,
        corpus=prepared.corpus,
        calls=calls,
    )


def tqdm_progress(total_label: str = "mining") -> Callable[[int, int], None]:
    """A progress callback drawing a bar on standard error (only on a terminal)."""
    from tqdm import tqdm

    bar: list[Any] = []

    def update(done: int, total: int) -> None:
        if not bar:
            bar.append(
                tqdm(
                    total=total,
                    desc=total_label,
                    unit="trial",
                    disable=None,
                    file=sys.stderr,
                    leave=False,
                )
            )
        bar[0].n = done
        bar[0].refresh()
        if done >= total:
            bar[0].close()

    return update
