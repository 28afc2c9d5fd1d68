"""Build the frozen parts of evalframe/data/knowcode_analyses/ (see its README).

Two steps, each re-runnable:

``corpus``  every module-level function, class and method of the listed
            evalframe files becomes one document ``path::Qualified.name`` whose
            text is its signature and docstring (read with ``ast``).
``run``     the system's recorded output: BM25 (evalframe's bm25 plugin) over
            that corpus gives each golden query's top 10; the hand-written
            ``answers.jsonl`` adds the sufficiency confidence, the local answer,
            tokens and latency. Together they are ``run.jsonl``, which the
            run_file retriever reads.

    python tools/make_knowcode_analyses.py corpus
    python tools/make_knowcode_analyses.py run
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalframe.core.io import atomic_write  # needs the repo root on sys.path first

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "evalframe" / "data" / "knowcode_analyses"
FILES = [
    "evalframe/core/io.py",
    "evalframe/core/types.py",
    "evalframe/core/messages.py",
    "evalframe/core/records.py",
    "evalframe/core/reader/jsonfiles.py",
    "evalframe/assess/results.py",
    "evalframe/assess/stats.py",
    "evalframe/assess/gates.py",
    "evalframe/assess/runfolder.py",
    "evalframe/metrics/order.py",
    "evalframe/retrieval/retrieve.py",
    "evalframe/retrieval/cache.py",
    "evalframe/plugin/registry.py",
    "evalframe/plugin/hooks.py",
    "evalframe/pipeline/config.py",
]


def _signature(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> str:
    if isinstance(node, ast.ClassDef):
        bases = ", ".join(ast.unparse(b) for b in node.bases)
        return f"class {node.name}({bases})" if bases else f"class {node.name}"
    return f"def {node.name}({ast.unparse(node.args)})"


def entities(rel: str) -> list[dict[str, str]]:
    tree = ast.parse((ROOT / rel).read_text(encoding="utf-8"))
    out = []

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{node.name}"
                doc = ast.get_docstring(node) or ""
                out.append(
                    {"id": f"{rel}::{name}", "text": f"{name}\n{_signature(node)}\n{doc}".strip()}
                )
                if isinstance(node, ast.ClassDef):
                    visit(node.body, f"{name}.")

    visit(tree.body, "")
    return out


def build_corpus() -> None:
    docs = [e for rel in FILES for e in entities(rel)]
    atomic_write(DATA / "corpus.jsonl", "".join(json.dumps(d) + "\n" for d in docs))
    print(f"{len(docs)} entities -> {DATA / 'corpus.jsonl'}")


def build_run() -> None:
    from evalframe.core.types import Corpus, Document
    from evalframe.golden.load import load_golden
    from evalframe.plugin.protocols import PluginContext, Query
    from evalframe.plugin.registry import RETRIEVERS, configure

    golden = load_golden(DATA / "golden_v1.0.json", "knowcode").golden
    lines = (DATA / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    corpus = Corpus.build("entities", (Document(**json.loads(x)) for x in lines))
    spec = RETRIEVERS.get("bm25")
    bm25 = spec.obj(configure(spec, {}, "retriever"), PluginContext(corpus=corpus))
    answers = {}
    for line in (DATA / "answers.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        answers[record.pop("id")] = record
    out = []
    for q in golden:
        ranking = bm25.retrieve(Query(id=q.id, text=q.text), 10)
        results = [{"id": d, "score": round(s, 4)} for d, s in ranking.pairs()]
        out.append({"id": q.id, "results": results, **answers[q.id]})
    atomic_write(DATA / "run.jsonl", "".join(json.dumps(r) + "\n" for r in out))
    print(f"{len(out)} rankings -> {DATA / 'run.jsonl'}")


if __name__ == "__main__":
    {"corpus": build_corpus, "run": build_run}[sys.argv[1]]()
