"""What the command line says about a broken or careless plugin: a subcommand or config
folder whose entry point fails to load, and a plugin's key quoted in a crash or a sweep
job's record."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from types import SimpleNamespace

import pytest

from evalframe.app import cli, hydra_app
from evalframe.app.stderr import report_crash
from evalframe.core import secrets
from evalframe.core.secrets import remember_secret
from tests.plugin.fakedist import installer

install = pytest.fixture(installer, name="install")
Install = Callable[[str, str, Mapping[str, str]], Path]

KEY = "sk-live-0123456789abcdef"


@pytest.fixture(autouse=True)
def _nothing_known(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(secrets, "_KNOWN", ())


def test_a_subcommand_whose_entry_point_names_no_function_exits_2_naming_it(
    install: Install, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: AttributeError with its traceback, exit 3, "this is a bug" of evalframe's."""
    install(
        "ef-t10c",
        "[evalframe.commands]\nt10-upload = ef_t10c.cmd:main\n",
        {
            "ef_t10c/__init__.py": "",
            "ef_t10c/cmd.py": 'def cli_main(argv):\n    """Upload."""\n    return 0\n',
        },
    )
    assert cli.main(["t10-upload", "--all"]) == 2
    assert capsys.readouterr().err == (
        "error: command 't10-upload' could not be imported from entry point 'ef_t10c.cmd:main' "
        "(group evalframe.commands, distribution ef-t10c): module 'ef_t10c.cmd' was imported, "
        "but it defines no 'main' (got AttributeError: module 'ef_t10c.cmd' has no attribute "
        "'main')\n  hint: did you mean 'cli_main'? fix the entry point in ef-t10c's packaging "
        '(pyproject.toml, [project.entry-points."evalframe.commands"]) and reinstall it\n'
    )


def test_config_folders_are_found_without_running_any_plugin_code(
    install: Install, capsys: pytest.CaptureFixture[str]
) -> None:
    """Finding the folder of ``ef_t11.conf`` ran ``ef_t11/__init__.py`` on every command:
    one that raised stopped every run (exit 3), one that imported torch slowed every run
    by seconds, even those never using the plugin. Now none of its code runs."""
    import sys

    root = install(
        "ef-t11",
        "[evalframe.conf]\nt11 = ef_t11.conf\n",
        {
            "ef_t11/__init__.py": 'import os\nSERVICE = os.environ["EF_T11_SURELY_UNSET"]\n',
            "ef_t11/conf/__init__.py": "raise RuntimeError('never run')\n",
        },
    )
    install(
        "ef-t11ok", "[evalframe.conf]\nt11ok = ef_t11ok.conf\n", {"ef_t11ok/conf/__init__.py": ""}
    )
    install("ef-t11gone", "[evalframe.conf]\nt11gone = ef_t11gone.conf\n", {"ef_t11gone.py": ""})
    found = dict(hydra_app.plugin_conf_dirs())
    assert found["t11"] == root / "ef_t11" / "conf"
    assert found["t11ok"] == root.parent / "ef-t11ok" / "ef_t11ok" / "conf"
    assert "t11gone" not in found  # a module, not a package: no folder
    assert not {"ef_t11", "ef_t11.conf", "ef_t11ok"} & set(sys.modules)
    assert capsys.readouterr().err == (
        "warning: entry point 't11gone' (evalframe.conf, distribution ef-t11gone) names "
        "package 'ef_t11gone.conf', which cannot be found; its config groups are skipped\n"
    )


def _plugin_fails() -> None:
    raise RuntimeError(f"401 Unauthorized for key={KEY}")


def test_a_crash_quoting_a_plugins_key_is_printed_redacted_with_its_frames(
    capsys: pytest.CaptureFixture[str],
) -> None:
    remember_secret(KEY)  # as configure() does for the plugin's api_key
    try:
        _plugin_fails()
    except RuntimeError:
        report_crash()
    err = capsys.readouterr().err
    assert KEY[4:] not in err
    lines = err.splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    line = _plugin_fails.__code__.co_firstlineno + 1
    assert f'  File "{__file__}", line {line}, in _plugin_fails' in lines
    assert '    raise RuntimeError(f"401 Unauthorized for key={KEY}")' in lines
    assert lines[-2] == "RuntimeError: 401 Unauthorized for key=sk-l…[redacted]"
    assert lines[-1].startswith("error: ")  # the closing sentence, whatever its wording


def test_a_sweep_job_records_its_error_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """job.json keeps the job's error for the sweep summary: a crash's is the exception's
    own text, which held the key verbatim."""
    from hydra.core.hydra_config import HydraConfig

    remember_secret(KEY)
    job = tmp_path / "0"
    job.mkdir()
    monkeypatch.setattr(hydra_app, "hydra_metadata", lambda: {"sweep": {"num": 0}})
    runtime = SimpleNamespace(runtime=SimpleNamespace(output_dir=str(job)))
    monkeypatch.setattr(HydraConfig, "get", staticmethod(lambda: runtime))
    hydra_app._record_sweep_job(3, f"crash: RuntimeError: 401 Unauthorized for key={KEY}")
    record = json.loads((job / "job.json").read_text())
    assert record["exit_code"] == 3
    assert record["error"] == "crash: RuntimeError: 401 Unauthorized for key=sk-l…[redacted]"
