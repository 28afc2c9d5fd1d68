"""The built-in metric kernels, registered exactly like a third party's.

Each kernel takes the :class:`~evalframe.metrics.matrix.ScoreMatrix`, the
cutoff ``k`` (``None`` for the whole ranking) and its validated parameters,
and returns one value per query. Definitions follow trec_eval:

- ``P@k``   = relevant in the top k / k (k, not the number retrieved)
- ``R@k``   = relevant in the top k / relevant judged
- ``RR@k``  = 1 / rank of the first relevant doc within the top k, else 0
- ``AP@k``  = sum of P@rank over relevant docs within the top k / relevant judged
              (trec_eval ``map_cut``: the denominator is *not* min(k, R))
- ``nDCG@k``= DCG@k / ideal DCG@k with gain = label, discount log2(rank + 1);
              every positive label is a gain, whatever ``rel`` says, as in trec_eval
- ``Hit@k`` = 1 if any relevant doc is in the top k (trec_eval ``success``)
- ``Rprec``  = P@R where R is the number of relevant judged docs
- ``bpref``  = (1/R) sum over relevant retrieved r of 1 - min(n_r, R) / min(R, N),
              n_r = judged non-relevant docs above r, N = judged non-relevant
              (a term is 1 when n_r = 0, so N = 0 gives rel-retrieved / R)
- ``Judged@k`` = judged docs in the top k / k (negative labels are unjudged)
- ``NumRet``, ``NumRel``, ``NumRelRet`` = counts (summed, not averaged)
- ``SetP``, ``SetR``, ``SetF`` = precision, recall, F(beta) of the whole ranking
- ``IPrec@r`` = the highest precision at any rank whose recall is >= r
- ``11pt``   = the mean of IPrec at recall 0.0, 0.1, ..., 1.0
"""

from __future__ import annotations

import math
from functools import partial
from typing import Literal

import numpy as np
from pydantic import Field, field_validator

from evalframe.metrics.matrix import ScoreMatrix
from evalframe.metrics.measures import MetricParams, RelParams
from evalframe.metrics.measures import metric as _metric

#: Every built-in kernel computes a query's value from that query's row alone.
metric = partial(_metric, rowwise=True)

__all__: list[str] = []

#: The range of a share (P, R, nDCG, ...) and of a count (NumRet, ...): what a gate's
#: threshold is checked against (MetricDef.bounds).
FRACTION = (0.0, 1.0)
COUNT = (0.0, math.inf)


def _rank_order_sum(terms: np.ndarray) -> np.ndarray:
    """Row sums added rank by rank, as trec_eval's loops add them.

    ``ndarray.sum`` adds pairwise, which can differ in the last bit; when the
    exact value ends in 5 at the fifth decimal, that flips trec_eval's
    printed fourth decimal. A cumulative sum is sequential.
    """
    if terms.shape[1] == 0:
        return np.zeros(terms.shape[0], dtype=np.float64)
    return np.asarray(np.cumsum(terms, axis=1)[:, -1], dtype=np.float64)


def _safe_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.zeros(num.shape, dtype=np.float64)
    np.divide(num, den, out=out, where=den > 0)
    return out


@metric("P", params=RelParams, k="required", bounds=FRACTION)
def precision(m: ScoreMatrix, k: int, p: RelParams) -> np.ndarray:
    """Precision at k: the fraction of the top k that is relevant."""
    return np.asarray(m.relevant(p.rel, k).sum(axis=1) / float(k), dtype=np.float64)


@metric("R", params=RelParams, k="required", vacuous=1.0, bounds=FRACTION)
def recall(m: ScoreMatrix, k: int, p: RelParams) -> np.ndarray:
    """Recall at k: the fraction of the relevant docs found in the top k."""
    return _safe_div(m.relevant(p.rel, k).sum(axis=1).astype(np.float64), m.num_rel(p.rel))


