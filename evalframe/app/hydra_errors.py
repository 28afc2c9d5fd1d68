"""Hydra's and OmegaConf's errors in evalframe's form: located, one paragraph, no traceback.

Hydra reports a broken YAML file or an override of a key that does not exist
as its own text on stderr; OmegaConf raises while resolving. These turn the
cases we understand into :class:`ConfigError` / :class:`DataError` naming the
file and line or the config key, for every command that composes a config.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from evalframe.app.launchers import missing_option_error
from evalframe.core.errors import ConfigError, DataError, EvalframeError
from evalframe.core.secrets import redact_override_value

__all__ = [
    "composition_error",
    "hydra_error",
    "hydra_message",
    "omegaconf_error",
    "plain_config",
    "require_text",
]


_NOT_IN_STRUCT = re.compile(
    r"Could not override '(?P<key>[^']+)'\.\s*To append to your config use "
    # the override may hold spaces ({hard: specificity_gap}): up to the line Hydra ends it with
    r"\+(?P<override>[^\n]+?)\s*Key '(?P<inner>[^']+)' is not in struct"
)

#: Config sections whose keys a plugin's config model owns (not Hydra's struct).
_PLUGIN_SECTIONS = ("retriever", "dataset", "corpus")

#: A config group that is not in the defaults list, chosen without the ``+``
#: (``experiment=quickstart``).
_NOT_IN_DEFAULTS = re.compile(
    r"Could not override '(?P<key>[^']+)'\. No match in the defaults list\.\s*"
    r"To append to your default list use \+(?P<override>\S+)"
)


_YAML_ERROR = re.compile(
    r"yaml\.\w+\.(?P<kind>\w+Error): (?P<context>[^\n]*)\n"
    r'(?:\s+in "(?P<file>[^"]+)", line (?P<line>\d+), column (?P<column>\d+)\n)?'
    r"(?P<problem>[^\n]*)"
    r'(?:\n\s+in "(?P<file2>[^"]+)", line (?P<line2>\d+), column (?P<column2>\d+))?'
)


def hydra_message(text: str) -> str:
    """Hydra's own error, in evalframe's form where we know what it means."""
    error = hydra_error(text)
    return text if error is None else error.render() + "\n"


#: The last line of a traceback that a file-system call ended (``OSError: [Errno 30]
#: Read-only file system: 'outputs'``): Hydra making the run's folder where it cannot.
_FS_ERROR = re.compile(
    r"^(?P<kind>\w*Error): \[Errno \d+\] (?P<what>[^\n]+?): '(?P<path>[^'\n]+)'\s*"
    r"(?:Set the environment variable HYDRA_FULL_ERROR[^\n]*\s*)?\Z",
    re.MULTILINE,
)


_LOG_FS_ERROR = re.compile(
    r"^(?P<kind>\w*Error): \[Errno \d+\] (?P<what>[^\n]+?): '(?P<path>[^'\n]+)'\s*$",
    re.MULTILINE,
)


def _fs_error(text: str) -> EvalframeError | None:
    """A traceback Hydra printed for a folder it could not make (``hydra.run.dir`` under
    a file, a read-only working folder), as a located error."""
    found = _FS_ERROR.search(text)
    if found is None and "Unable to configure handler 'file'" in text:
        # the job's log file in a folder it cannot write (a read-only hydra.run.dir):
        # the OS error is the cause, further up, and logging's ValueError the last line
        found = _LOG_FS_ERROR.search(text)
    if found is None or "Traceback (most recent call last)" not in text:
        return None
    path = found["path"]
    sweep = "multirun" in text  # a frame of Hydra's multirun, or its sweep folder
    key = "hydra.sweep.dir" if sweep else "hydra.run.dir"
    return ConfigError(
        f"the {'sweep' if sweep else 'run'}'s folder cannot be made or written: "
        f"{found['what']}: {path!r}",
        key=key,
        hint="Hydra writes a run under outputs/ (a -m sweep under multirun/) in the current "
        f"folder: run from a folder you can write to, or set {key}=DIR to one",
    )


#: ``+depth=3`` when the config has a depth: Hydra's advice, said in evalframe's form.
_ALREADY_THERE = re.compile(
    r"Could not append to config\. An item is already at '(?P<key>[^']+)'\.\s*"
    r"Either remove \+ prefix: '(?P<plain>[^'\n]+)'"
)


#: Hydra's plain messages for an override it cannot take, said in evalframe's form.
_AMBIGUOUS = re.compile(r"Ambiguous value for argument '(?P<item>(?P<key>[^=']+)=[^'\n]*)'")
_NOT_THERE = re.compile(r"Could not delete from config\. '(?P<key>[^']+)' does not exist\.")
_TWICE = re.compile(r"^(?P<group>[\w/.-]+) appears more than once in the final defaults list",
                    re.MULTILINE)  # fmt: skip
_NO_DIR = re.compile(r"Additional config directory '(?P<dir>[^'\n]+)' not found")
_NO_DELETE = re.compile(r"Error merging override ~(?P<key>\S+)\s*\n[^\n]*does not support deletion")


def _override_error(text: str) -> EvalframeError | None:
    """An override Hydra refuses with a sentence and no key: said as that key's error."""
    found = _AMBIGUOUS.search(text)
    if found is not None:
        item, key = found["item"], found["key"]
        value = item.partition("=")[2]
        return ConfigError(
            f"{item} is a comma-separated value: a list, a text or a sweep",
            key=key.lstrip("+~"),
            hint=f"a list: '{key}=[{value}]'; a text: '{key}=\"{value}\"'; a sweep over "
            "each: add -m",
        )
    found = _NOT_THERE.search(text)
    if found is not None:
        return ConfigError(
            f"~{found['key']} deletes a key the config does not have",
            key=found["key"],
            hint="check its spelling (python -m evalframe +experiment=NAME --cfg job shows "
            "the composed config)",
        )
    found = _TWICE.search(text)
    if found is not None:
        group = found["group"]
        return ConfigError(
            f"+{group}=... adds a second {group}, and the config has one already",
            key=group,
            hint=f"write {group}=OPTION (without the plus) to pick another",
        )
    found = _NO_DELETE.search(text)
    if found is not None:
        return ConfigError(
            f"~{found['key']}: Hydra's own setting cannot be deleted",
            key=found["key"],
            hint=f"give it a value ({found['key']}=...), or leave it out for its default",
        )
    found = _NO_DIR.search(text)
    if found is not None:
        return ConfigError(
            f"the config folder {found['dir']} is not there",
            key="--config-dir",
            hint="give -cd/--config-dir a folder that holds your experiment/ configs",
        )
    return None


