"""Every setting of a shipped plugin is in its config file, so `key=value` sets it (#13 item 8).

Hydra refuses to override a key the composed config does not have unless it is
written `+key=value`; a setting missing from its plugin's YAML could only be set
that way, which nobody guesses (`dataset.require_meta=false` failed on knowcode).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from evalframe.plugin.registry import REGISTRIES
from tests.conftest import Project

ROOT = Path(__file__).resolve().parents[1]
GROUP_KIND = {
    "retriever": "retriever",
    "dataset": "dataset",
    "corpus": "corpus",
    "tracking": "tracker",
    # the roles of evalframe golden build
    "author": "author",
    "oracle": "oracle",
    "adversary": "adversary",
    "judge": "judge",
}
FILES = sorted(
    p
    for p in [*ROOT.glob("plugins/*/evalframe_*/conf/*/*.yaml"), *ROOT.glob("conf/*/*.yaml")]
    if p.parent.name in GROUP_KIND
)


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_plugin_config_file_lists_every_setting(path: Path) -> None:
    node = yaml.safe_load(path.read_text()) or {}
    name = node.get("name")
    if name in (None, "none"):
        return
    spec = REGISTRIES[GROUP_KIND[path.parent.name]].get(name)
    if spec.config is None:
        return
    missing = [f for f in spec.config.model_fields if f not in node]
    assert not missing, f"{path.relative_to(ROOT)} lacks {missing}: add them with their defaults"


def test_a_setting_missing_from_the_experiment_is_set_without_a_plus(project: Project) -> None:
    res = project.run("+experiment=knowcode", "dataset.require_meta=false", "--cfg", "job")
    assert res.code == 0, res.stderr
    assert "require_meta: false" in res.stdout
