"""MLflow keys for evalframe's canonical metric names: one mapping, :func:`metric_key`.

Where ``mlflow.evaluate`` has a name for the same metric, that name is used,
so evalframe's runs sit beside other MLflow evaluations under the same keys:

==============  ======================
canonical       MLflow key
==============  ======================
``P@k``         ``precision_at_k``
``R@k``         ``recall_at_k``
``nDCG@k``      ``ndcg_at_k``
==============  ======================

(only the plain metric with an integer cutoff: ``P(rel=2)@5`` is not
``mlflow.metrics.precision_at_k``, so it keeps its own key). A statistic of a
metric is written as ``mlflow.evaluate`` writes its aggregates, after a
slash: ``nDCG@10.ci_low`` -> ``ndcg_at_10/ci_low`` (``std``, ``n``,
``ci_low``, ``ci_high``).

Every other name is mapped character by character, because MLflow accepts
only alphanumerics and ``_ - . / space`` in keys:

=========  ==========  ===============================================
canonical  safe        example
=========  ==========  ===============================================
``@``      ``_at_``    ``RR@10`` -> ``RR_at_10``
``(``      ``_``       ``P(rel=2)@5`` -> ``P_rel_2__at_5``
``)``      ``_``       ``R(view=files)`` -> ``R_view_files_``
``=``      ``_``       (see above)
``,``      ``__``      ``SetF(beta=0.5,rel=2)`` -> ``SetF_beta_0.5__rel_2_``
``:``      ``-``       ``nDCG(gain=1:3;2:9)`` -> ``nDCG_gain_1-3--2-9_``
``;``      ``--``      (see above)
other      ``-uHH-``   any other character, by its hex code point
=========  ==========  ===============================================

Alphanumerics and ``_ - . / space`` are kept, so other flat keys stay
readable: ``RR@10.ci_low`` -> ``RR_at_10/ci_low``, ``latency.p50_ms`` stays
``latency.p50_ms``. The canonical name of every logged metric is also logged
as the tag ``evalframe.metric.<key>``, so nothing is lost.

The mapping is injective on the built-in grammar (metric names are
alphanumeric, parameter keys are identifiers without ``at``, values are
numbers, identifiers or gain maps, and no built-in metric is called
``precision``, ``recall`` or ``ndcg``); the tests check it over a generated
set of canonical names. A third-party metric whose parameter *values*
contain ``_`` or ``-``, or one named like an ``mlflow.evaluate`` key, could
in principle collide; the tracker warns when it does.
"""

from __future__ import annotations

import hashlib
import re

__all__ = [
    "KEY_LIMIT",
    "MLFLOW_NAMES",
    "STATS",
    "curve_key",
    "fit_key",
    "metric_key",
    "safe_key",
    "safe_segment",
]

#: MLflow's longest metric, param or tag key.
KEY_LIMIT = 250

_TABLE = {
    "@": "_at_",
    "(": "_",
    ")": "_",
    "=": "_",
    ",": "__",
    ":": "-",
    ";": "--",
}
_ALLOWED = re.compile(r"[A-Za-z0-9_\-./ ]")
#: mlflow.evaluate's names (``mlflow.metrics.precision_at_k`` ...) for evalframe's metrics.
MLFLOW_NAMES = {"P": "precision", "R": "recall", "nDCG": "ndcg"}
_PLAIN = re.compile(r"(P|R|nDCG)@([0-9]+)")
#: Statistics of a metric in the flat files (``nDCG@10.ci_low``).
STATS = ("std", "n", "ci_low", "ci_high")


def metric_key(name: str) -> str:
    """The MLflow key for a canonical metric name, or one with a statistic (module table)."""
    base, dot, stat = name.rpartition(".")
    if dot and stat in STATS and base:
        return f"{metric_key(base)}/{stat}"
    plain = _PLAIN.fullmatch(name)
    if plain:
        return f"{MLFLOW_NAMES[plain[1]]}_at_{plain[2]}"
    return _characters(name)


def curve_key(family: str) -> str:
    """The key of a metric family drawn against its cutoff: ``R`` -> ``recall_at_k``."""
    return f"{MLFLOW_NAMES.get(family) or _characters(family)}_at_k"


def _characters(name: str) -> str:
    out = []
    for ch in name:
        if ch in _TABLE:
            out.append(_TABLE[ch])
        elif _ALLOWED.fullmatch(ch):
            out.append(ch)
        else:
            out.append(f"-u{ord(ch):x}-")
    return "".join(out)


def safe_segment(text: str) -> str:
    """One path segment of a key (a slice field or value): no ``/``, never ``.``/``..``/empty."""
    seg = _characters(str(text)).replace("/", "-u2f-")
    if seg in ("", ".", ".."):
        seg = seg.replace(".", "-u2e-") or "_"
    return seg


def fit_key(key: str, limit: int = KEY_LIMIT) -> str:
    """``key`` unchanged if MLflow accepts its length, else cut and ended with ``-<hash>``.

    Only a long slice value or a deeply nested plugin setting gets here; the
    hash keeps two long keys that share a prefix apart.
    """
    if len(key) <= limit:
        return key
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:10]
    return f"{key[: limit - 11]}-{digest}"  # "-": MLflow allows no other marker


def safe_key(name: str) -> str:
    """Any string as a key MLflow accepts for a metric, param or tag.

    :func:`metric_key` for the characters; then no empty, ``.`` or ``..``
    path segment (MLflow refuses keys that ``normpath`` would change, such as
    ``a//b`` or ``a/./b``), then :func:`fit_key` for the length. Keys that are
    already safe come back unchanged.
    """
    key = "/".join(_segment(seg) for seg in _characters(str(name)).split("/"))
    return fit_key(key)


def _segment(seg: str) -> str:
    if seg == "":
        return "_"
    if seg in (".", ".."):
        return seg.replace(".", "-u2e-")
    if seg.startswith(".."):  # MLflow refuses a key whose path starts with ".."
        return "-u2e-" + seg[1:]
    return seg
