"""What changed between two runs' golden sets, query by query, and what a comparison leaves out.

Two runs scored on different golden sets are compared only when asked
(``--allow-mismatch``, ``compare.allow_mismatch=true``, as the DVC pipeline's
compare stages do after a golden-set edit), and then on the queries both sets
hold. A shared query whose relevant documents changed is not the same query:
its delta is the relabelling's, not the system's (a judged document moved from
rank 1 to rank 3 reads as an RR drop from 1 to 0.33 with the same rankings).
Such queries are left out of the pairing, and said, with the queries only one
set holds, so a regression gate or a verdict never blames the system for an
edit of the labels.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["GoldenChange", "golden_change", "judged_alike"]


@dataclass(frozen=True)
class GoldenChange:
    """The queries two golden sets do not share alike: only in one, or relabelled."""

    a_hash: str
    b_hash: str
    only_a: tuple[str, ...]
    only_b: tuple[str, ...]
    #: shared query ids whose relevant documents differ (left out of the pairing)
    relabelled: tuple[str, ...]

    def as_dict(self) -> dict[str, object]:
        return {
            "a": self.a_hash,
            "b": self.b_hash,
            "only_a": list(self.only_a),
            "only_b": list(self.only_b),
            "relabelled": list(self.relabelled),
        }

    def note(self, a: str, b: str) -> str:
        """One paragraph: the two sets, what each holds alone, what was left out."""

        def ids(items: Sequence[str]) -> str:
            head = ", ".join(items[:5])
            return head + (f" and {len(items) - 5} more" if len(items) > 5 else "")

        parts = [
            f"{a} and {b} were scored on different golden sets ({self.a_hash} vs "
            f"{self.b_hash}); they are compared on the queries both sets judge alike"
        ]
        if self.relabelled:
            n = len(self.relabelled)
            parts.append(
                f"{n} shared quer{'y' if n == 1 else 'ies'} with other relevant documents "
                f"in each set, left out (a change of labels, not of the system): "
                f"{ids(self.relabelled)}"
            )
        for side, only in ((a, self.only_a), (b, self.only_b)):
            if only:
                n = len(only)
                parts.append(
                    f"{n} quer{'y' if n == 1 else 'ies'} only in {side}'s set: {ids(only)}"
                )
        return "; ".join(parts) + "."


def golden_change(
    a_hash: str | None,
    a_ids: Sequence[str],
    b_hash: str | None,
    b_ids: Sequence[str],
    judged_alike: Callable[[str], bool],
) -> GoldenChange | None:
    """How the golden sets of two runs differ (None when both name the same set, or one
    names none: B.O.B's results carry no hash, nor judgments to compare).

    ``judged_alike(query_id)`` says whether a query both sets hold has the same
    judgments in each (:func:`judged_alike` for two stored runs).
    """
    if a_hash is None or b_hash is None or a_hash == b_hash:
        return None
    in_a, in_b = set(a_ids), set(b_ids)
    return GoldenChange(
        a_hash=a_hash,
        b_hash=b_hash,
        only_a=tuple(q for q in a_ids if q not in in_b),
        only_b=tuple(q for q in b_ids if q not in in_a),
        relabelled=tuple(q for q in b_ids if q in in_a and not judged_alike(q)),
    )


def judged_alike(
    a_judgments: Mapping[str, Mapping[str, int]],
    a_expected: Mapping[str, Sequence[str]],
    b_judgments: Mapping[str, Mapping[str, int]],
    b_expected: Mapping[str, Sequence[str]],
) -> Callable[[str], bool]:
    """Whether a query is judged alike by two runs' records: by its judgments (ids and
    grades) where both recorded them, else by its relevant ids (``expected``); a query
    neither tells anything of counts as alike."""

    def alike(q: str) -> bool:
        if q in a_judgments and q in b_judgments:
            return dict(a_judgments[q]) == dict(b_judgments[q])
        if q in a_expected and q in b_expected:
            return set(a_expected[q]) == set(b_expected[q])
        return True

    return alike
