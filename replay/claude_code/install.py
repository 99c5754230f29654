"""Finding the real Claude Code CLI, or installing a pinned version of it from npm into a cache.

The npm package ``@anthropic-ai/claude-code`` is a small launcher plus one native binary in a
platform package (``@anthropic-ai/claude-code-linux-x64`` and so on); npm installs only the one
that fits the machine. The launcher's postinstall script links that binary into place; this
module installs with ``--ignore-scripts`` and uses the platform binary directly, so no
third-party script runs and an ``ignore-scripts`` npm configuration changes nothing. The binary
carries its own JavaScript runtime: Node.js and npm are needed to install, not to run.

An installation is ``<cache>/<version>/``, made in a scratch folder beside it and renamed into
place under a file lock, so two processes (two pytest workers) installing at once leave one
complete copy and never a half-written one.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Final

from filelock import FileLock, Timeout

__all__ = [
    "CACHE_ENV",
    "CLAUDE_CODE_PACKAGE",
    "CLAUDE_CODE_VERSION",
    "ClaudeCodeInstallError",
    "cache_root",
    "claude_version",
    "find_or_install_claude",
    "installed_binary",
]

CLAUDE_CODE_PACKAGE: Final = "@anthropic-ai/claude-code"
CLAUDE_CODE_VERSION: Final = "2.1.328"
"""The pinned version: the one the project's observations of Claude Code were made with."""
CACHE_ENV: Final = "REPLAY_CLAUDE_CODE_CACHE"
"""Names the cache folder (one sub-folder per version) instead of the user's cache."""

# npm downloads one ~170 MB tarball once; a slow registry gets minutes, not forever.
NPM_TIMEOUT: Final = 600.0
# Long enough for another process's whole install, which holds the lock meanwhile.
LOCK_TIMEOUT: Final = NPM_TIMEOUT + 60.0
VERSION_TIMEOUT: Final = 30.0


class ClaudeCodeInstallError(RuntimeError):
    """Claude Code could not be found or installed; the message is one sentence saying why and
    what to do."""


def cache_root() -> Path:
    """Where installed versions live: ``$REPLAY_CLAUDE_CODE_CACHE``, else
    ``$XDG_CACHE_HOME/agent-replay/claude-code``, else ``~/.cache/agent-replay/claude-code``."""
    named = os.environ.get(CACHE_ENV)
    if named:
        return Path(named).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "agent-replay" / "claude-code"


def claude_version(binary: Path) -> str | None:
    """The version ``binary --version`` reports (``2.1.328 (Claude Code)`` gives ``2.1.328``), or
    None when it does not run or says something else."""
    try:
        done = subprocess.run(
            [str(binary), "--version"],
            capture_output=True,
            text=True,
            timeout=VERSION_TIMEOUT,
            # It reads no settings for --version, but an empty HOME makes sure of it.
            env={**os.environ, "HOME": tempfile.gettempdir()},
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.match(r"\s*(\d+\.\d+\.\d+\S*)\s+\(Claude Code\)", done.stdout)
    return found.group(1) if done.returncode == 0 and found else None


def installed_binary(folder: Path) -> Path | None:
    """The native binary of an installation folder (``npm install --prefix folder``), or None."""
    scope = folder / "node_modules" / "@anthropic-ai"
    candidates = sorted(
        path
        for pattern in ("claude-code-*/claude", "claude-code-*/claude.exe")
        for path in scope.glob(pattern)
        if path.is_file()
    )
    return candidates[0] if candidates else None


def find_or_install_claude(version: str = CLAUDE_CODE_VERSION, *, cache: Path | None = None) -> Path:
    """The ``claude`` binary of ``version``: the one on PATH if it reports exactly that version,
    else the cached installation, installing it from npm first if there is none. Raises
    `ClaudeCodeInstallError` with one sentence when that fails."""
    on_path = shutil.which("claude")
    if on_path is not None and claude_version(Path(on_path)) == version:
        return Path(on_path)
    root = cache if cache is not None else cache_root()
    target = root / version
    binary = _checked(target, version)
    if binary is not None:
        return binary
    root.mkdir(parents=True, exist_ok=True)
    lock = FileLock(root / f".{version}.lock", timeout=LOCK_TIMEOUT, thread_local=False)
    try:
        with lock:
            # Another process may have installed it while this one waited.
            binary = _checked(target, version)
            if binary is not None:
                return binary
            return _install(version, target)
    except Timeout:
        raise ClaudeCodeInstallError(
            f"Another process has been installing Claude Code {version} into {target} for over "
            f"{LOCK_TIMEOUT:g} s; wait for it, or remove {lock.lock_file} if no process is installing."
        ) from None


def _checked(target: Path, version: str) -> Path | None:
    binary = installed_binary(target)
    if binary is None or claude_version(binary) != version:
        return None
    return binary


def _install(version: str, target: Path) -> Path:
    npm = shutil.which("npm")
    if npm is None:
        raise ClaudeCodeInstallError(
            f"Installing Claude Code {version} needs npm on PATH (it comes with Node.js); install "
            f"Node.js, or put a claude that reports {version} on PATH."
        )
    scratch = Path(tempfile.mkdtemp(prefix=f".{version}.", suffix=".installing", dir=target.parent))
    try:
        _npm_install(npm, version, scratch)
        binary = installed_binary(scratch)
        if binary is None:
            raise ClaudeCodeInstallError(
                f"npm installed {CLAUDE_CODE_PACKAGE}@{version} but no native binary for this platform "
                f"(no {CLAUDE_CODE_PACKAGE}-<platform> package); this platform may not be supported."
            )
        reported = claude_version(binary)
        if reported != version:
            raise ClaudeCodeInstallError(
                f"The installed Claude Code binary {binary} reports {reported or 'no version'}, not {version}; "
                "it may not run on this machine."
            )
        scratch.chmod(0o755)  # mkdtemp made it private; an installation is not
        if target.exists():  # a broken or foreign copy: replaced whole
            shutil.rmtree(target)
        scratch.rename(target)
    finally:
        with contextlib.suppress(OSError):
            shutil.rmtree(scratch)
    found = installed_binary(target)
    assert found is not None  # renamed from scratch, where it was found
    return found


def _npm_install(npm: str, version: str, folder: Path) -> None:
    command = [
        npm,
        "install",
        "--prefix",
        str(folder),
        "--ignore-scripts",
        "--no-audit",
        "--no-fund",
        "--no-save",
        "--loglevel=error",
        f"{CLAUDE_CODE_PACKAGE}@{version}",
    ]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=NPM_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        raise ClaudeCodeInstallError(
            f"npm did not finish installing {CLAUDE_CODE_PACKAGE}@{version} within {NPM_TIMEOUT:g} s; "
            "check that the npm registry is reachable and try again."
        ) from None
    if done.returncode != 0:
        raise ClaudeCodeInstallError(_npm_failure(version, done.stderr))


def _npm_failure(version: str, stderr: str) -> str:
    """One sentence for a failed ``npm install``, from npm's error codes."""
    spec = f"{CLAUDE_CODE_PACKAGE}@{version}"
    if re.search(r"\b(ETARGET|E404)\b", stderr):
        return f"The npm registry has no {spec}; check the version (npm view {CLAUDE_CODE_PACKAGE} versions)."
    if re.search(r"\b(ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH)\b", stderr):
        return f"npm could not reach its registry to install {spec}; check the network or the npm registry setting."
    lines = [line.removeprefix("npm error").strip() for line in stderr.splitlines()]
    detail = next((line for line in lines if line and not line.startswith("A complete log")), "no message")
    return f"npm failed to install {spec}: {detail}"
