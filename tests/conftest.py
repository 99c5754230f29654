"""Suite-wide guard: tests never reach the network (loopback is allowed for local servers)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from replay.network_guard import NetworkGuard

# The plugin's tests run small projects in a pytest subprocess; pytest takes plugins only from the
# top-level conftest.
pytest_plugins = ["pytester"]


@pytest.fixture(autouse=True, scope="session")
def _no_network() -> Iterator[None]:
    with NetworkGuard():
        yield
