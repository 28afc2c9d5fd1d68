"""The plugin registry: registration, lookup errors, scoping, configuration, entry points."""

from __future__ import annotations

import importlib
import os
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict, Field

from evalframe.core.errors import ConfigError, PluginError
from evalframe.plugin.dists import entry_points
from evalframe.plugin.registry import RETRIEVERS, PluginSpec, Registry, configure

EMPTY_GROUP = "evalframe.test_nothing"  # no installed distribution declares this group


@pytest.fixture
def reg() -> Registry[object]:
    return Registry("retriever", EMPTY_GROUP)


class BM25:
    """Sparse retrieval with BM25.

    More text that is not part of the description.
    """


class Dense:
    """Dense retrieval."""


class Settings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    k1: float = Field(1.2, gt=0)
    b: float = Field(0.75, ge=0, le=1)


class Required(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str


# -- add / get ----------------------------------------------------------------


def test_a_fresh_registry_is_empty(reg: Registry[object]) -> None:
    assert reg.names() == []
    assert "bm25" not in reg


def test_add_then_get(reg: Registry[object]) -> None:
    spec = reg.add("bm25", BM25, Settings)
    assert reg.get("bm25") is spec
    assert spec.kind == "retriever"
    assert spec.name == "bm25"
    assert spec.obj is BM25
    assert spec.config is Settings
    assert spec.module == __name__
    assert spec.description == "Sparse retrieval with BM25."  # the first docstring line
    assert reg.names() == ["bm25"]
    assert "bm25" in reg
    assert 42 not in reg


def test_explicit_description_wins(reg: Registry[object]) -> None:
    assert reg.add("dense", Dense, description="my words").description == "my words"


def test_decorator_registers_and_returns_the_object(reg: Registry[object]) -> None:
    @reg.decorator("dense", config=Settings)
    class MyDense:
        """Mine."""

    assert reg.get("dense").obj is MyDense
    assert reg.get("dense").config is Settings


def test_names_are_sorted(reg: Registry[object]) -> None:
    reg.add("zeta", Dense)
    reg.add("alpha", BM25)
    assert reg.names() == ["alpha", "zeta"]


def test_re_registering_the_same_object_is_a_no_op(reg: Registry[object]) -> None:
    reg.add("bm25", BM25)
    reg.add("bm25", BM25)
    assert reg.get("bm25").obj is BM25
    assert reg.names() == ["bm25"]


def test_two_objects_with_the_same_name_are_an_error(reg: Registry[object]) -> None:
    reg.add("bm25", BM25)
    with pytest.raises(PluginError) as info:
        reg.add("bm25", Dense)
    text = str(info.value)
    assert "two retriever plugins are both named 'bm25'" in text
    assert "rename" in text
    assert reg.get("bm25").obj is BM25  # the first registration survives


def test_same_name_from_another_module_is_an_error(reg: Registry[object]) -> None:
    reg.add("bm25", BM25, module="pkg_a.retrievers")
    with pytest.raises(PluginError, match=r"pkg_a\.retrievers and pkg_b\.retrievers"):
        reg.add("bm25", Dense, module="pkg_b.retrievers")


def test_config_must_be_a_pydantic_model(reg: Registry[object]) -> None:
    with pytest.raises(PluginError, match="config must be a pydantic model class"):
        reg.add("bm25", BM25, dict)  # type: ignore[arg-type]


# -- unknown names -----------------------------------------------------------


def test_unknown_name_lists_available_names_and_suggests_the_nearest(
    reg: Registry[object],
) -> None:
    reg.add("bm25", BM25)
    reg.add("dense", Dense)
    with pytest.raises(PluginError) as info:
        reg.get("bm52")
    err = info.value
    assert "no retriever named 'bm52'" in err.message
    assert "available: bm25, dense" in err.message
    assert err.hint == "did you mean 'bm25'?"
    assert err.key is None
    assert "did you mean 'bm25'?" in str(err)


def test_unknown_name_names_the_config_key(reg: Registry[object]) -> None:
    reg.add("bm25", BM25)
    with pytest.raises(PluginError) as info:
        reg.get("bm52", key="retriever.name")
    assert info.value.key == "retriever.name"
    assert str(info.value).startswith("error: config key retriever.name: no retriever named")


def test_unknown_name_without_close_match_has_no_suggestion(reg: Registry[object]) -> None:
    reg.add("bm25", BM25)
    with pytest.raises(PluginError) as info:
        reg.get("colbert")
    assert info.value.hint is None
    assert "available: bm25" in info.value.message


def test_unknown_name_in_an_empty_registry(reg: Registry[object]) -> None:
    with pytest.raises(PluginError, match=r"\(none installed\)"):
        reg.get("bm25")


# -- scoped ---------------------------------------------------------------------


def test_scoped_restores_the_registry(reg: Registry[object]) -> None:
    reg.add("bm25", BM25)
    with reg.scoped() as scoped:
        assert scoped is reg
        reg.add("dense", Dense)
        assert reg.names() == ["bm25", "dense"]
    assert reg.names() == ["bm25"]
    assert reg.get("bm25").obj is BM25


def test_scoped_restores_after_an_exception(reg: Registry[object]) -> None:
    def fail_inside_scope() -> None:
        with reg.scoped():
            reg.add("dense", Dense)
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        fail_inside_scope()
    assert reg.names() == []


def test_scoped_allows_a_temporary_replacement_to_be_undone(reg: Registry[object]) -> None:
    reg.add("bm25", BM25)
    with reg.scoped():
        reg._specs.pop("bm25")  # a test may drop a plugin for its scope
        reg.add("bm25", Dense)
        assert reg.get("bm25").obj is Dense
    assert reg.get("bm25").obj is BM25


# -- configure ----------------------------------------------------------------


def _spec(reg: Registry[object], config: type[BaseModel] | None) -> PluginSpec:
    return reg.add("bm25", BM25, config)


def test_configure_validates_into_the_model(reg: Registry[object]) -> None:
    cfg = configure(_spec(reg, Settings), {"k1": 0.9}, "retriever")
    assert isinstance(cfg, Settings)
    assert cfg.k1 == 0.9
    assert cfg.b == 0.75


def test_configure_names_the_key_and_the_constraint(reg: Registry[object]) -> None:
    with pytest.raises(ConfigError) as info:
        configure(_spec(reg, Settings), {"k1": -1}, "retriever")
    text = str(info.value)
    assert info.value.key == "retriever.k1"  # machine-readable too, for tools and tests
    assert text.startswith(
        "error: config key retriever.k1: invalid settings for retriever 'bm25': "
        "Input should be greater than 0 (got -1)"
    )
    assert "accepts: k1, b" in text  # the hint lists the fields
    assert info.value.__cause__ is None  # no pydantic traceback chained


def test_configure_reports_unknown_keys(reg: Registry[object]) -> None:
    with pytest.raises(ConfigError) as info:
        configure(_spec(reg, Settings), {"k11": 3}, "retriever")
    assert info.value.key == "retriever.k11"
    assert (
        "config key retriever.k11: invalid settings for retriever 'bm25': unknown key (got 3); "
        "did you mean 'k1'?" in str(info.value)
    )
    # a name like none of the fields gets no guess (`x` in the test below)


def test_configure_reports_every_problem(reg: Registry[object]) -> None:
    with pytest.raises(ConfigError) as info:
        configure(_spec(reg, Settings), {"k1": 0, "b": 2, "x": 1}, "retriever")
    text = str(info.value)
    assert info.value.key == "retriever"  # several problems: the plugin's section
    assert "retriever.k1: Input should be greater than 0 (got 0)" in text
    assert "retriever.b: Input should be less than or equal to 1 (got 2)" in text
    assert "retriever.x: unknown key (got 1);" not in text  # like no field: no guess
    assert "retriever.x: unknown key (got 1)" in text


def test_configure_reports_missing_required_keys(reg: Registry[object]) -> None:
    with pytest.raises(ConfigError, match=r"dataset\.path: invalid .*: required but not set"):
        configure(_spec(reg, Required), {}, "dataset")


def test_configure_a_plugin_without_settings(reg: Registry[object]) -> None:
    spec = _spec(reg, None)
    assert configure(spec, {}, "retriever") is None
    with pytest.raises(ConfigError) as info:
        configure(spec, {"k1": 1}, "retriever")
    err = info.value
    assert "takes no settings" in err.message
    assert err.key == "retriever"
    assert err.got == "k1"


# -- entry-point discovery from an installed distribution ---------------------


def _write_dist(root: Path, dist: str, entry_points: str, modules: dict[str, str]) -> None:
    info = root / f"{dist}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points).lstrip())
    for name, source in modules.items():
        (root / f"{name}.py").write_text(textwrap.dedent(source))


@pytest.fixture
def install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., None]]:
    """Put a fake distribution on sys.path; undo registrations and imports afterwards."""
    imported: list[str] = []

    def _install(dist: str, entry_points: str, modules: dict[str, str]) -> None:
        root = tmp_path / dist
        root.mkdir()
        _write_dist(root, dist, entry_points, modules)
        imported.extend(modules)
        monkeypatch.syspath_prepend(str(root))
        importlib.invalidate_caches()

    with RETRIEVERS.scoped():
        yield _install
    for name in imported:
        sys.modules.pop(name, None)


