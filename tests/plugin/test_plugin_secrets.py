"""A plugin's secret settings are remembered when its config is validated, so that what it
says later (an exception, a failed upload) is redacted of them (docs/security.md)."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict

from evalframe.core import secrets
from evalframe.core.secrets import known_secrets
from evalframe.plugin.hooks import HookRelay
from evalframe.plugin.registry import Registry, configure

TOKEN = "tok-9f8e7d6c5b4a3210"


@pytest.fixture(autouse=True)
def _nothing_known(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(secrets, "_KNOWN", ())


class DashConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    token: str
    headers: dict[str, str] = {}
    url: str = "https://dash.example/api"


class Dash:
    """Posts results to a dashboard, and quotes its token when that fails."""

    def __init__(self, config: DashConfig) -> None:
        self.config = config

    def on_run_end(self, context: object, outcome: object) -> None:
        raise ConnectionError(f"POST {self.config.url} failed: 403 for token {self.config.token}")


def test_configure_remembers_the_secret_settings_before_validating_them() -> None:
    reg: Registry[object] = Registry("tracker", "evalframe.test_nothing")
    spec = reg.add("dash", Dash, DashConfig)
    settings = {"token": TOKEN, "headers": {"X-Api-Key": "key-0123456789"}, "url": "https://h"}
    config = configure(spec, settings, "tracking")
    assert known_secrets() == {TOKEN, "key-0123456789"}

    relay = HookRelay([Dash(config)])  # type: ignore[arg-type]  # configure's BaseModel
    relay.emit("on_run_end", None, None)
    assert relay.failures == [  # kept for the run's record, redacted as printed
        "warning: tracker Dash failed in on_run_end: ConnectionError: POST https://h failed: "
        "403 for token tok-…[redacted]"
    ]


def test_a_tracker_warning_is_printed_redacted(capsys: pytest.CaptureFixture[str]) -> None:
    reg: Registry[object] = Registry("tracker", "evalframe.test_nothing")
    config = configure(reg.add("dash", Dash, DashConfig), {"token": TOKEN}, "tracking")
    HookRelay([Dash(config)]).emit("on_run_end", None, None)  # type: ignore[arg-type]
    assert capsys.readouterr().err == (
        "warning: tracker Dash failed in on_run_end: ConnectionError: POST "
        "https://dash.example/api failed: 403 for token tok-…[redacted]\n"
    )
