"""Step A and B at their boundaries: the 1.5× headroom, plan overflow, query ids (§10.1 A, B)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalframe.build.plan import assign_ids, id_offset, plan_cells, quota
from evalframe.core.errors import DataError
from tests.build.build_helpers import Script, build, jsonl, rules_of, scripted, step_file

__all__ = ["scripted"]


@pytest.mark.parametrize(
    ("target", "headroom", "expected"),
    [
        (0, 1.5, 0),  # an empty cell asks nothing
        (1, 1.5, 2),  # ceil(1.5) = 2
        (2, 1.5, 3),  # 3 exactly
        (3, 1.5, 5),  # ceil(4.5) = 5
        (4, 1.5, 6),
        (7, 1.5, 11),  # ceil(10.5) = 11
        (10, 1.1, 11),  # 11 exactly; float 1.1 * 10 = 11.000000000000002 would give 12
        (3, 1.0, 3),  # no headroom
    ],
)
def test_a_cell_asks_its_authors_for_ceil_headroom_times_its_target(
    target: int, headroom: float, expected: int
) -> None:
    assert quota(target, headroom) == expected


def test_the_plan_is_read_in_knowcodes_order_whatever_the_files_order() -> None:
    cells, path = plan_cells({"general": {"hard": 1}, "LOCATE": {"medium": 2, "easy": 1}}, 1.5)
    assert path is None
    assert [(c.name, c.target, c.quota) for c in cells] == [
        ("locate/easy", 1, 2),
        ("locate/medium", 2, 3),
        ("general/hard", 1, 2),
    ]
    ids = assign_ids(cells, offset=40)
    assert ids == {
        "locate/easy": ["q_00041", "q_00042"],
        "locate/medium": ["q_00043", "q_00044", "q_00045"],
        "general/hard": ["q_00046", "q_00047"],
    }


@pytest.mark.parametrize(
    ("plan", "fragment"),
    [
        ({"lookup": {"easy": 1}}, "task type 'lookup' is outside the sampling matrix"),
        ({"locate": {"trivial": 1}}, "difficulty 'trivial' is outside the sampling matrix"),
        ({"locate": {"easy": 1, "EASY": 2}}, "locate/easy is given twice"),
        ({"locate": {"easy": 0}}, "asks for no query"),
        ({"locate": {"easy": -1}}, "the target must be a count >= 0"),
    ],
)
def test_a_plan_outside_the_matrix_is_refused_before_any_call(plan: dict, fragment: str) -> None:
    with pytest.raises(DataError) as err:
        plan_cells(plan, 1.5)
    assert fragment in err.value.message
    assert err.value.key == "plan"


def test_a_plan_file_error_names_the_file(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text("locate: {easy: 2}\nreview: {impossible: 1}\n")
    with pytest.raises(DataError) as err:
        plan_cells(str(plan), 1.5)
    assert err.value.path == str(plan) and err.value.key == "plan"


def test_new_ids_continue_after_the_blessed_sets_highest() -> None:
    assert id_offset([]) == 0
    assert id_offset(["q_00003", "q_00012", "q_00007"]) == 12
    assert id_offset(["a", "b", "c"]) == 3  # not numbered: after as many as there are


def test_the_authors_are_called_once_per_slot(tmp_path: Path, scripted: Script) -> None:
    plan = {"locate": {"easy": 1, "medium": 3}, "debug": {"hard": 4}}
    # slots: ceil(1.5·1) + ceil(1.5·3) + ceil(1.5·4) = 2 + 5 + 6 = 13
    code, status, batch, _ = build(tmp_path, plan)
    assert scripted.calls["author"] == 13
    assert len(jsonl(batch / "00_candidates.jsonl")) == 13
    assert code == 0 and status == "awaiting_review"


def test_a_candidate_written_outside_its_cell_is_plan_overflow(
    tmp_path: Path, scripted: Script
) -> None:
    def author(request):  # type: ignore[no-untyped-def]
        record = {
            "query_id": request.query_id,
            "query_text": "where?",
            "task_type": request.task_type,
            "difficulty": request.difficulty,
            "target_entity_ids": [
                f"pkg/m{int(request.query_id[2:])}.py::f{int(request.query_id[2:])}"
            ],
        }
        if request.query_id == "q_00002":
            record["difficulty"] = "hard"  # asked for locate/easy
        return record

    scripted.author = author
    _, _, batch, _ = build(tmp_path, {"locate": {"easy": 2}})
    assert rules_of(batch)["q_00002"] == "plan-overflow"
    assert "not its cell locate/easy" in step_file(batch, "author")["rejected"][0]["reason"]
    assert "q_00002" not in step_file(batch, "dedup")["accepted"]


@pytest.mark.parametrize(("survivors", "overflow"), [(2, []), (3, ["q_00003"])])
def test_a_cell_keeps_its_target_and_rejects_the_rest_as_overflow(
    tmp_path: Path, scripted: Script, survivors: int, overflow: list[str]
) -> None:
    """Target 2, headroom 1.5: 3 candidates. With 2 survivors nothing overflows; with 3
    the last in plan order does."""
    if survivors == 2:
        real = scripted.oracle

        def oracle(request):  # type: ignore[no-untyped-def]
            record = real(request)
            if request.candidate.query_id == "q_00001":
                record["expected_entities"] = [{"entity_id": "pkg/m1.py::nope"}]
            return record

        scripted.oracle = oracle
    _, _, batch, _ = build(tmp_path, {"explain": {"medium": 2}})
    pool = step_file(batch, "adversary")["pool"]
    assert len(pool) == 2
    assert [q for q, r in rules_of(batch).items() if r == "plan-overflow"] == overflow