def hydra_error(text: str) -> EvalframeError | None:
    """Hydra's error text as evalframe's located error, when we know what it means."""
    made = _fs_error(text) or _override_error(text)
    if made is not None:
        return made
    missing = missing_option_error(text)  # hydra/launcher=ray without its plugin installed
    if missing is not None:
        return missing
    there = _ALREADY_THERE.search(text)
    if there is not None:
        return ConfigError(
            f"{there['key']} is already in the config, so it is set without the plus",
            key=there["key"],
            got="+" + there["plain"],
            hint=f"write {there['plain']} (a plus adds a key the config does not have)",
        )
    broken = _YAML_ERROR.search(text)
    if broken is not None:  # a config file that is not YAML: locate it, no traceback
        from evalframe.core.errors import DataError

        where = broken["file"] or broken["file2"] or "a config file"
        what = broken["context"]
        if broken["line"]:
            what += f" (line {broken['line']}, column {broken['column']})"
        if broken["problem"].strip():
            what += f": {broken['problem']}"
            if broken["line2"]:
                what += f" (line {broken['line2']}, column {broken['column2']})"
        return DataError(
            f"the config file is not valid YAML: {what}",
            path=where,
            line=int(broken["line"] or broken["line2"] or 0) or None,
            hint="fix the file (a bracket or quote left open, a tab used for indent, "
            "a missing ': ' after a key)",
        )
    group = _NOT_IN_DEFAULTS.search(text)
    if group is not None:
        key = group["key"]
        return ConfigError(
            f"{key} is not chosen by default, so it is added with a plus, not overridden",
            key=key,
            got=group["override"],
            hint=f"write +{group['override']} (as in `python -m evalframe +experiment=quickstart`)",
        )
    found = _NOT_IN_STRUCT.search(text)
    if found is None:
        return None
    key = found["key"]
    section = key.split(".", 1)[0]
    inner = found["inner"]
    # said back in the error and its hint: a credential in it is shown redacted
    value = redact_override_value(key, found["override"].partition("=")[2])
    parts = key.split(".")
    if inner in parts[:-1]:
        # `retriever.headrs.Authorization=…`: a section on the way to the key is missing
        # (`headrs`), not a key inside a mapping given as the value: said as that section
        absent = ".".join(parts[: parts.index(inner) + 1])
        return _no_setting(absent, f"{key}={value}", section, value, key)
    if inner != parts[-1]:
        # `dataset.grades={1:4,9:1}`: the setting is there, a key inside the given mapping
        # (9) is not, and Hydra merges a mapping into the one there key by key
        return ConfigError(
            f"{key} has no key {inner!r}: a mapping given to an existing setting is merged "
            "into it key by key, and new keys are not added",
            key=key,
            got=f"{key}={value}",
            hint=f"replace the whole mapping with ++{key}={value}, or add the one key with "
            f"+{key}.{inner}=VALUE",
        )
    return _no_setting(key, f"{key}={value}", section, value, key)


