"""KnowCode's mechanical validation gate, de-duplication and agreement, on the sample codebase."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from evalframe_knowcode.checks import (
    SourceIndex,
    check_record,
    check_records,
    code_mentions,
    deduplicate_candidates,
    jaccard,
    labels_agree,
    narrative_mentions,
)
from evalframe_knowcode.dataset import KnowCodeConfig, KnowCodeDataset
from evalframe_knowcode.source import GitTree
from hypothesis import given, settings
from hypothesis import strategies as st

from evalframe.app.golden_cli import main
from evalframe.plugin.protocols import PluginContext

DATA = Path(__file__).parent / "data"
AGENT = "src/knowcode/llm/agent.py"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    target = tmp_path / "data"
    shutil.copytree(DATA, target)
    return target


def records() -> list[dict[str, Any]]:
    return json.loads((DATA / "golden_v1.0.json").read_text())


def problems(record: dict[str, Any], root: Path) -> list[tuple[str, str]]:
    return [(f.check, f.message) for f in check_record(record, SourceIndex(root))]


def test_the_sample_golden_set_passes_the_gate(root: Path) -> None:
    assert check_records(((None, r) for r in records()), root) == []


def test_entities_resolve_through_ast_top_level_and_nested(root: Path) -> None:
    extra = root / "src/knowcode/nested.py"
    extra.write_text(
        "raise SystemExit('importing this file would stop the tests')\n"
        "LIMIT = 3\n"
        "class Outer:\n"
        "    size: int = 1\n"
        "    class Inner:\n"
        "        async def run(self):\n"
        "            pass\n"
        "def helper():\n"
        "    def local():\n"
        "        pass\n"
    )
    ok = [
        "Outer",
        "Outer.Inner",
        "Outer.Inner.run",
        "Outer.size",
        "helper",
        "LIMIT",
    ]
    record = {
        "query_id": "n",
        "expected_entities": [f"src/knowcode/nested.py::{s}" for s in ok],
        "expected_files": ["src/knowcode/nested.py"],
    }
    assert problems(record, root) == []
    record["expected_entities"] = [
        "src/knowcode/nested.py::Inner.run",  # not top level
        "src/knowcode/nested.py::helper.local",  # a function's locals are not members
        "src/knowcode/nested.py::Outer.Inner.walk",
    ]
    found = problems(record, root)
    assert [c for c, _ in found] == ["entity"] * 3
    assert "defined there: Outer.Inner.run" in found[0][1]


def test_missing_files_and_unparseable_files_fail(root: Path) -> None:
    (root / "src/knowcode/broken.py").write_text("def oops(:\n")
    record = {
        "query_id": "x",
        "expected_entities": ["src/knowcode/broken.py::oops", "src/knowcode/gone.py::f"],
        "expected_files": ["src/knowcode/broken.py", "src/knowcode/gone.py"],
    }
    found = problems(record, root)
    assert (
        "file",
        "expected file src/knowcode/gone.py does not exist under the source root",
    ) in found
    messages = " | ".join(m for c, m in found if c == "entity")
    assert "broken.py::oops does not resolve: the file does not parse" in messages
    assert "gone.py::f does not resolve: the file does not exist" in messages


def test_an_entity_file_must_be_among_expected_files(root: Path) -> None:
    record = {
        "query_id": "x",
        "expected_entities": [f"{AGENT}::Agent.smart_answer", "src/knowcode/config.py::AppConfig"],
        "expected_files": [AGENT],
    }
    assert problems(record, root) == [
        (
            "entity-file",
            "src/knowcode/config.py::AppConfig: its file src/knowcode/config.py "
            "is not in expected_files",
        )
    ]


@pytest.mark.parametrize(
    ("ranges", "fragment"),
    [
        ([{"file": AGENT, "start": 13, "end": 9}], "lines 13-9"),
        ([{"file": AGENT, "start": 9, "end": 20}], "within its 19 lines"),
        ([{"file": AGENT, "start": 0, "end": 3}], "lines 0-3"),
        ([{"file": "src/nope.py", "start": 1, "end": 2}], "src/nope.py does not exist"),
        ([{"file": AGENT, "start": "9", "end": 13}], "must be integers"),
        ([{"file": AGENT}], "needs file, start and end"),
    ],
)
def test_line_ranges_must_lie_within_the_file(
    root: Path, ranges: list[dict[str, Any]], fragment: str
) -> None:
    record = {**records()[1], "expected_line_ranges": ranges}
    found = problems(record, root)
    assert len(found) == 1 and found[0][0] == "line-range"
    assert fragment in found[0][1]
    assert (
        problems({**record, "expected_line_ranges": [{"file": AGENT, "start": 1, "end": 19}]}, root)
        == []
    )


def test_source_evidence_is_checked_like_line_ranges(root: Path) -> None:
    record = {**records()[1], "source_evidence": [{"file": AGENT, "start": 160, "end": 221}]}
    assert [c for c, _ in problems(record, root)] == ["line-range"]


def test_the_narrative_may_only_name_what_the_structured_fields_hold(root: Path) -> None:
    base = records()[1]  # Agent.smart_answer in agent.py; files agent.py and config.py
    good = (
        f"The decision lives in Agent.smart_answer ({AGENT}:9-13). It compares "
        "`self.config.sufficiency_threshold` with the score and calls `smart_answer()`; "
        "see src/knowcode/config.py."
    )
    assert problems({**base, "canonical_narrative": good}, root) == []
    bad = (
        "It is decided in `ContextSynthesizer.compute` (src/knowcode/synth.py) and "
        "Agent.answer is called otherwise."
    )
    found = problems({**base, "canonical_narrative": bad}, root)
    assert [c for c, _ in found] == ["narrative"] * 3
    named = " ".join(m for _, m in found)
    assert "src/knowcode/synth.py" in named
    assert "ContextSynthesizer.compute" in named
    assert "Agent.answer" in named


def test_narrative_mentions() -> None:
    paths, names = narrative_mentions(
        "In `pkg/a.py` see `Parser.parse()` and Agent.run (pkg/b.py:3-9); not self.x or os.path."
    )
    assert paths == {"pkg/a.py", "pkg/b.py"}
    assert names == {"Parser.parse", "Agent.run"}


def test_the_dataset_method_locates_each_failure(root: Path) -> None:
    data = records()
    data[2]["expected_entities"].append("src/knowcode/parsers/python_parser.py::PythonParser.walk")
    golden = root / "golden_v1.0.json"
    golden.write_text(json.dumps(data, indent=2))
    loader = KnowCodeDataset(KnowCodeConfig(path=str(golden)), PluginContext())
    (finding,) = loader.mechanical_checks(root)
    assert finding.level == "error" and finding.check == "entity" and finding.query_id == "q3"
    starts = [i for i, line in enumerate(golden.read_text().splitlines(), 1) if line == "  {"]
    assert finding.location == f"{golden}:{starts[2]}"


def test_candidates_overlapping_an_accepted_one_by_more_than_half_are_rejected() -> None:
    cands = [
        {"query_id": "a", "target_entity_ids": ["m::A", "m::B"]},
        {"query_id": "b", "target_entity_ids": ["m::B", "m::C"]},  # 50%: kept
        {"query_id": "c", "target_entity_ids": ["m::A", "m::B", "m::D"]},  # 67% of a: rejected
        {"query_id": "d", "target_entity_ids": []},
        {"query_id": "e", "expected_entities": [{"entity_id": "m::E"}]},
    ]
    result = deduplicate_candidates(cands)
    assert [c["query_id"] for c in result.accepted] == ["a", "b", "e"]
    assert [(c["query_id"], why) for c, why in result.rejected] == [
        ("c", "67% of its targets overlap accepted candidate a"),
        ("d", "no target entities"),
    ]
    assert len(deduplicate_candidates(cands, max_overlap=0.7).accepted) == 4
    with pytest.raises(ValueError, match="at least 0"):
        deduplicate_candidates(cands, max_overlap=-0.1)


def _dedup_by_scanning(cands: list[dict[str, Any]], max_overlap: float) -> list[tuple[str, str]]:
    """The rule as the docstring states it: each candidate against every accepted one."""
    kept: list[tuple[str, set[str]]] = []
    out = []
    for c in cands:
        mine = set(c["target_entity_ids"])
        if not mine:
            out.append((c["query_id"], "no target entities"))
            continue
        for other, theirs in kept:
            if len(mine & theirs) / len(mine) > max_overlap:
                share = len(mine & theirs) / len(mine)
                out.append(
                    (
                        c["query_id"],
                        f"{share:.0%} of its targets overlap accepted candidate {other}",
                    )
                )
                break
        else:
            out.append((c["query_id"], "accepted"))
            kept.append((c["query_id"], mine))
    return out


@settings(max_examples=200, deadline=None)
@given(
    targets=st.lists(st.sets(st.sampled_from("ABCDEFGH"), max_size=5), max_size=25),
    max_overlap=st.sampled_from([0.0, 0.25, 0.5, 0.6, 2 / 3, 0.99, 1.0]),
)
def test_dedup_decides_as_comparing_with_every_accepted_candidate(
    targets: list[set[str]], max_overlap: float
) -> None:
    cands = [{"query_id": f"q{i}", "target_entity_ids": sorted(t)} for i, t in enumerate(targets)]
    result = deduplicate_candidates(cands, max_overlap=max_overlap)
    got = {c["query_id"]: "accepted" for c in result.accepted}
    got.update({c["query_id"]: why for c, why in result.rejected})
    assert [(q, got[q]) for q, _ in _dedup_by_scanning(cands, max_overlap)] == (
        _dedup_by_scanning(cands, max_overlap)
    )


def test_structural_jaccard_agreement() -> None:
    assert jaccard([], []) == 1.0
    assert jaccard(["a", "b"], ["b", "c"]) == pytest.approx(1 / 3)
    oracle = {
        "expected_entities": [{"entity_id": f"m::{x}"} for x in "ABCDE"],
        "expected_files": ["m"],
    }
    four = {"expected_entities": [f"m::{x}" for x in "ABCD"], "expected_files": ["m"]}
    agreement = labels_agree(oracle, four)
    assert agreement.entities == pytest.approx(0.8) and agreement.files == 1.0
    assert agreement.passed
    three = {"expected_entities": ["m::A", "m::B", "m::C"], "expected_files": ["m"]}
    assert not labels_agree(oracle, three).passed
    assert labels_agree(oracle, three, threshold=0.6).passed


def test_the_narrative_check_catches_every_entity_name_it_mentions(root: Path) -> None:
    """Issue #25 §4: the reference's example narrative names `_format_local_answer` and
    `self.answer`, methods beside Agent.smart_answer that its record does not list."""
    base = records()[1]  # expected: Agent.smart_answer only
    narrative = (
        "The local-or-LLM choice is made in Agent.smart_answer (src/knowcode/llm/agent.py:9-13). "
        "It gets context from `self.service.retrieve_context_for_query(query)`, compares "
        "`context.sufficiency_score` with `self.config.sufficiency_threshold` and, when it is "
        "high enough and `force_llm` is false, returns `_format_local_answer` with "
        "`source='local'`; otherwise it calls `self.answer(query)`."
    )
    found = problems({**base, "canonical_narrative": narrative}, root)
    assert found == [
        (
            "narrative",
            "canonical_narrative names `_format_local_answer`, an entity of the code "
            "(src/knowcode/llm/agent.py::Agent._format_local_answer) that is not among "
            "expected_entities",
        ),
        (
            "narrative",
            "canonical_narrative names `self.answer`, an entity of the code "
            "(src/knowcode/llm/agent.py::Agent.answer) that is not among expected_entities",
        ),
    ]
    # listing them makes the record consistent; attributes, variables and names the
    # code does not define (retrieve_context_for_query) are never entities
    listed = {
        **base,
        "canonical_narrative": narrative,
        "expected_entities": [
            f"{AGENT}::Agent.smart_answer",
            f"{AGENT}::Agent._format_local_answer",
            f"{AGENT}::Agent.answer",
        ],
    }
    assert problems(listed, root) == []
    # unbackticked: a call, a snake_case name and a CamelCase class are code too
    prose = {**base, "canonical_narrative": "It calls answer() and parse_module; see PythonParser."}
    assert sorted(m.split("`")[1] for _, m in problems(prose, root)) == [
        "PythonParser",
        "answer",
        "parse_module",
    ]


def test_code_mentions() -> None:
    text = (
        "In `self.answer(query)` and `_format_local_answer`, not `force_llm=True` or "
        "`source='local'`; it calls check_text(data) and self.cache.get, reads the_value, "
        "builds a MarkdownParser or BM25Retriever, never Agent, JSON or pkg/mod.py."
    )
    assert code_mentions(text) == {
        "self.answer",
        "_format_local_answer",
        "check_text",
        "self.cache.get",
        "the_value",
        "MarkdownParser",
        "BM25Retriever",
    }


def git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t"}
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def test_the_gate_runs_at_a_committed_revision(root: Path) -> None:
    """Issue #25 §4: `golden validate --rev REV` reads the source with git show REV:path."""
    git(root, "init", "-q")
    git(root, "add", "src")
    git(root, "commit", "-qm", "labels written against this")
    # uncommitted work: a method renamed, a file deleted
    agent = root / AGENT
    agent.write_text(agent.read_text().replace("def smart_answer", "def smarter_answer"))
    (root / "src/knowcode/config.py").unlink()
    args = ["validate", str(root / "golden_v1.0.json"), "--source-root", str(root)]
    args += ["--min-queries", "0", "--authoring", "off", "--json"]

    def findings(*extra: str) -> tuple[int, list[dict[str, Any]]]:
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            code = main([*args, *extra])
        return code, json.loads(out.getvalue())["findings"]

    code, on_disk = findings()
    assert code == 1
    assert {f["check"] for f in on_disk if f["level"] == "error"} == {"entity", "file"}
    assert any("(missing)" in f["message"] for f in on_disk if f["check"] == "drift")
    code, committed = findings("--rev", "HEAD")
    assert code == 0, committed
    assert not [f for f in committed if f["level"] != "info"]

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        assert main([*args, "--rev", "no-such-rev"]) == 2
    assert "no Git revision 'no-such-rev'" in err.getvalue()


def test_a_git_tree_reads_committed_bytes(root: Path) -> None:
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-qm", "c")
    (root / AGENT).write_text("# rewritten\n")
    tree = GitTree(root / "src", "HEAD")  # a subfolder of the repository
    assert "knowcode/llm/agent.py" in tree.files()
    assert tree.text("knowcode/llm/agent.py").startswith('"""The answering agent')
    assert not tree.exists("golden_v1.0.json")  # outside the subfolder
    assert SourceIndex(tree).symbols("knowcode/llm/agent.py") != "the file does not exist"
