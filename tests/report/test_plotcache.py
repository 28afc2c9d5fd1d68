"""The plots kept in the cache folder (``plotcache.kept_in``): found again only for the
same data, and never a reason for a page to fail."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalframe.core.store import namespaces
from evalframe.report import plotcache, plots
from evalframe.report.plotdata import Curves, LatencyData
from tests.conftest import Project

CURVES = {"this run": Curves(ks=[1, 2, 3], values={"Recall": [0.2, 0.5, 0.75]})}


def _entries(cache: Path) -> int:
    """Plots kept in ``cache`` (as ``evalframe cache info`` counts them)."""
    return namespaces(cache).get(plotcache.NAMESPACE, (0, 0))[0]


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Count the figures actually drawn (``_svg`` is where every plot is rendered)."""
    drawn: list[str] = []
    render = plots._svg

    def counted(fig, name, label):  # type: ignore[no-untyped-def]  # test double
        drawn.append(name)
        return render(fig, name, label)

    monkeypatch.setattr(plots, "_svg", counted)
    return drawn


def test_the_same_data_is_drawn_once_and_found_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    drawn = _counting(monkeypatch)
    with plotcache.kept_in(tmp_path):
        first = plots.curves_svg(CURVES)
    with plotcache.kept_in(tmp_path):  # another page, another store opened on the folder
        again = plots.curves_svg(CURVES)
    assert again == first and drawn == ["curves"]
    assert _entries(tmp_path) == 1


def test_other_data_or_another_name_is_another_plot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    drawn = _counting(monkeypatch)
    # a change far below what the SVG shows is still other data: drawn, and kept apart
    moved = {"this run": Curves(ks=[1, 2, 3], values={"Recall": [0.2, 0.5, 0.7500000001]})}
    other = {"this run": Curves(ks=[1, 2, 3], values={"Recall": [0.2, 0.5, 0.6]})}
    with plotcache.kept_in(tmp_path):
        a = plots.curves_svg(CURVES)
        b = plots.curves_svg(moved)
        c = plots.curves_svg(other)
        d = plots.curves_svg(CURVES, name="multi-curves")  # ids salted by name
    assert len(drawn) == 4 and _entries(tmp_path) == 4
    assert b == a and len({a, c, d}) == 3


