"""What a page reads of a run: everything comes from the run folder (through
:class:`~evalframe.assess.runfolder.RunFolder`), so a page written at the end
of a run and one written later by ``evalframe report RUN`` are the same page.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalframe.assess.runfolder import RunFolder, document_hash, warn_if_records_lost
from evalframe.core.errors import EvalframeError
from evalframe.core.gcpause import settle
from evalframe.core.messages import shown
from evalframe.core.types import Corpus
from evalframe.metrics import Policies
from evalframe.report.plotdata import LatencyData, curve_families, latency_data

__all__ = ["BaselineView", "DocTexts", "Rule", "RunView", "corpus_texts", "stored_corpus_texts"]


@dataclass(frozen=True)
class Rule:
    """The run's ``report:`` status rule (satisfies ``StatusRule``)."""

    criterion: str = "RR"
    pass_at: float = 1.0
    fail_below: float = 0.5


@dataclass
class RunView:
    """One finished run as its folder holds it."""

    path: Path
    name: str
    summary: dict[str, Any]
    metrics: dict[str, Any]
    gates: dict[str, Any]
    config: dict[str, Any]
    records: list[dict[str, Any]]
    comparison: dict[str, Any] | None
    manifest: dict[str, Any] | None
    overrides: tuple[str, ...] = ()
    calibration: dict[str, Any] | None = None  # calibration.json, when the analysis ran
    benefit: dict[str, Any] | None = None  # benefit.json, when the A/B analysis ran

    @classmethod
    def load(cls, path: Path, name: str | None = None) -> RunView:
        folder = RunFolder(Path(path))
        # when, from which commit and how fast live in timings.json (they differ on every
        # run of the same inputs, so they stay out of the files DVC tracks); the page
        # shows them beside the rest, as a folder from before timings.json held them
        timings = folder.timings()
        summary = folder.summary()
        summary.update({k: timings[k] for k in ("created", "git", "retrieved") if k in timings})
        per_query_ms = timings.get("per_query_ms")
        latency: dict[str, Any] = per_query_ms if isinstance(per_query_ms, dict) else {}
        records = [record for _, record in folder.per_query()]
        warn_if_records_lost(
            folder.file(folder.PER_QUERY),
            len(records),
            summary,
            "the page shows the records it has",
        )
        for record in records:
            if "latency_ms" not in record:
                record["latency_ms"] = latency.get(str(record.get("query_id")))
        settle()  # the records (a dict and two lists a query) are read for the whole page
        return cls(
            path=folder.path,
            name=name or folder.path.name,
            summary=summary,
            metrics=folder.metrics(),
            gates=folder.gates(),
            config=folder.config(),
            records=records,
            comparison=folder.comparison(),
            manifest=folder.corpus_manifest(),
            overrides=folder.overrides(),
            calibration=folder.calibration(),
            benefit=folder.benefit(),
        )

    @property
    def report_config(self) -> dict[str, Any]:
        section = self.config.get("report")
        return section if isinstance(section, dict) else {}

    @property
    def rule(self) -> Rule:
        cfg = self.report_config
        return Rule(
            criterion=_canonical(str(cfg.get("criterion", "RR"))),
            pass_at=float(cfg.get("pass_at", 1.0)),
            fail_below=float(cfg.get("fail_below", 0.5)),
        )

    @property
    def detail_k(self) -> int:
        """How many of each ranking the drill-downs list: ``report.detail_k``, never more
        than the run retrieved (a depth-5 run's page said "top-10")."""
        return min(int(self.report_config.get("detail_k") or 10), self.depth)

    @property
    def policies(self) -> Policies:
        """The metric policies the run used (the defaults for a folder that lacks them)."""
        try:
            return Policies(**(self.summary.get("policies") or {}))
        except (TypeError, ValueError):
            return Policies()

    @property
    def depth(self) -> int:
        stated = self.summary.get("depth")
        if isinstance(stated, int) and stated > 0:
            return stated
        return max((len(r.get("retrieved") or ()) for r in self.records), default=1) or 1

    @property
    def metric_names(self) -> list[str]:
        names = self.summary.get("metrics")
        if isinstance(names, list) and names:
            return [str(n) for n in names]
        return list((self.records[0].get("metrics") or {}) if self.records else {})

    @property
    def leading_metrics(self) -> list[str]:
        """The run's measures with its headline set first (``metrics.headline``: the ones
        the team chose to watch, KnowCode's recall@10 and file coverage@5), as the page's
        bars and query table pick the first few: by the first measures alone, KnowCode's
        page showed precision@1, precision@5 and MRR, none of the metrics its gates check
        per task type."""
        names = self.metric_names
        headline = self.summary.get("headline")
        first = [str(h) for h in headline if str(h) in names] if isinstance(headline, list) else []
        return [*first, *(n for n in names if n not in first)]

    def label(self, name: str) -> str:
        """The metric's display name (``metrics.labels``: ADK's ``Recall@1`` for
        ``Hit@1``), else its canonical one. Files and gates keep the canonical."""
        labels = self.summary.get("labels") or {}
        label = labels.get(name) if isinstance(labels, dict) else None
        return label if isinstance(label, str) and label else name

    def labelled(self, name: str) -> str:
        """``Recall@1 (Hit@1)`` where a label renames it; the canonical name otherwise."""
        label = self.label(name)
        return name if label == name else f"{label} ({name})"

    @property
    def notes(self) -> list[str]:
        """What the terminal said of the run besides its numbers (:func:`run_notes`)."""
        return run_notes(self.summary)

    @property
    def measured_latency(self) -> LatencyData | None:
        """The per-query latencies, when they measure retrieval: not a run file's (its
        rankings are looked up), nor one value for every query (a batch retriever's
        time, shared out evenly)."""
        if self.summary.get("retriever") == "run_file":
            return None
        lat = latency_data(self.records)
        if lat is None or min(lat.values) == max(lat.values):
            return None
        return lat

    @property
    def curve_families(self) -> dict[str, str]:
        """The metric@k curves of this run's page: its own measures' families, headline
        first (``plotdata.curve_families``)."""
        headline = self.summary.get("headline")
        first = [str(h) for h in headline] if isinstance(headline, list) else []
        return curve_families([*first, *self.metric_names])

    @property
    def slice_fields(self) -> list[str]:
        return [str(f) for f in (self.summary.get("slices") or {}).get("fields") or []]

    @property
    def experiment(self) -> str:
        return str(self.summary.get("experiment") or self.name)


