"""What changed between two versions of a golden set (a pure function of the two sets).

Queries are matched by id. For each query present in both, the diff lists a
reworded question, judgments added / removed / relabelled (in the main
judgments and in every view), and metadata fields that changed. Reading the
two versions (files, or Git/DVC revisions: :mod:`evalframe.golden.revisions`)
is the caller's job.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evalframe.core.types import GoldenQuery, GoldenSet

__all__ = ["GoldenDiff", "JudgmentChange", "QueryChange", "diff_sets", "render_diff"]

_MISSING = object()


@dataclass(frozen=True)
class JudgmentChange:
    """Judgments of one query (or one of its views) that differ."""

    added: dict[str, int] = field(default_factory=dict)
    removed: dict[str, int] = field(default_factory=dict)
    relabelled: dict[str, tuple[int, int]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.relabelled)

    def to_dict(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "removed": self.removed,
            "relabelled": {d: {"old": o, "new": n} for d, (o, n) in self.relabelled.items()},
        }


def _judgment_change(old: dict[str, int], new: dict[str, int]) -> JudgmentChange:
    return JudgmentChange(
        added={d: new[d] for d in sorted(new) if d not in old},
        removed={d: old[d] for d in sorted(old) if d not in new},
        relabelled={d: (old[d], new[d]) for d in sorted(old) if d in new and old[d] != new[d]},
    )


@dataclass(frozen=True)
class QueryChange:
    """Everything that changed in one query kept by id."""

    id: str
    text: tuple[str, str] | None = None
    judgments: JudgmentChange = field(default_factory=JudgmentChange)
    views: dict[str, JudgmentChange] = field(default_factory=dict)
    metadata: dict[str, tuple[Any, Any]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.text or self.judgments or self.views or self.metadata)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id}
        if self.text:
            out["text"] = {"old": self.text[0], "new": self.text[1]}
        if self.judgments:
            out["judgments"] = self.judgments.to_dict()
        if self.views:
            out["views"] = {v: c.to_dict() for v, c in self.views.items()}
        if self.metadata:
            out["metadata"] = {
                k: {"old": _json(o), "new": _json(n)} for k, (o, n) in self.metadata.items()
            }
        return out


def _json(value: Any) -> Any:
    return None if value is _MISSING else value


@dataclass(frozen=True)
class GoldenDiff:
    """The difference ``old -> new``; falsy when the sets hold the same queries."""

    added: tuple[GoldenQuery, ...] = ()
    removed: tuple[GoldenQuery, ...] = ()
    changed: tuple[QueryChange, ...] = ()
    old_hash: str = ""
    new_hash: str = ""

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)

    @property
    def reworded(self) -> list[QueryChange]:
        return [c for c in self.changed if c.text]

    def summary(self) -> dict[str, int]:
        return {
            "added": len(self.added),
            "removed": len(self.removed),
            "reworded": len(self.reworded),
            "judgments_changed": sum(1 for c in self.changed if c.judgments or c.views),
            "metadata_changed": sum(1 for c in self.changed if c.metadata),
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "old_hash": self.old_hash,
            "new_hash": self.new_hash,
            "summary": self.summary(),
            "added": [q.canonical() for q in self.added],
            "removed": [q.canonical() for q in self.removed],
            "changed": [c.to_dict() for c in self.changed],
        }


def diff_sets(old: GoldenSet, new: GoldenSet) -> GoldenDiff:
    """The changes from ``old`` to ``new``, queries matched by id.

    Added queries keep ``new``'s order, removed ones ``old``'s; changed ones
    follow ``new``. ``diff_sets(a, a)`` is always empty.
    """
    old_by, new_by = old.by_id(), new.by_id()
    changed: list[QueryChange] = []
    for q in new.queries:
        before = old_by.get(q.id)
        if before is None:
            continue
        views = {}
        for view in sorted(set(before.views) | set(q.views)):
            view_change = _judgment_change(before.views.get(view, {}), q.views.get(view, {}))
            if view_change:
                views[view] = view_change
        metadata = {}
        for key in sorted(set(before.metadata) | set(q.metadata)):
            a, b = before.metadata.get(key, _MISSING), q.metadata.get(key, _MISSING)
            if a != b:
                metadata[key] = (a, b)
        change = QueryChange(
            id=q.id,
            text=(before.text, q.text) if before.text != q.text else None,
            judgments=_judgment_change(before.judgments, q.judgments),
            views=views,
            metadata=metadata,
        )
        if change:
            changed.append(change)
    return GoldenDiff(
        added=tuple(q for q in new.queries if q.id not in old_by),
        removed=tuple(q for q in old.queries if q.id not in new_by),
        changed=tuple(changed),
        old_hash=old.content_hash,
        new_hash=new.content_hash,
    )


def _ids(judgments: dict[str, int]) -> str:
    if all(label == 1 for label in judgments.values()):
        return ", ".join(judgments)
    return ", ".join(f"{d} ({label})" for d, label in judgments.items())


def _judgment_lines(change: JudgmentChange, label: str) -> list[str]:
    lines = []
    if change.added:
        lines.append(f"    + {label}: {_ids(change.added)}")
    if change.removed:
        lines.append(f"    - {label}: {_ids(change.removed)}")
    for doc, (a, b) in change.relabelled.items():
        lines.append(f"    ~ {label} {doc}: label {a} → {b}")
    return lines


def _show(value: Any) -> str:
    return "(absent)" if value is _MISSING else repr(value)


def render_diff(diff: GoldenDiff, old_name: str = "old", new_name: str = "new") -> str:
    """A readable report of ``diff``."""
    s = diff.summary()
    lines = [
        f"{old_name} ({diff.old_hash}) → {new_name} ({diff.new_hash})",
        f"  {s['added']} added, {s['removed']} removed, {s['reworded']} reworded, "
        f"{s['judgments_changed']} with changed judgments, {s['metadata_changed']} with "
        "changed metadata",
    ]
    if not diff:
        lines.append("no differences")
        return "\n".join(lines)
    if diff.added:
        lines += ["", f"Added ({len(diff.added)}):"]
        for q in diff.added:
            rel = _ids(q.judgments) if q.judgments else "negative example"
            lines.append(f"  + {q.id}: {q.text!r} [{rel}]")
    if diff.removed:
        lines += ["", f"Removed ({len(diff.removed)}):"]
        lines += [f"  - {q.id}: {q.text!r}" for q in diff.removed]
    if diff.changed:
        lines += ["", f"Changed ({len(diff.changed)}):"]
        for c in diff.changed:
            lines.append(f"  {c.id}:")
            if c.text:
                lines.append(f"    question: {c.text[0]!r}")
                lines.append(f"           → {c.text[1]!r}")
            lines += _judgment_lines(c.judgments, "judged")
            for view, vc in c.views.items():
                lines += _judgment_lines(vc, f"{view} view")
            for key, (a, b) in c.metadata.items():
                lines.append(f"    {key}: {_show(a)} → {_show(b)}")
    return "\n".join(lines)
