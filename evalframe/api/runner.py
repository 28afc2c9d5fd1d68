"""``evalframe.run``: one experiment from Python, composed and run as the command line runs it.

The config is composed by :func:`~evalframe.app.compose.compose_config`, from
the same ``config.yaml``, search path, resolvers, group checks and
``EVALFRAME_TRACKING`` as ``python -m evalframe``; it is validated by the same
``validate_experiment`` and run by the same ``run_experiment`` with the same
page reporter, so the run folder and its numbers are the command line's. What
differs is only what a process's exit does: a failed gate is
``Result.passed == False``, a user error raises the :class:`EvalframeError`
the command line prints, and the terminal report is printed only on request.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from evalframe.api.objects import (
    Supplied,
    check_retriever,
    corpus_from,
    golden_from,
    is_path,
    kind,
    registered,
)
from evalframe.api.result import Result
from evalframe.app.compose import compose_config, quote_value
from evalframe.core.errors import ConfigError
from evalframe.core.secrets import redact_override_value

__all__ = ["run"]

#: The config group each Python object stands in for.
SECTIONS = {"retriever": "retriever", "golden": "dataset", "corpus": "corpus"}


def _touches(override: str, section: str) -> bool:
    key = override.lstrip("+~").partition("=")[0]
    return key == section or key.startswith(f"{section}.")


def _check_overrides(overrides: Sequence[str], given: dict[str, Any]) -> None:
    """An object (or a file) given for a section, and an override of the same: refused."""
    for argument, value in given.items():
        if value is None:
            continue
        section = SECTIONS[argument]
        # a file is read by the configured loader, whose other settings still apply
        key = f"{section}.path" if argument != "retriever" and is_path(value) else section
        clash = next((o for o in overrides if _touches(o, key)), None)
        if clash is not None:
            raise ConfigError(
                f"{argument}= gives the {section}, and the override {clash!r} sets it too",
                key=key,
                hint=f"drop one of them (the settings of a Python {argument} are its own)",
            )


def _overrides(overrides: Any) -> list[str]:
    """The overrides as a list of strings, as the command line takes them.

    Anything else is refused, not turned into strings: a dict would be read by its
    keys alone, and a tuple ``("depth", 5)`` as the text ``('depth', 5)``.
    """
    if isinstance(overrides, str):
        raise ConfigError(
            "overrides must be a list of strings",
            key="overrides",
            got=repr(overrides),
            hint=f"write overrides=[{overrides!r}]",
        )
    if isinstance(overrides, Mapping):
        # the values are shown as an error may show them: a secret-named one redacted
        listed = [f"{k}={redact_override_value(str(k), str(v))}" for k, v in overrides.items()]
        raise ConfigError(
            "overrides must be a list of strings, not a dict",
            key="overrides",
            hint=f"write each as 'key=value': overrides={listed!r}",
        )
    if isinstance(overrides, bytes) or not isinstance(overrides, Iterable):
        raise ConfigError(
            "overrides must be a list of strings",
            key="overrides",
            got=kind(overrides),
            hint="write overrides=['depth=5'], or leave it out",
        )
    wanted = list(overrides)
    for i, override in enumerate(wanted):
        if not isinstance(override, str):
            raise ConfigError(
                f"overrides must be a list of strings; overrides[{i}] is {kind(override)}",
                key="overrides",
                hint="write each as one string 'key=value', as on the command line: "
                "overrides=['depth=5']",
            )
    return wanted


def _check_experiment(experiment: Any) -> None:
    """One experiment's name: Hydra would read a list as several experiments merged."""
    if not isinstance(experiment, str):
        raise ConfigError(
            f"experiment= must be one experiment's name, not {kind(experiment)}",
            key="experiment",
            expected="a str such as 'quickstart'",
            hint="run several experiments one at a time: "
            "[evalframe.run(e) for e in ('quickstart', 'bob')]",
        )
    words = experiment.split()
    if not words:
        raise ConfigError(
            "experiment= is empty",
            key="experiment",
            hint="name an experiment (experiment='quickstart'), or leave it out",
        )
    settings = [w for w in words[1:] if "=" in w]
    if settings:
        raise ConfigError(
            f"experiment= holds settings as well as the name: {experiment!r}",
            key="experiment",
            hint=f"put them in overrides: evalframe.run({words[0]!r}, overrides={settings!r})",
        )
    if len(words) > 1:
        raise ConfigError(
            f"experiment= must be one name, without spaces: {experiment!r}",
            key="experiment",
            hint="give the name of one file in the experiment folder, e.g. 'quickstart'",
        )


