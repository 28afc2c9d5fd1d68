"""What a dataset or corpus plugin's ``load()`` returned, checked wherever it is called.

The run (``pipeline.run``), ``evalframe golden validate``/``review`` and
``benefit`` (``golden.load``) and ``evalframe mine`` (``mine.engine``) all load
through plugins; each checks the result the same way here, so a loader's mistake
is the same paragraph (exit 2) whichever command met it:

* the kind's type: a ``GoldenSet`` from a dataset plugin, a ``Corpus`` from a
  corpus plugin (a list of queries crashed deep inside evalframe, blamed on it);
* unique ids: ``Corpus.build`` does not check, and ``GoldenSet.model_construct``
  skips the validator that would, so a loader that read its file twice changed
  RR from 0.667 to 0.763 without a word. One set against the length (a few ms at
  100k documents); the repeated id is looked for only when they differ. A
  deferred corpus (a rescore's, from a manifest) is not read.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from evalframe.core.errors import DataError, PluginError
from evalframe.core.types import Corpus, DeferredDocuments, Document, GoldenQuery, GoldenSet

if TYPE_CHECKING:
    from evalframe.plugin.registry import PluginSpec

__all__ = ["check_loaded"]

_WANTED: dict[str, type] = {"dataset": GoldenSet, "corpus": Corpus}


def check_loaded(loaded: Any, spec: PluginSpec, key: str | None) -> Any:
    """``loaded`` when it is what a ``spec.kind`` plugin's ``load()`` must return; else
    the error naming the plugin (``key``: the config key or option it was chosen by)."""
    wanted = _WANTED.get(spec.kind)
    if wanted is not None and not isinstance(loaded, wanted):
        raise PluginError(
            f"{spec.kind} plugin {spec.name!r} ({spec.module}): load() returned "
            f"{type(loaded).__name__}, not a {wanted.__name__}",
            expected=f"a {wanted.__name__}",
            hint=f"build it with {wanted.__name__}.build(name, ...) at the end of load()",
        )
    _check_unique_ids(loaded, spec, key)
    return loaded


def _check_unique_ids(loaded: Any, spec: PluginSpec, key: str | None) -> None:
    items: Sequence[Document | GoldenQuery]
    if isinstance(loaded, Corpus):
        items, what = loaded.documents, "document id"
    elif isinstance(loaded, GoldenSet):
        items, what = loaded.queries, "query id"
    else:
        return
    if isinstance(items, DeferredDocuments) or len({x.id for x in items}) == len(items):
        return
    counts = Counter(x.id for x in items)
    repeated = [(i, n) for i, n in counts.items() if n > 1]
    first, times = repeated[0]
    others = len(repeated) - 1
    more = f" ({others} other id{' repeats' if others == 1 else 's repeat'} too)" if others else ""
    check = (
        "GoldenSet.build refuses a repeated query id; model_construct skips that check"
        if what == "query id"
        else "Corpus.build does not check; refuse a repeated id where it is read"
    )
    raise DataError(
        f"{spec.kind} plugin {spec.name!r} ({spec.module}) returned {what} {first!r} "
        f"{'twice' if times == 2 else f'{times} times'}{more}",
        key=key,
        expected=f"each {what} once",
        hint=f"fix the loader in {spec.module} ({check})",
    )
