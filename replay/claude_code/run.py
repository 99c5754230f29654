"""Running the real Claude Code CLI once, non-interactively and offline, against a given model
URL (the fake model's loopback server, or ``replay proxy``), and reading its JSON result.

The run is isolated: its own empty ``HOME`` (Claude Code keeps its settings, sessions and
transcripts there), no telemetry, no update check, no non-essential traffic — with
``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`` the CLI connects to the base URL only, and
without it it also looks up ``api.anthropic.com`` — and only the variables named here and the
caller's ``env`` reach it, so a developer's own ``ANTHROPIC_*`` settings never do.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Final, TypedDict

__all__ = [
    "DEVICE_ID",
    "ClaudeCodeResult",
    "ClaudeCodeRunError",
    "ClaudeRunOptions",
    "PermissionDenial",
    "PermissionMode",
    "claude_environment",
    "run_claude",
]

DEFAULT_TIMEOUT: Final = 120.0
# The device id a fresh HOME gets (see _seed_device_id): 64 hex digits, as the CLI draws them.
DEVICE_ID: Final = "5eed" * 16
# Variables a run inherits from the caller: enough to find programs and to run hooks in a
# language of the user's choice, nothing that configures Claude Code or the API.
_INHERITED: Final = ("PATH", "LANG", "LC_ALL", "TZ", "TMPDIR", "SYSTEMROOT")


class ClaudeRunOptions(TypedDict, total=False):
    """`run_claude`'s options beside the prompt, the model's URL and the workspace, for callers
    that pass them on (`replay.claude_code.scripted.run_scenario`)."""

    home: Path | None
    model: str | None
    max_turns: int | None
    permission_mode: PermissionMode | None
    allowed_tools: Sequence[str]
    args: Sequence[str]
    env: Mapping[str, str] | None
    timeout: float


class PermissionMode(StrEnum):
    """The CLI's ``--permission-mode`` choices. In ``-p`` mode under ``MANUAL`` (the default) a
    tool call that needs permission is denied and listed in the result's permission denials."""

    MANUAL = "manual"
    ACCEPT_EDITS = "acceptEdits"
    AUTO = "auto"
    DONT_ASK = "dontAsk"
    PLAN = "plan"
    BYPASS_PERMISSIONS = "bypassPermissions"


class ClaudeCodeRunError(RuntimeError):
    """The CLI did not produce a result: it timed out, or what it printed is not its JSON
    result. The message is one sentence; ``stdout`` and ``stderr`` hold what it printed."""

    def __init__(self, message: str, *, stdout: str = "", stderr: str = "") -> None:
        super().__init__(message)
        self.stdout = stdout
        self.stderr = stderr


@dataclass(frozen=True, kw_only=True)
class PermissionDenial:
    """A tool call the CLI refused to run."""

    tool_name: str
    tool_use_id: str
    tool_input: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class ClaudeCodeResult:
    """What ``claude -p ... --output-format json`` reported. ``terminal_reason`` is the CLI's own
    word for how the loop ended (``completed``, ``max_turns``, ``api_error``,
    ``prompt_too_long``, ...): an open set owned by another program, so it stays a string."""

    terminal_reason: str | None
    result: str | None
    num_turns: int
    is_error: bool
    subtype: str | None
    session_id: str | None
    permission_denials: tuple[PermissionDenial, ...]
    exit_code: int
    raw: dict[str, Any] = field(repr=False)
    stderr: str = field(default="", repr=False)