def test_other_drawing_code_or_matplotlib_is_another_plot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The key holds the drawing module's source and matplotlib's version: a plot
    kept by other code is not shown by this one."""
    drawn = _counting(monkeypatch)
    with plotcache.kept_in(tmp_path):
        plots.curves_svg(CURVES)
    assert plotcache._version("evalframe.report.plots") != plotcache._version("elsewhere")
    monkeypatch.setattr(plotcache, "_version", lambda module: "the code after an upgrade")
    with plotcache.kept_in(tmp_path):
        plots.curves_svg(CURVES)
    assert len(drawn) == 2 and _entries(tmp_path) == 2


def test_long_data_is_spelled_whole_not_abbreviated() -> None:
    """NumPy's repr abbreviates past 1,000 items; two latency lists that differ in
    the middle must not share a key."""
    values = [float(i) for i in range(5000)]
    changed = [*values[:2500], 2500.5, *values[2501:]]
    spelled = []
    for v in (values, changed):
        out: list[str] = []
        plotcache._spell(LatencyData(values=v, p50=1.0, p95=2.0), out)
        spelled.append("".join(out))
    assert spelled[0] != spelled[1] and "2500.5" in spelled[1]
    # a NumPy scalar is its Python value; a list is not a tuple
    out_np: list[str] = []
    out_py: list[str] = []
    plotcache._spell([np.int64(3), np.float64(0.5), np.bool_(True)], out_np)
    plotcache._spell([3, 0.5, True], out_py)
    assert out_np == out_py
    out_t: list[str] = []
    plotcache._spell((3, 0.5, True), out_t)
    assert "".join(out_t) != "".join(out_py)


def test_a_value_the_key_cannot_spell_is_drawn_and_not_kept(tmp_path: Path) -> None:
    with plotcache.kept_in(tmp_path):
        with pytest.raises(plotcache._NoKeyError):
            plotcache._spell({"x": object()}, [])
        svg = plots.curves_svg(CURVES, name=object())  # type: ignore[arg-type]  # on purpose
    assert svg.startswith("<svg ")
    assert _entries(tmp_path) == 0


def test_a_cache_folder_that_cannot_be_used_only_means_drawing(tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    with plotcache.kept_in(blocked):
        svg = plots.curves_svg(CURVES)
    assert svg.startswith("<svg ")
    with plotcache.kept_in(None):
        assert plots.curves_svg(CURVES) == svg


@pytest.mark.slow
def test_a_warm_runs_page_is_the_same_and_never_imports_matplotlib(project: Project) -> None:
    """A second run of unchanged data finds every plot in the cache: its page equals the
    first one but for the date, and matplotlib is not even imported."""
    args = [
        f"dataset.path={project.golden}",
        f"corpus.path={project.corpus}",
        "tracking.name=none",
    ]
    first = project.run(*args, "hydra.run.dir=first")
    assert first.code == 0, first.stderr
    env_cache = project.root / ".cache"
    assert _entries(env_cache) >= 3  # curves, scores, latency at least
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "evalframe", *args, "hydra.run.dir=second"],
        cwd=project.root,
        env={**os.environ, "EVALFRAME_CACHE_DIR": str(env_cache)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "| matplotlib" not in proc.stderr  # -X importtime lists every module imported
    pages = [
        re.sub(r"<dt>date</dt><dd>[^<]*</dd>", "", (project.root / d / "report.html").read_text())
        for d in ("first", "second")
    ]
    assert pages[0] == pages[1]
    assert "<svg " in pages[1]


def test_evalframe_report_finds_the_plots_in_the_runs_cache_folder(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run's page, then ``evalframe report`` of it and of two runs side by side: the
    second drawing of each finds every plot in the runs' cache folder."""
    from evalframe.app.cli import main
    from tests.report.test_pages import run

    run(project, "alpha")
    run(project, "beta", depth=4)
    cache = project.root / "cache"  # the runs' output.cache_dir
    kept = _entries(cache)
    assert kept > 0
    drawn = _counting(monkeypatch)
    a, b = project.root / "alpha", project.root / "beta"
    before = (a / "report.html").read_text()
    assert main(["report", str(a)]) == 0
    assert drawn == [] and (a / "report.html").read_text() == before
    assert main(["report", str(a), str(b), "--out", str(project.root / "both")]) == 0
    first = len(drawn)
    assert first >= 1 and _entries(cache) == kept + first  # the side-by-side plots are new
    assert main(["report", str(a), str(b), "--out", str(project.root / "again")]) == 0
    assert len(drawn) == first  # ... and found the second time
    pages = [(project.root / d / "report.html").read_text() for d in ("both", "again")]
    assert pages[0] == pages[1]
    capsys.readouterr()


_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=12,
)


def _same(a: object, b: object) -> bool:
    """Equal, and of the same types all the way down (True is not 1, a list not a tuple)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        assert isinstance(b, dict)
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple))
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return repr(a) == repr(b)  # -0.0 and 0.0 are two values here
    return a == b


@given(_VALUES, _VALUES)
@settings(max_examples=300, deadline=None)
def test_two_values_share_a_key_only_when_they_are_the_same(a: object, b: object) -> None:
    spelled_a: list[str] = []
    spelled_b: list[str] = []
    plotcache._spell(a, spelled_a)
    plotcache._spell(b, spelled_b)
    assert ("\x00".join(spelled_a) == "\x00".join(spelled_b)) == _same(a, b)


def test_a_cache_folder_another_user_owns_is_left_out_not_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`evalframe report RUN` of a run made by root (output.cache_dir /root/.cache/...):
    Path.is_dir() raised PermissionError and the page failed, exit 2, where the page
    needs no plot cache. Root is never refused, so the refusal is made here."""
    import types

    from evalframe.report import page

    theirs = tmp_path / "theirs"
    theirs.mkdir()
    view = types.SimpleNamespace(config={"output": {"cache_dir": str(theirs)}})
    assert page._cache_dir(view) == theirs  # type: ignore[arg-type]  # only .config is read
    real = Path.is_dir

    def refused(self: Path) -> bool:
        if self == theirs:
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "is_dir", refused)
    assert page._cache_dir(view) is None  # type: ignore[arg-type]
    monkeypatch.undo()
    monkeypatch.setattr(page.os, "access", lambda path, mode: False)  # readable, not writable
    assert page._cache_dir(view) is None  # type: ignore[arg-type]
