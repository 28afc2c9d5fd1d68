"""Load a golden set through its dataset plugin, keeping where each record lives.

The dataset plugins turn files into a :class:`~evalframe.core.types.GoldenSet` and
drop the line numbers on the way; curation needs them back (a duplicate is
reported as ``golden.jsonl:12``). For the two formats the curation tools write
(B.O.B JSONL and KnowCode JSON) the raw records are re-read with their line
numbers after the plugin has validated the file; any other registered format
still loads, and its findings name the query id instead.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from evalframe.core.errors import ConfigError, DataError, EvalframeError
from evalframe.core.io import read_json_array, read_jsonl, require_file
from evalframe.core.types import Corpus, GoldenSet
from evalframe.golden.findings import Finding
from evalframe.golden.queries import QueriesConfig, join_queries
from evalframe.plugin.blame import blamed, build
from evalframe.plugin.loaded import check_loaded
from evalframe.plugin.protocols import PluginContext
from evalframe.plugin.registry import CORPORA, DATASETS, configure

__all__ = [
    "LoadedSet",
    "infer_format",
    "load_corpus",
    "load_golden",
    "parse_params",
]


@dataclass
class LoadedSet:
    """A golden set plus what curation needs beside it."""

    golden: GoldenSet
    format: str
    path: Path
    loader: Any
    #: query id -> "file:line" (empty for formats whose records cannot be located)
    locations: dict[str, str] = field(default_factory=dict)
    #: query id -> the record as written in the file (or rebuilt from the model)
    records: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: warnings the plugin printed while loading, as findings (never lost)
    findings: list[Finding] = field(default_factory=list)
    #: "format jsonl (inferred from the .jsonl suffix)" when --format was omitted
    inferred: str | None = None

    def where(self, qid: str) -> str:
        return self.locations.get(qid, f"query {qid}")


def infer_format(path: Path) -> tuple[str, str]:
    """``(format, reason)`` from the path.

    A folder or ``*.jsonl`` is B.O.B JSONL, ``*.json`` KnowCode, and
    ``retrieval_dataset.yaml`` ADK's (the name its pipeline and ``evalframe mine``
    give the file).
    """
    if path.is_dir():
        return "jsonl", "a folder (of per-domain *.jsonl files)"
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return "jsonl", "the .jsonl suffix"
    if suffix == ".json":
        return "knowcode", "the .json suffix"
    if path.name.lower() in ("retrieval_dataset.yaml", "retrieval_dataset.yml"):
        return "adk", "the name ADK gives its retrieval dataset"
    raise ConfigError(
        f"cannot tell the golden-set format of {path.name!r} from its name",
        key="--format",
        expected="a .jsonl file, a folder of .jsonl files, a .json file, or ADK's "
        "retrieval_dataset.yaml",
        hint=f"give --format explicitly; installed formats: {', '.join(DATASETS.names())}",
    )


def parse_params(items: list[str] | None, flag: str) -> dict[str, Any]:
    """``["k=v", ...]`` from a repeated flag as a dict.

    A value is a string, which pydantic converts to the setting's type (``0.5``,
    ``true``); one written as a list or a mapping (``[strip_version]``,
    ``{a: 1}``) is read as YAML, as Hydra reads the same value on a run's command
    line. Only those: ``set_name=001`` stays the string ``001``.
    """
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(
                f"{flag} takes KEY=VALUE", key=flag, got=repr(item), hint=f"e.g. {flag} name=my-set"
            )
        out[key.strip()] = _structured(value, flag, key.strip())
    return out


def _structured(value: str, flag: str, key: str) -> Any:
    text = value.strip()
    if not text.startswith(("[", "{")):
        return value
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or "not valid YAML"
        raise ConfigError(
            f"{value!r} looks like a list or mapping but does not read as one ({problem})",
            key=f"{flag} {key}",
            expected="[a, b] or {k: v}",
            got=value,
            hint=f"e.g. {flag} {key}=[a,b]",
        ) from None


def as_options(
    exc: EvalframeError,
    group: str,
    path_option: str | None,
    param_option: str,
    settings: Iterable[str],
) -> None:
    """Say a plugin's error in the command's words: on ``golden validate`` a corpus's
    path is ``--corpus`` and its settings are ``--corpus-param KEY=VALUE``, not the
    config keys ``corpus.path`` and ``corpus.id_field`` a run's config would use.
    ``path_option`` None: the path is a positional argument (the error names the file).
    Only the plugin's own ``settings`` are rewritten: ``corpus.jsonl`` in a hint is a
    file name, and ``corpus.empty_docs=keep`` keeps its value."""
    import re

    names = "|".join(re.escape(s) for s in sorted(settings, key=len, reverse=True))

    def option(setting: str) -> str | None:
        return path_option if setting == "path" else f"{param_option} {setting}"

    key = exc.key or ""
    if key == group or key.startswith(f"{group}."):
        exc.key = option(key.removeprefix(group).lstrip(".") or "path")
    if exc.hint and names:
        exc.hint = re.sub(
            rf"\b{re.escape(group)}\.({names})\b(=\S+)?",
            lambda m: (
                f"{path_option or 'the'} FILE"
                if m[1] == "path"
                else f"{param_option} {m[1]}{m[2] or '=...'}"
            ),
            exc.hint,
        )


def _format_may_be_wrong(exc: DataError) -> bool:
    """Whether a load error may come of reading the file in the wrong format, so that
    its hint should say which format was used and how to name another: an error at no
    line, or at the file's first record (not JSON, required fields missing). One at a
    later line (a duplicate id, a bad label at line 7) follows records the format read
    as it should: the format is plainly right, and the error's own hint is the fix."""
    if any(said in exc.message for said in _NOT_THE_FORMAT):
        return False  # JSON no format could hold (too deep, a huge number, half a pair)
    if exc.line is None or exc.path is None:
        return True
    return not _text_before(Path(exc.path), exc.line)


