"""The shell commands the engine starts (the Bash tool and command hooks): the environment they
get, and how everything they started is stopped.

The environment is built from an allowlist, not by removing what looks secret: a credential
under a name nobody thought of (``MY_ANTHROPIC_CREDENTIAL``) never reaches a command, and so
never reaches a transcript through one. A command can still read its parent's environment in
``/proc/<ppid>/environ``; what keeps such a value out of a bundle is the bundle writer's
known-value redaction, not this.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import IO

__all__ = [
    "ENGINE_VARIABLES",
    "INHERITED_PREFIXES",
    "INHERITED_VARIABLES",
    "PROXY_VARIABLES",
    "UNREACHABLE_PROXY",
    "WORKSPACE_VARIABLE",
    "NetworkPolicy",
    "ToolEnvironment",
    "kill_process_group",
    "start_shell",
]

# What a command inherits from the engine's own environment (and every LC_* locale variable).
INHERITED_VARIABLES = ("PATH", "HOME", "LANG", "TERM", "TMPDIR")
INHERITED_PREFIXES = ("LC_",)
# The workspace root, under the name Claude Code gives it, so hooks written for it work here.
WORKSPACE_VARIABLE = "CLAUDE_PROJECT_DIR"
# Port 9 (discard) on loopback: nothing listens there on any ordinary machine, so a client that
# honours the proxy variables is refused at once — no packet leaves the machine, and no timeout
# is waited out, as it would be with an unroutable address.
UNREACHABLE_PROXY = "http://127.0.0.1:9"
PROXY_VARIABLES = (
    "http_proxy",
    "https_proxy",
    "ftp_proxy",
    "all_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "FTP_PROXY",
    "ALL_PROXY",
)
# Empty: no host, loopback included, is exempt from the proxy.
_NO_PROXY_VARIABLES = ("no_proxy", "NO_PROXY")
# The names the engine sets itself; a session cannot set them.
ENGINE_VARIABLES = frozenset({WORKSPACE_VARIABLE, *PROXY_VARIABLES, *_NO_PROXY_VARIABLES})
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class NetworkPolicy(StrEnum):
    """Whether commands may use the network. A subprocess cannot be guarded by patching sockets,
    so ``OFFLINE`` points every proxy variable at a closed loopback port; a client that ignores
    them, raw sockets and DNS lookups are not stopped by it."""

    ALLOW = "allow"
    OFFLINE = "offline"


@dataclass(frozen=True, kw_only=True)
class ToolEnvironment:
    """What the environment of a command the engine starts holds: the inherited variables
    (``INHERITED_VARIABLES``, ``LC_*``) of the engine's process, ``variables`` (the session's
    own), the workspace root as ``CLAUDE_PROJECT_DIR``, and with ``NetworkPolicy.OFFLINE``
    proxy variables that point nowhere. Nothing else: no credential, whatever its name."""

    variables: Mapping[str, str] = field(default_factory=dict)
    network: NetworkPolicy = NetworkPolicy.ALLOW

    def __post_init__(self) -> None:
        for name, value in self.variables.items():
            if not isinstance(name, str) or not _NAME.fullmatch(name):
                raise ValueError(f"{name!r} is not a usable environment variable name (letters, digits and _).")
            if name in ENGINE_VARIABLES:
                raise ValueError(f"The environment variable {name} is set by the engine; a session cannot set it.")
            if not isinstance(value, str) or "\0" in value:
                raise ValueError(f"The environment variable {name} needs a string value without NUL characters.")
        object.__setattr__(self, "variables", dict(self.variables))

    def build(self, *, workspace: Path, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment for a command run in ``workspace``, taking the inherited variables
        from ``environ`` (the engine's own environment by default)."""
        source = os.environ if environ is None else environ
        env = {
            name: value
            for name, value in source.items()
            if name in INHERITED_VARIABLES or name.startswith(INHERITED_PREFIXES)
        }
        env.update(self.variables)
        env[WORKSPACE_VARIABLE] = str(workspace)
        if self.network is NetworkPolicy.OFFLINE:
            env.update(dict.fromkeys(PROXY_VARIABLES, UNREACHABLE_PROXY))
            env.update(dict.fromkeys(_NO_PROXY_VARIABLES, ""))
        return env


async def start_shell(
    command: str,
    *,
    cwd: Path,
    env: Mapping[str, str],
    stdin: int | IO[bytes],
    stdout: int | IO[bytes],
    stderr: int | IO[bytes],
) -> asyncio.subprocess.Process:
    """Start ``bash -c command`` in ``cwd`` with exactly ``env``, in its own process group, so
    that ``kill_process_group`` stops everything it starts."""
    return await asyncio.create_subprocess_exec(
        "bash",
        "-c",
        command,
        cwd=cwd,
        env=dict(env),
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        start_new_session=True,
    )


def kill_process_group(process: asyncio.subprocess.Process) -> None:
    """SIGKILL the command's process group: the shell and whatever it left running."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
