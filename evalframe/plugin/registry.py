"""The plugin registry: a decorator to register, entry points to discover.

Every kind of plugin has one :class:`Registry` object and one entry-point
group (``evalframe.retrievers``, ``evalframe.datasets``, ...). An entry point
names the *module that registers* the plugin::

    [project.entry-points."evalframe.retrievers"]
    bm25 = "evalframe_bm25.retriever"

Looking a name up imports only that one module, so a run that uses ``bm25``
never imports the dense retriever's torch. Built-in plugins are registered in
exactly the same way as a third party's.

It is one module because registering, looking up and configuring a plugin share
its rules (the names, the config model, the error that names the key); split, each
part would need the others.
"""

from __future__ import annotations

import difflib
import importlib
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from evalframe.core.errors import ConfigError, EvalframeError, PluginError
from evalframe.core.secrets import from_environment, redact, remember_secrets
from evalframe.plugin.dists import distribution_of, entry_points, learn_distribution, version_of

__all__ = [
    "ADVERSARIES",
    "AUTHORS",
    "CONF_GROUP",
    "CORPORA",
    "DATASETS",
    "EXPORTERS",
    "GATES",
    "JUDGES",
    "METRICS",
    "ORACLES",
    "REGISTRIES",
    "RETRIEVERS",
    "SOLVERS",
    "TRACKERS",
    "VALIDATORS",
    "PluginSpec",
    "Registry",
    "SelectedPlugin",
    "adversary",
    "author",
    "configure",
    "corpus",
    "dataset",
    "distribution_name",
    "entry_point_error",
    "exporter",
    "format_validation_error",
    "gate",
    "judge",
    "load_entry_point",
    "oracle",
    "raised_at",
    "retriever",
    "select_plugin",
    "solver",
    "tracker",
    "validator",
]

T = TypeVar("T")

#: Entry-point group through which a distribution adds Hydra config groups.
#: The value is an importable package holding group folders (``retriever/x.yaml``).
CONF_GROUP = "evalframe.conf"


@dataclass(frozen=True)
class PluginSpec:
    """One registered plugin: what it is, how to configure it, who ships it."""

    kind: str
    name: str
    obj: Any
    config: type[BaseModel] | None
    description: str
    module: str

    @property
    def distribution(self) -> str | None:
        """The distribution that ships this plugin (from its entry point, else a metadata scan)."""
        return distribution_of(self.module)

    @property
    def version(self) -> str | None:
        return version_of(self.module)


def _first_doc_line(obj: Any) -> str:
    doc = (getattr(obj, "__doc__", None) or "").strip()
    return doc.splitlines()[0].strip() if doc else ""


# -- loading an entry point ------------------------------------------------------------


#: Keys the config section of a plugin kind takes for itself, never handed to the plugin's
#: config (what each does): a field so named could never be set. ``name`` selects the
#: plugin of most kinds (``retriever: {name: bm25, ...}``); under ``gates:`` a gate is
#: selected by ``type`` and given its ``severity``; a metric's parameters and an
#: exporter's settings (``exports: {galaxy: {...}}``) reach it whole.
_RESERVED_DEFAULT = {"name": "selects the plugin in YAML"}
_RESERVED_KEYS: dict[str, dict[str, str]] = {
    "gate": {
        "type": "selects the gate plugin under gates:",
        "severity": "sets the gate's severity (required or advisory) under gates:",
    },
    "metric": {},
    "exporter": {},
}

#: The distribution of evalframe itself, whose entry points (the built-in metrics) win.
_CORE_DISTRIBUTION = "evalframe"


def distribution_name(ep: metadata.EntryPoint) -> str | None:
    """The distribution that declares ``ep`` (``ef-e02``), or None when unknown."""
    try:
        dist = ep.dist
        return str(dist.name) if dist is not None and dist.name else None
    except Exception:  # noqa: BLE001  # odd metadata must not hide the error being said
        return None


