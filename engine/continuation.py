"""Step 5 of the loop: the model answered without asking for tools (or the API answered with an
error), so the loop decides whether it continues or ends.

In order: the recovery chains for a withheld error (prompt too long: drain the context
collapse, then compact reactively; media too large: compact without media; output cut at the
token limit: escalate the limit once, then ask the model to resume a few times), then the stop
hooks (which can block the stop or end the loop), then the token budget (which can nudge the
model to keep going). Each outcome is a ``NextStep``: a new ``State`` with its ``Transition``,
or a ``Terminal``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing
from dataclasses import dataclass

from engine.events import TraceEvent, TraceKind
from engine.hooks import StopHookInput, run_stop_hooks, stop_hook_feedback_text
from engine.messages import (
    AssistantMessage,
    Message,
    SystemLevel,
    SystemMessage,
    SystemSubtype,
    TombstoneMessage,
    UserMessage,
)
from engine.model import ModelErrorKind
from engine.model_call import ModelCall
from engine.params import LoopParams
from engine.shaping import ReactiveCompact
from engine.state import State, Terminal, Transition
from engine.token_budget import BudgetDecision

__all__ = ["MAX_OUTPUT_TOKENS_RECOVERY_TEXT", "NextStep", "finish_without_tools"]

# The project's own words: go on exactly where the cut fell, without apology or recap, and split
# what is left into smaller pieces so the next answer fits.
MAX_OUTPUT_TOKENS_RECOVERY_TEXT = (
    "Your previous answer stopped at the output limit. Carry on from the exact point where it was cut, "
    "even mid-sentence, without apologising or repeating what you already wrote. "
    "If much remains, do it in smaller steps."
)


@dataclass
class NextStep:
    """How a phase ended: a new state to continue with, or a terminal."""

    state: State | None = None
    terminal: Terminal | None = None
    error: str | None = None


async def finish_without_tools(
    call: ModelCall,
    state: State,
    working: list[Message],
    params: LoopParams,
    turn_output_tokens: int,
    out: NextStep,
) -> AsyncIterator[Message | TraceEvent]:
    """Step 5: the recovery chains for withheld errors, then stop hooks, then the token budget.
    Yields what the step adds to the conversation and the trace; how it ended goes into ``out``."""
    deps, settings = params.deps, params.settings
    turn = state.turn_count
    withheld = call.withheld
    answered = (*working, *call.assistant_messages)

    if withheld is not None and withheld.kind is ModelErrorKind.PROMPT_TOO_LONG:
        if settings.context_collapse and state.transition is not Transition.COLLAPSE_DRAIN_RETRY:
            committed = params.context.collapse.drain()
            yield TraceEvent(TraceKind.COMPACTION, turn, {"tier": "collapse", "drained": committed})
            if committed > 0:
                out.state = dataclasses.replace(
                    state, messages=tuple(working), transition=Transition.COLLAPSE_DRAIN_RETRY
                )
                return
        if settings.reactive_compact and not state.has_attempted_reactive_compact:
            async for item in _reactive_compact(call, state, working, params, out, strip_media=False):
                yield item
            if out.state is not None or out.terminal is not None:
                return
        yield withheld.message
        out.terminal, out.error = Terminal.PROMPT_TOO_LONG, "Prompt is too long"
        return

    if withheld is not None and withheld.kind is ModelErrorKind.MEDIA_TOO_LARGE:
        if settings.reactive_compact and not state.has_attempted_reactive_compact:
            async for item in _reactive_compact(call, state, working, params, out, strip_media=True):
                yield item
            if out.state is not None or out.terminal is not None:
                return
        yield withheld.message
        out.terminal, out.error = Terminal.IMAGE_ERROR, withheld.message.content[0]["text"]
        return

    if withheld is not None and withheld.kind is ModelErrorKind.MAX_OUTPUT_TOKENS:
        if settings.max_output_tokens_escalation and state.max_output_tokens_override is None:
            # The same request again with room to finish: the cut answer is withdrawn.
            for message in call.assistant_messages:
                yield TombstoneMessage(uuid=deps.uuid(), timestamp=deps.now(), target_uuid=message.uuid)
            out.state = dataclasses.replace(
                state,
                messages=tuple(working),
                max_output_tokens_override=settings.escalated_max_output_tokens,
                transition=Transition.MAX_OUTPUT_TOKENS_ESCALATE,
            )
            return
        if state.max_output_tokens_recovery_count < settings.max_output_tokens_recovery_limit:
            resume = UserMessage.create(deps, MAX_OUTPUT_TOKENS_RECOVERY_TEXT, is_meta=True)
            yield resume
            out.state = dataclasses.replace(
                state,
                messages=(*answered, resume),
                max_output_tokens_recovery_count=state.max_output_tokens_recovery_count + 1,
                transition=Transition.MAX_OUTPUT_TOKENS_RECOVERY,
            )
            return
        yield withheld.message
        out.terminal, out.error = Terminal.COMPLETED, withheld.message.content[0]["text"]
        return

    if call.api_error is not None:
        out.terminal, out.error = Terminal.COMPLETED, call.error_text
        return

    if params.hooks.stop:
        outcome = await run_stop_hooks(
            params.hooks.stop,
            StopHookInput(
                stop_hook_active=state.stop_hook_active, last_assistant_text=_text_of(call.assistant_messages)
            ),
            ctx=params.hook_context,
        )
        for hook_run in outcome.runs:
            yield TraceEvent(TraceKind.HOOK, turn, hook_run.trace_data())
        if outcome.prevent_continuation:
            yield SystemMessage.create(
                deps,
                SystemSubtype.WARNING,
                outcome.stop_reason or "A stop hook prevented continuation.",
                level=SystemLevel.WARNING,
            )
            out.terminal = Terminal.STOP_HOOK_PREVENTED
            return
        if outcome.blocking_reasons:
            feedback = UserMessage.create(deps, stop_hook_feedback_text(outcome.blocking_reasons), is_meta=True)
            yield feedback
            # has_attempted_reactive_compact survives: resetting it here loops compaction forever.
            out.state = dataclasses.replace(
                state,
                messages=(*answered, feedback),
                stop_hook_active=True,
                max_output_tokens_recovery_count=0,
                max_output_tokens_override=None,
                transition=Transition.STOP_HOOK_BLOCKING,
            )
            return

    if params.token_budget is not None:
        decision: BudgetDecision = params.token_budget.record(turn_output_tokens)
        yield TraceEvent(
            TraceKind.TOKEN_BUDGET,
            turn,
            {
                "pct": decision.pct,
                "tokens": turn_output_tokens,
                "continue": decision.continue_,
                "reason": decision.reason.value,
            },
        )
        if decision.continue_:
            nudge = UserMessage.create(deps, decision.nudge_text, is_meta=True)
            yield nudge
            out.state = dataclasses.replace(
                state,
                messages=(*answered, nudge),
                has_attempted_reactive_compact=False,
                max_output_tokens_recovery_count=0,
                max_output_tokens_override=None,
                transition=Transition.TOKEN_BUDGET_CONTINUATION,
            )
            return

    out.terminal = Terminal.COMPLETED


async def _reactive_compact(
    call: ModelCall, state: State, working: list[Message], params: LoopParams, out: NextStep, *, strip_media: bool
) -> AsyncIterator[Message | TraceEvent]:
    """Compact once for this turn and retry; a harness failure during it ends the loop."""
    step = ReactiveCompact(working, params, turn=state.turn_count, model=call.model, strip_media=strip_media)
    async with aclosing(step.run()) as items:
        async for item in items:
            yield item
    if step.failure is not None:
        yield AssistantMessage.api_error(params.deps, f"Error: {step.failure}", error=ModelErrorKind.HARNESS.value)
        out.terminal, out.error = Terminal.MODEL_ERROR, str(step.failure)
    elif step.messages:
        out.state = dataclasses.replace(
            state,
            messages=tuple(step.messages),
            has_attempted_reactive_compact=True,
            transition=Transition.REACTIVE_COMPACT_RETRY,
        )


def _text_of(messages: Sequence[AssistantMessage]) -> str:
    return "".join(
        b.get("text", "") for m in messages if not m.is_api_error_message for b in m.content if b.get("type") == "text"
    )