FAKEPLUG = {
    "fakeplug_mod": '''
        """A third party's retriever, registered with the public decorator."""
        from evalframe.plugin.registry import retriever


        @retriever("fake_ret")
        class FakeRetriever:
            """A fake retriever for tests."""
        ''',
}


def test_entry_point_plugin_is_found_and_imported_lazily(install: Callable[..., None]) -> None:
    assert "fakeplug_mod" not in sys.modules
    install("fakeplug", "[evalframe.retrievers]\nfake_ret = fakeplug_mod\n", FAKEPLUG)

    assert "fake_ret" in RETRIEVERS.names()
    assert "fake_ret" in RETRIEVERS
    assert "fakeplug_mod" not in sys.modules  # listing names imports nothing

    spec = RETRIEVERS.get("fake_ret")
    assert "fakeplug_mod" in sys.modules
    assert spec.name == "fake_ret"
    assert spec.kind == "retriever"
    assert spec.obj.__name__ == "FakeRetriever"
    assert spec.module == "fakeplug_mod"
    assert spec.description == "A fake retriever for tests."
    assert RETRIEVERS.get("fake_ret") is spec  # the second lookup is cached


def test_scoped_discovery_leaves_nothing_behind(tmp_path: Path) -> None:
    """scoped() + sys.modules cleanup + sys.path restore undo a discovered plugin completely."""
    before = list(RETRIEVERS.names())
    _write_dist(tmp_path, "fakeplug", "[evalframe.retrievers]\nfake_ret = fakeplug_mod\n", FAKEPLUG)
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.syspath_prepend(str(tmp_path))
            importlib.invalidate_caches()
            with RETRIEVERS.scoped():
                assert RETRIEVERS.get("fake_ret").obj.__name__ == "FakeRetriever"
                assert "fake_ret" in RETRIEVERS._specs
            assert "fake_ret" not in RETRIEVERS._specs  # the registration is gone ...
            assert "fake_ret" in RETRIEVERS.names()  # ... though the dist is still on sys.path
        assert RETRIEVERS.names() == before  # and once sys.path is restored, so is the listing
    finally:
        sys.modules.pop("fakeplug_mod", None)
    assert "fakeplug_mod" not in sys.modules


