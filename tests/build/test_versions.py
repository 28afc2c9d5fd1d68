"""Versions (golden_vMAJOR.MINOR, §10.2 item 5), the loader taking the newest unless pinned,
the source drift guard reused from the knowcode loader, and batch drift (§10.2 item 2)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from evalframe_knowcode.dataset import KnowCodeConfig, KnowCodeDataset
from scipy.stats import mannwhitneyu, norm

from evalframe.build.config import DriftSection
from evalframe.build.drift import compare
from evalframe.core.errors import DataError
from evalframe.golden.versions import (
    Version,
    list_versions,
    next_version,
    parse_version,
    resolve_version,
)
from evalframe.plugin.protocols import PluginContext
from tests.build.build_helpers import (
    Script,
    build,
    entity,
    fill_review,
    jsonl,
    scripted,
    step_file,
)

__all__ = ["scripted"]


def test_versions_compare_as_numbers(tmp_path: Path) -> None:
    for name in ("golden_v1.9.json", "golden_v1.10.json", "golden_v2.0.json", "golden.json"):
        (tmp_path / name).write_text("[]")
    assert [str(v) for v, _ in list_versions(tmp_path)] == ["1.9", "1.10", "2.0"]
    assert resolve_version(tmp_path).name == "golden_v2.0.json"
    assert resolve_version(tmp_path, "1.10").name == "golden_v1.10.json"
    assert resolve_version(tmp_path, "v1.9").name == "golden_v1.9.json"
    with pytest.raises(DataError) as err:
        resolve_version(tmp_path, "1.2")
    assert err.value.expected == "one of: 1.9, 1.10, 2.0"
    with pytest.raises(DataError):
        resolve_version(tmp_path / "golden_v1.9.json", "2.0")  # a file and another pin
    assert parse_version("golden_v3.4.json") == Version(3, 4)


@pytest.mark.parametrize(
    ("current", "schema_now", "schema", "expected"),
    [
        (None, None, "1.0.0", (Version(1, 0), "initial")),
        (Version(1, 0), "1.0.0", "1.0.0", (Version(1, 1), "additions")),
        (Version(1, 3), "1.0.0", "1.2.0", (Version(1, 4), "additions")),  # same major schema
        (Version(1, 3), "1.0.0", "2.0.0", (Version(2, 0), "schema")),
        (Version(2, 0), None, "1.0.0", (Version(3, 0), "schema")),  # unknown: a schema change
    ],
)
def test_minor_for_additions_major_for_a_schema_change(
    current: Version | None, schema_now: str | None, schema: str, expected: tuple
) -> None:
    assert next_version(current, schema_now, schema) == expected


def _bless(tmp: Path, plan: dict, batch: str, **over: object) -> Path:
    """Build, review every sampled record ``correct``, build again: the new version."""
    _, status, first, _ = build(tmp, plan, f"{batch}-a", headroom=1.0, **over)
    assert status == "awaiting_review"
    ids = [r["query_id"] for r in jsonl(first / "review_sample.jsonl")]
    review = fill_review(first, dict.fromkeys(ids, "correct"), tmp / f"{batch}.jsonl")
    code, status, second, _ = build(
        tmp, plan, f"{batch}-b", headroom=1.0, review={"file": str(review)}, **over
    )
    assert (code, status) == (0, "blessed"), json.loads((second / "batch.json").read_text())
    return second


def test_a_later_batch_is_a_minor_version_with_the_blessed_records(
    tmp_path: Path, scripted: Script
) -> None:
    plan = {"locate": {"easy": 3}}
    _bless(tmp_path, plan, "v10")
    out = tmp_path / "out"
    v10 = json.loads((out / "golden_v1.0.json").read_text())
    assert [r["query_id"] for r in v10] == ["q_00001", "q_00002", "q_00003"]
    asked: list[list[str]] = []
    real = scripted.author

    def author(request):  # type: ignore[no-untyped-def]
        asked.append(list(request.avoid_entity_ids))
        return real(request)

    scripted.author = author
    batch = _bless(tmp_path, plan, "v11")
    v11 = json.loads((out / "golden_v1.1.json").read_text())
    assert [r["query_id"] for r in v11] == [f"q_{i:05d}" for i in range(1, 7)]
    assert v11[:3] == v10  # the blessed records, untouched
    assert asked[0] == [entity(1), entity(2), entity(3)]  # what the set already covers
    meta = json.loads((out / "golden_v1.1.meta.json").read_text())
    assert (meta["version"], meta["change"], meta["previous_version"]) == (
        "1.1",
        "additions",
        "1.0",
    )
    assert meta["query_count"] == 6 and meta["added"] == 3
    assert meta["batches"] == ["v10-b", "v11-b"]
    assert step_file(batch, "review")["drift"]["skipped"].startswith("3 batch and 3 blessed")


def test_the_meta_file_records_what_step_h_asks_for(tmp_path: Path, scripted: Script) -> None:
    _bless(tmp_path, {"locate": {"easy": 2}, "debug": {"hard": 1}}, "v10")
    meta = json.loads((tmp_path / "out/golden_v1.0.meta.json").read_text())
    assert meta["cells"] == {"debug/hard": 1, "locate/easy": 2}
    assert meta["dataset_status"] == "blessed" and meta["query_count"] == 3
    hashes = meta["source_file_hashes"]
    assert sorted(hashes) == ["pkg/m1.py", "pkg/m2.py", "pkg/m3.py"]
    import hashlib

    expected = hashlib.sha256((tmp_path / "src/pkg/m1.py").read_bytes()).hexdigest()
    assert hashes["pkg/m1.py"] == expected
    assert meta["roles"]["oracle"] == {
        "plugin": "scripted",
        "distribution": None,
        "version": None,
        "model": "script/1",
    }
    assert set(meta["pipeline"]) == {"git_sha", "dirty", "evalframe"}
    spot = meta["spot_check"]
    assert spot["reviewers"] == ["tester"] and spot["sample"] == 3
    assert spot["rates"] == {"major_issue+wrong": 0.0, "minor_issue": 0.0, "correct": 1.0}


def test_a_schema_change_is_a_new_major_version(
    tmp_path: Path, scripted: Script, monkeypatch: pytest.MonkeyPatch
) -> None:
    _bless(tmp_path, {"locate": {"easy": 1}}, "v10")
    import evalframe.build.assemble as assemble

    monkeypatch.setattr(assemble, "SCHEMA_VERSION", "2.0.0")
    _bless(tmp_path, {"locate": {"easy": 1}}, "v20")
    v20 = json.loads((tmp_path / "out/golden_v2.0.json").read_text())
    assert [r["schema_version"] for r in v20] == ["2.0.0", "2.0.0"]
    assert json.loads((tmp_path / "out/golden_v2.0.meta.json").read_text())["change"] == "schema"


def test_the_loader_takes_the_newest_version_unless_one_is_pinned(
    tmp_path: Path, scripted: Script
) -> None:
    _bless(tmp_path, {"locate": {"easy": 1}}, "v10")
    _bless(tmp_path, {"locate": {"easy": 1}}, "v11")

    def load(**settings: object):  # type: ignore[no-untyped-def]
        config = KnowCodeConfig(
            path=str(tmp_path / "out"), source_root=str(tmp_path / "src"), **settings
        )  # type: ignore[arg-type]
        return KnowCodeDataset(config, PluginContext()).load()

    assert len(load()) == 2 and load().name == "golden_v1.1"
    assert len(load(version="1.0")) == 1
    assert load().provenance["blessed"] is True
    # `golden validate FOLDER --format knowcode` checks the newest, located at its lines
    from evalframe.golden.load import load_golden

    loaded = load_golden(tmp_path / "out", "knowcode", source_root=tmp_path / "src")
    newest = tmp_path / "out" / "golden_v1.1.json"
    starts = [i for i, line in enumerate(newest.read_text().splitlines(), 1) if line == "  {"]
    assert loaded.locations["q_00002"] == f"{newest}:{starts[1]}"  # the second record's `{`


def test_changed_source_stops_a_build_on_the_blessed_set_unless_allow_drift(
    tmp_path: Path, scripted: Script, capsys: pytest.CaptureFixture[str]
) -> None:
    _bless(tmp_path, {"locate": {"easy": 1}}, "v10")
    (tmp_path / "src/pkg/m1.py").write_text("def f1():\n    return 'changed'\n")
    with pytest.raises(DataError) as err:
        build(tmp_path, {"locate": {"easy": 1}}, "later")
    assert err.value.key == "allow_drift"
    assert "pkg/m1.py (changed)" in err.value.message
    _, status, _, _ = build(tmp_path, {"locate": {"easy": 1}}, "later2", allow_drift=True)
    assert status == "awaiting_review"
    assert "despite source drift" in capsys.readouterr().err


def _records(entities: list[int], cell: str = "locate/easy") -> list[dict]:
    task, difficulty = cell.split("/")
    return [
        {
            "task_type": task,
            "difficulty": difficulty,
            "expected_entities": [{"entity_id": f"e{i}"} for i in range(n)],
            "provenance": {"agreement": {"entities": 1.0, "files": 1.0}},
        }
        for n in entities
    ]


def test_drift_compares_entities_per_record_with_mann_whitney() -> None:
    blessed, batch = _records([1] * 6), _records([3] * 6)
    result = compare(blessed, batch, DriftSection(alpha=0.01, min_records=5))
    tests = {t["test"]: t for t in result["tests"]}
    # cells: one cell on both sides, nothing to test; structural scores all 1.0: p = 1
    assert set(tests) == {"entities_per_record", "structural_entities", "structural_files"}
    # by hand: U = 0, mean 18; all 12 values in two tie groups of 6, so
    # sigma^2 = 6·6/12 · (13 − (2·(6³−6))/(12·11)) = 3 · (13 − 420/132); with the
    # continuity correction z = (18 − 0.5) / sigma; p = 2·(1 − Φ(z))
    sigma = math.sqrt(3 * (13 - 420 / 132))
    p = 2 * norm.sf((18 - 0.5) / sigma)
    assert tests["entities_per_record"]["p"] == pytest.approx(p, rel=1e-9)
    assert p == pytest.approx(mannwhitneyu([3] * 6, [1] * 6).pvalue, rel=1e-9)
    assert tests["entities_per_record"]["level"] == pytest.approx(0.01 / 3)
    assert p < 0.01 / 3 and result["significant"]
    assert tests["structural_entities"]["p"] == 1.0


def test_the_same_distribution_is_not_drift() -> None:
    blessed = _records([1, 2, 2, 3, 1, 2], "explain/medium") + _records([1, 1], "locate/easy")
    batch = _records([2, 1, 3, 2, 2, 1], "explain/medium") + _records([1, 1], "locate/easy")
    result = compare(blessed, batch, DriftSection())
    assert not result["significant"] and {t["test"] for t in result["tests"]} >= {"cells"}


def test_a_drifting_batch_is_requeued(tmp_path: Path, scripted: Script) -> None:
    plan = {"explain": {"hard": 6}}
    _bless(tmp_path, plan, "v10")
    real = scripted.author

    def author(request):  # type: ignore[no-untyped-def]
        record = real(request)
        n = int(request.query_id[2:])
        record["target_entity_ids"] = [entity(3 * n), entity(3 * n + 1), entity(3 * n + 2)]
        return record

    scripted.author = author
    code, status, batch, _ = build(tmp_path, plan, "later", headroom=1.0)
    assert (code, status) == (1, "requeued")
    summary = json.loads((batch / "batch.json").read_text())
    assert summary["feedback"][0].startswith("drift in entities_per_record: mean 1.00 blessed")
    assert not (batch / "review_sample.jsonl").exists()  # no human time on a drifting batch