def raised_at(exc: BaseException) -> str | None:
    """``file:line`` where ``exc`` was raised, in the code that raised it: the last frame
    outside the standard library and evalframe's loading code (``os.environ[...]``
    raises in ``<frozen os>``; the line to fix is the plugin's that read it). A
    SyntaxError's own place is the line that does not parse."""
    import sysconfig
    import traceback

    if isinstance(exc, SyntaxError) and exc.filename:
        return f"{exc.filename}:{exc.lineno}" if exc.lineno else exc.filename
    stdlib = tuple({sysconfig.get_path("stdlib"), sysconfig.get_path("platstdlib")})
    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if not f.filename.startswith("<")  # <frozen importlib._bootstrap>, <string>
        and not f.filename.startswith(stdlib)
        and f.filename != __file__
    ]
    return f"{frames[-1].filename}:{frames[-1].lineno}" if frames else None


def load_entry_point(ep: metadata.EntryPoint, what: str) -> Any:
    """``ep.load()``; whatever it raises becomes a :class:`PluginError` (exit 2).

    Loading runs a third party's code: besides a missing module it may name a
    missing attribute, or raise anything at import time. Each is a packaging or
    set-up mistake to be said in one paragraph, not a crash blamed on evalframe
    (see :func:`entry_point_error`); an :class:`EvalframeError` (the registry
    refusing a plugin as it registers, or the module's own) is said as it is.
    ``what`` names the thing loaded: ``retriever plugin 'e02'``, ``command 'upload'``.
    """
    try:
        return ep.load()
    except EvalframeError:
        raise  # said already: a rule the plugin broke as it registered (a misspelt hook)
    except Exception as exc:  # noqa: BLE001  # a plugin's module may raise anything
        raise entry_point_error(ep, what, exc) from None


def entry_point_error(ep: metadata.EntryPoint, what: str, exc: Exception) -> PluginError:
    """The paragraph for an entry point that failed to load: where (what, the entry point,
    its group and distribution), the exception, and a hint for its cause.

    The causes need different fixes, so each gets its own hint: the entry point
    names a module or attribute that is not there (a typo in the distribution's
    packaging), the module imports a dependency that is not installed (install
    it), or the module's own code raised while it was imported (the plugin's
    bug, or a setting it reads at import time).
    """
    dist = distribution_name(ep)
    where = f"group {ep.group}" + (f", distribution {dist}" if dist else "")
    cause, hint = _load_failure(ep, exc, dist or "its distribution")
    said = _said(exc)
    return PluginError(
        f"{what} could not be imported from entry point {ep.value!r} ({where}): {cause}",
        got=None if said in cause else said,  # the cause may quote it whole already
        hint=hint,
    )


def _said(exc: BaseException) -> str:
    """``KeyError: 'X'``: an exception's type and the first line of its message."""
    lines = str(exc).strip().splitlines()
    first = lines[0] if lines else ""
    if len(first) > 300:
        first = first[:299] + "…"
    elif len(lines) > 1:
        first += " …"
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def _load_failure(ep: metadata.EntryPoint, exc: Exception, dist: str) -> tuple[str, str]:
    """(what went wrong, how to fix it) for an entry point whose load raised ``exc``."""
    module = ep.module
    fix_ep = (
        f"fix the entry point in {dist}'s packaging (pyproject.toml, "
        f'[project.entry-points."{ep.group}"]) and reinstall it'
    )
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        missing = exc.name
        if module == missing or module.startswith(missing + "."):  # the entry point's own
            if "." not in missing:
                return (
                    f"there is no package {missing!r}",
                    f"reinstall {dist} (pip install --force-reinstall); if it is installed, "
                    f"its entry point names the wrong package: {fix_ep}",
                )
            close = _close_module(missing)
            return (
                f"there is no module {missing!r}",
                (f"did you mean {close!r}? " if close else "")
                + f"the entry point names a module {dist} does not have: {fix_ep}",
            )
        if missing.split(".")[0] == module.split(".")[0]:  # a module of the plugin's own
            return (
                f"{module!r} imports {missing!r}, which {dist} does not have",
                f"a packaging mistake of {dist} (a module left out or renamed): reinstall "
                "it, or report it to its authors",
            )
        return (
            f"{module!r} imports {missing!r}, which is not installed",
            f"install the package that provides the module {missing!r} into this "
            f"environment: {dist} needs it (if its packaging does not declare the "
            "dependency, tell its authors)",
        )
    at = raised_at(exc)
    place = f" (at {at})" if at else ""
    if isinstance(exc, ImportError):  # `from x import y`: x is there, y is not
        return (
            f"an import in {module!r} failed{place}: {_said(exc)}",
            "an installed module lacks a name the plugin imports, most often a dependency "
            f"at a version {dist} does not support: install the versions it requires "
            "(`pip check` lists the conflicts), or report it to its authors",
        )
    loaded = sys.modules.get(module)
    if isinstance(exc, AttributeError) and ep.attr and loaded is not None:
        owner: Any = loaded
        for part in ep.attr.split("."):
            if not hasattr(owner, part):
                public = [n for n in dir(owner) if not n.startswith("_")]
                near = difflib.get_close_matches(part, public, n=1)
                return (
                    f"module {module!r} was imported, but it defines no {ep.attr!r}",
                    (f"did you mean {near[0]!r}? " if near else "") + fix_ep,
                )
            owner = getattr(owner, part)
    return (
        f"importing {module!r} raised {_said(exc)}{place}",
        f"the plugin's own code failed while it was imported (a setting it reads then, "
        f"such as an environment variable, may be missing): see {dist}'s documentation, "
        "or report it to its authors; runs that do not use this plugin are not affected",
    )


