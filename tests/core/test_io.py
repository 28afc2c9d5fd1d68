"""Atomic writes: what every output file of a run goes through."""

from __future__ import annotations

import os
import stat
from pathlib import Path

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
