"""The paid-call cache follows a role or solver plugin's code, not only its version.

A solver whose prompt lives in its code, edited in place (a module on ``PYTHONPATH``
or an editable install) under one version, must be called again once: answered from
the cache, the old prompt's replies would be scored as the new one's. A plugin whose
version identifies its code (a release) keeps the key it always had.
"""

from __future__ import annotations

import importlib
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalframe.mine.cache import CallCache, plugin_fingerprint
from evalframe.plugin.codeid import code_identity

MODULE = "ef_paid_prompt"
SOLVER = """
class Solver:
    PROMPT = "Answer with the tool's name."

    def solve(self, task):
        return self.PROMPT
"""
EDITED = SOLVER.replace("Answer with the tool's name.", "Answer with the tool's id.")


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "src").mkdir()
    path = tmp_path / "src" / f"{MODULE}.py"
    path.write_text(SOLVER)
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    yield path
    sys.modules.pop(MODULE, None)
    code_identity.cache_clear()


def _fingerprint() -> dict[str, Any]:
    """What a new process keys the solver's calls with (name, version, no config)."""
    code_identity.cache_clear()
    sys.modules.pop(MODULE, None)
    instance = importlib.import_module(MODULE).Solver()
    return plugin_fingerprint("solver", "prompt", "0.1.0", None, instance)


def test_a_solver_edited_in_place_has_another_key(plugin: Path) -> None:
    before = _fingerprint()
    assert before == _fingerprint()  # unchanged code: the same key, the cache's hits
    assert before["code"] == code_identity(MODULE)
    plugin.write_text(EDITED)  # the version stays 0.1.0
    shutil.rmtree(plugin.parent / "__pycache__", ignore_errors=True)
    after = _fingerprint()
    assert after["code"] != before["code"]
    inputs = {"task": "t1", "seed": 0}
    assert CallCache(None, after).key(inputs) != CallCache(None, before).key(inputs)


def test_a_call_without_an_instance_keeps_the_old_key() -> None:
    assert plugin_fingerprint("solver", "s", "1.0", None, None) == {
        "format": 1,
        "solver": "s",
        "version": "1.0",
        "config": {},
    }
