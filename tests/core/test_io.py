"""Atomic writes: what every output file of a run goes through."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalframe.core.io import atomic_write


def test_outputs_follow_the_umask_not_mkstemps_private_mode(tmp_path: Path) -> None:
    """mkstemp's 0o600 would make every run file private to its writer (#16)."""
    mask = os.umask(0o022)
    os.umask(mask)
    text = atomic_write(tmp_path / "a.txt", "x")
    raw = atomic_write(tmp_path / "b.bin", b"\x00\x01")
    for path in (text, raw):
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~mask
    assert raw.read_bytes() == b"\x00\x01"


def test_json_outputs_are_strict_json_whatever_numbers_they_hold(tmp_path: Path) -> None:
    """NaN and ±inf are null (no JSON reader accepts them); NumPy scalars are plain numbers."""
    import json

    import numpy as np

    from evalframe.core.io import atomic_write_json

    payload = {
        "nan": float("nan"),
        "inf": float("inf"),
        "f32": np.float32(0.5),
        "i64": np.int64(7),
        "flag": np.bool_(True),
        "deep": [np.float64("-inf"), 1.5],
    }
    path = atomic_write_json(tmp_path / "x.json", payload)
    assert json.loads(path.read_text()) == {
        "nan": None,
        "inf": None,
        "f32": 0.5,
        "i64": 7,
        "flag": True,
        "deep": [None, 1.5],
    }


def test_chunks_are_written_whole_or_not_at_all(tmp_path: Path) -> None:
    from evalframe.core.io import atomic_write_chunks

    target = tmp_path / "out.trec"
    atomic_write_chunks(target, ["q1 Q0 a 1 2.0 t\n", b"q1 Q0 b 2 1.0 t\n"])
    assert target.read_text() == "q1 Q0 a 1 2.0 t\nq1 Q0 b 2 1.0 t\n"

    def failing() -> Iterator[str]:
        yield "partial line\n"
        raise RuntimeError("the producer failed halfway")

    with pytest.raises(RuntimeError):
        atomic_write_chunks(target, failing())
    assert target.read_text() == "q1 Q0 a 1 2.0 t\nq1 Q0 b 2 1.0 t\n"  # the old file, whole
    assert [p.name for p in tmp_path.iterdir()] == ["out.trec"]  # no temp file left
