"""Failure categories: why a failed query failed, by heuristics over its text and its ranking.

ADK's failure analysis (reference 004, §5.5) names three buckets with a fix
for each; evalframe decides them with documented rules (docs/analyses.md,
"Failure categories"). They are heuristics: a hint where to look first, not
a diagnosis. Every rule compares *content terms* (:mod:`evalframe.analysis.text`).

Let Q be the query's content terms (|Q| > 0), E its relevant documents whose
text the corpus holds, shared(d) = |Q ∩ terms(d)| and best = max over E of
shared(d).

- **vocabulary mismatch**: best / |Q| <= ``vocabulary_max_overlap`` (0.2): the
  query shares (almost) none of its terms with any expected document.
  Fix: vector search.
- **specificity gap**: the query is short (|Q| <= ``short_query_terms``, 3) or
  generic (every term occurs in at least ``generic_df_share``, 5 %, of the
  corpus's documents), *and* the scores are flat: among the top
  ``flat_depth`` (10) at least ``flat_count`` (5) score within
  ``flat_margin`` (20 %) of the top score, s >= s_1 - margin * |s_1|.
  Fix: query expansion.
- **distractor overlap**: a non-relevant document ranked above every
  relevant one shares more query terms than the best expected document
  (shared(d) > best). Fix: reranking (or contrastive training).
- **other**: none of these.

A query can match several rules; all are listed under ``signals``, and the
category is the first in the order above (the reference's order).
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from evalframe.analysis import text as _text
from evalframe.analysis.settings import CATEGORIES, FailureSettings
from evalframe.analysis.text import documents_holding, terms
from evalframe.assess.runfolder import FAIL
from evalframe.core.jsoncodec import dumps_compact, loads
from evalframe.core.progress import Step, step
from evalframe.core.store import EntryStore, get_many, put_many
from evalframe.core.types import Corpus

__all__ = ["CATEGORIES", "FIXES", "LABELS", "DocTerms", "annotate_failures", "categorise"]

LABELS = {
    "vocabulary_mismatch": "vocabulary mismatch",
    "specificity_gap": "specificity gap",
    "distractor_overlap": "distractor overlap",
    "other": "other",
}
#: Reference 004 §5.5's fix for each bucket.
FIXES: dict[str, str | None] = {
    "vocabulary_mismatch": "vector search",
    "specificity_gap": "query expansion",
    "distractor_overlap": "reranking (or contrastive training)",
    "other": None,
}


#: The term rule's identity (the source of analysis/text.py): cached counts made under
#: another rule are never read back.
_RULE = hashlib.sha256(inspect.getsource(_text).encode("utf-8")).hexdigest()[:16]


class DocFrequency:
    """Share of the corpus's documents that hold a term; counted when first asked for.

    Only the "generic" test needs it, and only for a failed query that is not
    already short and whose scores are flat. The terms it may ask about (the
    golden set's) are announced with :meth:`expect`; the first
    :meth:`share` that needs a count counts all of them in one pass over the
    documents (:func:`evalframe.analysis.text.documents_holding`: 1.7 s for
    11k terms at 100k documents, where the terms of every document take
    2.6–3.3 s). With a ``store`` each count is kept, one entry per term under
    the term rule's hash and the corpus's content hash: the next run on the
    same corpus reads back the counts it already has and needs the
    documents' text only for terms never counted (a golden set with new
    queries).
    """

    NAMESPACE = "docfreq"

    def __init__(self, corpus: Corpus, store: EntryStore | None = None) -> None:
        self._corpus = corpus
        self._store = store
        self._counts: dict[str, int] = {}
        self._expected: dict[str, None] = {}

    def _key(self, term: str) -> str:
        name = f"df\0{_RULE}\0{self._corpus.content_hash}\0{term}"
        return hashlib.sha256(name.encode("utf-8")).hexdigest()

    def expect(self, terms: Iterable[str]) -> None:
        """Terms :meth:`share` may be asked about: counted together, if at all."""
        self._expected.update(dict.fromkeys(terms))

    def _count(self, wanted: Iterable[str]) -> None:
        missing = [t for t in dict.fromkeys(wanted) if t not in self._counts]
        self._expected.clear()
        keys = {t: self._key(t) for t in missing}
        kept = get_many(self._store, list(keys.values())) if self._store is not None else {}
        todo = []
        for term in missing:
            text = kept.get(keys[term])
            if text is not None and text.isascii() and text.isdigit():
                self._counts[term] = int(text)
            else:
                todo.append(term)  # never counted, or damaged: counted (again)
        if not todo:
            return
        what = f"failure categories: document frequencies of {len(todo)} terms"
        with step(what, total=len(self._corpus), unit="docs") as bar:
            counted = documents_holding(_texts(self._corpus, bar), todo)
        self._counts.update((t, counted[t]) for t in todo)
        if self._store is not None:
            put_many(self._store, [(keys[t], str(counted[t])) for t in todo])

    def share(self, term: str) -> float:
        if term not in self._counts:
            self._count([term, *self._expected])
        n = len(self._corpus)  # a deferred corpus knows it without reading its texts
        return self._counts[term] / n if n else 0.0


def _texts(corpus: Corpus, bar: Step, every: int = 4096) -> Iterator[str]:
    """The corpus's texts, advancing ``bar`` as they are read."""
    n = 0
    for n, doc in enumerate(corpus.documents, start=1):
        yield doc.text
        if n % every == 0:
            bar.advance(every)
    bar.advance(n % every)


