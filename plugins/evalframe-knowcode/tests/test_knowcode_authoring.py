"""KnowCode's authoring rules (§3.1, §7.2, §9) as findings of `golden validate`."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
from evalframe_knowcode.authoring import authoring_findings

from evalframe.app.golden_cli import main

SHIPPED = Path(__file__).resolve().parents[3] / "evalframe" / "data" / "knowcode"
E = "src/pkg/parsers.py::MarkdownParser.parse_file"
F = "src/pkg/parsers.py"


def narrative(words: int) -> str:
    return " ".join(["word"] * words)


def good(**changes: Any) -> dict[str, Any]:
    """A record that follows every rule: medium, two entities, 3 + 1 facts, 80 words."""
    record = {
        "query_id": "q1",
        "query_text": "Where do we turn Markdown files into sections?",
        "task_type": "explain",
        "difficulty": "medium",
        "difficulty_rationale": "two methods, one call apart",
        "expected_entities": [E, "src/pkg/parsers.py::MarkdownParser.parse_text"],
        "expected_files": [F],
        "must_mention_facts": ["a", "b", "c"],
        "must_not_mention_facts": ["x"],
        "canonical_narrative": narrative(80),
    }
    record.update(changes)
    return record


def checks(record: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(f.level, f.check, f.message) for f in authoring_findings(record)]


def test_a_record_that_follows_every_rule_has_no_finding() -> None:
    assert checks(good()) == []


@pytest.mark.parametrize(
    ("query", "leaked"),
    [
        (f"Explain {E}.", E),
        ("How does MarkdownParser.parse_file work?", "MarkdownParser.parse_file"),
        ("What does parse_file do with a path?", "parse_file"),
    ],
)
def test_a_query_that_contains_its_targets_id_is_a_warning(query: str, leaked: str) -> None:
    (finding,) = checks(good(query_text=query))
    assert finding[:2] == ("warning", "authoring-leak")
    assert f"query_text contains {leaked!r}, the id of its target {E}" in finding[2]


def test_one_word_names_are_words_not_leaks() -> None:
    record = good(
        query_text="How does the agent load its config?",
        expected_entities=["src/a.py::Agent.load", "src/a.py::Agent"],
        expected_files=["src/a.py"],
    )
    assert checks(record) == []


@pytest.mark.parametrize(
    ("task", "difficulty", "count", "flagged"),
    [
        ("explain", "easy", 1, False),
        ("explain", "easy", 2, True),
        ("explain", "medium", 1, True),
        ("explain", "medium", 3, False),
        ("explain", "medium", 4, True),
        ("explain", "hard", 2, True),
        ("explain", "hard", 6, False),
        ("locate", "medium", 1, False),  # §9.1 LOCATE: medium targets one entity
        ("locate", "hard", 2, False),  # §9.1 LOCATE: hard targets 2-3 entities
    ],
)
def test_difficulty_against_the_entity_count(
    task: str, difficulty: str, count: int, flagged: bool
) -> None:
    entities = [f"src/pkg/parsers.py::f{i}" for i in range(count)]
    record = good(task_type=task, difficulty=difficulty, expected_entities=entities)
    found = [f for f in checks(record) if f[1] == "authoring-difficulty"]
    assert bool(found) is flagged
    if found:
        assert found[0][0] == "warning"
        assert f"query has {count} expected entit" in found[0][2]


def test_a_tier_spelt_another_way_is_flagged_as_the_gates_would_miss_it() -> None:
    """'Easy' reads as the easy tier for the entity count, but a gate on difficulty=easy
    matches the exact value: the validator says so rather than passing it."""
    (found,) = checks(good(difficulty="Easy", expected_entities=[E]))
    assert found[:2] == ("warning", "authoring-difficulty")
    assert "difficulty 'Easy' is the tier 'easy' spelt another way; write it 'easy'" in found[2]
    assert checks(good(difficulty="easy", expected_entities=[E])) == []


def test_medium_and_hard_queries_need_a_difficulty_rationale() -> None:
    for difficulty, n in (("medium", 2), ("hard", 3)):
        entities = [f"src/pkg/parsers.py::f{i}" for i in range(n)]
        record = good(difficulty=difficulty, expected_entities=entities, difficulty_rationale=" ")
        assert [f[1] for f in checks(record)] == ["authoring-rationale"]
    easy = good(difficulty="easy", expected_entities=[E], difficulty_rationale=None)
    assert checks(easy) == []


@pytest.mark.parametrize(
    ("mention", "must_not", "messages"),
    [
        (2, 1, ["must_mention_facts holds 2 facts; the oracle writes 3–8 (§9.2)"]),
        (9, 1, ["must_mention_facts holds 9 facts; the oracle writes 3–8 (§9.2)"]),
        (3, 0, ["must_not_mention_facts holds 0 facts; the oracle writes 1–3 (§9.2)"]),
        (8, 4, ["must_not_mention_facts holds 4 facts; the oracle writes 1–3 (§9.2)"]),
    ],
)
def test_fact_counts(mention: int, must_not: int, messages: list[str]) -> None:
    record = good(must_mention_facts=["f"] * mention, must_not_mention_facts=["n"] * must_not)
    assert [(f[1], f[2]) for f in checks(record)] == [("authoring-facts", m) for m in messages]


@pytest.mark.parametrize(("words", "flagged"), [(79, True), (80, False), (250, False), (251, True)])
def test_narrative_length(words: int, flagged: bool) -> None:
    found = checks(good(canonical_narrative=narrative(words)))
    assert found == (
        [
            (
                "warning",
                "authoring-narrative",
                f"canonical_narrative has {words} words; §9.2 asks for 80–250",
            )
        ]
        if flagged
        else []
    )
    assert [f[1] for f in checks(good(canonical_narrative=None))] == ["authoring-narrative"]


def test_general_queries_record_a_classifier_expectation() -> None:
    general = good(task_type="general")
    assert [f[1] for f in checks(general)] == ["authoring-classifier"]
    assert checks({**general, "classifier_expectation": "explain"}) == []
    assert checks({**general, "metadata": {"classifier_expectation": "debug"}}) == []


def run(*args: str) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["validate", *args, "--json"])
    return code, json.loads(out.getvalue())


def test_validate_reports_them_as_warnings_or_errors_or_not_at_all(tmp_path: Path) -> None:
    golden = tmp_path / "golden_v1.0.json"
    general = good(query_id="q2", task_type="general", query_text="Tell me about the parser.")
    golden.write_text(json.dumps([good(), general], indent=2))
    code, report = run(str(golden), "--min-queries", "0")
    assert code == 0
    (finding,) = [f for f in report["findings"] if f["check"].startswith("authoring")]
    assert finding["level"] == "warning" and finding["check"] == "authoring-classifier"
    assert finding["location"] == f"{golden}:{golden.read_text().splitlines().index('  {', 5) + 1}"
    code, report = run(str(golden), "--min-queries", "0", "--authoring", "error")
    assert code == 1 and report["counts"]["error"] == 1
    code, report = run(str(golden), "--min-queries", "0", "--authoring", "off")
    assert code == 0 and not [f for f in report["findings"] if f["check"].startswith("author")]


def test_the_shipped_golden_set_follows_every_authoring_rule_and_passes_the_gate() -> None:
    code, report = run(str(SHIPPED / "golden_v1.0.json"), "--source-root", str(SHIPPED / "code"))
    assert code == 0
    assert report["counts"] == {"error": 0, "warning": 0, "info": 1}  # the label histogram
    assert report["queries"] == 40