def _close_module(missing: str) -> str | None:
    """A module of the same package spelt like ``missing`` (``ef_x.retriver`` ->
    ``ef_x.retriever``), when that package is already imported (no code is run)."""
    import pkgutil

    parent, _, last = missing.rpartition(".")
    package = sys.modules.get(parent)
    path = getattr(package, "__path__", None)
    if path is None:
        return None
    names = [m.name for m in pkgutil.iter_modules(path)]
    close = difflib.get_close_matches(last, names, n=1)
    return f"{parent}.{close[0]}" if close else None


class Registry(Generic[T]):
    """Name -> plugin for one kind, filled by decorators and entry points.

    The registry is an ordinary object so tests can build a fresh one, or use
    :meth:`scoped` to add temporary plugins to a global one without leaking.
    """

    def __init__(
        self,
        kind: str,
        group: str,
        protocol: type | None = None,
        check: Callable[[str, Any, str], None] | None = None,
    ) -> None:
        self.kind = kind
        self.group = group
        self.protocol = protocol
        #: a rule of the kind, checked when a plugin registers: ``check(name, obj, module)``
        self.check = check
        self._specs: dict[str, PluginSpec] = {}
        self._dropped: dict[str, PluginSpec] = {}  # registered inside a scope that ended
        #: entry points of this group sharing one name, as the last scan found them
        self._clashes: dict[str, list[metadata.EntryPoint]] = {}
        #: another distribution's entry points under a name evalframe's own declares
        self._shadowed: dict[str, list[metadata.EntryPoint]] = {}
        self._shadow_said: set[str] = set()

    # -- registration -----------------------------------------------------
    def add(
        self,
        name: str,
        obj: Any,
        config: type[BaseModel] | None = None,
        *,
        description: str | None = None,
        module: str | None = None,
    ) -> PluginSpec:
        """Register ``obj`` under ``name``. Re-registering the same object is a no-op."""
        existing = self._specs.get(name)
        module = module or getattr(obj, "__module__", "") or ""
        if existing is not None and existing.obj is not obj:
            same = _definition_id(existing.obj, existing.module)
            if same is not None and same == _definition_id(obj, module):
                pass  # the same definition re-imported (module reloaded): replace quietly
            else:
                raise PluginError(
                    f"two {self.kind} plugins are both named {name!r}: "
                    f"{existing.module} and {module}",
                    hint="rename one of them; plugin names are unique per kind",
                )
        reserved = _RESERVED_KEYS.get(self.kind, _RESERVED_DEFAULT)
        modelled = isinstance(config, type) and issubclass(config, BaseModel)
        fields = config.model_fields if modelled else {}  # type: ignore[union-attr]  # checked
        for field, role in reserved.items():
            if field in fields:
                raise PluginError(
                    f"{self.kind} plugin {name!r} ({module}): its config has a field "
                    f"{field!r}, but that key {role} and can never reach it",
                    hint=f"rename the field (e.g. {field}_value, or a word of its own)",
                )
        if config is not None and not (isinstance(config, type) and issubclass(config, BaseModel)):
            raise PluginError(
                f"{self.kind} plugin {name!r}: config must be a pydantic model class",
                got=repr(config),
            )
        if config is not None and config.model_config.get("extra") != "forbid":
            # a plain BaseModel ignores `retriever.k11=3`: the typo runs with the default
            raise PluginError(
                f"{self.kind} plugin {name!r} ({module}): its config {config.__name__} accepts "
                "unknown keys, so a misspelt setting would be ignored without a word",
                expected="a config that forbids unknown keys",
                hint="subclass evalframe.plugin.protocols.PluginConfig (frozen, extra='forbid'), "
                "or set model_config = ConfigDict(extra='forbid')",
            )
        if self.check is not None:
            self.check(name, obj, module)
        spec = PluginSpec(
            kind=self.kind,
            name=name,
            obj=obj,
            config=config,
            description=description or _first_doc_line(obj),
            module=module,
        )
        self._specs[name] = spec
        return spec

    def decorator(
        self, name: str, *, config: type[BaseModel] | None = None, description: str | None = None
    ) -> Callable[[T], T]:
        def register(obj: T) -> T:
            self.add(name, obj, config, description=description)
            return obj

        return register

    # -- lookup -------------------------------------------------------------
    def _entry_points(self) -> dict[str, metadata.EntryPoint]:
        # Looked at on every call on purpose: a plugin installed (or put on
        # sys.path by a test) after start-up must still be found (dists.entry_points
        # scans again when either could have happened).
        found: dict[str, metadata.EntryPoint] = {}
        self._clashes = {}
        self._shadowed = {}
        for ep in entry_points(self.group):
            first = found.setdefault(ep.name, ep)
            if first.value != ep.value:  # two distributions claim one name
                self._clashes.setdefault(ep.name, [first]).append(ep)
        # A name evalframe itself declares (a built-in metric: nDCG, Judged) keeps its
        # meaning whatever else is installed: the canonical string is the metric's
        # identity everywhere. The other distribution's plugin is shadowed, and said so.
        for name, eps in list(self._clashes.items()):
            own = [ep for ep in eps if distribution_name(ep) == _CORE_DISTRIBUTION]
            if len({ep.value for ep in own}) == 1:
                found[name] = own[0]
                self._shadowed[name] = [ep for ep in eps if ep.value != own[0].value]
                del self._clashes[name]
        return found

    def _say_shadowed(self, name: str) -> None:
        """Warn, once per process, that another distribution's ``name`` is not used."""
        others = self._shadowed.get(name)
        if not others or name in self._shadow_said:
            return
        self._shadow_said.add(name)
        from evalframe.core.messages import warn

        for ep in others:
            warn(
                f"the {self.kind} plugin {name!r} of {distribution_name(ep) or 'a distribution'} "
                f"({ep.value}) is shadowed by evalframe's built-in {name!r} and is not used; "
                "rename it there (a built-in name keeps its meaning wherever it is written)"
            )

    def _clash(self, name: str) -> PluginError | None:
        """Two entry points of this group with one name (read by the last
        :meth:`_entry_points`): the error names both, where one would win by
        install order and the other's settings be refused as unknown."""
        eps = self._clashes.get(name)
        if not eps:
            return None
        where = " and ".join(
            f"{ep.value} ({ep.dist.name if ep.dist is not None else 'unknown distribution'})"
            for ep in eps
        )
        return PluginError(
            f"two {self.kind} plugins are both named {name!r}: {where}",
            hint="uninstall one of the distributions, or rename one plugin; plugin names "
            "are unique per kind",
        )

    def names(self) -> list[str]:
        """Every name that can be looked up, without importing any plugin."""
        return sorted(set(self._specs) | set(self._entry_points()))

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self.names()

    def get(self, name: str, *, key: str | None = None) -> PluginSpec:
        """The plugin called ``name``, loading only its entry point if needed."""
        if name in self._specs:
            return self._specs[name]
        ep = self._entry_points().get(name)
        if ep is None:
            raise self._unknown(name, key)
        self._say_shadowed(name)
        clash = self._clash(name)
        if clash is not None:
            raise clash
        before = set(self._specs)
        loaded = load_entry_point(ep, f"{self.kind} plugin {name!r}")
        learn_distribution(ep)
        dropped = self._dropped.get(name)
        if name not in self._specs and dropped is not None:
            module = sys.modules.get(dropped.module)
            if module is not None and module is loaded:  # imported in a scope, not re-run
                self._specs[name] = dropped
        if name not in self._specs:
            # The entry point may name a class/function directly instead of a
            # registering module; accept that when it carries a docstring.
            if not isinstance(loaded, type(importlib)) and callable(loaded):
                self.add(name, loaded, getattr(loaded, "config_model", None))
            else:
                raise self._registered_no(name, ep, before)
        return self._specs[name]

    def _registered_no(self, name: str, ep: metadata.EntryPoint, before: set[str]) -> PluginError:
        """An entry point's module imported, but registered nothing under its name: said
        with what it did register (``@retriever("e-07")`` for entry point ``e07``), the
        likelier typo of the two; of a module registering many, the closest name only."""
        module = ep.value.split(":")[0].strip()
        others = sorted(n for n, s in self._specs.items() if s.module == module or n not in before)
        dist = distribution_name(ep)
        where = f"group {self.group}" + (f", distribution {dist}" if dist else "")
        message = (
            f"entry point {name!r} ({where}) imported {ep.value!r}, "
            f"but that module registered no {self.kind} named {name!r}"
        )
        close = difflib.get_close_matches(name, others, n=1, cutoff=0.5)
        if close or 0 < len(others) <= 3:
            listed = ", ".join(repr(n) for n in (close or others))
            return PluginError(
                f"{message}; it registered {listed}",
                hint="the two names must be one: decorate the plugin with "
                f"@{self.kind}({name!r}) in {ep.value}, or name the entry point "
                f"{(close or others)[0]!r}",
            )
        return PluginError(
            message, hint=f"decorate the plugin with @{self.kind}({name!r}) in {ep.value}"
        )

    def load_all(self) -> tuple[list[PluginSpec], list[str]]:
        """Import every discoverable plugin (for ``plugins list``).

        A plugin that fails to load does not hide the others: it is returned
        as a problem instead (its error, and a hint line), for the caller to show.
        """
        specs: list[PluginSpec] = []
        broken: list[str] = []
        entry_points = self._entry_points()
        for name in self.names():
            try:
                spec = self.get(name)
            except PluginError as exc:
                # the whole paragraph: what was found (the import error) and its hint are
                # what a `plugins list` is read for; redacted, as render() always is
                broken.append(f"{self.kind} {name}: {exc.render().removeprefix('error: ')}")
                continue
            specs.append(spec)
            for other in self._shadowed.get(name, ()):
                broken.append(
                    f"{self.kind} {name}: entry point {other.value!r} of "
                    f"{distribution_name(other) or 'a distribution'} is shadowed by "
                    f"evalframe's built-in {name!r}; rename the plugin"
                )
            ep = entry_points.get(name)
            if ep is not None and ep.value.split(":")[0] != spec.module:
                # a name evalframe registers itself (a built-in metric): the entry point's
                # module is never imported, so its plugin would be ignored without a word
                broken.append(
                    f"{self.kind} {name}: entry point {ep.value!r} is shadowed by the "
                    f"{self.kind} registered in {spec.module}; rename the plugin"
                )
        return specs, broken

    def _unknown(self, name: str, key: str | None) -> PluginError:
        available = self.names()
        close = difflib.get_close_matches(name, available, n=1, cutoff=0.5)
        hint = f"did you mean {close[0]!r}?" if close else None
        listing = ", ".join(available) if available else "(none installed)"
        return PluginError(
            f"no {self.kind} named {name!r}; available: {listing}",
            key=key,
            hint=hint,
        )

    # -- tests --------------------------------------------------------------
    @contextmanager
    def scoped(self) -> Iterator[Registry[T]]:
        """Temporary registrations for a test; the registry is restored on exit.

        A plugin that an entry point's module registered during the scope is
        dropped too, but remembered: its module stays imported and will not run
        its decorator again, so :meth:`get` restores it from memory instead of
        reporting an installed plugin as unknown for the rest of the process.
        """
        saved = dict(self._specs)
        try:
            yield self
        finally:
            for name, spec in self._specs.items():
                if name not in saved:
                    self._dropped[name] = spec
            self._specs = saved