@metric("RR", params=RelParams, k="optional", bounds=FRACTION)
def reciprocal_rank(m: ScoreMatrix, k: int | None, p: RelParams) -> np.ndarray:
    """Reciprocal rank of the first relevant doc (MRR when averaged)."""
    rel = m.relevant(p.rel, k)
    if rel.shape[1] == 0:
        return np.zeros(rel.shape[0])
    first = rel.argmax(axis=1)
    return np.where(rel.any(axis=1), 1.0 / (first + 1.0), 0.0)


@metric("AP", params=RelParams, k="optional", bounds=FRACTION)
def average_precision(m: ScoreMatrix, k: int | None, p: RelParams) -> np.ndarray:
    """Average precision (MAP when averaged); AP@k is trec_eval's map_cut."""
    rel = m.relevant(p.rel, k)
    ranks = np.arange(1, rel.shape[1] + 1, dtype=np.float64)
    precision_at_rank = np.cumsum(rel, axis=1) / ranks
    total = _rank_order_sum(precision_at_rank * rel)
    return _safe_div(total, m.num_rel(p.rel))


class GainParams(MetricParams):
    """How a label turns into a gain for nDCG."""

    gain: str = Field(
        "linear",
        description="'linear' (gain = label, trec_eval), 'exp' (2^label - 1), or a map "
        "such as '1:3;2:9' (unlisted positive labels keep their own value)",
    )

    @field_validator("gain")
    @classmethod
    def _known_gain(cls, value: str) -> str:
        if value not in ("linear", "exp"):
            _gain_map(value)  # raises ValueError with the bad entry, named by pydantic
        return value

    def bounds(self, declared: tuple[float, float] | None) -> tuple[float, float] | None:
        """[0, 1] while no gain is negative (the ideal order then bounds the DCG); a
        map with a negative gain can leave it, so its range is not known."""
        if self.gain in ("linear", "exp") or min(_gain_map(self.gain).values()) >= 0:
            return declared
        return None

    def table(self, labels: np.ndarray) -> np.ndarray:
        """Gains for an array of labels; labels <= 0 never gain."""
        base: np.ndarray = np.clip(labels, 0, None).astype(np.float64)
        if self.gain == "linear":
            return base
        if self.gain == "exp":
            return np.where(labels > 0, np.exp2(base) - 1.0, 0.0)
        out = base.copy()
        for label, gain in _gain_map(self.gain).items():
            out[labels == label] = gain
        return np.where(labels > 0, out, 0.0)


def _gain_map(text: str) -> dict[int, float]:
    mapping: dict[int, float] = {}
    for item in text.split(";"):
        label, sep, gain = item.partition(":")
        try:
            mapping[int(label)] = float(gain)
        except ValueError:
            raise ValueError(
                f"gain map entry {item!r} is not label:gain (e.g. gain=1:3;2:9)"
            ) from None
        if not sep:
            raise ValueError(f"gain map entry {item!r} is not label:gain (e.g. gain=1:3;2:9)")
        if not math.isfinite(mapping[int(label)]):  # 1:nan scored every query 0 in silence
            raise ValueError(f"gain map entry {item!r}: the gain is not a finite number")
    return mapping


@metric("nDCG", params=GainParams, k="optional", bounds=FRACTION)
def ndcg(m: ScoreMatrix, k: int | None, p: GainParams) -> np.ndarray:
    """Normalised discounted cumulative gain (linear label gains by default, as trec_eval)."""
    labels = m.labels if k is None else m.labels[:, :k]
    gains = p.table(labels)
    discount = 1.0 / np.log2(np.arange(2, gains.shape[1] + 2, dtype=np.float64))
    dcg = _rank_order_sum(gains * discount)
    # The ideal ranking orders the judged documents by gain, which differs
    # from label order only for a non-monotone custom map.
    igains = -np.sort(-p.table(m.ideal), axis=1)
    if k is not None:
        igains = igains[:, :k]
    idiscount = 1.0 / np.log2(np.arange(2, igains.shape[1] + 2, dtype=np.float64))
    idcg = np.asarray((igains * idiscount).sum(axis=1), dtype=np.float64)
    return _safe_div(np.asarray(dcg, dtype=np.float64), idcg)


