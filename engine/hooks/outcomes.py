"""What hook runs come to: how each run ended (``HookRun``, for the trace), one run reduced to
its effect (``HookAnswer``), and the answers of all hooks of one event folded together
(``CombinedHookResult`` for tool hooks, ``StopHookOutcome`` for stop hooks); and the texts that
carry blocking hooks' feedback back to the model."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from engine.hooks.config import HookEvent, JsonDict

__all__ = [
    "CombinedHookResult",
    "HookAnswer",
    "HookOutcome",
    "HookRun",
    "StopHookOutcome",
    "blocked_without_reason",
    "failed_answer",
    "fold_stop_answers",
    "fold_tool_answers",
    "post_tool_feedback_text",
    "stop_hook_feedback_text",
]


class HookOutcome(StrEnum):
    """How one hook run ended. Only ``BLOCKING`` changes what the loop does (and a successful
    ``continue: false``); the errors are reported and otherwise ignored."""

    SUCCESS = "success"
    BLOCKING = "blocking"
    NON_BLOCKING_ERROR = "non_blocking_error"
    TIMEOUT = "timeout"
    INVALID_OUTPUT = "invalid_output"


@dataclass(frozen=True)
class HookRun:
    """One hook run, for the trace: which hook (its command or the callable's qualified name),
    for which event, how it ended, and what it said."""

    event: HookEvent
    label: str
    outcome: HookOutcome
    message: str = ""

    def trace_data(self) -> JsonDict:
        """The run as the data of a ``TraceKind.HOOK`` event."""
        return {"event": self.event.value, "hook": self.label, "outcome": self.outcome.value, "message": self.message}


@dataclass(frozen=True)
class CombinedHookResult:
    """All hooks of one tool event folded together: a deny wins (its reasons joined), an allow
    counts only if nothing denied, the last rewrite wins, any stop stops. ``feedback`` holds
    what blocking post-tool hooks said to the model."""

    denied: bool = False
    reason: str = ""
    updated_input: JsonDict | None = None
    prevent_continuation: bool = False
    stop_reason: str = ""
    allowed: bool = False
    feedback: tuple[str, ...] = ()
    runs: tuple[HookRun, ...] = ()


@dataclass(frozen=True)
class StopHookOutcome:
    """All stop hooks folded together. ``prevent_continuation`` wins over blocking reasons."""

    blocking_reasons: tuple[str, ...] = ()
    prevent_continuation: bool = False
    stop_reason: str = ""
    runs: tuple[HookRun, ...] = ()


@dataclass(frozen=True)
class HookAnswer:
    """One hook run reduced to its effect. ``block`` means deny (PreToolUse), feedback
    (PostToolUse) or block the stop (Stop)."""

    run: HookRun
    block: bool = False
    reason: str = ""
    allow: bool = False
    updated_input: JsonDict | None = None
    prevent_continuation: bool = False
    stop_reason: str = ""


def stop_hook_feedback_text(reasons: Sequence[str]) -> str:
    """The meta user message that carries blocking stop hooks' reasons back to the model."""
    return "Stop hook feedback:\n" + "\n\n".join(reasons)


def post_tool_feedback_text(feedback: Sequence[str]) -> str:
    """The text that carries blocking post-tool hooks' feedback to the model with the result."""
    return "PostToolUse hook feedback:\n" + "\n\n".join(feedback)


def fold_tool_answers(event: HookEvent, answers: Sequence[HookAnswer]) -> CombinedHookResult:
    """The answers of one tool event's hooks, in the order they ran, as one result."""
    blocks = [a.reason for a in answers if a.block]
    denied = event is HookEvent.PRE_TOOL_USE and bool(blocks)
    rewrites = [a.updated_input for a in answers if a.updated_input is not None and not a.block]
    return CombinedHookResult(
        denied=denied,
        reason="\n\n".join(blocks) if denied else "",
        updated_input=rewrites[-1] if rewrites else None,
        prevent_continuation=any(a.prevent_continuation for a in answers),
        stop_reason=next((a.stop_reason for a in reversed(answers) if a.stop_reason), ""),
        allowed=not denied and any(a.allow for a in answers),
        feedback=tuple(blocks) if event is HookEvent.POST_TOOL_USE else (),
        runs=tuple(a.run for a in answers),
    )


def fold_stop_answers(answers: Sequence[HookAnswer]) -> StopHookOutcome:
    """The stop hooks' answers, in the order they ran, as one outcome."""
    return StopHookOutcome(
        blocking_reasons=tuple(a.reason for a in answers if a.block),
        prevent_continuation=any(a.prevent_continuation for a in answers),
        stop_reason=next((a.stop_reason for a in reversed(answers) if a.stop_reason), ""),
        runs=tuple(a.run for a in answers),
    )


def failed_answer(event: HookEvent, label: str, outcome: HookOutcome, what: str) -> HookAnswer:
    """A run with no effect; its message is the sentence "Hook `label` <what>"."""
    return HookAnswer(HookRun(event, label, outcome, f"Hook `{label}` {what}"))


def blocked_without_reason(label: str) -> str:
    """The reason given for a hook that blocked and did not say why."""
    return f"Hook `{label}` blocked without giving a reason."