def claude_environment(
    *, base_url: str, home: Path, api_key: str = "sk-ant-test", extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment of an isolated, offline run against ``base_url``."""
    env = {name: os.environ[name] for name in _INHERITED if name in os.environ}
    env.update(
        {
            "HOME": str(home),
            "ANTHROPIC_BASE_URL": base_url,
            "ANTHROPIC_API_KEY": api_key,
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        }
    )
    env.update(extra or {})
    return env


def run_claude(
    claude: Path,
    prompt: str,
    *,
    base_url: str,
    workspace: Path,
    home: Path | None = None,
    model: str | None = None,
    max_turns: int | None = None,
    permission_mode: PermissionMode | None = None,
    allowed_tools: Sequence[str] = (),
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> ClaudeCodeResult:
    """Run ``claude -p PROMPT --output-format json`` in ``workspace`` against ``base_url`` and
    return its parsed result. ``home`` is the run's HOME (a fresh temp folder, removed after,
    when None); ``args`` go on the command line last. A result that reports an error (a
    ``max_turns`` end, an API error) is returned, not raised; `ClaudeCodeRunError` is for a run
    that printed no result or ran past ``timeout`` seconds."""
    command = [str(claude), "-p", prompt, "--output-format", "json"]
    if model is not None:
        command += ["--model", model]
    if max_turns is not None:
        command += ["--max-turns", str(max_turns)]
    if permission_mode is not None:
        command += ["--permission-mode", permission_mode.value]
    if allowed_tools:
        # One argument: the option takes a variadic list, which would swallow what follows.
        command += ["--allowedTools", ",".join(allowed_tools)]
    command += list(args)
    extra = dict(env or {})
    if permission_mode is PermissionMode.BYPASS_PERMISSIONS and _is_root():
        # The CLI refuses to bypass permissions as root unless told it runs in a sandbox; this
        # run is one (a temp workspace, an empty HOME, a loopback model).
        extra.setdefault("IS_SANDBOX", "1")
    with _home(home) as run_home:
        environment = claude_environment(base_url=base_url, home=run_home, extra=extra)
        exit_code, stdout, stderr = _run(command, cwd=workspace, env=environment, timeout=timeout)
    return _parse(stdout, stderr, exit_code)


@contextlib.contextmanager
def _home(home: Path | None) -> Iterator[Path]:
    if home is not None:
        home.mkdir(parents=True, exist_ok=True)
        _seed_device_id(home)
        yield home
        return
    with tempfile.TemporaryDirectory(prefix="claude-home-") as made:
        _seed_device_id(Path(made))
        yield Path(made)


def _seed_device_id(home: Path) -> None:
    """Give a fresh HOME a fixed device id. The CLI sends it in every request's metadata and
    would otherwise draw a random one per HOME, so the same run would never send the same bytes
    twice (and a recorded run could never replay)."""
    config = home / ".claude.json"
    if not config.exists():
        config.write_text(json.dumps({"userID": DEVICE_ID}) + "\n", encoding="utf-8")


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _run(command: list[str], *, cwd: Path, env: dict[str, str], timeout: float) -> tuple[int, str, str]:
    # A session of its own, so a timeout ends the CLI and every command its tools started.
    process = subprocess.Popen(
        command,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        raise ClaudeCodeRunError(
            f"Claude Code ran for over {timeout:g} s in {cwd} and was stopped; a scenario may be waiting "
            "for a request the CLI never sent, or the CLI is waiting for input.",
            stdout=stdout,
            stderr=stderr,
        ) from None
    return process.returncode, stdout, stderr


def _parse(stdout: str, stderr: str, exit_code: int) -> ClaudeCodeResult:
    try:
        raw = json.loads(stdout)
    except json.JSONDecodeError:
        raw = None
    if not isinstance(raw, dict) or raw.get("type") != "result":
        said = (stderr.strip() or stdout.strip() or "nothing").splitlines()[0][:300]
        raise ClaudeCodeRunError(
            f"Claude Code exited with status {exit_code} without a JSON result; it said: {said}",
            stdout=stdout,
            stderr=stderr,
        )
    denials = tuple(
        PermissionDenial(
            tool_name=str(denial.get("tool_name", "")),
            tool_use_id=str(denial.get("tool_use_id", "")),
            tool_input=dict(denial.get("tool_input") or {}),
        )
        for denial in raw.get("permission_denials") or []
        if isinstance(denial, dict)
    )
    result = raw.get("result")
    return ClaudeCodeResult(
        terminal_reason=_optional_str(raw.get("terminal_reason")),
        result=result if isinstance(result, str) else None,
        num_turns=int(raw.get("num_turns") or 0),
        is_error=bool(raw.get("is_error")),
        subtype=_optional_str(raw.get("subtype")),
        session_id=_optional_str(raw.get("session_id")),
        permission_denials=denials,
        exit_code=exit_code,
        raw=raw,
        stderr=stderr,
    )


def _optional_str(value: object) -> str | None:
    return value if isinstance(value, str) else None
