"""An installed plugin whose entry point fails to load is the distribution's mistake, said
in one paragraph (exit 2) with a hint for its cause, never a crash blamed on evalframe;
``plugins list`` shows it as ``broken:`` and goes on; the contract suites load it too."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from evalframe.core.errors import PluginError
from evalframe.plugin.registry import RETRIEVERS, Registry
from evalframe.plugin.testing import PluginContract
from tests.plugin.fakedist import installer

install = pytest.fixture(installer, name="install")
Install = Callable[[str, str, Mapping[str, str]], Path]

GROUP = "evalframe.retrievers"
FIX = (
    "fix the entry point in ef-t10's packaging (pyproject.toml, "
    '[project.entry-points."evalframe.retrievers"]) and reinstall it'
)
#: one distribution, one mistake per entry point (and one entry point that works)
ENTRY_POINTS = """
    [evalframe.retrievers]
    t10_attr = ef_t10.retriever:R20
    t10_raises = ef_t10.raising
    t10_typo = ef_t10.retriver
    t10_nopkg = ef_t10_gone.retriever
    t10_dep = ef_t10.needs_dep
    t10_own = ef_t10.needs_own
    t10_name = ef_t10.cannot_import_name
    t10_refused = ef_t10.refused
    t10_ok = ef_t10.retriever
