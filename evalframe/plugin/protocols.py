"""What a plugin must look like, written as Protocols.

A plugin is a small class (or, for metrics, a function) that satisfies one of
these. It is constructed as ``Plugin(config, context)`` where ``config`` is its
own frozen pydantic model and ``context`` gives it what the pipeline already
loaded (the corpus, a cache directory).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, field_validator

from evalframe.core.types import Corpus, GoldenSet, Ranking, Run

if TYPE_CHECKING:
    from evalframe.assess.results import GateResult, GateView

__all__ = [
    "NOT_IN_CACHE_KEY",
    "Answer",
    "Attempt",
    "BatchRetriever",
    "ContextDoc",
    "CorpusLoader",
    "DatasetLoader",
    "ExportInput",
    "Exporter",
    "Gate",
    "Judgement",
    "MiningTask",
    "PluginConfig",
    "PluginContext",
    "Query",
    "Retriever",
    "Solver",
    "Tracker",
    "Validator",
]


class PluginConfig(BaseModel):
    """Base for every plugin's config: frozen, and unknown keys are errors.

    ``extra="forbid"`` is what turns a typo such as ``retriever.k11`` into an
    error that names the key instead of a silently ignored setting.
    """

    # allow_inf_nan=False: `value=inf` or `timeout_seconds=nan` is a typo to name, not a
    # threshold no mean can meet or a timeout that overflows the clock
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    @field_validator("path", check_fields=False)
    @classmethod
    def _a_path(cls, value: Any) -> Any:
        """A setting named ``path`` names a file or folder: empty, ``Path("")`` would be
        the current folder (a golden set read from every ``*.jsonl`` there)."""
        if isinstance(value, str) and not value.strip():
            raise ValueError(
                "the path is empty, which would read the current folder; give the file or folder"
            )
        return value

    def __repr_args__(self) -> Any:
        """The settings as ``repr`` shows them, credentials redacted: a config holds the
        resolved values (``${oc.env:KEY}`` already replaced), and a notebook shows a
        result's experiment by its repr."""
        from evalframe.core.secrets import redact

        for name, value in super().__repr_args__():
            safe = redact(value, _name=name) if name else value
            yield name, safe if isinstance(value, str | dict | list | tuple) else value


#: Marks a setting that changes how a retriever is called (timeouts, retries,
#: concurrency, a quota of queries per run) but never what it answers:
#: ``Field(4, json_schema_extra=NOT_IN_CACHE_KEY)``. Such settings stay out of
#: the retrieval cache key, so raising ``max_queries`` does not re-pay every query.
NOT_IN_CACHE_KEY: dict[str, Any] = {"evalframe_cache_key": False}


def in_cache_key(model: type[BaseModel], name: str) -> bool:
    """Whether setting ``name`` of ``model`` can change a retriever's answers."""
    extra = model.model_fields[name].json_schema_extra
    return not (isinstance(extra, dict) and extra.get("evalframe_cache_key") is False)


class Query(BaseModel):
    """What a retriever sees of a golden query: never its judgments."""

    model_config = ConfigDict(frozen=True)

    id: str
    text: str
    metadata: dict[str, Any] = {}


@dataclass(frozen=True)
class PluginContext:
    """What the pipeline hands a plugin at construction time."""

    corpus: Corpus | None = None
    cache_dir: Path = field(default_factory=lambda: Path(".evalframe-cache"))
    config_key: str = ""
    #: The dataset's id normaliser (``dataset.normalise``, e.g. Galaxy's dropped tool
    #: versions), which the pipeline applies to every ranking after retrieval; a
    #: retriever that checks ids against a catalogue compares them the same way.
    normalise_id: Callable[[str], str] | None = None


@runtime_checkable
class Retriever(Protocol):
    """Returns a ranking for one query: at most ``k`` documents, best first.

    Return ``None`` when the system has no answer at all for the query (it is
    then *missing* and ``metrics.policies.missing_query`` applies); return an
    empty ranking when it answered with nothing.

    How the pipeline drives it (one of the two, both optional):

    * ``retrieve_batch(queries, k) -> list[Ranking | None]``, one answer per
      query in the order given (see :class:`BatchRetriever`): the pipeline
      then hands over the queries in chunks, for an index that answers many
      queries faster than one at a time (bm25s, a matrix product, a batch
      API). Its answers must equal ``retrieve``'s, query by query.
    * ``max_concurrency: int`` (an attribute): ``retrieve`` may be called from
      this many threads at once, for a service that answers slowly but in
      parallel. Absent, the pipeline asks one query at a time.

    Optional: ``cache_identity() -> JSON-able value``, for what changes the
    rankings but is not in the plugin's config or the corpus: the contents of
    a model folder or a catalogue file named by path. It joins the retrieval
    cache key, so changing those files is never answered from a stale cache.

    Optional: ``cache_inputs(query) -> JSON-able value or None``, for what of
    the query besides its text changes the ranking (the metadata fields a
    prompt template reads); it joins that query's cache key.

    Optional: ``notes() -> list[str]``, called once every query is answered: what
    the retriever saw that the run must say (ids a model gave that are not in
    its catalogue, dropped); each is printed as a warning naming the retriever.

    Optional: a class attribute ``reads_query_text = False`` for a retriever
    that answers by query id alone (a run file), so that queries without text
    are not warned about.
    """

    def retrieve(self, query: Query, k: int) -> Ranking | None: ...


