"""``query_loop``: the agent loop as a ``while True`` state machine.

Each pass shapes the context, calls the model once, runs the tools it asked for, and either
ends with a ``Terminal`` (yielded last, in a ``LoopEnd``) or replaces the whole ``State`` and
continues with a named ``Transition``. It never recurses: every retry and recovery is a new
``State`` and a ``continue``. What follows an answer without tool use (recovery, stop hooks,
the token budget) is decided in ``engine.continuation``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing
from typing import Any

from engine.attachments import collect_attachments
from engine.continuation import NextStep, finish_without_tools
from engine.events import LoopEnd, RequestStart, ToolOutcome, TraceEvent, TraceKind
from engine.messages import (
    INTERRUPT_MESSAGE,
    INTERRUPT_MESSAGE_FOR_TOOL_USE,
    AssistantMessage,
    AttachmentMessage,
    AttachmentType,
    Message,
    SystemMessage,
    SystemSubtype,
    UserMessage,
)
from engine.model import ModelErrorKind, StreamEvent
from engine.model_call import ModelCall
from engine.orchestration import INTERRUPTED_TOOL_RESULT, ToolRun
from engine.params import LoopParams
from engine.shaping import shape_context
from engine.state import State, Terminal, Transition

__all__ = ["LoopItem", "messages_after_compact_boundary", "query", "query_loop"]

JsonDict = dict[str, Any]
LoopItem = Message | StreamEvent | RequestStart | TraceEvent | LoopEnd


def messages_after_compact_boundary(messages: Sequence[Message]) -> list[Message]:
    """The messages from the last compact boundary on (the history the model still sees)."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, SystemMessage) and message.subtype is SystemSubtype.COMPACT_BOUNDARY:
            return list(messages[index:])
    return list(messages)


async def query(messages: Sequence[Message], params: LoopParams) -> AsyncIterator[LoopItem]:
    """``query_loop`` plus clean-up on every exit path: tools still running when the caller
    stops listening (or the loop fails) are cancelled and awaited, never leaked."""
    calls: list[ModelCall] = []
    try:
        async with aclosing(query_loop(messages, params, _calls=calls)) as items:
            async for item in items:
                yield item
    finally:
        for call in calls:
            for executor in call.executors:
                if executor.running:
                    executor.discard("Tool execution cancelled: the query ended")
                await executor.wait_closed()