@metric("Hit", params=RelParams, k="required", bounds=FRACTION)
def hit(m: ScoreMatrix, k: int, p: RelParams) -> np.ndarray:
    """Hit (success) at k: 1 if any relevant doc is in the top k."""
    return np.asarray(m.relevant(p.rel, k).any(axis=1), dtype=np.float64)


@metric("Rprec", params=RelParams, k="none", bounds=FRACTION)
def r_precision(m: ScoreMatrix, k: None, p: RelParams) -> np.ndarray:
    """Precision at rank R, where R is the number of relevant judged docs."""
    rel = m.relevant(p.rel)
    n_rel = m.num_rel(p.rel)
    if rel.shape[1] == 0:
        return np.zeros(rel.shape[0])
    cum = np.cumsum(rel, axis=1)
    at = cum[np.arange(rel.shape[0]), np.clip(n_rel - 1, 0, rel.shape[1] - 1)]
    return _safe_div(at.astype(np.float64), n_rel)


@metric("bpref", params=RelParams, k="none", bounds=FRACTION)
def bpref(m: ScoreMatrix, k: None, p: RelParams) -> np.ndarray:
    """Binary preference: how rarely judged non-relevant docs outrank relevant ones."""
    rel = m.relevant(p.rel) & m.judged
    nonrel = m.nonrelevant(p.rel)
    n_rel = m.num_rel(p.rel).astype(np.float64)[:, None]
    n_nonrel = m.num_nonrel(p.rel).astype(np.float64)[:, None]
    above = np.cumsum(nonrel, axis=1) - nonrel  # judged non-relevant strictly above
    denom = np.minimum(n_rel, n_nonrel)
    penalty = np.zeros(above.shape, dtype=np.float64)
    np.divide(np.minimum(above, n_rel), denom, out=penalty, where=(above > 0) & (denom > 0))
    total = _rank_order_sum(np.where(rel, 1.0 - penalty, 0.0))
    return _safe_div(total, n_rel[:, 0])


@metric("Judged", k="required", bounds=FRACTION)
def judged(m: ScoreMatrix, k: int, p: MetricParams) -> np.ndarray:
    """The fraction of the top k that is judged (negative labels count as unjudged)."""
    return np.asarray(m.judged[:, :k].sum(axis=1) / float(k), dtype=np.float64)


@metric("NumRet", k="none", aggregate="sum", bounds=COUNT)
def num_ret(m: ScoreMatrix, k: None, p: MetricParams) -> np.ndarray:
    """Number of documents retrieved."""
    return m.n_ret.astype(np.float64)


@metric("NumRel", params=RelParams, k="none", aggregate="sum", bounds=COUNT)
def num_rel(m: ScoreMatrix, k: None, p: RelParams) -> np.ndarray:
    """Number of relevant documents judged."""
    return m.num_rel(p.rel).astype(np.float64)


@metric("NumRelRet", params=RelParams, k="none", aggregate="sum", bounds=COUNT)
def num_rel_ret(m: ScoreMatrix, k: None, p: RelParams) -> np.ndarray:
    """Number of relevant documents retrieved."""
    return np.asarray(m.relevant(p.rel).sum(axis=1), dtype=np.float64)


@metric("SetP", params=RelParams, k="none", bounds=FRACTION)
def set_precision(m: ScoreMatrix, k: None, p: RelParams) -> np.ndarray:
    """Precision of the whole ranking: relevant retrieved / retrieved."""
    return _safe_div(m.relevant(p.rel).sum(axis=1).astype(np.float64), m.n_ret)


@metric("SetR", params=RelParams, k="none", vacuous=1.0, bounds=FRACTION)
def set_recall(m: ScoreMatrix, k: None, p: RelParams) -> np.ndarray:
    """Recall of the whole ranking: relevant retrieved / relevant judged."""
    return _safe_div(m.relevant(p.rel).sum(axis=1).astype(np.float64), m.num_rel(p.rel))


class FParams(RelParams):
    """F-measure weight: beta > 1 favours recall."""

    beta: float = Field(1.0, gt=0, description="recall weight")


