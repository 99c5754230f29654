"""What a session declares about its hooks, and what each hook is given and may answer.

The events and decisions, ``CommandHook`` (a shell command, with the matcher that picks the
tools it runs for), the inputs a tool or stop hook sees and the results a Python hook returns,
``Hooks`` (the session's hooks by event) and ``HookContext`` (what running them needs).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from engine.process import ToolEnvironment

__all__ = [
    "DEFAULT_HOOK_TIMEOUT_S",
    "CommandHook",
    "HookContext",
    "HookDecision",
    "HookEvent",
    "HookInput",
    "HookResult",
    "Hooks",
    "JsonDict",
    "StopHook",
    "StopHookInput",
    "StopHookResult",
    "ToolHook",
]

JsonDict = dict[str, Any]

DEFAULT_HOOK_TIMEOUT_S = 60.0


class HookEvent(StrEnum):
    PRE_TOOL_USE = "PreToolUse"
    POST_TOOL_USE = "PostToolUse"
    STOP = "Stop"


class HookDecision(StrEnum):
    ALLOW = "allow"
    DENY = "deny"


@dataclass(frozen=True)
class CommandHook:
    """A hook run as ``bash -c command`` in the workspace, without credentials in its
    environment, with the event as JSON on stdin; background processes it starts are stopped
    when it ends. ``timeout_s`` defaults to the session's ``hook_timeout_s``. ``matcher`` (tool
    hooks only; ignored for stop hooks) is a regular expression the whole tool name must match;
    ``None``, ``""`` or ``"*"`` match every tool."""

    command: str
    timeout_s: float | None = None
    matcher: str | None = None

    def __post_init__(self) -> None:
        if not self.command.strip():
            raise ValueError("A CommandHook needs a command to run; it was given an empty one.")
        if self.timeout_s is not None and self.timeout_s <= 0:
            raise ValueError(f"CommandHook `{self.command}`: timeout_s must be positive, not {self.timeout_s}.")
        if self.matcher not in (None, "", "*"):
            try:
                re.compile(self.matcher)
            except re.error as exc:
                raise ValueError(
                    f"CommandHook `{self.command}`: matcher {self.matcher!r} is not a valid regular expression ({exc})."
                ) from exc

    def matches(self, tool_name: str) -> bool:
        """Whether this hook runs for ``tool_name``."""
        if self.matcher in (None, "", "*"):
            return True
        return re.fullmatch(self.matcher, tool_name) is not None


@dataclass(frozen=True, kw_only=True)
class HookInput:
    """What a tool hook sees: the event, the tool, its observable (backfilled) input, and after
    the call, the result text and whether it was an error."""

    event: HookEvent
    tool_name: str
    tool_use_id: str
    tool_input: JsonDict
    tool_response: str | None = None
    is_error: bool = False


@dataclass(frozen=True, kw_only=True)
class HookResult:
    """A Python tool hook's answer. ``None`` fields mean "no opinion". On ``PostToolUse`` a
    ``DENY`` cannot undo the call: its reason becomes feedback."""

    decision: HookDecision | None = None
    reason: str = ""
    updated_input: JsonDict | None = None
    prevent_continuation: bool = False
    stop_reason: str = ""


@dataclass(frozen=True, kw_only=True)
class StopHookInput:
    """What a stop hook sees: whether the loop already continued because of a stop hook, and
    the text of the model's last answer."""

    stop_hook_active: bool
    last_assistant_text: str


@dataclass(frozen=True, kw_only=True)
class StopHookResult:
    """A Python stop hook's answer: ``block`` sends ``reason`` back to the model and the loop
    goes on; ``prevent_continuation`` ends the loop."""

    block: bool = False
    reason: str = ""
    prevent_continuation: bool = False
    stop_reason: str = ""


ToolHook = Callable[[HookInput], "HookResult | Awaitable[HookResult | None] | None"] | CommandHook
StopHook = Callable[[StopHookInput], "StopHookResult | Awaitable[StopHookResult | None] | None"] | CommandHook


@dataclass(frozen=True)
class Hooks:
    """The session's hooks, by event; each list runs in order."""

    pre_tool_use: Sequence[ToolHook] = field(default_factory=tuple)
    post_tool_use: Sequence[ToolHook] = field(default_factory=tuple)
    stop: Sequence[StopHook] = field(default_factory=tuple)


@dataclass(frozen=True)
class HookContext:
    """What a command hook is told about the session, how long any hook may take, and the
    environment its command gets (the same as the Bash tool's)."""

    cwd: Path
    session_id: str
    transcript_path: Path | None = None
    timeout_s: float = DEFAULT_HOOK_TIMEOUT_S
    environment: ToolEnvironment = field(default_factory=ToolEnvironment)

    def __post_init__(self) -> None:
        if self.timeout_s <= 0:
            raise ValueError(f"HookContext.timeout_s must be positive, not {self.timeout_s}.")
