"""Golden-set checks: each a plain function from a golden set to findings.

Every check takes the :class:`~evalframe.core.types.GoldenSet` (and, where it
reports about records, a ``where(query_id) -> "file:line"`` function) and
returns a list of :class:`~evalframe.golden.findings.Finding`, so the same
checks serve ``evalframe golden validate``, a pytest gate in a user's repo,
or a notebook.

The default thresholds are the reference harnesses' rules:

- B.O.B: at least 20 Q/A pairs; each domain set at least 10 questions and
  2-3 negative examples.
- KnowCode: every (task_type, difficulty) cell of the committed
  stratification plan filled to at least 80% of its target.
"""

from __future__ import annotations

import difflib
import json
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from evalframe.core.errors import DataError
from evalframe.core.reader import read_text, require_file
from evalframe.core.types import GoldenSet
from evalframe.golden.findings import Finding

__all__ = [
    "Thresholds",
    "check_corpus_ids",
    "check_domains",
    "check_duplicates",
    "check_plan",
    "check_size",
    "label_histogram",
    "load_plan",
    "near_pairs",
    "normalise_question",
    "run_checks",
]

Where = Callable[[str], str]


def _by_id(qid: str) -> str:
    return f"query {qid}"


@dataclass(frozen=True)
class Thresholds:
    """Every configurable number the checks use (``validate`` has one flag per field)."""

    near_duplicate: float = 0.9
    min_queries: int = 20
    domain_field: str = "domain"
    min_domain_questions: int = 10
    min_domain_negatives: int = 2
    max_domain_negatives: int = 3
    plan_fill: float = 0.8


_PUNCT = re.compile(r"[^\w\s]")
_SPACE = re.compile(r"\s+")


