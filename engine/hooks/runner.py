"""Running a session's hooks: each hook of an event in order, a ``CommandHook`` through
``engine.hooks.command`` and a Python callable here, their answers folded into one result."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from collections.abc import Callable, Sequence
from typing import Any

from engine.hooks.command import run_command_hook
from engine.hooks.config import (
    DEFAULT_HOOK_TIMEOUT_S,
    CommandHook,
    HookContext,
    HookDecision,
    HookEvent,
    HookInput,
    HookResult,
    StopHook,
    StopHookInput,
    StopHookResult,
    ToolHook,
)
from engine.hooks.outcomes import (
    CombinedHookResult,
    HookAnswer,
    HookOutcome,
    HookRun,
    StopHookOutcome,
    blocked_without_reason,
    failed_answer,
    fold_stop_answers,
    fold_tool_answers,
)

__all__ = ["run_stop_hooks", "run_tool_hooks"]


async def run_tool_hooks(
    hooks: Sequence[ToolHook], hook_input: HookInput, *, ctx: HookContext | None = None
) -> CombinedHookResult:
    """Run ``hooks`` in order on ``hook_input`` (each sees the input as rewritten by the ones
    before it) and fold their answers. Command hooks need ``ctx``; without it they are
    reported as not run, and Python hooks get the default timeout."""
    current = hook_input
    answers: list[HookAnswer] = []
    for hook in hooks:
        if isinstance(hook, CommandHook) and not hook.matches(hook_input.tool_name):
            continue
        answer = await _run_hook(hook, hook_input.event, current, ctx)
        answers.append(answer)
        if answer.updated_input is not None and not answer.block:
            current = dataclasses.replace(current, tool_input=answer.updated_input)
    return fold_tool_answers(hook_input.event, answers)


async def run_stop_hooks(
    hooks: Sequence[StopHook], stop_input: StopHookInput, *, ctx: HookContext | None = None
) -> StopHookOutcome:
    """Run the stop hooks in order and fold their answers (``ctx`` as for ``run_tool_hooks``)."""
    answers = [await _run_hook(hook, HookEvent.STOP, stop_input, ctx) for hook in hooks]
    return fold_stop_answers(answers)


async def _run_hook(
    hook: ToolHook | StopHook, event: HookEvent, argument: HookInput | StopHookInput, ctx: HookContext | None
) -> HookAnswer:
    if isinstance(hook, CommandHook):
        if ctx is None:
            why = "was not run: command hooks need a HookContext (workspace and session), and none was given."
            return failed_answer(event, hook.command, HookOutcome.NON_BLOCKING_ERROR, why)
        return await run_command_hook(hook, event, argument, ctx)
    return await _run_python_hook(hook, event, argument, ctx.timeout_s if ctx else DEFAULT_HOOK_TIMEOUT_S)


async def _run_python_hook(
    hook: Callable[[Any], Any], event: HookEvent, argument: HookInput | StopHookInput, timeout_s: float
) -> HookAnswer:
    label = getattr(hook, "__qualname__", None) or type(hook).__qualname__
    # Only an awaitable can be bounded: a synchronous callable runs on the loop's thread.
    scope = asyncio.timeout(timeout_s)
    try:
        async with scope:
            answer = hook(argument)
            if inspect.isawaitable(answer):
                answer = await answer
    except TimeoutError as exc:
        if scope.expired():
            return failed_answer(event, label, HookOutcome.TIMEOUT, f"timed out after {timeout_s:g} s")
        return failed_answer(event, label, HookOutcome.NON_BLOCKING_ERROR, f"raised TimeoutError: {exc}")
    except Exception as exc:
        return failed_answer(event, label, HookOutcome.NON_BLOCKING_ERROR, f"raised {type(exc).__name__}: {exc}")
    return _answer_from_python(event, label, answer)


def _answer_from_python(event: HookEvent, label: str, answer: object) -> HookAnswer:
    if answer is None:
        return HookAnswer(HookRun(event, label, HookOutcome.SUCCESS))
    if event is HookEvent.STOP and isinstance(answer, StopHookResult):
        block, allow, updated = answer.block, False, None
    elif event is not HookEvent.STOP and isinstance(answer, HookResult):
        block, allow = answer.decision == HookDecision.DENY, answer.decision == HookDecision.ALLOW
        updated = answer.updated_input
    else:
        expected = "a StopHookResult" if event is HookEvent.STOP else "a HookResult"
        what = f"returned {type(answer).__name__}; a {event.value} hook returns {expected} or None."
        return failed_answer(event, label, HookOutcome.INVALID_OUTPUT, what)
    reason = (answer.reason or blocked_without_reason(label)) if block else answer.reason
    outcome = HookOutcome.BLOCKING if block else HookOutcome.SUCCESS
    return HookAnswer(
        HookRun(event, label, outcome, reason or answer.stop_reason),
        block=block,
        reason=reason,
        allow=allow,
        updated_input=updated,
        prevent_continuation=answer.prevent_continuation,
        stop_reason=answer.stop_reason,
    )
