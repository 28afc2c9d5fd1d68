"""Checks every loader makes on every record, with one wording everywhere.

A loader wraps each record's location in :class:`At` and asks it for the
fields it needs; each failure is a :class:`~evalframe.core.errors.DataError` that
names the file and line, what was expected and what was found. After the
records, :func:`warn_ids_not_in_corpus` says (once) which judged ids the
configured corpus cannot return.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalframe.core.errors import DataError
from evalframe.core.messages import shown, warn
from evalframe.core.types import Corpus, GoldenQuery, Run, normalise_id

__all__ = [
    "LABEL_MAX",
    "LABEL_MIN",
    "At",
    "UniqueIds",
    "field_names",
    "id_problem",
    "is_id",
    "label_problem",
    "warn_ids_not_in_corpus",
    "warn_if_nothing_matches",
    "warn_query_id_lookalikes",
]


#: Relevance labels are whole numbers in a C int's range, as trec_eval reads
#: them. Anything beyond is a typo or a unit mix-up (a score written where a
#: grade belongs), and would overflow gains such as nDCG's 2^label - 1 in
#: the metric engine long after retrieval was paid for; it is refused at load.
LABEL_MIN, LABEL_MAX = -(2**31), 2**31 - 1


def label_problem(value: Any) -> str | None:
    """Why ``value`` is not a relevance label, or None when it is one."""
    if isinstance(value, bool) or not isinstance(value, int):
        return "not a whole number"
    if not LABEL_MIN <= value <= LABEL_MAX:
        return f"outside the label range {LABEL_MIN}..{LABEL_MAX}"
    return None


def field_names(record: Any) -> str:
    """A record's field names as written, for an error's ``got``."""
    if not isinstance(record, dict):
        return type(record).__name__
    return ", ".join(repr(k) for k in record) or "(none)"


@dataclass(frozen=True)
class At:
    """Where a record is: a file and a 1-based line (None where a format cannot say)."""

    path: Path
    line: int | None

    def error(self, message: str, **details: Any) -> DataError:
        return DataError(message, path=self.path, line=self.line, **details)

    def __str__(self) -> str:
        return f"{self.path}:{self.line}" if self.line is not None else str(self.path)

    def mapping(self, record: Any, what: str = "record", hint: str | None = None) -> dict[str, Any]:
        """The record as a dict, or an error saying it must be a JSON object."""
        if not isinstance(record, dict):
            raise self.error(
                f"a {what} must be a JSON object", got=type(record).__name__, hint=hint
            )
        return record

    def require(
        self, record: dict[str, Any], fields: Iterable[str], hint: str | None = None
    ) -> None:
        needed = list(fields)
        missing = [f for f in needed if f not in record]
        if missing:
            raise self.error(
                f"record has no {', '.join(repr(m) for m in missing)} field",
                expected=f"fields {', '.join(needed)}",
                got=f"fields {', '.join(sorted(record)) or '(none)'}",
                hint=hint,
            )

    def label(self, value: Any, what: str, hint: str | None = None) -> int:
        """A relevance label (see :data:`LABEL_MAX`), or an error naming ``what`` it labels."""
        problem = label_problem(value)
        if problem is not None:
            raise self.error(
                f"the label of {what} is {problem}",
                expected=f"a whole number from {LABEL_MIN} to {LABEL_MAX}",
                got=repr(value),
                hint=hint or "labels > 0 are relevant, labels <= 0 judged not relevant",
            )
        return int(value)

    def graded(
        self, value: Mapping[Any, Any], field: str, noun: str = "doc", prefix: str = ""
    ) -> dict[str, int]:
        """Graded judgments ``{id: label}`` of the record's ``field``, ids as kept.

        Why here: every format that accepts a mapping must refuse the same two
        things at the record's line, and a loader that wrote ``str(key)`` let
        ``{"c1": 1, "c1 ": 2}`` through, to be merged by the model with one of
        the two labels lost. ``noun`` names what is judged (``chunk``), and
        ``prefix`` what the format says before a record's errors.
        """
        graded: dict[str, int] = {}
        for key, label in value.items():
            problem = id_problem(key)
            if problem is not None:
                raise self.error(
                    f"{prefix}field {field!r} maps {key!r}, which is not a {noun} id: it {problem}",
                    got=repr(key),
                    hint=f"map each judged {noun} id (one word) to its label",
                )
            doc = str(normalise_id(key))
            if doc in graded:  # "c1" and "c1 " are one id: which label would count?
                raise self.error(
                    f"{prefix}field {field!r} labels {noun} {doc!r} twice",
                    got=repr(dict(value))[:120],
                    hint=f"give each judged {noun} one label (ids are compared without "
                    "surrounding spaces)",
                )
            graded[doc] = self.label(label, f"{noun} {key!r} in {field!r}")
        return graded

    def ident(self, value: Any, name: str, hint: str | None = None) -> str:
        """An id field as evalframe keeps it (:func:`~evalframe.core.types.normalise_id`)."""
        problem = id_problem(value)
        if problem is not None:
            raise self.error(
                f"field {name!r} {problem}",
                got=repr(value),
                hint=hint or "an id is one word: a non-empty string without spaces, or an integer",
            )
        return str(normalise_id(value))

    def text(
        self, value: Any, name: str, *, allow_empty: bool = False, hint: str | None = None
    ) -> str:
        if not isinstance(value, str) or (not allow_empty and not value.strip()):
            wanted = "text" if allow_empty else "non-empty text"
            raise self.error(f"field {name!r} must be {wanted}", got=repr(value)[:80], hint=hint)
        return value


def id_problem(value: Any) -> str | None:
    """Why ``value`` cannot be an id, or None (the identifier policy of ``normalise_id``)."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        return "must be a non-empty string or an integer"
    try:
        normal = normalise_id(value)
    except ValueError:
        return "contains a space or a control character, which a TREC file cannot hold"
    return "must be a non-empty string or an integer" if normal == "" else None


