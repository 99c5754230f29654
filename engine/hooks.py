"""Tool-use hooks: Python callables that run before and after each tool call.

A pre-tool hook can deny the call, rewrite the input the tool runs with, or stop the loop
after this round of tools (``hook_stopped``); a post-tool hook can stop the loop too.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

__all__ = ["HookDecision", "HookEvent", "HookInput", "HookResult", "Hooks", "ToolHook", "run_tool_hooks"]

JsonDict = dict[str, Any]


class HookEvent(StrEnum):
    PRE_TOOL_USE = "PreToolUse"
    POST_TOOL_USE = "PostToolUse"


class HookDecision(StrEnum):
    ALLOW = "allow"
    DENY = "deny"


@dataclass(frozen=True, kw_only=True)
class HookInput:
    """What a hook sees: the event, the tool, its observable (backfilled) input, and after the
    call, the result text and whether it was an error."""

    event: HookEvent
    tool_name: str
    tool_use_id: str
    tool_input: JsonDict
    tool_response: str | None = None
    is_error: bool = False


@dataclass(frozen=True, kw_only=True)
class HookResult:
    """A hook's answer. ``None`` fields mean "no opinion"."""

    decision: HookDecision | None = None
    reason: str = ""
    updated_input: JsonDict | None = None
    prevent_continuation: bool = False
    stop_reason: str = ""


ToolHook = Callable[[HookInput], "HookResult | None | Awaitable[HookResult | None]"]


@dataclass(frozen=True)
class Hooks:
    """The session's hooks, by event."""

    pre_tool_use: Sequence[ToolHook] = field(default_factory=tuple)
    post_tool_use: Sequence[ToolHook] = field(default_factory=tuple)


@dataclass(frozen=True)
class CombinedHookResult:
    """All hooks of one event folded together: a deny wins, the last rewrite wins, any stop
    stops."""

    denied: bool = False
    reason: str = ""
    updated_input: JsonDict | None = None
    prevent_continuation: bool = False
    stop_reason: str = ""


async def run_tool_hooks(hooks: Sequence[ToolHook], hook_input: HookInput) -> CombinedHookResult:
    """Run ``hooks`` in order on ``hook_input`` and fold their answers."""
    combined = CombinedHookResult()
    current = hook_input
    for hook in hooks:
        answer = hook(current)
        if inspect.isawaitable(answer):
            answer = await answer
        if answer is None:
            continue
        if answer.updated_input is not None:
            current = HookInput(**{**current.__dict__, "tool_input": answer.updated_input})
        combined = CombinedHookResult(
            denied=combined.denied or answer.decision == HookDecision.DENY,
            reason=answer.reason if answer.decision == HookDecision.DENY else combined.reason,
            updated_input=answer.updated_input if answer.updated_input is not None else combined.updated_input,
            prevent_continuation=combined.prevent_continuation or answer.prevent_continuation,
            stop_reason=answer.stop_reason or combined.stop_reason,
        )
    return combined
