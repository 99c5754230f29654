"""The plugin's tests run tiny projects with pytest (in this process, or in a subprocess where a run
needs one): `project` is one such folder."""

from __future__ import annotations

import os
from pathlib import Path

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


@pytest.fixture
def claude_code_cache(claude_code_binary: Path | str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This session's pinned Claude Code, for a project's pytest run: pytester gives the project a
    HOME of its own, so the cache the binary came from is named for it."""
    if isinstance(claude_code_binary, str):
        pytest.fail(claude_code_binary, pytrace=False)
    if claude_code_binary.parent.parent.name == "@anthropic-ai":  # <cache>/<version>/node_modules/...
        monkeypatch.setenv("REPLAY_CLAUDE_CODE_CACHE", str(claude_code_binary.parents[4]))
    return claude_code_binary
