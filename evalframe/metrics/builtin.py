"""The built-in metric kernels, registered exactly like a third party's.

Each kernel takes the :class:`~evalframe.metrics.engine.ScoreMatrix`, the
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
"""

from __future__ import annotations

import numpy as np

from evalframe.metrics.engine import ScoreMatrix
from evalframe.metrics.measures import MetricParams, RelParams, metric

__all__: list[str] = []


def _safe_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.zeros(num.shape, dtype=np.float64)
    np.divide(num, den, out=out, where=den > 0)
    return out


@metric("P", params=RelParams, k="required")
def precision(m: ScoreMatrix, k: int, p: RelParams) -> np.ndarray:
    """Precision at k: the fraction of the top k that is relevant."""
    return np.asarray(m.relevant(p.rel, k).sum(axis=1) / float(k), dtype=np.float64)


@metric("R", params=RelParams, k="required", vacuous=1.0)
def recall(m: ScoreMatrix, k: int, p: RelParams) -> np.ndarray:
    """Recall at k: the fraction of the relevant docs found in the top k."""
    return _safe_div(m.relevant(p.rel, k).sum(axis=1).astype(np.float64), m.num_rel(p.rel))


@metric("RR", params=RelParams, k="optional")
def reciprocal_rank(m: ScoreMatrix, k: int | None, p: RelParams) -> np.ndarray:
    """Reciprocal rank of the first relevant doc (MRR when averaged)."""
    rel = m.relevant(p.rel, k)
    if rel.shape[1] == 0:
        return np.zeros(rel.shape[0])
    first = rel.argmax(axis=1)
    return np.where(rel.any(axis=1), 1.0 / (first + 1.0), 0.0)


@metric("AP", params=RelParams, k="optional")
def average_precision(m: ScoreMatrix, k: int | None, p: RelParams) -> np.ndarray:
    """Average precision (MAP when averaged); AP@k is trec_eval's map_cut."""
    rel = m.relevant(p.rel, k)
    ranks = np.arange(1, rel.shape[1] + 1, dtype=np.float64)
    precision_at_rank = np.cumsum(rel, axis=1) / ranks
    total = (precision_at_rank * rel).sum(axis=1)
    return _safe_div(total, m.num_rel(p.rel))


@metric("nDCG", params=MetricParams, k="optional")
def ndcg(m: ScoreMatrix, k: int | None, p: MetricParams) -> np.ndarray:
    """Normalised discounted cumulative gain with linear (label) gains, as trec_eval."""
    labels = m.labels if k is None else m.labels[:, :k]
    gains = np.clip(labels, 0, None).astype(np.float64)
    discount = 1.0 / np.log2(np.arange(2, gains.shape[1] + 2, dtype=np.float64))
    dcg = (gains * discount).sum(axis=1)
    ideal = m.ideal if k is None else m.ideal[:, :k]
    igains = np.clip(ideal, 0, None).astype(np.float64)
    idiscount = 1.0 / np.log2(np.arange(2, igains.shape[1] + 2, dtype=np.float64))
    idcg = np.asarray((igains * idiscount).sum(axis=1), dtype=np.float64)
    return _safe_div(np.asarray(dcg, dtype=np.float64), idcg)


@metric("Hit", params=RelParams, k="required")
def hit(m: ScoreMatrix, k: int, p: RelParams) -> np.ndarray:
    """Hit (success) at k: 1 if any relevant doc is in the top k."""
    return np.asarray(m.relevant(p.rel, k).any(axis=1), dtype=np.float64)