"""
FILES = {
    "ef_t10/__init__.py": "",
    "ef_t10/retriever.py": '''
        from evalframe.plugin.registry import retriever


        @retriever("t10_ok")
        class R10:
            """Works."""
    ''',
    "ef_t10/raising.py": 'import os\nENDPOINT = os.environ["EF_T10_SURELY_UNSET"]\n',
    "ef_t10/needs_dep.py": "import ef_t10_surely_not_installed\n",
    "ef_t10/needs_own.py": "import ef_t10.helpers\n",
    "ef_t10/cannot_import_name.py": "from os import surely_no_such_name\n",
    "ef_t10/refused.py": """
        from evalframe.core.errors import PluginError

        raise PluginError("tracker plugin 't10' defines on_run_ended(), which is not a hook")
    """,
}


def _error(name: str) -> PluginError:
    with pytest.raises(PluginError) as err:
        RETRIEVERS.get(name)
    return err.value


def _head(name: str, value: str) -> str:
    return (
        f"retriever plugin {name!r} could not be imported from entry point {value!r} "
        "(group evalframe.retrievers, distribution ef-t10): "
    )


def test_each_cause_of_a_failed_load_is_exit_2_with_its_own_hint(install: Install) -> None:
    root = install("ef-t10", ENTRY_POINTS, FILES)

    err = _error("t10_attr")  # a typo in `module:Attr`: was AttributeError, exit 3
    assert err.message == _head("t10_attr", "ef_t10.retriever:R20") + (
        "module 'ef_t10.retriever' was imported, but it defines no 'R20'"
    )
    assert err.got == "AttributeError: module 'ef_t10.retriever' has no attribute 'R20'"
    assert err.hint == f"did you mean 'R10'? {FIX}"

    err = _error("t10_raises")  # the module's own code raised: was KeyError, exit 3
    assert err.message == _head("t10_raises", "ef_t10.raising") + (
        f"importing 'ef_t10.raising' raised KeyError: 'EF_T10_SURELY_UNSET' "
        f"(at {root / 'ef_t10' / 'raising.py'}:2)"
    )
    assert err.got is None  # said in the message already
    assert err.hint == (
        "the plugin's own code failed while it was imported (a setting it reads then, such "
        "as an environment variable, may be missing): see ef-t10's documentation, or report "
        "it to its authors; runs that do not use this plugin are not affected"
    )

    err = _error("t10_typo")  # the entry point's module misspelt: the close one suggested
    assert err.message == _head("t10_typo", "ef_t10.retriver") + (
        "there is no module 'ef_t10.retriver'"
    )
    assert err.got == "ModuleNotFoundError: No module named 'ef_t10.retriver'"
    assert err.hint == (
        "did you mean 'ef_t10.retriever'? the entry point names a module ef-t10 does not "
        f"have: {FIX}"
    )

    err = _error("t10_nopkg")
    assert err.message == _head("t10_nopkg", "ef_t10_gone.retriever") + (
        "there is no package 'ef_t10_gone'"
    )
    assert err.hint == (
        "reinstall ef-t10 (pip install --force-reinstall); if it is installed, its entry "
        f"point names the wrong package: {FIX}"
    )

    err = _error("t10_dep")  # a dependency not installed: install it, not the plugin
    assert err.message == _head("t10_dep", "ef_t10.needs_dep") + (
        "'ef_t10.needs_dep' imports 'ef_t10_surely_not_installed', which is not installed"
    )
    assert err.got == "ModuleNotFoundError: No module named 'ef_t10_surely_not_installed'"
    assert err.hint == (
        "install the package that provides the module 'ef_t10_surely_not_installed' into "
        "this environment: ef-t10 needs it (if its packaging does not declare the "
        "dependency, tell its authors)"
    )

    err = _error("t10_own")  # a module of the plugin's own left out of the distribution
    assert err.message == _head("t10_own", "ef_t10.needs_own") + (
        "'ef_t10.needs_own' imports 'ef_t10.helpers', which ef-t10 does not have"
    )
    assert err.hint == (
        "a packaging mistake of ef-t10 (a module left out or renamed): reinstall it, or "
        "report it to its authors"
    )

    err = _error("t10_name")  # `from x import y`, y missing: a dependency's version
    assert err.message == _head("t10_name", "ef_t10.cannot_import_name") + (
        f"an import in 'ef_t10.cannot_import_name' failed "
        f"(at {root / 'ef_t10' / 'cannot_import_name.py'}:1): ImportError: cannot import "
        f"name 'surely_no_such_name' from 'os' ({sys.modules['os'].__file__})"
    )
    assert err.hint is not None and err.hint.startswith(
        "an installed module lacks a name the plugin imports, most often a dependency at a "
        "version ef-t10 does not support"
    )
    assert "Traceback" not in err.render()

    # evalframe's own error as the module registers (a misspelt hook) is said as it is
    err = _error("t10_refused")
    assert err.message == "tracker plugin 't10' defines on_run_ended(), which is not a hook"
    assert RETRIEVERS.get("t10_ok").obj.__name__ == "R10"  # the good one still loads


def test_plugins_list_shows_each_broken_plugin_with_its_error_and_goes_on(
    install: Install,
) -> None:
    """docs/plugins.md: a plugin that fails to import is listed as broken and the listing
    goes on. Before, an AttributeError or an import-time KeyError stopped it (exit 3)."""
    # a registry of its own: the good plugin is named as a class (the decorator in its
    # module registers in RETRIEVERS, not here)
    entry_points = ENTRY_POINTS.replace("evalframe.retrievers", "evalframe.test_t10")
    install("ef-t10", entry_points.replace("ef_t10.retriever\n", "ef_t10.retriever:R10\n"), FILES)
    specs, broken = Registry("retriever", "evalframe.test_t10").load_all()
    assert [s.name for s in specs] == ["t10_ok"]
    assert [line.split(":")[0] for line in broken] == [
        "retriever t10_attr",
        "retriever t10_dep",
        "retriever t10_name",
        "retriever t10_nopkg",
        "retriever t10_own",
        "retriever t10_raises",
        "retriever t10_refused",
        "retriever t10_typo",
    ]
    typo = next(line for line in broken if line.startswith("retriever t10_typo"))
    assert typo == (  # the error and its hint: what `plugins list` is read for
        "retriever t10_typo: retriever plugin 't10_typo' could not be imported from entry "
        "point 'ef_t10.retriver' (group evalframe.test_t10, distribution ef-t10): there is "
        "no module 'ef_t10.retriver' (got ModuleNotFoundError: No module named "
        "'ef_t10.retriver')\n  hint: did you mean 'ef_t10.retriever'? the entry point names "
        "a module ef-t10 does not have: fix the entry point in ef-t10's packaging "
        '(pyproject.toml, [project.entry-points."evalframe.test_t10"]) and reinstall it'
    )


def test_a_module_registering_another_name_says_the_name_it_registered(
    install: Install,
) -> None:
    install(
        "ef-t10",
        "[evalframe.retrievers]\nt10_e07 = ef_t10.mismatch\n",
        {
            "ef_t10/__init__.py": "",
            "ef_t10/mismatch.py": '''
                from evalframe.plugin.registry import retriever


                @retriever("t10-e07")
                class R:
                    """Registered under another name than its entry point's."""
            ''',
        },
    )
    err = _error("t10_e07")
    assert err.message == (
        "entry point 't10_e07' (group evalframe.retrievers, distribution ef-t10) imported "
        "'ef_t10.mismatch', but that module registered no retriever named 't10_e07'; it "
        "registered 't10-e07'"
    )
    assert err.hint == (
        "the two names must be one: decorate the plugin with @retriever('t10_e07') in "
        "ef_t10.mismatch, or name the entry point 't10-e07'"
    )


class _Suite(PluginContract):
    registry = RETRIEVERS


def test_the_contract_loads_the_entry_point_so_a_typo_in_it_fails(install: Install) -> None:
    """A plugin's test imports its class, which registers it: before, the rule looked the
    name up, found that registration, and passed whatever the entry point said."""
    install("ef-t10", "[evalframe.retrievers]\nt10_ok = ef_t10.retriver\n", FILES)
    import ef_t10.retriever  # what the plugin's own test module does  # noqa: F401

    suite = type("T", (_Suite,), {"plugin_name": "t10_ok"})()
    with pytest.raises(pytest.fail.Exception) as err:
        suite.test_discovered_through_its_entry_point()
    assert str(err.value).startswith(
        "retriever plugin 't10_ok' breaks the rule: its entry point 'ef_t10.retriver' must "
        "load.\nerror: retriever plugin 't10_ok' could not be imported from entry point "
        "'ef_t10.retriver' (group evalframe.retrievers, distribution ef-t10): there is no "
        "module 'ef_t10.retriver'"
    )


def test_the_contract_passes_an_entry_point_that_leads_to_the_plugin(install: Install) -> None:
    install("ef-t10", "[evalframe.retrievers]\nt10_ok = ef_t10.retriever\n", FILES)
    suite = type("T", (_Suite,), {"plugin_name": "t10_ok"})()
    suite.test_discovered_through_its_entry_point()


def test_the_contract_refuses_an_entry_point_leading_elsewhere(install: Install) -> None:
    """An entry point that loads, but whose module is not where the plugin is registered
    (it would be reported as shadowed by `plugins list`)."""
    files = {**FILES, "ef_t10/other.py": "X = 1\n"}
    install("ef-t10", "[evalframe.retrievers]\nt10_ok = ef_t10.other\n", files)
    import ef_t10.retriever  # noqa: F401  # registers t10_ok, as a plugin's test does

    suite = type("T", (_Suite,), {"plugin_name": "t10_ok"})()
    with pytest.raises(AssertionError) as err:
        suite.test_discovered_through_its_entry_point()
    assert str(err.value).startswith(
        "retriever plugin 't10_ok' breaks the rule: its entry point 'ef_t10.other' must name "
        "the module that registers it (ef_t10.retriever) or the plugin itself"
    )
