"""Finding Claude Code, or installing the pinned version from npm into a cache: which binary is
chosen, and the one sentence each failure gives. The failures are shown against a registry on
loopback (closed, or answering 404), never the real one."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from replay.claude_code.install import (
    CACHE_ENV,
    CLAUDE_CODE_VERSION,
    ClaudeCodeInstallError,
    cache_root,
    claude_version,
    find_or_install_claude,
    installed_binary,
)


def stand_in_claude(folder: Path, reports: str) -> Path:
    """An executable named claude that reports ``reports`` as its version, as the CLI does."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "claude"
    path.write_text(f'#!/bin/sh\necho "{reports} (Claude Code)"\n')
    path.chmod(0o755)
    return path


@pytest.fixture
def npm_registry(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """npm configured for a test: its own cache folder, no retries."""
    monkeypatch.setenv("npm_config_cache", str(tmp_path / "npm-cache"))
    monkeypatch.setenv("npm_config_fetch_retries", "0")
    yield


class _NotFound(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b'{"error":"Not found"}'
        self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_the_cache_is_the_named_folder_else_the_users_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "named"))
    assert cache_root() == tmp_path / "named"
    monkeypatch.delenv(CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "agent-replay" / "claude-code"


def test_a_claude_on_path_reporting_the_pinned_version_is_used(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    on_path = stand_in_claude(tmp_path / "bin", CLAUDE_CODE_VERSION)
    monkeypatch.setenv("PATH", str(on_path.parent))

    assert find_or_install_claude(cache=tmp_path / "cache") == on_path
    assert not (tmp_path / "cache").exists()


def test_a_claude_on_path_of_another_version_is_passed_over_for_the_cached_one(
    claude: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    on_path = stand_in_claude(tmp_path / "bin", "1.0.0")
    monkeypatch.setenv("PATH", f"{on_path.parent}{os.pathsep}{os.environ['PATH']}")

    found = find_or_install_claude()

    assert found != on_path
    assert claude_version(found) == CLAUDE_CODE_VERSION


def test_the_installed_binary_is_the_platform_packages_own(claude: Path) -> None:
    if claude.parent.parent.name != "@anthropic-ai":
        pytest.fail(f"the pinned claude was taken from PATH ({claude}), not from the cache", pytrace=False)
    assert installed_binary(claude.parents[3]) == claude
    assert claude.parent.name.startswith("claude-code-")


def test_without_npm_the_install_fails_saying_so(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))

    with pytest.raises(ClaudeCodeInstallError) as raised:
        find_or_install_claude(cache=tmp_path / "cache")

    assert str(raised.value) == (
        f"Installing Claude Code {CLAUDE_CODE_VERSION} needs npm on PATH (it comes with Node.js); install "
        f"Node.js, or put a claude that reports {CLAUDE_CODE_VERSION} on PATH."
    )


def test_an_unreachable_registry_fails_saying_so_and_leaves_no_scratch(
    npm_registry: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with socket.socket() as probe:  # a port nothing listens on once it is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("npm_config_registry", f"http://127.0.0.1:{port}/")

    with pytest.raises(ClaudeCodeInstallError, match=r"^npm could not reach its registry to install "):
        find_or_install_claude("0.0.0", cache=tmp_path / "cache")

    assert sorted(path.name for path in (tmp_path / "cache").iterdir()) == [".0.0.0.lock"]


def test_a_version_the_registry_does_not_have_fails_saying_so(
    npm_registry: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    registry = ThreadingHTTPServer(("127.0.0.1", 0), _NotFound)
    thread = threading.Thread(target=registry.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("npm_config_registry", f"http://127.0.0.1:{registry.server_address[1]}/")
    try:
        with pytest.raises(ClaudeCodeInstallError) as raised:
            find_or_install_claude("0.0.0", cache=tmp_path / "cache")
    finally:
        registry.shutdown()
        registry.server_close()

    assert str(raised.value) == (
        "The npm registry has no @anthropic-ai/claude-code@0.0.0; check the version "
        "(npm view @anthropic-ai/claude-code versions)."
    )
