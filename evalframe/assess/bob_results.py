"""B.O.B's saved results as a baseline, so a team can switch without re-running its history.

B.O.B's ``eval run`` saves its ``EvalResults`` as JSON: the three means and a
per-query list (reference ``000_*``). evalframe reads that file wherever a
baseline is expected (``baseline=docs/eval/baseline.json``)::

    {
      "k": 5,                        # optional: the cutoff of recall and precision (5)
      "date": "2025-12-01",          # optional: shown with the baseline's name
      "recall_mean": 0.78,           # optional: checked against per_query
      "precision_mean": 0.62,
      "mrr_mean": 0.71,
      "per_query": [
        {"id": 1, "recall": 1.0, "precision": 0.4, "mrr": 1.0},
        ...
      ]
    }

``recall``, ``precision`` and ``mrr`` become ``R@k``, ``P@k`` and ``RR``, the
metrics of ``metrics=bob``. Other keys (``*_std``, ``golden``, ...) are
ignored. The file carries no golden-set hash, so comparability is checked by
query ids instead, and B.O.B's conventions (a negative example's recall is
1.0; a list is scored as returned) are its policies.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from evalframe.assess.runfolder import RunData
from evalframe.core.errors import DataError
from evalframe.core.reader import read_json

__all__ = ["BOB_POLICIES", "is_bob_results", "read_bob_results"]

#: The metric policies B.O.B's formulas imply; a run compared with its
#: results must use the same ones (``metrics=bob``).
BOB_POLICIES: dict[str, str] = {"no_relevant": "bob", "ties": "given"}

_FIELDS = {"recall": "R@{k}", "precision": "P@{k}", "mrr": "RR"}
#: B.O.B prints two decimals; a saved mean may have been rounded to them.
_MEAN_TOLERANCE = 0.005 + 1e-9


def is_bob_results(path: Path) -> bool:
    """Whether ``path`` names a results file rather than a baseline folder."""
    return path.is_file() and path.suffix.lower() == ".json"


def _number(value: Any, where: str, path: Path) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise DataError(
            f"{where} must be a number between 0 and 1",
            path=path,
            got=repr(value),
            hint="B.O.B's results list recall, precision and mrr per query as numbers",
        )
    if not 0.0 <= float(value) <= 1.0:
        raise DataError(f"{where} must be between 0 and 1", path=path, got=repr(value))
    return float(value)


def read_bob_results(path: Path, name: str | None = None) -> RunData:
    """Read B.O.B's results JSON into the per-query vectors a comparison needs."""
    # read_json: invalid JSON or a key twice in one record (a second "recall") names its line
    data = read_json(path, what="B.O.B results file").data
    if not isinstance(data, dict) or not isinstance(data.get("per_query"), list):
        found = ", ".join(sorted(data)) if isinstance(data, dict) else type(data).__name__
        raise DataError(
            "a B.O.B results file must be a JSON object with a 'per_query' list",
            path=path,
            expected='{"recall_mean": ..., "per_query": [{"id", "recall", "precision", "mrr"}]}',
            got=f"keys: {found}" if isinstance(data, dict) else found,
            hint="give the JSON that `bob eval run` saved, or an evalframe run/baseline folder",
        )
    k = data.get("k", 5)
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise DataError("'k' must be a positive integer (the cutoff)", path=path, got=repr(k))
    names = {field: template.format(k=k) for field, template in _FIELDS.items()}
    values: dict[str, dict[str, float]] = {m: {} for m in names.values()}
    ids: list[str] = []
    for i, record in enumerate(data["per_query"]):
        where = f"per_query[{i}]"
        if not isinstance(record, dict) or "id" not in record:
            raise DataError(f"{where} must be an object with an 'id'", path=path, got=repr(record))
        raw_id = record["id"]
        if isinstance(raw_id, bool) or not isinstance(raw_id, (int, str)) or raw_id == "":
            raise DataError(f"{where}.id must be a question id", path=path, got=repr(raw_id))
        qid = str(raw_id)
        if qid in values[names["mrr"]]:
            raise DataError(f"{where}: question id {qid!r} is listed twice", path=path)
        for field, metric in names.items():
            if field not in record:
                raise DataError(
                    f"{where} (id {qid}) has no {field!r}",
                    path=path,
                    expected="recall, precision and mrr for every question",
                )
            values[metric][qid] = _number(record[field], f"{where}.{field}", path)
        ids.append(qid)
    if not ids:
        raise DataError("the B.O.B results file lists no questions", path=path)
    for field, metric in names.items():
        stated = data.get(f"{field}_mean")
        if stated is None:
            continue
        actual = sum(values[metric].values()) / len(ids)
        if not isinstance(stated, (int, float)) or abs(float(stated) - actual) > _MEAN_TOLERANCE:
            raise DataError(
                f"'{field}_mean' ({stated!r}) is not the mean of per_query {field} ({actual:.4f})",
                path=path,
                hint="the file was edited or truncated; re-save it from `bob eval run`",
            )
    date = data.get("date") or data.get("timestamp")
    label = name or (f"{path.name} ({date})" if isinstance(date, str) else path.name)
    return RunData(
        name=label,
        path=path,
        query_ids=tuple(ids),
        values=values,
        slices={},
        retrieved={},
        expected={},
        golden_hash=None,
        policies=dict(BOB_POLICIES),
        metrics=tuple(names.values()),
    )
