"""A plugin's unexpected exception names the plugin and what it was asked (plugin.blame),
in the traceback's note and in the crash report's closing sentence (app.stderr)."""

from __future__ import annotations

import pytest

from evalframe.app.stderr import report_crash
from evalframe.assess.gates import GateSpec, run_gates
from evalframe.assess.results import GateResult, GateView
from evalframe.core.errors import DataError
from evalframe.plugin.blame import blamed, culprit, who
from evalframe.plugin.protocols import PluginContext
from evalframe.plugin.registry import GATES, PluginSpec
from tests.assess.test_gate_verdicts import evaluation


def spec(name: str, kind: str = "retriever", module: str = "ef_r12.retriever") -> PluginSpec:
    return PluginSpec(kind, name, object, None, "", module)


def test_who_is_kind_name_and_module() -> None:
    # a module no distribution ships: neither distribution nor version is known
    assert who(spec("r12")) == "retriever plugin 'r12' (ef_r12.retriever)"


def test_an_exception_from_a_plugin_call_carries_the_plugin_and_the_call() -> None:
    with pytest.raises(KeyError) as info, blamed(spec("r12"), "retrieving query 'q03'"):
        {}["boom"]
    assert culprit(info.value) == (
        "retriever plugin 'r12' (ef_r12.retriever)",
        "retrieving query 'q03'",
    )
    assert info.value.__notes__ == [
        "while retriever plugin 'r12' (ef_r12.retriever) was retrieving query 'q03'"
    ]


def test_evalframes_own_errors_and_ctrl_c_pass_unmarked() -> None:
    with pytest.raises(DataError) as info, blamed(spec("r12"), "loading"):
        raise DataError("a located paragraph already")
    assert culprit(info.value) is None
    with pytest.raises(KeyboardInterrupt) as stop, blamed(spec("r12"), "loading"):
        raise KeyboardInterrupt
    assert culprit(stop.value) is None


def _fusion_calling_inner() -> None:
    with blamed(spec("fusion", module="ef_f"), "fusing"):
        try:
            with blamed(spec("inner", module="ef_i"), "retrieving query 'q1'"):
                raise ValueError("inner bug")
        except ValueError as exc:
            raise RuntimeError("fusion gave up") from exc


def test_the_innermost_plugin_is_blamed_and_a_wrapping_error_finds_it() -> None:
    with pytest.raises(RuntimeError) as info:
        _fusion_calling_inner()
    # the RuntimeError is fusion's own, raised inside its call: fusion's
    assert culprit(info.value) == ("retriever plugin 'fusion' (ef_f)", "fusing")
    assert culprit(info.value.__cause__) == (
        "retriever plugin 'inner' (ef_i)",
        "retrieving query 'q1'",
    )


def test_the_crash_report_names_the_plugin_and_sends_the_report_to_its_authors(
    capsys: pytest.CaptureFixture[str],
) -> None:
    try:
        with blamed(spec("r12"), "retrieving query 'q03'"):
            {}["boom"]
    except KeyError:
        report_crash()
    err = capsys.readouterr().err.splitlines()
    assert "KeyError: 'boom'" in err
    assert "while retriever plugin 'r12' (ef_r12.retriever) was retrieving query 'q03'" in err
    assert err[-1] == (
        "error: retriever plugin 'r12' (ef_r12.retriever) raised KeyError while retrieving "
        "query 'q03' (above is the traceback); this is a bug in that plugin, not a mistake in "
        "your config — report it to the plugin's authors"
    )


def test_a_crash_no_plugin_raised_is_said_as_before(capsys: pytest.CaptureFixture[str]) -> None:
    try:
        raise ZeroDivisionError
    except ZeroDivisionError:
        report_crash()
    assert capsys.readouterr().err.splitlines()[-1].startswith("error: evalframe or a plugin")


def test_a_gate_that_raises_is_named_with_the_gate_it_was_evaluating() -> None:
    class Broken:
        def __init__(self, config: None, context: PluginContext) -> None:
            pass

        def evaluate(self, view: GateView) -> GateResult:
            return view.aggregate("RR").n_skipped  # type: ignore[attr-defined,no-any-return]

    with GATES.scoped():
        GATES.add("broken", Broken)
        with pytest.raises(AttributeError) as info:
            run_gates([GateSpec("floor", "broken", True, {})], evaluation())
    plugin, doing = culprit(info.value) or ("", "")
    assert plugin.startswith("gate plugin 'broken' (") and doing == "evaluating gate 'floor'"
