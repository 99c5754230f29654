"""One tool call through the whole pipeline: lookup, input validation, pre-tool hooks,
permissions, the call itself (abortable), result size limits and post-tool hooks. Every failure
is an error result (a ``ToolRun``), never an exception; ``ToolRunContext`` is what it needs
from the session."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.abort import AbortController, AbortedError
from engine.deps import QueryDeps
from engine.events import ToolOutcome
from engine.hooks import (
    CombinedHookResult,
    HookContext,
    HookEvent,
    HookInput,
    HookRun,
    Hooks,
    post_tool_feedback_text,
    run_tool_hooks,
)
from engine.messages import AssistantMessage, UserMessage, tool_result_block
from engine.orchestration.batching import CallCheck, check_call, validation_error
from engine.tools.base import (
    PermissionBehavior,
    PermissionDecision,
    Tool,
    ToolError,
    ToolUseContext,
)
from engine.tools.result_storage import apply_result_size_limit, empty_result_text

__all__ = [
    "INTERRUPTED_TOOL_RESULT",
    "PermissionCallback",
    "PermissionDenial",
    "ToolRun",
    "ToolRunContext",
    "run_tool_use",
    "synthetic_tool_run",
]

JsonDict = dict[str, Any]
PermissionCallback = Callable[[Tool, JsonDict, PermissionDecision], Awaitable[PermissionDecision]]

INTERRUPTED_TOOL_RESULT = "Interrupted by user"


@dataclass(frozen=True)
class PermissionDenial:
    """A tool call the session refused, kept on the session for its result."""

    tool_name: str
    tool_use_id: str
    tool_input: JsonDict
    reason: str


@dataclass(kw_only=True)
class ToolRunContext:
    """What running a tool call needs from the session."""

    tools: Mapping[str, Tool]
    tool_ctx: ToolUseContext
    deps: QueryDeps
    can_use_tool: PermissionCallback
    hooks: Hooks = field(default_factory=Hooks)
    hook_context: HookContext | None = None
    denials: list[PermissionDenial] = field(default_factory=list)
    max_concurrency: int = 10

    @property
    def abort(self) -> AbortController:
        return self.tool_ctx.abort


@dataclass(frozen=True, kw_only=True)
class ToolRun:
    """The outcome of one tool call: the user message carrying its tool_result, and facts for
    the trace."""

    tool_use_id: str
    tool_name: str
    outcome: ToolOutcome
    message: UserMessage
    prevent_continuation: bool = False
    stop_reason: str = ""
    hook_runs: tuple[HookRun, ...] = ()


def synthetic_tool_run(block: JsonDict, assistant: AssistantMessage, text: str, outcome: ToolOutcome) -> ToolRun:
    """An error result for a call that did not (or could not) run to the end."""
    return ToolRun(
        tool_use_id=block["id"],
        tool_name=block["name"],
        outcome=outcome,
        message=_result_message(block, assistant, text, is_error=True),
    )


def _result_message(
    block: JsonDict,
    assistant: AssistantMessage,
    content: str | list[JsonDict],
    *,
    is_error: bool,
    observed: Any = None,
) -> UserMessage:
    # Unstamped: the uuid and timestamp are drawn when results are handed out, in tool_use order,
    # so a seeded run does not depend on which concurrent tool finished first.
    return UserMessage(
        uuid="",
        timestamp="",
        message={"role": "user", "content": [tool_result_block(block["id"], content, is_error=is_error)]},
        tool_use_result=observed if observed is not None else content,
        source_tool_assistant_uuid=assistant.uuid,
    )


# What ``run_tool_hooks`` folds from no hooks at all (every field its default): a session
# without tool hooks gets it without building a hook input per call.
NO_HOOKS_RUN = CombinedHookResult()


async def run_tool_use(
    block: JsonDict,
    assistant: AssistantMessage,
    rctx: ToolRunContext,
    *,
    siblings: AbortController,
    check: CallCheck | None = None,
    on_call: Callable[[], None] | None = None,
) -> ToolRun:
    """One tool call through the whole pipeline: lookup, validation, hooks, permissions, the
    call itself (abortable), size limits. Never raises: every failure is an error result.
    ``on_call`` is told when the tool itself is called (hooks and permission passed)."""

    def fail(text: str, outcome: ToolOutcome, **extra: Any) -> ToolRun:
        return ToolRun(
            tool_use_id=block["id"],
            tool_name=block["name"],
            outcome=outcome,
            message=_result_message(block, assistant, text, is_error=True),
            **extra,
        )

    check = check or check_call(block, rctx.tools)
    tool = check.tool
    if tool is None:
        return fail(f"No such tool available: {block['name']}", ToolOutcome.UNKNOWN_TOOL)
    if check.problem is not None:
        return fail(f"InputValidationError: {check.problem}", ToolOutcome.INVALID_INPUT)
    if rctx.abort.aborted:
        return fail(INTERRUPTED_TOOL_RESULT, ToolOutcome.INTERRUPTED)

    observed = _observable(tool, block["input"], rctx.tool_ctx)
    pre = (
        await run_tool_hooks(
            rctx.hooks.pre_tool_use,
            HookInput(event=HookEvent.PRE_TOOL_USE, tool_name=tool.name, tool_use_id=block["id"], tool_input=observed),
            ctx=rctx.hook_context,
        )
        if rctx.hooks.pre_tool_use
        else NO_HOOKS_RUN
    )
    stop = {"prevent_continuation": pre.prevent_continuation, "stop_reason": pre.stop_reason, "hook_runs": pre.runs}
    if pre.denied:
        return fail(f"Hook denied this tool call: {pre.reason}", ToolOutcome.HOOK_DENIED, **stop)
    # A hook may rewrite what the tool runs with; the recorded tool_use block never changes.
    run_input = pre.updated_input if pre.updated_input is not None else block["input"]
    if pre.updated_input is not None:
        problem = validation_error(tool, run_input)
        if problem is not None:
            return fail(f"InputValidationError (input rewritten by hook): {problem}", ToolOutcome.INVALID_INPUT, **stop)
        observed = _observable(tool, run_input, rctx.tool_ctx)

    # A hook's explicit allow stands in for the permission prompt (Claude Code's behaviour).
    decision = PermissionDecision.allow() if pre.allowed else await _decide_permission(tool, observed, rctx)
    if decision.behavior is not PermissionBehavior.ALLOW:
        reason = decision.reason or f"Permission to use {tool.name} was denied."
        rctx.denials.append(PermissionDenial(tool.name, block["id"], observed, reason))
        return fail(reason, ToolOutcome.PERMISSION_DENIED, **stop)

    if on_call is not None:
        on_call()
    try:
        result = await rctx.abort.run(siblings.run(tool.call(run_input, rctx.tool_ctx)))
        content, is_error = result.content, result.is_error
        outcome = ToolOutcome.ERROR if is_error else ToolOutcome.SUCCESS
    except AbortedError:
        if rctx.abort.aborted:
            return fail(INTERRUPTED_TOOL_RESULT, ToolOutcome.INTERRUPTED, **stop)
        return fail(siblings.reason or "Cancelled", ToolOutcome.CANCELLED, **stop)
    except ToolError as exc:
        content, is_error, outcome = str(exc), True, ToolOutcome.ERROR
    except Exception as exc:
        content, is_error, outcome = f"Error: {type(exc).__name__}: {exc}", True, ToolOutcome.ERROR

    content = _shape_content(tool, block["id"], content, rctx.tool_ctx)
    post = (
        await run_tool_hooks(
            rctx.hooks.post_tool_use,
            HookInput(
                event=HookEvent.POST_TOOL_USE,
                tool_name=tool.name,
                tool_use_id=block["id"],
                tool_input=observed,
                tool_response=content if isinstance(content, str) else None,
                is_error=is_error,
            ),
            ctx=rctx.hook_context,
        )
        if rctx.hooks.post_tool_use
        else NO_HOOKS_RUN
    )
    if post.feedback and isinstance(content, str):
        content = f"{content}\n\n{post_tool_feedback_text(post.feedback)}"
    return ToolRun(
        tool_use_id=block["id"],
        tool_name=tool.name,
        outcome=outcome,
        message=_result_message(block, assistant, content, is_error=is_error, observed=content),
        prevent_continuation=pre.prevent_continuation or post.prevent_continuation,
        stop_reason=post.stop_reason or pre.stop_reason,
        hook_runs=pre.runs + post.runs,
    )


def _observable(tool: Tool, tool_input: JsonDict, ctx: ToolUseContext) -> JsonDict:
    try:
        return tool.observable_input(tool_input, ctx)
    except Exception:
        return dict(tool_input)


async def _decide_permission(tool: Tool, observed: JsonDict, rctx: ToolRunContext) -> PermissionDecision:
    try:
        decision = await tool.check_permissions(observed, rctx.tool_ctx)
    except ToolError as exc:
        return PermissionDecision.deny(str(exc))
    return await rctx.can_use_tool(tool, observed, decision)


def _shape_content(
    tool: Tool, tool_use_id: str, content: str | list[JsonDict], ctx: ToolUseContext
) -> str | list[JsonDict]:
    if isinstance(content, list):
        return content
    if not content.strip():
        return empty_result_text(tool.name)
    try:
        return apply_result_size_limit(tool, tool_use_id, content, ctx)
    except (ToolError, OSError) as exc:
        return f"{content[:2_000]}\n... (the full output could not be saved: {exc})"