def _check_name(name: Any) -> None:
    """The run's name is its tag and a folder under ``outputs/``: one word, and only a name.

    A separator or ``..`` would put the folder elsewhere, and ``${...}`` would be
    resolved by the config (an environment variable's value as the run's name).
    """
    if not isinstance(name, str):
        raise ConfigError(
            f"name= must be a str, not {kind(name)}",
            key="name",
            hint="name the run with one word, e.g. name='bm25-tuned'",
        )
    separators = ("/", os.sep, os.altsep or "/")
    problems = [
        (not name.strip(), "is empty"),
        (any(ch.isspace() for ch in name), "has a space"),
        (any(sep in name for sep in separators), "has a path separator"),
        (".." in name, "has '..'"),
        ("${" in name, "has '${'"),
    ]
    problem = next((text for found, text in problems if found), None)
    if problem is not None:
        raise ConfigError(
            f"the run's name {problem}: it names the run's folder under outputs/ and the run "
            "tag, so it must be one word",
            key="name",
            got=repr(name),
            hint="name the run with one word, e.g. name='bm25-tuned'; choose the folder "
            "with output_dir=",
        )


def run(
    experiment: str | None = None,
    overrides: Sequence[str] = (),
    *,
    retriever: Any = None,
    golden: Any = None,
    corpus: Any = None,
    name: str | None = None,
    output_dir: str | os.PathLike[str] | None = None,
    progress: bool = True,
    print_report: bool = False,
) -> Result:
    """Run one experiment, as ``python -m evalframe +experiment=EXPERIMENT OVERRIDES...`` would.

    ``overrides`` are written as on the command line (``retriever.k1=1.2``,
    ``metrics=bob``, ``tracking=none``). Python objects take the place of a
    config section:

    - ``retriever``: a function ``query -> ranked ids`` (or ``(id, score)``
      pairs, ``{id: score}``, a Ranking), ``(query, k) -> ...``, or an object
      with such a ``retrieve`` method. Its answers are cached like a plugin's,
      keyed by its qualified name, bytecode and the immutable plain values it
      reads (docs/python-api.md#the-cache).
    - ``golden``: a :class:`~evalframe.GoldenSet`, a list of dicts
      (``id``, ``text``, ``relevant``: ids or ``{id: grade}``; other keys are
      slices), or a path to a golden-set file (``dataset.path``).
    - ``corpus``: a :class:`~evalframe.Corpus`, a list of documents or
      ``{"id", "text"}`` dicts, ``{id: text}``, or a path (``corpus.path``).

    Without an experiment and a corpus, the run searches no corpus
    (``corpus=none``). ``name`` names the run (``experiment`` in its config,
    its folder under ``outputs/``); ``output_dir`` is its folder (Hydra's
    ``hydra.run.dir``). ``progress`` draws the slow steps' progress (loading,
    retrieving, scoring, writing) on a terminal, as the command line does;
    ``print_report`` prints the command line's report.

    Returns the :class:`Result`; raises the located
    :class:`~evalframe.core.errors.EvalframeError` the command line would print.
    """
    wanted = _overrides(overrides)
    if name is not None:
        _check_name(name)
    if experiment is not None:
        _check_experiment(experiment)
        if any(_touches(o, "experiment") for o in wanted):
            raise ConfigError(
                "the experiment is given twice: as experiment= and in overrides",
                key="experiment",
                hint="give it once, as experiment='NAME'",
            )
        wanted.insert(0, f"+experiment={experiment}")
    if isinstance(retriever, (str, os.PathLike)):
        raise ConfigError(
            f"retriever= takes a Python function or object, not {retriever!r}",
            key="retriever",
            hint=f"pick a configured retriever with overrides=['retriever={retriever}'] "
            "(bm25, dense, run_file, python ...)",
        )
    if inspect.isclass(retriever):
        # its retrieve would be called unbound: the query text as self, k as the query
        raise ConfigError(
            f"retriever= got the class {retriever.__name__}, not an instance of it",
            key="retriever",
            hint=f"pass an instance: retriever={retriever.__name__}()",
        )
    if retriever is not None:
        check_retriever(retriever)  # before anything runs, not on the first query
    _check_overrides(wanted, {"retriever": retriever, "golden": golden, "corpus": corpus})
    for value, key in ((golden, "dataset.path"), (corpus, "corpus.path")):
        if value is not None and is_path(value):
            wanted.append(f"{key}={quote_value(Path(value).expanduser().resolve())}")
    if (
        corpus is None
        and experiment is None
        and not any(_touches(o, "corpus") or _touches(o, "experiment") for o in wanted)
    ):
        wanted.append("corpus=none")  # the default's path is ??? : a run of objects has none
    supplied = Supplied(
        retriever=retriever,
        golden=None if golden is None or is_path(golden) else golden_from(golden),
        corpus=None if corpus is None or is_path(corpus) else corpus_from(corpus),
    )
    composed = compose_config(wanted, run_dir=output_dir, name=name, replace=supplied.sections())

    from evalframe.pipeline import run_experiment, validate_experiment
    from evalframe.pipeline.run import Reporter
    from evalframe.report.page import RunPage
    from evalframe.report.terminal import TerminalReport

    reporters: list[Reporter] = [RunPage()]
    if print_report:
        reporters.append(TerminalReport())
    with registered(supplied):
        experiment_ = validate_experiment(composed.raw)
        outcome = run_experiment(
            experiment_,
            reporters=reporters,
            progress=progress,
            metadata={"choices": composed.choices},  # what the command line's trackers get
        )
    return Result(experiment_.output_dir, pipeline=outcome)
