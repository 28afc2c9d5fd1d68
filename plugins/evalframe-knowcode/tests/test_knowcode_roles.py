"""The offline ast roles of `evalframe golden build`: their contracts, real records from a
tree read with ast, an adversary that re-derives each claim, and every planted fault."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest
from evalframe_knowcode.checks import SourceIndex, check_record
from evalframe_knowcode.phrasing import phrase
from evalframe_knowcode.roles import (
    AstAdversary,
    AstAdversaryConfig,
    AstAuthor,
    AstAuthorConfig,
    AstOracle,
    AstOracleConfig,
    ClaimsJudge,
    ClaimsJudgeConfig,
)

from evalframe.plugin.protocols import PluginContext
from evalframe.plugin.roles import (
    AdversaryReport,
    AdversaryRequest,
    AuthorRequest,
    JudgeRequest,
    OracleAnswer,
    OracleRequest,
    QueryCandidate,
    SourceRef,
)
from evalframe.plugin.testing import (
    AdversaryContract,
    AuthorContract,
    JudgeContract,
    OracleContract,
)

STORE = '''
"""A tiny store."""


class StoreError(Exception):
    """Raised when the store refuses."""


def load_settings(path):
    """Read the settings file into a dictionary of options."""
    if not path:
        raise StoreError("no settings file was given")
    return {"path": path}


def save_record(record, folder):
    """Write one record to the folder on disk."""
    options = load_settings(folder)
    check_record_shape(record)
    print(options)
'''
CHECKS = '''
def check_record_shape(record):
    """Refuse a record without an identifier or a body."""
    if "id" not in record:
        raise ValueError("a record needs an id")
    return True


def count_records(folder):
    """Count the records kept in a folder."""
    return len(folder)


def list_folders(root):
    """Return the names of the folders under a root."""
    return sorted(root)


def remove_record(record, folder):
    """Delete one record from the folder on disk."""
    folder.discard(record)
'''


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> SourceRef:
    root = tmp_path_factory.mktemp("tree")
    (root / "app").mkdir()
    (root / "app/store.py").write_text(textwrap.dedent(STORE))
    (root / "app/checks.py").write_text(textwrap.dedent(CHECKS))
    return SourceRef(root=str(root))


PLAN = {"locate/easy": 2, "locate/medium": 1, "debug/easy": 1}


def author_requests(source: SourceRef) -> list[AuthorRequest]:
    out, n = [], 0
    for cell, count in PLAN.items():
        task, difficulty = cell.split("/")
        for slot in range(count):
            n += 1
            out.append(
                AuthorRequest(
                    query_id=f"q_{n:05d}",
                    task_type=task,
                    difficulty=difficulty,
                    slot=slot,
                    count=count,
                    plan=PLAN,
                    seed=n,
                    source=source,
                )
            )
    return out


def ctx() -> PluginContext:
    return PluginContext()


def candidates(source: SourceRef) -> list[QueryCandidate]:
    author = AstAuthor(AstAuthorConfig(), ctx())
    return [QueryCandidate.model_validate(author.author(r).record) for r in author_requests(source)]


def answers(source: SourceRef, **faults: str) -> list[OracleAnswer]:
    oracle = AstOracle(AstOracleConfig(faults=faults), ctx())  # type: ignore[arg-type]
    return [
        OracleAnswer.model_validate(oracle.answer(OracleRequest(candidate=c, source=source)).record)
        for c in candidates(source)
    ]


def reports(source: SourceRef, found: list[OracleAnswer]) -> list[AdversaryReport]:
    adversary = AstAdversary(AstAdversaryConfig(), ctx())
    return [
        AdversaryReport.model_validate(
            adversary.review(AdversaryRequest(answer=a, source=source)).record
        )
        for a in found
    ]


class TestAstAuthor(AuthorContract):
    plugin_name = "ast"

    @pytest.fixture
    def role(self) -> AstAuthor:
        return AstAuthor(AstAuthorConfig(), ctx())

    @pytest.fixture
    def requests(self, source: SourceRef) -> list[Any]:
        return author_requests(source)


class TestAstOracle(OracleContract):
    plugin_name = "ast"

    @pytest.fixture
    def role(self) -> AstOracle:
        return AstOracle(AstOracleConfig(), ctx())

    @pytest.fixture
    def requests(self, source: SourceRef) -> list[Any]:
        return [OracleRequest(candidate=c, source=source) for c in candidates(source)]


class TestAstAdversary(AdversaryContract):
    plugin_name = "ast"

    @pytest.fixture
    def role(self) -> AstAdversary:
        return AstAdversary(AstAdversaryConfig(), ctx())

    @pytest.fixture
    def requests(self, source: SourceRef) -> list[Any]:
        return [AdversaryRequest(answer=a, source=source) for a in answers(source)]


class TestClaimsJudge(JudgeContract):
    plugin_name = "claims"

    @pytest.fixture
    def role(self) -> ClaimsJudge:
        return ClaimsJudge(ClaimsJudgeConfig(), ctx())

    @pytest.fixture
    def requests(self, source: SourceRef) -> list[Any]:
        found = answers(source)
        return [
            JudgeRequest(query=c, canonical_narrative=a.canonical_narrative, adversary=r)
            for c, a, r in zip(candidates(source), found, reports(source, found), strict=True)
        ]


def test_each_slot_gets_its_own_target_and_a_question_without_its_name(
    source: SourceRef,
) -> None:
    found = candidates(source)
    targets = [tuple(c.target_entity_ids) for c in found]
    assert len(set(targets)) == len(targets)
    debug = found[-1]
    assert debug.task_type == "debug"
    # an easy debug query quotes the error its one target raises, as a bug report would:
    # load_settings raises StoreError("no settings file was given"), check_record_shape
    # ValueError("a record needs an id")
    assert (debug.target_entity_ids, debug.query_text) in [
        (
            ["app/store.py::load_settings"],
            'I get a StoreError saying "no settings file was given". What is causing it?',
        ),
        (
            ["app/checks.py::check_record_shape"],
            'I get a ValueError saying "a record needs an id". What is causing it?',
        ),
    ]
    medium = found[2]
    assert len(medium.target_entity_ids) >= 2 and medium.difficulty_rationale
    for c in found:
        for target in c.target_entity_ids:
            assert target.split("::")[1] not in c.query_text


def test_the_oracle_answers_from_the_source_and_passes_the_gate(source: SourceRef) -> None:
    found = answers(source)
    index = SourceIndex(source.root)
    for answer in found:
        assert check_record(answer.model_dump(mode="json"), index) == []
        assert 3 <= len(answer.must_mention_facts) <= 8
        assert 80 <= len(answer.canonical_narrative.split()) <= 250
    save = next(a for a in found if a.expected_entities[0].entity_id.endswith("save_record"))
    assert save.expected_line_ranges[0].model_dump() == {
        "file": "app/store.py",
        "start": 16,
        "end": 20,
    }  # STORE's line 1 is empty (it starts with a newline); `def save_record` is line 16
    # and its five lines end at 20
    assert "`save_record` calls `check_record_shape`." in save.must_mention_facts


def test_the_adversary_supports_every_true_claim(source: SourceRef) -> None:
    found = answers(source)
    for report in reports(source, found):
        assert report.overall_verdict == "supported", report
        assert report.blocking_issues == []


@pytest.mark.parametrize(
    ("fault", "check"),
    [
        ("wrong_line_range", "line-range"),
        ("narrative_entity", "narrative"),
        ("nonexistent_entity", "entity"),
    ],
)
def test_a_planted_gate_fault_fails_its_gate_check(
    source: SourceRef, fault: str, check: str
) -> None:
    answer = answers(source, q_00001=fault)[0]
    findings = check_record(answer.model_dump(mode="json"), SourceIndex(source.root))
    assert [f.check for f in findings] == [check]


def test_an_unsupported_fact_is_refuted_and_the_judge_diverges(source: SourceRef) -> None:
    found = answers(source, q_00001="unsupported_fact")
    report = reports(source, found)[0]
    refuted = [c for c in report.claim_verdicts if c.verdict == "unsupported"]
    assert [c.claim_type for c in refuted] == ["must_mention_fact"]
    assert refuted[0].claim.endswith("raises `KeyError`.")
    assert refuted[0].citation is not None  # the lines it read
    judge = ClaimsJudge(ClaimsJudgeConfig(), ctx())
    query = candidates(source)[0]
    verdict = judge.judge(
        JudgeRequest(
            query=query, canonical_narrative=found[0].canonical_narrative, adversary=report
        )
    ).record
    assert verdict["verdict"] == "significant_divergence"


def test_a_line_range_off_its_entity_is_partial_or_unsupported(source: SourceRef) -> None:
    answer = answers(source)[0]
    first = answer.expected_line_ranges[0]
    moved = answer.model_copy(
        update={
            "expected_line_ranges": [
                first.model_copy(update={"start": first.start + 1}),  # overlaps: partial
                first.model_copy(update={"start": 1, "end": 2}),  # the module docstring
            ]
        }
    )
    report = reports(source, [moved])[0]
    ranges = [c.verdict for c in report.claim_verdicts if c.claim_type == "line_range"]
    assert ranges == ["partial", "unsupported"]
    assert report.overall_verdict == "unsupported"


def test_low_confidence_and_overlap_faults(source: SourceRef) -> None:
    assert answers(source, q_00002="low_confidence")[1].confidence == "low"
    author = AstAuthor(AstAuthorConfig(faults={"q_00002": "overlap"}), ctx())
    first, second = (
        QueryCandidate.model_validate(author.author(r).record) for r in author_requests(source)[:2]
    )
    assert first.target_entity_ids == second.target_entity_ids


@pytest.mark.parametrize(
    ("summary", "params", "expected"),
    [
        ("Write text to path via a temp file", (), "write text to path via a temp file"),
        ("Returns the records of a file", (), "return the records of a file"),
        (
            "The one-paragraph message shown to the user",
            (),
            "produce the one-paragraph message shown to the user",
        ),
        ("Count n occurrences of what; item names it", ("n", "what"), None),  # code, not prose
        ("Yield (line, value) for each line", (), None),
        ("A whole JSON file, parsed", (), None),
        ("True when every gate passed", (), None),
        ("Parse it", (), None),  # too short to ask about
    ],
)
def test_docstrings_become_a_developers_phrase_or_nothing(
    summary: str, params: tuple[str, ...], expected: str | None
) -> None:
    assert phrase(summary, params) == expected