def _definition_id(obj: Any, module: str) -> tuple[str, str] | None:
    """Where a plugin is defined: (module, qualified name) of the class or kernel.

    Two registrations with the same id are one definition imported twice (a
    reloaded module); anything without a qualified name is never "the same".
    """
    target = getattr(obj, "kernel", obj)  # a metric registers a MetricDef around its kernel
    qualname = getattr(target, "__qualname__", None)
    return (module, qualname) if isinstance(qualname, str) else None


RETRIEVERS: Registry[Any] = Registry("retriever", "evalframe.retrievers")
DATASETS: Registry[Any] = Registry("dataset", "evalframe.datasets")
CORPORA: Registry[Any] = Registry("corpus", "evalframe.corpora")
METRICS: Registry[Any] = Registry("metric", "evalframe.metrics")
GATES: Registry[Any] = Registry("gate", "evalframe.gates")


def _check_tracker(name: str, obj: Any, module: str) -> None:
    """A tracker's ``on_*`` methods must be hooks: a misspelt one would never be called.

    Hooks are looked up by name when they fire (``HookRelay``), so without this
    check ``on_run_ends`` would be silently ignored for ever.
    """
    from evalframe.plugin.hooks import HOOKS

    for attr in dir(obj):
        if attr.startswith("on_") and callable(getattr(obj, attr, None)) and attr not in HOOKS:
            close = difflib.get_close_matches(attr, HOOKS, n=1)
            raise PluginError(
                f"tracker plugin {name!r} ({module}) defines {attr}(), which is not a hook",
                expected=f"hook methods among: {', '.join(HOOKS)}",
                hint=(f"did you mean {close[0]!r}? " if close else "")
                + "rename it, or drop the on_ prefix for a helper method",
            )