def test_unknown_name_suggests_an_entry_point_name(install: Callable[..., None]) -> None:
    install("fakeplug", "[evalframe.retrievers]\nfake_ret = fakeplug_mod\n", FAKEPLUG)
    with pytest.raises(PluginError) as info:
        RETRIEVERS.get("fake_rte", key="retriever.name")
    assert info.value.hint == "did you mean 'fake_ret'?"
    assert "fake_ret" in info.value.message
    assert "fakeplug_mod" not in sys.modules  # an error message imports nothing either


def test_entry_point_module_that_registers_nothing(install: Callable[..., None]) -> None:
    install(
        "emptyplug",
        "[evalframe.retrievers]\nempty_ret = fakeplug_empty\n",
        {"fakeplug_empty": '"""Registers nothing."""\nVALUE = 1\n'},
    )
    with pytest.raises(PluginError) as info:
        RETRIEVERS.get("empty_ret")
    text = str(info.value)
    assert "fakeplug_empty" in text
    assert "registered no retriever named 'empty_ret'" in text
    assert "@retriever('empty_ret')" in text  # the hint says how to fix it
    assert "empty_ret" not in RETRIEVERS._specs


def test_entry_point_module_that_cannot_be_imported(install: Callable[..., None]) -> None:
    install(
        "brokenplug",
        "[evalframe.retrievers]\nbroken_ret = fakeplug_broken\n",
        {"fakeplug_broken": "import fakeplug_no_such_dependency\n"},
    )
    with pytest.raises(PluginError) as info:
        RETRIEVERS.get("broken_ret")
    err = info.value
    assert "could not be imported" in err.message
    assert "'fakeplug_broken'" in err.message
    assert err.got is not None
    assert "fakeplug_no_such_dependency" in err.got