def is_id(value: Any) -> bool:
    """A usable id: a one-word string or an integer (``bool`` is not one); see ``id_problem``."""
    return id_problem(value) is None


@dataclass
class UniqueIds:
    """Remembers where each id was first seen, to report a duplicate with both places."""

    what: str = "query id"
    hint: str | None = None
    #: id -> where it was first seen: a place's text, an ``At``, or ``(path, line)``;
    #: made into text only for the error, as a 100k-document corpus has no duplicate.
    _first: dict[str, object] = field(default_factory=dict)

    def add(self, ident: str, at: At, *, place: str | None = None) -> None:
        """Record ``ident`` at ``at``; ``place`` names it better where a line is not enough
        (``g.json:2 ([0])``, ``pairs[0], adk.yaml:2``). ``q02`` and ``q02 `` are one id."""
        ident = str(normalise_id(ident))
        first = self._first.get(ident)
        if first is not None:
            where = f"{first[0]}:{first[1]}" if isinstance(first, tuple) else str(first)
            raise at.error(
                f"{self.what} {ident!r} is duplicated (first at {where})",
                hint=self.hint or f"give every {self.what.split()[0]} its own id",
            )
        self._first[ident] = place or at

    def add_new(self, ident: str, path: Path, line: int) -> bool:
        """Record ``ident``, already in normal form (``is_plain_id``), at ``path:line``.

        False, recording nothing, when it was seen before: the caller then goes
        through :meth:`add`, which reports the duplicate. The loop of a large
        loader calls this instead of building an :class:`At` per record.
        """
        if ident in self._first:
            return False
        self._first[ident] = (path, line)
        return True


def warn_ids_not_in_corpus(
    queries: Iterable[GoldenQuery],
    corpus: Corpus | None,
    what: str = "judged document",
    *,
    relevant_only: bool = False,
    normalise: Callable[[str], str] | None = None,
) -> None:
    """One warning listing the judged (or relevant) ids the corpus lacks: no run can return them.

    ``normalise`` is the dataset's id normaliser, when it has one: the judged ids
    are in its form, and so is every retrieved id, so the corpus's ids are compared
    in that form too (Galaxy's ``tool`` is in a catalogue that lists ``tool/1.2``).
    """
    if corpus is None:
        return
    known = corpus.judged_as(normalise).ids()
    asked_by: dict[str, list[str]] = {}  # each missing id -> the queries that judge it
    for q in queries:
        for d in q.relevant if relevant_only else q.judgments:
            if d not in known:
                asked_by.setdefault(d, []).append(q.id)
    unknown = sorted(asked_by)
    if unknown:
        where = [f"{d} (query {', '.join(asked_by[d][:3])})" for d in unknown]
        warn(
            f"{len(unknown)} {what} id(s) are not in corpus {corpus.name!r} "
            f"and can never be retrieved: {shown(where)}"
        )
        _warn_lookalikes(unknown, known, f"{what} id(s)", f"corpus {corpus.name!r}")