TRACKERS: Registry[Any] = Registry("tracker", "evalframe.trackers", check=_check_tracker)

REGISTRIES: dict[str, Registry[Any]] = {
    r.kind: r for r in (RETRIEVERS, DATASETS, CORPORA, METRICS, GATES, TRACKERS)
}

# -- mining (evalframe mine): solvers attempt tasks, validators judge the answers --
SOLVERS: Registry[Any] = Registry("solver", "evalframe.solvers")
VALIDATORS: Registry[Any] = Registry("validator", "evalframe.validators")
REGISTRIES.update({r.kind: r for r in (SOLVERS, VALIDATORS)})

# -- exports: a finished run written in another tool's format (Galaxy's JSON, ...) --
EXPORTERS: Registry[Any] = Registry("exporter", "evalframe.exporters")
REGISTRIES[EXPORTERS.kind] = EXPORTERS


# -- golden-set construction (evalframe golden build): the four roles of KnowCode's pipeline --
AUTHORS: Registry[Any] = Registry("author", "evalframe.authors")
ORACLES: Registry[Any] = Registry("oracle", "evalframe.oracles")
ADVERSARIES: Registry[Any] = Registry("adversary", "evalframe.adversaries")
JUDGES: Registry[Any] = Registry("judge", "evalframe.judges")
REGISTRIES.update({r.kind: r for r in (AUTHORS, ORACLES, ADVERSARIES, JUDGES)})