@metric("SetF", params=FParams, k="none", bounds=FRACTION)
def set_f(m: ScoreMatrix, k: None, p: FParams) -> np.ndarray:
    """F-measure of the whole ranking's set precision and recall."""
    relret = m.relevant(p.rel).sum(axis=1).astype(np.float64)
    prec = _safe_div(relret, m.n_ret)
    rec = _safe_div(relret, m.num_rel(p.rel))
    b2 = p.beta * p.beta
    return _safe_div((1 + b2) * prec * rec, b2 * prec + rec)


class IPrecParams(RelParams):
    """How a recall level becomes a number of relevant documents."""

    rounding: Literal["round", "v9"] = Field(
        "round",
        description="'round': level x R rounded to the nearest count (trec_eval 10); "
        "'v9': floor(level x R + 0.9), as trec_eval 9.0.8 and pytrec_eval",
    )


def _iprec(m: ScoreMatrix, p: IPrecParams, levels: np.ndarray) -> np.ndarray:
    """(queries x levels) interpolated precision.

    A level is reached once the retriever has found ``need`` relevant
    documents, where ``need`` is the level times R turned into a count (see
    :class:`IPrecParams`). The value is the best precision at any relevant
    rank from that point on; a level never reached scores 0.
    """
    rel = m.relevant(p.rel)
    n_rel = m.num_rel(p.rel).astype(np.float64)
    nq = rel.shape[0]
    if rel.shape[1] == 0:
        return np.zeros((nq, levels.size))
    found = np.cumsum(rel, axis=1)
    ranks = np.arange(1, rel.shape[1] + 1, dtype=np.float64)
    precision = np.where(rel, found / ranks, 0.0)
    # best precision at this relevant rank or any later one (suffix maximum)
    best_after = np.maximum.accumulate(precision[:, ::-1], axis=1)[:, ::-1]
    scaled = levels[None, :] * n_rel[:, None]
    need = np.floor(scaled + 0.9) if p.rounding == "v9" else np.floor(scaled + 0.5)
    total = found[:, -1].astype(np.float64)
    out = np.zeros((nq, levels.size))
    for j in range(levels.size):
        k_needed = need[:, j]
        reached = (k_needed <= total) & (total > 0)
        # rank (0-based) of the k-th relevant doc; k = 0 means "from the top"
        first = np.argmax(found >= np.maximum(k_needed, 1)[:, None], axis=1)
        out[:, j] = np.where(reached, best_after[np.arange(nq), first], 0.0)
    return out


@metric("IPrec", params=IPrecParams, k="required", cutoff="recall", bounds=FRACTION)
def iprec(m: ScoreMatrix, k: float, p: IPrecParams) -> np.ndarray:
    """Interpolated precision at a recall level: IPrec@0.5 (trec_eval iprec_at_recall)."""
    return _iprec(m, p, np.array([k]))[:, 0]


@metric("11pt", params=IPrecParams, k="none", bounds=FRACTION)
def eleven_point(m: ScoreMatrix, k: None, p: IPrecParams) -> np.ndarray:
    """Mean interpolated precision at recall 0.0, 0.1, ..., 1.0 (trec_eval 11pt_avg)."""
    levels = np.array([0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0])
    return np.asarray(_iprec(m, p, levels).mean(axis=1), dtype=np.float64)


class AbstainParams(MetricParams):
    """What counts as returning something."""

    threshold: float = Field(
        0.0, description="a doc counts as returned only with a score above this"
    )


@metric("Abstained", params=AbstainParams, k="required", applies_to="negatives", bounds=FRACTION)
def abstained(m: ScoreMatrix, k: int, p: AbstainParams) -> np.ndarray:
    """On negative examples: 1 if nothing in the top k scores above the threshold."""
    if m.scores is None:
        raise ValueError("Abstained needs the matrix's scores")
    top = m.scores[:, :k]
    returned = np.where(np.isnan(top), False, top > p.threshold)
    return np.asarray(~returned.any(axis=1), dtype=np.float64)