def _no_setting(setting: str, got: str, section: str, value: str, key: str) -> ConfigError:
    """``there is no setting X to override``: ``setting`` is the first missing part of
    the override's ``key`` (the key itself, or a section on the way to it)."""
    if section in _PLUGIN_SECTIONS and "." in setting:
        # a plugin's settings are validated by its config model: a '+' only moves the error
        hint = (
            f"check its spelling: `evalframe plugins show {section} NAME` lists the settings "
            f"of the {section} plugin NAME, and `--cfg job` prints every key"
        )
    else:
        hint = (
            f"check its spelling (`--cfg job` prints every key), or write "
            f"+{key}={value} to add a new key"
        )
    return ConfigError(
        f"there is no setting {setting} to override"
        + (f" (so {key} cannot be set)" if setting != key else ""),
        key=key,
        expected="a key of the composed config",
        got=got,
        hint=hint,
    )


def omegaconf_error(exc: Exception, what: str, hint: str) -> ConfigError:
    """An OmegaConf error as evalframe's: ``cannot <what>: <first line>``, naming its key."""
    key = getattr(exc, "full_key", None)
    return ConfigError(
        f"cannot {what}: {str(getattr(exc, 'msg', exc)).splitlines()[0]}",
        key=key or None,
        hint=hint,
    )


def plain_config(cfg: Any, what: str, hint: str) -> dict[str, Any]:
    """An OmegaConf config as a resolved plain dict; a key it cannot resolve is a ConfigError.

    ``throw_on_missing``: a ``???`` left unset must be an error naming its key,
    not the literal string ``???`` handed to a plugin as a path.
    """
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from evalframe.core.secrets import remember_environment_values

    try:
        raw = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    except OmegaConfBaseException as exc:
        raise omegaconf_error(exc, what, hint) from None
    assert isinstance(raw, dict)  # to_container of a DictConfig is a dict
    # what came from ${oc.env:...}: an error about its setting does not quote it
    remember_environment_values(OmegaConf.to_container(cfg, resolve=False), raw)
    return {str(k): v for k, v in raw.items()}


#: The hint of an error :func:`composition_error` does not know (the Python API's).
API_HINT = (
    "overrides are written as on the command line (key=value, group=option, +key=value to "
    "add a key); a sweep (a,b or -m) runs from the command line, or call evalframe.run once "
    "per value"
)


def composition_error(exc: BaseException, hint: str = API_HINT) -> EvalframeError:
    """Hydra's or OmegaConf's exception as the located error the command line prints
    (the Python API's composition, and a sweep's first job checked before it starts)."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and len(chain) < 5:
        chain.append(current)
        current = current.__cause__ or current.__context__
    # as the command line shows it: each message, and with its type (a YAML error's)
    known = hydra_error("\n".join(str(e) for e in chain)) or hydra_error(
        "\n".join(f"{type(e).__module__}.{type(e).__name__}: {e}" for e in chain)
    )
    if known is not None:
        if known.message.endswith("a list, a text or a sweep") and hint is API_HINT:
            known.hint = (known.hint or "").replace(
                "a sweep over each: add -m", "a sweep: call evalframe.run once per value"
            )
        return known
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    key = getattr(exc, "full_key", None)
    return ConfigError(
        f"Hydra could not compose the config: {message}",
        key=str(key) if key else None,
        hint=hint,
    )


def require_text(path: Path) -> None:
    """A config file must be UTF-8 text: where it is not, a located error, not Hydra's
    ``UnicodeDecodeError`` traceback."""
    try:
        data = path.read_bytes()
    except OSError:
        return  # not there (or unreadable): Hydra says which
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise DataError(
            f"the config file is not UTF-8 text: byte 0x{data[exc.start]:02x} at line {line}, "
            f"column {column} cannot be decoded",
            path=path,
            line=line,
            hint="save the file as UTF-8 (a YAML config is text; was it written by another "
            "program, or saved as UTF-16?)",
        ) from None