def author(name: str, *, config: type[BaseModel] | None = None) -> Callable[[T], T]:
    """Register a query author (``evalframe golden build``): ``@author("ast", config=...)``."""
    return AUTHORS.decorator(name, config=config)


def oracle(name: str, *, config: type[BaseModel] | None = None) -> Callable[[T], T]:
    """Register an oracle answerer (``evalframe golden build``)."""
    return ORACLES.decorator(name, config=config)


def adversary(name: str, *, config: type[BaseModel] | None = None) -> Callable[[T], T]:
    """Register an adversarial reviewer (``evalframe golden build``)."""
    return ADVERSARIES.decorator(name, config=config)


def judge(name: str, *, config: type[BaseModel] | None = None) -> Callable[[T], T]:
    """Register a narrative-equivalence judge (``evalframe golden build``)."""
    return JUDGES.decorator(name, config=config)


def exporter(name: str, *, config: type[BaseModel] | None = None) -> Callable[[T], T]:
    """Register an exporter class: ``@exporter("galaxy", config=GalaxyExportConfig)``."""
    return EXPORTERS.decorator(name, config=config)


def solver(name: str, *, config: type[BaseModel] | None = None) -> Callable[[T], T]:
    """Register a solver class (``evalframe mine``): ``@solver("command", config=...)``."""
    return SOLVERS.decorator(name, config=config)