def normalise_question(text: str) -> str:
    """Case-, accent-width-, punctuation- and whitespace-insensitive form of a question."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = _PUNCT.sub(" ", text)
    return _SPACE.sub(" ", text).strip()


def check_duplicates(
    golden: GoldenSet, where: Where = _by_id, *, near: float = 0.9
) -> list[Finding]:
    """Duplicate questions (same normalised text: error) and near-duplicates (warning).

    Near-duplicates are pairs whose normalised texts have a
    :class:`difflib.SequenceMatcher` ratio >= ``near``; ``near > 1`` turns
    that part off. Pairs are pruned by SequenceMatcher's own upper bounds,
    for one text against all others at once (:func:`near_pairs`).

    A query without text (Galaxy's gold holds ids and tools only; its texts
    live in a separate queries file) repeats nobody's question: it is left
    out, and one info finding says how many were and how to check them.
    """
    findings: list[Finding] = []
    groups: dict[str, list[str]] = defaultdict(list)
    text_of = {q.id: q.text for q in golden.queries}
    no_text = [q.id for q in golden.queries if not q.text.strip()]
    if no_text:
        findings.append(
            Finding(
                "info",
                "no-text",
                f"{len(no_text)} of {len(golden)} queries have no text (ids and judgments "
                "only), so the duplicate-question checks skip them; give their texts with "
                "--queries FILE (joined by id) to check them too",
            )
        )
    for q in golden.queries:
        if q.text.strip():
            groups[normalise_question(q.text)].append(q.id)
    for ids in groups.values():
        if len(ids) > 1:
            for dup in ids[1:]:
                findings.append(
                    Finding(
                        "error",
                        "duplicate",
                        f"query {dup} repeats the question of query {ids[0]} "
                        f"({where(ids[0])}): {text_of[dup]!r}",
                        location=where(dup),
                        query_id=dup,
                    )
                )
    if near > 1:
        return findings
    uniques = sorted(((norm, ids[0]) for norm, ids in groups.items()), key=lambda t: len(t[0]))
    for i, j, ratio in near_pairs([norm for norm, _ in uniques], near):
        first, second = sorted((uniques[i][1], uniques[j][1]), key=_order(golden))
        findings.append(
            Finding(
                "warning",
                "near-duplicate",
                f"query {second} is {ratio:.0%} similar to query {first} "
                f"({where(first)}); reword one or drop it",
                location=where(second),
                query_id=second,
            )
        )
    return findings


def near_pairs(texts: Sequence[str], near: float) -> Iterator[tuple[int, int, float]]:
    """``(i, j, ratio)`` for each pair ``i < j`` of ``texts`` (sorted by length, distinct)
    whose :class:`difflib.SequenceMatcher` ratio is at least ``near``, by ``i`` then ``j``.

    Every pair is a quadratic number of them (10k questions: 50M, a hundred
    seconds through SequenceMatcher's own bounds one pair at a time). Its two
    cheap upper bounds are taken for one text against all the longer ones at
    once instead: the lengths (``real_quick_ratio``, ``2*min/(la+lb)``; sorted
    texts make the pairs within it one run) and the characters the two have
    in common in any order (``quick_ratio``: each character's smaller count,
    summed), from a matrix of character counts. Both are computed as
    SequenceMatcher computes them, to the same float, so exactly the pairs it
    would go on to match are matched, with the same ``ratio()``.
    """
    n = len(texts)
    if n < 2:
        return
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=n)
    alphabet: dict[str, int] = {}
    rows: list[int] = []
    cols: list[int] = []
    values: list[int] = []
    for i, text in enumerate(texts):
        for char, count in Counter(text).items():
            rows.append(i)
            cols.append(alphabet.setdefault(char, len(alphabet)))
            values.append(count)
    top = max(values, default=0)
    kind = np.uint8 if top < 2**8 else np.uint16 if top < 2**16 else np.int64
    counts = np.zeros((n, len(alphabet)), dtype=kind)
    counts[rows, cols] = values
    matcher = difflib.SequenceMatcher(None, autojunk=False)
    for i in range(n - 1):
        la = int(lengths[i])
        start = i + 1
        if la == 0:  # two empty texts are no pair (and no ratio): skip the others
            start += int(np.count_nonzero(lengths[start:] == 0))
        total = la + lengths[start:]
        # real_quick_ratio, 2.0 * min / (la + lb) with la <= lb, falls as lb grows
        within = int(np.count_nonzero(2.0 * la / total >= near))
        if within == 0:
            continue
        common = np.minimum(counts[start : start + within], counts[i]).sum(axis=1)
        quick = 2.0 * common / total[:within]  # quick_ratio, the same float
        candidates = np.flatnonzero(quick >= near)
        if candidates.size == 0:
            continue
        matcher.set_seq2(texts[i])  # seq2 is the one SequenceMatcher caches
        for k in candidates.tolist():
            matcher.set_seq1(texts[start + k])
            ratio = matcher.ratio()
            if ratio >= near:
                yield i, start + k, ratio


def _order(golden: GoldenSet) -> Callable[[str], int]:
    index = {q.id: i for i, q in enumerate(golden.queries)}
    return lambda qid: index.get(qid, len(index))


def check_corpus_ids(
    golden: GoldenSet, corpus_ids: Collection[str], where: Where = _by_id
) -> list[Finding]:
    """Expected ids that are not in the corpus (error: they can never be retrieved),
    and query ids equal to a doc id (warning: a run file cannot tell them apart)."""
    findings: list[Finding] = []
    known = frozenset(corpus_ids)
    for q in golden.queries:
        missing = sorted(d for d in q.judgments if d not in known)
        if missing:
            shown = ", ".join(missing[:10]) + (" …" if len(missing) > 10 else "")
            findings.append(
                Finding(
                    "error",
                    "corpus",
                    f"query {q.id}: {len(missing)} expected id(s) not in the corpus: {shown}",
                    location=where(q.id),
                    query_id=q.id,
                )
            )
        if q.id in known:
            findings.append(
                Finding(
                    "warning",
                    "id-collision",
                    f"query id {q.id!r} is also a document id; rename one so runs and "
                    "reports cannot confuse them",
                    location=where(q.id),
                    query_id=q.id,
                )
            )
    return findings


def label_histogram(golden: GoldenSet) -> dict[int, int]:
    """How many judgments carry each label, ascending by label."""
    counts = Counter(label for q in golden.queries for label in q.judgments.values())
    return dict(sorted(counts.items()))


def _histogram_finding(golden: GoldenSet) -> Finding:
    hist = label_histogram(golden)
    negatives = sum(q.is_negative for q in golden.queries)
    shown = ", ".join(f"label {k}: {v}" for k, v in hist.items()) or "no judgments"
    return Finding(
        "info",
        "labels",
        f"{_queries(len(golden))}, {negatives} negative example(s); {shown}",
    )


def _queries(n: int) -> str:
    return f"{n} {'query' if n == 1 else 'queries'}"


def check_size(golden: GoldenSet, *, min_queries: int = 20) -> list[Finding]:
    """B.O.B: a useful golden set has at least ``min_queries`` Q/A pairs (0 turns it off)."""
    if len(golden) >= min_queries:
        return []
    return [
        Finding(
            "error",
            "size",
            f"the golden set has {_queries(len(golden))}; at least {min_queries} are required "
            "(--min-queries)",
        )
    ]


def check_domains(
    golden: GoldenSet,
    where: Where = _by_id,
    *,
    field: str = "domain",
    min_questions: int = 10,
    min_negatives: int = 2,
    max_negatives: int = 3,
) -> list[Finding]:
    """B.O.B per-domain sets: each value of ``field`` has >= ``min_questions`` questions
    and ``min_negatives``-``max_negatives`` negative examples.

    Nothing is checked when no query has the field. Too few questions or
    negatives is an error; more negatives than ``max_negatives`` a warning.
    Queries without the field while others have it are a warning each.
    """
    if not any(field in q.metadata for q in golden.queries):
        return []
    findings: list[Finding] = []
    sizes: Counter[str] = Counter()
    negatives: Counter[str] = Counter()
    for q in golden.queries:
        if field not in q.metadata:
            findings.append(
                Finding(
                    "warning",
                    "domain",
                    f"query {q.id} has no {field!r} although other queries do",
                    location=where(q.id),
                    query_id=q.id,
                )
            )
            continue
        value = str(q.metadata[field])
        sizes[value] += 1
        negatives[value] += q.is_negative
    for value in sorted(sizes):
        n, neg = sizes[value], negatives[value]
        if n < min_questions:
            findings.append(
                Finding(
                    "error",
                    "domain",
                    f"{field} {value!r} has {n} question(s); at least {min_questions} "
                    "are required (--min-domain-questions)",
                )
            )
        if neg < min_negatives:
            findings.append(
                Finding(
                    "error",
                    "domain",
                    f"{field} {value!r} has {neg} negative example(s) (expected_chunks: []); "
                    f"at least {min_negatives} are required (--min-domain-negatives)",
                )
            )
        elif neg > max_negatives:
            findings.append(
                Finding(
                    "warning",
                    "domain",
                    f"{field} {value!r} has {neg} negative examples; the guideline is "
                    f"{min_negatives}-{max_negatives} (--max-domain-negatives)",
                )
            )
    return findings


# -- stratification plan ----------------------------------------------------------

Plan = dict[str, dict[str, int]]


def load_plan(path: str | Path) -> Plan:
    """A stratification plan ``{task_type: {difficulty: target}}`` from YAML or JSON.

    KnowCode's ``phase1_plan.json`` may wrap it as ``{"cells": {...}}`` or use
    ``"locate/easy": 6`` keys; both are accepted.
    """
    p = require_file(path, what="stratification plan", key="--plan")
    if p.is_dir():  # reading it would be an OSError, reported as a crash (exit 3)
        raise DataError(
            f"{path} is a folder, not a plan file",
            key="--plan",
            expected="a YAML or JSON file of {task_type: {difficulty: target count}}",
            hint="give the plan file itself, e.g. phase1_plan.yaml",
        )
    text = read_text(p, what="stratification plan", key="--plan")
    try:
        if p.suffix.lower() == ".json":
            raw: Any = json.loads(text)
        else:
            import yaml

            raw = yaml.safe_load(text)
    except json.JSONDecodeError as exc:
        raise DataError(
            f"the plan is not valid JSON ({exc.msg})", path=p, line=exc.lineno
        ) from None
    except Exception as exc:  # noqa: BLE001  # yaml's errors carry a mark; report it either way
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise DataError(f"the plan is not valid YAML ({exc})", path=p, line=line) from None
    if isinstance(raw, dict) and isinstance(raw.get("cells"), dict):
        raw = raw["cells"]
    if not isinstance(raw, dict) or not raw:
        raise DataError(
            "the plan must be a mapping of task type to {difficulty: target count}",
            path=p,
            expected='{"locate": {"easy": 6, "medium": 4}, ...}',
            got=type(raw).__name__ if not isinstance(raw, dict) else "an empty mapping",
        )
    plan: Plan = {}
    for task, cells in raw.items():
        if isinstance(cells, int) and not isinstance(cells, bool) and "/" in str(task):
            task, _, difficulty = str(task).partition("/")
            cells = {difficulty: cells}
        if not isinstance(cells, dict):
            raise DataError(
                f"plan entry {task!r} must map difficulty to a target count",
                path=p,
                got=repr(cells)[:60],
            )
        for difficulty, target in cells.items():
            if isinstance(target, bool) or not isinstance(target, int) or target < 0:
                raise DataError(
                    f"plan cell {task}/{difficulty}: the target must be a count >= 0",
                    path=p,
                    got=repr(target),
                )
            plan.setdefault(str(task), {})[str(difficulty)] = target
    return plan


def check_plan(
    golden: GoldenSet,
    plan: Mapping[str, Mapping[str, int]],
    where: Where = _by_id,
    *,
    fill: float = 0.8,
    fields: Sequence[str] = ("task_type", "difficulty"),
) -> list[Finding]:
    """KnowCode: every plan cell filled to >= ``fill`` of its target (error otherwise).

    Cell names match case-insensitively (``LOCATE`` = ``locate``). A query in a
    cell the plan does not define is a warning (KnowCode rejects overflow
    cells); a cell above its target is info.
    """
    row_field, col_field = fields
    counts: Counter[tuple[str, str]] = Counter()
    for q in golden.queries:
        row = str(q.metadata.get(row_field, "")).casefold()
        col = str(q.metadata.get(col_field, "")).casefold()
        counts[(row, col)] += 1
    findings: list[Finding] = []
    planned: set[tuple[str, str]] = set()
    for task, cells in plan.items():
        for difficulty, target in cells.items():
            key = (task.casefold(), difficulty.casefold())
            planned.add(key)
            have = counts.get(key, 0)
            if target == 0:
                continue
            cell = f"{task}/{difficulty}"
            if have / target < fill - 1e-9:
                findings.append(
                    Finding(
                        "error",
                        "plan",
                        f"cell {cell} has {have} of {target} planned queries "
                        f"({have / target:.0%} < {fill:.0%}, --plan-fill)",
                    )
                )
            elif have > target:
                findings.append(
                    Finding("info", "plan", f"cell {cell} has {have} queries, above its {target}")
                )
    for q in golden.queries:
        key = (
            str(q.metadata.get(row_field, "")).casefold(),
            str(q.metadata.get(col_field, "")).casefold(),
        )
        target_zero = any(
            (t.casefold(), d.casefold()) == key and n == 0
            for t, cells in plan.items()
            for d, n in cells.items()
        )
        if key not in planned or target_zero:
            findings.append(
                Finding(
                    "warning",
                    "plan",
                    f"query {q.id} is in cell {q.metadata.get(row_field)}/"
                    f"{q.metadata.get(col_field)}, which the plan does not provide for",
                    location=where(q.id),
                    query_id=q.id,
                )
            )
    return findings


def run_checks(
    golden: GoldenSet,
    where: Where = _by_id,
    thresholds: Thresholds | None = None,
    *,
    corpus_ids: Collection[str] | None = None,
    plan: Mapping[str, Mapping[str, int]] | None = None,
) -> list[Finding]:
    """Every generic check with ``thresholds`` (corpus and plan checks when given)."""
    t = thresholds or Thresholds()
    findings = check_duplicates(golden, where, near=t.near_duplicate)
    if corpus_ids is not None:
        findings += check_corpus_ids(golden, corpus_ids, where)
    findings += check_size(golden, min_queries=t.min_queries)
    findings += check_domains(
        golden,
        where,
        field=t.domain_field,
        min_questions=t.min_domain_questions,
        min_negatives=t.min_domain_negatives,
        max_negatives=t.max_domain_negatives,
    )
    if plan is not None:
        findings += check_plan(golden, plan, where, fill=t.plan_fill)
    findings.append(_histogram_finding(golden))
    return findings