async def query_loop(
    messages: Sequence[Message], params: LoopParams, *, _calls: list[ModelCall] | None = None
) -> AsyncIterator[LoopItem]:
    """The loop. Yields stream events, messages and trace events; the last item is a
    ``LoopEnd`` carrying the ``Terminal``."""
    deps, settings = params.deps, params.settings
    abort = params.rctx.abort
    state = State(messages=tuple(messages))
    model = settings.model
    turn_output_tokens = 0  # what the model wrote during this user turn, for the token budget
    if params.attachments is not None:
        params.attachments.start_memory_prefetch(params.rctx.tool_ctx.workspace_root, settings.memory_paths)

    while True:
        turn = state.turn_count
        yield RequestStart(turn)
        yield TraceEvent.pass_start(turn, state.transition, attempt=_attempt_of(state))
        if abort.aborted:
            # Interrupted as the pass began: its request is never sent (nor any compaction's).
            yield UserMessage.create(deps, [{"type": "text", "text": INTERRUPT_MESSAGE}])
            yield _end(Terminal.ABORTED_STREAMING, turn)
            return

        # 1. Context shaping, cheapest first; a compaction yields its boundary.
        working = messages_after_compact_boundary(state.messages)
        shaping = shape_context(working, state, params, turn=turn, model=model)
        async with aclosing(shaping.run()) as items:
            async for item in items:
                yield item
        working, tracking = shaping.working, shaping.tracking
        if shaping.failure is not None:
            yield AssistantMessage.api_error(deps, f"Error: {shaping.failure}", error=ModelErrorKind.HARNESS.value)
            yield _end(Terminal.MODEL_ERROR, turn, error=str(shaping.failure))
            return

        # 2. Blocking limit: only when nothing else owns overflow.
        if not shaping.compacted and _blocking_check_applies(params):
            tokens = shaping.token_count()
            if tokens >= settings.blocking_limit:
                yield AssistantMessage.api_error(deps, "Prompt is too long", error=ModelErrorKind.PROMPT_TOO_LONG.value)
                yield _end(Terminal.BLOCKING_LIMIT, turn, error=f"{tokens} tokens reach the blocking limit")
                return

        # 3. The model call (retries and fallbacks inside; recoverable errors withheld).
        max_tokens = state.max_output_tokens_override or settings.default_max_output_tokens
        call = ModelCall(params, model=model, working=working, max_tokens=max_tokens)
        if _calls is not None:
            _calls.append(call)
        async with aclosing(call.run(turn)) as items:
            async for item in items:
                yield item
        yield call.trace_event(turn)
        model, working = call.model, call.working
        turn_output_tokens += int(call.usage.get("output_tokens") or 0)
        state = dataclasses.replace(state, auto_compact_tracking=tracking)

        # 4. Interrupted while streaming: answer every tool_use, then stop.
        if call.aborted:
            for run in await call.settle_tools(INTERRUPTED_TOOL_RESULT, ToolOutcome.INTERRUPTED):
                yield run.message
            yield UserMessage.create(deps, [{"type": "text", "text": INTERRUPT_MESSAGE}])
            yield _end(Terminal.ABORTED_STREAMING, turn)
            return

        if call.failure is not None:
            # A failure that is not the API's answer (a cassette miss, a harness bug): answer
            # any tool_use already yielded so the history stays valid, report, and stop.
            for run in await call.settle_tools(f"Tool execution skipped: {call.failure}", ToolOutcome.CANCELLED):
                yield run.message
            yield AssistantMessage.api_error(deps, f"Error: {call.failure}", error=ModelErrorKind.HARNESS.value)
            yield _end(Terminal.MODEL_ERROR, turn, error=str(call.failure))
            return

        # 5. No tool use (or an API error): recover, or run stop hooks and the budget, or stop.
        if not call.has_tool_use or call.api_error is not None:
            outcome = NextStep()
            async with aclosing(
                finish_without_tools(call, state, working, params, turn_output_tokens, outcome)
            ) as items:
                async for item in items:
                    yield item
            if outcome.state is not None:
                state = outcome.state
                continue
            assert outcome.terminal is not None
            yield _end(outcome.terminal, turn, error=outcome.error)
            return

        # 6. Run the tools (already running if the executor streamed them).
        call.start_tools()
        batches = call.executor.batches()
        for batch in batches:
            yield TraceEvent(
                TraceKind.TOOL_BATCH,
                turn,
                {
                    "tools": [b["name"] for b in batch.blocks],
                    "ids": [b["id"] for b in batch.blocks],
                    "concurrent": batch.concurrent,
                },
            )
        runs: list[ToolRun] = []
        async with aclosing(call.tool_results()) as results:
            for number, batch in enumerate(batches, start=1):
                if not abort.aborted:
                    # The calls before this batch are handed out, so the executor has started
                    # it; once its tools are called it is running, and none of its results is
                    # handed out: an abort taken on this event answers every call of the batch.
                    await call.executor.wait_running(batch)
                    ids = [b["id"] for b in batch.blocks]
                    yield TraceEvent(TraceKind.TOOLS_RUNNING, turn, {"batch": number, "ids": ids})
                for _ in batch.blocks:
                    run = await anext(results)
                    runs.append(run)
                    yield run.message
                    yield TraceEvent(
                        TraceKind.TOOL_CALL,
                        turn,
                        {"id": run.tool_use_id, "name": run.tool_name, "outcome": run.outcome.value},
                    )
                    for hook_run in run.hook_runs:
                        yield TraceEvent(TraceKind.HOOK, turn, hook_run.trace_data())

        if abort.aborted:
            yield UserMessage.create(deps, [{"type": "text", "text": INTERRUPT_MESSAGE_FOR_TOOL_USE}])
            yield _end(Terminal.ABORTED_TOOLS, turn)
            return

        stopped = next((run for run in runs if run.prevent_continuation), None)
        if stopped is not None:
            yield AttachmentMessage.create(
                deps,
                AttachmentType.HOOK_STOPPED_CONTINUATION,
                tool_use_id=stopped.tool_use_id,
                message=stopped.stop_reason or "A hook stopped the loop.",
            )
            yield _end(Terminal.HOOK_STOPPED, turn)
            return

        # 7. Attachments, the turn limit, and on to the next turn.
        attachments: list[AttachmentMessage] = []
        if params.attachments is not None:
            attachments = await collect_attachments(params.attachments, deps=deps, tool_ctx=params.rctx.tool_ctx)
            for attachment in attachments:
                yield attachment
                yield TraceEvent(TraceKind.ATTACHMENT, turn, {"type": attachment.attachment["type"]})

        if settings.max_turns is not None and turn + 1 > settings.max_turns:
            yield AttachmentMessage.create(
                deps, AttachmentType.MAX_TURNS_REACHED, max_turns=settings.max_turns, turn_count=turn + 1
            )
            yield _end(Terminal.MAX_TURNS, turn)
            return

        state = State(
            messages=(*working, *call.assistant_messages, *(run.message for run in runs), *attachments),
            turn_count=turn + 1,
            transition=Transition.NEXT_TURN,
            auto_compact_tracking=tracking.next_turn(),
            stop_hook_active=state.stop_hook_active,
        )


def _blocking_check_applies(params: LoopParams) -> bool:
    settings = params.settings
    # Reactive compact (with autocompact on) or context collapse own overflow when enabled.
    owned = (settings.reactive_compact and settings.autocompact) or settings.context_collapse
    return not owned


def _attempt_of(state: State) -> int | None:
    if state.transition is Transition.MAX_OUTPUT_TOKENS_RECOVERY:
        return state.max_output_tokens_recovery_count
    return None


def _end(terminal: Terminal, turn: int, *, error: str | None = None) -> LoopEnd:
    return LoopEnd(terminal=terminal, turn_count=turn, error=error)
