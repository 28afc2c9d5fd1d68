"""Every built-in metric passes the contract a third party's metric is held to."""

from __future__ import annotations

from evalframe.plugin.registry import METRICS
from evalframe.testing import MetricContract

#: The built-ins, as pyproject.toml's evalframe.metrics entry points declare them: one
#: contract class each, so a failure names the metric (``TestnDCGContract``)
BUILTINS = sorted(
    name for name in METRICS.names() if METRICS.get(name).module.startswith("evalframe.metrics.")
)

for _name in BUILTINS:
    globals()[f"Test{_name}Contract"] = type(
        f"Test{_name}Contract", (MetricContract,), {"plugin_name": _name}
    )


def test_the_built_ins_are_all_here() -> None:
    """The list above is not empty by accident (a changed module path would empty it)."""
    assert {"P", "R", "RR", "AP", "nDCG", "Hit", "bpref", "IPrec"} <= set(BUILTINS)