def test_entry_point_may_name_a_class_directly(install: Callable[..., None]) -> None:
    install(
        "classplug",
        "[evalframe.retrievers]\ncls_ret = fakeplug_cls:ClsRetriever\n",
        {"fakeplug_cls": 'class ClsRetriever:\n    """Named by the entry point."""\n'},
    )
    spec = RETRIEVERS.get("cls_ret")
    assert spec.obj.__name__ == "ClsRetriever"
    assert spec.module == "fakeplug_cls"


# -- duplicate detection and load_all ----------------------------------------------


def test_two_distributions_claiming_one_name_is_an_error_naming_both(
    install: Callable[..., None],
) -> None:
    """plugins.md: two distributions registering one name is an error naming both.
    Before, the entry points collapsed into one by install order and the other plugin
    was ignored (its settings then refused as unknown keys)."""
    install("plug_a", "[evalframe.retrievers]\ntwin = twin_a\n", {"twin_a": "X = 1\n"})
    install("plug_b", "[evalframe.retrievers]\ntwin = twin_b\n", {"twin_b": "X = 2\n"})
    with pytest.raises(PluginError) as err:
        RETRIEVERS.get("twin")
    message = err.value.message
    assert "two retriever plugins are both named 'twin'" in message
    assert "twin_a (plug_a)" in message and "twin_b (plug_b)" in message
    assert "twin_a" not in sys.modules and "twin_b" not in sys.modules  # neither imported
    _, broken = RETRIEVERS.load_all()
    assert any("both named 'twin'" in line for line in broken)


def test_a_plugin_named_like_a_built_in_is_said_by_plugins_list(
    install: Callable[..., None],
) -> None:
    """A name evalframe registers itself wins, and the entry point's module is never
    imported: `plugins list` says the plugin is shadowed rather than dropping it."""
    from evalframe.plugin.registry import METRICS

    install(
        "judgedplug",
        "[evalframe.metrics]\nJudged = judged_mod\n",
        {"judged_mod": "X = 1\n"},
    )
    _, broken = METRICS.load_all()
    assert [line for line in broken if "Judged" in line] == [
        "metric Judged: entry point 'judged_mod' of judgedplug is shadowed by evalframe's "
        "built-in 'Judged'; rename the plugin"
    ]


def test_two_different_metric_definitions_with_the_same_name_are_an_error(
    reg: Registry[object],
) -> None:
    import numpy as np

    from evalframe.metrics import MetricDef, MetricParams

    def first(m: object, k: int | None, p: object) -> np.ndarray:
        return np.zeros(1)

    def second(m: object, k: int | None, p: object) -> np.ndarray:
        return np.ones(1)

    for kernel in (first, second):
        assert kernel.__module__ == __name__
    reg.add("Dup", MetricDef("Dup", first, MetricParams, "optional", "first"), module=__name__)
    with pytest.raises(PluginError, match="both named 'Dup'"):
        reg.add(
            "Dup", MetricDef("Dup", second, MetricParams, "optional", "second"), module=__name__
        )