def validator(name: str, *, config: type[BaseModel] | None = None) -> Callable[[T], T]:
    """Register a validator class (``evalframe mine``)."""
    return VALIDATORS.decorator(name, config=config)


def retriever(name: str, *, config: type[BaseModel] | None = None) -> Callable[[T], T]:
    """Register a retriever class: ``@retriever("bm25", config=BM25Config)``."""
    return RETRIEVERS.decorator(name, config=config)


def dataset(name: str, *, config: type[BaseModel] | None = None) -> Callable[[T], T]:
    """Register a golden-set loader class."""
    return DATASETS.decorator(name, config=config)


def corpus(name: str, *, config: type[BaseModel] | None = None) -> Callable[[T], T]:
    """Register a corpus loader class."""
    return CORPORA.decorator(name, config=config)


def gate(name: str, *, config: type[BaseModel] | None = None) -> Callable[[T], T]:
    """Register a gate class."""
    return GATES.decorator(name, config=config)


def tracker(name: str, *, config: type[BaseModel] | None = None) -> Callable[[T], T]:
    """Register a tracker (hook) class."""
    return TRACKERS.decorator(name, config=config)


def validation_problems(
    exc: ValidationError, key: str, model: type[BaseModel] | None = None
) -> list[tuple[str, str]]:
    """(full config key, what is wrong) for each problem pydantic found; an unknown key
    of ``model`` (or of a model nested in it) with the field it is closest to."""
    problems = []
    for err in _union_errors_merged(exc.errors()):
        loc = ".".join(str(p) for p in err["loc"])
        where = f"{key}.{loc}" if loc else key
        name = str(err["loc"][-1]) if err["loc"] else ""
        if err["type"] == "extra_forbidden":  # `+retriever.api_token=sk-…`: shown redacted
            near = _nearest_field(model, err["loc"])
            also = f"; did you mean {near!r}?" if near else ""
            problems.append((where, f"unknown key ({_given(err['input'], name)}){also}"))
        elif err["type"] == "missing":
            problems.append((where, "required but not set"))
        else:  # a validator's ValueError reads as its own sentence, without pydantic's label
            msg = err["msg"].removeprefix("Value error, ")
            problems.append((where, f"{msg} ({_given(err['input'], name)})"))
    return problems


def _given(value: Any, name: str) -> str:
    """What was given, as it may be shown: redacted (a header refused as a credential is
    one), and not at all when it holds a value read from the environment, where the
    wrong variable (or an unknown key's) may be a key: ``+tag=${oc.env:KEY}``."""
    if _holds_environment_value(value):
        return "got the value of an ${oc.env:...}, not shown"
    return f"got {redact(value, _name=name)!r}"