def _in_the_set(exc: DataError, root: Path) -> bool:
    """Whether ``exc`` is of the golden set's own file (or of a file in its folder),
    not of another one loaded with it (the ``--queries`` file)."""
    if exc.path is None:
        return True
    where = Path(exc.path).resolve()
    root = root.resolve()
    return where == root or root in where.parents


#: Load errors that are the file's text, whatever its format.
_NOT_THE_FORMAT = (
    "nested too deeply to read",
    "holds a number evalframe cannot read",
    "half of a UTF-16 surrogate pair",
)


def _text_before(path: Path, line: int) -> bool:
    """Whether a line of ``path`` before ``line`` holds more than whitespace and the
    brackets that open a JSON array of records (``[``, ``{``): a record that was read.
    Read a bounded piece at a time: a file of one huge line is not read whole."""
    try:
        with open(path, "rb") as handle:
            at = 1
            while at < line:
                piece = handle.readline(1 << 16)
                if not piece:
                    return False
                if piece.strip(b" \t\r\n[{"):
                    return True
                at += piece.endswith(b"\n")
    except OSError:
        return False
    return False


def _settings(spec: Any) -> list[str]:
    """A plugin's setting names (none for a plugin without a config class)."""
    return list(spec.config.model_fields) if spec.config is not None else []


def load_corpus(path: str, fmt: str = "jsonl", params: Mapping[str, Any] | None = None) -> Corpus:
    """A corpus through the CORPORA registry (``--corpus``, ``--corpus-format`` and
    ``--corpus-param``)."""
    spec = CORPORA.get(fmt, key="--corpus-format")
    try:
        config = configure(spec, {"path": path, **(params or {})}, key="corpus")
        loader = build(spec, config, PluginContext(config_key="corpus"))
        with blamed(spec, "loading"):
            corpus: Corpus = check_loaded(loader.load(), spec, "--corpus")
    except EvalframeError as exc:
        as_options(exc, "corpus", "--corpus", "--corpus-param", _settings(spec))
        raise
    return corpus