def _fold(ident: str) -> str:
    return unicodedata.normalize("NFKC", ident).casefold()


def _warn_lookalikes(unknown: Iterable[str], known: Iterable[str], what: str, where: str) -> None:
    """Say which missing ids differ from a known one only by Unicode form or case.

    Ids are compared exactly (docs/golden-sets.md, "Identifiers"): a full-width
    ``ａ1`` is not ``a1``. Changing ids silently could merge two that differ on
    purpose, so evalframe keeps them and names the near misses instead.
    """
    folded: dict[str, str] = {}
    for ident in known:
        folded.setdefault(_fold(ident), ident)
    pairs = [f"{u!r} ~ {folded[_fold(u)]!r}" for u in unknown if _fold(u) in folded]
    if pairs:
        warn(
            f"{len(pairs)} of those {what} differ from an id of {where} only by Unicode "
            f"form or case ({shown(pairs)}); ids are compared exactly: write one spelling"
        )


def warn_query_id_lookalikes(
    golden: Iterable[GoldenQuery], run: Run, extra: Iterable[str] = ()
) -> int:
    """Warn when the run's query ids that no golden query has match golden ids that have
    no ranking, but for case or Unicode form (``Q01`` for ``q01``); return how many.

    Each such golden query scores as having no ranking (``missing_query``) and the run's
    ranking for it is ignored: a run file written with other ids would lower every mean
    with no more than a note. Ids are compared exactly (docs/golden-sets.md), so this
    names the near misses rather than matching them. ``extra`` are the run's query ids
    that no golden query has, when the run no longer holds their rankings (a run file's
    loader keeps only the golden queries' and lists the others).
    """
    ids = [q.id for q in golden]
    known = set(ids)
    extra = list(dict.fromkeys([*extra, *(qid for qid in run.rankings if qid not in known)]))
    if not extra:
        return 0
    folded: dict[str, str] = {}
    for qid in ids:
        if qid not in run.rankings:
            folded.setdefault(_fold(qid), qid)
    pairs = [(qid, folded[_fold(qid)]) for qid in extra if _fold(qid) in folded]
    if pairs:
        n = len(pairs)
        listed = shown([f"run {a!r} ~ golden {b!r}" for a, b in pairs])
        warn(
            f"{n} query id{'s' if n != 1 else ''} of the run differ{'s' if n == 1 else ''} "
            f"from a golden query id only by case or Unicode form ({listed}): ids are compared "
            f"exactly, so {'that golden query has' if n == 1 else 'those golden queries have'} "
            "no ranking (scored by metrics.policies.missing_query) and the run's "
            f"ranking{'s' if n != 1 else ''} for {'them are' if n != 1 else 'it is'} ignored. "
            "Write the ids one way on both sides"
        )
    return len(pairs)


def warn_if_nothing_matches(golden: Iterable[GoldenQuery], run: Run) -> bool:
    """Warn when not one retrieved id is a judged id of its query (and say so: True).

    Every score is then 0 or undefined, and the cause is nearly always the
    ids, not the system: written differently on the two sides (a version in
    a tool id, ``12`` against ``"012"``, case), or normalised on one side only.
    """
    retrieved = judged = 0
    example: tuple[str, str, str] | None = None
    for q in golden:
        ranking = run.rankings.get(q.id)
        if ranking is None or not ranking.doc_ids or not q.judgments:
            continue
        retrieved += len(ranking.doc_ids)
        judged += 1
        if any(d in q.judgments for d in ranking.doc_ids):
            return False
        if example is None:
            example = (q.id, ranking.doc_ids[0], next(iter(q.judgments)))
    if example is None:
        return False
    qid, got, want = example
    warn(
        f"not one of the {retrieved} document ids retrieved for {judged} judged quer"
        f"{'y' if judged == 1 else 'ies'} is a judged id of its query (query {qid!r}: "
        f"retrieved {got!r}, judged e.g. {want!r}), so every score is 0. This is most likely "
        "an id format or normalisation mismatch, not a bad retriever: write the ids the same "
        "way on both sides, or normalise both sides alike (e.g. the dataset's and the "
        "retriever's normalise settings)"
    )
    return True