class DocTerms:
    """Documents' content terms, kept in the store for the next run on the same corpus.

    A failed query needs the terms of its expected documents and of those
    ranked above them: 17k documents for 2,300 failed queries at 100k
    documents, about a second of splitting, plus reading every document's
    text when the run's rankings came from the cache (the corpus was never
    loaded). With a ``store`` the terms are kept one entry per document,
    under the term rule's hash, the corpus's content hash and the document
    id, so a later run on the same corpus reads them back without the
    documents (a changed corpus has another hash: its terms are split again).
    """

    def __init__(self, corpus: Corpus, store: EntryStore | None = None) -> None:
        self._corpus = corpus
        self._store = store
        self._terms: dict[str, frozenset[str] | None] = {}
        self._ids: frozenset[str] | None = None

    def _key(self, doc: str) -> str:
        name = f"terms\0{_RULE}\0{self._corpus.content_hash}\0{doc}"
        return hashlib.sha256(name.encode("utf-8")).hexdigest()

    def prefetch(self, docs: Iterable[str]) -> None:
        """Find the terms of every document in ``docs`` at once (one store lookup, one
        pass over the texts for those not kept yet)."""
        if self._ids is None:
            self._ids = self._corpus.ids()  # a deferred corpus knows them without its texts
        wanted = [d for d in dict.fromkeys(docs) if d not in self._terms]
        for d in wanted:
            if d not in self._ids:
                self._terms[d] = None  # the corpus lacks it: no text to compare
        present = [d for d in wanted if d in self._ids]
        if not present:
            return
        keys = {d: self._key(d) for d in present}
        kept = get_many(self._store, list(keys.values())) if self._store is not None else {}
        missing = []
        for d in present:
            found = _kept_terms(kept.get(keys[d]))
            if found is None:
                missing.append(d)
            else:
                self._terms[d] = found
        if not missing:
            return
        split = {d: terms(text) for d, text in self._corpus.texts(missing).items()}
        self._terms.update(split)
        self._terms.update((d, None) for d in missing if d not in split)
        if self._store is not None:
            put_many(
                self._store,
                # the json module's text (no spaces), written by orjson: 17k lists here
                [(keys[d], dumps_compact(sorted(t)).decode("utf-8")) for d, t in split.items()],
            )

    def __call__(self, doc: str) -> frozenset[str] | None:
        """The content terms of ``doc``; None when the corpus lacks its text."""
        if doc not in self._terms:
            self.prefetch([doc])
        return self._terms[doc]


def _kept_terms(text: str | None) -> frozenset[str] | None:
    """A kept entry's terms; None when there is none or it is damaged (split again)."""
    if text is None:
        return None
    try:
        data = loads(text)
    except ValueError:
        return None
    if not isinstance(data, list):
        return None
    try:  # strings only: one C-level pass (31k entries of 50 terms at 10k queries)
        "".join(data)
    except TypeError:
        return None
    return frozenset(data)


