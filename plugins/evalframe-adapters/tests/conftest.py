"""Fixtures: ``serve(respond)`` starts a FakeServer on 127.0.0.1, closed at teardown."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from evalframe_adapters.testing import FakeServer, Reply, Request


@pytest.fixture
def serve() -> Iterator[Callable[[Callable[[Request], Reply]], FakeServer]]:
    servers: list[FakeServer] = []

    def start(respond: Callable[[Request], Reply]) -> FakeServer:
        server = FakeServer(respond)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()
