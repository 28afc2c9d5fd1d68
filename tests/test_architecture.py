"""The architecture as tests: layers, no cycles, no heavy imports at module level, old paths.

docs/architecture.md draws the layers; the import-linter contracts in
pyproject.toml encode them, and this file runs them with the suite so that an
upward import fails a test, not only `make lint`.
"""

from __future__ import annotations

import ast
import importlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Libraries that cost seconds to import or pull in a GPU stack; the core and the
#: plugins import them inside the function that needs them, never at module level.
HEAVY = {"mlflow", "dvc", "torch", "sentence_transformers", "bm25s", "hydra", "matplotlib"}


def test_import_contracts_hold() -> None:
    """`lint-imports` keeps every contract in pyproject.toml (layers, cycles, forbidden)."""
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("import-linter is not installed (pip install -e '.[lint]')")
    proc = subprocess.run(
        [exe, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout


def _module_level_imports(path: Path) -> set[str]:
    """Top-level package names imported when the module is imported (not in functions)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Import):
                found.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module.split(".")[0])
            elif isinstance(node, ast.If):
                if "TYPE_CHECKING" not in ast.unparse(node.test):
                    visit(node.body)
                visit(node.orelse)
            elif isinstance(node, (ast.Try,)):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)
            elif isinstance(node, ast.ClassDef):
                visit(node.body)

    visit(tree.body)
    return found


#: Modules whose whole purpose is a heavy library, loaded only when that is used.
HEAVY_BY_DESIGN = {
    # Hydra callbacks and search-path plugins are only ever imported by Hydra itself.
    "evalframe/app/sweep.py": {"hydra"},
    "evalframe/app/dvc_hydra.py": {"hydra"},
}


@pytest.mark.parametrize(
    "tree",
    [
        "evalframe",
        *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "plugins").glob("*/evalframe_*")),
    ],
)
def test_no_heavy_import_at_module_level(tree: str) -> None:
    offenders = []
    for path in sorted((ROOT / tree).rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        heavy = (_module_level_imports(path) & HEAVY) - HEAVY_BY_DESIGN.get(rel, set())
        if heavy:
            offenders.append(f"{rel}: {', '.join(sorted(heavy))}")
    assert not offenders, "import these inside the function that needs them:\n" + "\n".join(
        offenders
    )


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("evalframe.types", "evalframe.core.types"),
        ("evalframe.errors", "evalframe.core.errors"),
        ("evalframe.records", "evalframe.core.records"),
        ("evalframe.io", "evalframe.core.io"),
        ("evalframe.protocols", "evalframe.plugin.protocols"),
        ("evalframe.registry", "evalframe.plugin.registry"),
        ("evalframe.hooks", "evalframe.plugin.hooks"),
        ("evalframe.results", "evalframe.assess.results"),
        ("evalframe.stats", "evalframe.assess.stats"),
        ("evalframe.gates", "evalframe.assess.gates"),
        ("evalframe.baseline", "evalframe.assess.baseline"),
        ("evalframe.compare", "evalframe.assess.compare"),
        ("evalframe.cache", "evalframe.retrieval.cache"),
        ("evalframe.config", "evalframe.pipeline.config"),
    ],
)
def test_module_paths_from_before_the_layers_still_import(old: str, new: str) -> None:
    """A third-party plugin written against the flat layout keeps working, unchanged."""
    assert importlib.import_module(old) is importlib.import_module(new)


def test_evalframe_testing_still_gives_every_suite_it_gave() -> None:
    """``evalframe.testing`` was the plugin layer's suites under an old path; it is the
    package of every kind's suites now, and gives the old ones as the same objects."""
    import evalframe.plugin.testing as plugin_layer
    import evalframe.testing as suites

    for name in plugin_layer.__all__:
        assert getattr(suites, name) is getattr(plugin_layer, name), name
    assert {"DatasetLoaderContract", "GateContract", "MetricContract", "TrackerContract"} <= set(
        suites.__all__
    )


def test_old_paths_work_in_from_imports() -> None:
    code = (
        "from evalframe.registry import retriever, RETRIEVERS\n"
        "from evalframe.protocols import PluginConfig\n"
        "import evalframe.plugin.registry as r\n"
        "assert retriever is r.retriever and RETRIEVERS is r.RETRIEVERS\n"
        "from evalframe.pipeline import run_experiment\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_every_core_module_is_short_or_says_why() -> None:
    """A module over ~500 lines either gets split or explains at its top why it is one piece."""
    long = []
    for path in sorted((ROOT / "evalframe").rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        if len(lines) > 520 and not any("one module because" in line for line in lines[:40]):
            long.append(f"{path.relative_to(ROOT)} ({len(lines)} lines)")
    assert not long, long