@runtime_checkable
class BatchRetriever(Retriever, Protocol):
    """A retriever that also answers many queries at once (see :class:`Retriever`)."""

    def retrieve_batch(self, queries: Sequence[Query], k: int) -> Sequence[Ranking | None]: ...


@runtime_checkable
class DatasetLoader(Protocol):
    """Reads a golden set from wherever it lives.

    Optional: ``id_normaliser() -> Callable[[str], str] | None``, how this
    golden set's document ids were normalised (Galaxy's ``strip_version``).
    The pipeline applies the same function to every retrieved id before
    scoring, so one setting normalises gold and predictions alike.
    """

    def load(self) -> GoldenSet: ...


@runtime_checkable
class CorpusLoader(Protocol):
    """Reads the documents a retriever searches.

    Optional: ``sources() -> list[Path]``, every file the loader reads for the
    current config. With it, a run whose rankings all come from the cache
    does not read the corpus at all: the pipeline keeps the corpus's hash and
    ids (a *manifest*) under the sources' sizes and modification times, and
    loads the documents only if something asks for them.

    Optional: ``texts(ids) -> dict[str, str]``, the texts ``load()`` gives the
    documents among ``ids`` (ids the corpus lacks left out). The run page and
    the failure categories need a few thousand documents' texts; with it
    they read only those (each checked against the manifest's hash) instead
    of loading the whole corpus. :class:`evalframe.plugin.testing.CorpusLoaderContract`
    checks both.
    """

    def load(self) -> Corpus: ...


@runtime_checkable
class Gate(Protocol):
    """Turns scored results into a pass/fail verdict with a reason."""

    def evaluate(self, view: GateView) -> GateResult: ...


class Tracker(Protocol):
    """Receives lifecycle hooks. Every hook is optional; see :mod:`evalframe.plugin.hooks`."""


@dataclass(frozen=True)
class ExportInput:
    """A finished run as an exporter sees it.

    Only core types and plain mappings, so that an exporter depends on nothing
    above the plugin layer. ``per_query`` and ``means`` are keyed by canonical
    metric strings (``Hit@5``) and hold exactly what the run's files hold; a
    value a policy left out of a metric is NaN in ``per_query`` (the mean
    ignores it). ``run`` holds each ranking in the order the retriever
    returned it.
    """

    experiment: str
    golden: GoldenSet
    run: Run
    depth: int
    per_query: Mapping[str, Mapping[str, float]]
    means: Mapping[str, float]


@runtime_checkable
class Exporter(Protocol):
    """Writes a finished run in another tool's format, as extra files of the run folder.

    ``export`` returns ``{file name: content}``; the pipeline writes each file
    atomically into the run folder (a plain name, no folders) and lists it
    with the run's outputs, so trackers log it too. An exporter never writes
    files itself: that is how a failed run leaves nothing half-written.

    Optional: ``required_metrics() -> list[str]``, the canonical metrics the
    export reads from ``per_query``/``means``. They are checked against
    ``metrics.measures`` when the config is validated, before anything slow.
    """

    def export(self, run: ExportInput) -> Mapping[str, str | bytes]: ...


# -- mining: solvers and validators (evalframe mine) ----------------------------


class MiningTask(BaseModel):
    """One task of a mined benchmark, as the validator sees it.

    ``metadata`` holds only the fields the benchmark config passes to the
    solver; ``ground_truth`` holds what the benchmark's extractors took from the
    record (an expected answer, a test file) and is never shown to the solver.
    """

    model_config = ConfigDict(frozen=True)

    id: str
    query: str
    metadata: dict[str, Any] = {}
    ground_truth: dict[str, Any] = {}


class ContextDoc(BaseModel):
    """One document put into a solver's context."""

    model_config = ConfigDict(frozen=True)

    id: str
    text: str


class Attempt(BaseModel):
    """What a solver is asked in one trial: the task without its ground truth, and a context.

    ``seed`` is the trial's own random seed: a solver that samples (an LLM at
    temperature > 0, the simulated solver) may use it; two trials never share
    one, and the same trial of the same run always has the same one.
    """

    model_config = ConfigDict(frozen=True)

    task_id: str
    query: str
    metadata: dict[str, Any] = {}
    context: tuple[ContextDoc, ...] = ()
    trial: int
    seed: int


class Answer(BaseModel):
    """A solver's answer: the text the validator judges, and anything to keep beside it."""

    model_config = ConfigDict(frozen=True)

    text: str
    metadata: dict[str, Any] = {}


class Judgement(BaseModel):
    """A validator's verdict on one answer."""

    model_config = ConfigDict(frozen=True)

    passed: bool
    detail: str = ""


@runtime_checkable
class Solver(Protocol):
    """Attempts a task with only the context it is given (ADK's blind solver).

    Optional, as for retrievers: ``cache_identity() -> JSON-able value`` for
    what changes the answers but is not in the config (a model file), and a
    class attribute ``cacheable = False`` when caching is pointless.
    """

    def solve(self, attempt: Attempt) -> Answer: ...


@runtime_checkable
class Validator(Protocol):
    """Decides whether an answer solves the task, from the task's ground truth.

    Same optional ``cache_identity()`` and ``cacheable`` as a solver, and
    ``cache_inputs(task) -> JSON-able value`` for what decides a verdict
    besides the task and the answer (the content of a test file the ground
    truth names by path), so editing it is never answered from the cache.
    """

    def validate(self, task: MiningTask, answer: Answer) -> Judgement: ...