def _holds_environment_value(value: Any) -> bool:
    if isinstance(value, Mapping):
        return any(_holds_environment_value(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_holds_environment_value(v) for v in value)
    return from_environment(value)


#: the last part of a location pydantic gives each member of a union it tried
_UNION_TAG = re.compile(r"^(int|float|str|bool|none|list|dict|tuple|set)$|\[")


def _union_errors_merged(errors: list[Any]) -> list[Any]:
    """pydantic's errors, those of one union setting as one: ``trials.n: Input should
    be a valid integer ... or 'auto'`` rather than ``trials.n.int: ...; trials.n.literal
    ['auto']: ...`` (a location that names no setting, and the value said twice)."""
    groups: dict[tuple[Any, ...], list[Any]] = {}
    for err in errors:
        loc = tuple(err["loc"])
        if len(loc) > 1 and isinstance(loc[-1], str) and _UNION_TAG.search(loc[-1]):
            groups.setdefault(loc[:-1], []).append(err)
    merged, done = [], set()
    for err in errors:
        loc = tuple(err["loc"])
        members = groups.get(loc[:-1]) if loc else None
        # a union's members were all given the one value; a mapping's entries named like
        # types (labels: {int: a, str: b}) were given one each, and stay apart
        same = members is not None and all(m["input"] == members[0]["input"] for m in members)
        if not members or len(members) < 2 or err not in members or not same:
            merged.append(err)
            continue
        if loc[:-1] in done:
            continue
        done.add(loc[:-1])
        said = " or ".join(
            dict.fromkeys(
                m["msg"].removeprefix("Value error, ").removeprefix("Input should be ")
                for m in members
            )
        )
        merged.append({**err, "loc": loc[:-1], "msg": f"Input should be {said}"})
    return merged


def _nearest_field(model: type[BaseModel] | None, loc: tuple[Any, ...]) -> str | None:
    """The field of the model at ``loc``'s parent that ``loc``'s last part most resembles
    (``depht`` -> ``depth``, ``retriever.k11`` -> ``k1``), or None."""
    import difflib

    for part in loc[:-1]:  # down through nested models; a list or a mapping ends the walk
        field = model.model_fields.get(str(part)) if model is not None else None
        inner = field.annotation if field is not None else None
        model = inner if isinstance(inner, type) and issubclass(inner, BaseModel) else None
    if model is None or not loc:
        return None
    close = difflib.get_close_matches(str(loc[-1]), list(model.model_fields), n=1, cutoff=0.6)
    return close[0] if close else None


def format_validation_error(exc: ValidationError, key: str) -> str:
    """``retriever.k1: Input should be greater than 0 (got -1)``, one per problem."""
    return "; ".join(f"{where}: {what}" for where, what in validation_problems(exc, key))


def configure(spec: PluginSpec, params: Mapping[str, Any], key: str) -> BaseModel | None:
    """Validate ``params`` against the plugin's config model, naming ``key`` on error.

    The values of its secret-named settings are remembered first, for the rest of the
    process (:func:`evalframe.core.secrets.remember_secrets`): the plugin holds them
    resolved and may quote one in an exception, and every error, traceback, warning
    and job.json evalframe writes is then redacted of them, as its configs are.
    """
    remember_secrets(params)
    if spec.config is None:
        if params:
            raise ConfigError(
                f"{spec.kind} plugin {spec.name!r} takes no settings",
                key=key,
                got=", ".join(sorted(params)),
                hint=f"remove these keys from {key}",
            )
        return None
    try:
        return spec.config.model_validate(dict(params))
    except ValidationError as exc:
        fields = ", ".join(spec.config.model_fields)
        problems = validation_problems(exc, key, spec.config)
        if len(problems) == 1:  # the error's key is the one setting at fault
            where, what = problems[0]
            detail = what
        else:
            where, detail = key, format_validation_error(exc, key)
        raise ConfigError(
            f"invalid settings for {spec.kind} {spec.name!r}: {detail}",
            key=where,
            hint=f"{spec.kind} {spec.name!r} accepts: {fields or '(nothing)'}; "
            f"see `evalframe plugins show {spec.kind} {spec.name}`",
        ) from None


@dataclass(frozen=True)
class SelectedPlugin:
    """A plugin chosen by name in a config, with its validated settings and the key it came from."""

    spec: PluginSpec
    config: BaseModel | None
    key: str


def select_plugin(registry: Registry[Any], node: Mapping[str, Any], key: str) -> SelectedPlugin:
    """The plugin a config section names (``name:``), its other keys validated as its settings.

    One rule for every section that picks a plugin (a run's retriever, a mining
    run's solver, a golden build's oracle): a missing name lists the options, an
    unknown one suggests the closest, a bad setting names its key.
    """
    params = dict(node)
    name = params.pop("name", None)
    if not isinstance(name, str) or not name:
        raise ConfigError(
            f"no {registry.kind} selected",
            key=f"{key}.name",
            expected=f"one of: {', '.join(registry.names())}",
            got=repr(name),
            hint=f"pick one with {key}=<name> on the command line or `name:` in YAML",
        )
    spec = registry.get(name, key=f"{key}.name")
    return SelectedPlugin(spec=spec, config=configure(spec, params, key), key=key)
