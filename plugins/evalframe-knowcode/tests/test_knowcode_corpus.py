"""corpus=code_entities: a Python tree as file::Symbol documents (ast, the core reader)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from evalframe_knowcode.checks import SourceIndex, split_entity
from evalframe_knowcode.corpus import CodeEntitiesConfig, CodeEntitiesCorpus, identifier_words

from evalframe.core.errors import ConfigError, DataError
from evalframe.core.types import Corpus
from evalframe.plugin.protocols import PluginContext, Query
from evalframe.plugin.testing import CorpusLoaderContract

DATA = Path(__file__).parent / "data"
SHIPPED = Path(__file__).resolve().parents[3] / "evalframe" / "data" / "knowcode" / "code"

MODULE = '''\
"""A module with every kind of definition."""
from typing import TYPE_CHECKING

LIMIT = 3

if TYPE_CHECKING:
    def typed_only() -> None: ...


def helper(x):
    def closure():
        return x
    return closure


@decorator(
    option=True,
)
class Parser:
    """Parses things."""

    size: int = 1

    def parse_file(self, path):
        """Read the file."""
        return open(path).read()

    @property
    def name(self):
        return "p"

    @name.setter
    def name(self, value):
        pass

    class Inner:
        async def run(self):
            return 1
'''


def load(root: Path, **settings: object) -> Corpus:
    config = CodeEntitiesConfig(root=str(root), **settings)  # type: ignore[arg-type]  # test settings
    corpus: Corpus = CodeEntitiesCorpus(config, PluginContext()).load()
    return corpus


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "mod.py").write_text(MODULE, encoding="utf-8")
    (root / "top.py").write_text("def main():\n    return 0\n", encoding="utf-8")
    (root / "notes.txt").write_text("not python\n", encoding="utf-8")
    for skipped in (".venv/lib", "__pycache__", "node_modules/x"):
        (root / skipped).mkdir(parents=True)
        (root / skipped / "hidden.py").write_text("def nope():\n    pass\n")
    return root


class TestCodeEntitiesContract(CorpusLoaderContract):
    plugin_name = "code_entities"

    @pytest.fixture
    def loader(self, tree: Path) -> CodeEntitiesCorpus:
        return CodeEntitiesCorpus(CodeEntitiesConfig(root=str(tree)), PluginContext())


def test_functions_classes_and_methods_become_file_symbol_documents(tree: Path) -> None:
    corpus = load(tree)
    assert [d.id for d in corpus.documents] == [
        "pkg/mod.py::typed_only",
        "pkg/mod.py::helper",
        "pkg/mod.py::Parser",
        "pkg/mod.py::Parser.parse_file",
        "pkg/mod.py::Parser.name",
        "pkg/mod.py::Parser.Inner",
        "pkg/mod.py::Parser.Inner.run",
        "top.py::main",
    ]  # files sorted by path, entities in source order; no closure, no hidden folder
    docs = {d.id: d for d in corpus.documents}
    parser = docs["pkg/mod.py::Parser"].metadata
    # the decorator's first line starts the range (lines counted in MODULE by hand)
    assert parser == {
        "file": "pkg/mod.py",
        "symbol": "Parser",
        "kind": "class",
        "start_line": 16,
        "end_line": 38,
    }
    assert docs["pkg/mod.py::Parser.parse_file"].metadata["kind"] == "method"
    assert docs["pkg/mod.py::helper"].metadata["kind"] == "function"
    assert docs["pkg/mod.py::Parser.Inner.run"].metadata["start_line"] == 37
    # getter and setter are one entity: both texts, the range over both
    name = docs["pkg/mod.py::Parser.name"]
    assert name.metadata["definitions"] == 2
    assert (name.metadata["start_line"], name.metadata["end_line"]) == (28, 34)
    assert name.text.count("def name(") == 2


def test_text_is_header_source_and_identifier_words(tree: Path) -> None:
    docs = {d.id: d for d in load(tree).documents}
    text = docs["pkg/mod.py::Parser.parse_file"].text.splitlines()
    assert text[0] == "method Parser.parse_file in pkg/mod.py"
    assert text[1] == "    def parse_file(self, path):"
    assert text[-1] == "parse file parse file"  # header and def line: the words inside parse_file
    bare = {d.id: d for d in load(tree, header=False, identifier_words=False).documents}
    assert bare["top.py::main"].text == "def main():\n    return 0"
    assert identifier_words("read_json_array(MarkdownParser, BM25Retriever, x)") == [
        *("read", "json", "array", "markdown", "parser", "bm25", "retriever")
    ]


def test_a_class_outline_leaves_its_members_bodies_to_them(tree: Path) -> None:
    outline = {d.id: d.text for d in load(tree, identifier_words=False).documents}
    full = {d.id: d.text for d in load(tree, identifier_words=False, class_text="full").documents}
    parser = outline["pkg/mod.py::Parser"]
    assert '    """Parses things."""' in parser and "    size: int = 1" in parser
    assert "    def parse_file(self, path):\n        ..." in parser
    assert "open(path)" not in parser and "return 1" not in parser  # bodies belong to the methods
    assert "open(path)" in full["pkg/mod.py::Parser"] and "return 1" in full["pkg/mod.py::Parser"]
    assert outline["pkg/mod.py::Parser.parse_file"] == full["pkg/mod.py::Parser.parse_file"]


def test_kinds_include_and_exclude_select_documents(tree: Path) -> None:
    assert {d.metadata["kind"] for d in load(tree, kinds=["class"]).documents} == {"class"}
    assert [d.id for d in load(tree, include=["top.py"]).documents] == ["top.py::main"]
    assert all(d.id.startswith("top.py") for d in load(tree, exclude=["pkg/**"]).documents)


def test_the_same_tree_gives_the_same_corpus(tree: Path) -> None:
    first, again = load(tree), load(tree)
    assert first.content_hash == again.content_hash
    assert [d.model_dump() for d in first.documents] == [d.model_dump() for d in again.documents]


def test_every_document_id_resolves_in_the_mechanical_gate() -> None:
    """One definition of an entity serves both: what is retrievable resolves."""
    corpus = load(SHIPPED)
    index = SourceIndex(SHIPPED)
    assert len(corpus) == 200
    for doc in corpus.documents:
        file, symbol = split_entity(doc.id)
        symbols = index.symbols(file)
        assert isinstance(symbols, set) and symbol in symbols, doc.id


def test_a_file_that_is_not_utf8_is_a_located_error(tree: Path) -> None:
    (tree / "pkg" / "latin.py").write_bytes(b'def f():\n    return "caf\xe9"\n')
    with pytest.raises(DataError) as err:
        load(tree)
    assert err.value.path is not None and err.value.path.endswith("latin.py")
    assert (err.value.line, err.value.column) == (2, 16)
    assert "not UTF-8" in err.value.message


def test_a_syntax_error_names_its_line_and_how_to_skip_it(tree: Path) -> None:
    (tree / "pkg" / "broken.py").write_text("def ok():\n    pass\n\ndef broken(:\n")
    with pytest.raises(DataError) as err:
        load(tree)
    assert err.value.line == 4 and err.value.path is not None
    assert err.value.path.endswith("pkg/broken.py")
    assert "does not parse as Python" in err.value.message
    assert "corpus.exclude=['pkg/broken.py']" in (err.value.hint or "")


def test_on_error_skip_warns_once_with_the_count(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tree / "pkg" / "broken.py").write_text("def broken(:\n")
    (tree / "pkg" / "latin.py").write_bytes(b"x = '\xe9'\n")
    corpus = load(tree, on_error="skip")
    assert not any("broken" in d.id or "latin" in d.id for d in corpus.documents)
    err = capsys.readouterr().err
    assert err.count("warning:") == 1
    assert "2 source file(s) skipped (corpus.on_error=skip)" in err
    assert "pkg/broken.py, pkg/latin.py" in err


def test_bad_roots_and_empty_trees_name_the_setting(tmp_path: Path) -> None:
    with pytest.raises(DataError) as err:
        load(tmp_path / "nowhere")
    assert err.value.key == "corpus.root"
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError) as err:
        load(tmp_path / "empty")
    assert err.value.key == "corpus.include"
    (tmp_path / "consts").mkdir()
    (tmp_path / "consts" / "c.py").write_text("A = 1\n")
    with pytest.raises(DataError) as err:
        load(tmp_path / "consts")
    assert err.value.key == "corpus.kinds"


def git(cwd: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
    }
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def test_a_committed_revision_is_read_with_git_show(tree: Path) -> None:
    git(tree, "init", "-q")
    git(tree, "add", "pkg/mod.py", "top.py")
    git(tree, "commit", "-qm", "one")
    (tree / "top.py").write_text("def main():\n    return 0\n\n\ndef added_later():\n    pass\n")
    assert "top.py::added_later" in load(tree).ids()
    at_head = load(tree, rev="HEAD")
    assert "top.py::added_later" not in at_head.ids() and "top.py::main" in at_head.ids()
    with pytest.raises(ConfigError) as err:
        load(tree, rev="no-such-rev")
    assert err.value.key == "corpus.rev"
    plain = tree.parent / "plain"
    plain.mkdir()
    (plain / "a.py").write_text("def a():\n    pass\n")
    with pytest.raises(ConfigError, match="not inside a Git repository"):
        load(plain, rev="HEAD")


@pytest.mark.slow
def test_bm25_retrieves_code_entities_end_to_end(tmp_path: Path) -> None:
    """The sample golden set over the sample code: no run file, no external index."""
    env = {**os.environ, "EVALFRAME_CACHE_DIR": str(tmp_path / "cache")}
    out = tmp_path / "out"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "evalframe",
            "dataset=knowcode",
            f"dataset.path={DATA / 'golden_v1.0.json'}",
            f"dataset.source_root={DATA}",
            "corpus=code_entities",
            f"corpus.root={DATA}",
            "metrics=knowcode",
            "depth=10",
            f"hydra.run.dir={out}",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    first = {}
    for line in (out / "run.trec").read_text().splitlines():
        qid, _, doc, rank, *_ = line.split()
        if rank == "1":
            first[qid] = doc
    # q1 asks for the function that parses markdown files
    assert first["q1"].startswith("src/knowcode/parsers/markdown_parser.py::MarkdownParser")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["golden_set"]["provenance"]["drift"] == []


# 15 s of one worker of a 600 s budget (it encodes the whole code corpus): the dense
# retriever runs end to end in the suite on a smaller corpus (plugins/evalframe-dense);
# this pairing with KnowCode's entities runs in `make test-all`
@pytest.mark.extended
def test_dense_retrieves_code_entities(tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers")
    from evalframe_dense.retriever import DenseConfig, DenseRetriever

    corpus = load(DATA)
    retriever = DenseRetriever(DenseConfig(), PluginContext(corpus=corpus, cache_dir=tmp_path))
    ranking = retriever.retrieve(
        Query(id="q", text="which setting holds the sufficiency threshold"), 3
    )
    assert ranking is not None and ranking.doc_ids[0] == "src/knowcode/config.py::AppConfig"