def categorise(
    query: str,
    expected: Sequence[str],
    ranking: Sequence[tuple[str, float]],
    terms_of: Callable[[str], frozenset[str] | None],
    settings: FailureSettings,
    df_share: Callable[[str], float],
) -> dict[str, Any]:
    """The category of one failed query, with the numbers behind every rule.

    ``ranking`` is in the order the metrics scored it; ``terms_of`` gives a
    document's content terms, or None when the corpus lacks its text.
    """
    q = terms(query)
    relevant = set(expected)
    signals: dict[str, Any] = {"query_terms": len(q)}
    matched: list[str] = []
    doc_terms = {d: terms_of(d) for d in expected}
    shared = {d: len(q & t) for d, t in doc_terms.items() if t is not None}
    known = list(shared)
    best_id = max(known, key=lambda d: (shared[d], d)) if known else None
    best = shared[best_id] if best_id is not None else None
    if q and best is not None:
        overlap = best / len(q)
        signals.update(best_expected=best_id, best_expected_shared=best, best_overlap=overlap)
        if overlap <= settings.vocabulary_max_overlap:
            matched.append("vocabulary_mismatch")
    elif not known:
        signals["note"] = "no expected document's text is in the corpus"

    scores = [s for _, s in ranking[: settings.flat_depth]]
    if q and scores:
        top = scores[0]
        close = sum(1 for s in scores if s >= top - settings.flat_margin * abs(top))
        short = len(q) <= settings.short_query_terms
        flat = close >= settings.flat_count
        # generic is only looked up where it can decide (it reads the whole corpus once)
        generic = (
            all(df_share(t) >= settings.generic_df_share for t in q) if flat and not short else None
        )
        signals.update(close_scores=close, short=short, generic=generic)
        if flat and (short or generic):
            matched.append("specificity_gap")

    if q and best is not None:
        for rank, (doc, _) in enumerate(ranking, start=1):
            if doc in relevant:
                break
            found = terms_of(doc)
            if found is not None:
                n = len(q & found)
                if n > best:
                    signals.update(distractor=doc, distractor_rank=rank, distractor_shared=n)
                    matched.append("distractor_overlap")
                    break

    order = [c for c in CATEGORIES if c in matched]
    category = order[0] if order else "other"
    return {
        "category": category,
        "label": LABELS[category],
        "fix": FIXES[category],
        "heuristic": True,
        "matched": order,
        "signals": signals,
    }


def annotate_failures(
    records: list[dict[str, Any]],
    corpus: Corpus | None,
    settings: FailureSettings,
    store: EntryStore | None = None,
    labels: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Add ``failure`` to every failed (✗) record; return the counts for summary.json.

    Without a corpus there is no text to compare, so nothing is categorised
    and the counts say why. ``labels``: query id -> the value of its
    ``settings.label_field`` (the dataset's own label); a failed query whose
    label ``settings.label_categories`` maps takes that category, with the
    heuristics' verdict kept beside it, and the counts say how often the two
    agreed: the dataset's labels are a check on the heuristics.
    """
    failed = [r for r in records if r.get("status") == FAIL]
    if not settings.enabled:
        return {"enabled": False}
    if corpus is None:
        return {
            "enabled": True,
            "available": False,
            "reason": "no corpus is configured, so there is no document text to compare",
            "failed": len(failed),
        }
    n = len(failed)
    with step(f"failure categories ({n} failed quer{'y' if n == 1 else 'ies'})"):
        terms_of = DocTerms(corpus, store)
        # every document a rule may look at: the expected ones, and those ranked above them
        terms_of.prefetch(d for record in failed for d in _looked_at(record))
        df = DocFrequency(corpus, store)
        # every query's terms, not only the failed ones': a later run on the same corpus and
        # golden set (another retriever fails other queries) finds all its counts kept
        df.expect(t for record in records for t in terms(record.get("text", "")))
        counts = dict.fromkeys(CATEGORIES, 0)
        labelled = agree = 0
        for record in failed:
            ranking = list(zip(record.get("retrieved", []), record.get("scores", []), strict=False))
            text, expected = record.get("text", ""), record.get("expected", [])
            info = categorise(text, expected, ranking, terms_of, settings, df.share)
            label = (labels or {}).get(str(record.get("query_id")))
            given = (
                settings.label_categories.get(str(label))
                if label is not None and settings.label_field
                else None
            )
            if given is not None:
                labelled += 1
                agree += info["category"] == given
                info = {
                    **info,
                    "category": given,
                    "label": LABELS[given],
                    "fix": FIXES[given],
                    "heuristic": False,
                    "heuristic_category": info["category"],
                    "source": f"{settings.label_field}={label}",
                }
            record["failure"] = info
            counts[info["category"]] += 1
    out: dict[str, Any] = {
        "enabled": True,
        "available": True,
        # whether any category is the heuristics' (not all named by the dataset's labels)
        "heuristic": labelled < len(failed) or not failed,
        "failed": len(failed),
        "counts": counts,
        "fixes": {c: FIXES[c] for c in CATEGORIES},
    }
    if settings.label_field:
        # how many failed queries the dataset's labels named, and on how many of those the
        # heuristics had come to the same category on their own
        out["labels"] = {"field": settings.label_field, "labelled": labelled, "agree": agree}
    return out


def _looked_at(record: dict[str, Any]) -> list[str]:
    """The documents :func:`categorise` may need the terms of for a failed record."""
    expected = record.get("expected", [])
    relevant = set(expected)
    above: list[str] = []
    for doc in record.get("retrieved", []):
        if doc in relevant:
            break
        above.append(doc)
    return [*expected, *above]