def test_load_all_reports_a_broken_plugin_without_hiding_the_others(
    install: Callable[..., None],
) -> None:
    group = "evalframe.test_load_all"
    install(
        "loadallplug",
        f"[{group}]\nbroken = fakeplug_la_broken\ngood = fakeplug_la:Good\n",
        {
            "fakeplug_la": 'class Good:\n    """Loads fine."""\n',
            "fakeplug_la_broken": "import fakeplug_no_such_dependency\n",
        },
    )
    reg: Registry[object] = Registry("retriever", group)
    assert reg.names() == ["broken", "good"]
    specs, broken = reg.load_all()
    assert [s.name for s in specs] == ["good"]
    assert specs[0].description == "Loads fine."
    assert len(broken) == 1
    assert broken[0].startswith("retriever broken: ")
    assert "could not be imported" in broken[0]


def test_a_config_field_called_name_is_refused_because_yaml_cannot_reach_it() -> None:
    """`name` selects the plugin (retriever.name=bm25), so a setting with that name is dead."""
    from pydantic import BaseModel

    from evalframe.core.errors import PluginError
    from evalframe.plugin.registry import Registry

    class Shadowed(BaseModel):
        name: str = "x"

    class Plugin:
        """A plugin whose setting would be shadowed."""

    reg: Registry[object] = Registry("dataset", "evalframe.test_nothing")
    with pytest.raises(PluginError, match="selects the plugin"):
        reg.add("shadowed", Plugin, Shadowed)


def test_a_tracker_with_a_misspelt_hook_is_refused_when_it_registers() -> None:
    """Hooks are found by name when they fire; a typo would never be called (pluggy checks too)."""
    from evalframe.plugin.registry import TRACKERS

    class Typo:
        """Logs runs somewhere."""

        def on_run_ends(self, context: object, outcome: object) -> None: ...

    class Fine:
        """Logs runs somewhere."""

        def on_run_end(self, context: object, outcome: object) -> None: ...

        def upload(self) -> None: ...

    with TRACKERS.scoped() as reg:
        with pytest.raises(PluginError) as err:
            reg.add("typo", Typo)
        assert "on_run_ends" in str(err.value) and "did you mean 'on_run_end'" in str(err.value)
        assert "typo" not in reg.names()
        reg.add("fine", Fine)


def test_a_plugin_first_imported_inside_a_scope_is_found_after_it(tmp_path: Path) -> None:
    """The scope drops the registration, but the module stays imported: get() restores it."""
    _write_dist(tmp_path, "fakeplug", "[evalframe.retrievers]\nfake_ret = fakeplug_mod\n", FAKEPLUG)
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.syspath_prepend(str(tmp_path))
            importlib.invalidate_caches()
            with RETRIEVERS.scoped():
                first = RETRIEVERS.get("fake_ret")
            assert "fake_ret" not in RETRIEVERS._specs
            assert RETRIEVERS.get("fake_ret") is first  # not "registered nothing"
            with RETRIEVERS.scoped():
                pass
    finally:
        sys.modules.pop("fakeplug_mod", None)
        RETRIEVERS._specs.pop("fake_ret", None)


def test_a_distribution_installed_after_a_lookup_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Entry points are scanned once while nothing changes (dists.entry_points): a
    distribution installed into a folder already on sys.path changes that folder's
    modification time, and the next lookup scans again."""
    site = tmp_path / "site"
    site.mkdir()
    past = 1_000_000_000  # the folder as an install long ago left it
    os.utime(site, (past, past))
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    assert "late_ret" not in RETRIEVERS.names()
    _write_dist(
        site,
        "lateplug",
        """
        [evalframe.retrievers]
        late_ret = lateplug_mod
        """,
        {},
    )
    importlib.invalidate_caches()
    assert "late_ret" in RETRIEVERS.names()
    assert {ep.name for ep in entry_points("evalframe.retrievers")} >= {"late_ret", "bm25"}
