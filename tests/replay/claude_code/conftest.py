"""The real Claude Code CLI for these tests: the pinned version, installed from npm once into the
user's cache (or ``$REPLAY_CLAUDE_CODE_CACHE``) and shared by every test and worker after that.
An install that fails fails the tests that need it, with its one-sentence reason; none is
skipped. A scenario is served by the real fake model server on loopback."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from replay.claude_code.install import ClaudeCodeInstallError, find_or_install_claude
from replay.fake.model import FakeModel
from replay.fake.scenario import load_scenario
from replay.fake.server import FakeModelServer

ServeScenario = Callable[[str], FakeModelServer]


@pytest.fixture(scope="session")
def claude() -> Path:
    """The pinned ``claude`` binary."""
    try:
        return find_or_install_claude()
    except ClaudeCodeInstallError as error:
        pytest.fail(str(error), pytrace=False)


@pytest.fixture
def serve_scenario(tmp_path: Path) -> Iterator[ServeScenario]:
    """Serves a scenario, given as YAML text, on a loopback fake model server for the test."""
    servers: list[FakeModelServer] = []

    def serve(text: str) -> FakeModelServer:
        path = tmp_path / f"scenario-{len(servers) + 1}.yaml"
        path.write_text(text)
        server = FakeModelServer(FakeModel(load_scenario(path)))
        server.start()
        servers.append(server)
        return server

    yield serve
    for server in servers:
        server.stop()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty workspace folder for the CLI to run in."""
    folder = tmp_path / "workspace"
    folder.mkdir()
    return folder
