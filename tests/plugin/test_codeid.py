"""Which plugins' code joins cache keys (evalframe.plugin.codeid), and what its hash covers.

Each test writes a throwaway module or package (with a hand-written dist-info where a
test needs one, as pip would install it) into a temporary folder put on ``sys.path``.
``code_identity`` is cached per process; ``cache_clear()`` stands for the next run.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable, Iterator, Mapping
from importlib import metadata
from pathlib import Path

import pytest

from evalframe.plugin.codeid import code_identity, code_root, pinned_by_version
from evalframe.plugin.dists import learn_distribution

Writer = Callable[..., Path]


@pytest.fixture
def write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Writer]:
    """``write(folder, files, dist=None, direct_url=None) -> folder on sys.path``.

    ``dist`` adds ``<dist>-0.1.0.dist-info`` (METADATA and a retriever entry point for
    its first module), learnt as an entry point's distribution is when a run loads it;
    ``direct_url`` adds its PEP 610 ``direct_url.json``.
    """

    def make(
        folder: str,
        files: Mapping[str, str],
        dist: str | None = None,
        direct_url: dict[str, object] | None = None,
    ) -> Path:
        root = tmp_path / folder
        for relative, text in files.items():
            (root / relative).parent.mkdir(parents=True, exist_ok=True)
            (root / relative).write_text(text)
        monkeypatch.syspath_prepend(str(root))
        if dist is not None:
            info = root / f"{dist}-0.1.0.dist-info"
            info.mkdir()
            (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1.0\n")
            module = next(iter(files)).removesuffix(".py").replace("/", ".")
            module = module.removesuffix(".__init__")
            (info / "entry_points.txt").write_text(f"[evalframe.retrievers]\nx = {module}\n")
            if direct_url is not None:
                (info / "direct_url.json").write_text(json.dumps(direct_url))
            (entry,) = tuple(metadata.Distribution.at(info).entry_points)
            learn_distribution(entry)
        return root

    yield make
    code_identity.cache_clear()


def test_a_single_module_hashes_its_name_size_and_bytes(write: Writer) -> None:
    root = write("path", {"ef_cid_single.py": "X = 1\n"})
    by_hand = hashlib.sha256(b"ef_cid_single.py\x006\x00X = 1\n").hexdigest()[:16]
    assert code_root("ef_cid_single") == root / "ef_cid_single.py"
    assert code_identity("ef_cid_single") == by_hand


def test_a_package_changes_with_any_of_its_modules_and_nothing_else(write: Writer) -> None:
    root = write(
        "path",
        {
            "ef_cid_pkg/__init__.py": "",
            "ef_cid_pkg/retriever.py": "from ef_cid_pkg.words import split\n",
            "ef_cid_pkg/words.py": "def split(t):\n    return t.split()\n",
        },
    )
    assert code_root("ef_cid_pkg.retriever") == root / "ef_cid_pkg"
    first = code_identity("ef_cid_pkg.retriever")
    assert first is not None
    assert code_identity("ef_cid_pkg") == first  # the whole top-level package, either way

    # bytecode, data, a checkout's touch: not code, or not a change
    (root / "ef_cid_pkg/__pycache__").mkdir()
    (root / "ef_cid_pkg/__pycache__/words.cpython-311.pyc").write_bytes(b"\0\1")
    (root / "ef_cid_pkg/README.md").write_text("notes")
    (root / "ef_cid_pkg/words.py").write_text("def split(t):\n    return t.split()\n")
    code_identity.cache_clear()
    assert code_identity("ef_cid_pkg.retriever") == first

    # a helper module fixed in place: the plugin's results may change, so the hash does
    (root / "ef_cid_pkg/words.py").write_text("def split(t):\n    return t.lower().split()\n")
    assert code_identity("ef_cid_pkg.retriever") == first  # once per process: as loaded
    code_identity.cache_clear()
    assert code_identity("ef_cid_pkg.retriever") not in (None, first)


@pytest.mark.parametrize(
    ("case", "direct_url", "pinned"),
    [
        ("index", None, True),  # a release from an index: no direct_url.json
        ("editable", {"url": "file:///src/x", "dir_info": {"editable": True}}, False),
        ("folder", {"url": "file:///src/x", "dir_info": {}}, False),  # pip install ./x
        ("git", {"url": "https://g/x", "vcs_info": {"vcs": "git", "commit_id": "ab"}}, False),
    ],
)
def test_in_site_packages_only_a_release_from_an_index_is_pinned_by_its_version(
    write: Writer, case: str, direct_url: dict[str, object] | None, pinned: bool
) -> None:
    module = f"ef_cid_{case}.retriever"
    files = {f"ef_cid_{case}/__init__.py": "", f"ef_cid_{case}/retriever.py": "X = 1\n"}
    root = write(f"venv/lib/site-packages/{case}", files, f"ef_cid_{case}", direct_url)
    assert pinned_by_version(module, root / f"ef_cid_{case}") is pinned
    assert (code_identity(module) is None) is pinned


def test_a_dist_info_on_pythonpath_does_not_pin_the_code(write: Writer) -> None:
    """The audit's throwaway plugins: a folder on PYTHONPATH with a hand-written
    dist-info and no direct_url.json. Nothing installed it, so its files change freely."""
    files = {"ef_cid_loose/__init__.py": "", "ef_cid_loose/retriever.py": "X = 1\n"}
    root = write("p/loose", files, "ef_cid_loose")
    assert not pinned_by_version("ef_cid_loose.retriever", root / "ef_cid_loose")
    assert code_identity("ef_cid_loose.retriever") is not None


def test_no_hash_for_code_without_files_or_for_evalframe_itself(
    write: Writer, monkeypatch: pytest.MonkeyPatch
) -> None:
    notebook = type(sys)("ef_cid_notebook")  # a module made in a session: no file
    monkeypatch.setitem(sys.modules, "ef_cid_notebook", notebook)
    assert code_identity("ef_cid_notebook") is None
    assert code_identity("ef_cid_not_there") is None
    assert code_identity("") is None
    assert code_identity("evalframe.api.objects") is None  # python_object: its config says


def test_namespace_packages_are_looked_through(write: Writer) -> None:
    root = write(
        "ns",
        {
            "ef_cid_ns/team/__init__.py": "",
            "ef_cid_ns/team/retriever.py": "X = 1\n",
            "ef_cid_ns/other.py": "Y = 2\n",  # another distribution's, in the shared namespace
        },
    )
    assert code_root("ef_cid_ns.team.retriever") == root / "ef_cid_ns/team"
