"""The fake model's tests share one way to serve it on loopback."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from replay.fake.model import FakeModel
from replay.fake.server import FakeModelServer

Serve = Callable[..., FakeModelServer]


@pytest.fixture
def serve() -> Iterator[Serve]:
    """Starts FakeModelServers (any `FakeModelServer` options) and stops every one of them after
    the test."""
    servers: list[FakeModelServer] = []

    def start(fake_model: FakeModel, **options: Any) -> FakeModelServer:
        server = FakeModelServer(fake_model, **options)
        servers.append(server)
        server.start()
        return server

    yield start
    for server in servers:
        server.stop()
