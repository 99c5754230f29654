"""Hooks: code the session runs around each tool call and when the model stops.

A hook is a Python callable or a ``CommandHook``, a shell command that follows Claude Code's
protocol: the event as JSON on stdin, the answer in its exit code and, optionally, a JSON
object on stdout. A pre-tool hook can deny the call, allow it, rewrite its input, or stop the
loop after this round of tools (``hook_stopped``); a post-tool hook can give the model feedback
or stop the loop; a stop hook can block the stop (``stop_hook_blocking``) or end the loop
(``stop_hook_prevented``).

A hook's failure never reaches the caller as an exception: every run becomes a ``HookRun``
record for the trace, and a hook that failed counts as having no opinion. The timeout bounds
commands and awaitables; a synchronous Python hook runs on the event loop's thread and cannot
be interrupted.

The modules: ``config`` (what a session declares and what a hook is given and answers),
``outcomes`` (runs and their folded results), ``runner`` (running an event's hooks in order,
Python callables included) and ``command`` (running a ``CommandHook``).
"""

from engine.hooks.config import (
    DEFAULT_HOOK_TIMEOUT_S,
    CommandHook,
    HookContext,
    HookDecision,
    HookEvent,
    HookInput,
    HookResult,
    Hooks,
    StopHook,
    StopHookInput,
    StopHookResult,
    ToolHook,
)
from engine.hooks.outcomes import (
    CombinedHookResult,
    HookOutcome,
    HookRun,
    StopHookOutcome,
    post_tool_feedback_text,
    stop_hook_feedback_text,
)
from engine.hooks.runner import run_stop_hooks, run_tool_hooks

__all__ = [
    "DEFAULT_HOOK_TIMEOUT_S",
    "CombinedHookResult",
    "CommandHook",
    "HookContext",
    "HookDecision",
    "HookEvent",
    "HookInput",
    "HookOutcome",
    "HookResult",
    "HookRun",
    "Hooks",
    "StopHook",
    "StopHookInput",
    "StopHookOutcome",
    "StopHookResult",
    "ToolHook",
    "post_tool_feedback_text",
    "run_stop_hooks",
    "run_tool_hooks",
    "stop_hook_feedback_text",
]