def load_golden(
    path: str | Path,
    fmt: str | None = None,
    params: Mapping[str, Any] | None = None,
    *,
    source_root: str | Path | None = None,
    queries: QueriesConfig | None = None,
    source_rev: str | None = None,
) -> LoadedSet:
    """Load ``path`` with dataset plugin ``fmt`` (inferred from the path when None).

    ``queries`` joins a separate queries file by id (see
    :mod:`evalframe.golden.queries`). For KnowCode, ``source_root`` switches
    the drift guard on (drift becomes a warning finding, not a stop:
    ``validate`` reports it instead of refusing to look), against Git
    revision ``source_rev`` of it when given; without a source root the meta
    file is not read.
    """
    p = require_file(path, what="golden set")
    if not p.is_file() and not p.is_dir():
        # a pipe (mkfifo, <(...)): read to infer its format, then to load it, then for its
        # lines' places; the second read hung, or came back empty and lost every place
        raise DataError(
            "the golden set is a pipe or a device, not a file: the golden commands read it "
            "more than once",
            path=p,
            expected="a regular file (or a folder of per-domain files)",
            hint="save what it gives to a file first (... > gold.jsonl), and give that file",
        )
    inferred: str | None = None
    reason: str | None = None
    if fmt is None:
        fmt, reason = infer_format(p)
        inferred = f"format {fmt} (inferred from {reason}; use --format to choose)"
    spec = DATASETS.get(fmt, key="--format")
    # A loader whose main file is not called `path` (trec: `topics`, beside its
    # `qrels`) names it with a `path_setting` class attribute on its config.
    settings: dict[str, Any] = {getattr(spec.config, "path_setting", "path"): str(p)}
    if fmt == "knowcode":
        settings.update({"require_meta": False, "allow_drift": True})
        if source_root is not None:
            settings["source_root"] = str(source_root)
            if source_rev is not None:
                settings["source_rev"] = source_rev
        else:
            settings["meta_path"] = os.devnull  # not a file: the drift guard is skipped
    settings.update(params or {})
    try:
        config = configure(spec, settings, key="dataset")
    except ConfigError as exc:  # on the command line a setting is a --param, not a config key
        setting = (exc.key or "").removeprefix("dataset").lstrip(".")
        if setting.startswith("dataset."):  # --param dataset.text_field=...: one prefix too many
            exc.key = f"--param {setting}"
            exc.hint = (
                f"--param names the format's own settings, without 'dataset.': "
                f"--param {setting.removeprefix('dataset.')}=VALUE"
            )
        elif setting:
            exc.key = f"--param {setting}"
            if "unknown" not in exc.message:
                exc.hint = f"give it as --param {setting}=VALUE" + (
                    f"; {exc.hint}" if exc.hint else ""
                )
            elif "plugins show" not in (exc.hint or ""):
                exc.hint = f"`evalframe plugins show dataset {fmt}` lists what --param takes"
        raise
    loader = build(spec, config, PluginContext(config_key="dataset"))
    captured = io.StringIO()
    try:
        with contextlib.redirect_stderr(captured):
            with blamed(spec, "loading"):
                golden = loader.load()
            golden = check_loaded(golden, spec, "--format")
            if queries is not None:  # the texts live elsewhere (Galaxy): join them by id
                golden = join_queries(golden, queries)
    except ValidationError as exc:  # e.g. a plugin that lets a duplicate id through
        raise DataError(
            f"the {fmt} plugin built an invalid golden set: {exc.errors()[0]['msg']}", path=p
        ) from None
    except DataError as exc:
        as_options(exc, "dataset", None, "--param", _settings(spec))
        others = ", ".join(n for n in DATASETS.names() if n != fmt)
        if not _format_may_be_wrong(exc) or not _in_the_set(exc, p):
            # records before it were read in this format, or the error is another file's
            # (--queries): its own hint is the fix
            pass
        elif inferred is not None:  # the file may be fine, in another format than guessed
            exc.hint = (f"{exc.hint}; " if exc.hint else "") + (
                f"{fmt} was a guess from {reason}: a file in another format needs "
                f"--format NAME ({others})"
            )
        else:  # or it is in another format than the one named
            exc.hint = (f"{exc.hint}; " if exc.hint else "") + (
                f"it was read as --format {fmt}: is it in another format ({others})?"
            )
        raise
    if not isinstance(golden, GoldenSet):
        raise DataError(f"dataset plugin {fmt!r} did not return a GoldenSet", path=p)
    loaded = LoadedSet(golden=golden, format=fmt, path=p, loader=loader, inferred=inferred)
    drift = golden.provenance.get("drift") or []
    for item in drift:
        loaded.findings.append(
            Finding(
                "warning",
                "drift",
                f"source file {item} since the meta file's source_file_hashes were recorded; "
                "re-verify the records that cite it, then refresh the hash",
                location=str(golden.provenance.get("meta_path", p)),
            )
        )
    for line in captured.getvalue().splitlines():
        if not line.strip() or (drift and "despite source drift" in line):
            continue  # the drift itself is reported above, one finding per file
        text = line.strip().removeprefix("warning:").strip()
        loaded.findings.append(Finding("warning", "loader", text, location=str(p)))
    _locate(loaded)
    return loaded


def _locate(loaded: LoadedSet) -> None:
    """Fill ``locations`` and ``records`` from the files the plugin read."""
    golden = loaded.golden
    by_id = golden.by_id()
    if loaded.format == "jsonl":
        files = golden.provenance.get("files") or [str(loaded.path)]
        for name in files:
            for lineno, record in read_jsonl(name, what="golden set"):
                if isinstance(record, dict) and "id" in record:
                    qid = str(record["id"])
                    loaded.locations[qid] = f"{name}:{lineno}"
                    loaded.records[qid] = dict(record)
    elif loaded.format == "knowcode":
        # a folder of versions reads as its newest file, which the loader names
        source = golden.provenance.get("path") or loaded.path
        for lineno, record in read_json_array(source, what="KnowCode golden set"):
            if isinstance(record, dict) and "query_id" in record:
                qid = str(record["query_id"])
                loaded.locations[qid] = f"{source}:{lineno}"
                loaded.records[qid] = dict(record)
    for qid, query in by_id.items():
        record = loaded.records.get(qid)
        if record is None:
            loaded.records[qid] = {
                "id": qid,
                "text": query.text,
                "judgments": dict(query.judgments),
                **({"views": query.views} if query.views else {}),
                **query.metadata,
            }
        else:
            # fields the plugin derived (a folder's domain) belong in the record too
            for key, value in query.metadata.items():
                if key != "entity_roles":
                    record.setdefault(key, value)
