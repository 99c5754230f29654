"""The plugin's tests run tiny projects in a pytest subprocess: `project` is one such folder."""

from __future__ import annotations

import os

import pytest

INI = """\
[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = function
addopts = -p no:cacheprovider --strict-markers
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A project folder whose pytest runs know nothing of this suite's own run."""
    for name in list(os.environ):
        if name.startswith("PYTEST_XDIST") or name in ("PYTEST_ADDOPTS", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
            monkeypatch.delenv(name)
    pytester.makefile(".ini", pytest=INI)
    return pytester
