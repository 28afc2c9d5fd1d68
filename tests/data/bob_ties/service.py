"""A stand-in for a retrieval service that returns two-decimal scores with ties.

``service.json`` holds, per query id, the (chunk id, score) list the service
returned, best first; equal scores appear in the service's own order. Used as
``retriever=python retriever.target=service:search`` with this folder on
``retriever.python_path``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalframe import Query

RESULTS: dict[str, list[list[Any]]] = json.loads(
    (Path(__file__).with_name("service.json")).read_text(encoding="utf-8")
)


def search(query: Query, k: int) -> list[tuple[int, float]]:
    """The stored answer for this query, as the service returned it."""
    return [(int(doc), float(score)) for doc, score in RESULTS[str(query.id)][:k]]