def run_notes(summary: dict[str, Any]) -> list[str]:
    """What the terminal said of a run besides its numbers, from its ``summary.json``:
    the missing and extra queries, then every warning (``retrieval_warnings``, then
    ``warnings``), each once, in the order the run said them."""
    counts = summary.get("counts") or {}
    missing = counts.get("missing_queries") or []
    policy = (summary.get("policies") or {}).get("missing_query", "?")
    out = []
    if isinstance(missing, list) and missing:
        out.append(missing_note([str(q) for q in missing], str(policy)))
    extra = counts.get("extra_queries_in_run")
    ids = counts.get("extra_queries")
    if isinstance(extra, int) and extra > 0:
        out.append(extra_note([str(q) for q in ids] if isinstance(ids, list) else [], extra))
    for key in ("retrieval_warnings", "warnings"):
        said = summary.get(key)
        for w in said if isinstance(said, list) else ():
            if str(w) not in out:
                out.append(str(w))
    return out


def missing_note(ids: list[str], policy: str) -> str:
    """The terminal's and the page's words for golden queries the run has no ranking
    for, with the first five ids."""
    has = "query has" if len(ids) == 1 else "queries have"
    return (
        f"{len(ids)} golden {has} no ranking in the run (policy missing_query={policy}): "
        + shown(ids, limit=5)
    )


def extra_note(ids: list[str], count: int | None = None) -> str:
    """... and for the run's queries that no golden query asked (``count`` when a folder
    from before the ids were kept gives only their number)."""
    n = len(ids) if count is None else count
    text = f"the run has {n} {'query' if n == 1 else 'queries'} not in the golden set (ignored)"
    return f"{text}: {shown(ids, limit=5)}" if ids else text


@dataclass
class BaselineView:
    """The baseline side of a drift view: its per-query records, its corpus manifest
    (None when it kept none) and the comparison of this run against it."""

    name: str
    path: Path
    records: list[dict[str, Any]]
    manifest: dict[str, Any] | None
    comparison: dict[str, Any]


@dataclass
class DocTexts:
    """Document texts for the per-query drill-down, and what the page should say
    about the ones it lacks (no corpus, changed since the run, too many).
    ``left_out``: the page would hold too much text, so none was read."""

    texts: dict[str, str] = field(default_factory=dict)
    note: str | None = None
    left_out: bool = False


def _needed(view: RunView) -> set[str]:
    """The documents whose text the drill-down shows: each query's top ``detail_k``
    (the expected ones are listed by id)."""
    k = view.detail_k
    ids: set[str] = set()
    for record in view.records:
        ids.update(str(d) for d in (record.get("retrieved") or [])[:k])
    return ids


def corpus_texts(view: RunView, documents: Iterable[tuple[str, str]]) -> DocTexts:
    """The texts of the documents the page lists, checked against the run's manifest:
    a document whose text changed since the run is left out (its old text is gone)."""
    needed = _needed(view)
    hashes = (view.manifest or {}).get("documents") or {}
    texts: dict[str, str] = {}
    changed = 0
    for doc_id, text in documents:
        if doc_id not in needed:
            continue
        if hashes and doc_id in hashes and hashes[doc_id] != document_hash(text):
            changed += 1
            continue
        texts[doc_id] = text
    note = (
        f"{changed} listed document(s) changed since this run; their text is not shown."
        if changed
        else None
    )
    return DocTexts(texts, note)


def stored_corpus_texts(view: RunView, corpus: Corpus | None = None) -> DocTexts:
    """Texts from the corpus in memory (at the end of a run), else from loading the
    run's configured corpus again (``evalframe report RUN``); a corpus that cannot
    be loaded now is a note on the page, not an error."""
    if corpus is not None:
        # the corpus the run scored, whose manifest the folder holds: its texts are the
        # manifest's (a deferred one checks each text against it as it reads), so they
        # are not hashed a second time (80k texts at 10k queries: 0.15 s)
        return DocTexts(corpus.texts(_needed(view)))
    node = view.config.get("corpus")
    if not isinstance(node, dict) or node.get("name") in (None, "none"):
        return DocTexts(note="The run searched no corpus, so no document text is shown.")
    from evalframe.plugin.protocols import CorpusLoader, PluginContext
    from evalframe.plugin.registry import CORPORA, configure

    params = {k: v for k, v in node.items() if k != "name"}
    try:
        spec = CORPORA.get(str(node["name"]), key="corpus.name")
        loader = spec.obj(
            configure(spec, params, "corpus"),
            PluginContext(
                cache_dir=Path(view.config.get("output", {}).get("cache_dir", ".")),
                config_key="corpus",
            ),
        )
        if not isinstance(loader, CorpusLoader):
            raise TypeError("not a corpus loader")
        read = getattr(loader, "texts", None)  # the listed documents alone, when it can
        found = read(_needed(view)) if callable(read) else loader.load().texts(_needed(view))
    except (EvalframeError, OSError, TypeError, ValueError) as exc:
        reason = exc.render().splitlines()[0] if isinstance(exc, EvalframeError) else str(exc)
        return DocTexts(note=f"The run's corpus could not be loaded again ({reason}).")
    return corpus_texts(view, found.items())


def _canonical(name: str) -> str:
    """A metric as the run's files key it (``MRR`` in a config is ``RR``); as given when
    it reads as no metric."""
    from evalframe.core.errors import EvalframeError
    from evalframe.metrics import parse_metric

    try:
        return str(parse_metric(name))
    except EvalframeError:
        return name
